"""Max, average and adaptive pooling against explicit-loop NumPy references."""
import itertools
import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from tensor_helpers import FLOATS, to_np

TOL = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2}


def make(shape, dtype, seed):
    t = ember.tensor(np.random.default_rng(seed).standard_normal(shape)).to(dtype)
    return t, to_np(t).astype(np.float64)


def out_len(n, k, s, p, d, ceil):
    """Output length as PyTorch documents it: windows may not start in the right padding."""
    span = (n + 2 * p - d * (k - 1) - 1) / s
    out = (math.ceil(span) if ceil else math.floor(span)) + 1
    if ceil and (out - 1) * s >= n + p:
        out -= 1
    return out


def windows(spatial, k, s, p, d, ceil):
    """For every output position: the in-bounds input positions per dim and the padded window size."""
    per_dim = []
    for n, kk, ss, pp, dd in zip(spatial, k, s, p, d):
        wins = []
        for o in range(out_len(n, kk, ss, pp, dd, ceil)):
            start = o * ss - pp
            taps = [start + j * dd for j in range(kk) if 0 <= start + j * dd < n]
            wins.append((taps, min(start + kk, n + pp) - start))
        per_dim.append(wins)
    return per_dim


def max_pool_ref(x, k, s, p, d, ceil):
    dims = len(k)
    spatial = x.shape[-dims:]
    per_dim = windows(spatial, k, s, p, d, ceil)
    shape = x.shape[:-dims] + tuple(len(w) for w in per_dim)
    out, idx = np.empty(shape), np.empty(shape, dtype=np.int64)
    for lead in np.ndindex(*x.shape[:-dims]):
        plane = x[lead]
        for pos in itertools.product(*[range(len(w)) for w in per_dim]):
            cells = list(itertools.product(*[per_dim[i][pos[i]][0] for i in range(dims)]))
            vals = [plane[c] for c in cells]
            best = int(np.argmax(vals))
            out[lead + pos] = vals[best]
            idx[lead + pos] = np.ravel_multi_index(cells[best], spatial)
    return out, idx


def avg_pool_ref(x, k, s, p, ceil, count_include_pad, divisor_override=None):
    dims = len(k)
    per_dim = windows(x.shape[-dims:], k, s, p, (1,) * dims, ceil)
    out = np.empty(x.shape[:-dims] + tuple(len(w) for w in per_dim))
    for lead in np.ndindex(*x.shape[:-dims]):
        for pos in itertools.product(*[range(len(w)) for w in per_dim]):
            taps = [per_dim[i][pos[i]][0] for i in range(dims)]
            vals = [x[lead][c] for c in itertools.product(*taps)]
            if divisor_override:
                div = divisor_override
            elif count_include_pad:
                div = np.prod([per_dim[i][pos[i]][1] for i in range(dims)])
            else:
                div = len(vals)
            out[lead + pos] = sum(vals) / div if vals else 0.0
    return out


def adaptive_ref(x, out_size, reduce):
    dims = len(out_size)
    spatial = x.shape[-dims:]
    ranges = [[range(o * n // m, -(-(o + 1) * n // m)) for o in range(m)] for n, m in zip(spatial, out_size)]
    out = np.empty(x.shape[:-dims] + tuple(out_size))
    idx = np.empty(out.shape, dtype=np.int64)
    for lead in np.ndindex(*x.shape[:-dims]):
        for pos in np.ndindex(*out_size):
            cells = list(itertools.product(*[ranges[i][pos[i]] for i in range(dims)]))
            vals = [x[lead][c] for c in cells]
            if reduce == "max":
                best = int(np.argmax(vals))
                out[lead + pos], idx[lead + pos] = vals[best], np.ravel_multi_index(cells[best], spatial)
            else:
                out[lead + pos] = np.mean(vals)
    return out, idx


def check(got, want, dtype):
    assert got.dtype == dtype and tuple(got.shape) == want.shape
    np.testing.assert_allclose(to_np(got).astype(np.float64), want, rtol=TOL[dtype.name], atol=TOL[dtype.name])


def tup(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


MAX2D = [
    # shape, kernel, stride, padding, dilation, ceil_mode
    ((2, 3, 8, 8), 2, None, 0, 1, False),
    ((2, 3, 9, 7), 2, 2, 0, 1, False),  # 2x2/2 kernel, odd sizes floored
    ((1, 2, 6, 37), 2, 2, 0, 1, False),  # 2x2/2: a full vector of outputs and a tail
    ((1, 1, 4, 64), 2, None, 0, 1, False),  # 2x2/2: whole vectors only
    ((2, 3, 9, 7), 2, 2, 0, 1, True),  # partial last windows: the general kernel
    ((2, 3, 9, 7), 3, 2, 1, 1, False),
    ((2, 3, 9, 7), 3, 2, 1, 1, True),
    ((1, 2, 10, 11), (3, 2), (2, 3), (1, 1), (2, 1), True),
    ((3, 7, 6), 2, 2, 1, 1, True),
    ((1, 1, 5, 5), 5, 1, 2, 1, False),
    ((1, 2, 12, 9), (4, 3), (3, 2), (2, 0), (1, 2), False),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("case", MAX2D)
def test_max_pool2d_parity(dtype, case):
    shape, k, s, p, d, ceil = case
    x, xr = make(shape, dtype, 0)
    out, idx = F.max_pool2d(x, k, s, p, d, ceil, return_indices=True)
    want, want_idx = max_pool_ref(xr, tup(k, 2), tup(s if s is not None else k, 2), tup(p, 2), tup(d, 2), ceil)
    check(out, want, dtype)
    assert idx.dtype == ember.int64
    np.testing.assert_array_equal(to_np(idx), want_idx)
    check(F.max_pool2d(x, k, s, p, d, ceil), want, dtype)


@pytest.mark.parametrize("shape,k,s,p,d,ceil", [
    ((2, 3, 10), 3, None, 1, 1, False), ((2, 3, 10), 3, 2, 1, 2, True), ((4, 9), 2, 1, 0, 1, False), ((1, 2, 7), 4, 3, 2, 1, True),
])
def test_max_pool1d_parity(shape, k, s, p, d, ceil):
    x, xr = make(shape, ember.float32, 1)
    out, idx = F.max_pool1d(x, k, s, p, d, ceil, return_indices=True)
    want, want_idx = max_pool_ref(xr, (k,), (s or k,), (p,), (d,), ceil)
    check(out, want, ember.float32)
    np.testing.assert_array_equal(to_np(idx), want_idx)


def test_max_pool3d_parity():
    x, xr = make((2, 2, 5, 6, 7), ember.float64, 2)
    out, idx = F.max_pool3d(x, (2, 3, 2), (2, 2, 1), (1, 1, 0), 1, True, return_indices=True)
    want, want_idx = max_pool_ref(xr, (2, 3, 2), (2, 2, 1), (1, 1, 0), (1, 1, 1), True)
    check(out, want, ember.float64)
    np.testing.assert_array_equal(to_np(idx), want_idx)


def test_max_pool_propagates_nan_and_handles_infinities():
    x = ember.tensor([[[[1.0, float("nan"), 3.0, 4.0], [-np.inf, -np.inf, 2.0, 9.0]]]])
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    assert np.isnan(to_np(out)[0, 0, 0, 0]) and to_np(idx)[0, 0, 0, 0] == 1
    assert to_np(out)[0, 0, 0, 1] == 9.0 and to_np(idx)[0, 0, 0, 1] == 7
    ties = ember.tensor([[[[5.0, 5.0, 0.0, 7.0], [5.0, 1.0, 7.0, 7.0]]]])
    assert to_np(F.max_pool2d(ties, 2, return_indices=True)[1]).tolist() == [[[[0, 3]]]]
    allneg = ember.full((1, 1, 2, 2), -np.inf)
    o, i = F.max_pool2d(allneg, 2, return_indices=True)
    assert to_np(o)[0, 0, 0, 0] == -np.inf and to_np(i)[0, 0, 0, 0] == 0


def test_max_pool_2x2_float32_kernel_agrees_with_float64_on_nans_and_ties():
    # float32 takes the vectorised 2x2/2 kernel, float64 the scalar one: same maxima, same indices.
    rng = np.random.default_rng(7)
    base = rng.integers(0, 3, (2, 3, 6, 41)).astype(np.float64)
    base[rng.random(base.shape) < 0.05] = np.nan
    base[rng.random(base.shape) < 0.05] = -np.inf
    o32, i32 = F.max_pool2d(ember.tensor(base, dtype=ember.float32), 2, return_indices=True)
    o64, i64 = F.max_pool2d(ember.tensor(base), 2, return_indices=True)
    np.testing.assert_array_equal(to_np(i32), to_np(i64))
    np.testing.assert_array_equal(to_np(o32), to_np(o64).astype(np.float32))


@pytest.mark.parametrize("pool", [
    lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True),
    lambda x: F.max_pool2d(x, (3, 2), (2, 3), (1, 1), (2, 1), True, return_indices=True),
    lambda x: F.max_pool2d(x, (4, 3), (3, 2), (2, 0), (1, 2), return_indices=True),
    lambda x: F.max_pool1d(x.flatten(2), 5, 2, 2, 3, True, return_indices=True),
    lambda x: F.max_pool3d(x.reshape(2, 3, 3, 2, 41), (2, 2, 3), (1, 2, 2), (1, 0, 1), return_indices=True),
    lambda x: F.adaptive_max_pool2d(x, (4, 17), return_indices=True),
], ids=["3x3/2", "dilated-ceil", "wide", "1d", "3d", "adaptive"])
def test_max_pool_float32_kernel_agrees_with_float64_on_nans_and_ties(pool):
    # float32 takes the vectorised separable kernel, float64 the scalar whole-window one.
    rng = np.random.default_rng(8)
    base = rng.integers(0, 3, (2, 3, 6, 41)).astype(np.float64)
    base[rng.random(base.shape) < 0.05] = np.nan
    base[rng.random(base.shape) < 0.05] = -np.inf
    o32, i32 = pool(ember.tensor(base, dtype=ember.float32))
    o64, i64 = pool(ember.tensor(base))
    np.testing.assert_array_equal(to_np(i32), to_np(i64))
    np.testing.assert_array_equal(to_np(o32), to_np(o64).astype(np.float32))


def test_max_pool_non_contiguous_input():
    rng = np.random.default_rng(3)
    base = rng.standard_normal((2, 9, 8, 3))
    x = ember.tensor(base).permute(0, 3, 1, 2)[:, :, ::2, :]
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    want, want_idx = max_pool_ref(base.transpose(0, 3, 1, 2)[:, :, ::2, :], (2, 2), (2, 2), (0, 0), (1, 1), False)
    check(out, want, ember.float64)
    np.testing.assert_array_equal(to_np(idx), want_idx)


AVG2D = [
    # shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    ((2, 3, 8, 8), 2, None, 0, False, True, None),
    ((2, 3, 9, 7), 3, 2, 1, False, True, None),
    ((2, 3, 9, 7), 3, 2, 1, False, False, None),
    ((2, 3, 9, 7), 3, 2, 1, True, True, None),
    ((2, 3, 9, 7), 3, 2, 1, True, False, None),
    ((1, 2, 10, 11), (3, 2), (2, 3), (1, 1), True, True, 5),
    ((3, 7, 6), (2, 3), 2, (1, 0), True, False, None),
]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("case", AVG2D)
def test_avg_pool2d_parity(dtype, case):
    shape, k, s, p, ceil, cip, div = case
    x, xr = make(shape, dtype, 4)
    got = F.avg_pool2d(x, k, s, p, ceil, cip, div)
    check(got, avg_pool_ref(xr, tup(k, 2), tup(s if s is not None else k, 2), tup(p, 2), ceil, cip, div), dtype)


@pytest.mark.parametrize("shape,k,s,p,ceil,cip", [
    ((2, 3, 10), 3, None, 1, False, True), ((2, 3, 10), 3, 2, 1, True, False), ((4, 9), 2, 1, 0, False, True), ((1, 2, 7), 4, 3, 2, True, True),
])
def test_avg_pool1d_parity(shape, k, s, p, ceil, cip):
    x, xr = make(shape, ember.float64, 5)
    check(F.avg_pool1d(x, k, s, p, ceil, cip), avg_pool_ref(xr, (k,), (s or k,), (p,), ceil, cip), ember.float64)


def test_avg_pool_strided_input():
    rng = np.random.default_rng(6)
    base = rng.standard_normal((2, 3, 12, 10))
    x = ember.tensor(base)[:, :, 1::2, :].transpose(2, 3)
    want = avg_pool_ref(base[:, :, 1::2, :].transpose(0, 1, 3, 2), (3, 3), (2, 2), (1, 1), False, True)
    check(F.avg_pool2d(x, 3, 2, 1), want, ember.float64)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape,out", [((2, 3, 7, 9), (3, 4)), ((2, 3, 8, 8), 4), ((3, 5, 6), (5, None)), ((1, 1, 4, 4), (7, 5)), ((2, 2, 6, 5), 1)])
def test_adaptive_pool2d_parity(dtype, shape, out):
    x, xr = make(shape, dtype, 7)
    size = tuple(shape[-2 + i] if o is None else o for i, o in enumerate(tup(out, 2)))
    want_avg, _ = adaptive_ref(xr, size, "avg")
    check(F.adaptive_avg_pool2d(x, out), want_avg, dtype)
    want_max, want_idx = adaptive_ref(xr, size, "max")
    got, idx = F.adaptive_max_pool2d(x, out, return_indices=True)
    check(got, want_max, dtype)
    np.testing.assert_array_equal(to_np(idx), want_idx)


def test_adaptive_pool1d_and_3d():
    x, xr = make((2, 3, 11), ember.float64, 8)
    check(F.adaptive_avg_pool1d(x, 4), adaptive_ref(xr, (4,), "avg")[0], ember.float64)
    check(F.adaptive_max_pool1d(x, 4), adaptive_ref(xr, (4,), "max")[0], ember.float64)
    x3, x3r = make((1, 2, 5, 4, 6), ember.float64, 9)
    check(F.adaptive_avg_pool3d(x3, (2, 3, 4)), adaptive_ref(x3r, (2, 3, 4), "avg")[0], ember.float64)


def test_top_level_pool_aliases():
    x = ember.ones(1, 2, 4)
    assert ember.max_pool1d is F.max_pool1d and ember.avg_pool1d is F.avg_pool1d
    assert tuple(ember.max_pool2d(ember.ones(1, 4, 4), 2).shape) == (1, 2, 2)
    assert tuple(ember.adaptive_avg_pool1d(x, 2).shape) == (1, 2, 2)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: F.max_pool2d(ember.ones(1, 1, 4, 4), 3, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1"),
    (lambda: F.max_pool2d(ember.ones(1, 1, 2, 2), 3), RuntimeError, r"Given input size: \(2x2\). Calculated output size: \(0x0\). Output size is too small"),
    (lambda: F.max_pool2d(ember.ones(4, 4), 2), RuntimeError, r"max_pool2d: Expected 3D or 4D \(batch mode\) tensor for input, but got input of size: \[4, 4\]"),
    (lambda: F.max_pool2d(ember.ones(1, 1, 4, 4), 0), RuntimeError, "kernel_size must be greater than zero"),
    (lambda: F.max_pool2d(ember.ones(1, 1, 4, 4), 2, stride=0), RuntimeError, "stride must be greater than zero"),
    (lambda: F.max_pool2d(ember.ones(1, 1, 4, 4), 2, dilation=0), RuntimeError, "dilation must be greater than zero"),
    (lambda: F.max_pool2d(ember.ones(1, 1, 4, 4), (2, 2, 2)), RuntimeError, "kernel_size must either be a single int, or a tuple of 2 ints"),
    (lambda: F.max_pool2d(ember.ones(1, 1, 4, 4, dtype=ember.int64), 2), RuntimeError, "\"max_pool2d\" not implemented for 'int64'"),
    (lambda: F.avg_pool2d(ember.ones(1, 1, 4, 4), 2, divisor_override=0), RuntimeError, "divisor must be not zero"),
    (lambda: F.avg_pool2d(ember.ones(1, 1, 4, 4), 2, padding=-1), RuntimeError, "pad must be non-negative"),
    (lambda: F.avg_pool1d(ember.ones(1, 1, 4), 2, padding=2), RuntimeError, "pad should be at most half"),
    (lambda: F.adaptive_avg_pool2d(ember.ones(1, 0, 4), 2), RuntimeError, "Expected input to have non-zero size for non-batch dimensions"),
    (lambda: F.adaptive_max_pool2d(ember.ones(1, 1, 4, 4), (2, 2, 2)), RuntimeError, "output_size must be 2"),
    (lambda: F.max_pool2d("x", 2), TypeError, r"max_pool2d\(\): argument 'input' \(position 1\) must be Tensor, not str"),
    (lambda: F.max_pool2d(ember.ones(1, 1, 4, 4), 2.5), TypeError, "argument 'kernel_size' must be an int or a tuple of ints"),
])
def test_pool_bad_inputs(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()
