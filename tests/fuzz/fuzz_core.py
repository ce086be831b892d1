"""Shared pieces of the differential suite: dtypes and PyTorch's promotion rules, generated inputs
that exist twice (a NumPy array and the Python source of the same ember tensor), views applied
identically on both sides, and the comparison of a result against the reference.

A case never holds an ember tensor: it holds the source text that builds one, so the text that
ran is the reproducer printed on failure, and the same text runs under PyTorch (`ember` bound to
`torch`) where it is installed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import fuzz_st as st

# ---------------------------------------------------------------------------------------------
# dtypes

BOOL = ("bool",)
UINT = ("uint8",)
SINT = ("int8", "int16", "int32", "int64")
INTS = UINT + SINT
FLOATS = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
ALL = BOOL + INTS + FLOATS + COMPLEX
REAL = BOOL + INTS + FLOATS

_BITS = {"bool": 1, "uint8": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64,
         "float16": 16, "bfloat16": 16, "float32": 32, "float64": 64,
         "complex64": 64, "complex128": 128}


def category(dt: str) -> int:
    """0 bool, 1 integer, 2 floating, 3 complex: the order PyTorch promotes across."""
    if dt == "bool":
        return 0
    if dt in INTS:
        return 1
    if dt in FLOATS:
        return 2
    return 3


def is_float(dt):
    return dt in FLOATS


def to_complex(dt: str) -> str:
    return {"float64": "complex128", "float16": "complex32"}.get(dt, "complex64")


def complex_to_real(dt: str) -> str:
    return "float64" if dt == "complex128" else "float32"


def promote(a: str, b: str) -> str:
    """torch.promote_types."""
    if a == b:
        return a
    ca, cb = category(a), category(b)
    if ca == 0:
        return b
    if cb == 0:
        return a
    if ca == 1 and cb == 1:
        if "uint8" in (a, b):
            other = b if a == "uint8" else a
            return "int16" if other == "int8" else other
        return a if _BITS[a] > _BITS[b] else b
    if ca != cb:
        hi, lo = (a, b) if ca > cb else (b, a)
        if category(hi) == 3 and category(lo) == 2 and lo == "float64":
            return "complex128"
        return hi
    if ca == 2:
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        return a if _BITS[a] > _BITS[b] else b
    return a if _BITS[a] > _BITS[b] else b


def _combine(higher, lower):
    # c10's combine_categories: the higher category wins, except that a complex lower operand
    # turns a floating higher one into its complex counterpart.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if category(higher) == 3:
        return higher
    if category(lower) == 3:
        return to_complex(higher) if category(higher) == 2 else lower
    if category(higher) == 2:
        return higher
    if higher == "bool" or category(lower) == 2:
        return promote(higher, lower)
    return higher


def result_type(*operands) -> str:
    """torch.result_type over operands given as (dtype, kind), kind one of 'dim' (a tensor with
    dimensions), 'zero' (a 0-d tensor) or 'scalar' (a Python number)."""
    state = {"dim": None, "zero": None, "scalar": None}
    for dt, kind in operands:
        if kind == "scalar":
            dt = {0: "bool", 1: "int64", 2: "float32", 3: "complex64"}[category(dt)]
        cur = state[kind]
        state[kind] = dt if cur is None else promote(cur, dt)
    return _combine(state["dim"], _combine(state["zero"], state["scalar"]))


def np_dtype(dt: str):
    """The NumPy dtype that holds a dtype's values (bfloat16 is held in float32)."""
    return np.dtype("float32" if dt == "bfloat16" else dt)


def round_bf16(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), kept in float32."""
    a = np.asarray(a, dtype=np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = rounded.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(a), a, out)


def cast(a, dt: str) -> np.ndarray:
    """`a` converted to dtype `dt` the way a tensor holds it (bfloat16 rounded, kept as float32)."""
    with np.errstate(all="ignore"):
        if dt == "bfloat16":
            return round_bf16(np.asarray(a).astype(np.float32))
        return np.asarray(a).astype(np_dtype(dt))


# ---------------------------------------------------------------------------------------------
# generated inputs

def fmt_value(v, dt: str) -> str:
    if dt == "bool":
        return "True" if v else "False"
    if category(dt) == 1:
        return str(int(v))
    if category(dt) == 3:
        return f"complex({fmt_value(v.real, 'float64')}, {fmt_value(v.imag, 'float64')})"
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


@dataclass
class Input:
    """One input tensor: its contiguous values, then a chain of views applied on both sides."""
    dtype: str
    shape: tuple
    values: np.ndarray           # flat, NumPy dtype np_dtype(dtype)
    views: list = field(default_factory=list)   # [(kind, args), ...]
    # set by views: the tensor has elements sharing memory (expanded, overlapping as_strided)
    overlapping: bool = False
    zero_stride: bool = False

    def source(self) -> str:
        vals = ", ".join(fmt_value(v, self.dtype) for v in self.values)
        if self.shape == ():
            src = f"ember.tensor({fmt_value(self.values[0], self.dtype)}, dtype=ember.{self.dtype})"
        else:
            src = f"ember.tensor([{vals}], dtype=ember.{self.dtype})"
            if len(self.shape) != 1:
                src += f".reshape({_tuple_src(self.shape)})"
        for kind, args in self.views:
            src += _VIEW_SRC[kind](*args)
        return src

    def array(self) -> np.ndarray:
        a = self.values.reshape(self.shape)
        for kind, args in self.views:
            a = _VIEW_NP[kind](a, *args)
        return a


def _tuple_src(t):
    return "(" + ", ".join(map(str, t)) + ("," if len(t) == 1 else "") + ")"


def _step_index(d, start, step):
    return "[" + ":, " * d + f"{start}::{step}]"


def _np_as_strided(a, size, stride, offset):
    flat = np.ascontiguousarray(a).reshape(-1)[offset:]
    v = np.lib.stride_tricks.as_strided(flat, size, tuple(s * flat.itemsize for s in stride))
    return v.copy()


_VIEW_SRC = {
    "transpose": lambda d0, d1: f".transpose({d0}, {d1})",
    "permute": lambda perm: f".permute{_tuple_src(perm)}",
    "flip": lambda d: f".flip({d})",
    "step": lambda d, start, step: _step_index(d, start, step),
    "expand": lambda shape: f".expand{_tuple_src(shape)}",
    "as_strided": lambda size, stride, offset: f".as_strided({_tuple_src(size)}, {_tuple_src(stride)}, {offset})",
    "channels_last": lambda: ".contiguous(memory_format=ember.channels_last)",
}

_VIEW_NP = {
    "transpose": lambda a, d0, d1: np.swapaxes(a, d0, d1),
    "permute": lambda a, perm: np.transpose(a, perm),
    "flip": lambda a, d: np.flip(a, d),
    "step": lambda a, d, start, step: a[(slice(None),) * d + (slice(start, None, step),)],
    "expand": lambda a, shape: np.broadcast_to(a, shape),
    "as_strided": _np_as_strided,
    "channels_last": lambda a: a,
}

DIM_SIZES = st.sampled_from([0, 1, 1, 2, 2, 3, 3, 4, 5, 7])
MAX_ELEMENTS = 96


def draw_shape(draw, min_dims=0, max_dims=4, min_side=0):
    nd = draw(st.integers(min_dims, max_dims))
    shape = []
    for _ in range(nd):
        s = draw(DIM_SIZES)
        shape.append(max(s, min_side))
    while int(np.prod(shape)) > MAX_ELEMENTS:
        shape[shape.index(max(shape))] //= 2
    return tuple(shape)


_FLOAT_SPECIALS = np.array([math.nan, math.inf, -math.inf, -0.0])
_INT_LIMITS = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-2**15, 2**15 - 1),
               "int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}


def int_limits(dt):
    return _INT_LIMITS[dt]


def _float_values(rng, n, wide, p_special, lo, hi):
    # Quarter steps of small integers: exact in every float dtype, so the reference sees the
    # same inputs as the tensor; some arbitrary float32 values for the wider dtypes.
    v = rng.integers(int(lo * 4), int(hi * 4) + 1, n) / 4
    if wide:
        arb = rng.random(n) < 0.3
        v[arb] = rng.uniform(lo, hi, int(arb.sum())).astype(np.float32)
    if p_special:
        sp = rng.random(n) < p_special
        v[sp] = rng.choice(_FLOAT_SPECIALS, int(sp.sum()))
    return v


def draw_values(draw, dt, n, specials=True, lo=-8, hi=8, extremes=False, nonzero=False):
    """n values of dtype dt as a flat NumPy array. Hypothesis draws the seed and the mix; the
    elements come from a NumPy generator (drawing each element through hypothesis costs ten
    times more than running the case)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    c = category(dt)
    if c == 0:
        return rng.random(n) < draw(st.sampled_from([0.5, 0.1, 0.9]))
    if c == 1:
        mn, mx = _INT_LIMITS[dt]
        v = rng.integers(max(mn, int(lo)), min(mx, int(hi)) + 1, n, dtype=np.int64).astype(np.dtype(dt))
        if extremes:
            # the limits, and -1 (MIN // -1 overflows)
            ex = rng.random(n) < 0.25
            pool = [mn, mx] + ([-1] if mn < 0 else [])
            v[ex] = rng.choice(np.array(pool, dtype=np.dtype(dt)), int(ex.sum()))
        if nonzero:
            v[v == 0] = 1
        return v
    wide = dt in ("float32", "float64", "complex64", "complex128")
    p_special = draw(st.sampled_from([0.0, 0.05, 0.25])) if specials and c == 2 else 0.0
    v = _float_values(rng, n, wide, p_special, lo, hi)
    if nonzero:
        v[v == 0] = 1.0
    if c == 3:
        v = v + 1j * _float_values(rng, n, wide, 0.0, lo, hi)
    # rounded to the dtype, so that the tensor built from these values holds exactly them
    return cast(v, dt)


def draw_view(draw, shape, allow_overlap=True, allow=True):
    """A chain of views that yields a tensor of some shape from a contiguous base; returns
    (base_shape, views, final_shape, overlapping, zero_stride)."""
    if not allow:
        return shape, [], shape, False, False
    kind = draw(st.sampled_from(["none", "none", "none", "transpose", "permute", "flip", "step",
                                 "expand", "as_strided", "channels_last"]))
    nd = len(shape)
    if kind == "transpose" and nd >= 2:
        d0, d1 = draw(st.permutations(range(nd)))[:2]
        base = list(shape)
        base[d0], base[d1] = base[d1], base[d0]
        return tuple(base), [("transpose", (d0, d1))], shape, False, False
    if kind == "permute" and nd >= 2:
        perm = tuple(draw(st.permutations(range(nd))))
        inv = tuple(int(i) for i in np.argsort(perm))
        base = tuple(shape[p] for p in inv)    # base.permute(perm) has `shape`
        return base, [("permute", (perm,))], tuple(base[p] for p in perm), False, False
    if kind == "flip" and nd >= 1:
        d = draw(st.integers(-nd, nd - 1))
        return shape, [("flip", (d,))], shape, False, False
    if kind == "step" and nd >= 1:
        d = draw(st.integers(0, nd - 1))
        step = draw(st.integers(2, 3))
        start = draw(st.integers(0, 1))
        base = list(shape)
        base[d] = shape[d] * step + start
        if int(np.prod(base)) <= 4 * MAX_ELEMENTS:
            return tuple(base), [("step", (d, start, step))], shape, False, False
    if kind == "expand" and nd >= 1:
        base = tuple(1 if draw(st.booleans()) else s for s in shape)
        zero = any(b == 1 and s > 1 for b, s in zip(base, shape)) and 0 not in shape
        return base, [("expand", (shape,))], shape, zero, zero
    if kind == "as_strided" and allow_overlap and nd >= 1 and all(s > 0 for s in shape):
        stride = tuple(draw(st.integers(0, 3)) for _ in shape)
        offset = draw(st.integers(0, 2))
        need = offset + sum((s - 1) * k for s, k in zip(shape, stride)) + 1
        zero = any(k == 0 and s > 1 for s, k in zip(shape, stride)) and 0 not in shape
        return (need,), [("as_strided", (shape, stride, offset))], shape, True, zero
    if kind == "channels_last" and nd == 4:
        return shape, [("channels_last", ())], shape, False, False
    return shape, [], shape, False, False


def draw_tensor(draw, dtypes, shape=None, view=True, allow_overlap=True, **value_kw):
    """An Input of one of `dtypes`, of `shape` (or a generated one), maybe a view."""
    dt = draw(st.sampled_from(dtypes))
    if shape is None:
        shape = draw_shape(draw)
    base, views, final, overlapping, zero = draw_view(draw, shape, allow_overlap, view)
    n = int(np.prod(base)) if base else 1
    vals = draw_values(draw, dt, n, **value_kw)
    return Input(dt, base, vals, views, overlapping, zero)


# ---------------------------------------------------------------------------------------------
# comparison

class Mismatch(AssertionError):
    """Ember's result differs from the reference's."""


_RTOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-5, "float64": 1e-10,
         "complex64": 2e-5, "complex128": 1e-10}


def dtype_name(t) -> str:
    return str(t.dtype).split(".")[-1]


def tensor_to_numpy(t) -> np.ndarray:
    dt = dtype_name(t)
    if dt == "bfloat16":
        t = t.float()
    return np.array(t.detach().cpu().numpy() if hasattr(t, "detach") else t.numpy())


def assert_close(got: np.ndarray, want: np.ndarray, dt: str, rtol_scale=1.0, atol=0.0, what=""):
    """Equal within the tolerance of dtype dt (exact for integers and bool), NaNs in the same
    places, infinities equal."""
    want = np.asarray(want)
    if got.shape != want.shape:
        raise Mismatch(f"{what}shape {got.shape}, expected {want.shape}")
    if got.size == 0:
        return
    if category(dt) <= 1:
        if not np.array_equal(got.astype(np.int64) if dt != "bool" else got,
                              want.astype(np.int64) if dt != "bool" else want.astype(bool)):
            raise Mismatch(f"{what}values {_short(got)}, expected {_short(want)}")
        return
    g = got.astype(np.complex128)
    w = want.astype(np.complex128)
    rtol = _RTOL[dt] * rtol_scale
    for part in (np.real, np.imag):
        gp, wp = part(g), part(w)
        if not np.array_equal(np.isnan(gp), np.isnan(wp)):
            raise Mismatch(f"{what}NaN positions differ: {_short(got)}, expected {_short(want)}")
        inf = np.isinf(wp)
        if not np.array_equal(gp[inf], wp[inf]):
            raise Mismatch(f"{what}infinities differ: {_short(got)}, expected {_short(want)}")
    # finite elements: within rtol of the element's magnitude (for complex numbers, a part
    # much smaller than the other is only as accurate as the larger one)
    fin = np.isfinite(w)
    err = np.abs(g[fin] - w[fin])
    if not np.all(np.isfinite(g[fin])) or np.any(err > rtol * np.abs(w[fin]) + atol + rtol * 1e-3):
        raise Mismatch(f"{what}values {_short(got)}, expected {_short(want)}")


def _short(a):
    s = np.array2string(np.asarray(a), threshold=24, edgeitems=4, separator=", ").replace("\n", "")
    return s if len(s) < 400 else s[:400] + "..."
