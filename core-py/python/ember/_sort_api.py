"""Sorting, order statistics, unique, searchsorted and cumulative ops, named as in PyTorch.

Kernels are in Rust (`ember-core` ops/sort.rs and ops/scan.rs). Where Ember differs from PyTorch:
`sort` is always stable (so `stable=` changes nothing), `unique(sorted=False)` still returns
sorted values (PyTorch leaves the order unspecified).
"""
import numbers

from ember import _C
from ember import return_types
from ember._ops import _require_tensor
from ember._out import write_out as _write_out

def _dim(dim, name):
    if isinstance(dim, bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    return int(dim)


def _count(k, name, what="k"):
    if isinstance(k, _C.Tensor) and k.numel() == 1 and not k.is_floating_point():
        k = k.item()
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError(f"{name}(): argument '{what}' must be int, not {type(k).__name__}")
    return int(k)


# ---- sorting ----

def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """(values, indices) sorted along `dim`; NaN sorts as the largest value. Always stable."""
    _require_tensor(input, "sort")
    result = return_types.sort(*_C.sort(input, _dim(dim, "sort"), bool(descending)))
    return _write_out("sort", out, result)


def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort `input` along `dim` (stable: ties keep their order)."""
    _require_tensor(input, "argsort")
    return _C.sort(input, _dim(dim, "argsort"), bool(descending))[1]


def msort(input, *, out=None):
    """`input` sorted along its first dim (values only)."""
    _require_tensor(input, "msort")
    return _write_out("msort", out, _C.sort(input, 0, False)[0])


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The `k` largest (or smallest) elements along `dim` and their indices. Selects before it
    sorts, so a small `k` costs about one pass over the data."""
    _require_tensor(input, "topk")
    result = _C.topk(input, _count(k, "topk"), _dim(dim, "topk"), bool(largest), bool(sorted))
    return _write_out("topk", out, return_types.topk(*result))


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """The `k`-th smallest element (1-based) along `dim` and its index."""
    _require_tensor(input, "kthvalue")
    result = _C.kthvalue(input, _count(k, "kthvalue"), _dim(dim, "kthvalue"), bool(keepdim))
    return _write_out("kthvalue", out, return_types.kthvalue(*result))


def _median(name, input, dim, keepdim, out, ignore_nan):
    _require_tensor(input, name)
    if dim is None:
        if input.numel() == 0:
            from ember._creation import full

            return full((), float("nan"), dtype=input.dtype)
        return _write_out(name, out, _C.median(input.reshape(-1), 0, False, ignore_nan)[0])
    result = _C.median(input, _dim(dim, name), bool(keepdim), ignore_nan)
    return _write_out(name, out, getattr(return_types, name)(*result))


def median(input, dim=None, keepdim=False, *, out=None):
    """Lower median: of all elements (a 0-d tensor) or, with `dim`, (values, indices) along it.
    A NaN anywhere in the reduced elements makes the result NaN."""
    return _median("median", input, dim, keepdim, out, False)


def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """`median` ignoring NaNs (NaN only where every reduced element is NaN)."""
    return _median("nanmedian", input, dim, keepdim, out, True)


def mode(input, dim=-1, keepdim=False, *, out=None):
    """The most frequent value along `dim` (the smallest on ties) and the index of its last
    occurrence."""
    _require_tensor(input, "mode")
    result = _C.mode(input, _dim(dim, "mode"), bool(keepdim))
    return _write_out("mode", out, return_types.mode(*result))


def _quantile(name, input, q, dim, keepdim, interpolation, out, ignore_nan):
    _require_tensor(input, name)
    if isinstance(q, _C.Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor, but got a {q.ndim}D tensor")
        if input.dtype in (_C.float32, _C.float64) and q.dtype != input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor, but got {q.dtype} and {input.dtype}")
        q_values, q_is_scalar = [float(v) for v in q.reshape(-1).tolist()], q.ndim == 0
    elif isinstance(q, numbers.Real) and not isinstance(q, bool):
        q_values, q_is_scalar = [float(q)], True
    else:
        raise TypeError(f"{name}(): argument 'q' must be float or Tensor, not {type(q).__name__}")
    dim = None if dim is None else _dim(dim, name)
    result = _C.quantile(input, q_values, q_is_scalar, dim, bool(keepdim), interpolation, ignore_nan)
    return _write_out(name, out, result)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """The `q`-quantiles (a float or a 1-d tensor in [0, 1]) along `dim` or of all elements;
    a 1-d `q` adds a leading dim. Any NaN in a row makes that row's quantiles NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, out, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """`quantile` over the non-NaN values (NaN only for all-NaN rows)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, out, True)


# ---- unique ----

def _unique_result(values, inverse, counts, return_inverse, return_counts):
    extra = ([inverse] if return_inverse else []) + ([counts] if return_counts else [])
    return tuple([values] + extra) if extra else values


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (or slices along `dim`), sorted; optionally each element's position
    in them (`inverse`) and how often each occurs. NaNs are all distinct, as in PyTorch."""
    _require_tensor(input, "unique")
    dim = None if dim is None else _dim(dim, "unique")
    values, inverse, counts = _C.unique(input, dim, False, return_inverse)
    return _unique_result(values, inverse, counts, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapses runs of equal consecutive elements (or slices along `dim`) to one."""
    _require_tensor(input, "unique_consecutive")
    dim = None if dim is None else _dim(dim, "unique_consecutive")
    values, inverse, counts = _C.unique(input, dim, True, return_inverse)
    return _unique_result(values, inverse, counts, return_inverse, return_counts)


# ---- searching ----

def _as_values(values, like, name):
    if isinstance(values, _C.Tensor):
        return values
    if isinstance(values, numbers.Number):
        from ember._creation import tensor

        return tensor(values, dtype=like.dtype if not isinstance(values, float) or like.is_floating_point() else None)
    raise TypeError(f"{name}(): argument 'input' must be Tensor or Number, not {type(values).__name__}")


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, out=None, sorter=None):
    """Insertion points of `values` in `sorted_sequence` (1-d, or N-d whose leading dims match
    `values`'), left- or right-most; `sorter` gives the order of an unsorted sequence."""
    _require_tensor(sorted_sequence, "searchsorted")
    if side not in (None, "left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
    if side == "left" and right:
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True")
    right = bool(right) or side == "right"
    if sorter is not None:
        _require_tensor(sorter, "searchsorted")
    values = _as_values(values, sorted_sequence, "searchsorted")
    result = _C.searchsorted(sorted_sequence, values, right, sorter, bool(out_int32))
    return _write_out("searchsorted", out, result)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each element among 1-d `boundaries`: with `right=False`,
    boundaries[i-1] < x <= boundaries[i]; with `right=True`, boundaries[i-1] <= x < boundaries[i]."""
    _require_tensor(boundaries, "bucketize")
    if boundaries.ndim != 1:
        raise RuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    values = _as_values(input, boundaries, "bucketize")
    return _write_out("bucketize", out, _C.searchsorted(boundaries, values, bool(right), None, bool(out_int32)))


# ---- cumulative ----

def _scan(name, input, dim, dtype, out):
    _require_tensor(input, name)
    r = _C.scan(name, input, _dim(dim, name), dtype)
    # The kernel accumulates integers in int64; an explicit dtype is also the result's.
    return _write_out(name, out, r if dtype is None or r.dtype == dtype else r._to_dtype(dtype))


def cumsum(input, dim, *, dtype=None, out=None):
    """Running sum along `dim`; booleans and integers accumulate in int64 (unless `dtype`)."""
    return _scan("cumsum", input, dim, dtype, out)


def cumprod(input, dim, *, dtype=None, out=None):
    """Running product along `dim`; booleans and integers accumulate in int64 (unless `dtype`)."""
    return _scan("cumprod", input, dim, dtype, out)


def logcumsumexp(input, dim, *, out=None):
    """log(cumsum(exp(input))) along `dim`, computed without overflow (floats only)."""
    return _scan("logcumsumexp", input, dim, None, out)


def cummax(input, dim, *, out=None):
    """Running maximum along `dim` and where it was taken (ties move to the later index; a NaN
    stays once seen)."""
    _require_tensor(input, "cummax")
    return _write_out("cummax", out, return_types.cummax(*_C.cum_extreme(input, _dim(dim, "cummax"), True)))


def cummin(input, dim, *, out=None):
    """Running minimum along `dim` and where it was taken."""
    _require_tensor(input, "cummin")
    return _write_out("cummin", out, return_types.cummin(*_C.cum_extreme(input, _dim(dim, "cummin"), False)))


def _join(tensors, dim):
    """Concatenates `tensors` along `dim` (what `diff` needs for prepend/append)."""
    from ember._creation import empty

    shape = list(tensors[0].shape)
    shape[dim] = sum(t.shape[dim] for t in tensors)
    out = empty(shape, dtype=tensors[0].dtype)
    start = 0
    for t in tensors:
        out.narrow(dim, start, t.shape[dim]).copy_(t)
        start += t.shape[dim]
    return out


def _diff_operand(value, input, dim, what):
    """`prepend`/`append` as a tensor matching `input` on every dim but `dim` (a number becomes a
    length-1 slice)."""
    from ember._creation import tensor

    if isinstance(value, numbers.Number):
        value = tensor(value, dtype=input.dtype)
    _require_tensor(value, "diff")
    if value.ndim == 0:
        shape = list(input.shape)
        shape[dim] = 1
        return value.expand(shape)
    if value.ndim != input.ndim:
        raise RuntimeError(f"diff expects {what} to have the same number of dimensions as input ({input.ndim}), but got {value.ndim}")
    return value


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The `n`-th forward difference along `dim`, after joining `prepend` and `append` to the
    input; booleans differ by xor (`!=`), as in PyTorch."""
    _require_tensor(input, "diff")
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    n = _count(n, "diff", "n")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = _dim(dim, "diff")
    if not -input.ndim <= d < input.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, {input.ndim - 1}], but got {dim})")
    d %= input.ndim
    parts = [_diff_operand(prepend, input, d, "prepend")] if prepend is not None else []
    parts.append(input)
    if append is not None:
        parts.append(_diff_operand(append, input, d, "append"))
    x = _join(parts, d) if len(parts) > 1 else input
    for _ in range(min(n, x.shape[d])):  # beyond the length the result is empty
        length = x.shape[d] - 1
        hi, lo = x.narrow(d, 1, length), x.narrow(d, 0, length)
        x = hi != lo if x.dtype == _C.bool else hi - lo
    return x


__all__ = [
    "sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode", "quantile", "nanquantile",
    "unique", "unique_consecutive", "searchsorted", "bucketize", "cumsum", "cumprod", "logcumsumexp", "cummax",
    "cummin", "diff",
]
