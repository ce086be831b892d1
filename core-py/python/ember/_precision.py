"""`set_float32_matmul_precision` / `get_float32_matmul_precision` (PyTorch 1.12 semantics).

Ember runs on the CPU, where:

* "highest" (the default): float32 matmuls compute in float32.
* "high": Ember has no faster algorithm of that precision on the CPU, so it computes like
  "highest" (PyTorch allows this: "high" falls back to "highest" when no faster algorithm is
  available).
* "medium": float32 `matmul`/`mm`/`bmm`/`addmm`/`linear` round their operands to bfloat16 and
  run Ember's `vdpbf16ps` kernel with float32 accumulation, on CPUs with AVX512-BF16; elsewhere
  they compute like "highest".
"""
import warnings as _warnings

from ember import _C

__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision"]


def set_float32_matmul_precision(precision):
    """Sets the internal precision of float32 matrix multiplications ("highest", "high" or
    "medium"); any other string warns and changes nothing, as in PyTorch."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if not _C._set_float32_matmul_precision(precision):
        _warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
            "set_float32_matmul_precision call has no effect.",
            UserWarning,
            stacklevel=2,
        )


def get_float32_matmul_precision():
    """The current float32 matmul precision: "highest", "high" or "medium"."""
    return _C._get_float32_matmul_precision()
