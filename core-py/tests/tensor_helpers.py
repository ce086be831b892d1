"""Shared helpers for the core tests: dtype lists, tolerances, layouts, comparisons."""
import numpy as np

import ember

FLOATS = [ember.float32, ember.float64, ember.float16, ember.bfloat16]
INTS = [ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64]
ALL = [ember.bool] + INTS + FLOATS

# Tolerances per dtype when comparing with a float64 reference.
TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2}


def to_np(t):
    """A float64 (or exact integer/bool) NumPy copy of an ember tensor."""
    if t.dtype == ember.bfloat16:
        t = t.float()
    return np.array(np.asarray(t), copy=True)


def rounded(a, dtype):
    """`a` rounded to `dtype` the way ember stores it, back as float64 (for reference inputs)."""
    return to_np(ember.tensor(a, dtype=ember.float64).to(dtype)).astype(np.float64)


def layouts(shape, dtype, low=-3.0, high=3.0, seed=0):
    """(name, ember tensor, float64/int NumPy reference) over the layouts ops must handle."""
    rng = np.random.default_rng(seed)
    big = tuple(2 * s for s in shape)
    if dtype == ember.bool:
        base = rng.random(big) > 0.5
    elif dtype in INTS:
        lo = 0 if dtype == ember.uint8 else -10
        base = rng.integers(lo, 10, big)
    else:
        base = rng.uniform(low, high, big)
    t = ember.tensor(base).to(dtype)
    ref = to_np(t)
    sl = tuple(slice(0, s) for s in shape)
    out = [("contiguous", t[sl].contiguous(), ref[sl])]
    step = tuple(slice(0, 2 * s, 2) for s in shape)
    out.append(("strided", t[step], ref[step]))
    if len(shape) >= 2:
        tt = t[sl].transpose(0, 1)
        out.append(("transposed", tt.contiguous().transpose(0, 1), ref[sl]))
    if len(shape) >= 1:
        row = t[(slice(0, 1),) + sl[1:]]
        out.append(("broadcast", row.expand(*shape), np.broadcast_to(ref[(slice(0, 1),) + sl[1:]], shape)))
        out.append(("flipped", t[sl].flip(0), ref[sl][::-1]))
    return out


def assert_close(got, want, dtype, rtol=None, atol=None):
    got = to_np(got).astype(np.float64) if not isinstance(got, np.ndarray) else got
    want = np.asarray(want, dtype=np.float64)
    tol = TOL.get(dtype.name, 0)
    np.testing.assert_allclose(got, want, rtol=rtol if rtol is not None else tol, atol=atol if atol is not None else tol, equal_nan=True)
