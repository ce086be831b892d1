"""`ember.func` (functorch's transforms) against closed forms, and PyTorch where installed."""
import numpy as np
import pytest

import ember
from ember import func as F
from ember import nn

X = np.random.default_rng(0).random(3)


def cubic(a):
    return (a**3).sum()


def test_grad_and_nested_grad():
    x = ember.tensor(X)
    np.testing.assert_allclose(F.grad(cubic)(x).numpy(), 3 * X**2)
    second = F.grad(lambda a: F.grad(cubic)(a).sum())(x)  # d/da sum(3a^2) = 6a
    np.testing.assert_allclose(second.numpy(), 6 * X)
    assert not second.requires_grad and not x.requires_grad


def test_grad_argnums_has_aux_and_value():
    x, y = ember.tensor(X), ember.tensor(2 * X)
    gx, gy = F.grad(lambda a, b: (a * b).sum(), argnums=(0, 1))(x, y)
    np.testing.assert_allclose(gx.numpy(), 2 * X)
    np.testing.assert_allclose(gy.numpy(), X)
    g, (value, aux) = F.grad_and_value(lambda a: (cubic(a), a * 2), has_aux=True)(x)
    assert value.item() == pytest.approx((X**3).sum()) and not aux.requires_grad
    tree = F.grad(lambda p: (p["w"] * p["b"][0]).sum())({"w": x, "b": [y]})
    assert set(tree) == {"w", "b"} and isinstance(tree["b"], list)
    np.testing.assert_allclose(tree["b"][0].numpy(), X)


def test_vjp_jvp_and_jacobians():
    x = ember.tensor(X)
    out, vjp_fn = F.vjp(lambda a: a.sin() * 2, x)
    (g,) = vjp_fn(ember.ones(3))
    np.testing.assert_allclose(g.numpy(), 2 * np.cos(X))
    value, tangent = F.jvp(lambda a: a.exp(), (x,), (ember.ones(3),))
    np.testing.assert_allclose(tangent.numpy(), np.exp(X))
    for jac in (F.jacrev, F.jacfwd):
        np.testing.assert_allclose(jac(lambda a: a.exp())(x).numpy(), np.diag(np.exp(X)))
    blocks = F.jacrev(lambda a, b: a * b, argnums=(0, 1))(x, x)
    assert isinstance(blocks, tuple) and tuple(blocks[1].shape) == (3, 3)
    hess = F.hessian(lambda a: (a**3).sum() * a.sum())(x)
    s1 = X.sum()
    expected = np.diag(6 * X * s1) + np.outer(3 * X**2, np.ones(3)) + np.outer(np.ones(3), 3 * X**2)
    np.testing.assert_allclose(hess.numpy(), expected)


def test_functional_call_with_several_dicts():
    model = nn.Linear(3, 1)
    params = {"weight": ember.ones(1, 3)}
    out = F.functional_call(model, (params, {"bias": ember.zeros(1)}), (ember.tensor(X, dtype=ember.float32),))
    assert out.item() == pytest.approx(X.sum(), rel=1e-6)
    grads = F.grad(lambda p, x: F.functional_call(model, p, (x,)).sum())(dict(model.named_parameters()),
                                                                         ember.tensor(X, dtype=ember.float32))
    np.testing.assert_allclose(grads["weight"].numpy()[0], X, rtol=1e-6)


def test_bad_inputs_and_missing_transforms():
    x = ember.tensor(X)
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        F.grad(lambda a: a * 2)(x)
    with pytest.raises(RuntimeError, match="argnums"):
        F.grad(cubic, argnums=3)(x)
    with pytest.raises(RuntimeError, match="tuple: \\(output, aux\\)"):
        F.grad(cubic, has_aux=True)(x)
    with pytest.raises(RuntimeError, match="tuples"):
        F.jvp(cubic, x, ember.ones(3))


def test_matches_torch_func():
    torch = pytest.importorskip("torch")
    f = lambda a, b: ((a.sin() * b).sum(), a * b.exp())  # noqa: E731
    mine = F.jacrev(f, argnums=(0, 1))(ember.tensor(X), ember.tensor(X))
    theirs = torch.func.jacrev(f, argnums=(0, 1))(torch.tensor(X), torch.tensor(X))
    for row_m, row_t in zip(mine, theirs):
        for m, t in zip(row_m, row_t):
            np.testing.assert_allclose(m.numpy(), t.numpy())
    h = lambda a: (a.sin() * a).sum()  # noqa: E731
    np.testing.assert_allclose(F.hessian(h)(ember.tensor(X)).numpy(), torch.func.hessian(h)(torch.tensor(X)).numpy())


def test_vmap_equals_a_python_loop():
    rng = np.random.default_rng(1)
    a, b = ember.tensor(rng.random((4, 2, 3))), ember.tensor(rng.random((3, 5)))
    mapped = F.vmap(lambda x, y: (x @ y).sin(), in_dims=(0, None), out_dims=1)(a, b)
    loop = ember.stack([(a[i] @ b).sin() for i in range(4)], dim=1)
    np.testing.assert_allclose(mapped.numpy(), loop.numpy())
    nested = F.vmap(F.vmap(lambda x: x.sum()))(a)  # over dims 0 then 1
    np.testing.assert_allclose(nested.numpy(), a.numpy().sum(-1))
    tree = F.vmap(lambda d: {"s": d["x"] * 2, "t": (d["x"].sum(),)})({"x": a})
    assert tuple(tree["s"].shape) == (4, 2, 3) and tuple(tree["t"][0].shape) == (4,)


def test_vmap_randomness_and_bad_inputs():
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(lambda x: x + ember.rand(1))(ember.zeros(3))
    same = F.vmap(lambda x: x + ember.rand(1), randomness="same")(ember.zeros(3))
    assert len(set(same.reshape(-1).tolist())) == 1
    different = F.vmap(lambda x: x + ember.rand(1), randomness="different")(ember.zeros(3))
    assert len(set(different.reshape(-1).tolist())) == 3
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        F.vmap(lambda x, y: x + y)(ember.ones(3), ember.ones(4))
    with pytest.raises(ValueError, match="Expected at least one Tensor to vmap over"):
        F.vmap(lambda x: x, in_dims=None)(ember.ones(3))
    with pytest.raises(ValueError, match="expected in_dim to satisfy -2 <= in_dim < 2"):
        F.vmap(lambda x: x, in_dims=2)(ember.ones(3, 3))
    with pytest.raises(ValueError, match="must only return Tensors"):
        F.vmap(lambda x: 1.0)(ember.ones(3))


def test_per_sample_gradients_recipe():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = ember.randn(6, 4), ember.randint(0, 2, (6,))

    def loss(p, xi, yi):
        return nn.functional.cross_entropy(F.functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))

    per_sample = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(6):
        model.zero_grad()
        nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1]).backward()
        for name, p in model.named_parameters():
            np.testing.assert_allclose(per_sample[name][i].numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_model_ensembling_recipe():
    ember.manual_seed(0)
    models = [nn.Linear(3, 2) for _ in range(4)]
    params, buffers = F.stack_module_state(models)
    assert tuple(params["weight"].shape) == (4, 2, 3) and params["weight"].requires_grad
    x = ember.randn(5, 3)
    out = F.vmap(lambda p, b, xi: F.functional_call(models[0], (p, b), (xi,)), in_dims=(0, 0, None))(params, buffers, x)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
