"""`ember.func.vmap` with batching rules: each rule family equals a Python loop over the
samples (and ran batched, without the per-sample fallback), nesting, pytrees, composition
with grad/jacrev, the functorch tutorials' recipes, the fallback, and functorch's errors."""
import numpy as np
import pytest

import ember
from ember import _functorch
from ember import func
from ember import nn
from ember.nn import functional as F

RNG = np.random.default_rng(0)


def t(*shape, dtype=np.float32):
    return ember.tensor(RNG.standard_normal(shape).astype(dtype))


def loop(fn, args, in_dims, out_dims=0):
    """The reference: fn once per sample, the results stacked at out_dims."""
    in_dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
    size = next(a.shape[d] for a, d in zip(args, in_dims) if d is not None)
    outs = [fn(*(a if d is None else a.select(d, i) for a, d in zip(args, in_dims))) for i in range(size)]
    if isinstance(outs[0], tuple):
        dims = out_dims if isinstance(out_dims, tuple) else (out_dims,) * len(outs[0])
        return tuple(ember.stack([o[k] for o in outs], dim=dims[k]) for k in range(len(outs[0])))
    return ember.stack(outs, dim=out_dims[0] if isinstance(out_dims, tuple) else out_dims)


def assert_close(mine, ref, rtol=1e-5, atol=1e-6):
    if isinstance(ref, tuple):
        for m, r in zip(mine, ref):
            assert_close(m, r, rtol, atol)
        return
    assert tuple(mine.shape) == tuple(ref.shape) and mine.dtype == ref.dtype
    np.testing.assert_allclose(mine.detach().numpy(), ref.detach().numpy(), rtol=rtol, atol=atol)


def check(fn, *args, in_dims=0, out_dims=0, batched=True):
    """vmap(fn) equals the loop; `batched`: the rules ran (no per-sample fallback)."""
    before = _functorch.STATS["fallbacks"]
    mine = func.vmap(fn, in_dims=in_dims, out_dims=out_dims)(*args)
    if batched:
        assert _functorch.STATS["fallbacks"] == before, _functorch.STATS["last_fallback"]
    assert_close(mine, loop(fn, args, in_dims, out_dims))


def test_elementwise_operators_and_comparisons():
    x, y, s = t(4, 3), t(3), t(4)
    check(lambda a, b: (a * b + 2) / (b.abs() + 1) - a ** 2, x, y, in_dims=(0, None))
    check(lambda a, b: a @ b, x, y, in_dims=(0, None))
    check(lambda a, b: ember.maximum(a, b).exp().sigmoid(), x, t(3, 4), in_dims=(0, 1), out_dims=1)
    check(lambda a, b: a + b, s, x, in_dims=(0, 0))  # 0-d sample against a vector sample
    check(lambda a, b: ((a > b) & (a < 1)) | (b == 0), x, y, in_dims=(0, None))
    check(lambda a: ember.where(a > 0, a, -a * 0.5).clamp(-0.3, 0.4), x, in_dims=-2)
    check(lambda a, lo: ember.clamp(a, min=lo), x, t(4, 1), in_dims=(0, 0))
    check(lambda a: 1 - a, x)
    check(lambda a: F.relu(a) + F.gelu(a) + F.leaky_relu(a, 0.2) + F.softplus(a), x)


def test_zero_dim_promotion_matches_per_sample():
    # A 0-d float64 sample does not promote a float32 vector (PyTorch's category rule).
    check(lambda a, b: a * b, ember.tensor(RNG.standard_normal(4)), t(3), in_dims=(0, None))


def test_reductions_translate_dims():
    x = t(5, 3, 4)
    for fn in (lambda a: a.sum(), lambda a: a.sum(-1), lambda a: a.mean((0, 1), keepdim=True),
               lambda a: a.prod(1), lambda a: a.amax(0), lambda a: ember.amin(a, -1, True),
               lambda a: a.max(), lambda a: a.max(1).values, lambda a: a.min(0, keepdim=True).indices,
               lambda a: a.argmax(), lambda a: a.argmax(1), lambda a: a.var(1), lambda a: a.std(),
               lambda a: a.norm(), lambda a: ember.logsumexp(a, 1), lambda a: F.softmax(a, -1),
               lambda a: F.log_softmax(a, 0), lambda a: a.sum().softmax(0)):
        check(fn, x)
    check(lambda a: a.sum(0), x, in_dims=2, out_dims=-1)


def test_views_and_joins():
    x, y = t(3, 2, 4), t(2, 4)
    for fn in (lambda a: a.view(8), lambda a: a.reshape(4, -1), lambda a: a.transpose(0, 1), lambda a: a.permute(1, 0),
               lambda a: a.unsqueeze(-1), lambda a: a.unsqueeze(0).squeeze(), lambda a: a.flatten(),
               lambda a: a[None].expand(5, 2, 4), lambda a: a.T, lambda a: a.t(), lambda a: a.narrow(1, 1, 2),
               lambda a: a.movedim(0, 1), lambda a: a.chunk(2, 1), lambda a: a.split([1, 3], -1),
               lambda a: a.unbind(1), lambda a: a.flip(0), lambda a: ember.flatten(a, 0, 1)):
        check(fn, x)
    check(lambda a, b: ember.cat([a, b], 1), x, y, in_dims=(0, None))
    check(lambda a, b: ember.stack([a, b], -1), x, y, in_dims=(0, None))
    check(lambda a, b: ember.cat([b, a]), x, t(2, 3, 4), in_dims=(0, 1), out_dims=2)


def test_matrix_products():
    a, b, v = t(4, 2, 3), t(3, 5), t(3)
    check(lambda p, q: p @ q, a, b, in_dims=(0, None))
    check(lambda p, q: p @ q, t(2, 3), t(4, 3, 5), in_dims=(None, 0), out_dims=(0,))  # vmapped right operand
    check(lambda p, q: ember.matmul(p, q), a, t(4, 3, 5), in_dims=(0, 0))
    check(lambda p, q: p @ q, t(4, 3), t(4, 3), in_dims=(0, 0))  # dot per sample
    check(lambda p, q: p @ q, t(4, 3), t(6, 2, 3, 5), in_dims=(0, None))  # vector against a stack
    check(lambda p, q: ember.mm(p, q), a, b, in_dims=(0, None))
    check(lambda p, q: ember.bmm(p, q), t(4, 2, 2, 3), t(2, 3, 5), in_dims=(0, None))
    check(lambda p, q: ember.dot(p, q), t(4, 3), v, in_dims=(0, None))
    check(lambda p, w, c: F.linear(p, w, c), t(4, 6, 3), t(5, 3), t(4, 5), in_dims=(0, None, 0))
    check(lambda p, q: ember.einsum("ij,jk->ik", p, q), a, b, in_dims=(0, None))


def test_convolutions_and_pooling():
    x, w, bias = t(3, 2, 4, 7, 7), t(5, 4, 3, 3), t(5)
    check(lambda i: F.conv2d(i, w, bias, padding=1), x)  # batch of inputs: folded into N
    check(lambda k: F.conv2d(x[0], k, bias, stride=2), t(3, 5, 4, 3, 3))  # batch of weights: grouped conv
    check(lambda i, k, c: F.conv2d(i, k, c, groups=2), t(3, 4, 7, 7), t(3, 6, 2, 3, 3), t(3, 6))
    check(lambda i, k: F.conv1d(i, k), t(2, 3, 4, 9), t(3, 5, 4, 3), in_dims=(1, 0), out_dims=1)
    check(lambda i: F.max_pool2d(i, 2) + F.avg_pool2d(i, 2), x)
    check(lambda i: F.adaptive_avg_pool2d(i, 1), x[:, 0])


def test_indexing_gather_and_embedding():
    x, idx = t(4, 5, 6), ember.tensor([[0, 2], [1, 1], [4, 0], [3, 3]])
    for fn in (lambda a: a[1], lambda a: a[:, 1:4:2], lambda a: a[..., None, -1], lambda a: a[ember.tensor([0, 3])],
               lambda a: a[:, ember.tensor([1, 2, 5])], lambda a: a[ember.tensor([0, 1]), ember.tensor([2, 3])]):
        check(fn, x)
    check(lambda a: a[ember.tensor([0, 1]), :, ember.tensor([2, 3])], t(3, 4, 5, 6))  # non-adjacent: dims first
    check(lambda a, i: a[i], x, idx, in_dims=(0, 0))  # batched index
    check(lambda a, i: a[:, i], x, idx, in_dims=(0, 0))
    check(lambda a, i: a[i], x, idx[:, 0], in_dims=(0, 0))  # a batched 0-d index
    assert func.vmap(lambda a: isinstance(a, ember.Tensor), out_dims=None)(x) is True  # as functorch
    check(lambda a, i: a.gather(1, i.unsqueeze(0).expand(5, 2)), x, idx, in_dims=(0, 0))
    check(lambda a, i: a.index_select(1, i), x, idx, in_dims=(0, 0))
    check(lambda a: a.index_select(-1, ember.tensor([5, 0])), x)
    weight = t(6, 3)
    check(lambda i: F.embedding(i, weight), idx)


def test_losses_and_dropout():
    logits, target = t(4, 3, 5), ember.tensor(RNG.integers(0, 5, (4, 3)))
    check(lambda z, y: F.cross_entropy(z, y), logits, target)
    check(lambda z, y: F.nll_loss(F.log_softmax(z, 1), y, reduction="sum"), logits, target)
    check(lambda z, y: F.cross_entropy(z, y, reduction="none", weight=ember.ones(5) * 2), logits, target)
    check(lambda z, y: F.cross_entropy(z[0], y[0]), logits, target)  # unbatched sample
    check(lambda z, y: F.mse_loss(z, y), logits, t(4, 3, 5))
    ember.manual_seed(0)
    x = ember.ones(4, 1000)
    same = func.vmap(lambda a: F.dropout(a, 0.5), randomness="same")(x)
    assert (same == same[0]).all() and 0.3 < (same[0] == 0).float().mean().item() < 0.7
    before = _functorch.STATS["fallbacks"]
    different = func.vmap(lambda a: F.dropout(a, 0.5), randomness="different")(x)
    assert _functorch.STATS["fallbacks"] == before
    assert not (different == different[0]).all()
    with pytest.raises(RuntimeError, match="randomness error mode"):
        func.vmap(lambda a: F.dropout(a, 0.5))(x)
    assert (func.vmap(lambda a: F.dropout(a, 0.5, training=False))(x) == x).all()


def test_nested_vmap_and_pytrees():
    x, y = t(3, 4, 5), t(4, 5)
    nested = func.vmap(func.vmap(lambda a, b: (a * b).sum(), in_dims=(0, 0)), in_dims=(0, None))(x, y)
    np.testing.assert_allclose(nested.numpy(), (x.numpy() * y.numpy()).sum(-1), rtol=1e-5)
    inner_dim = func.vmap(func.vmap(lambda a: a @ a, in_dims=1), in_dims=0)(t(2, 3, 4))
    assert tuple(inner_dim.shape) == (2, 4)
    out = func.vmap(lambda d, k: {"s": d["x"] * k, "t": (d["y"].sum(), k)}, in_dims=({"x": 1, "y": 0}, None),
                    out_dims={"s": 0, "t": (0, None)})({"x": t(2, 3), "y": t(3, 2)}, 5)
    assert tuple(out["s"].shape) == (3, 2) and out["t"][1] == 5 and tuple(out["t"][0].shape) == (3,)


def test_grad_jacrev_inside_vmap():
    x, w = t(6, 3), t(3)
    per_sample = func.vmap(func.grad(lambda p, a: ((a * p).sum()) ** 2), in_dims=(None, 0))(w, x)
    expected = [2 * (x[i] * w).sum() * x[i] for i in range(6)]
    assert_close(per_sample, ember.stack(expected))
    jac = func.vmap(func.jacrev(lambda a: a.sin() * a.sum()))(x)
    assert_close(jac, loop(func.jacrev(lambda a: a.sin() * a.sum()), (x,), 0))
    both = func.vmap(func.grad(lambda a, b: (a * b).sum(), argnums=(0, 1)))(x, t(6, 3))
    assert tuple(both[0].shape) == (6, 3) and tuple(both[1].shape) == (6, 3)
    nested = func.vmap(func.vmap(func.grad(lambda a: (a ** 3).sum())))(t(2, 3, 4))
    assert tuple(nested.shape) == (2, 3, 4)
    outside = func.grad(lambda a: func.vmap(lambda r: (r ** 2).sum())(a).sum())(x)  # grad of vmap
    assert_close(outside, 2 * x)
    data = t(5, 3)
    f = lambda p: func.vmap(lambda d: (d * p).sum().tanh())(data).sum()  # noqa: E731
    before = _functorch.STATS["fallbacks"]
    sandwich = func.vmap(func.grad(f))(x)  # vmap of grad of vmap
    assert _functorch.STATS["fallbacks"] == before, _functorch.STATS["last_fallback"]
    assert_close(sandwich, loop(func.grad(f), (x,), 0))


def test_nested_conv_over_two_batch_dims():
    x, w = t(2, 3, 1, 6, 6), t(4, 1, 3, 3)
    g = lambda i: F.conv2d(i.unsqueeze(0), w).relu().mean()  # noqa: E731
    before = _functorch.STATS["fallbacks"]
    out = func.vmap(func.vmap(g), in_dims=1)(x)
    assert _functorch.STATS["fallbacks"] == before, _functorch.STATS["last_fallback"]
    assert_close(out, ember.stack([loop(g, (x[:, i],), 0) for i in range(3)]))


class SimpleCNN(nn.Module):
    """The functorch per-sample-gradients tutorial's model, scaled down."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 6, 3, 1)
        self.fc1 = nn.Linear(6 * 2 * 2, 8)
        self.fc2 = nn.Linear(8, 10)

    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        x = ember.flatten(F.max_pool2d(x, 2), 1)
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


def test_per_sample_gradients_tutorial():
    ember.manual_seed(0)
    model = SimpleCNN()
    data, targets = ember.randn(8, 1, 8, 8), ember.randint(0, 10, (8,))
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        predictions = func.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return F.nll_loss(predictions, target.unsqueeze(0))

    before = _functorch.STATS["fallbacks"]
    grads = func.vmap(func.grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)
    assert _functorch.STATS["fallbacks"] == before, _functorch.STATS["last_fallback"]
    for i in range(8):
        model.zero_grad()
        F.nll_loss(model(data[i:i + 1]), targets[i:i + 1]).backward()
        for name, p in model.named_parameters():
            np.testing.assert_allclose(grads[name][i].numpy(), p.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_model_ensembling_tutorial():
    ember.manual_seed(0)
    models = [nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4)) for _ in range(5)]
    params, buffers = func.stack_module_state(models)

    def fmodel(params, buffers, x):
        return func.functional_call(models[0], (params, buffers), (x,))

    minibatch, minibatches = ember.randn(7, 12), ember.randn(5, 7, 12)
    before = _functorch.STATS["fallbacks"]
    same_data = func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    own_data = func.vmap(fmodel)(params, buffers, minibatches)
    assert _functorch.STATS["fallbacks"] == before, _functorch.STATS["last_fallback"]
    for i, m in enumerate(models):
        assert_close(same_data[i], m(minibatch), rtol=1e-5)
        assert_close(own_data[i], m(minibatches[i]), rtol=1e-5)


def test_fallback_runs_per_sample():
    x = t(4, 3)
    before = _functorch.STATS["fallbacks"]
    check(lambda a: a * 2 if a.sum().item() > 0 else a - 1, x, batched=False)  # data-dependent Python
    check(lambda a: ember.cumsum(a, 0).sort().values, x, batched=False)  # ops without rules
    check(lambda a: a.clone().add_(1), x, batched=False)  # in-place writes
    assert _functorch.STATS["fallbacks"] == before + 3
    different = func.vmap(lambda a: a + ember.rand(1), randomness="different")(ember.zeros(3))
    assert len(set(different.reshape(-1).tolist())) == 3


def test_errors_match_functorch():
    x = ember.ones(3, 2)
    with pytest.raises(ValueError, match="same size in the mapped dimension, got sizes \\[3, 4\\]"):
        func.vmap(lambda a, b: a)(x, ember.ones(4))
    with pytest.raises(ValueError, match="Expected at least one Tensor to vmap over"):
        func.vmap(lambda a: a, in_dims=None)(x)
    with pytest.raises(ValueError, match="expected in_dim to satisfy -2 <= in_dim < 2"):
        func.vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure of `inputs`"):
        func.vmap(lambda a, b: a, in_dims=(0,))(x, x)
    with pytest.raises(ValueError, match="expected `in_dims` to be int or a \\(potentially nested\\) tuple"):
        func.vmap(lambda a: a, in_dims=[0])(x)
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        func.vmap(lambda a, k: a, in_dims=(0, 0))(x, 3)
    with pytest.raises(ValueError, match="must only return Tensors"):
        func.vmap(lambda a: 1.0)(x)
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        func.vmap(lambda a: a, out_dims=None)(x)
    with pytest.raises(ValueError, match="got no inputs"):
        func.vmap(lambda: x)()
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        func.vmap(lambda a: a, randomness="sometimes")
    with pytest.raises(RuntimeError, match="randomness error mode"):
        func.vmap(lambda a: a + ember.rand(1))(x)
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied|mat1 and mat2|size mismatch|match"):
        func.vmap(lambda a: a @ ember.ones(3, 3))(x)  # the user's error, raised by the per-sample run


def test_matches_torch_func():
    torch = pytest.importorskip("torch")
    xs, w = RNG.standard_normal((4, 3)), RNG.standard_normal((3, 2))
    f = lambda a, m: (a @ m).tanh().sum(0)  # noqa: E731
    mine = func.vmap(func.grad(f), in_dims=(0, None))(ember.tensor(xs), ember.tensor(w))
    theirs = torch.func.vmap(torch.func.grad(f), in_dims=(0, None))(torch.tensor(xs), torch.tensor(w))
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-10)
