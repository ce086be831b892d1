import numpy as np
import pytest
import scipy.special as sp

import ember
import ember.nn.functional as F
from tensor_helpers import ALL, FLOATS, INTS, assert_close, layouts, to_np

SHAPES = [(5, 7), (3, 4, 6), (), (0, 3), (70000,)]

FLOAT_UNARY = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "erf": sp.erf, "erfc": sp.erfc,
    "sigmoid": sp.expit, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.round,
    "frac": lambda x: x - np.trunc(x), "abs": np.abs, "neg": np.negative, "sign": np.sign,
    "square": np.square, "reciprocal": lambda x: 1 / x, "relu": lambda x: np.maximum(x, 0),
}
POSITIVE_UNARY = {"log": np.log, "log2": np.log2, "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x)}
UNIT_UNARY = {"asin": np.arcsin, "acos": np.arccos}


def _check_unary(name, ref, dtype, low, high, shape):
    for layout, t, a in layouts(shape, dtype, low, high) if shape != () else [("0-d", ember.tensor(0.3).to(dtype), np.float64(to_np(ember.tensor(0.3).to(dtype))))]:
        got = getattr(ember, name)(t)
        assert got.shape == t.shape, layout
        assert got.dtype == dtype
        # Reference on the already-rounded input; the output is rounded once more.
        want = ref(np.asarray(a, dtype=np.float64))
        tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6, "float64": 1e-12}[dtype.name]
        assert_close(got, want, dtype, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
def test_unary_float_parity(name, dtype):
    for shape in SHAPES:
        _check_unary(name, FLOAT_UNARY[name], dtype, -3, 3, shape)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(POSITIVE_UNARY) + sorted(UNIT_UNARY))
def test_unary_domain_parity(name, dtype):
    ref, (low, high) = (POSITIVE_UNARY[name], (0.1, 5)) if name in POSITIVE_UNARY else (UNIT_UNARY[name], (-0.95, 0.95))
    for shape in SHAPES[:3]:
        _check_unary(name, ref, dtype, low, high, shape)


ACTIVATIONS = {
    "gelu": (lambda x: ember.nn.functional.gelu(x), lambda x: 0.5 * x * (1 + sp.erf(x / np.sqrt(2)))),
    "gelu_tanh": (lambda x: ember.nn.functional.gelu(x, approximate="tanh"), lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))),
    "silu": (ember.nn.functional.silu, lambda x: x * sp.expit(x)),
    "mish": (ember.nn.functional.mish, lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "selu": (ember.nn.functional.selu, lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
    "elu": (lambda x: ember.nn.functional.elu(x, 0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    "leaky_relu": (lambda x: ember.nn.functional.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    "softplus": (lambda x: ember.nn.functional.softplus(x, 2.0, 3.0), lambda x: np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2)),
    "hardswish": (ember.nn.functional.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
    "hardsigmoid": (ember.nn.functional.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "relu6": (ember.nn.functional.relu6, lambda x: np.clip(x, 0, 6)),
    "hardtanh": (lambda x: ember.nn.functional.hardtanh(x, -0.5, 2), lambda x: np.clip(x, -0.5, 2)),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_parity(name, dtype):
    fn, ref = ACTIVATIONS[name]
    for layout, t, a in layouts((33, 17), dtype, -6, 6) + layouts((70000,), dtype, -6, 6):
        tol = {"float16": 3e-3, "bfloat16": 2e-2, "float32": 2e-6, "float64": 1e-12}[dtype.name]
        assert_close(fn(t), ref(a.astype(np.float64)), dtype, rtol=tol, atol=tol)


def test_float_ops_on_integers_compute_in_float32():
    x = ember.tensor([1, 2, 3])
    assert ember.exp(x).dtype == ember.float32 and ember.sqrt(x).dtype == ember.float32
    assert ember.abs(ember.tensor([-3])).dtype == ember.int64 and ember.abs(ember.tensor([-3])).item() == 3
    assert ember.floor(x).dtype == ember.int64
    assert ember.sign(ember.tensor([-5, 0, 5], dtype=ember.int8)).tolist() == [-1, 0, 1]


def test_special_values():
    x = ember.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-40])
    assert to_np(ember.isnan(x)).tolist() == [True, False, False, False, False, False]
    assert to_np(ember.isinf(x)).tolist() == [False, True, True, False, False, False]
    assert to_np(ember.isfinite(x)).tolist() == [False, False, False, True, True, True]
    np.testing.assert_array_equal(to_np(ember.exp(x))[:3], [np.nan, np.inf, 0.0])
    assert to_np(ember.nan_to_num(x))[1] == np.finfo(np.float32).max
    assert ember.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0).tolist()[:3] == [1.0, 2.0, -2.0]
    assert ember.relu(ember.tensor([float("nan")])).isnan().item()
    assert ember.clamp(ember.tensor([float("nan")]), 0, 1).isnan().item()
    assert ember.round(ember.tensor([0.5, 1.5, 2.5, -0.5])).tolist() == [0.0, 2.0, 2.0, -0.0]


BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "maximum": np.maximum,
    "minimum": np.minimum, "atan2": np.arctan2, "hypot": np.hypot, "fmod": np.fmod, "remainder": np.mod,
    "floor_divide": np.floor_divide, "pow": np.power,
}
COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY) + sorted(COMPARE))
def test_binary_float_parity_with_broadcasting(name, dtype):
    ref = BINARY.get(name) or COMPARE[name]
    low = 0.5 if name == "pow" else -3
    for (la, a, na), (lb, b, nb) in zip(layouts((6, 5), dtype, low, 3, seed=1), layouts((6, 5), dtype, 0.5, 3, seed=2)):
        for x, y, nx, ny in [(a, b, na, nb), (a, b[0], na, nb[0]), (a[:, :1], b, na[:, :1], nb)]:
            got = getattr(ember, name)(x, y)
            want = ref(nx.astype(np.float64), ny.astype(np.float64))
            if name in COMPARE:
                assert to_np(got).tolist() == want.tolist(), (la, lb)
            else:
                assert_close(got, want, dtype, rtol=2 * float(np.finfo(np.float16).eps) if dtype.name == "float16" else None)


@pytest.mark.parametrize("dtype", INTS, ids=str)
def test_binary_integer_parity(dtype):
    for (_, a, na), (_, b, nb) in zip(layouts((4, 9), dtype, seed=3), layouts((4, 9), dtype, seed=4)):
        nb = np.where(nb == 0, 3, nb)
        b = ember.tensor(nb).to(dtype)
        npdt = np.dtype(dtype.name)
        for name, ref in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("floor_divide", np.floor_divide),
                          ("remainder", np.mod), ("fmod", np.fmod), ("maximum", np.maximum), ("bitwise_and", np.bitwise_and),
                          ("bitwise_or", np.bitwise_or), ("bitwise_xor", np.bitwise_xor)]:
            got = getattr(ember, name)(a, b)
            assert got.dtype == dtype, name
            want = ref(na.astype(npdt), nb.astype(npdt))
            np.testing.assert_array_equal(to_np(got), want, err_msg=name)


def test_scalar_operands_and_reflected_ops():
    x = ember.tensor([1.0, 2.0, 4.0])
    assert (2 - x).tolist() == [1.0, 0.0, -2.0]
    assert (1 / x).tolist() == [1.0, 0.5, 0.25]
    assert (2 ** x).tolist() == [2.0, 4.0, 16.0]
    assert (x ** 2).tolist() == [1.0, 4.0, 16.0]
    assert (-x).tolist() == [-1.0, -2.0, -4.0] and abs(-x).tolist() == [1.0, 2.0, 4.0]
    assert (x > 1.5).tolist() == [False, True, True] and (x == 2).tolist() == [False, True, False]
    i = ember.tensor([5, -5])
    assert (i // 2).tolist() == [2, -3] and (i % 3).tolist() == [2, 1]
    assert (~ember.tensor([True, False])).tolist() == [False, True] and (~ember.tensor([0], dtype=ember.int8)).tolist() == [-1]
    assert (ember.tensor([6]) & 3).tolist() == [2] and (ember.tensor([1]) << 3).tolist() == [8]
    assert ember.add(x, x, alpha=2).tolist() == [3.0, 6.0, 12.0]
    assert ember.div(ember.tensor([-7, 7]), 2, rounding_mode="trunc").tolist() == [-3, 3]
    assert ember.div(ember.tensor([-7.0, 7.0]), 2, rounding_mode="floor").tolist() == [-4.0, 3.0]


@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_inplace_and_out_variants(dtype):
    x = ember.ones(3, 4, dtype=dtype)
    t = x.t()
    ptr = x.data_ptr()
    one = True if dtype == ember.bool else 1
    t.add_(one)
    assert x.data_ptr() == ptr and to_np(x).tolist() == to_np(ember.ones(3, 4, dtype=dtype) + one).tolist()
    out = ember.empty(3, 4, dtype=dtype)
    ember.mul(x, x, out=out)
    assert out.data_ptr() != ptr and to_np(out).tolist() == to_np(x * x).tolist()
    if dtype.is_floating_point:
        y = ember.full((2, 2), 4.0, dtype=dtype)
        assert y.sqrt_() is y and to_np(y).tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_inplace_refusals_and_out_errors():
    i = ember.tensor([1, 2])
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        i.div_(2)
    with pytest.raises(RuntimeError, match="can't be cast"):
        i.exp_()
    with pytest.warns(UserWarning, match="was resized"):  # out= is resized, as PyTorch's
        ember.add(ember.zeros(3), ember.zeros(3), out=ember.zeros(4))
    x = ember.zeros(3)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        x.add_(ember.zeros(2, 3))


def test_broadcast_errors_name_both_shapes():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor b \(4\).*\[2, 3\] and \[4\]"):
        ember.zeros(2, 3) + ember.zeros(4)
    with pytest.raises(TypeError, match="unsupported operand"):
        ember.zeros(2) + "a"
    with pytest.raises(TypeError, match="Tensor or a number"):
        ember.add(ember.zeros(2), "a")
    with pytest.raises(TypeError, match="bool tensor is not supported"):
        -ember.tensor([True])
    with pytest.raises(TypeError, match="bool tensors is not supported"):
        ember.tensor([True]) - ember.tensor([False])
    with pytest.raises(TypeError, match="integer and bool"):
        ember.zeros(2) & ember.zeros(2)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.tensor([1]) // 0
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.exp([1.0])


def test_where_lerp_clamp():
    c = ember.tensor([True, False, True])
    a, b = ember.tensor([1.0, 2.0, 3.0]), ember.tensor([10, 20, 30])
    assert ember.where(c, a, b).tolist() == [1.0, 20.0, 3.0] and ember.where(c, a, b).dtype == ember.float32
    assert ember.where(c, a, 0.0).tolist() == [1.0, 0.0, 3.0]
    assert ember.where(c[:, None], a, b).shape == (3, 3)
    with pytest.raises(TypeError, match="boolean"):
        ember.where(a, a, b)
    np.testing.assert_allclose(ember.lerp(a, a * 3, 0.5).numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_allclose(ember.lerp(a, a * 3, ember.tensor([0.0, 0.5, 1.0])).numpy(), [1.0, 4.0, 9.0])
    assert ember.clamp(a, 1.5, 2.5).tolist() == [1.5, 2.0, 2.5] and ember.clamp(a, max=2).tolist() == [1.0, 2.0, 2.0]
    assert ember.clamp(b, 15, 25).tolist() == [15, 20, 25] and ember.clamp(b, 15, 25).dtype == ember.int64
    assert ember.clamp(a, ember.tensor([2.0, 0.0, 0.0]), 2.5).tolist() == [2.0, 2.0, 2.5]
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        ember.clamp(a)


def test_logical_ops():
    a, b = ember.tensor([0, 1, 2]), ember.tensor([0.0, 0.0, 3.0])
    assert ember.logical_and(a, b).tolist() == [False, False, True]
    assert ember.logical_or(a, b).tolist() == [False, True, True]
    assert ember.logical_xor(a, b).tolist() == [False, True, False]
    assert ember.logical_not(a).tolist() == [True, False, False]


def test_elementwise_allocates_exactly_its_output():
    x = ember.zeros(1000, 1000)
    y = x + 1
    assert y.numel() == x.numel() and y.is_contiguous() and not y._same_storage(x)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int32], ids=str)
def test_inplace_ops_on_runs_longer_than_a_block_equal_out_of_place(dtype):
    """An in-place op reads its input in blocks (see backend/cpu/map.rs): runs of odd lengths
    around the block size, contiguous and channels-last, give the out-of-place result."""
    rng = np.random.default_rng(40)
    for shape in [(1,), (127,), (129,), (1000,), (2, 7, 9, 11)]:
        src = ember.tensor(rng.standard_normal(shape) * 4).to(dtype)
        other = ember.tensor(rng.standard_normal(shape) * 4).to(dtype)
        if len(shape) == 4:
            src, other = (t.contiguous(memory_format=ember.channels_last) for t in (src, other))
        checks = [(lambda t: t.add_(other), lambda t: t + other), (lambda t: t.mul_(3), lambda t: t * 3),
                  (lambda t: t.sub_(other[..., :1]), lambda t: t - other[..., :1]),
                  (lambda t: ember.sub(other, t, out=t), lambda t: other - t)]
        if dtype.is_floating_point:
            checks += [(lambda t: F.silu(t, inplace=True), F.silu), (lambda t: F.relu(t, inplace=True), F.relu),
                       (lambda t: F.hardswish(t, inplace=True), F.hardswish), (lambda t: t.exp_(), ember.exp)]
        for inplace, out_of_place in checks:
            t = src.clone()
            inplace(t)
            np.testing.assert_allclose(to_np(t), to_np(out_of_place(src)), rtol=1e-6)


def test_float32_sin_cos_within_one_ulp_over_the_whole_range():
    """float32 sin/cos run a vectorised range reduction up to |x| = 2^20 and libm beyond it (and
    for inf/NaN); both sides of that limit, in-place and strided, stay within one ulp."""
    rng = np.random.default_rng(41)
    mags = np.concatenate([np.logspace(-40, 38, 6000), [0.0, 2.0**20, np.nextafter(2.0**20, 3e6), 1e7, 3.4e38],
                           np.round(rng.uniform(0, 6e5, 3000)) * np.pi / 2, rng.uniform(-4, 4, 3000)])
    x32 = np.concatenate([mags, -mags, [np.inf, -np.inf, np.nan]]).astype(np.float32)
    x = ember.tensor(x32)
    for name, ref in [("sin", np.sin), ("cos", np.cos)]:
        every = ref(x32.astype(np.float64)).astype(np.float32)
        strided_in_place = x.clone()[::3]
        getattr(strided_in_place, name + "_")()
        for got, want in [(getattr(ember, name)(x), every), (getattr(ember, name)(x[1::2]), every[1::2]),
                          (getattr(x.clone(), name + "_")(), every), (strided_in_place, every[::3])]:
            got = to_np(got)
            assert np.array_equal(np.isnan(got), np.isnan(want)), name
            ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
            assert ulps[~np.isnan(want)].max() <= 1, (name, x32[~np.isnan(want)][ulps[~np.isnan(want)].argmax()])


def test_inplace_op_with_itself_as_both_operands():
    x = ember.arange(300, dtype=ember.float32)
    x.add_(x)
    assert to_np(x).tolist() == [2.0 * i for i in range(300)]
