"""FBGEMM's row-format operators (`torch.ops.fbgemm.*`) on ember tensors, by the Rust kernels
of `ember._C.rec`. Rows are the last dimension; every output is a new tensor.

- `FloatToFused8BitRowwiseQuantized`: each row's values as bytes, then float32 scale and bias;
- `FloatToFusedNBitRowwiseQuantizedSBHalf` (2, 4 or 8 bits): values packed low bits first,
  then binary16 scale and bias. FBGEMM wants rows that fill whole, even byte counts; here any
  width works (the last byte padded), and dequantizing gives the padded width, as FBGEMM's rule
  `(bytes - 4) * 8 / bit_rate` does;
- `FloatToHFP8Quantized`: FBGEMM's HFP8 bytes (`ebits` exponent bits, `exponent_bias`),
  magnitudes saturating at `max_pos`.
"""
import numpy as np

import ember

__all__ = [
    "FloatToFused8BitRowwiseQuantized", "Fused8BitRowwiseQuantizedToFloat",
    "FloatToFusedNBitRowwiseQuantizedSBHalf", "FusedNBitRowwiseQuantizedSBHalfToFloat",
    "FloatToHFP8Quantized", "HFP8QuantizedToFloat",
]

FLOAT_DTYPES = (ember.float32, ember.float16, ember.float64, ember.bfloat16)


def _kernels():
    return ember._C.rec


def _check(tensor, name, dtypes, what):
    if not isinstance(tensor, ember.Tensor):
        raise TypeError(f"{name}: input must be an ember.Tensor, got {type(tensor).__name__}")
    if tensor.dtype not in dtypes:
        raise TypeError(f"{name}: input must be {what}, got {tensor.dtype}")
    if tensor.dim() < 1:
        raise ValueError(f"{name}: input must have at least one dimension")


def _floats(tensor, name):
    """The tensor's values as a contiguous float32 NumPy array."""
    _check(tensor, name, FLOAT_DTYPES, "a floating-point tensor")
    return np.ascontiguousarray(tensor.detach().to(ember.float32).numpy())


def _bytes(tensor, name):
    _check(tensor, name, (ember.uint8,), "uint8")
    return np.ascontiguousarray(tensor.detach().numpy())


def _rows(array):
    cols = array.shape[-1]
    return (array.size // cols if cols else int(np.prod(array.shape[:-1]))), cols


def _check_bit_rate(bit_rate, name):
    if bit_rate not in (2, 4, 8):
        raise ValueError(f"{name}: bit_rate must be 2, 4 or 8, got {bit_rate}")


def FloatToFused8BitRowwiseQuantized(t):
    x = _floats(t, "FloatToFused8BitRowwiseQuantized")
    rows, cols = _rows(x)
    out = np.empty(x.shape[:-1] + (cols + 8,), np.uint8)
    _kernels().quantize_fused8(x, rows, cols, out)
    return ember.from_numpy(out)


def Fused8BitRowwiseQuantizedToFloat(input):
    q = _bytes(input, "Fused8BitRowwiseQuantizedToFloat")
    rows, row_bytes = _rows(q)
    if row_bytes < 8:
        raise ValueError(f"Fused8BitRowwiseQuantizedToFloat: rows must hold at least the 8 bytes of scale and bias, got {row_bytes}")
    out = np.empty(q.shape[:-1] + (row_bytes - 8,), np.float32)
    _kernels().dequantize_fused8(q, rows, row_bytes - 8, out)
    return ember.from_numpy(out)


def FloatToFusedNBitRowwiseQuantizedSBHalf(input, bit_rate):
    _check_bit_rate(bit_rate, "FloatToFusedNBitRowwiseQuantizedSBHalf")
    x = _floats(input, "FloatToFusedNBitRowwiseQuantizedSBHalf")
    rows, cols = _rows(x)
    out = np.empty(x.shape[:-1] + (-(-cols * bit_rate // 8) + 4,), np.uint8)
    _kernels().quantize_nbit(x, rows, cols, bit_rate, out)
    return ember.from_numpy(out)


def FusedNBitRowwiseQuantizedSBHalfToFloat(input, bit_rate):
    _check_bit_rate(bit_rate, "FusedNBitRowwiseQuantizedSBHalfToFloat")
    q = _bytes(input, "FusedNBitRowwiseQuantizedSBHalfToFloat")
    rows, row_bytes = _rows(q)
    if row_bytes < 4:
        raise ValueError(f"FusedNBitRowwiseQuantizedSBHalfToFloat: rows must hold at least the 4 bytes of scale and bias, got {row_bytes}")
    cols = (row_bytes - 4) * (8 // bit_rate)
    out = np.empty(q.shape[:-1] + (cols,), np.float32)
    _kernels().dequantize_nbit(q, rows, cols, bit_rate, out)
    return ember.from_numpy(out)


def FloatToHFP8Quantized(input, ebits, exponent_bias, max_pos):
    x = _floats(input, "FloatToHFP8Quantized")
    out = np.empty(x.shape, np.uint8)
    _kernels().encode_hfp8(x.reshape(-1), ebits, exponent_bias, float(max_pos), out.reshape(-1))
    return ember.from_numpy(out)


def HFP8QuantizedToFloat(input, ebits, exponent_bias):
    q = _bytes(input, "HFP8QuantizedToFloat")
    out = np.empty(q.shape, np.float32)
    _kernels().decode_hfp8(q.reshape(-1), ebits, exponent_bias, out.reshape(-1))
    return ember.from_numpy(out)
