"""`ember.autograd.functional` against closed-form derivatives (and PyTorch where installed)."""
import numpy as np
import pytest

import ember
from ember.autograd import functional as AF

rng = np.random.default_rng(0)
X = rng.random(3)
Y = rng.random((2, 3))


def f(a, b):  # R^3 x R^{2x3} -> R^3
    return (a.exp() * b).sum(0) + a.sin()


def jac_f(x, y):
    da = np.diag(np.exp(x) * y.sum(0) + np.cos(x))
    db = np.zeros((3, 2, 3))
    for i in range(3):
        db[i, :, i] = np.exp(x[i])
    return da, db


def g(a):  # a scalar: sum(a^3) * sum(sin a)
    return (a**3).sum() * a.sin().sum()


def hess_g(x):
    s3, ss = (x**3).sum(), np.sin(x).sum()
    return np.diag(6 * x * ss - s3 * np.sin(x)) + np.outer(3 * x**2, np.cos(x)) + np.outer(np.cos(x), 3 * x**2)


def inputs():
    return ember.tensor(X), ember.tensor(Y)


def test_jacobian_blocks_have_output_then_input_shapes():
    ja, jb = AF.jacobian(f, inputs())
    da, db = jac_f(X, Y)
    assert tuple(ja.shape) == (3, 3) and tuple(jb.shape) == (3, 2, 3)
    np.testing.assert_allclose(ja.numpy(), da)
    np.testing.assert_allclose(jb.numpy(), db)
    single = AF.jacobian(lambda a: a.sin(), ember.tensor(X))
    assert isinstance(single, ember.Tensor)
    np.testing.assert_allclose(single.numpy(), np.diag(np.cos(X)))


def test_jacobian_nests_tuple_outputs_and_inputs():
    jac = AF.jacobian(lambda a, b: (a * 2, (a * b).sum()), inputs())
    assert isinstance(jac, tuple) and len(jac) == 2 and all(isinstance(r, tuple) and len(r) == 2 for r in jac)
    np.testing.assert_allclose(jac[0][0].numpy(), 2 * np.eye(3))
    np.testing.assert_array_equal(jac[0][1].numpy(), np.zeros((3, 2, 3)))
    assert tuple(jac[1][1].shape) == (2, 3)


def test_vjp_and_jvp_are_the_two_jacobian_products():
    da, db = jac_f(X, Y)
    v = rng.random(3)
    out, (va, vb) = AF.vjp(f, inputs(), ember.tensor(v))
    np.testing.assert_allclose(out.numpy(), f(*inputs()).numpy())
    np.testing.assert_allclose(va.numpy(), v @ da)
    np.testing.assert_allclose(vb.numpy(), np.einsum("i,ijk->jk", v, db))
    ta, tb = rng.random(3), rng.random((2, 3))
    _, jv = AF.jvp(f, inputs(), (ember.tensor(ta), ember.tensor(tb)))
    np.testing.assert_allclose(jv.numpy(), da @ ta + np.einsum("ijk,jk->i", db, tb))
    assert not out.requires_grad and not va.requires_grad and not jv.requires_grad


def test_hessian_vhp_and_hvp():
    x = ember.tensor(X)
    np.testing.assert_allclose(AF.hessian(g, x).numpy(), hess_g(X))
    v = rng.random(3)
    value, hv = AF.hvp(g, x, ember.tensor(v))
    assert value.item() == pytest.approx(g(x).item())
    np.testing.assert_allclose(hv.numpy(), hess_g(X) @ v)
    np.testing.assert_allclose(AF.vhp(g, x, ember.tensor(v))[1].numpy(), v @ hess_g(X))
    blocks = AF.hessian(lambda a, b: ((a * b).sum()) ** 2, (x, x))
    assert isinstance(blocks[0], tuple) and tuple(blocks[0][1].shape) == (3, 3)


def test_create_graph_keeps_the_result_differentiable():
    x = ember.tensor(X, requires_grad=True)
    _, grad = AF.vjp(lambda a: (a**3).sum(), x, create_graph=True)
    assert grad.requires_grad
    grad.sum().backward()  # d/dx sum(3x^2) = 6x
    np.testing.assert_allclose(x.grad.numpy(), 6 * X)


def test_unreached_inputs_give_zeros_or_strict_errors():
    grads = AF.vjp(lambda a, b: a * 2, inputs(), ember.ones(3))[1]
    np.testing.assert_array_equal(grads[1].numpy(), np.zeros((2, 3)))
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.vjp(lambda a, b: a * 2, inputs(), ember.ones(3), strict=True)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        AF.jacobian(lambda a: a.detach() * 2, ember.tensor(X), strict=True)
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with respect to input 0"):
        AF.hessian(lambda a: (a * 2).sum(), ember.tensor(X), strict=True)


def test_bad_arguments():
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        AF.jacobian(f, [ember.tensor(X)])
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.vjp(lambda a: a * 2, ember.tensor(X))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        AF.vjp(lambda a: a * 2, ember.tensor(X), ember.ones(4))
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        AF.hessian(lambda a: (a, a), ember.tensor(X))
    with pytest.raises(RuntimeError, match="should contain a single element"):
        AF.hessian(lambda a: a * 2, ember.tensor(X))
    with pytest.raises(NotImplementedError, match="forward-mode"):
        AF.jacobian(f, inputs(), vectorize=True, strategy="forward-mode", create_graph=True)
    with pytest.raises(ValueError, match="strategy"):
        AF.jacobian(f, inputs(), strategy="sideways")


def test_matches_torch():
    torch = pytest.importorskip("torch")
    TF = torch.autograd.functional
    tx, ty = torch.tensor(X), torch.tensor(Y)
    for mine, theirs in zip(AF.jacobian(f, inputs()), TF.jacobian(f, (tx, ty))):
        np.testing.assert_allclose(mine.numpy(), theirs.numpy())
    np.testing.assert_allclose(AF.hessian(g, ember.tensor(X)).numpy(), TF.hessian(g, tx).numpy())
