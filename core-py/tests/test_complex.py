"""Complex dtypes: promotion, NumPy interop, repr, elementwise ops and reductions against NumPy,
zero-copy views, refusals of the ops PyTorch does not define on complex, and gradients."""
import pickle

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

RNG = np.random.default_rng(0)


def crandn(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


# ---- dtypes and promotion ----

def test_dtype_objects_and_aliases():
    assert ember.cfloat is ember.complex64 and ember.cdouble is ember.complex128 and ember.chalf is ember.complex32
    assert ember.complex64.is_complex and not ember.complex64.is_floating_point
    assert ember.complex64.itemsize == 8 and ember.complex128.itemsize == 16 and ember.complex32.itemsize == 4
    assert ember.complex64.to_real() == ember.float32 and ember.float64.to_complex() == ember.complex128
    assert ember.float16.to_complex() == ember.complex32
    with pytest.raises(RuntimeError):
        ember.int64.to_complex()
    assert pickle.loads(pickle.dumps(ember.complex32)) is ember.complex32


@pytest.mark.parametrize("a,b,want", [
    ("float64", "complex64", "complex128"), ("float16", "complex32", "complex32"), ("bfloat16", "complex32", "complex64"),
    ("int64", "complex32", "complex32"), ("bool", "complex64", "complex64"), ("complex32", "complex64", "complex64"),
    ("float32", "complex128", "complex128"), ("uint8", "complex128", "complex128"),
])
def test_promote_types_matches_pytorch(a, b, want):
    A, B = getattr(ember, a), getattr(ember, b)
    assert ember.promote_types(A, B) == getattr(ember, want)
    assert ember.promote_types(B, A) == getattr(ember, want)


def test_python_complex_scalars_keep_the_float_precision():
    assert (ember.ones(2) + 1j).dtype == ember.complex64
    assert (ember.ones(2, dtype=ember.float64) * 1j).dtype == ember.complex128
    assert (ember.ones(2, dtype=ember.float16) + 1j).dtype == ember.complex32
    assert (ember.ones(2, dtype=ember.int64) + 1j).dtype == ember.complex64
    assert ember.result_type(ember.tensor(1j, dtype=ember.complex128), ember.ones(2, dtype=ember.float16)) == ember.complex32
    assert ember.result_type(ember.ones(2), 2j) == ember.complex64
    np.testing.assert_allclose((ember.ones(2) * (2 - 1j)).numpy(), [2 - 1j, 2 - 1j])


def test_is_complex_and_creation():
    z = ember.tensor([1 + 2j, 3])
    assert z.dtype == ember.complex64 and z.is_complex() and ember.is_complex(z) and not z.is_floating_point()
    assert ember.zeros(2, dtype=ember.complex128).tolist() == [0j, 0j]
    assert ember.full((2,), 1 - 1j).dtype == ember.complex64
    assert ember.ones(2, dtype=ember.complex32).tolist() == [1 + 0j, 1 + 0j]
    assert ember.eye(2, dtype=ember.complex64).tolist() == [[1, 0], [0, 1]]
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor([1j]).dtype == ember.complex128
    finally:
        ember.set_default_dtype(ember.float32)


def test_randn_complex_has_unit_variance_split_over_parts():
    z = ember.randn(20000, dtype=ember.complex64).numpy()
    assert abs(z.real.var() - 0.5) < 0.03 and abs(z.imag.var() - 0.5) < 0.03
    u = ember.rand(1000, dtype=ember.complex128).numpy()
    assert (u.real >= 0).all() and (u.imag < 1).all() and u.imag.std() > 0.2


# ---- NumPy interop, item, tolist, repr ----

@pytest.mark.parametrize("np_dtype", [np.complex64, np.complex128])
def test_numpy_round_trip_is_zero_copy(np_dtype):
    a = crandn(3, 4, dtype=np_dtype)
    t = ember.from_numpy(a)
    assert t.dtype == (ember.complex64 if np_dtype == np.complex64 else ember.complex128)
    t[0, 0] = 5 - 5j
    assert a[0, 0] == 5 - 5j
    back = t.numpy()
    back[1, 1] = 7j
    assert t[1, 1].item() == 7j
    np.testing.assert_array_equal(ember.tensor(a).numpy(), a)
    np.testing.assert_array_equal(ember.from_numpy(a[:, ::2].T).numpy(), a[:, ::2].T)


def test_complex32_has_no_numpy_dtype():
    t = ember.tensor([1.5 + 2j], dtype=ember.complex32)
    with pytest.raises(TypeError, match="ComplexHalf"):
        t.numpy()
    assert t.tolist() == [1.5 + 2j]
    assert t.item() == 1.5 + 2j
    assert pickle.loads(pickle.dumps(t)).tolist() == [1.5 + 2j]


def test_item_and_tolist_give_python_complex():
    t = ember.tensor([[1 + 2j, 3 - 4j]], dtype=ember.complex128)
    assert isinstance(t[0, 1].item(), complex) and t[0, 1].item() == 3 - 4j
    assert t.tolist() == [[1 + 2j, 3 - 4j]]
    assert complex(ember.tensor(2 + 1j)) == 2 + 1j


def test_repr_like_pytorch():
    assert repr(ember.tensor([1 + 2j, 3 - 4j])) == "tensor([1.+2.j, 3.-4.j])"
    assert repr(ember.tensor([1 + 2j], dtype=ember.complex128)) == "tensor([1.+2.j], dtype=ember.complex128)"
    assert repr(ember.tensor([1.5 + 2j], dtype=ember.complex32)) == "tensor([1.5000+2.j], dtype=ember.complex32)"
    assert repr(ember.tensor(1 + 2j)) == "tensor(1.+2.j)"
    assert repr(ember.tensor([[1e10 + 2j, 3 - 4j]])) == "tensor([[1.0000e+10+2.j, 3.0000e+00-4.j]])"


def test_casts_between_real_and_complex():
    z = ember.tensor([1.5 - 2j, -3 + 0.5j], dtype=ember.complex128)
    assert z.float().tolist() == [1.5, -3.0]
    assert z.to(ember.complex32).to(ember.complex64).tolist() == [1.5 - 2j, -3 + 0.5j]
    assert ember.tensor([1, 2]).to(ember.complex64).tolist() == [1, 2]
    assert z.bool().tolist() == [True, True]
    assert ember.tensor([0j]).bool().tolist() == [False]


# ---- elementwise ----

UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "reciprocal", "neg", "square", "exp2",
         "expm1", "log2", "log10", "log1p", "asin", "acos", "atan", "rsqrt", "sigmoid"]
NUMPY = {"reciprocal": lambda a: 1 / a, "neg": np.negative, "rsqrt": lambda a: 1 / np.sqrt(a),
         "sigmoid": lambda a: 1 / (1 + np.exp(-a)), "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan}


@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_numpy(name):
    a = crandn(5, 3)
    ref = NUMPY.get(name, getattr(np, name, None))(a)
    np.testing.assert_allclose(getattr(ember, name)(ember.from_numpy(a)).numpy(), ref, rtol=1e-10, atol=1e-12)
    got32 = getattr(ember, name)(ember.from_numpy(a.astype(np.complex64))).numpy()
    assert got32.dtype == np.complex64
    np.testing.assert_allclose(got32, ref, rtol=2e-5, atol=2e-5)


def test_abs_angle_sgn_conj_and_predicates():
    a = crandn(7)
    a[0] = 0
    t = ember.from_numpy(a)
    assert ember.abs(t).dtype == ember.float64
    np.testing.assert_allclose(ember.abs(t).numpy(), np.abs(a))
    np.testing.assert_allclose(ember.angle(t).numpy(), np.angle(a))
    np.testing.assert_allclose(ember.sgn(t).numpy(), np.where(a == 0, 0, a / np.where(a == 0, 1, np.abs(a))))
    np.testing.assert_array_equal(ember.conj(t).numpy(), np.conj(a))
    np.testing.assert_array_equal(t.conj_physical().numpy(), np.conj(a))
    assert ember.resolve_conj(t) is t and not t.is_conj()
    np.testing.assert_array_equal(ember.angle(ember.tensor([-1.0, 2.0])).numpy(), np.angle([-1.0, 2.0]).astype(np.float32))
    b = np.array([complex(np.nan, 1), complex(1, np.inf), 1 + 1j])
    tb = ember.from_numpy(b)
    assert ember.isnan(tb).tolist() == [True, False, False]
    assert ember.isinf(tb).tolist() == [False, True, False]
    assert ember.isfinite(tb).tolist() == [False, False, True]
    assert ember.abs(ember.tensor([3 + 4j], dtype=ember.complex32)).dtype == ember.float16


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"])
def test_binary_matches_numpy_with_broadcasting(op):
    a, b = crandn(4, 1), crandn(3)
    ref = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power}[op](a, b)
    got = getattr(ember, op)(ember.from_numpy(a), ember.from_numpy(b)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    mixed = getattr(ember, op)(ember.from_numpy(a), ember.from_numpy(b.real.copy())).numpy()
    np.testing.assert_allclose(mixed, {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power}[op](a, b.real), rtol=1e-10)


def test_division_does_not_overflow_for_large_parts():
    a = np.array([1e300 + 1e300j])
    got = (ember.from_numpy(a) / ember.from_numpy(a)).numpy()
    np.testing.assert_allclose(got, [1 + 0j])


def test_complex32_arithmetic_computes_in_complex64():
    a, b = crandn(6, dtype=np.complex64), crandn(6, dtype=np.complex64)
    ta, tb = ember.from_numpy(a).to(ember.complex32), ember.from_numpy(b).to(ember.complex32)
    for op, ref in [("add", a + b), ("mul", a * b), ("div", a / b)]:
        got = getattr(ember, op)(ta, tb)
        assert got.dtype == ember.complex32
        np.testing.assert_allclose(np.array(got.tolist()), ref, rtol=5e-3, atol=5e-3)
    np.testing.assert_allclose(np.array(ember.exp(ta).tolist()), np.exp(a), rtol=5e-3, atol=5e-3)


def test_equality_and_logical_ops():
    t = ember.tensor([1 + 1j, 2, 0j])
    assert (t == ember.tensor([1 + 1j, 2 + 1j, 0])).tolist() == [True, False, True]
    assert (t != 2).tolist() == [True, False, True]
    assert ember.logical_not(t).tolist() == [False, False, True]
    assert ember.logical_and(t, t).tolist() == [True, True, False]


@pytest.mark.parametrize("fn", [
    lambda t: t < t, lambda t: ember.maximum(t, t), lambda t: ember.floor(t), lambda t: ember.sign(t),
    lambda t: ember.clamp(t, 0, 1), lambda t: ember.relu(t), lambda t: t.max(), lambda t: t.amax(), lambda t: ember.sort(t),
    lambda t: ember.remainder(t, t), lambda t: ember.atan2(t, t), lambda t: ember.erf(t), lambda t: t.cummax(0),
    lambda t: ember.softmax(t, 0),
])
def test_ops_pytorch_does_not_define_on_complex_raise(fn):
    with pytest.raises((RuntimeError, TypeError)):
        fn(ember.tensor([1 + 1j, 2 - 1j]))


def test_isposinf_refuses_complex_with_typeerror():
    with pytest.raises(TypeError, match="does not support complex"):
        ember.isposinf(ember.tensor([1j]))


# ---- views ----

def test_view_as_real_shares_memory():
    a = crandn(3, 4)
    t = ember.from_numpy(a)
    r = ember.view_as_real(t)
    assert r.shape == (3, 4, 2) and r.stride() == (8, 2, 1) and r.dtype == ember.float64
    r[1, 2, 1] = 42.0
    assert a[1, 2].imag == 42.0
    s = ember.view_as_real(t[:, 1::2].T)
    assert s.stride() == (4, 8, 1) and s.storage_offset() == 2
    np.testing.assert_array_equal(s.numpy(), np.stack([a[:, 1::2].T.real, a[:, 1::2].T.imag], -1))


def test_view_as_complex_shares_memory_and_checks_layout():
    f = RNG.standard_normal((3, 4, 2)).astype(np.float32)
    t = ember.from_numpy(f)
    z = ember.view_as_complex(t)
    assert z.dtype == ember.complex64 and z.shape == (3, 4)
    z[0, 0] = 9 + 8j
    assert tuple(f[0, 0]) == (9.0, 8.0)
    assert ember.view_as_complex(ember.ones(3, 2, dtype=ember.float16)).dtype == ember.complex32
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        ember.view_as_complex(ember.ones(3))
    with pytest.raises(RuntimeError, match="stride 1"):
        ember.view_as_complex(ember.ones(2, 3).T)
    with pytest.raises(RuntimeError, match="storage_offset divisible by 2"):
        ember.view_as_complex(ember.ones(7)[1:].view(3, 2))
    with pytest.raises(NotImplementedError, match="Long"):
        ember.view_as_complex(ember.ones(3, 2, dtype=ember.int64))
    with pytest.raises(TypeError, match="only supported for complex"):
        ember.view_as_real(ember.ones(3))


def test_real_and_imag_are_views():
    a = crandn(4)
    t = ember.from_numpy(a)
    t.real[0] = 100.0
    t.imag[1] = -7.0
    assert a[0].real == 100.0 and a[1].imag == -7.0
    t.imag = ember.zeros(4, dtype=ember.float64)
    assert (a.imag == 0).all()
    x = ember.ones(2)
    assert ember.real(x) is x or ember.real(x).data_ptr() == x.data_ptr()
    with pytest.raises(TypeError, match="non-complex"):
        ember.imag(x)


def test_complex_and_polar():
    re, im = RNG.standard_normal(3), RNG.standard_normal((2, 1))
    np.testing.assert_allclose(ember.complex(ember.from_numpy(re), ember.from_numpy(im)).numpy(), re + 1j * im)
    ab, ang = np.abs(re), im
    np.testing.assert_allclose(ember.polar(ember.from_numpy(ab), ember.from_numpy(ang)).numpy(), ab * np.exp(1j * ang))
    with pytest.raises(RuntimeError, match="scalar type Float"):
        ember.complex(ember.ones(2), ember.ones(2, dtype=ember.float64))
    with pytest.raises(NotImplementedError, match="Half, Float or Double"):
        ember.complex(ember.ones(2, dtype=ember.int64), ember.ones(2, dtype=ember.int64))


# ---- reductions, matmul, indexing ----

def test_reductions_match_numpy():
    a = crandn(4, 5)
    t = ember.from_numpy(a)
    np.testing.assert_allclose(t.sum().item(), a.sum())
    np.testing.assert_allclose(t.sum(0).numpy(), a.sum(0))
    np.testing.assert_allclose(t.mean(1, keepdim=True).numpy(), a.mean(1, keepdims=True))
    np.testing.assert_allclose(t.prod(1).numpy(), a.prod(1))
    np.testing.assert_allclose(t.T.sum(1).numpy(), a.T.sum(1))
    assert ember.tensor([0j, 1]).count_nonzero().item() == 1
    assert ember.tensor([0j, 1j]).any().item() and not ember.tensor([0j, 1j]).all().item()
    h = ember.from_numpy(a.astype(np.complex64)).to(ember.complex32)
    assert h.sum().dtype == ember.complex32
    np.testing.assert_allclose(complex(h.sum().item()), a.sum(), rtol=1e-2)


@pytest.mark.parametrize("np_dtype", [np.complex64, np.complex128])
def test_matmul_complex(np_dtype):
    a, b = crandn(2, 5, 7, dtype=np_dtype), crandn(7, 3, dtype=np_dtype)
    tol = 1e-4 if np_dtype == np.complex64 else 1e-12
    np.testing.assert_allclose((ember.from_numpy(a) @ ember.from_numpy(b)).numpy(), a @ b, rtol=tol, atol=tol)
    np.testing.assert_allclose((ember.from_numpy(a[0].T.copy()).T @ ember.from_numpy(b)).numpy(), a[0] @ b, rtol=tol, atol=tol)


def test_matmul_complex32_through_complex64():
    a = crandn(3, 4, dtype=np.complex64)
    t = ember.from_numpy(a).to(ember.complex32)
    r = t @ t.T
    assert r.dtype == ember.complex32
    np.testing.assert_allclose(np.array(r.tolist()), a @ a.T, rtol=2e-2, atol=2e-2)


def test_indexing_cat_where_on_complex():
    a = crandn(5, 3)
    t = ember.from_numpy(a)
    np.testing.assert_array_equal(t[[0, 2]].numpy(), a[[0, 2]])
    np.testing.assert_array_equal(t[t.real > 0].numpy(), a[a.real > 0])
    np.testing.assert_array_equal(ember.cat([t, t]).numpy(), np.concatenate([a, a]))
    np.testing.assert_array_equal(ember.where(t.real > 0, t, 0).numpy(), np.where(a.real > 0, a, 0))
    np.testing.assert_array_equal(t.flip(0).contiguous().numpy(), a[::-1])
    np.testing.assert_array_equal(t.masked_fill(t.real > 0, 1j).numpy(), np.where(a.real > 0, 1j, a))
    np.testing.assert_array_equal(ember.tril(t).numpy(), np.tril(a))


# ---- gradients (conjugate Wirtinger) ----

def _z(*shape):
    return ember.from_numpy(crandn(*shape)).requires_grad_()


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "tanh", "sigmoid", "reciprocal", "abs", "angle", "sgn",
                                  "conj_physical", "square", "asin", "atan", "log1p", "expm1"])
def test_gradcheck_unary(name):
    assert gradcheck(getattr(ember, name), (_z(3),))


@pytest.mark.parametrize("fn", [lambda a, b: a * b, lambda a, b: a / b, lambda a, b: a - b, lambda a, b: a ** b])
def test_gradcheck_binary(fn):
    assert gradcheck(fn, (_z(3), _z(3)))


@pytest.mark.parametrize("fn", [ember.real, ember.imag, ember.view_as_real, ember.conj, lambda a: a.sum(), lambda a: a.prod(),
                                lambda a: a.mean(), lambda a: a @ a.T, lambda a: (a.abs() ** 2).sum()])
def test_gradcheck_views_and_reductions(fn):
    assert gradcheck(fn, (_z(2, 2),))


def test_gradcheck_real_inputs_into_complex():
    x = ember.from_numpy(RNG.standard_normal(3)).requires_grad_()
    y = ember.from_numpy(RNG.standard_normal(3)).requires_grad_()
    assert gradcheck(lambda a, b: ember.complex(a, b) ** 2, (x, y))
    assert gradcheck(lambda a, b: ember.polar(a, b), (x, y))
    assert gradcheck(lambda a: ember.view_as_complex(a.reshape(1, 3).expand(2, 3).T.contiguous()[:, :2].contiguous()), (x,))
    assert gradcheck(lambda a: a * (1 + 2j), (x,))


def test_abs_squared_gradient_is_twice_z():
    z = _z(4)
    (z.abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * z.detach().numpy())


def test_torch_parity_for_gradients():
    torch = pytest.importorskip("torch")
    a = crandn(4)
    z, tz = _z(4), torch.tensor(a, requires_grad=True)
    with ember.no_grad():
        z.copy_(ember.from_numpy(a))
    (ember.sin(z) * z.conj_physical()).abs().sum().backward()
    (torch.sin(tz) * tz.conj()).abs().sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), tz.grad.numpy(), rtol=1e-10)


# ---- complex convolution ----

@pytest.mark.parametrize("dims,kw", [(1, dict(stride=2, padding=1)), (2, dict(padding="same")), (2, dict(groups=2, dilation=2))])
def test_complex_conv_matches_torch(dims, kw):
    torch = pytest.importorskip("torch")
    x = crandn(2, 4, *([9] * dims))
    w = crandn(6, 4 // kw.get("groups", 1), *([3] * dims))
    b = crandn(6)
    fn = getattr(ember.nn.functional, f"conv{dims}d")
    tfn = getattr(torch.nn.functional, f"conv{dims}d")
    got = fn(ember.from_numpy(x), ember.from_numpy(w), ember.from_numpy(b), **kw)
    want = tfn(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), **kw)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-10)


def test_complex_conv_gradcheck_and_dtype_checks():
    x, w = _z(1, 2, 5), _z(3, 2, 2)
    assert gradcheck(lambda a, b: ember.nn.functional.conv1d(a, b), (x, w))
    with pytest.raises(RuntimeError, match="should be the same"):
        ember.nn.functional.conv1d(ember.ones(1, 2, 5, dtype=ember.complex64), ember.ones(3, 2, 2))
    h = ember.nn.functional.conv2d(ember.ones(1, 1, 3, 3, dtype=ember.complex32), ember.ones(1, 1, 2, 2, dtype=ember.complex32) * 1j)
    assert h.dtype == ember.complex32 and h.tolist()[0][0][0] == [4j, 4j]


def test_scatter_index_add_and_indexing_gradients_on_complex():
    a = crandn(3, 4)
    t = ember.from_numpy(a.copy())
    idx = ember.tensor([[0, 1, 2, 0]])
    src = ember.from_numpy(crandn(1, 4))
    want = a.copy()
    want[idx.numpy()[0], np.arange(4)] = src.numpy()[0]
    np.testing.assert_array_equal(t.scatter(0, idx, src).numpy(), want)
    added = ember.zeros(3, 4, dtype=ember.complex128).index_add(0, ember.tensor([0, 2, 0]), ember.from_numpy(a))
    np.testing.assert_allclose(added.numpy(), np.stack([a[0] + a[2], np.zeros(4), a[1]]))
    with pytest.raises(NotImplementedError):
        t.scatter_reduce(0, idx, src, "amax")
    z = _z(5)
    assert gradcheck(lambda v: v[ember.tensor([0, 3, 3])] * 2j, (z,))
    assert gradcheck(lambda v: v.gather(0, ember.tensor([4, 4, 1])), (z,))
    assert gradcheck(lambda v: v.index_select(0, ember.tensor([1, 1])), (z,))
