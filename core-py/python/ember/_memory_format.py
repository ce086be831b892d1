"""Memory formats (PyTorch's `torch.memory_format`): `contiguous_format`, `channels_last`
(`[N, C, H, W]` stored as `[N, H, W, C]`), `channels_last_3d` (`[N, C, D, H, W]` stored as
`[N, D, H, W, C]`) and `preserve_format`; and the tensor methods that take one.

A channels-last tensor is an ordinary strided tensor (a permuted contiguous one), so every op
accepts it; conv2d, batch_norm, 2-d pooling and interpolate have channels-last kernels and
return channels-last results, and elementwise results follow their first input's layout."""
from ember import _C

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]

# The native methods, taken before `_tensor.py` puts this module's versions on the class.
_native_clone = _C.Tensor.clone
_native_contiguous = _C.Tensor.contiguous
_native_is_contiguous = _C.Tensor.is_contiguous


class memory_format:
    """One memory format; compare by identity, as PyTorch's singletons."""

    __module__ = "ember"

    def __init__(self, name, rank=None, order=None):
        self._name, self._rank, self._order = name, rank, order

    def __repr__(self):
        return f"ember.{self._name}"

    def __reduce__(self):
        return self._name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
# Storage order of the dims (outermost first) for the channels-last formats.
channels_last = memory_format("channels_last", 4, (0, 2, 3, 1))
channels_last_3d = memory_format("channels_last_3d", 5, (0, 2, 3, 4, 1))


def check(fmt, fn, default=None):
    """`fmt` validated; `None` means `default` where PyTorch's argument is optional."""
    if fmt is None and default is not None:
        return default
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{fn}(): argument 'memory_format' must be ember.memory_format, not {type(fmt).__name__}")
    return fmt


def _check_rank(fmt, ndim):
    if fmt._rank is not None and ndim != fmt._rank:
        raise RuntimeError(f"required rank {fmt._rank} tensor to use {fmt._name} format")


def _inverse(order):
    inv = [0] * len(order)
    for i, d in enumerate(order):
        inv[d] = i
    return inv


def is_contiguous(t, memory_format=contiguous_format):
    """PyTorch's rule: the dims, innermost first in the format's order, have dense strides
    (size-1 dims do not count); channels-last formats on other ranks are never contiguous."""
    fmt = check(memory_format, "is_contiguous")
    if fmt is preserve_format:
        raise RuntimeError("is_contiguous: preserve_format is not a valid memory format for this check")
    if fmt is contiguous_format:
        return _native_is_contiguous(t)
    if t.ndim != fmt._rank:
        return False
    shape, strides = t.shape, t.stride()
    expected = 1
    for d in reversed(fmt._order):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def _strides_like(t, fmt):
    """PyTorch's test of a layout against a channels-last format, on the order of the strides
    (not their density): walking the dims innermost first, each stride is at least the extent
    of the dims before it; an ambiguous `[N, 1, 1, 1]` layout counts as contiguous."""
    if t.ndim != fmt._rank or t.numel() == 0:
        return False
    shape, strides = t.shape, t.stride()
    if strides[1] == 0:
        return False
    low = 0
    for d in reversed(fmt._order):
        if strides[d] < low or (d == 0 and low == strides[1]):
            return False
        low = strides[d] * max(shape[d], 1)
    return True


def suggest(t):
    """The format a tensor is laid out in (PyTorch's `suggest_memory_format`)."""
    for fmt in (channels_last, channels_last_3d):
        if _strides_like(t, fmt):
            return fmt
    return contiguous_format


def restride(t, fmt):
    """A copy of `t` laid out in `fmt` (not `preserve_format`); differentiable (a recorded copy_)."""
    return empty_in(lambda shape: _C.empty(shape, t.dtype, str(t.device)), t.shape, fmt).copy_(t)


def contiguous(t, memory_format=contiguous_format):
    """`Tensor.contiguous`: the tensor itself when already laid out in the format, else a copy."""
    fmt = check(memory_format, "contiguous")
    if fmt is preserve_format:
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    if fmt is contiguous_format:
        return _native_contiguous(t)
    _check_rank(fmt, t.ndim)
    if is_contiguous(t, fmt) and t.numel() > 0:
        return t
    return restride(t, fmt)


def clone(t, memory_format=preserve_format):
    """`Tensor.clone`: a copy, laid out as `t` (dense inputs) or in the format given."""
    fmt = check(memory_format, "clone", preserve_format)
    if fmt is preserve_format:
        return _native_clone(t)
    return restride(t, fmt)


def dense_order(t):
    """The dims of a dense, non-overlapping `t` from outermost to innermost in memory, or None
    when `t` is not so laid out or is plain row-major."""
    shape, strides = t.shape, t.stride()
    if any(s <= 0 for s in strides):
        return None
    order = sorted(range(t.ndim), key=lambda d: (strides[d], shape[d]), reverse=True)
    expected = 1
    for d in reversed(order):
        if shape[d] != 1 and strides[d] != expected:
            return None
        expected *= shape[d]
    return None if order == list(range(t.ndim)) else tuple(order)


def empty_in(make, shape, fmt, like=None):
    """`make(shape)` (a fresh contiguous tensor) laid out in `fmt`; `preserve_format` keeps the
    memory order of a dense `like` (as PyTorch's `*_like` functions do)."""
    fmt = check(fmt, "empty", preserve_format if like is not None else contiguous_format)
    order = None
    if fmt is preserve_format:
        order = dense_order(like) if like is not None else None
    elif fmt is not contiguous_format:
        _check_rank(fmt, len(shape))
        order = fmt._order
    if order is None:
        return make(tuple(shape))
    return make(tuple(shape[d] for d in order)).permute(_inverse(order))
