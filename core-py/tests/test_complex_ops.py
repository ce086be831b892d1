"""Complex scans (cumsum/cumprod/logcumsumexp), linspace/logspace with complex ends, arange's
refusals, scatter_reduce's reductions and transposed convolutions on complex tensors: parity
with PyTorch (or NumPy) and gradients checked by gradcheck on complex128."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

RNG = np.random.default_rng(7)
F = ember.nn.functional


def crandn(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _z(*shape):
    return ember.from_numpy(crandn(*shape)).requires_grad_()


# ---- scans ----

@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_cumprod_match_numpy(dtype, dim):
    a = crandn(4, 5, dtype=dtype)
    t = ember.from_numpy(a).transpose(0, 1)  # strided input
    tol = 1e-5 if dtype == np.complex64 else 1e-12
    for got, want in [(ember.cumsum(t, dim), np.cumsum(a.T, axis=dim)), (t.cumprod(dim), np.cumprod(a.T, axis=dim))]:
        assert got.dtype == t.dtype
        np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)


def test_scan_dtype_argument_and_complex32_refusal():
    c = ember.cumsum(ember.ones(3), 0, dtype=ember.complex64)
    assert c.dtype == ember.complex64 and c.tolist() == [1, 2, 3]
    assert ember.tensor([1, 2, 3]).cumprod(0, dtype=ember.complex128).tolist() == [1, 2, 6]
    with pytest.raises(NotImplementedError, match="ComplexHalf"):
        ember.ones(3, dtype=ember.complex32).cumsum(0)
    with pytest.raises(NotImplementedError, match="cummax"):
        ember.tensor([1j, 2]).cummax(0)


def test_logcumsumexp_on_complex_matches_torch():
    torch = pytest.importorskip("torch")
    a = crandn(3, 6)
    np.testing.assert_allclose(ember.logcumsumexp(ember.from_numpy(a), 1).numpy(),
                               torch.logcumsumexp(torch.from_numpy(a), 1).numpy(), rtol=1e-12, atol=1e-12)


def test_scan_gradients_on_complex():
    assert gradcheck(lambda v: v.cumsum(1), (_z(2, 4),))
    assert gradcheck(lambda v: v.cumprod(0), (_z(4, 2),))
    # A zero in the row takes the branch that avoids dividing by it.
    z = ember.from_numpy(np.array([1 + 1j, 0, 2 - 1j, 0.5j])).requires_grad_()
    assert gradcheck(lambda v: v.cumprod(0), (z,))
    # A real input cast to complex by `dtype` receives the real part of its gradient.
    x = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda v: v.cumprod(0, dtype=ember.complex128) * (1 + 2j), (x,))


def test_cumprod_gradient_matches_torch_with_zeros():
    torch = pytest.importorskip("torch")
    a = crandn(3, 5)
    a[1, 2] = a[2, 0] = a[2, 3] = 0
    g = crandn(3, 5)
    z = ember.from_numpy(a).requires_grad_()
    z.cumprod(1).backward(ember.from_numpy(g))
    tz = torch.from_numpy(a).requires_grad_()
    tz.cumprod(1).backward(torch.from_numpy(g))
    np.testing.assert_allclose(z.grad.numpy(), tz.grad.numpy(), rtol=1e-12, atol=1e-12)


# ---- ranges ----

@pytest.mark.parametrize("args,kw", [
    ((0, 1 + 2j, 5), {}), ((2j, -1, 4), {}), ((0, 1, 5), dict(dtype=ember.complex64)), ((0, 1 + 0j, 3), {}),
    ((1 - 1j, 1 + 1j, 1), {}), ((1j, 2, 0), {}), ((0, 1 + 2j, 4), dict(dtype=ember.complex128)),
])
def test_linspace_complex_matches_torch(args, kw):
    torch = pytest.importorskip("torch")
    got = ember.linspace(*args, **kw)
    want = torch.linspace(*args, **{k: getattr(torch, str(v).split(".")[1]) for k, v in kw.items()})
    assert str(got.dtype).split(".")[1] == str(want.dtype).split(".")[1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("args,kw", [((0, 1 + 2j, 5), {}), ((0, 1j, 4), dict(base=2)), ((0, 2, 4), dict(base=-2.0)),
                                     ((1, 2 - 1j, 3), dict(base=0.5))])
def test_logspace_complex_matches_torch(args, kw):
    torch = pytest.importorskip("torch")
    dtype = {} if any(isinstance(v, complex) for v in args) else dict(dtype=ember.complex128)
    tdtype = {} if not dtype else dict(dtype=torch.complex128)
    got = ember.logspace(*args, **kw, **dtype)
    want = torch.logspace(*args, **kw, **tdtype)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_complex_ranges_follow_the_default_dtype_and_refuse_like_pytorch():
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.linspace(0, 1j, 3).dtype == ember.complex128
        assert ember.logspace(ember.tensor(1j), 0, 3).dtype == ember.complex128
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(RuntimeError, match=r"inferred dtype c10::complex<float> can't be safely cast to passed dtype Float"):
        ember.linspace(0, 1 + 2j, 5, dtype=ember.float32)
    with pytest.raises(RuntimeError, match="passed dtype Long"):
        ember.logspace(0, 1j, 5, dtype=ember.int64)
    with pytest.raises(NotImplementedError, match="ComplexHalf"):
        ember.linspace(0, 1j, 5, dtype=ember.complex32)
    with pytest.raises(NotImplementedError, match="arange_cpu"):
        ember.arange(3, dtype=ember.complex64)
    with pytest.raises(RuntimeError, match="cannot be converted to type double"):
        ember.arange(0, 3, 1j)
    r = ember.arange(0, 3 + 0j)  # a zero imaginary part counts as a float, as in PyTorch
    assert r.dtype == ember.float32 and r.tolist() == [0, 1, 2]


# ---- scatter_reduce ----

@pytest.mark.parametrize("reduce", ["sum", "prod", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_on_complex_matches_torch(reduce, include_self):
    torch = pytest.importorskip("torch")
    x, src = crandn(4, 3), crandn(5, 3)
    idx = np.array([[0, 1, 3], [0, 0, 3], [2, 1, 3], [0, 1, 1], [2, 2, 2]])
    got = ember.from_numpy(x).scatter_reduce(0, ember.from_numpy(idx), ember.from_numpy(src), reduce, include_self=include_self)
    want = torch.from_numpy(x).scatter_reduce(0, torch.from_numpy(idx), torch.from_numpy(src), reduce, include_self=include_self)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_scatter_multiply_and_ordering_refusals_on_complex():
    x = ember.ones(3, dtype=ember.complex64)
    y = x.scatter(0, ember.tensor([0, 0, 2]), ember.tensor([2j, 3, 1 - 1j]), reduce="multiply")
    assert y.tolist() == [6j, 1, 1 - 1j]
    for r in ["amax", "amin"]:
        with pytest.raises(NotImplementedError, match=f"scatter_gather_tensor_cpu_reduce_{r}.*ComplexFloat"):
            x.scatter_reduce(0, ember.tensor([0]), ember.tensor([1j]), r)
    assert x.tolist() == [1, 1, 1]  # refused before anything was written
    s = ember.zeros((), dtype=ember.complex128).scatter_reduce(0, ember.tensor(0), ember.tensor(2 + 1j, dtype=ember.complex128), "mean")
    assert s.item() == 1 + 0.5j


# ---- transposed convolution ----

@pytest.mark.parametrize("dims,kw", [(1, dict(stride=2, padding=1, output_padding=1)), (2, dict(groups=2, dilation=2)),
                                     (2, dict(stride=(2, 1), padding=(0, 1)))])
def test_complex_conv_transpose_matches_torch(dims, kw):
    torch = pytest.importorskip("torch")
    x = crandn(2, 4, *([5] * dims))
    w = crandn(4, 6 // kw.get("groups", 1), *([3] * dims))
    b = crandn(6 // kw.get("groups", 1) * kw.get("groups", 1))
    fn, tfn = getattr(F, f"conv_transpose{dims}d"), getattr(torch.nn.functional, f"conv_transpose{dims}d")
    got = fn(ember.from_numpy(x), ember.from_numpy(w), ember.from_numpy(b), **kw)
    want = tfn(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), **kw)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-10)


def test_complex_conv_transpose_gradcheck_module_and_dtype_checks():
    x, w, b = _z(1, 2, 4), _z(2, 3, 2), _z(3)
    assert gradcheck(lambda a, k, c: F.conv_transpose1d(a, k, c, stride=2), (x, w, b))
    x2, w2 = _z(1, 1, 3, 3), _z(1, 2, 2, 2)
    assert gradcheck(lambda a, k: F.conv_transpose2d(a, k, padding=1), (x2, w2))
    m = ember.nn.ConvTranspose2d(2, 3, 2, dtype=ember.complex64)
    assert m(ember.ones(2, 4, 4, dtype=ember.complex64)).shape == (3, 5, 5)
    with pytest.raises(RuntimeError, match="should be the same"):
        F.conv_transpose1d(ember.ones(1, 2, 5, dtype=ember.complex64), ember.ones(2, 3, 2))
    h = F.conv_transpose1d(ember.ones(1, 1, 2, dtype=ember.complex32), ember.ones(1, 1, 2, dtype=ember.complex32) * 1j)
    assert h.dtype == ember.complex32 and h.tolist() == [[[1j, 2j, 1j]]]
