"""Whole-tensor comparisons: `isclose`, `allclose`, `equal` (PyTorch's semantics)."""
import ember
from ember import _C

__all__ = ["isclose", "allclose", "equal"]


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise `|input - other| <= atol + rtol * |other|`; equal infinities are close, NaNs
    only with `equal_nan`. Both tensors must have the same dtype, as in PyTorch."""
    if input.dtype != other.dtype:
        raise RuntimeError(f"isclose(): {input.dtype} did not match {other.dtype}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    close = input == other
    inexact = input.is_floating_point() or input.is_complex()
    if equal_nan and inexact:
        close = close | (ember.isnan(input) & ember.isnan(other))
    if input.dtype == _C.bool or (rtol == 0 and atol == 0):
        return close
    if not inexact:  # integers: the tolerance is fractional, so compare in the default float dtype
        input, other = input.to(ember.get_default_dtype()), other.to(ember.get_default_dtype())
    actual = (input - other).abs()
    allowed = atol + rtol * other.abs()
    # A NaN or infinite difference is never within tolerance (equal infinities matched above).
    return close | (ember.isfinite(actual) & (actual <= allowed))


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether every element of `input` is close to `other` (see `isclose`), as a Python bool."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other):
    """True if both tensors have the same shape and elements (NaN equals nothing)."""
    if not isinstance(input, _C.Tensor) or not isinstance(other, _C.Tensor):
        raise TypeError(f"equal(): argument 'other' must be Tensor, not {type(other).__name__}")
    return input.shape == other.shape and bool((input == other).all())
