"""Families `matmul` (matmul/@/mm/bmm/mv/dot/outer), `linalg` (det/slogdet/inv/solve/norm/
vector_norm on well-conditioned inputs), `fft`, `creation` (arange/linspace/full/zeros/ones/eye/
empty with odd arguments) and `convert` (.to(dtype) and the dtype shorthands)."""
from __future__ import annotations

import math

import numpy as np
import fuzz_st as st

from fuzz_case import Expect, Op, Refuse, Skip, one
from fuzz_core import (ALL, COMPLEX, FLOATS, INTS, _RTOL, Input, category, cast, complex_to_real,
                       draw_tensor, draw_values, int_limits, np_dtype, result_type)
from fuzz_ops_shape import wrap


def _acc(a, dt):
    if category(dt) <= 1:
        return a.astype(np.int64)
    return a.astype(np.complex128 if category(dt) == 3 else np.float64)


def _sum_abs_bound(a, b, k, dt):
    if category(dt) <= 1:
        return 0.0
    m = (np.abs(a).max() if a.size else 0) * (np.abs(b).max() if b.size else 0)
    return 4 * _RTOL[dt] * float(m) * max(k, 1)


# ---- matmul ------------------------------------------------------------------------------------

MM_DTYPES = INTS + FLOATS + COMPLEX


@st.composite
def _mm_gen(draw, kind):
    dt = draw(st.sampled_from(MM_DTYPES if draw(st.integers(0, 9)) else ALL))
    dt2 = dt if draw(st.integers(0, 7)) else draw(st.sampled_from(ALL))
    m, k, n = (draw(st.sampled_from([0, 1, 2, 3, 5])) for _ in range(3))
    k2 = k if draw(st.integers(0, 9)) else k + 1
    batch = tuple(draw(st.lists(st.sampled_from([1, 2, 3]), max_size=2)))
    if kind == "matmul":
        ra, rb = draw(st.sampled_from([(1, 1), (2, 2), (1, 2), (2, 1), (3, 3), (3, 2), (2, 3), (4, 3), (1, 3), (3, 1)]))
        bshape = lambda r: batch[:max(r - 2, 0)] if len(batch) >= r - 2 else (2,) * (r - 2)  # noqa: E731
        sa = (k,) if ra == 1 else bshape(ra) + (m, k)
        sb = (k2,) if rb == 1 else bshape(rb) + (k2, n)
        if rb >= 3 and draw(st.booleans()):
            sb = tuple(1 if draw(st.booleans()) else s for s in sb[:-2]) + sb[-2:]
    elif kind == "mm":
        sa, sb = (m, k), (k2, n)
        if draw(st.integers(0, 9)) == 0:
            sa = (k,)
    elif kind == "bmm":
        b = draw(st.sampled_from([0, 1, 2, 3]))
        sa, sb = (b, m, k), (b if draw(st.integers(0, 9)) else b + 1, k2, n)
    elif kind == "mv":
        sa, sb = (m, k), (k2,)
    else:  # dot, outer
        sa, sb = (k,), (k2 if kind == "dot" else n,)
    kw = {"lo": -3, "hi": 3, "specials": False}
    return [draw_tensor(draw, (dt,), shape=sa, **kw), draw_tensor(draw, (dt2,), shape=sb, **kw)], {}


def _mm_ref(kind):
    def ref(arrays, inputs, params):
        a, b = arrays
        da, db = inputs[0].dtype, inputs[1].dtype
        if kind == "outer":
            rt = result_type((da, "dim"), (db, "dim"))
            if a.ndim != 1 or b.ndim != 1:
                raise Refuse("outer of non-vectors")
            return one(cast(np.multiply.outer(_acc(cast(a, rt), rt), _acc(cast(b, rt), rt)), rt), rt,
                       may_refuse=rt == "bool")
        if da != db:
            raise Refuse("matmul operands of different dtypes")
        need = {"mm": (2, 2), "bmm": (3, 3), "mv": (2, 1), "dot": (1, 1)}.get(kind)
        if need and (a.ndim, b.ndim) != need:
            raise Refuse(f"{kind} needs {need}-d operands")
        if kind == "bmm" and a.shape[0] != b.shape[0]:
            raise Refuse("bmm batch sizes differ")
        try:
            want = np.matmul(_acc(a, da), _acc(b, da))
        except ValueError:
            raise Refuse("shapes don't multiply")
        k = a.shape[-1] if a.ndim else 1
        return one(cast(want, da), da, rtol_scale=max(k, 1) * 2, atol=_sum_abs_bound(a, b, k, da),
                   may_refuse=da == "bool")
    return ref


def matmul_ops():
    return [
        Op("matmul", "matmul", "ember.matmul(x0, x1)", lambda: _mm_gen("matmul"), _mm_ref("matmul")),
        Op("matmul_op", "matmul", "(x0 @ x1)", lambda: _mm_gen("matmul"), _mm_ref("matmul")),
        Op("mm", "matmul", "x0.mm(x1)", lambda: _mm_gen("mm"), _mm_ref("mm")),
        Op("bmm", "matmul", "x0.bmm(x1)", lambda: _mm_gen("bmm"), _mm_ref("bmm")),
        Op("mv", "matmul", "x0.mv(x1)", lambda: _mm_gen("mv"), _mm_ref("mv")),
        Op("dot", "matmul", "x0.dot(x1)", lambda: _mm_gen("dot"), _mm_ref("dot")),
        Op("outer", "matmul", "ember.outer(x0, x1)", lambda: _mm_gen("outer"), _mm_ref("outer")),
    ]


# ---- linalg ------------------------------------------------------------------------------------

LA_DTYPES = ("float32", "float64", "complex64", "complex128")


@st.composite
def _square(draw, dt, batch, n, kind="dominant"):
    """A well-conditioned matrix (diagonally dominant), or all zeros, as an Input."""
    shape = batch + (n, n)
    size = int(np.prod(shape))
    if kind == "zero":
        vals = np.zeros(size, dtype=np_dtype(dt))
    else:
        vals = draw_values(draw, dt, size, specials=False, lo=-2, hi=2).reshape(shape)
        if n and category(dt) >= 1:
            sign = 1 if draw(st.booleans()) else -1
            vals = cast(_acc(vals, dt) + sign * np.eye(n) * (4 * n + 1), dt)
        vals = vals.reshape(-1)
    return Input(dt, shape, vals)


@st.composite
def _la_gen(draw, kind):
    dt = draw(st.sampled_from(LA_DTYPES if draw(st.integers(0, 9)) else ALL))
    n = draw(st.integers(0, 4))
    batch = tuple(draw(st.lists(st.integers(0, 2), max_size=2)))
    mkind = "zero" if kind in ("det", "slogdet") and draw(st.integers(0, 7)) == 0 else "dominant"
    a = draw(_square(dt, batch, n, mkind))
    if draw(st.integers(0, 15)) == 0 and a.shape:
        a = Input(a.dtype, a.shape[:-1] + (a.shape[-1] + 1,),
                  np.resize(a.values, int(np.prod(a.shape[:-1] + (a.shape[-1] + 1,)))))
    if draw(st.integers(0, 4)) == 0 and len(a.shape) >= 2:
        a.views = [("transpose", (-1, -2))]
    if kind != "solve":
        return [a], {}
    k = draw(st.sampled_from([None, 0, 1, 3]))
    bshape = batch + ((n,) if k is None else (n, k))
    b = draw_tensor(draw, (dt,), shape=bshape, specials=False, lo=-4, hi=4, view=False)
    return [a, b], {}


def _la_ref(kind):
    def ref(arrays, inputs, params):
        a, dt = arrays[0], inputs[0].dtype
        if dt not in LA_DTYPES:
            if category(dt) <= 1:
                raise Refuse("linalg of an integer tensor")
            raise Skip()
        if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
            raise Refuse("linalg needs square matrices")
        x = a.astype(np.complex128 if category(dt) == 3 else np.float64)
        n = a.shape[-1]
        scale = 16 * max(n, 1) ** 2
        if kind == "det":
            want = np.linalg.det(x) if x.size else np.ones(a.shape[:-2])
            return one(cast(want, dt), dt, rtol_scale=scale, atol=_RTOL[dt])
        if kind == "slogdet":
            sign, logabs = np.linalg.slogdet(x) if x.size else (np.ones(a.shape[:-2]), np.zeros(a.shape[:-2]))
            return Expect([(cast(sign, dt), dt), (cast(logabs, complex_to_real(dt) if category(dt) == 3 else dt),
                                                   complex_to_real(dt) if category(dt) == 3 else dt)],
                          rtol_scale=scale, atol=_RTOL[dt])
        if kind == "inv":
            want = np.linalg.inv(x) if x.size else x
            return one(cast(want, dt), dt, rtol_scale=scale, atol=_RTOL[dt])
        b, bdt = arrays[1], inputs[1].dtype
        bx = b.astype(x.dtype)
        vector = b.ndim == a.ndim - 1
        if (b.shape[:-1] if vector else b.shape[:-2]) != a.shape[:-2] or (b.ndim and b.shape[-1 if vector else -2] != n):
            raise Refuse("solve: shapes don't match")
        if x.size == 0 or bx.size == 0:
            want = np.zeros(b.shape, x.dtype)
        else:
            want = np.linalg.solve(x, bx[..., None])[..., 0] if vector else np.linalg.solve(x, bx)
        return one(cast(want, dt), dt, rtol_scale=scale, atol=_RTOL[dt] * 10)
    return ref


@st.composite
def _norm_gen(draw, vector_norm):
    dt = draw(st.sampled_from(LA_DTYPES if draw(st.integers(0, 9)) else ALL))
    if vector_norm:
        x = draw_tensor(draw, (dt,), specials=False)
        return [x], {"ord": draw(st.sampled_from([2, 1, math.inf, -math.inf, 0, 3, 0.5]))}
    nd = draw(st.sampled_from([1, 2]))
    x = draw_tensor(draw, (dt,), shape=tuple(draw(st.integers(0 if nd == 1 else 1, 4)) for _ in range(nd)),
                    specials=False)
    ords = [None, 1, 2, math.inf, -math.inf, 0, 3] if nd == 1 else [None, "fro", "nuc", 1, -1, 2, math.inf, -math.inf]
    return [x], {"ord": draw(st.sampled_from(ords))}


def _norm_ref(vector_norm):
    def ref(arrays, inputs, params):
        a, dt = arrays[0], inputs[0].dtype
        if category(dt) <= 1:
            raise Refuse("norm of an integer tensor")
        if dt in ("float16", "bfloat16"):
            raise Skip()
        out_dt = complex_to_real(dt) if category(dt) == 3 else dt
        ord_ = params["ord"]
        x = a.astype(np.complex128 if category(dt) == 3 else np.float64)
        if vector_norm or a.ndim == 1:
            v = np.abs(x.reshape(-1))
            if v.size == 0:
                if ord_ in (-math.inf,) or (isinstance(ord_, (int, float)) and ord_ < 0):
                    raise Refuse("negative norm of an empty tensor")
                if ord_ == math.inf:
                    raise Refuse("inf norm of an empty tensor")
                return one(np.zeros(()), out_dt)
            want = np.linalg.norm(v, ord=ord_ if ord_ is not None else 2)
        else:
            if a.size == 0:
                raise Skip()
            want = np.linalg.norm(x, ord=ord_)
        return one(cast(want, out_dt), out_dt, rtol_scale=16, atol=_RTOL[out_dt])
    return ref


def linalg_ops():
    return [
        Op("det", "linalg", "ember.linalg.det(x0)", lambda: _la_gen("det"), _la_ref("det")),
        Op("slogdet", "linalg", "ember.linalg.slogdet(x0)", lambda: _la_gen("slogdet"), _la_ref("slogdet")),
        Op("inv", "linalg", "ember.linalg.inv(x0)", lambda: _la_gen("inv"), _la_ref("inv")),
        Op("solve", "linalg", "ember.linalg.solve(x0, x1)", lambda: _la_gen("solve"), _la_ref("solve")),
        Op("norm", "linalg", "ember.linalg.norm(x0, {ord})", lambda: _norm_gen(False), _norm_ref(False)),
        Op("vector_norm", "linalg", "ember.linalg.vector_norm(x0, {ord})", lambda: _norm_gen(True), _norm_ref(True)),
    ]


# ---- fft ---------------------------------------------------------------------------------------

FFT_DTYPES = ("float32", "float64", "complex64", "complex128", "int64")


@st.composite
def _fft_gen(draw, kind):
    x = draw_tensor(draw, FFT_DTYPES if draw(st.integers(0, 9)) else ALL, specials=False)
    nd = len(x.array().shape)
    d = draw(st.integers(-max(nd, 1), max(nd, 1) - 1)) if draw(st.integers(0, 9)) else nd
    n = draw(st.sampled_from([None, None, 1, 2, 3, 4, 7, 8, 0, -1]))
    norm = draw(st.sampled_from([None, "forward", "backward", "ortho"]))
    return [x], {"n": n, "dim": d, "norm": norm}


def _fft_ref(kind):
    fns = {"fft": np.fft.fft, "ifft": np.fft.ifft, "rfft": np.fft.rfft, "irfft": np.fft.irfft,
           "hfft": np.fft.hfft}

    def ref(arrays, inputs, params):
        a, dt = arrays[0], inputs[0].dtype
        if dt in ("float16", "bfloat16", "bool") or (dt in INTS and dt != "int64"):
            raise Skip()
        if kind == "rfft" and category(dt) == 3:
            raise Refuse("rfft of a complex tensor")
        if a.ndim == 0:
            raise Refuse("fft of a 0-d tensor")
        ax = wrap(params["dim"], a.ndim)
        n = params["n"]
        size = a.shape[ax]
        if n is not None and n < 1:
            raise Refuse("invalid number of data points")
        if n is None and (size == 0 or (kind in ("irfft", "hfft") and size == 1)):
            raise Refuse("invalid number of data points")
        x = a.astype(np.complex128 if category(dt) == 3 or kind in ("irfft", "hfft") else np.float64)
        want = fns[kind](x, n=n, axis=ax, norm=params["norm"])
        wide = dt in ("float64", "complex128")
        out_dt = ("float64" if wide else "float32") if kind in ("irfft", "hfft") else ("complex128" if wide else "complex64")
        m = want.shape[ax]
        atol = 8 * _RTOL[out_dt] * (float(np.abs(x).sum()) if x.size else 0) / max(1, math.sqrt(m))
        return one(cast(want, out_dt), out_dt, rtol_scale=8 * max(m, 1), atol=atol + _RTOL[out_dt])
    return ref


def fft_ops():
    return [Op(k, "fft", f"ember.fft.{k}(x0, n={{n}}, dim={{dim}}, norm={{norm}})",
               (lambda k: lambda: _fft_gen(k))(k), _fft_ref(k))
            for k in ("fft", "ifft", "rfft", "irfft", "hfft")]


# ---- creation ----------------------------------------------------------------------------------

_NUM = st.one_of(st.integers(-6, 6), st.integers(-24, 24).map(lambda k: k / 4))
_CREATE_DT = [None, None, None, "float64", "int32", "int64", "float16", "bfloat16", "complex64", "bool", "uint8"]


def _dt_arg(p):
    return f", dtype=ember.{p['dtype']}" if p.get("dtype") else ""


def _default_dt(*nums):
    return "float32" if any(isinstance(v, float) for v in nums) else "int64"


@st.composite
def _arange_gen(draw):
    start, end = draw(_NUM), draw(_NUM)
    step = draw(st.one_of(_NUM, st.sampled_from([1, -1, 0.5, 0])))
    return [], {"start": start, "end": end, "step": step,
                "dtype": draw(st.sampled_from([None, None, "float64", "int32", "int64", "float32"]))}


def _arange_ref(arrays, inputs, params):
    s, e, st_ = params["start"], params["end"], params["step"]
    dt = params["dtype"] or _default_dt(s, e, st_)
    if st_ == 0:
        raise Refuse("step must be nonzero")
    if (e - s) / st_ < 0:
        raise Refuse("upper bound and larger bound inconsistent with step sign")
    if category(dt) <= 1 and any(isinstance(v, float) for v in (s, e, st_)):
        raise Skip()      # PyTorch casts the bounds first; not modelled
    n = math.ceil((e - s) / st_)
    want = np.array([s + i * st_ for i in range(n)], dtype=np.float64)
    return one(cast(want, dt), dt, rtol_scale=4, atol=1e-6)


@st.composite
def _linspace_gen(draw):
    return [], {"start": draw(_NUM), "end": draw(_NUM), "steps": draw(st.sampled_from([0, 1, 2, 3, 5, 8, -1])),
                "dtype": draw(st.sampled_from([None, None, "float64", "float32", "complex64"]))}


def _linspace_ref(arrays, inputs, params):
    s, e, n = params["start"], params["end"], params["steps"]
    dt = params["dtype"] or "float32"
    if n < 0:
        raise Refuse("number of steps must be non-negative")
    want = np.linspace(s, e, n)
    return one(cast(want, dt), dt, rtol_scale=8, atol=1e-5)


_SIZES = st.lists(st.sampled_from([0, 1, 2, 3, -1]), max_size=3).map(tuple)


@st.composite
def _full_gen(draw):
    fill = draw(st.sampled_from([0, 3, -2, 1.5, math.nan, math.inf, True, complex(1, -1)]))
    return [], {"size": draw(_SIZES), "fill": fill, "dtype": draw(st.sampled_from(_CREATE_DT))}


def _full_ref(arrays, inputs, params):
    size, fill = params["size"], params["fill"]
    dt = params["dtype"] or {bool: "bool", int: "int64", float: "float32", complex: "complex64"}[type(fill)]
    if any(s < 0 for s in size):
        raise Refuse("negative size")
    if isinstance(fill, complex) and category(dt) < 3:
        raise Refuse("complex fill for a real dtype")
    if isinstance(fill, float) and category(dt) == 1:
        if not math.isfinite(fill):
            raise Refuse("value cannot be converted without overflow")
        raise Skip()
    return one(cast(np.full(size, fill), dt), dt)


@st.composite
def _size_gen(draw):
    return [], {"size": draw(_SIZES), "dtype": draw(st.sampled_from(_CREATE_DT))}


def _filled_ref(value):
    def ref(arrays, inputs, params):
        dt = params["dtype"] or "float32"
        if any(s < 0 for s in params["size"]):
            raise Refuse("negative size")
        want = np.full(params["size"], value) if value is not None else np.zeros(params["size"])
        if value is None:
            return Expect([(cast(want, dt), dt)], custom=lambda outs: None)
        return one(cast(want, dt), dt)
    return ref


@st.composite
def _eye_gen(draw):
    return [], {"n": draw(st.integers(-1, 5)), "m": draw(st.one_of(st.none(), st.integers(-1, 5))),
                "dtype": draw(st.sampled_from(_CREATE_DT))}


def _eye_ref(arrays, inputs, params):
    n, m = params["n"], params["m"]
    dt = params["dtype"] or "float32"
    if n < 0 or (m is not None and m < 0):
        raise Refuse("negative size")
    return one(cast(np.eye(n, m), dt), dt)


def creation_ops():
    return [
        Op("arange", "creation", lambda i, p: "ember.arange({start}, {end}, {step}" + _dt_arg(p) + ")",
           _arange_gen, _arange_ref),
        Op("linspace", "creation", lambda i, p: "ember.linspace({start}, {end}, {steps}" + _dt_arg(p) + ")",
           _linspace_gen, _linspace_ref),
        Op("full", "creation", lambda i, p: "ember.full({size}, {fill}" + _dt_arg(p) + ")", _full_gen, _full_ref),
        Op("zeros", "creation", lambda i, p: "ember.zeros({size}" + _dt_arg(p) + ")", _size_gen, _filled_ref(0)),
        Op("ones", "creation", lambda i, p: "ember.ones({size}" + _dt_arg(p) + ")", _size_gen, _filled_ref(1)),
        Op("empty", "creation", lambda i, p: "ember.empty({size}" + _dt_arg(p) + ")", _size_gen, _filled_ref(None)),
        Op("eye", "creation", lambda i, p: ("ember.eye({n}" if p["m"] is None else "ember.eye({n}, {m}") + _dt_arg(p) + ")",
           _eye_gen, _eye_ref),
    ]


# ---- convert -----------------------------------------------------------------------------------

_SHORT = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
          "int": "int32", "long": "int64", "short": "int16", "char": "int8", "byte": "uint8", "bool": "bool"}


@st.composite
def _convert_gen(draw):
    x = draw_tensor(draw, ALL, lo=-300, hi=300)
    if draw(st.booleans()):
        return [x], {"form": "to", "dtype": draw(st.sampled_from(ALL))}
    return [x], {"form": draw(st.sampled_from(sorted(_SHORT)))}


def _convert_ref(arrays, inputs, params):
    a, src = arrays[0], inputs[0].dtype
    dst = params.get("dtype") or _SHORT[params["form"]]
    if dst == "bool":
        return one(a != 0, "bool")
    x = a.real if category(src) == 3 and category(dst) < 3 else a
    if category(src) >= 2 and category(dst) == 1:
        lo, hi = int_limits(dst)
        xf = np.asarray(x, dtype=np.float64)
        if not np.all(np.isfinite(xf)) or np.any(np.trunc(xf) < lo) or np.any(np.trunc(xf) > hi):
            raise Skip()     # undefined in C and in PyTorch
        return one(np.trunc(xf).astype(np.int64).astype(np_dtype(dst)), dst)
    return one(cast(x, dst), dst)


def convert_ops():
    return [Op("to", "convert", lambda i, p: "x0.to(ember.{dtype})".replace("{dtype}", p["dtype"]) if p["form"] == "to"
               else f"x0.{p['form']}()", _convert_gen, _convert_ref)]
