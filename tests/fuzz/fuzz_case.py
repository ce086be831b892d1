"""A generated case, how it runs against ember (or PyTorch) and how it is judged.

An op is a template of Python source over inputs x0, x1, ... and generated parameters, plus a
NumPy reference that returns the expected tensors (values and PyTorch's dtype) or raises Refuse
where PyTorch refuses the call.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from fuzz_core import Mismatch, assert_close, dtype_name, tensor_to_numpy


class Refuse(Exception):
    """Raised by a reference: PyTorch refuses this call, so ember must raise an Exception."""


class Skip(Exception):
    """Raised by a reference: the case has no defined answer (e.g. a cast of an out-of-range
    float to an integer, undefined in C and PyTorch alike)."""


@dataclass
class Expect:
    """The reference's answer: one (values, dtype) per returned tensor, and how loosely to compare."""
    outs: list                     # [(np.ndarray, dtype str)]
    rtol_scale: float = 1.0
    atol: float = 0.0
    # ember may refuse this call (PyTorch's behaviour is not pinned down for it); if it returns,
    # the values must still be right
    may_refuse: bool = False
    # check only that every out's dtype and shape are right, and call this with the ember outs
    custom: Callable | None = None


def one(values, dt, **kw) -> Expect:
    return Expect([(np.asarray(values), dt)], **kw)


@dataclass
class Op:
    name: str
    family: str
    expr: object                      # Python expression (format string over params), or a
                                      # function (inputs, params) -> that string
    gen: Callable                     # hypothesis draw -> (inputs, params)
    ref: Callable                     # (arrays, inputs, params) -> Expect; raises Refuse/Skip
    stmts: str = ""                   # statements run before expr (format string)


@dataclass
class Case:
    op: Op
    inputs: list
    params: dict = field(default_factory=dict)

    def _fmt(self, text):
        return text.format(**{k: _src(v) for k, v in self.params.items()})

    def setup_src(self) -> str:
        return "; ".join(f"x{i} = {inp.source()}" for i, inp in enumerate(self.inputs))

    def body_src(self) -> str:
        stmts = self._fmt(self.op.stmts) if self.op.stmts else ""
        expr = self.op.expr(self.inputs, self.params) if callable(self.op.expr) else self.op.expr
        return (stmts + "; " if stmts else "") + "r = " + self._fmt(expr)

    def repro(self) -> str:
        setup = self.setup_src()
        return ("import ember; from math import inf, nan; " + (setup + "; " if setup else "")
                + self.body_src() + "; print(r)")


def _src(v):
    """Python source of a parameter value (strings pass through as source text)."""
    if isinstance(v, Src):
        return v.text
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    if isinstance(v, str) and v.startswith("ember."):
        return v
    return repr(v)


class Src:
    """A parameter given as source text (e.g. an index expression)."""
    def __init__(self, text, value=None):
        self.text = text
        self.value = value

    def __repr__(self):
        return self.text


def run_module(case: Case, module):
    """Runs the case's source with `ember` bound to `module`; returns the result or the exception."""
    env = {"ember": module, "nan": math.nan, "inf": math.inf}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(case.setup_src(), env)
        try:
            exec(case.body_src(), env)
        except BaseException as e:  # noqa: BLE001 - a BaseException is itself a finding
            return None, e
    return env["r"], None


def outputs(result):
    """The result as a list of tensors (a tuple/list/namedtuple of them, or one)."""
    if isinstance(result, (tuple, list)):
        out = []
        for r in result:
            out.extend(outputs(r))
        return out
    return [result]


def to_numpy(t):
    if isinstance(t, (bool, int, float, complex)):
        return np.asarray(t), None
    return tensor_to_numpy(t), dtype_name(t)


def reference(case: Case):
    arrays = [inp.array() for inp in case.inputs]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return case.op.ref(arrays, case.inputs, case.params)


def judge(case: Case, result, exc, expect):
    """Raises Mismatch when ember's result or exception disagrees with the reference's `expect`
    (an Expect or the Refuse it raised)."""
    if exc is not None and not isinstance(exc, Exception):
        raise Mismatch(f"{type(exc).__module__}.{type(exc).__name__} (a BaseException, not an "
                       f"Exception): {str(exc)[:300]}")
    if isinstance(expect, Refuse):
        if exc is None:
            raise Mismatch(f"returned where PyTorch refuses ({expect}): got {_describe(result)}")
        return
    if exc is not None:
        if expect.may_refuse:
            return
        raise Mismatch(f"raised {type(exc).__name__}: {str(exc)[:300]}; expected a result")
    got = outputs(result)
    if len(got) != len(expect.outs):
        raise Mismatch(f"returned {len(got)} tensors, expected {len(expect.outs)}")
    for i, (g, (want, dt)) in enumerate(zip(got, expect.outs)):
        what = f"out[{i}] " if len(got) > 1 else ""
        arr, gdt = to_numpy(g)
        if gdt is not None and dt is not None and gdt != dt:
            raise Mismatch(f"{what}dtype {gdt}, expected {dt}")
        shape = tuple(g.shape) if gdt is not None else arr.shape
        if shape != np.shape(want):
            raise Mismatch(f"{what}shape {shape}, expected {np.shape(want)}")
        if expect.custom is None:
            assert_close(arr, want, dt or "float64", expect.rtol_scale, expect.atol, what)
    if expect.custom is not None:
        expect.custom([to_numpy(g)[0] for g in got])


def _describe(result):
    try:
        outs = outputs(result)
        return ", ".join(f"{dtype_name(o)}{tuple(o.shape)}" if hasattr(o, "shape") else repr(o) for o in outs)
    except Exception:  # noqa: BLE001
        return repr(result)[:200]


def compare_with_torch(case: Case, ember_result, ember_exc, torch, expect):
    """The same source under PyTorch: both raise, or both return the same dtypes and values.
    Ember may do more than PyTorch where PyTorch only lacks a kernel (NotImplementedError) or
    takes no number for a Tensor argument: the NumPy reference has judged those results. Where
    the reference's values are not unique (`Expect.custom`: ties, uninitialised memory), only
    dtypes and shapes are compared."""
    tres, texc = run_module(case, torch)
    if texc is not None:
        lacks = isinstance(texc, NotImplementedError) or "must be Tensor, not" in str(texc)
        if ember_exc is None and not lacks:
            raise Mismatch(f"vs torch: PyTorch raises {type(texc).__name__}: {str(texc)[:200]}; ember returned")
        return
    if ember_exc is not None:
        raise Mismatch(f"vs torch: ember raised {type(ember_exc).__name__}: {str(ember_exc)[:200]}; PyTorch returns")
    got, want = outputs(ember_result), outputs(tres)
    if len(got) != len(want):
        raise Mismatch(f"vs torch: {len(got)} outputs, PyTorch {len(want)}")
    unique = not (isinstance(expect, Expect) and expect.custom is not None)
    for g, w in zip(got, want):
        ga, gdt = to_numpy(g)
        wa, wdt = to_numpy(w)
        if gdt != wdt:
            raise Mismatch(f"vs torch: dtype {gdt}, PyTorch {wdt}")
        if np.shape(ga) != np.shape(wa):
            raise Mismatch(f"vs torch: shape {np.shape(ga)}, PyTorch {np.shape(wa)}")
        if unique:
            assert_close(ga, wa, wdt or "float64", 4.0, 1e-6, "vs torch: ")
