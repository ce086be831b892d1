"""bfloat16/float16 on every conversion path (forced through `ember._C._set_half_path`):
conversions against an exact round-to-nearest-even reference, each op family against float32
computed then rounded, matmuls against float64, and the float32 matmul precision setting."""
import warnings

import numpy as np
import pytest

import ember

PATHS = ember._C._half_paths()
HALVES = [ember.bfloat16, ember.float16]


@pytest.fixture(params=PATHS)
def path(request):
    ember._C._set_half_path(request.param)
    yield request.param
    ember._C._set_half_path(None)


def round_bf16(x):
    """float32 array -> bfloat16 bits as float32 values: integer round-to-nearest-even, NaN quieted."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    lsb = (bits >> 16) & 1
    rounded = (bits + np.uint32(0x7FFF) + lsb) >> 16
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    out = np.where(nan, (bits >> 16) | 0x40, rounded).astype(np.uint32) << 16
    return out.view(np.float32)


def round_to(x, dtype):
    """The exact reference rounding of float32 values to `dtype`, back as float32."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == ember.bfloat16:
        return round_bf16(x)
    with np.errstate(over="ignore"):  # overflow to infinity is one of the cases under test
        return x.astype(np.float16).astype(np.float32)


def widened(t):
    """The float32 values of a half tensor (widening is exact)."""
    return np.asarray(t.to(ember.float32))


def assert_same(got, want):
    """Bit-equal float32 arrays, except that any NaN matches any NaN of the same sign."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    assert got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(np.signbit(got[nan]), np.signbit(want[nan]))
    mismatch = np.flatnonzero(got[~nan].view(np.uint32) != want[~nan].view(np.uint32))
    assert mismatch.size == 0, f"{mismatch.size} differ, first: got {got[~nan][mismatch[0]]!r} want {want[~nan][mismatch[0]]!r}"


def edge_values():
    """Bit patterns at and around every rounding case both types have, plus random ones."""
    rng = np.random.default_rng(1)
    hi = rng.integers(0, 1 << 16, 20000, dtype=np.uint32)
    lows = np.array([0, 1, 0x0FFF, 0x1000, 0x1001, 0x7FFF, 0x8000, 0x8001, 0xFFFF], dtype=np.uint32)
    ties = (hi[:, None] << 16 | lows[None, :]).ravel()
    special = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFBFFFFF,
                        1, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F7F8000, 0x477FF000, 0x477FEFFF,
                        0x33800000, 0x33000000, 0x33000001, 0x387FE000, 0x38800000], dtype=np.uint32)
    bits = np.concatenate([special, ties, rng.integers(0, 1 << 32, 50000, dtype=np.uint32)])
    return bits.view(np.float32)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_conversion_rounds_to_nearest_even(path, dtype):
    x = edge_values()
    t = ember.tensor(x)
    assert_same(widened(t.to(dtype)), round_to(x, dtype))
    # Strided and odd-length layouts take the same rounding.
    s = t[1::3]
    assert_same(widened(s.to(dtype)), round_to(x[1::3], dtype))


def test_unknown_and_unsupported_paths_are_refused():
    with pytest.raises(ValueError, match="expected one of"):
        ember._C._set_half_path("sse9")
    assert ember._C._get_half_path() == PATHS[-1]
    assert "scalar" in PATHS


UNARY = ["exp", "log", "sqrt", "tanh", "sigmoid", "sin", "neg", "abs", "relu", "floor", "erf", "reciprocal"]


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_unary_is_float32_then_rounded(path, dtype):
    rng = np.random.default_rng(2)
    base = ember.tensor(rng.uniform(0.05, 6, (37, 129)).astype(np.float32)).to(dtype)
    for t in [base, base.t(), base[:, ::2]]:
        x32 = t.to(ember.float32)
        for name in UNARY:
            got = getattr(ember, name)(t)
            assert got.dtype == dtype
            assert_same(widened(got), round_to(np.asarray(getattr(ember, name)(x32)), dtype))


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_binary_is_float32_then_rounded(path, dtype):
    rng = np.random.default_rng(3)
    a = ember.tensor(rng.uniform(-4, 4, (33, 70)).astype(np.float32)).to(dtype)
    b = ember.tensor(rng.uniform(0.5, 4, (33, 70)).astype(np.float32)).to(dtype)
    cases = [(a, b), (a, b.t().contiguous().t()), (a, b[0]), (a, b[:, :1]), (a, 1.7), (2.5, b)]
    # A Python number joins a half tensor's op as a value of the tensor's dtype (as in PyTorch).
    as_f32 = lambda v: v.to(ember.float32) if isinstance(v, ember.Tensor) else float(round_to(v, dtype))  # noqa: E731
    for x, y in cases:
        xf, yf = as_f32(x), as_f32(y)
        for name in ["add", "sub", "mul", "div", "pow", "maximum", "atan2"]:
            if name in ("pow", "atan2") and not isinstance(x, ember.Tensor):
                continue
            got = getattr(ember, name)(x, y)
            assert got.dtype == dtype
            assert_same(widened(got), round_to(np.asarray(getattr(ember, name)(xf, yf)), dtype))
    lt = ember.lt(a, b)
    np.testing.assert_array_equal(np.asarray(lt), widened(a) < widened(b))


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_in_place_ops_round_in_place(path, dtype):
    x = ember.linspace(-3, 3, 3001).to(dtype)
    want = round_to(widened(x) * np.float32(1.5) + np.float32(0.25), dtype)
    x.mul_(1.5)
    x.add_(0.25)
    # Two roundings: compare to the same two steps on float32 values.
    step1 = round_to(widened(ember.linspace(-3, 3, 3001).to(dtype)) * np.float32(1.5), dtype)
    assert_same(widened(x), round_to(step1 + np.float32(0.25), dtype))
    assert np.allclose(widened(x), want, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_reductions_accumulate_in_float32(path, dtype):
    ones = ember.ones(5000, dtype=dtype)
    # bfloat16 accumulation would stop at 256 (float16 at 2048); float32 sums reach 5000.
    assert widened(ones.sum()) == round_to(np.float32(5000), dtype)
    rng = np.random.default_rng(4)
    x = ember.tensor(rng.uniform(-2, 2, (64, 300)).astype(np.float32)).to(dtype)
    xf = widened(x).astype(np.float64)
    for name, ref in [("sum", np.sum), ("mean", np.mean), ("amax", np.max), ("amin", np.min)]:
        for dim in [None, 1, 0]:
            got = getattr(ember, name)(x) if dim is None else getattr(ember, name)(x, dim)
            want = ref(xf) if dim is None else ref(xf, axis=dim)
            # float32 sums round once: within one unit of the type's precision.
            ulp = 2.0 ** -7 if dtype == ember.bfloat16 else 2.0 ** -10
            np.testing.assert_allclose(widened(got), want, rtol=ulp, atol=ulp * 2)
    p = ember.tensor(rng.uniform(0.9, 1.1, 500).astype(np.float32)).to(dtype)
    np.testing.assert_allclose(widened(p.prod()), np.prod(widened(p).astype(np.float64)), rtol=2e-2)
    nan = ember.tensor([1.0, float("nan"), 3.0]).to(dtype)
    assert np.isnan(widened(nan.amax())) and np.isnan(widened(nan.sum()))


def bf16_exact_product(a, b):
    return widened(a).astype(np.float64) @ widened(b).astype(np.float64)


@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_matmul_matches_float64_reference(path, dtype):
    rng = np.random.default_rng(5)
    for m, k, n in [(1, 1, 1), (7, 13, 5), (33, 257, 65), (130, 64, 40)]:
        a = ember.tensor(rng.uniform(-1, 1, (m, k)).astype(np.float32)).to(dtype)
        b = ember.tensor(rng.uniform(-1, 1, (n, k)).astype(np.float32)).to(dtype).t()
        want = bf16_exact_product(a, b)
        got = a @ b
        assert got.dtype == dtype and tuple(got.shape) == (m, n)
        # float32 accumulation, one rounding at the end.
        ulp = 2.0 ** -8 if dtype == ember.bfloat16 else 2.0 ** -11
        np.testing.assert_allclose(widened(got), want, rtol=2 * ulp, atol=2 * ulp * np.sqrt(k))
    batch = ember.tensor(rng.uniform(-1, 1, (3, 9, 20)).astype(np.float32)).to(dtype)
    w = ember.tensor(rng.uniform(-1, 1, (3, 20, 11)).astype(np.float32)).to(dtype)
    np.testing.assert_allclose(widened(ember.bmm(batch, w)), widened(batch).astype(np.float64) @ widened(w), rtol=2e-2, atol=2e-2)
    c = ember.ones(9, 11, dtype=dtype)
    np.testing.assert_allclose(widened(ember.addmm(c, batch[0], w[0])), 1 + widened(batch[0]).astype(np.float64) @ widened(w[0]), rtol=2e-2, atol=2e-2)


def test_linear_and_conv_in_bfloat16(path):
    rng = np.random.default_rng(6)
    x = ember.tensor(rng.uniform(-1, 1, (4, 30)).astype(np.float32))
    lin = ember.nn.Linear(30, 7)
    want = lin(x)
    lin = lin.to(ember.bfloat16)
    got = lin(x.to(ember.bfloat16))
    assert got.dtype == ember.bfloat16
    np.testing.assert_allclose(widened(got), np.asarray(want.detach()), rtol=3e-2, atol=3e-2)
    img = ember.tensor(rng.uniform(-1, 1, (2, 3, 9, 9)).astype(np.float32))
    conv = ember.nn.Conv2d(3, 4, 3)
    want = conv(img)
    got = conv.to(ember.bfloat16)(img.to(ember.bfloat16))
    assert got.dtype == ember.bfloat16
    np.testing.assert_allclose(widened(got), np.asarray(want.detach()), rtol=3e-2, atol=3e-2)


@pytest.fixture
def restore_precision():
    yield
    ember.set_float32_matmul_precision("highest")


def test_matmul_precision_setting(restore_precision):
    assert ember.get_float32_matmul_precision() == "highest"
    for p in ["high", "medium", "highest"]:
        ember.set_float32_matmul_precision(p)
        assert ember.get_float32_matmul_precision() == p
    with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
        ember.set_float32_matmul_precision("HIGH")
    assert ember.get_float32_matmul_precision() == "highest"
    with pytest.raises(RuntimeError, match="expects a str, but got int"):
        ember.set_float32_matmul_precision(1)


def test_medium_precision_uses_bfloat16_operands(restore_precision):
    rng = np.random.default_rng(7)
    a = ember.tensor(rng.uniform(-1, 1, (40, 300)).astype(np.float32))
    b = ember.tensor(rng.uniform(-1, 1, (300, 50)).astype(np.float32))
    exact = np.asarray(a).astype(np.float64) @ np.asarray(b)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.set_float32_matmul_precision("high")
    np.testing.assert_allclose(np.asarray(a @ b), exact, rtol=1e-5, atol=1e-5)
    ember.set_float32_matmul_precision("medium")
    got = np.asarray(a @ b)
    assert (a @ b).dtype == ember.float32
    if "avx512bf16" in PATHS:
        rounded = widened(a.to(ember.bfloat16)).astype(np.float64) @ widened(b.to(ember.bfloat16))
        np.testing.assert_allclose(got, rounded, rtol=1e-5, atol=1e-4)
        assert np.abs(got - exact).max() > 1e-4  # really bfloat16 operands
        lin = np.asarray(ember.nn.functional.linear(a, b.t()))
        np.testing.assert_allclose(lin, rounded, rtol=1e-5, atol=1e-4)
    else:
        np.testing.assert_allclose(got, exact, rtol=1e-5, atol=1e-5)
