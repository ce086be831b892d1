"""The indexing and joining families, named as in PyTorch: gather/scatter, index_*, masked_*,
take, nonzero, cat/stack/split, roll, repeat, tril/triu, meshgrid. Kernels live in
`ember_core::ops::{index, join}`; split/chunk/tensor_split/unbind return views."""
import builtins
import numbers

from ember import _C
from ember._out import write_out
from ember._functorch._batched import batched

__all__ = [
    "gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add", "index_copy", "index_fill",
    "index_put", "masked_fill", "masked_select", "masked_scatter", "take", "take_along_dim", "nonzero", "argwhere",
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "split", "chunk", "tensor_split",
    "unbind", "roll", "repeat_interleave", "tile", "tril", "triu", "meshgrid",
]


def _tensor_arg(x, fn, name="input"):
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


def _result(r, out):
    return write_out("_result", out, r)


# ---- gather / scatter ----

def gather(input, dim, index, *, sparse_grad=False, out=None):
    """`out[i][j][k] = input[i][index[i][j][k]][k]` for dim=1 (index must be int64)."""
    _tensor_arg(input, "gather")
    _tensor_arg(index, "gather", "index")
    try:
        r = _C.gather(input, dim, index)
    except TypeError:
        r = batched("gather", input, dim, index)
    return _result(r, out)


def _scatter_src(input, src, value, fn):
    if src is None and value is None:
        raise TypeError(f"{fn}() missing required argument 'src' (or 'value')")
    src = value if src is None else src
    if isinstance(src, _C.Tensor) and src.dtype != input.dtype:
        raise RuntimeError(f"{fn}(): Expected self.dtype to be equal to src.dtype, got {input.dtype} and {src.dtype}")
    return src


def _scatter_(input, dim, index, src=None, reduce=None, *, value=None):
    """In-place `scatter_`; `reduce` is None, "add" or "multiply" (a number `src` fills)."""
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    _C.scatter_(input, dim, _tensor_arg(index, "scatter_", "index"), _scatter_src(input, src, value, "scatter_"), reduce)
    return input


def scatter(input, dim, index, src=None, reduce=None, *, value=None, out=None):
    """Out-of-place `scatter`: a copy of `input` with `src` (or `value`) written at `index`."""
    r = _scatter_(_tensor_arg(input, "scatter").clone(), dim, index, src, reduce, value=value)
    return _result(r, out)


def _scatter_add_(input, dim, index, src):
    _C.scatter_(input, dim, _tensor_arg(index, "scatter_add_", "index"), _scatter_src(input, src, None, "scatter_add_"), "sum")
    return input


def scatter_add(input, dim, index, src, *, out=None):
    return _result(_scatter_add_(_tensor_arg(input, "scatter_add").clone(), dim, index, src), out)


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _scatter_reduce_(input, dim, index, src, reduce, *, include_self=True):
    """`reduce` is "sum", "prod", "mean", "amax" or "amin"; `include_self=False` ignores the
    values already at the scattered-to positions."""
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    _C.scatter_(input, dim, _tensor_arg(index, "scatter_reduce_", "index"), _scatter_src(input, src, None, "scatter_reduce_"), reduce, include_self)
    return input


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    r = _scatter_reduce_(_tensor_arg(input, "scatter_reduce").clone(), dim, index, src, reduce, include_self=include_self)
    return _result(r, out)


# ---- index_* ----

def index_select(input, dim, index, *, out=None):
    """The slices of `input` along `dim` named by the int32/int64 vector `index`."""
    _tensor_arg(input, "index_select")
    _tensor_arg(index, "index_select", "index")
    try:
        r = _C.index_select(input, dim, index)
    except TypeError:
        r = batched("index_select", input, dim, index)
    return _result(r, out)


def _check_same_dtype(input, source, fn):
    if source.dtype != input.dtype:
        raise RuntimeError(f"{fn}(): self ({input.dtype}) and source ({source.dtype}) must have the same scalar type")


def _index_add_(input, dim, index, source, *, alpha=1):
    """`input[..., index[i], ...] += alpha * source[..., i, ...]` along `dim`, in place."""
    _tensor_arg(source, "index_add_", "source")
    _check_same_dtype(input, source, "index_add_")
    if alpha != 1:
        source = (source * alpha)._to_dtype(input.dtype)
    _C.index_add_or_copy_(input, dim, _tensor_arg(index, "index_add_", "index"), source, True)
    return input


def index_add(input, dim, index, source, *, alpha=1, out=None):
    return _result(_index_add_(_tensor_arg(input, "index_add").clone(), dim, index, source, alpha=alpha), out)


def _index_copy_(input, dim, index, source):
    _tensor_arg(source, "index_copy_", "source")
    _check_same_dtype(input, source, "index_copy_")
    _C.index_add_or_copy_(input, dim, _tensor_arg(index, "index_copy_", "index"), source, False)
    return input


def index_copy(input, dim, index, source, *, out=None):
    return _result(_index_copy_(_tensor_arg(input, "index_copy").clone(), dim, index, source), out)


def _index_fill_(input, dim, index, value):
    _C.index_fill_(input, dim, _tensor_arg(index, "index_fill_", "index"), value)
    return input


def index_fill(input, dim, index, value):
    return _index_fill_(_tensor_arg(input, "index_fill").clone(), dim, index, value)


def _index_put_(input, indices, values, accumulate=False):
    """`input[indices] = values` (`+=` with `accumulate`); `indices` is a tuple of index tensors."""
    from ember._ops_index import advanced_set

    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put_(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    advanced_set(input, [(None, i) for i in indices], values, accumulate=accumulate)
    return input


def index_put(input, indices, values, accumulate=False):
    return _index_put_(_tensor_arg(input, "index_put").clone(), indices, values, accumulate)


# ---- masks ----

def masked_fill(input, mask, value):
    """`value` where the bool `mask` is set (broadcast), `input` elsewhere; keeps input's dtype."""
    return _C.masked_fill(_tensor_arg(input, "masked_fill"), _tensor_arg(mask, "masked_fill", "mask"), value, False)


def _masked_fill_(input, mask, value):
    _C.masked_fill(input, _tensor_arg(mask, "masked_fill_", "mask"), value, True)
    return input


def masked_select(input, mask, *, out=None):
    """The elements of `input` where `mask` is set (both broadcast), as a 1-d tensor."""
    _tensor_arg(input, "masked_select")
    return _result(_C.masked_select(input, _tensor_arg(mask, "masked_select", "mask")), out)


def _masked_scatter_(input, mask, source):
    _C.masked_scatter_(input, _tensor_arg(mask, "masked_scatter_", "mask"), _tensor_arg(source, "masked_scatter_", "source"))
    return input


def masked_scatter(input, mask, source):
    """A copy of `input` whose masked elements take `source`'s elements in row-major order."""
    _tensor_arg(input, "masked_scatter")
    return _masked_scatter_(input.expand(_broadcast(input.shape, mask.shape)).clone(), mask, source)


def _broadcast(a, b):
    from ember._ops import broadcast_shapes

    return broadcast_shapes(a, b)


# ---- take / nonzero ----

def take(input, index):
    """`input` read as if flattened, at `index` (negative positions count from the end)."""
    return _C.take(_tensor_arg(input, "take"), _tensor_arg(index, "take", "index"))


def take_along_dim(input, indices, dim=None, *, out=None):
    """`gather` with `indices` and `input` broadcast against each other apart from `dim`;
    with no `dim`, both are flattened."""
    _tensor_arg(input, "take_along_dim")
    _tensor_arg(indices, "take_along_dim", "indices")
    if indices.dtype != _C.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got {indices.dtype}")
    if dim is None:
        return _result(_C.gather(input.reshape(-1), 0, indices.reshape(-1)), out)
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, but got {input.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    d = dim % input.ndim if -input.ndim <= dim < input.ndim else dim
    if not 0 <= d < input.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, {input.ndim - 1}], but got {dim})")
    a, b = list(input.shape), list(indices.shape)
    a[d] = b[d] = 1
    shape = list(_broadcast(a, b))
    x = input.expand(shape[:d] + [input.shape[d]] + shape[d + 1:])
    i = indices.expand(shape[:d] + [indices.shape[d]] + shape[d + 1:])
    return _result(_C.gather(x, d, i), out)


def nonzero(input, *, out=None, as_tuple=False):
    """Row-major coordinates of the non-zero elements: an [n, ndim] int64 tensor, or with
    `as_tuple` one 1-d tensor per dim (a 0-d input counts as 1-d)."""
    _tensor_arg(input, "nonzero")
    if as_tuple:
        coords = _C.nonzero(input if input.ndim > 0 else input.reshape(1))
        return tuple(coords[:, k] for k in range(coords.shape[1]))
    return _result(_C.nonzero(input), out)


def argwhere(input):
    return nonzero(input)


# ---- joining ----

def _tensor_list(tensors, fn):
    if isinstance(tensors, _C.Tensor) or not isinstance(tensors, (tuple, list)):
        raise TypeError(f"{fn}(): argument 'tensors' must be tuple of Tensors, not {type(tensors).__name__}")
    for i, t in enumerate(tensors):
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"{fn}(): expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
    return list(tensors)


def cat(tensors, dim=0, *, out=None):
    """Joins along `dim`, promoting dtypes; 1-d empty tensors are skipped, as PyTorch does."""
    ts = _tensor_list(tensors, "cat")
    try:
        if out is None:
            return _C.cat(ts, dim)
        _C.cat(ts, dim, out)
    except TypeError:
        return batched("cat", ts, dim, out)
    return out


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    """Joins equally shaped tensors along a new dim `dim`."""
    ts = _tensor_list(tensors, "stack")
    try:
        r = _C.stack(ts, dim)
    except TypeError:
        r = batched("stack", ts, dim)
    return _result(r, out)


def _atleast(t, n):
    """`t` with at least `n` (1 or 2) dims: scalars become [1] or [1, 1], vectors rows."""
    if t.ndim >= n:
        return t
    return t.reshape(1) if n == 1 else t.reshape(1, -1)


def hstack(tensors, *, out=None):
    """Joins along dim 1 (dim 0 when every input is 1-d), scalars seen as 1-d."""
    ts = [_atleast(t, 1) for t in _tensor_list(tensors, "hstack")]
    return cat(ts, 0 if builtins.all(t.ndim == 1 for t in ts) else 1, out=out)


def vstack(tensors, *, out=None):
    """Joins along dim 0, 0-d and 1-d inputs seen as rows."""
    return cat([_atleast(t, 2) for t in _tensor_list(tensors, "vstack")], 0, out=out)


row_stack = vstack


# ---- splitting (views) ----

def split(tensor, split_size_or_sections, dim=0):
    """Views of `split_size_or_sections` elements along `dim` (the last shorter), or of the
    given list of sizes."""
    _tensor_arg(tensor, "split", "tensor")
    if isinstance(split_size_or_sections, numbers.Integral):
        return tuple(_splitting("split", tensor, int(split_size_or_sections), dim))
    return tuple(_splitting("split_with_sizes", tensor, [int(s) for s in split_size_or_sections], dim))


def _splitting(prim, input, sizes, dim):
    try:
        return getattr(_C, prim)(input, sizes, dim)
    except TypeError:
        return batched(prim, input, sizes, dim)


def chunk(input, chunks, dim=0):
    """At most `chunks` views of equal length along `dim`."""
    return tuple(_splitting("chunk", _tensor_arg(input, "chunk"), chunks, dim))


def tensor_split(input, indices_or_sections, dim=0):
    """`sections` views whose lengths differ by at most one, or views split at `indices`."""
    _tensor_arg(input, "tensor_split")
    s = indices_or_sections
    if isinstance(s, _C.Tensor):
        if s.dtype != _C.int64 or s.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor of dtype long, but got a tensor with {s.ndim} dims and dtype {s.dtype}")
        s = s.item() if s.ndim == 0 else s.tolist()
    if isinstance(s, numbers.Integral):
        return tuple(_splitting("tensor_split_sections", input, int(s), dim))
    return tuple(_splitting("tensor_split_indices", input, [int(i) for i in s], dim))


def unbind(input, dim=0):
    """Every slice along `dim`, as views."""
    _tensor_arg(input, "unbind")
    try:
        return tuple(_C.unbind(input, dim))
    except TypeError:
        return tuple(batched("unbind", input, dim))


# ---- copies that rearrange ----

def _int_list(v):
    return [int(v)] if isinstance(v, numbers.Integral) else [int(x) for x in v]


def roll(input, shifts, dims=None):
    """Shifts elements along `dims` (wrapping around); with no dims the flattened tensor rolls."""
    return _C.roll(_tensor_arg(input, "roll"), _int_list(shifts), [] if dims is None else _int_list(dims))


def _repeat(self, *sizes):
    """`Tensor.repeat(*sizes)`: tiles the tensor `sizes[k]` times along each dim."""
    if len(sizes) == 1 and not isinstance(sizes[0], numbers.Integral):
        sizes = tuple(sizes[0])
    return _C.repeat(self, [int(s) for s in sizes])


def tile(input, dims):
    """`repeat` with `dims` padded with leading ones to the tensor's rank."""
    reps = _int_list(dims)
    return _C.repeat(_tensor_arg(input, "tile"), [1] * (input.ndim - len(reps)) + reps)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeats each element (or slice along `dim`) `repeats` times; `repeats` is an int or a
    tensor with one count per element. `repeat_interleave(counts)` repeats 0..len(counts)."""
    if repeats is None:
        counts = _tensor_arg(input, "repeat_interleave")
        from ember._creation import arange

        return repeat_interleave(arange(counts.numel()), counts, 0)
    _tensor_arg(input, "repeat_interleave")
    if isinstance(repeats, _C.Tensor):
        if repeats.ndim > 1 or repeats.is_floating_point():
            raise RuntimeError(f"repeat_interleave: repeats must be 0-dim or 1-dim tensor of integers, got {repeats.ndim} dims of {repeats.dtype}")
        counts = _int_list(repeats.tolist())
    else:
        counts = [int(repeats)]
    x = input.reshape(-1) if dim is None else input
    return _C.repeat_interleave(x, counts, 0 if dim is None else dim)


def tril(input, diagonal=0, *, out=None):
    """Keeps the elements on and below the `diagonal`-th diagonal of the last two dims."""
    return _result(_C.tri(_tensor_arg(input, "tril"), diagonal, False, False), out)


def triu(input, diagonal=0, *, out=None):
    """Keeps the elements on and above the `diagonal`-th diagonal of the last two dims."""
    return _result(_C.tri(_tensor_arg(input, "triu"), diagonal, True, False), out)


def _tril_(input, diagonal=0):
    _C.tri(input, diagonal, False, True)
    return input


def _triu_(input, diagonal=0):
    _C.tri(input, diagonal, True, True)
    return input


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids (expanded views) from 0-d or 1-d tensors; `indexing="xy"` swaps the
    first two output dims, as NumPy's default does."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    ts = _tensor_list(tensors, "meshgrid")
    for t in ts:
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t.ndim}D")
    ts = [t.reshape(-1) for t in ts]
    order = list(range(len(ts)))
    if indexing == "xy" and len(ts) >= 2:
        order[0], order[1] = 1, 0
    shape = [ts[k].shape[0] for k in order]
    out = []
    for i, t in enumerate(ts):
        pos = order.index(i)
        view = [1] * len(ts)
        view[pos] = t.shape[0]
        out.append(t.reshape(view).expand(shape))
    return tuple(out)
