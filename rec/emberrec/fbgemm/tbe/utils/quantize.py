"""FBGEMM's `fbgemm_gpu.tbe.utils.quantize.quantize_embs`: a float table as the rows of the
inference table-batched embedding bag, split as `split_embedding_weights()` splits them, so
`tbe.assign_embedding_weights([quantize_embs(w, ty) for ...])` fills a table batch."""
import numpy as np

import ember
from emberrec.fbgemm.quantize_ops import _floats
from emberrec.fbgemm.split_embedding_configs import SparseType

__all__ = ["quantize_embs"]


def quantize_embs(weight, weight_ty, fp8_config=None):
    """(values, scale_shift): uint8 tensors (rows, value bytes) and, for INT8/INT4/INT2,
    (rows, 4) of binary16 scale and bias; scale_shift is None for float types."""
    if not isinstance(weight_ty, SparseType):
        raise TypeError(f"quantize_embs: weight_ty must be a SparseType, got {type(weight_ty).__name__}")
    x = _floats(weight, "quantize_embs")
    if x.ndim != 2:
        raise ValueError(f"quantize_embs: weight must be 2-D (rows, dim), got shape {x.shape}")
    if weight_ty is SparseType.FP8 and fp8_config is None:
        raise ValueError("quantize_embs: FP8 needs an fp8_config (FP8QuantizationConfig)")
    if weight_ty is SparseType.BF16:
        raise NotImplementedError("quantize_embs: BF16 rows are not supported by emberrec's inference embedding bag")
    rows, dim = x.shape
    bits, bias, max_pos = (4, 7, 240.0) if fp8_config is None else (
        fp8_config.get("exponent_bits"), fp8_config.get("exponent_bias"), fp8_config.get("max_position"))
    kernels = ember._C.rec
    out = np.empty((rows, kernels.row_bytes(weight_ty.as_int(), dim, 1)), np.uint8)
    kernels.quantize_rows(weight_ty.as_int(), x, rows, dim, 1, (bits, bias), float(max_pos), out)
    if weight_ty.is_float():
        return ember.from_numpy(out), None
    return ember.from_numpy(np.ascontiguousarray(out[:, 4:])), ember.from_numpy(np.ascontiguousarray(out[:, :4]))
