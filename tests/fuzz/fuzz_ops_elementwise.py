"""Families `unary` and `binary`: elementwise math, comparisons, broadcasting, Python scalars and
in-place variants (including a tensor updated from a view of itself)."""
from __future__ import annotations

import math

import numpy as np
import fuzz_st as st

from fuzz_case import Op, Refuse, Skip, one
from fuzz_core import (ALL, BOOL, COMPLEX, FLOATS, INTS, REAL, category, cast, complex_to_real,
                       draw_shape, draw_tensor, result_type)

try:
    from scipy.special import erf as _erf
except ImportError:  # scipy is in requirements-dev.txt; keep the suite importable without it
    _erf = np.vectorize(math.erf)


def kind(inp):
    return "zero" if inp.array().ndim == 0 else "dim"


def f64(a, dt):
    return a.astype(np.complex128 if category(dt) == 3 else np.float64)


# ---------------------------------------------------------------------------------------------
# unary

def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# name: (numpy function, result rule, dtypes, dtypes ember may refuse)
#   result rule: "float" (ints and bool become float32), "same", "bool", "abs" (complex -> real)
_UNARY = {
    "exp": (np.exp, "float", ALL), "exp2": (np.exp2, "float", REAL), "expm1": (np.expm1, "float", REAL),
    "log": (np.log, "float", ALL), "log2": (np.log2, "float", REAL), "log10": (np.log10, "float", REAL),
    "log1p": (np.log1p, "float", REAL), "sqrt": (np.sqrt, "float", ALL),
    "rsqrt": (lambda x: 1 / np.sqrt(x), "float", REAL),
    "sin": (np.sin, "float", ALL), "cos": (np.cos, "float", ALL), "tan": (np.tan, "float", REAL),
    "asin": (np.arcsin, "float", REAL), "acos": (np.arccos, "float", REAL), "atan": (np.arctan, "float", REAL),
    "sinh": (np.sinh, "float", REAL), "cosh": (np.cosh, "float", REAL), "tanh": (np.tanh, "float", ALL),
    "asinh": (np.arcsinh, "float", REAL), "acosh": (np.arccosh, "float", REAL),
    "atanh": (np.arctanh, "float", REAL), "sigmoid": (_sigmoid, "float", REAL),
    "erf": (_erf, "float", REAL), "reciprocal": (lambda x: 1 / x, "float", ALL),
    "abs": (np.abs, "abs", INTS + FLOATS + COMPLEX), "neg": (np.negative, "same", INTS + FLOATS + COMPLEX),
    "floor": (np.floor, "same", INTS + FLOATS), "ceil": (np.ceil, "same", INTS + FLOATS),
    "trunc": (np.trunc, "same", INTS + FLOATS), "round": (np.round, "same", INTS + FLOATS),
    "frac": (lambda x: x - np.trunc(x), "same", FLOATS),
    "sign": (np.sign, "same", BOOL + INTS + FLOATS), "square": (np.square, "same", INTS + FLOATS + COMPLEX),
    "isnan": (np.isnan, "bool", ALL), "isinf": (np.isinf, "bool", ALL), "isfinite": (np.isfinite, "bool", ALL),
    "signbit": (np.signbit, "bool", REAL), "logical_not": (np.logical_not, "bool", ALL),
    "bitwise_not": (None, "same", BOOL + INTS),
}
# refused by PyTorch for these dtypes
_UNARY_REFUSED = {"neg": BOOL, "bitwise_not": FLOATS + COMPLEX, "frac": BOOL + INTS,
                  "signbit": COMPLEX, "floor": COMPLEX, "ceil": COMPLEX, "trunc": COMPLEX,
                  "round": COMPLEX, "sign": COMPLEX}


def _unary_gen(name):
    fn, rule, dtypes = _UNARY[name]
    refused = _UNARY_REFUSED.get(name, ())

    @st.composite
    def gen(draw):
        # mostly supported dtypes, sometimes any dtype (ember must then refuse like PyTorch)
        dts = ALL if draw(st.integers(0, 9)) == 0 else dtypes
        x = draw_tensor(draw, dts)
        form = draw(st.sampled_from(["method", "function", "inplace"]))
        return [x], {"form": form}
    return gen


def _unary_expr(name):
    return {"method": f"x0.{name}()", "function": f"ember.{name}(x0)", "inplace": f"x0.{name}_()"}


def _unary_ref(name):
    fn, rule, dtypes = _UNARY[name]
    refused = _UNARY_REFUSED.get(name, ())

    def ref(arrays, inputs, params):
        a, dt = arrays[0], inputs[0].dtype
        if dt in refused:
            raise Refuse(f"{name} of {dt}")
        may = dt not in dtypes
        if rule == "float":
            out_dt = dt if category(dt) >= 2 else "float32"
        elif rule == "abs":
            out_dt = complex_to_real(dt) if category(dt) == 3 else dt
        elif rule == "bool":
            out_dt = "bool"
        else:
            out_dt = dt
        if params["form"] == "inplace":
            if rule == "bool" and name != "logical_not":
                raise Skip()      # no in-place form in PyTorch
            if inputs[0].zero_stride:
                raise Refuse("in-place write to a tensor with internally overlapping memory")
            if inputs[0].overlapping:
                raise Skip()
            if not _can_cast(out_dt, dt):
                raise Refuse(f"in-place {name} on {dt}: result type {out_dt} can't be cast")
        if may:
            if category(dt) == 3:
                raise Skip()      # complex results of functions the table doesn't cover
            try:
                want = _unary_value(name, fn, rule, a, dt)
            except Exception:  # noqa: BLE001 - no NumPy meaning for this dtype
                raise Skip()
            return one(cast(want, out_dt), out_dt, rtol_scale=4.0, may_refuse=True)
        want = _unary_value(name, fn, rule, a, dt)
        if params["form"] == "inplace":
            out_dt = dt            # written back into the input's dtype (logical_not_)
        # complex functions lose more near their poles (tanh(1.577j) in complex64: 3e-4)
        return one(cast(want, out_dt), out_dt, rtol_scale=4.0 if category(dt) < 3 else 64.0)
    return ref


def _unary_value(name, fn, rule, a, dt):
    if name == "bitwise_not":
        return np.logical_not(a) if dt == "bool" else np.invert(a)
    if rule == "same" and category(dt) <= 1 and name in ("floor", "ceil", "trunc", "round"):
        return a
    if name == "sign" and dt == "bool":
        return a
    if rule == "bool" or (rule == "same" and category(dt) == 1):
        return fn(a)
    return fn(f64(a, dt))


def unary_ops():
    return [Op(name, "unary", (lambda exprs: lambda inputs, params: exprs[params["form"]])(_unary_expr(name)),
               _unary_gen(name), _unary_ref(name)) for name in _UNARY]


# ---------------------------------------------------------------------------------------------
# binary

def _floor_div(a, b):
    return np.floor_divide(a, b)


def _trunc_div(a, b):
    if a.dtype.kind in "iu":
        return _int_trunc_div(a, b)
    return np.trunc(a / b)


@np.vectorize
def _int_trunc_div(x, y):
    q = abs(int(x)) // abs(int(y))
    q = -q if (x < 0) != (y < 0) else q
    return (q + 2**63) % 2**64 - 2**63


_BINARY = {
    # name: (numpy function on promoted operands, result rule, dtypes)
    "add": (np.add, "same", ALL), "sub": (np.subtract, "same", ALL), "mul": (np.multiply, "same", ALL),
    "div": (np.true_divide, "float", ALL), "floor_divide": (_floor_div, "same", INTS + FLOATS),
    "remainder": (np.remainder, "same", INTS + FLOATS), "fmod": (np.fmod, "same", INTS + FLOATS),
    "pow": (np.power, "same", INTS + FLOATS + COMPLEX), "maximum": (np.maximum, "same", REAL),
    "minimum": (np.minimum, "same", REAL), "atan2": (np.arctan2, "float", REAL),
    "hypot": (np.hypot, "float", FLOATS), "copysign": (np.copysign, "float", REAL),
    "eq": (np.equal, "bool", ALL), "ne": (np.not_equal, "bool", ALL), "lt": (np.less, "bool", REAL),
    "le": (np.less_equal, "bool", REAL), "gt": (np.greater, "bool", REAL), "ge": (np.greater_equal, "bool", REAL),
    "logical_and": (np.logical_and, "bool", ALL), "logical_or": (np.logical_or, "bool", ALL),
    "logical_xor": (np.logical_xor, "bool", ALL),
    "bitwise_and": (np.bitwise_and, "same", BOOL + INTS), "bitwise_or": (np.bitwise_or, "same", BOOL + INTS),
    "bitwise_xor": (np.bitwise_xor, "same", BOOL + INTS),
    "div_floor": (_floor_div, "same", INTS + FLOATS), "div_trunc": (_trunc_div, "same", INTS + FLOATS),
}
_OPERATOR = {"add": "+", "sub": "-", "mul": "*", "div": "/", "floor_divide": "//", "remainder": "%",
             "pow": "**", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
             "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^"}
_INPLACE_OK = {"add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "atan2",
               "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "eq", "lt", "hypot",
               "div_floor", "div_trunc", "copysign"}


@st.composite
def broadcast_shapes(draw):
    """Two shapes that broadcast (mostly) or don't (sometimes)."""
    out = draw_shape(draw, max_dims=3)
    def side():
        nd = draw(st.integers(0, len(out)))
        s = list(out[len(out) - nd:])
        for i in range(len(s)):
            if draw(st.integers(0, 3)) == 0:
                s[i] = 1
        return tuple(s)
    a, b = side(), side()
    if draw(st.integers(0, 15)) == 0 and b:
        b = b[:-1] + (b[-1] + 1,)
    return a, b


def _scalar(draw, dt):
    c = category(dt)
    if c == 0:
        return draw(st.booleans())
    if c == 1:
        return draw(st.integers(-5, 5))
    if c == 2:
        return draw(st.sampled_from([0.5, -1.5, 2.0, 0.0, 3.25, math.inf, math.nan]))
    return draw(st.sampled_from([complex(1, 2), complex(0, -1), complex(0.5, 0)]))


def _binary_gen(name):
    _, rule, dtypes = _BINARY[name]

    @st.composite
    def gen(draw):
        dts = ALL if draw(st.integers(0, 9)) == 0 else dtypes
        form = draw(st.sampled_from(["function", "method", "inplace", "scalar_right", "scalar_left",
                                     "self_alias"] + (["operator"] if name in _OPERATOR else [])))
        sa, sb = draw(broadcast_shapes())
        extremes = category(draw(st.sampled_from(dts))) == 1 and draw(st.booleans())
        kw = {"extremes": extremes}
        if name == "pow":
            kw = {"lo": -3, "hi": 3}
        x = draw_tensor(draw, dts, shape=sa, **kw)
        params = {"form": form}
        if form in ("scalar_right", "scalar_left"):
            params["s"] = _scalar(draw, draw(st.sampled_from(dts)))
            if name == "pow" and category(x.dtype) == 1 and isinstance(params["s"], int):
                params["s"] = abs(params["s"])
            return [x], params
        if form == "self_alias":
            if len(sa) == 0:
                return [x], {"form": "same_input"}
            params["d"] = draw(st.integers(0, len(sa) - 1))
            return [x], params
        ydt = draw(st.sampled_from(dts if draw(st.booleans()) else (x.dtype,)))
        ykw = dict(kw)
        if name == "pow" and category(ydt) == 1:
            ykw = {"lo": 0, "hi": 4}
        y = draw_tensor(draw, (ydt,), shape=sb, **ykw)
        return [x, y], params
    return gen


def _binary_expr(name, params, ninputs):
    form = params["form"]
    fn = {"div_floor": "div", "div_trunc": "div"}.get(name, name)
    extra = {"div_floor": ", rounding_mode='floor'", "div_trunc": ", rounding_mode='trunc'"}.get(name, "")
    y = "{s}" if form.startswith("scalar") else "x1"
    if form == "scalar_left":
        op = _OPERATOR.get(name)
        return f"(({{s}}) {op} x0)" if op else f"ember.{fn}(ember.tensor({{s}}), x0{extra})"
    if form == "scalar_right":
        op = _OPERATOR.get(name)
        return f"(x0 {op} {{s}})" if op else f"ember.{fn}(x0, {{s}}{extra})"
    if form == "operator":
        return f"(x0 {_OPERATOR[name]} x1)"
    if form == "method":
        return f"x0.{fn}(x1{extra})"
    if form == "inplace":
        return f"x0.{fn}_(x1{extra})"
    if form == "self_alias":
        return f"x0.{fn}_(x0.flip({{d}}){extra})"
    if form == "same_input":
        return f"ember.{fn}(x0, x0{extra})"
    return f"ember.{fn}(x0, {y}{extra})"


def _binary_ref(name):
    fn, rule, dtypes = _BINARY[name]

    def ref(arrays, inputs, params):
        form = params["form"]
        x = inputs[0]
        a = arrays[0]
        xkind = kind(x)
        if form in ("scalar_right", "scalar_left"):
            s = params["s"]
            sdt = {bool: "bool", int: "int64", float: "float32", complex: "complex64"}[type(s)]
            b = np.array(s)
            operands = [(x.dtype, xkind), (sdt, "scalar")]
            if form == "scalar_left":
                if name not in _OPERATOR:
                    operands = [(sdt, "zero"), (x.dtype, xkind)]
                else:
                    operands = operands[::-1]
                a, b = b, a
            bdt = None
        elif form == "same_input":
            b = a
            operands = [(x.dtype, xkind), (x.dtype, xkind)]
        elif form == "self_alias":
            b = np.flip(a, params["d"]).copy()
            operands = [(x.dtype, xkind), (x.dtype, xkind)]
        elif len(arrays) == 1:
            b = a
            operands = [(x.dtype, xkind), (x.dtype, xkind)]
        else:
            b = arrays[1]
            operands = [(x.dtype, xkind), (inputs[1].dtype, kind(inputs[1]))]
        dts = [o[0] for o in operands]
        rt = result_type(*operands)
        if rt == "complex32":
            raise Skip()          # ComplexHalf: no NumPy counterpart
        if any(d not in dtypes for d in dts) or rt not in dtypes:
            if name in ("lt", "le", "gt", "ge", "maximum", "minimum", "atan2", "copysign") and category(rt) == 3:
                raise Refuse(f"{name} on complex")
            if name.startswith("bitwise") and category(rt) >= 2:
                raise Refuse(f"{name} on floating point")
            if name in ("floor_divide", "remainder", "fmod", "div_floor", "div_trunc") and category(rt) == 3:
                raise Refuse(f"{name} on complex")
            may = True
        else:
            may = False
        if rt == "bool" and name in ("pow", "div_trunc", "div_floor", "floor_divide", "remainder", "fmod"):
            raise Skip()
        if name == "hypot" and category(rt) != 2:
            raise Refuse("hypot of integers or complex numbers")
        if name == "sub" and rt == "bool":
            raise Refuse("subtraction of two bool tensors")
        try:
            out_shape = np.broadcast_shapes(np.shape(a), np.shape(b))
        except ValueError:
            raise Refuse("shapes don't broadcast")
        # ops that compute in floating point (true division, atan2...) cast integer operands
        # straight to the float type, not through the integer result type
        compute_dt = "float32" if rule == "float" and category(rt) <= 1 else rt
        ca, cb = cast(a, compute_dt), cast(b, compute_dt)
        if category(rt) <= 1 and name in ("floor_divide", "remainder", "fmod", "div_floor", "div_trunc"):
            if np.any(cb == 0) and ca.size and np.broadcast_to(cb, out_shape).size:
                raise Refuse("ZeroDivisionError")
        if name == "pow" and category(rt) == 1 and np.any(cb < 0):
            raise Skip()
        if name == "pow" and category(rt) == 3 and not np.all(np.isfinite(ca) & (ca != 0)):
            raise Skip()          # complex 0 ** z and infinities: conventions differ
        if rule == "float":
            out_dt = rt if category(rt) >= 2 else "float32"
        elif rule == "bool":
            out_dt = "bool"
        else:
            out_dt = rt
        if category(rt) <= 1 and rule != "float":
            if name == "div_trunc":
                want = np.zeros(out_shape, np.int64)
                if want.size:
                    want = _int_trunc_div(ca.astype(np.int64), cb.astype(np.int64)).astype(np.int64)
            elif rule == "bool" or rt == "bool":
                want = fn(ca, cb)
            else:
                want = fn(ca.astype(np.int64), cb.astype(np.int64))
        elif category(rt) == 3:
            want = fn(ca.astype(np.complex128), cb.astype(np.complex128))
        else:
            want = fn(ca.astype(np.float64), cb.astype(np.float64))
        want = cast(want, out_dt)
        if form in ("inplace", "self_alias"):
            if name not in _INPLACE_OK:
                raise Skip()
            if x.zero_stride:
                raise Refuse("in-place write to a tensor with internally overlapping memory")
            if x.overlapping:
                raise Skip()
            if out_shape != np.shape(a):
                raise Refuse("output shape doesn't match the broadcast shape")
            if not _can_cast(out_dt, x.dtype):
                raise Refuse(f"result type {out_dt} can't be cast to {x.dtype}")
            want, out_dt = cast(want, x.dtype), x.dtype
        scale = 8.0 if name in ("pow", "atan2", "hypot") else 2.0
        return one(want, out_dt, rtol_scale=scale, may_refuse=may)
    return ref


def _can_cast(src, dst):
    # torch.can_cast: never to a lower category (complex -> float -> int -> bool)
    return category(src) <= category(dst)


def binary_ops():
    return clamp_ops() + [Op(name, "binary", (lambda n: lambda inputs, params: _binary_expr(n, params, len(inputs)))(name),
               _binary_gen(name), _binary_ref(name)) for name in _BINARY]


# ---------------------------------------------------------------------------------------------
# clamp: Python-number bounds (None, NaN, infinities, min > max), out of place and in place

_BOUNDS_LO = [None, -2, 0, 0.5, -1.5, math.nan, -math.inf, 4]
_BOUNDS_HI = [None, 3, 1.5, math.nan, math.inf, -3, 0]


@st.composite
def _clamp_gen(draw):
    x = draw_tensor(draw, INTS + FLOATS)
    lo, hi = draw(st.sampled_from(_BOUNDS_LO)), draw(st.sampled_from(_BOUNDS_HI))
    return [x], {"lo": lo, "hi": hi, "form": draw(st.sampled_from(["method", "inplace", "function"]))}


def _clamp_expr(inputs, params):
    fn = {"method": "x0.clamp(", "inplace": "x0.clamp_(", "function": "ember.clamp(x0, "}[params["form"]]
    return fn + "min={lo}, max={hi})"


def _clamp_ref(arrays, inputs, params):
    a, x = arrays[0], inputs[0]
    lo, hi = params["lo"], params["hi"]
    if lo is None and hi is None:
        raise Refuse("at least one of min or max must not be None")
    operands = [(x.dtype, kind(x))] + [(_py_dtype(v), "scalar") for v in (lo, hi) if v is not None]
    rt = result_type(*operands)
    if params["form"] == "inplace":
        if x.zero_stride:
            raise Refuse("in-place write to a tensor with internally overlapping memory")
        if x.overlapping:
            raise Skip()
        if not _can_cast(rt, x.dtype):
            raise Refuse(f"result type {rt} can't be cast to {x.dtype}")
    y = cast(a, rt).astype(np.float64)
    if lo is not None:
        y = np.maximum(y, lo)          # NaN in either propagates, as in PyTorch
    if hi is not None:
        y = np.minimum(y, hi)          # and min > max gives max
    out_dt = x.dtype if params["form"] == "inplace" else rt
    if category(out_dt) <= 1 and not np.all(np.isfinite(y)):
        raise Skip()
    return one(cast(y, out_dt), out_dt)


def _py_dtype(v):
    return {bool: "bool", int: "int64", float: "float32"}[type(v)]


def clamp_ops():
    return [Op("clamp", "binary", _clamp_expr, _clamp_gen, _clamp_ref)]
