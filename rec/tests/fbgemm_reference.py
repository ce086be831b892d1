"""Runs the parity cases of test_fbgemm_inference.py in FBGEMM-GPU itself, in an interpreter
that has it: `python fbgemm_reference.py inputs.npz outputs.npz`. Imports neither ember nor
emberrec. Inputs: `rows` (float32 tables of whole-byte widths), `tbe.*` (quantized tables and
bags); outputs: FBGEMM's encodings and lookups."""
import sys

import numpy as np
import torch
import fbgemm_gpu  # noqa: F401  (registers torch.ops.fbgemm)
from fbgemm_gpu.split_embedding_configs import SparseType
from fbgemm_gpu.split_table_batched_embeddings_ops_common import EmbeddingLocation, PoolingMode
from fbgemm_gpu.split_table_batched_embeddings_ops_inference import IntNBitTableBatchedEmbeddingBagsCodegen
from fbgemm_gpu.tbe.utils.quantize import quantize_embs

TYPES = ["fp32", "fp16", "fp8", "int8", "int4", "int2"]


def main(source, target):
    data = dict(np.load(source))
    out = {}
    x = torch.from_numpy(data["rows"])
    fbgemm = torch.ops.fbgemm
    out["fused8"] = fbgemm.FloatToFused8BitRowwiseQuantized(x).numpy()
    out["fused8.back"] = fbgemm.Fused8BitRowwiseQuantizedToFloat(torch.from_numpy(out["fused8"])).numpy()
    for bits in (2, 4, 8):
        q = fbgemm.FloatToFusedNBitRowwiseQuantizedSBHalf(x, bits)
        out[f"nbit{bits}"] = q.numpy()
        out[f"nbit{bits}.back"] = fbgemm.FusedNBitRowwiseQuantizedSBHalfToFloat(q, bits).numpy()
    out["hfp8"] = fbgemm.FloatToHFP8Quantized(x, 4, 7, 240.0).numpy()
    out["hfp8.back"] = fbgemm.HFP8QuantizedToFloat(torch.from_numpy(out["hfp8"]), 4, 7).numpy()
    for name in TYPES:
        values, scale_shift = quantize_embs(x, SparseType(name), SparseType.FP8.default_config())
        out[f"embs.{name}"] = values.numpy() if scale_shift is None else np.concatenate([scale_shift.numpy(), values.numpy()], 1)
    specs = [("", int(r), int(d), SparseType(TYPES[int(ty)]), EmbeddingLocation.HOST)
             for ty, r, d in data["tbe.specs"]]
    indices, offsets, weights = (torch.from_numpy(data[f"tbe.{name}"]) for name in ("indices", "offsets", "weights"))
    for mode in ("sum", "mean"):
        tbe = IntNBitTableBatchedEmbeddingBagsCodegen(specs, pooling_mode=PoolingMode.from_str(mode), device="cpu",
                                                      output_dtype=SparseType.FP32)
        tbe.initialize_weights()
        tables = [torch.from_numpy(data[f"tbe.table{t}"]) for t in range(len(specs))]
        tbe.assign_embedding_weights([(w, None) if s[3].is_float() else (w[:, 4:], w[:, :4]) for w, s in zip(tables, specs)])
        out[f"tbe.{mode}"] = tbe(indices, offsets, weights).numpy()
    np.savez(target, **out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
