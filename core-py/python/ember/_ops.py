"""The functional API: elementwise math, comparisons and reductions, named as in PyTorch."""
import builtins
import numbers

from ember import _C, return_types
from ember._out import resize_out, write_out
from ember._functorch._batched import BatchedTensor, batched

UNARY = [
    "abs", "neg", "sign", "square", "floor", "ceil", "trunc", "exp", "exp2", "expm1", "log", "log2",
    "log10", "log1p", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "sigmoid", "erf", "erfc", "frac", "relu", "logical_not", "bitwise_not",
    "signbit", "sgn", "angle", "conj_physical",
]
PREDICATES = ["isnan", "isinf", "isposinf", "isneginf", "isfinite"]
BINARY = [
    "add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "atan2", "hypot",
    "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
    "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
    "bitwise_right_shift",
]
ALIASES = {
    "absolute": "abs", "negative": "neg", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
    "arctan2": "atan2", "multiply": "mul",
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne",
    "special_expit": "sigmoid", "fix": "trunc",
}


def _require_tensor(x, fn):
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")


def _fit_out(out, *inputs):
    """An elementwise `out=` of another shape than the result is resized first, as PyTorch does
    (in-place ops, which never resize, do not come here). Inputs that do not broadcast, or an
    `out` that is one of them, are left to the kernel's error."""
    if not isinstance(out, _C.Tensor) or builtins.any(out is x for x in inputs):
        return
    try:
        shape = broadcast_shapes(*(x.shape for x in inputs if isinstance(x, _C.Tensor)))
    except RuntimeError:
        return
    if tuple(out.shape) != tuple(shape):
        resize_out(out, shape)


def _make_unary(name):
    def fn(input, *, out=None):
        try:
            if out is None:
                return _C.unary(name, input)
            _fit_out(out, input)
            _C.unary(name, input, out)
        except TypeError:
            _require_tensor(input, name)
            return batched("unary", name, input, out)
        return out

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise `{name}` (PyTorch's `torch.{name}`); integer inputs compute in float32 where the result is fractional."
    return fn


def _make_binary(name):
    def fn(input, other, *, out=None):
        try:
            if out is None:
                return _C.binary(name, input, other)
            _fit_out(out, input, other)
            _C.binary(name, input, other, out)
        except TypeError:
            return batched("binary", name, input, other, out)
        return out

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise `{name}` with broadcasting and PyTorch's type promotion."
    return fn


_g = globals()
for _n in UNARY + PREDICATES:
    _g[_n] = _make_unary(_n)
for _n in BINARY:
    _g[_n] = _make_binary(_n)
for _alias, _n in ALIASES.items():
    _g[_alias] = _g[_n]


def round(input, *, decimals=0, out=None):
    """Rounds half to even; `decimals` scales by 10**decimals first, as PyTorch does."""
    _require_tensor(input, "round")
    if decimals == 0:
        if out is None:
            return _C.unary("round", input)
        _fit_out(out, input)
        _C.unary("round", input, out)
        return out
    scale = 10.0 ** decimals
    r = _C.unary("round", input * scale) / scale
    return write_out("round", out, r)


def add(input, other, *, alpha=1, out=None):
    if alpha != 1:
        other = other * alpha
    try:
        if out is None:
            return _C.binary("add", input, other)
        _fit_out(out, input, other)
        _C.binary("add", input, other, out)
    except TypeError:
        return batched("binary", "add", input, other, out)
    return out


def sub(input, other, *, alpha=1, out=None):
    if alpha != 1:
        other = other * alpha
    try:
        if out is None:
            return _C.binary("sub", input, other)
        _fit_out(out, input, other)
        _C.binary("sub", input, other, out)
    except TypeError:
        return batched("binary", "sub", input, other, out)
    return out


def rsub(input, other, *, alpha=1):
    return sub(other, input, alpha=alpha)


_true_div = div


def div(input, other, *, rounding_mode=None, out=None):
    """True division; `rounding_mode="trunc"` or `"floor"` rounds the quotient."""
    if rounding_mode not in (None, "trunc", "floor"):
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{rounding_mode}'")
    if rounding_mode == "floor":
        r = floor_divide(input, other)
    elif rounding_mode == "trunc":
        r = _C.binary("div_trunc", input, other)
    else:
        r = _true_div(input, other)
    return write_out("div", out, r)


divide = true_divide = div
subtract = sub
result_type = _C.result_type


def _param_unary(name, x, a=None, b=None, c=None, out=None):
    try:
        if out is None:
            return _C.unary_with(name, x, a, b, c)
        _fit_out(out, x)
        _C.unary_with(name, x, a, b, c, out)
    except TypeError:
        _require_tensor(x, name)
        return batched("unary_with", name, x, a, b, c, out)
    return out


def _bound(v, name):
    if v is None or isinstance(v, numbers.Number):
        return v
    if type(v) is BatchedTensor:  # a per-sample bound
        return "tensor"
    if isinstance(v, _C.Tensor) and v.numel() == 1:
        return v.item()
    return "tensor"


def clamp(input, min=None, max=None, *, out=None):
    """Clamps into [min, max]; bounds may be numbers or tensors (broadcast)."""
    lo, hi = _bound(min, "min"), _bound(max, "max")
    if lo == "tensor" or hi == "tensor":
        r = input
        if min is not None:
            r = maximum(r, min)
        if max is not None:
            r = minimum(r, max)
        return write_out("clamp", out, r)
    return _param_unary("clamp", input, lo, hi, out=out)


clip = clamp


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    return _param_unary("nan_to_num", input, nan, posinf, neginf, out=out)


def logit(input, eps=None, *, out=None):
    return _param_unary("logit", input, eps, out=out)


def where(condition, input=None, other=None):
    """`where(cond, x, y)` picks elementwise; `where(cond)` is `nonzero(cond, as_tuple=True)`."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    try:
        return _C.where(condition, input, other)
    except TypeError:
        _require_tensor(condition, "where")
        return batched("where", condition, input, other)


def lerp(input, end, weight, *, out=None):
    try:
        r = _C.lerp(input, end, weight)
    except TypeError:
        r = batched("lerp", input, end, weight)
    return write_out("lerp", out, r)


def broadcast_shapes(*shapes):
    """The shape all of `shapes` broadcast to (NumPy rules)."""
    out = []
    for s in shapes:
        s = (s,) if isinstance(s, numbers.Integral) else tuple(s)
        if len(s) > len(out):
            out = [1] * (len(s) - len(out)) + out
        for i, d in enumerate(s):
            j = len(out) - len(s) + i
            if out[j] == 1:
                out[j] = d
            elif d != 1 and d != out[j]:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: {shapes}")
    from ember._size import Size

    return Size(out)


def broadcast_tensors(*tensors):
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


# ---- matmul ----

def matmul(input, other, *, out=None):
    try:
        r = _C.matmul(input, other)
    except TypeError:
        r = batched("matmul", input, other)
    return write_out("matmul", out, r)


def mm(input, mat2, *, out=None):
    try:
        r = _C.mm(input, mat2)
    except TypeError:
        r = batched("mm", input, mat2)
    return write_out("mm", out, r)


def bmm(input, mat2, *, out=None):
    try:
        r = _C.bmm(input, mat2)
    except TypeError:
        r = batched("bmm", input, mat2)
    return write_out("bmm", out, r)


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    try:
        r = _C.addmm(input, mat1, mat2, float(beta), float(alpha))
    except TypeError:
        r = batched("addmm", input, mat1, mat2, float(beta), float(alpha))
    return write_out("addmm", out, r)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    r = _C.addmm(input, batch1, batch2, float(beta), float(alpha))
    return write_out("baddbmm", out, r)


def dot(input, other):
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{other.shape[0]}] to have the same number of elements, but got {input.shape[0]} and {other.shape[0]} elements respectively")
    return matmul(input, other)


def mv(input, vec):
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {vec.ndim}")
    return matmul(input, vec)


def outer(input, vec2):
    return input.reshape(-1, 1) * vec2.reshape(1, -1)


# ---- reductions ----

def _reduce(name, input, dim, keepdim, dtype):
    _require_tensor(input, name)
    if isinstance(dim, (tuple, list)) and len(dim) == 0 and name not in ("amax", "amin"):
        dim = None
    try:
        return _C.reduce(name, input, dim, keepdim, dtype)
    except TypeError:
        return batched("reduce", name, input, dim, keepdim, dtype)


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over `dim` (an int, a tuple, or all); bool and integer inputs sum to int64."""
    return _reduce("sum", input, dim, keepdim, dtype)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    return sum(where(isnan(input), 0.0, input) if input.is_floating_point() else input, dim, keepdim, dtype=dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    return _reduce("mean", input, dim, keepdim, dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    keep = logical_not(isnan(input))
    return nansum(input, dim, keepdim, dtype=dtype) / sum(keep, dim, keepdim)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    return _reduce("prod", input, dim, keepdim, dtype)


def amax(input, dim=(), keepdim=False):
    try:
        return _C.reduce("amax", input, None if dim == () else dim, keepdim)
    except TypeError:
        return batched("reduce", "amax", input, None if dim == () else dim, keepdim)


def amin(input, dim=(), keepdim=False):
    try:
        return _C.reduce("amin", input, None if dim == () else dim, keepdim)
    except TypeError:
        return batched("reduce", "amin", input, None if dim == () else dim, keepdim)


def all(input, dim=None, keepdim=False):
    return _reduce("all", input, dim, keepdim, None)


def any(input, dim=None, keepdim=False):
    return _reduce("any", input, dim, keepdim, None)


def count_nonzero(input, dim=None):
    return _reduce("count_nonzero", input, dim, False, None)


def _extreme(name, input, dim_or_other, keepdim):
    _require_tensor(input, name)
    if dim_or_other is None:
        if input.numel() == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.")
        return _arg_reduce(input, None, False, name == "max")[0]
    if isinstance(dim_or_other, _C.Tensor):
        return (maximum if name == "max" else minimum)(input, dim_or_other)
    values, indices = _arg_reduce(input, dim_or_other, keepdim, name == "max")
    return getattr(return_types, name)(values, indices)


def _arg_reduce(input, dim, keepdim, is_max):
    try:
        return _C.arg_reduce(input, dim, keepdim, is_max)
    except TypeError:
        return batched("arg_reduce", input, dim, keepdim, is_max)


def max(input, dim=None, keepdim=False, *, out=None):
    """`max(t)`, `max(t, dim, keepdim)` -> (values, indices), or `max(t, other)` elementwise."""
    return _extreme("max", input, dim, keepdim)


def min(input, dim=None, keepdim=False, *, out=None):
    return _extreme("min", input, dim, keepdim)


def argmax(input, dim=None, keepdim=False):
    _require_tensor(input, "argmax")
    idx = _arg_reduce(input, dim, keepdim, True)[1]
    return idx.reshape([1] * input.ndim) if dim is None and keepdim else idx


def argmin(input, dim=None, keepdim=False):
    _require_tensor(input, "argmin")
    idx = _arg_reduce(input, dim, keepdim, False)[1]
    return idx.reshape([1] * input.ndim) if dim is None and keepdim else idx


def aminmax(input, *, dim=None, keepdim=False):
    return return_types.aminmax(amin(input, () if dim is None else dim, keepdim), amax(input, () if dim is None else dim, keepdim))


def _correction(correction, unbiased):
    if correction is not None and unbiased is not None:
        raise RuntimeError("var/std: pass either correction or unbiased, not both")
    if correction is None:
        return 1 if unbiased is None or unbiased else 0
    return correction


def _dims_count(input, dim):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return input.numel()
    dims = (dim,) if isinstance(dim, numbers.Integral) else dim
    n = 1
    for d in dims:
        n *= input.shape[d] if input.ndim else 1  # a 0-d tensor's dim 0 holds its one element
    return n


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance with Bessel's `correction` (default 1), over `dim` or all elements."""
    if isinstance(dim, builtins.bool):  # var(t, False): the legacy positional `unbiased`
        dim, unbiased = None, dim
    c = _correction(correction, unbiased)
    if input.is_complex():  # the parts' spreads add up before the division; the result is real
        total = _squared_deviations(input.real, dim, keepdim) + _squared_deviations(input.imag, dim, keepdim)
    elif input.is_floating_point():
        total = _squared_deviations(input, dim, keepdim)
    else:
        raise RuntimeError(f"std and var only support floating point and complex dtypes, got {input.dtype}")
    denom = builtins.max(0, _dims_count(input, dim) - c)
    return total / denom if denom > 0 else total / 0.0


def _squared_deviations(input, dim, keepdim):
    d = input - mean(input, dim, True)
    return sum(d * d, dim, keepdim)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return sqrt(var(input, dim, unbiased, keepdim, correction=correction))


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(x))) computed stably by shifting with the max (infinite maxima handled)."""
    if not input.is_floating_point():
        input = input._to_dtype(_C.float32)
    if input.numel() == 0:
        return log(sum(exp(input), dim, keepdim))
    m = amax(input, dim, True)
    m = where(isinf(m), 0.0, m)
    r = log(sum(exp(input - m), dim, True)) + m
    return r if keepdim else r.squeeze(dim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector p-norm over `dim` (or all elements); 'fro' is the 2-norm of the flattened dims."""
    if dtype is not None:
        input = input._to_dtype(dtype)
    if not input.is_floating_point():
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {input.dtype}")
    if p == "fro" or p is None:
        p = 2
    if p == "nuc":
        raise NotImplementedError("norm(p='nuc') needs linalg.svd (numerics issue)")
    a = abs(input)
    if p == float("inf"):
        return amax(a, () if dim is None else dim, keepdim)
    if p == float("-inf"):
        return amin(a, () if dim is None else dim, keepdim)
    if p == 0:
        return sum(ne(input, 0), dim, keepdim)._to_dtype(input.dtype)
    if p == 1:
        return sum(a, dim, keepdim)
    if p == 2:
        return sqrt(sum(a * a, dim, keepdim))
    return pow(sum(pow(a, p), dim, keepdim), 1.0 / p)


__all__ = [n for n in list(_g) if not n.startswith("_") and n not in ("builtins", "numbers", "return_types", "BatchedTensor", "batched")]
