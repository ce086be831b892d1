"""Family `reduce`: sum/prod/mean/amax/amin/max/min (values and indices)/argmax/argmin/all/any/
std/var/logsumexp/cumsum/cumprod over generated dims (negative, tuples, out of range), keepdim
and dtype=."""
from __future__ import annotations

import numpy as np
import fuzz_st as st

from fuzz_case import Expect, Op, Refuse, Skip, one
from fuzz_core import ALL, COMPLEX, FLOATS, INTS, REAL, _RTOL, category, cast, complex_to_real, draw_tensor


@st.composite
def dims(draw, nd, allow_none=True, allow_tuple=True):
    """None, a dim (maybe negative), a tuple of dims, or sometimes an invalid one."""
    n = max(nd, 1)
    choices = ["int", "int", "int"] + (["none"] if allow_none else []) + (["tuple"] if allow_tuple else []) + ["bad"]
    c = draw(st.sampled_from(choices))
    if c == "none":
        return None
    if c == "int":
        return draw(st.integers(-n, n - 1))
    if c == "tuple":
        k = draw(st.integers(1, n))
        picked = draw(st.permutations(range(n)))[:k]
        return tuple(d - n if draw(st.booleans()) else d for d in picked)
    if allow_tuple and draw(st.booleans()):
        d = draw(st.integers(-n, n - 1))
        return (d, d % n)                 # a repeated dim
    return draw(st.sampled_from([n, -n - 1, n + 3]))


def norm_dims(dim, nd):
    """Wrapped dims as a tuple of axes, or Refuse as PyTorch does; 0-d tensors accept 0 and -1."""
    n = max(nd, 1)
    ds = (dim,) if isinstance(dim, int) else dim
    out = []
    for d in ds:
        if not -n <= d < n:
            raise Refuse("dim out of range")
        out.append(d % n)
    if len(set(out)) != len(out):
        raise Refuse("dim appears multiple times")
    return tuple(out)


def reduce_np(a, dim, keepdim, fn, **kw):
    """fn(a, axis=..., keepdims=...) with PyTorch's dim rules (0-d inputs reduce to 0-d)."""
    if a.ndim == 0:
        if dim is not None:
            norm_dims(dim, 0)
        return np.asarray(fn(a.reshape(1), axis=0, **kw)).reshape(())
    axes = tuple(range(a.ndim)) if dim is None else norm_dims(dim, a.ndim)
    return np.asarray(fn(a, axis=axes, keepdims=bool(keepdim), **kw))


def reduced_size(a, dim):
    if a.ndim == 0:
        return 1
    axes = tuple(range(a.ndim)) if dim is None else norm_dims(dim, a.ndim)
    return int(np.prod([a.shape[d] for d in axes]))


def _args(params, names):
    out = []
    for n in names:
        v = params.get(n)
        if v is None:
            continue
        out.append(f"{n}=ember.{v}" if n == "dtype" else f"{n}={{{n}}}")
    return ", ".join(out)


def _accum(a, dt):
    if category(dt) <= 1:
        return a.astype(np.int64)
    return a.astype(np.complex128 if category(dt) == 3 else np.float64)


def _atol(a, dt, n):
    if a.size == 0 or category(dt) <= 1:
        return 0.0
    m = np.abs(a[np.isfinite(a)]) if category(dt) < 3 else np.abs(a)
    return 4 * _RTOL.get(dt, 1e-6) * (float(m.max()) if m.size else 0.0) * max(n, 1)


# ---- the ops -----------------------------------------------------------------------------------

def gen_for(dtypes, dim_kw=None, with_keepdim=True, with_dtype=None, extra=None):
    dim_kw = dim_kw or {}

    @st.composite
    def gen(draw):
        dts = ALL if draw(st.integers(0, 9)) == 0 else dtypes
        x = draw_tensor(draw, dts)
        nd = len(x.array().shape)
        params = {"dim": draw(dims(nd, **dim_kw))}
        if with_keepdim and params["dim"] is not None and draw(st.booleans()):
            params["keepdim"] = draw(st.booleans())
        if with_dtype and draw(st.integers(0, 3)) == 0:
            params["dtype"] = draw(st.sampled_from(with_dtype))
        if extra is not None:
            params.update(draw(extra))
        return [x], params
    return gen


def _sum_like(name, fn, identity_empty):
    def ref(arrays, inputs, params):
        a, dt = arrays[0], inputs[0].dtype
        out_dt = params.get("dtype") or ("int64" if category(dt) <= 1 else dt)
        if params.get("dtype") and category(dt) >= 2 and category(out_dt) <= 1 and not np.all(np.isfinite(a)):
            raise Skip()
        if category(dt) == 3 and category(out_dt) < 3:
            raise Skip()
        src = cast(a, out_dt)
        want = reduce_np(_accum(src, out_dt), params["dim"], params.get("keepdim"), fn)
        if category(out_dt) == 3 and not np.all(np.isfinite(cast(want, out_dt))):
            raise Skip()      # a complex overflow is inf or nan depending on the order of products
        n = reduced_size(a, params["dim"])
        return one(cast(want, out_dt), out_dt, rtol_scale=max(1, n), atol=_atol(src, out_dt, n))
    return ref


def _mean_ref(arrays, inputs, params):
    a, dt = arrays[0], inputs[0].dtype
    if category(dt) <= 1:
        raise Refuse("mean of an integer tensor")
    want = reduce_np(_accum(a, dt), params["dim"], params.get("keepdim"), np.mean)
    n = reduced_size(a, params["dim"])
    return one(cast(want, dt), dt, rtol_scale=max(1, n), atol=_atol(a, dt, 1))


def _ext_ref(fn):
    def ref(arrays, inputs, params):
        a, dt = arrays[0], inputs[0].dtype
        if category(dt) == 3:
            raise Refuse("amax/amin of complex")
        if reduced_size(a, params["dim"]) == 0:
            raise Refuse("reduction over zero elements")
        return one(reduce_np(a, params["dim"], params.get("keepdim"), fn), dt)
    return ref


def _values_indices_ref(vfn, ifn):
    """max(dim)/min(dim): values, and indices that pick those values (ties may pick any)."""
    def ref(arrays, inputs, params):
        a, dt = arrays[0], inputs[0].dtype
        if category(dt) == 3:
            raise Refuse("max/min of complex")
        dim, keep = params["dim"], params.get("keepdim", False)
        axes = norm_dims(dim, a.ndim)
        if a.ndim and a.shape[axes[0]] == 0:
            raise Refuse("reduction over a zero-size dim")
        values = reduce_np(a, dim, keep, vfn)
        if a.ndim == 0:
            return Expect([(values, dt), (np.zeros((), np.int64), "int64")])
        ax = axes[0]

        def picks(outs):
            v, idx = outs
            idx_full = idx if keep else np.expand_dims(idx, ax)
            picked = np.take_along_axis(a, idx_full.astype(np.int64), ax)
            want = values if keep else np.expand_dims(values, ax)
            same = (picked == want) | (np.isnan(picked.astype(np.float64)) & np.isnan(want.astype(np.float64))) \
                if category(dt) >= 2 else picked == want
            from fuzz_core import Mismatch, assert_close
            assert_close(v, values, dt, what="values ")
            if not np.all(same):
                raise Mismatch(f"indices {idx.tolist()} don't pick the {vfn.__name__} values")
        return Expect([(values, dt), (np.zeros(values.shape, np.int64), "int64")], custom=picks)
    return ref


def _full_ext_ref(fn):
    def ref(arrays, inputs, params):
        a, dt = arrays[0], inputs[0].dtype
        if category(dt) == 3:
            raise Refuse("max/min of complex")
        if a.size == 0:
            raise Refuse("max() of an empty tensor")
        return one(fn(a), dt)
    return ref


def _arg_ref(fn):
    def ref(arrays, inputs, params):
        a, dt = arrays[0], inputs[0].dtype
        if category(dt) == 3:
            raise Refuse("argmax of complex")
        dim, keep = params["dim"], params.get("keepdim", False)
        if dim is None:
            if a.size == 0:
                raise Refuse("argmax of an empty tensor")
            want = np.asarray(fn(a.reshape(-1)))
            if keep:
                want = want.reshape((1,) * a.ndim)
        else:
            axes = norm_dims(dim, a.ndim)
            if a.ndim == 0:
                want = np.zeros((), np.int64)
            else:
                if a.shape[axes[0]] == 0:
                    raise Refuse("argmax over a zero-size dim")
                want = np.asarray(fn(a, axis=axes[0], keepdims=bool(keep)))
        return one(want.astype(np.int64), "int64", may_refuse=dt == "bool")
    return ref


def _logical_ref(fn):
    def ref(arrays, inputs, params):
        a, dt = arrays[0], inputs[0].dtype
        out_dt = "uint8" if dt == "uint8" else "bool"
        want = reduce_np(a.astype(bool) if category(dt) < 3 else a != 0, params["dim"], params.get("keepdim"), fn)
        return one(want.astype(np.uint8 if out_dt == "uint8" else bool), out_dt)
    return ref


def _var_ref(sqrt):
    def ref(arrays, inputs, params):
        a, dt = arrays[0], inputs[0].dtype
        if category(dt) <= 1:
            raise Refuse("std/var of an integer tensor")
        out_dt = complex_to_real(dt) if category(dt) == 3 else dt
        corr = params.get("correction", 1)
        x = _accum(a, dt)

        def var(v, axis, keepdims=False):
            n = int(np.prod([v.shape[i] for i in np.atleast_1d(axis)])) if v.ndim else 1
            m = np.mean(v, axis=axis, keepdims=True)
            d = v - m  # the parts squared apart, as PyTorch (|nan + inf j|² would be inf, not nan)
            ss = np.sum(d.real ** 2 + d.imag ** 2, axis=axis, keepdims=keepdims)
            return ss / max(n - corr, 0)
        want = reduce_np(x, params["dim"], params.get("keepdim"), var)
        if sqrt:
            want = np.sqrt(want)
        n = reduced_size(a, params["dim"])
        return one(cast(want.real, out_dt), out_dt, rtol_scale=4 * max(n, 1), atol=_atol(a, dt, n) ** 2 + 1e-6)
    return ref


def _logsumexp_ref(arrays, inputs, params):
    a, dt = arrays[0], inputs[0].dtype
    if category(dt) == 3:
        raise Skip()
    out_dt = dt if category(dt) == 2 else "float32"

    def lse(v, axis, keepdims=False):
        m = np.max(v, axis=axis, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0.0)
        r = np.log(np.sum(np.exp(v - m), axis=axis, keepdims=True)) + m
        return r if keepdims else np.squeeze(r, axis=axis)
    want = reduce_np(a.astype(np.float64), params["dim"], params.get("keepdim"), lse)
    return one(cast(want, out_dt), out_dt, rtol_scale=4.0, atol=_atol(a.astype(np.float64), out_dt, 4))


def _cum_ref(fn):
    def ref(arrays, inputs, params):
        a, dt = arrays[0], inputs[0].dtype
        out_dt = params.get("dtype") or ("int64" if category(dt) <= 1 else dt)
        if category(dt) == 3 and category(out_dt) < 3:
            raise Skip()
        if category(dt) >= 2 and category(out_dt) <= 1:
            raise Skip()
        ax = norm_dims(params["dim"], a.ndim)[0]
        src = _accum(cast(a, out_dt), out_dt)
        want = src if a.ndim == 0 else fn(src, axis=ax)
        n = a.shape[ax] if a.ndim else 1
        return one(cast(want, out_dt), out_dt, rtol_scale=max(1, n), atol=_atol(cast(a, out_dt), out_dt, n))
    return ref


def reduce_ops():
    sum_dtypes = ["uint8", "int8", "int32", "int64", "float32", "float64", "bfloat16"]
    corr = st.fixed_dictionaries({"correction": st.sampled_from([0, 1, 2])})
    int_dim = {"allow_none": False, "allow_tuple": False}
    opt_int_dim = {"allow_tuple": False}
    no_none = {"allow_none": False}
    ops = [
        Op("sum", "reduce", lambda i, p: "x0.sum(" + _args(p, ["dim", "keepdim", "dtype"]) + ")",
           gen_for(ALL, with_dtype=sum_dtypes), _sum_like("sum", np.sum, 0)),
        Op("prod", "reduce", lambda i, p: "x0.prod(" + _args(p, ["dim", "keepdim", "dtype"]) + ")",
           gen_for(ALL, dim_kw=opt_int_dim, with_dtype=sum_dtypes), _sum_like("prod", np.prod, 1)),
        Op("mean", "reduce", lambda i, p: "x0.mean(" + _args(p, ["dim", "keepdim"]) + ")",
           gen_for(FLOATS + COMPLEX), _mean_ref),
        Op("amax", "reduce", lambda i, p: "x0.amax(" + _args(p, ["dim", "keepdim"]) + ")",
           gen_for(REAL, dim_kw=no_none), _ext_ref(np.max)),
        Op("amin", "reduce", lambda i, p: "x0.amin(" + _args(p, ["dim", "keepdim"]) + ")",
           gen_for(REAL, dim_kw=no_none), _ext_ref(np.min)),
        Op("max_dim", "reduce", lambda i, p: "x0.max(" + _args(p, ["dim", "keepdim"]) + ")",
           gen_for(REAL, dim_kw=int_dim), _values_indices_ref(np.max, np.argmax)),
        Op("min_dim", "reduce", lambda i, p: "x0.min(" + _args(p, ["dim", "keepdim"]) + ")",
           gen_for(REAL, dim_kw=int_dim), _values_indices_ref(np.min, np.argmin)),
        Op("max", "reduce", "x0.max()", gen_for(REAL, with_keepdim=False), _full_ext_ref(np.max)),
        Op("min", "reduce", "x0.min()", gen_for(REAL, with_keepdim=False), _full_ext_ref(np.min)),
        Op("argmax", "reduce", lambda i, p: "x0.argmax(" + _args(p, ["dim", "keepdim"]) + ")",
           gen_for(INTS + FLOATS, dim_kw=opt_int_dim), _arg_ref(np.argmax)),
        Op("argmin", "reduce", lambda i, p: "x0.argmin(" + _args(p, ["dim", "keepdim"]) + ")",
           gen_for(INTS + FLOATS, dim_kw=opt_int_dim), _arg_ref(np.argmin)),
        Op("all", "reduce", lambda i, p: "x0.all(" + _args(p, ["dim", "keepdim"]) + ")",
           gen_for(ALL, dim_kw=opt_int_dim), _logical_ref(np.all)),
        Op("any", "reduce", lambda i, p: "x0.any(" + _args(p, ["dim", "keepdim"]) + ")",
           gen_for(ALL, dim_kw=opt_int_dim), _logical_ref(np.any)),
        Op("std", "reduce", lambda i, p: "x0.std(" + _args(p, ["dim", "correction", "keepdim"]) + ")",
           gen_for(FLOATS + COMPLEX, extra=corr), _var_ref(True)),
        Op("var", "reduce", lambda i, p: "x0.var(" + _args(p, ["dim", "correction", "keepdim"]) + ")",
           gen_for(FLOATS + COMPLEX, extra=corr), _var_ref(False)),
        Op("logsumexp", "reduce", lambda i, p: "x0.logsumexp(" + _args(p, ["dim", "keepdim"]) + ")",
           gen_for(REAL, dim_kw=no_none), _logsumexp_ref),
        Op("cumsum", "reduce", lambda i, p: "x0.cumsum(" + _args(p, ["dim", "dtype"]) + ")",
           gen_for(ALL, dim_kw=int_dim, with_keepdim=False, with_dtype=sum_dtypes), _cum_ref(np.cumsum)),
        Op("cumprod", "reduce", lambda i, p: "x0.cumprod(" + _args(p, ["dim", "dtype"]) + ")",
           gen_for(ALL, dim_kw=int_dim, with_keepdim=False, with_dtype=sum_dtypes), _cum_ref(np.cumprod)),
    ]
    return ops
