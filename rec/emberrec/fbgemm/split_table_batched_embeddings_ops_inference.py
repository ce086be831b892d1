"""FBGEMM's inference table-batched embedding bag, `IntNBitTableBatchedEmbeddingBagsCodegen`:
many quantized tables looked up in one call, on the CPU, by the Rust kernel of `ember._C.rec`
(rows dequantized as they are pooled, threads over (feature, block of samples)).

As FBGEMM: `embedding_specs` are (name, rows, dim, SparseType, EmbeddingLocation.HOST);
`feature_table_map` lets features share tables; the weights are one byte buffer, each table
from a 128-byte line (`cacheline_alignment`), each row padded to `row_alignment` (1 on the CPU);
INT8/INT4/INT2 rows start with binary16 scale and bias; `forward(indices, offsets,
per_sample_weights)` takes FBGEMM's table-major offsets (T * B + 1) and returns (B, total_D),
or (number of indices, D) with PoolingMode.NONE, in `output_dtype` (FP16 by default).

Unlike FBGEMM: any dim works (FBGEMM wants whole bytes of packed values); the inputs are
validated (offsets that do not run from 0 to the number of indices or that decrease raise
ValueError; indices outside their tables raise IndexError under BoundsCheckMode.FATAL); under
WARNING and IGNORE an out-of-range index reads row 0 as in FBGEMM, but the caller's indices are
not rewritten. Not here: index remapping for pruning (`index_remapping`; pruned rows given as
index -1 do work), caches and GPU placements, BF16/INT8 outputs, `reverse_qparam`.
"""
import copy
import itertools
import warnings

import numpy as np

import ember
from emberrec.fbgemm.split_embedding_configs import SparseType
from emberrec.fbgemm.split_table_batched_embeddings_ops_common import BoundsCheckMode, EmbeddingLocation, PoolingMode

__all__ = ["IntNBitTableBatchedEmbeddingBagsCodegen", "rounded_row_size_in_bytes", "unpadded_row_size_in_bytes"]

DEFAULT_SCALE_BIAS_SIZE_IN_BYTES = 4
CACHE_LINE = 128
STORED_TYPES = (SparseType.FP32, SparseType.FP16, SparseType.FP8, SparseType.INT8, SparseType.INT4, SparseType.INT2)
OUTPUT_DTYPES = {SparseType.FP32: np.float32, SparseType.FP16: np.float16}
POOLING = {PoolingMode.SUM: "sum", PoolingMode.MEAN: "mean", PoolingMode.NONE: "none"}
BOUNDS_CHECK = {BoundsCheckMode.FATAL: "fatal", BoundsCheckMode.WARNING: "warning", BoundsCheckMode.IGNORE: "ignore",
                BoundsCheckMode.NONE: "ignore"}


def unpadded_row_size_in_bytes(dim, weight_ty, scale_bias_size_in_bytes=DEFAULT_SCALE_BIAS_SIZE_IN_BYTES):
    """Bytes of a row before padding: whole bytes of packed values, plus the scale and bias."""
    header = scale_bias_size_in_bytes if not weight_ty.is_float() else 0
    return -(-dim * weight_ty.bit_rate() // 8) + header


def rounded_row_size_in_bytes(dim, weight_ty, row_alignment, scale_bias_size_in_bytes=DEFAULT_SCALE_BIAS_SIZE_IN_BYTES):
    r = unpadded_row_size_in_bytes(dim, weight_ty, scale_bias_size_in_bytes)
    return -(-r // row_alignment) * row_alignment


def _round_up(n, multiple):
    return -(-n // multiple) * multiple


class IntNBitTableBatchedEmbeddingBagsCodegen(ember.nn.Module):
    def __init__(self, embedding_specs, feature_table_map=None, index_remapping=None, pooling_mode=PoolingMode.SUM,
                 device=None, bounds_check_mode=BoundsCheckMode.WARNING, weight_lists=None,
                 output_dtype=SparseType.FP16, row_alignment=None, fp8_exponent_bits=None, fp8_exponent_bias=None,
                 scale_bias_size_in_bytes=DEFAULT_SCALE_BIAS_SIZE_IN_BYTES, cacheline_alignment=True,
                 reverse_qparam=False):
        super().__init__()
        self._check_unsupported(index_remapping, device, scale_bias_size_in_bytes, reverse_qparam, output_dtype)
        self.embedding_specs = [self._spec(spec, i) for i, spec in enumerate(embedding_specs)]
        if not self.embedding_specs:
            raise ValueError("IntNBitTableBatchedEmbeddingBagsCodegen: embedding_specs must not be empty")
        self.pooling_mode = PoolingMode(pooling_mode)
        self.bounds_check_mode_int = int(BoundsCheckMode(bounds_check_mode))
        self.output_dtype = output_dtype.as_int()
        self.row_alignment = 1 if row_alignment is None else int(row_alignment)
        if self.row_alignment < 1:
            raise ValueError(f"row_alignment must be positive, got {row_alignment}")
        self.scale_bias_size_in_bytes = scale_bias_size_in_bytes
        self.feature_table_map = self._table_map(feature_table_map)
        self._set_fp8_format(fp8_exponent_bits, fp8_exponent_bias)
        dims = [self.embedding_specs[t][2] for t in self.feature_table_map]
        if self.pooling_mode is PoolingMode.NONE and len(set(dims)) > 1:
            raise ValueError("Mixed dimension tables are only supported for pooling tables.")
        self.total_D = sum(dims)
        self.register_buffer("D_offsets", ember.tensor(list(itertools.accumulate([0] + dims)), dtype=ember.int32))
        self.register_buffer("rows_per_table", ember.tensor([self.embedding_specs[t][1] for t in self.feature_table_map],
                                                            dtype=ember.int64))
        self.register_buffer("bounds_check_warning", ember.zeros(1, dtype=ember.int64))
        self._place_tables(cacheline_alignment)
        self.weight_initialized = False
        if weight_lists:
            self.initialize_weights()
            self.assign_embedding_weights(weight_lists)

    @staticmethod
    def _check_unsupported(index_remapping, device, scale_bias_size_in_bytes, reverse_qparam, output_dtype):
        if index_remapping:
            raise NotImplementedError("IntNBitTableBatchedEmbeddingBagsCodegen: index_remapping (pruning by remapping) "
                                      "is not supported; pass pruned rows as index -1")
        if device is not None and str(device) != "cpu":
            raise NotImplementedError(f"IntNBitTableBatchedEmbeddingBagsCodegen: only the CPU is supported, got device {device}")
        if scale_bias_size_in_bytes != DEFAULT_SCALE_BIAS_SIZE_IN_BYTES:
            raise NotImplementedError("IntNBitTableBatchedEmbeddingBagsCodegen: scale_bias_size_in_bytes must be 4")
        if reverse_qparam:
            raise NotImplementedError("IntNBitTableBatchedEmbeddingBagsCodegen: reverse_qparam is not supported")
        if not isinstance(output_dtype, SparseType):
            raise TypeError(f"output_dtype must be a SparseType, got {type(output_dtype).__name__}")
        if output_dtype not in OUTPUT_DTYPES:
            raise NotImplementedError(f"IntNBitTableBatchedEmbeddingBagsCodegen: output_dtype {output_dtype} is not "
                                      "supported (FP32, FP16)")

    @staticmethod
    def _spec(spec, i):
        if len(spec) not in (4, 5):
            raise ValueError(f"embedding_specs[{i}] must be (name, rows, dim, SparseType, EmbeddingLocation), got {spec!r}")
        name, rows, dim, weight_ty = spec[:4]
        location = spec[4] if len(spec) == 5 else EmbeddingLocation.HOST
        if not isinstance(weight_ty, SparseType):
            raise TypeError(f"embedding_specs[{i}]: the weight type must be a SparseType, got {type(weight_ty).__name__}")
        if weight_ty not in STORED_TYPES:
            raise NotImplementedError(f"embedding_specs[{i}]: {weight_ty} rows are not supported (FP32, FP16, FP8, INT8, INT4, INT2)")
        if location != EmbeddingLocation.HOST:
            raise NotImplementedError(f"embedding_specs[{i}]: only EmbeddingLocation.HOST (the CPU) is supported, got {location!r}")
        if int(rows) < 0 or int(dim) < 1:
            raise ValueError(f"embedding_specs[{i}]: rows must be >= 0 and dim >= 1, got {rows} and {dim}")
        return (name, int(rows), int(dim), weight_ty, EmbeddingLocation(location))

    def _table_map(self, feature_table_map):
        tables = len(self.embedding_specs)
        table_map = list(range(tables)) if feature_table_map is None else [int(t) for t in feature_table_map]
        if any(not 0 <= t < tables for t in table_map):
            raise ValueError(f"feature_table_map entries must be table numbers below {tables}, got {table_map}")
        if set(table_map) != set(range(tables)):
            raise ValueError("Each table must have at least one feature!")
        return table_map

    def _set_fp8_format(self, bits, bias):
        if any(spec[3] is SparseType.FP8 for spec in self.embedding_specs):
            config = SparseType.FP8.default_config()
            self.fp8_exponent_bits = config.get("exponent_bits") if bits is None else int(bits)
            self.fp8_exponent_bias = config.get("exponent_bias") if bias is None else int(bias)
            ember._C.rec.hfp8_max_position(self.fp8_exponent_bits, self.fp8_exponent_bias)  # validates the format
        else:
            self.fp8_exponent_bits = self.fp8_exponent_bias = -1

    def _row_bytes(self, t):
        _, _, dim, weight_ty, _ = self.embedding_specs[t]
        return rounded_row_size_in_bytes(dim, weight_ty, self.row_alignment, self.scale_bias_size_in_bytes)

    def _place_tables(self, cacheline_alignment):
        """Each table's byte offset in the one weights buffer, FBGEMM's way."""
        offsets, size = [], 0
        for t, (_, rows, _, _, _) in enumerate(self.embedding_specs):
            offsets.append(size)
            table_bytes = rows * self._row_bytes(t)
            size += _round_up(table_bytes, CACHE_LINE) if cacheline_alignment else table_bytes
        self.weights_physical_offsets = offsets
        self.host_size = size
        self.register_buffer("weights_offsets", ember.tensor([offsets[t] for t in self.feature_table_map], dtype=ember.int64))
        self.register_buffer("weights_tys", ember.tensor([self.embedding_specs[t][3].as_int() for t in self.feature_table_map],
                                                         dtype=ember.uint8))
        self._weights = np.zeros(0, np.uint8)
        self.weights_host = ember.from_numpy(self._weights)
        # The kernel's description of each feature's table: (type code, rows, dim, byte offset).
        self._kernel_tables = [(self.embedding_specs[t][3].as_int(), self.embedding_specs[t][1], self.embedding_specs[t][2],
                                offsets[t]) for t in self.feature_table_map]

    def __deepcopy__(self, memo):
        """A copy whose weights_host views its own weight bytes (copied one by one, the two would part)."""
        clone = self.__class__.__new__(self.__class__)
        memo[id(self)] = clone
        for name, value in self.__dict__.items():
            if name != "weights_host":
                clone.__dict__[name] = copy.deepcopy(value, memo)
        clone.weights_host = ember.from_numpy(clone._weights)
        return clone

    def initialize_weights(self):
        """Allocates the weights buffer (zeros)."""
        if not self.weight_initialized:
            self._weights = np.zeros(self.host_size, np.uint8)
            self.weights_host = ember.from_numpy(self._weights)
            self.weight_initialized = True

    def split_embedding_weights(self, split_scale_shifts=True):
        """Per table, views of the buffer: (values, scale_shift) where integer rows' 4 header
        bytes are scale_shift (None for float types, or for every type when not
        `split_scale_shifts`, the whole padded row being the first)."""
        if not self.weight_initialized:
            raise RuntimeError("weight needs to be initialized before split_embedding_weights (initialize_weights())")
        splits = []
        for t, (_, rows, dim, weight_ty, _) in enumerate(self.embedding_specs):
            row_bytes = self._row_bytes(t)
            start = self.weights_physical_offsets[t]
            table = self._weights[start:start + rows * row_bytes].reshape(rows, row_bytes)
            if not split_scale_shifts:
                splits.append((ember.from_numpy(table), None))
                continue
            table = table[:, :unpadded_row_size_in_bytes(dim, weight_ty, self.scale_bias_size_in_bytes)]
            if weight_ty.is_float():
                splits.append((ember.from_numpy(table), None))
            else:
                header = self.scale_bias_size_in_bytes
                splits.append((ember.from_numpy(table[:, header:]), ember.from_numpy(table[:, :header])))
        return splits

    def assign_embedding_weights(self, q_weight_list):
        """Copies (values, scale_shift) per table (as `split_embedding_weights()` gives them, or
        as `emberrec.fbgemm.tbe.utils.quantize.quantize_embs` makes them) into the buffer."""
        self.initialize_weights()
        destinations = self.split_embedding_weights()
        if len(q_weight_list) != len(destinations):
            raise ValueError(f"assign_embedding_weights: {len(destinations)} tables, got {len(q_weight_list)} weights")
        for t, ((dest, dest_scale), (values, scale_shift)) in enumerate(zip(destinations, q_weight_list)):
            self._copy_into(dest, values, f"table {t} values")
            if (dest_scale is None) != (scale_shift is None):
                raise ValueError(f"assign_embedding_weights: table {t} ({self.embedding_specs[t][3]}) "
                                 f"{'has no' if dest_scale is None else 'needs a'} scale_shift")
            if dest_scale is not None:
                self._copy_into(dest_scale, scale_shift, f"table {t} scale_shift")

    @staticmethod
    def _copy_into(dest, source, what):
        if not isinstance(source, ember.Tensor) or source.dtype != ember.uint8:
            raise TypeError(f"assign_embedding_weights: {what} must be a uint8 ember.Tensor")
        if tuple(source.shape) != tuple(dest.shape):
            raise ValueError(f"assign_embedding_weights: {what} must have shape {tuple(dest.shape)}, got {tuple(source.shape)}")
        dest.copy_(source)

    def forward(self, indices, offsets, per_sample_weights=None):
        if not self.weight_initialized:
            raise RuntimeError("weight needs to be initialized before forward function")
        index_array = _index_array(indices, "indices")
        offset_array = _index_array(offsets, "offsets")
        weights = None if per_sample_weights is None else _weight_array(per_sample_weights)
        dtype = OUTPUT_DTYPES[SparseType.from_int(self.output_dtype)]
        rows = len(index_array) if self.pooling_mode is PoolingMode.NONE else (len(offset_array) - 1) // len(self.feature_table_map)
        width = self.embedding_specs[0][2] if self.pooling_mode is PoolingMode.NONE else self.total_D
        out = np.empty((max(rows, 0), width), dtype)
        mode = BOUNDS_CHECK[BoundsCheckMode(self.bounds_check_mode_int)]
        outside = ember._C.rec.embedding_bags(
            self._weights, self._kernel_tables, self.row_alignment, self._fp8_format(), index_array, offset_array, weights,
            POOLING[self.pooling_mode], mode, out.view(np.uint16) if dtype == np.float16 else out, dtype == np.float16)
        if outside and mode == "warning":
            self.bounds_check_warning += outside
            warnings.warn(f"IntNBitTableBatchedEmbeddingBagsCodegen: {outside} indices outside their tables read row 0",
                          RuntimeWarning, stacklevel=2)
        return ember.from_numpy(out)

    def _fp8_format(self):
        return (4, 7) if self.fp8_exponent_bits < 0 else (self.fp8_exponent_bits, self.fp8_exponent_bias)


def _index_array(tensor, name):
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"{name} must be an ember.Tensor, got {type(tensor).__name__}")
    if tensor.dtype not in (ember.int32, ember.int64):
        raise TypeError(f"{name} must be int32 or int64, got {tensor.dtype}")
    if tensor.dim() != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(tensor.shape)}")
    return np.ascontiguousarray(tensor.numpy())


def _weight_array(tensor):
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"per_sample_weights must be an ember.Tensor, got {type(tensor).__name__}")
    if tensor.dtype not in (ember.float32, ember.float16):
        raise TypeError(f"per_sample_weights must be float32 or float16, got {tensor.dtype}")
    if tensor.dim() != 1:
        raise ValueError(f"per_sample_weights must be 1-D, got shape {tuple(tensor.shape)}")
    return np.ascontiguousarray(tensor.detach().to(ember.float32).numpy())
