"""Module backward hooks: full hooks, pre-hooks, the deprecated form, global hooks, and their
errors, against hand-computed gradients and PyTorch where installed."""
import numpy as np
import pytest

import ember
from ember import nn
from ember.nn.modules import module as module_mod


def _linear(lib):
    m = lib.nn.Linear(3, 2)
    with lib.no_grad():
        m.weight.copy_(lib.arange(6.0).reshape(2, 3))
        m.bias.zero_()
    return m


def _hooked_step(lib):
    """Linear with a pre-hook tripling grad_output and a hook doubling grad_input; returns
    what the hooks saw and the resulting gradients."""
    m, seen = _linear(lib), []

    def pre(module, grad_output):
        seen.append(("pre", grad_output[0].tolist()))
        return (grad_output[0] * 3,)

    def hook(module, grad_input, grad_output):
        seen.append(("hook", grad_input[0].tolist(), grad_output[0].tolist()))
        return (grad_input[0] * 2,)

    m.register_full_backward_pre_hook(pre)
    m.register_full_backward_hook(hook)
    x = lib.ones(1, 3, requires_grad=True)
    m(x).sum().backward()
    return seen, x.grad.tolist(), m.weight.grad.tolist()


def test_full_hook_and_pre_hook_replace_gradients():
    seen, x_grad, w_grad = _hooked_step(ember)
    # y = W x; dy = 1 tripled by the pre-hook -> dx = 3 * W^T 1 = 3 * [3, 5, 7], doubled by the hook.
    assert seen == [("pre", [[1.0, 1.0]]), ("hook", [[9.0, 15.0, 21.0]], [[3.0, 3.0]])]
    assert x_grad == [[18.0, 30.0, 42.0]]
    assert w_grad == [[3.0, 3.0, 3.0], [3.0, 3.0, 3.0]]


def test_hooks_match_torch():
    torch = pytest.importorskip("torch")
    assert _hooked_step(ember) == _hooked_step(torch)


def _mixed_arguments(lib, b_requires_grad):
    class Two(lib.nn.Module):
        def forward(self, a, k, b):
            return a * k, b + 1

    seen = []
    module = Two()
    module.register_full_backward_hook(lambda m, gi, go: seen.append((gi, go)))
    a, b = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=b_requires_grad)
    out_a, out_b = module(a, 3, b)
    out_a.sum().backward()
    (grad_input, grad_output), = seen
    convert = lambda gs: [None if g is None else g.tolist() for g in gs]  # noqa: E731
    return convert(grad_input), convert(grad_output), out_b.requires_grad


@pytest.mark.parametrize("b_requires_grad", [False, True])
def test_non_tensor_and_unreached_arguments(b_requires_grad):
    grad_input, grad_output, out_b_requires_grad = _mixed_arguments(ember, b_requires_grad)
    # Non-tensors get None; tensors no gradient reached get zeros; unreached outputs None.
    assert grad_input == [[3.0, 3.0], None, [0.0, 0.0]]
    assert grad_output == [[1.0, 1.0], None]
    assert out_b_requires_grad == b_requires_grad


@pytest.mark.parametrize("b_requires_grad", [False, True])
def test_mixed_arguments_match_torch(b_requires_grad):
    torch = pytest.importorskip("torch")
    assert _mixed_arguments(ember, b_requires_grad) == _mixed_arguments(torch, b_requires_grad)


def test_handles_remove_hooks():
    m, calls = _linear(ember), []
    h1 = m.register_full_backward_hook(lambda *a: calls.append("hook"))
    h2 = m.register_full_backward_pre_hook(lambda *a: calls.append("pre"))
    x = ember.ones(1, 3, requires_grad=True)
    m(x).sum().backward()
    assert calls == ["pre", "hook"]
    h1.remove()
    h2.remove()
    m(x).sum().backward()
    assert calls == ["pre", "hook"]
    assert not m._backward_hooks and not m._backward_pre_hooks


def test_prepend_orders_hooks():
    m, order = _linear(ember), []
    m.register_full_backward_hook(lambda *a: order.append("first"))
    m.register_full_backward_hook(lambda *a: order.append("prepended"), prepend=True)
    m(ember.ones(1, 3, requires_grad=True)).sum().backward()
    assert order == ["prepended", "first"]


def test_hooks_on_children_of_a_sequential():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    order = []
    for name, child in model.named_children():
        child.register_full_backward_hook(lambda m, gi, go, name=name: order.append((name, tuple(go[0].shape))))
    model(ember.randn(5, 3, requires_grad=True)).sum().backward()
    assert order == [("2", (5, 1)), ("1", (5, 4)), ("0", (5, 4))]


def test_inputs_not_requiring_grad_fire_from_outputs():
    m, seen = _linear(ember), []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go[0].tolist())))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        m(ember.ones(1, 3)).sum().backward()
    assert seen == [((None,), [[1.0, 1.0]])]
    assert m.weight.grad.tolist() == [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]


def test_inputs_not_requiring_grad_reject_replacement():
    m = _linear(ember)
    m.register_full_backward_hook(lambda mod, gi, go: (ember.ones(1, 3),))
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="should always return None or None for all gradients"):
        m(ember.ones(1, 3)).sum().backward()


def test_wrong_number_of_gradients():
    m = _linear(ember)
    m.register_full_backward_hook(lambda mod, gi, go: (None, None))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but expected 1"):
        m(ember.ones(1, 3, requires_grad=True)).sum().backward()
    m = _linear(ember)
    m.register_full_backward_pre_hook(lambda mod, go: (None, None))
    with pytest.raises(RuntimeError, match="invalid number of grad_output, got 2, but expected 1"):
        m(ember.ones(1, 3, requires_grad=True)).sum().backward()


def test_inplace_input_modification_is_an_error():
    class AddInPlace(nn.Module):
        def forward(self, x):
            x.add_(1)
            return x * 2

    module = AddInPlace()
    module.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Output 0 of BackwardHookFunction is a view and is being modified inplace"):
        module(ember.ones(2, requires_grad=True).clone())


def test_non_tensor_output_warns_and_skips_hooks():
    class ToDict(nn.Module):
        def forward(self, x):
            return {"y": x * 2}

    module, calls = ToDict(), []
    module.register_full_backward_hook(lambda *a: calls.append(1))
    with pytest.warns(UserWarning, match="module output should be a Tensor or a tuple of Tensors"):
        out = module(ember.ones(2, requires_grad=True))
    out["y"].sum().backward()
    assert calls == []


def test_regular_and_full_hooks_do_not_mix():
    m = _linear(ember)
    m.register_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        m.register_full_backward_hook(lambda *a: None)
    m = _linear(ember)
    m.register_full_backward_hook(lambda *a: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
        m.register_backward_hook(lambda *a: None)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # PyTorch's own deprecation notice
def test_deprecated_hook_on_a_single_op_module_matches_torch():
    def run(lib):
        relu, seen = lib.nn.ReLU(), []
        relu.register_backward_hook(lambda m, gi, go: seen.append((gi[0].tolist(), go[0].tolist())))
        x = lib.tensor([-1.0, 2.0], requires_grad=True)
        relu(x).sum().backward()
        return seen

    assert run(ember) == [([0.0, 1.0], [1.0, 1.0])]
    torch = pytest.importorskip("torch")
    assert run(ember) == run(torch)


def test_global_hooks_run_before_module_hooks():
    m, order = _linear(ember), []
    m.register_full_backward_hook(lambda *a: order.append("module"))
    m.register_full_backward_pre_hook(lambda *a: order.append("module pre"))
    handles = [module_mod.register_module_full_backward_hook(lambda *a: order.append("global")),
               module_mod.register_module_full_backward_pre_hook(lambda *a: order.append("global pre")),
               module_mod.register_module_forward_hook(lambda *a: order.append("global forward"))]
    try:
        m(ember.ones(1, 3, requires_grad=True)).sum().backward()
        with pytest.raises(RuntimeError, match="as a global Module hook"):
            module_mod.register_module_backward_hook(lambda *a: None)
    finally:
        for handle in handles:
            handle.remove()
        module_mod._global_is_full_backward_hook = None
    assert order == ["global forward", "global pre", "module pre", "global", "module"]
    order.clear()
    m(ember.ones(1, 3, requires_grad=True)).sum().backward()
    assert order == ["module pre", "module"]


def test_no_grad_forward_skips_hooks():
    m, calls = _linear(ember), []
    m.register_full_backward_hook(lambda *a: calls.append(1))
    with ember.no_grad():
        y = m(ember.ones(1, 3, requires_grad=True))
    assert y.grad_fn is None and calls == []


def test_hook_gradients_agree_with_autograd_grad():
    m = _linear(ember)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(gi[0]))
    x = ember.randn(4, 3, requires_grad=True)
    (gx,) = ember.autograd.grad(m(x).pow(2).sum(), [x])
    np.testing.assert_allclose(np.asarray(seen[0]), np.asarray(gx), rtol=1e-6)
