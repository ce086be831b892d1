"""The autograd engine and its Python API: requires_grad, backward, grad, graphs and nodes,
retain_graph/create_graph, in-place safety, hooks, grad modes, custom Functions, gradcheck,
and small training loops."""
import gc
import threading
import weakref

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import Function


def vals(t):
    return np.asarray(t.detach())


def test_requires_grad_flags_and_leaves():
    x = ember.ones(3)
    assert not x.requires_grad and x.is_leaf and x.grad is None and x.grad_fn is None
    assert x.requires_grad_() is x and x.requires_grad and x.is_leaf
    y = x * 2
    assert y.requires_grad and not y.is_leaf and y.grad_fn.name() == "MulBackward0"
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"):
        ember.arange(3).requires_grad_()
    for make in (lambda: ember.zeros(2, requires_grad=True), lambda: ember.randn(2, 2, requires_grad=True),
                 lambda: ember.tensor([1.0], requires_grad=True), lambda: ember.full((2,), 3.0, requires_grad=True),
                 lambda: ember.ones_like(x, requires_grad=True), lambda: ember.linspace(0, 1, 3, requires_grad=True)):
        t = make()
        assert t.requires_grad and t.is_leaf
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert y.grad is None
    assert repr(x) == "tensor([1., 1., 1.], requires_grad=True)"
    assert repr(x.sum()) == "tensor(3., grad_fn=<SumBackward0>)"


def test_backward_scalar_rules_and_accumulation():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()
    y.backward(ember.ones(3), retain_graph=True)
    np.testing.assert_allclose(vals(x.grad), [2, 4, 6])
    y.sum().backward()
    np.testing.assert_allclose(vals(x.grad), [4, 8, 12])
    del x.grad
    assert x.grad is None
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(ember.ones(2))
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        ember.ones(2).sum().backward()


def test_second_backward_needs_retain_graph():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    z = (x.exp() * x).sum()
    z.backward(retain_graph=True)
    z.backward()
    # A graph whose nodes saved nothing can run twice (as in PyTorch).
    w = (x + 1).sum()
    w.backward()
    w.backward()


def test_create_graph_higher_order():
    x = ember.tensor([1.0, -2.0, 0.5], dtype=ember.float64, requires_grad=True)
    (g,) = ember.autograd.grad((x ** 3).sum(), x, create_graph=True)
    np.testing.assert_allclose(vals(g), 3 * vals(x) ** 2)
    assert g.requires_grad
    (h,) = ember.autograd.grad(g.sum(), x, create_graph=True)
    np.testing.assert_allclose(vals(h), 6 * vals(x))
    (t,) = ember.autograd.grad(h.sum(), x)
    np.testing.assert_allclose(vals(t), 6.0)
    # Hessian-vector product of f(x) = sum(sin(x) * x²) through backward(create_graph=True).
    v = ember.tensor([0.3, -1.0, 2.0], dtype=ember.float64)
    y = (ember.sin(x) * x * x).sum()
    y.backward(create_graph=True)
    hv = ember.autograd.grad((x.grad * v).sum(), x)[0]
    xn = vals(x)
    hess = (2 - xn * xn) * np.sin(xn) + 4 * xn * np.cos(xn)
    np.testing.assert_allclose(vals(hv), hess * vals(v), rtol=1e-12)


def test_grad_api():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([3.0], requires_grad=True)
    c = ember.tensor([5.0], requires_grad=True)
    out = (a * b).sum()
    ga, gb = ember.autograd.grad(out, (a, b), retain_graph=True)
    np.testing.assert_allclose(vals(ga), [3, 3])
    np.testing.assert_allclose(vals(gb), [3])
    assert a.grad is None
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        ember.autograd.grad(out, (a, c), retain_graph=True)
    assert ember.autograd.grad(out, (a, c), retain_graph=True, allow_unused=True)[1] is None
    assert vals(ember.autograd.grad(out, (a, c), retain_graph=True, materialize_grads=True)[1]).tolist() == [0.0]
    with pytest.raises(RuntimeError, match="does not require grad"):
        ember.autograd.grad(out, ember.ones(1), retain_graph=True)
    y = a * 2
    (gy,) = ember.autograd.grad(y, a, grad_outputs=ember.tensor([1.0, 10.0]))
    np.testing.assert_allclose(vals(gy), [2, 20])
    # Gradients with respect to an intermediate result.
    m = a * 3
    (gm,) = ember.autograd.grad((m * m).sum(), m)
    np.testing.assert_allclose(vals(gm), 2 * vals(m))


def test_backward_with_inputs_and_multiple_roots():
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([3.0, 4.0], requires_grad=True)
    (a * b).sum().backward(inputs=[a])
    assert b.grad is None
    np.testing.assert_allclose(vals(a.grad), [3, 4])
    ember.autograd.backward([(a * 2).sum(), (b * 3).sum()])
    np.testing.assert_allclose(vals(a.grad), [5, 6])
    np.testing.assert_allclose(vals(b.grad), [3, 3])


def test_graph_structure():
    x = ember.tensor([1.0], requires_grad=True)
    w = ember.tensor([2.0])
    y = x * w + x
    fn = y.grad_fn
    assert fn.name() == "AddBackward0" and "AddBackward0 object" in repr(fn)
    (mul, _), (acc, nr) = fn.next_functions
    assert mul.name() == "MulBackward0" and nr == 0
    assert acc.name() == "AccumulateGrad" and acc.variable is not None
    assert vals(acc.variable).tolist() == [1.0]
    assert mul.next_functions[1] == (None, 0)
    assert mul.next_functions[0][0] == acc


def test_version_counter_errors():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    e = x.exp()
    s = e.sum()
    with ember.no_grad():
        e.add_(1)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[ember.FloatTensor \[3\]\], which is output 0 of ExpBackward0, is at version 1; expected version 0 instead"):
        s.backward()
    x2 = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x2 * 1
    z = (y * y).sum()
    y.add_(1)
    with pytest.raises(RuntimeError, match="which is output 0 of MulBackward0, is at version 1; expected version 0"):
        z.backward()


def test_in_place_rules():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        x.mul_(2)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].zero_()
    with ember.no_grad():
        x.sub_(0.5)  # an optimizer step
    assert vals(x).tolist() == [0.5, 1.5] and x._version == 1
    y = x * 2
    y.exp_()
    assert y.grad_fn.name() == "ExpBackward0"
    y.sum().backward()
    np.testing.assert_allclose(vals(x.grad), 2 * np.exp(2 * vals(x)))
    out = ember.zeros(2)
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
        ember.add(x, 1, out=out)
    # A tensor built by assignment takes the history of what was written into it.
    buf = ember.zeros(2, 2, dtype=ember.float32)
    buf[0] = x
    buf[1, 1] = x[0] * 3
    assert buf.requires_grad and buf.grad_fn.name() == "CopySlices"
    x.grad = None
    buf.sum().backward()
    np.testing.assert_allclose(vals(x.grad), [4.0, 1.0])


def test_hooks_and_retain_grad():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    hx = x.register_hook(lambda g: seen.append(vals(g).tolist()))
    y = x * x
    y.retain_grad()
    assert y.retains_grad
    hy = y.register_hook(lambda g: g * 10)
    y.sum().backward(retain_graph=True)
    np.testing.assert_allclose(vals(y.grad), [10, 10])
    np.testing.assert_allclose(vals(x.grad), [20, 40])
    assert seen == [[20.0, 40.0]]
    hy.remove()
    hx.remove()
    x.grad = None
    y.grad = None
    y.sum().backward()
    np.testing.assert_allclose(vals(x.grad), [2, 4])
    assert len(seen) == 1
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        ember.ones(1).register_hook(lambda g: g)
    z = ember.tensor([1.0], requires_grad=True)

    def bad(g):
        raise ValueError("from the hook")

    z.register_hook(bad)
    with pytest.raises(ValueError, match="from the hook"):
        (z * 2).sum().backward()


def test_grad_modes():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        assert not ember.is_grad_enabled()
        assert not (x * 2).requires_grad
        with ember.enable_grad():
            assert (x * 2).requires_grad
    assert ember.is_grad_enabled()

    @ember.no_grad()
    def f():
        return x * 2

    assert not f().requires_grad
    ember.set_grad_enabled(False)
    assert not (x * 2).requires_grad
    ember.set_grad_enabled(True)
    with ember.set_grad_enabled(False):
        assert not ember.is_grad_enabled()
    assert ember.is_grad_enabled()
    with ember.inference_mode():
        assert ember.is_inference_mode_enabled() and not (x * 2).requires_grad
    assert not ember.is_inference_mode_enabled() and ember.is_grad_enabled()

    @ember.no_grad()
    def gen():
        yield (x * 2).requires_grad
        yield (x * 3).requires_grad

    assert list(gen()) == [False, False]


def test_grad_mode_is_per_thread():
    x = ember.ones(2, requires_grad=True)
    seen = {}
    with ember.no_grad():
        t = threading.Thread(target=lambda: seen.setdefault("other", (x * 2).requires_grad))
        t.start()
        t.join()
    assert seen["other"] is True


def test_detach_and_data():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d._version == y._version
    d.add_(1)
    assert vals(y).tolist() == [3.0, 5.0]
    y.detach_()
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        (x * 1)[0].detach_()
    assert not x.data.requires_grad
    x.data = ember.tensor([7.0, 8.0])
    assert x.requires_grad and vals(x).tolist() == [7.0, 8.0]
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        x.numpy()
    assert x.tolist() == [7.0, 8.0]
    with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
        x.grad = ember.ones(3)


def test_not_yet_differentiable_ops_refuse():
    x = ember.tensor([1.0, 3.0, 2.0], requires_grad=True)
    for f, name in [(lambda: ember.quantile(x, 0.5), "quantile"), (lambda: ember.unique(x), "unique"),
                    (lambda: ember.logcumsumexp(x, 0), "logcumsumexp")]:
        with pytest.raises(RuntimeError, match=f"derivative for {name} is not implemented"):
            f()
    with ember.no_grad():
        ember.quantile(x, 0.5)


class Exp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


class ScaleBy(Function):
    @staticmethod
    def forward(ctx, x, k, scale):
        ctx.scale = scale
        ctx.seen = ctx.needs_input_grad
        return x * k * scale, (x > 0)

    @staticmethod
    def backward(ctx, g, g_mask):
        assert g_mask.dtype == ember.bool and not g_mask.any()  # materialised, as in PyTorch
        return g * ctx.scale * 2, None, None


def test_custom_function():
    x = ember.tensor([0.5, -1.0], dtype=ember.float64, requires_grad=True)
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward"
    y.sum().backward(retain_graph=True)
    np.testing.assert_allclose(vals(x.grad), np.exp(vals(x)))
    (g2,) = ember.autograd.grad(ember.autograd.grad(Exp.apply(x).sum(), x, create_graph=True)[0].sum(), x)
    np.testing.assert_allclose(vals(g2), np.exp(vals(x)))
    assert ember.autograd.gradcheck(Exp.apply, (x,))
    assert ember.autograd.gradgradcheck(Exp.apply, (x,))

    class Mark(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            mask = x > 0
            ctx.mark_non_differentiable(mask)
            return x * 2, mask

        @staticmethod
        def backward(ctx, g, g_mask):
            assert g_mask is None
            return g * 2

    out, mask = Mark.apply(x)
    assert not mask.requires_grad and out.requires_grad
    x.grad = None
    out.sum().backward()
    np.testing.assert_allclose(vals(x.grad), [2, 2])


def test_custom_function_dirty_errors_and_counts():
    class AddOne(Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    leaf = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        AddOne.apply(leaf)
    y = leaf * 3
    z = AddOne.apply(y)
    assert z is y and y.grad_fn.name() == "AddOneBackward"
    y.sum().backward()
    np.testing.assert_allclose(vals(leaf.grad), [3, 3])

    class Wrong(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    a = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        Wrong.apply(a, a).sum().backward()

    class Raises(Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            raise KeyError("inside backward")

    with pytest.raises(KeyError, match="inside backward"):
        Raises.apply(a).sum().backward()
    s = ScaleBy.apply(a, 3.0, 2.0)
    s[0].sum().backward()
    np.testing.assert_allclose(vals(a.grad), [4, 4])
    assert s[1].dtype == ember.bool and not s[1].requires_grad


def test_gradcheck_reports_mismatches():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g

    x = ember.tensor([1.0, 2.0], dtype=ember.float64, requires_grad=True)
    with pytest.raises(ember.autograd.GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        ember.autograd.gradcheck(Bad.apply, (x,))
    assert ember.autograd.gradcheck(Bad.apply, (x,), raise_exception=False) is False
    with pytest.warns(UserWarning, match="not a double precision"):
        ember.autograd.gradcheck(lambda t: t * 2, (ember.ones(2, requires_grad=True),), atol=1e-2, rtol=1e-2, eps=1e-3)


def _classification_data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 2)).astype(np.float32)
    y = ((x[:, 0] * x[:, 1]) > 0).astype(np.int64)
    return ember.tensor(x), ember.tensor(y)


def test_mlp_training_loop_decreases_the_loss():
    ember.manual_seed(0)
    x, y = _classification_data(256, 0)
    w1 = (ember.randn(2, 32) * 0.5).requires_grad_()
    b1 = ember.zeros(32, requires_grad=True)
    w2 = (ember.randn(32, 2) * 0.2).requires_grad_()
    b2 = ember.zeros(2, requires_grad=True)
    params = [w1, b1, w2, b2]
    losses = []
    for _ in range(150):
        logits = F.relu(x @ w1 + b1) @ w2 + b2
        loss = F.cross_entropy(logits, y)
        for p in params:
            p.grad = None
        loss.backward()
        with ember.no_grad():
            for p in params:
                p -= 0.5 * p.grad
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]
    acc = (logits.argmax(1) == y).float().mean().item()
    assert acc > 0.9


def test_cnn_training_loop_decreases_the_loss():
    ember.manual_seed(1)
    rng = np.random.default_rng(1)
    # Bright vertical or horizontal bars on 8x8 images.
    n = 64
    imgs = rng.standard_normal((n, 1, 8, 8)).astype(np.float32) * 0.3
    labels = rng.integers(0, 2, n)
    for i, lab in enumerate(labels):
        if lab:
            imgs[i, 0, :, 3] += 2
        else:
            imgs[i, 0, 3, :] += 2
    x, y = ember.tensor(imgs), ember.tensor(labels)
    conv_w = (ember.randn(4, 1, 3, 3) * 0.3).requires_grad_()
    conv_b = ember.zeros(4, requires_grad=True)
    bn_w, bn_b = ember.ones(4, requires_grad=True), ember.zeros(4, requires_grad=True)
    fc_w = (ember.randn(2, 4 * 4 * 4) * 0.1).requires_grad_()
    fc_b = ember.zeros(2, requires_grad=True)
    params = [conv_w, conv_b, bn_w, bn_b, fc_w, fc_b]
    running_mean, running_var = ember.zeros(4), ember.ones(4)
    losses = []
    for _ in range(40):
        h = F.conv2d(x, conv_w, conv_b, padding=1)
        h = F.batch_norm(h, running_mean, running_var, bn_w, bn_b, training=True)
        h = F.max_pool2d(F.relu(h), 2)
        logits = F.linear(F.dropout(h.flatten(1), 0.1), fc_w, fc_b)
        loss = F.cross_entropy(logits, y)
        for p in params:
            p.grad = None
        loss.backward()
        with ember.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-0.2)
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def _graph_saving_numpy_memory():
    """A loss whose graph saves a tensor backed by a NumPy array (zero-copy), and a weak
    reference to that array: it dies exactly when the saved tensor is freed."""
    source = np.arange(1.0, 5.0)
    alive = weakref.ref(source)
    w = ember.ones(4, dtype=ember.float64, requires_grad=True)
    loss = (ember.from_numpy(source) * w).sum()  # MulBackward saves the NumPy-backed factor
    del source
    gc.collect()
    assert alive() is not None
    return loss, w, alive


def test_saved_tensors_are_freed_when_backward_finishes():
    loss, w, alive = _graph_saving_numpy_memory()
    loss.backward()
    gc.collect()
    assert alive() is None
    assert w.grad.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_retained_graph_keeps_saved_tensors_until_it_is_dropped():
    loss, w, alive = _graph_saving_numpy_memory()
    loss.backward(retain_graph=True)
    gc.collect()
    assert alive() is not None
    del loss
    gc.collect()
    assert alive() is None
