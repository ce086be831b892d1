"""A MAML-style meta-learning loop (sine regression, as in the functorch tutorial): the inner
step runs through `functional_call` with parameters that carry the graph of their own update,
so the outer loss differentiates through the inner gradient step (second order)."""
import math

import numpy as np

import ember
from ember import nn
from ember.nn.utils.stateless import functional_call


def sine_tasks(rng, count, shots=10):
    """`count` tasks y = A sin(x + phase), each with a support and a query set."""
    for _ in range(count):
        amp, phase = rng.uniform(0.5, 2.0), rng.uniform(0, math.pi)
        xs = rng.uniform(-5, 5, (2, shots, 1)).astype(np.float32)
        ys = (amp * np.sin(xs + phase)).astype(np.float32)
        yield [(ember.tensor(x), ember.tensor(y)) for x, y in zip(xs, ys)]


def adapted_loss(model, params, support, query, inner_lr):
    x, y = support
    loss = nn.functional.mse_loss(functional_call(model, params, (x,)), y)
    grads = ember.autograd.grad(loss, list(params.values()), create_graph=True)
    fast = {name: p - inner_lr * g for (name, p), g in zip(params.items(), grads)}
    qx, qy = query
    return nn.functional.mse_loss(functional_call(model, fast, (qx,)), qy)


def meta_loss(model, tasks, inner_lr=0.01):
    params = dict(model.named_parameters())
    losses = [adapted_loss(model, params, support, query, inner_lr) for support, query in tasks]
    return ember.stack(losses).mean()


def test_maml_meta_training_lowers_the_adapted_loss():
    ember.manual_seed(0)
    rng = np.random.default_rng(0)
    model = nn.Sequential(nn.Linear(1, 40), nn.ReLU(), nn.Linear(40, 40), nn.ReLU(), nn.Linear(40, 1))
    held_out = list(sine_tasks(rng, 16))
    before = meta_loss(model, held_out).item()  # adapting needs grad mode, even to evaluate
    opt = ember.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(150):
        opt.zero_grad()
        meta_loss(model, list(sine_tasks(rng, 4))).backward()
        opt.step()
    after = meta_loss(model, held_out).item()
    assert after < 0.85 * before, (before, after)


def test_the_outer_gradient_is_second_order():
    """d/dw of the adapted loss differs from the first-order (detached inner gradient) one."""
    ember.manual_seed(1)
    model = nn.Linear(1, 1)
    task = next(sine_tasks(np.random.default_rng(1), 1))
    params = dict(model.named_parameters())
    exact = ember.autograd.grad(adapted_loss(model, params, *task, inner_lr=0.5), [params["weight"]])[0]

    x, y = task[0]
    loss = nn.functional.mse_loss(functional_call(model, params, (x,)), y)
    grads = ember.autograd.grad(loss, list(params.values()))
    fast = {name: p - 0.5 * g for (name, p), g in zip(params.items(), grads)}
    qx, qy = task[1]
    first_order = ember.autograd.grad(nn.functional.mse_loss(functional_call(model, fast, (qx,)), qy), [params["weight"]])[0]
    assert not np.allclose(exact.numpy(), first_order.numpy())
