"""`ember.autograd.forward_ad`: forward-mode automatic differentiation, as PyTorch's
`torch.autograd.forward_ad`.

Inside a `dual_level`, `make_dual(x, t)` gives a tensor that carries the tangent `t`; every op
on it computes the tangent of its result alongside (the Rust core's `autograd::forward`, which
derives it from the op's derivative formula), and `unpack_dual` reads it back: the
Jacobian-vector product `J t`. One level exists at a time; its tangents are dropped on exit.
"""
from collections import namedtuple

from ember import _C
from ember.autograd.grad_mode import _DecoratorContextManager

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

# The level the other functions use by default (-1: none), as PyTorch keeps it.
_current_level = -1


def enter_dual_level():
    """Opens a new forward-grad level (nesting is refused) and returns its index."""
    global _current_level
    new_level = _C._enter_dual_level()
    if new_level != _current_level + 1:
        raise RuntimeError("Entering a new forward AD level but the current level is not valid. Make sure you did not modified it directly.")
    _current_level = new_level
    return new_level


def exit_dual_level(*, level=None):
    """Closes `level` (default: the current one), which must be the last one opened; the
    tangents made in it are dropped."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    _C._exit_dual_level(level)
    _current_level = level - 1


def _level(level, what):
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError(f"Trying to {what} for forward AD but no level exists, make sure to enter_dual_level() first.")
    return level


def make_dual(tensor, tangent, *, level=None):
    """A view of `tensor` carrying `tangent` (same shape; floating point or complex) at
    `level`. The tangent is used as is when laid out like `tensor`, else copied. Reverse mode
    differentiates the result with respect to `tensor`."""
    if not isinstance(tensor, _C.Tensor) or not isinstance(tangent, _C.Tensor):
        raise TypeError(f"make_dual(): expected tensor and tangent to be Tensors, but got {type(tensor).__name__} and {type(tangent).__name__}")
    level = _level(level, "create a dual Tensor")
    return _C._make_dual(tensor, tangent, level)


UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = """`unpack_dual`'s result: the primal (a view of the dual tensor) and its tangent, None when it has none."""


def unpack_dual(tensor, *, level=None):
    """The primal and tangent of `tensor` at `level` (`UnpackedDualTensor`); the tangent is
    None when `tensor` has none (or no level is open)."""
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"unpack_dual(): expected a Tensor, but got {type(tensor).__name__}")
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    primal, tangent = _C._unpack_dual(tensor, level)
    return UnpackedDualTensor(primal, tangent)


class dual_level(_DecoratorContextManager):
    """Context manager (and decorator) running its body in a new dual level:

        with dual_level():
            y = f(make_dual(x, t))
            jvp = unpack_dual(y).tangent
    """

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()
