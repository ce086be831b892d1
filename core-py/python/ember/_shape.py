"""Functional forms of the view ops (all views: no data is copied)."""
import builtins
import math
import numbers

from ember import _C

__all__ = [
    "reshape", "view_as_shape", "transpose", "swapaxes", "swapdims", "permute", "t", "squeeze", "unsqueeze", "flatten",
    "unflatten", "movedim", "moveaxis", "narrow", "select", "flip", "fliplr", "flipud", "diagonal", "as_strided",
    "broadcast_to", "numel", "is_floating_point", "clone",
]


def _check(x, fn):
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")


def reshape(input, shape):
    _check(input, "reshape")
    return input.reshape(shape)


def view_as_shape(input, shape):
    return input.view(shape)


def transpose(input, dim0, dim1):
    _check(input, "transpose")
    return input.transpose(dim0, dim1)


swapaxes = swapdims = transpose


def permute(input, dims):
    _check(input, "permute")
    return input.permute(dims)


def t(input):
    return input.t()


def squeeze(input, dim=None):
    return input.squeeze(dim)


def unsqueeze(input, dim):
    return input.unsqueeze(dim)


def _wrap(d, n):
    """`d` in `0..n`; a 0-d tensor takes dims as if it had one (PyTorch's `maybe_wrap_dim`)."""
    n = builtins.max(n, 1)
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


def flatten(input, start_dim=0, end_dim=-1):
    """Merges dims `start_dim..=end_dim` (a view when the strides allow it)."""
    _check(input, "flatten")
    s, e = _wrap(start_dim, input.ndim), _wrap(end_dim, input.ndim)
    if input.ndim == 0:
        return input.reshape(1)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = list(input.shape)
    merged = 1
    for d in shape[s:e + 1]:
        merged *= d
    return input.reshape(shape[:s] + [merged] + shape[e + 1:])


def unflatten(input, dim, sizes):
    """Splits dim `dim` into `sizes` (one of which may be -1, inferred)."""
    _check(input, "unflatten")
    if not isinstance(dim, numbers.Integral):
        raise TypeError(f"unflatten(): argument 'dim' (position 1) must be int, not {type(dim).__name__}")
    d = _wrap(dim, input.ndim)
    sizes, shape = [int(s) for s in sizes], list(input.shape)
    if len(sizes) == 0:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if sizes.count(-1) > 1:
        raise RuntimeError("unflatten got an unexpected error:\nonly one dimension can be inferred")
    known = math.prod(s for s in sizes if s != -1)
    fits = shape[d] % known == 0 if -1 in sizes and known else known == shape[d]
    if not fits:
        raise RuntimeError(f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} ({shape[d]}) in the input tensor")
    return input.reshape(shape[:d] + sizes + shape[d + 1:])


def movedim(input, source, destination):
    n = input.ndim
    src = [source] if isinstance(source, numbers.Integral) else list(source)
    dst = [destination] if isinstance(destination, numbers.Integral) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the same number of dims as destination ({dst} dims)")
    src, dst = [_wrap(d, n) for d in src], [_wrap(d, n) for d in dst]
    if n == 0:
        return input.view(())
    order = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    return input.permute([o if o is not None else next(rest) for o in order])


moveaxis = movedim


def narrow(input, dim, start, length):
    return input.narrow(dim, start, length)


def select(input, dim, index):
    return input.select(dim, index)


def flip(input, dims):
    return input.flip(dims)


def fliplr(input):
    return input.flip(1)


def flipud(input):
    return input.flip(0)


def diagonal(input, offset=0, dim1=0, dim2=1):
    return input.diagonal(offset, dim1, dim2)


def as_strided(input, size, stride, storage_offset=None):
    return input.as_strided(size, stride, storage_offset)


def broadcast_to(input, size):
    return input.broadcast_to(size)


def numel(input):
    return input.numel()


def is_floating_point(input):
    return input.is_floating_point()


def clone(input, *, memory_format=None):
    return input.clone() if memory_format is None else input.clone(memory_format=memory_format)
