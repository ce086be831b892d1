"""`out=` as PyTorch writes it, for the functions that compute a fresh result first."""
import warnings

from ember import _C


def write_out(name, out, result):
    """Writes `result` (a tensor or a tuple of them) into `out` and returns `out`. A target of
    another shape is resized first, as PyTorch's `resize_output` does (with its deprecation
    warning when the target held elements); one of the right shape is written in place."""
    if out is None:
        return result
    pairs = list(zip(out, result)) if isinstance(result, tuple) else [(out, result)]
    for target, value in pairs:
        if not isinstance(target, _C.Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor or a tuple of Tensors, not {type(target).__name__}")
        if tuple(target.shape) != tuple(value.shape):
            resize_out(target, tuple(value.shape))
        target.copy_(value)
    return type(result)(*out) if isinstance(result, tuple) else out


def resize_out(target, shape):
    """Gives `target` fresh memory of `shape` (PyTorch's `resize_output`, warning when it held elements)."""
    if target.numel() != 0:
        warnings.warn(
            f"An output with one or more elements was resized since it had shape {list(target.shape)}, which does not "
            f"match the required output shape {list(shape)}. This behavior is deprecated, and in a future PyTorch "
            "release outputs will not be resized unless they have zero elements. You can explicitly reuse an out "
            "tensor t by resizing it, inplace, to zero elements with t.resize_(0).",
            UserWarning,
            stacklevel=4,
        )
    target._set_data(_C.empty(shape, target.dtype, str(target.device)))
