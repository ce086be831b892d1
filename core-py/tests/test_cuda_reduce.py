"""Reductions, max/min with indices, softmax and the normalisation layers on CUDA equal to the
CPU's on the same inputs, gradients included: every dtype, reduced dims inner, outer, in the
middle and all, non-contiguous inputs, empty ones, sizes that are no multiple of a block, large
ones (split over blocks) and one past 2**31 elements. Skipped where `ember.cuda.is_available()`
is False (CI has no GPU).

Sums run on integer-valued data, whose float sums are exact in any order, so the GPU's result
must equal the CPU's exactly; softmax and the norms compare within the dtype's rounding."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

pytestmark = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA GPU and its driver")

FLOATS = [ember.float32, ember.float64, ember.float16, ember.bfloat16]
INTS = [ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64]
ALL = FLOATS + INTS + [ember.bool]
# (rtol, atol) for results computed in a different order than the CPU's.
TOLERANCE = {ember.float32: (2e-5, 2e-6), ember.float64: (1e-12, 1e-13), ember.float16: (2e-3, 2e-4), ember.bfloat16: (1.6e-2, 2e-3)}
# Relative to the sum of magnitudes, for float sums of a million values in different orders.
SUM_TOLERANCE = {ember.float32: 1e-4, ember.float64: 1e-12, ember.float16: 2e-3, ember.bfloat16: 1.6e-2}
OPS = ["sum", "prod", "mean", "amax", "amin", "all", "any", "count_nonzero"]


def same(gpu, cpu, exact=False):
    """`gpu` (a CUDA tensor) equals `cpu`: shape, dtype, and values (NaN where NaN)."""
    assert gpu.device.type == "cuda", gpu.device
    assert tuple(gpu.shape) == tuple(cpu.shape) and gpu.dtype == cpu.dtype, (gpu.shape, cpu.shape, gpu.dtype, cpu.dtype)
    got, want = gpu.cpu().double().numpy(), cpu.double().numpy()
    if exact or not cpu.dtype.is_floating_point:
        np.testing.assert_array_equal(got, want)
    else:
        # Absolute errors scale with the largest values, where terms cancel near zero.
        rtol, atol = TOLERANCE[cpu.dtype]
        finite = np.abs(want[np.isfinite(want)])
        scale = max(1.0, float(finite.max())) if finite.size else 1.0
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * scale, equal_nan=True)


def data(dtype, shape, seed=0, powers_of_two=False):
    """Integer-valued inputs (zeros and ties among them): float sums of them are exact. With
    `powers_of_two`, ±2**k values (ints in -3..3) whose float products are exact too."""
    rng = np.random.default_rng(seed)
    if dtype == ember.bool:
        values = rng.random(shape) > 0.5
    elif powers_of_two and dtype.is_floating_point:
        values = rng.choice([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0], shape)
    elif powers_of_two:
        values = rng.integers(-3, 4, shape)
    else:
        values = rng.integers(0 if dtype == ember.uint8 else -8, 9, shape)
    return ember.tensor(np.asarray(values)).to(dtype)


def randn(dtype, shape, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    return ember.tensor(np.asarray(rng.standard_normal(shape) * scale)).to(dtype)


def reduce(name, x, dim, keepdim):
    if name == "count_nonzero":
        return ember.count_nonzero(x, dim)
    if name in ("amax", "amin"):
        return getattr(ember, name)(x, () if dim is None else dim, keepdim)
    return getattr(ember, name)(x, dim, keepdim)


def applies(name, dtype, shape, dim):
    """Whether the op takes this input (mean: floats; amax/amin: no empty reduced dim)."""
    if name == "mean" and not dtype.is_floating_point:
        return False
    if name in ("amax", "amin") and 0 in shape:
        dims = range(len(shape)) if dim is None else ([dim] if isinstance(dim, int) else dim)
        return all(shape[d] != 0 for d in dims) and dim is not None
    return True


def both(name, x, dim, keepdim=False, view=lambda t: t):
    """The op on the CPU and on the GPU, `view` taken of each device's copy of `x`."""
    return reduce(name, view(x), dim, keepdim), reduce(name, view(x.cuda()), dim, keepdim)


# (shape, dim, keepdim): inner, outer, middle, several, all, none-kept; sizes around the warp
# and block widths; empty runs and empty outputs.
CASES = [
    ((7,), None, False),
    ((1,), 0, True),
    ((), None, False),
    ((33,), 0, False),
    ((33, 1000), 1, False),
    ((33, 1000), 0, False),
    ((33, 1000), -1, True),
    ((4, 7, 33), 1, True),
    ((4, 7, 33), (0, 2), False),
    ((2, 3, 4, 5), (1, 3), True),
    ((2, 3, 4, 5), (0, 1, 2, 3), False),
    ((3, 4097), 1, False),
    ((4097, 3), 0, False),
    ((1000, 7), None, True),
    ((5, 0), 1, False),
    ((0, 5), 1, False),
    ((5, 0), 0, True),
]


@pytest.mark.parametrize("dtype", ALL, ids=str)
@pytest.mark.parametrize("name", OPS)
def test_reduction_matches_cpu(name, dtype):
    for shape, dim, keepdim in CASES:
        if not applies(name, dtype, shape, dim):
            continue
        x = data(dtype, shape, powers_of_two=name == "prod")
        cpu, gpu = both(name, x, dim, keepdim)
        same(gpu, cpu, exact=True)


VIEWS = {
    "transposed": ((40, 66), lambda t: t.t()),
    "stepped": ((40, 66), lambda t: t[::2, 1::3]),
    "permuted": ((6, 10, 35), lambda t: t.permute(2, 0, 1)),
    "expanded": ((40, 1), lambda t: t.expand(40, 50)),
    "offset": ((40, 66), lambda t: t[3:, 5:60]),
}


@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.int64, ember.uint8, ember.bool], ids=str)
@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("name", OPS)
def test_reduction_of_non_contiguous_inputs(name, view, dtype):
    shape, make = VIEWS[view]
    x = data(dtype, shape, seed=1, powers_of_two=name == "prod")
    ndim = len(shape)
    for dim in [None, 0, 1, -1, (0, 1)] + ([(0, 2), (1, 2)] if ndim == 3 else []):
        for keepdim in (False, True):
            if applies(name, dtype, shape, dim):
                cpu, gpu = both(name, x, dim, keepdim, view=make)
                same(gpu, cpu, exact=True)


@pytest.mark.parametrize("shape,dim", [
    ((3_000_001,), None),  # one output: partial sums over many blocks, then a final pass
    ((3000, 1001), 0),  # outer dim, many columns
    ((3000, 1001), 1),  # inner dim, many rows
    ((1_000_003, 3), 0),  # a few columns of a million rows: split rows
    ((3, 1_000_003), 1),  # a few long rows: split each row
    ((7, 1000, 3, 100), (0, 2)),
])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.bfloat16, ember.int32, ember.bool], ids=str)
def test_large_reductions(shape, dim, dtype):
    x = data(dtype, shape, seed=2)
    for name in ["sum", "amax", "amin", "any", "count_nonzero"] + (["mean"] if dtype.is_floating_point else []):
        cpu, gpu = both(name, x, dim)
        same(gpu, cpu, exact=True)


def test_float_sums_of_random_values_agree_within_rounding():
    for dtype in FLOATS:
        x = randn(dtype, (513, 2049), seed=3)
        for dim in [None, 0, 1]:
            for name in ("sum", "mean"):
                cpu, gpu = both(name, x, dim)
                # Rounding errors grow with the sum of magnitudes, not with the result.
                scale = float(np.max(reduce(name, ember.abs(x.double()), dim, False).numpy()))
                np.testing.assert_allclose(gpu.cpu().double().numpy(), cpu.double().numpy(), rtol=0, atol=scale * SUM_TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_nan_and_inf(dtype):
    x = data(dtype, (6, 50), seed=4, powers_of_two=True)
    x[5, 30] = 0.0
    x[0, 3] = float("nan")
    x[1, 7] = float("inf")
    x[2, 9] = float("-inf")
    x[3, :] = float("-inf")
    x[4, 0] = float("nan")
    x[4, 40] = float("nan")
    x[5, 10] = float("inf")
    x[5, 20] = float("-inf")
    for name in ["amax", "amin", "sum", "prod", "mean", "all", "any", "count_nonzero"]:
        for dim in [None, 0, 1]:
            cpu, gpu = both(name, x, dim)
            same(gpu, cpu)
    for fn in (ember.max, ember.min):
        for dim in [0, 1]:
            (cv, ci), (gv, gi) = fn(x, dim), fn(x.cuda(), dim)
            same(gv, cv, exact=True)
            same(gi, ci, exact=True)
    for fn in (ember.argmax, ember.argmin):
        same(fn(x.cuda()), fn(x), exact=True)


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_max_min_with_indices_take_the_first_extreme(dtype):
    for shape, dim in [((7,), 0), ((1,), 0), ((33, 1000), 1), ((33, 1000), 0), ((4, 7, 33), 1), ((3, 4097), -1), ((5000, 3), 0), ((2, 300_001), 1)]:
        x = data(dtype, shape, seed=5)  # few distinct values: many ties
        for fn in (ember.max, ember.min):
            for keepdim in (False, True):
                (cv, ci), (gv, gi) = fn(x, dim, keepdim), fn(x.cuda(), dim, keepdim)
                same(gv, cv, exact=True)
                same(gi, ci, exact=True)
        for fn in (ember.argmax, ember.argmin):
            same(fn(x.cuda()), fn(x), exact=True)
            same(fn(x.cuda(), dim), fn(x, dim), exact=True)
        if dtype != ember.bool:
            same(ember.max(x.cuda()), ember.max(x), exact=True)


def test_max_min_of_non_contiguous_inputs():
    x = data(ember.float32, (40, 66), seed=6)
    for view in (lambda t: t.t(), lambda t: t[::3, 1::2], lambda t: t[:, :1].expand(40, 9)):
        for dim in (0, 1):
            for fn in (ember.max, ember.min):
                (cv, ci), (gv, gi) = fn(view(x), dim), fn(view(x.cuda()), dim)
                same(gv, cv, exact=True)
                same(gi, ci, exact=True)


def test_reductions_past_2_to_the_31_elements():
    n = 2**31 + 6
    x = ember.ones(n, dtype=ember.uint8, device="cuda")
    x[n - 2 :].fill_(3)
    assert ember.sum(x).item() == n + 4
    assert ember.count_nonzero(x).item() == n
    assert ember.argmax(x).item() == n - 2
    assert ember.amax(x).item() == 3 and ember.amin(x).item() == 1
    halves = ember.sum(x.view(2, n // 2), 1).cpu().tolist()
    assert halves == [n // 2, n // 2 + 4]
    del x


def test_composite_reductions():
    x = randn(ember.float32, (9, 1000), seed=7)
    g = x.cuda()
    for dim in (0, 1):
        same(ember.var(g, dim), ember.var(x, dim))
        same(ember.std(g, dim, keepdim=True), ember.std(x, dim, keepdim=True))
        same(ember.logsumexp(g, dim), ember.logsumexp(x, dim))
        same(ember.norm(g, 2, dim), ember.norm(x, 2, dim))
        same(ember.norm(g, float("inf"), dim), ember.norm(x, float("inf"), dim))
    same(ember.sum(data(ember.int8, (50, 3)).cuda(), 0, dtype=ember.float32), ember.sum(data(ember.int8, (50, 3)), 0, dtype=ember.float32))


# ---- softmax ----

SOFTMAX_CASES = [
    ((8, 7), -1),
    ((3, 1000), 1),
    ((5, 4097), -1),  # a block per row, cached in shared memory
    ((3, 13000), -1),  # too long to cache (float32): every pass reads global memory
    ((64, 33), 1),
    ((2, 33, 5), 1),  # not the last dim
    ((33, 5), 0),
    ((4, 3, 2, 5), 2),
    ((7,), 0),
    ((), 0),
    ((0, 5), 1),
    ((257, 1), 1),
    ((300, 1024), 1),  # the longest rows a warp takes
    ((300, 1025), 1),
]


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_softmax_matches_cpu(dtype, log):
    fn = F.log_softmax if log else F.softmax
    for shape, dim in SOFTMAX_CASES:
        x = randn(dtype, shape, seed=8)
        same(fn(x.cuda(), dim), fn(x, dim))
        if len(shape) >= 2:  # a transposed input
            same(fn(x.cuda().transpose(0, -1), dim), fn(x.transpose(0, -1), dim))


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_softmax_of_nan_and_infinite_rows(dtype):
    x = randn(dtype, (6, 40), seed=9)
    x[0, 3] = float("nan")
    x[1, 7] = float("inf")
    x[2, :] = float("-inf")
    x[3, ::2] = float("-inf")
    x[4, 0] = float("-inf")
    for fn in (F.softmax, F.log_softmax):
        for dim in (0, 1):
            same(fn(x.cuda(), dim), fn(x, dim))


def test_softmax_of_large_rows():
    x = randn(ember.float32, (2048, 8192), seed=10)
    g = x.cuda()
    same(F.softmax(g, -1), F.softmax(x, -1))
    same(F.log_softmax(g, -1), F.log_softmax(x, -1))
    same(F.softmax(g, 0), F.softmax(x, 0))


# ---- normalisation ----

@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_layer_norm_matches_cpu(dtype):
    for shape, normalized in [((4, 7), (7,)), ((3, 1000), (1000,)), ((5, 4097), (4097,)), ((2, 13000), (13000,)),
                              ((2, 3, 40), (3, 40)), ((7,), (7,)), ((0, 5), (5,)), ((300, 33), (33,))]:
        x = randn(dtype, shape, seed=11) + 2
        w, b = randn(dtype, normalized, seed=12), randn(dtype, normalized, seed=13)
        same(F.layer_norm(x.cuda(), normalized), F.layer_norm(x, normalized))
        same(F.layer_norm(x.cuda(), normalized, w.cuda(), b.cuda(), 1e-3), F.layer_norm(x, normalized, w, b, 1e-3))
        same(F.layer_norm(x.cuda(), normalized, w.cuda()), F.layer_norm(x, normalized, w))
        if len(shape) == 2 and len(normalized) == 1 and shape[0] > 1:  # a non-contiguous input
            xs = x[::2]
            same(F.layer_norm(xs.cuda(), normalized, w.cuda(), b.cuda()), F.layer_norm(xs, normalized, w, b))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16], ids=str)
def test_batch_group_and_instance_norm_match_cpu(dtype):
    x = randn(dtype, (4, 6, 5, 7), seed=14) + 1
    w, b = randn(ember.float32, (6,), seed=15).to(dtype), randn(ember.float32, (6,), seed=16).to(dtype)
    same(F.group_norm(x.cuda(), 3, w.cuda(), b.cuda()), F.group_norm(x, 3, w, b))
    same(F.instance_norm(x.cuda()), F.instance_norm(x))
    rm, rv = ember.zeros(6, dtype=dtype), ember.ones(6, dtype=dtype)
    grm, grv = rm.cuda(), rv.cuda()
    same(F.batch_norm(x.cuda(), grm, grv, w.cuda(), b.cuda(), training=True), F.batch_norm(x, rm, rv, w, b, training=True))
    same(grm, rm)
    same(grv, rv)
    same(F.batch_norm(x.cuda(), grm, grv, w.cuda(), b.cuda()), F.batch_norm(x, rm, rv, w, b))
    long_rows = randn(dtype, (2, 3, 70, 70), seed=17)  # rows of 4900: a block each
    same(F.instance_norm(long_rows.cuda()), F.instance_norm(long_rows))


# ---- gradients ----

def grads(fn, *inputs, seed=20):
    """The gradients of `fn(*inputs)` under a random output gradient, on the CPU and on the GPU."""
    results = []
    for device in ("cpu", "cuda"):
        leaves = [t.detach().to(device).requires_grad_() for t in inputs]
        out = fn(*leaves)
        g = randn(out.dtype, tuple(out.shape), seed=seed).to(device)
        out.backward(g)
        results.append([t.grad for t in leaves])
    return results


def same_grads(fn, *inputs):
    cpu, gpu = grads(fn, *inputs)
    for c, g in zip(cpu, gpu):
        same(g, c)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
def test_reduction_gradients(dtype):
    x = randn(dtype, (5, 33, 7), seed=21)
    for dim in [None, 1, (0, 2)]:
        same_grads(lambda t: ember.sum(t, dim), x)
        same_grads(lambda t: ember.mean(t, dim), x)
        same_grads(lambda t: ember.amax(t, () if dim is None else dim), x)
    same_grads(lambda t: ember.prod(t, 1), randn(dtype, (4, 6), seed=22))
    same_grads(lambda t: ember.var(t, 1), x)
    same_grads(lambda t: ember.logsumexp(t, 2), x)


def test_max_along_a_dim_gradient():
    x = randn(ember.float32, (5, 33), seed=23)
    same_grads(lambda t: ember.max(t, 1)[0], x)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
def test_softmax_gradients(dtype):
    for shape, dim in [((4, 33), -1), ((3, 4097), 1), ((6, 5, 7), 1)]:
        x = randn(dtype, shape, seed=24)
        same_grads(lambda t: F.softmax(t, dim), x)
        same_grads(lambda t: F.log_softmax(t, dim), x)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
def test_normalisation_gradients(dtype):
    x = randn(dtype, (6, 4, 9), seed=25)
    w, b = randn(dtype, (9,), seed=26), randn(dtype, (9,), seed=27)
    same_grads(lambda t, w, b: F.layer_norm(t, (9,), w, b), x, w, b)
    same_grads(lambda t: F.layer_norm(t, (4, 9)), x)
    big = randn(dtype, (3, 5000), seed=28)
    same_grads(lambda t: F.layer_norm(t, (5000,)), big)
    w4, b4 = randn(dtype, (4,), seed=29), randn(dtype, (4,), seed=30)
    same_grads(lambda t, w, b: F.batch_norm(t, None, None, w, b, training=True), x, w4, b4)
    same_grads(lambda t, w, b: F.group_norm(t, 2, w, b), x, w4, b4)
