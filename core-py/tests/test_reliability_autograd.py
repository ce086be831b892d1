"""Issue 28, autograd: views and in-place writes (a view made before a write to its base, or to
another view of it, takes its gradient from the base's new history), freeing and running very
deep graphs, and misuse that PyTorch refuses."""
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from autograd_helpers import gradchecks, leaf, np64


def grad_of(fn, x):
    x.grad = None
    fn(x).backward()
    return np64(x.grad)


# ---- a view made before an in-place write to its base ----

def test_view_sees_in_place_write_to_its_base():
    a = ember.ones(3, requires_grad=True)
    b = a.clone()
    v = b.view(3)
    b.exp_()
    v.sum().backward()
    np.testing.assert_allclose(np64(a.grad), [math.e] * 3, rtol=1e-6)
    assert v.grad_fn.name() == "AsStridedBackward0"
    assert v.grad_fn.next_functions[0][0].name() == "ExpBackward0"


@pytest.mark.parametrize("make_view", [
    lambda b: b.t(),
    lambda b: b[:, ::2],
    lambda b: b[1],
    lambda b: b.diagonal(),
    lambda b: b.diagonal(offset=1),
    lambda b: b.transpose(0, 1)[::2, 1:],
    lambda b: b[0].expand(2, 3),
    lambda b: b.view(9)[2:8:3],
    lambda b: b.unsqueeze(0).flip(2),
], ids=["t", "step", "select", "diagonal", "offdiagonal", "transposed-slice", "expand", "view-chain", "unsqueeze-flip"])
def test_views_of_every_layout_follow_a_write_to_the_base(make_view):
    rng = np.random.default_rng(0)
    x = leaf(rng.standard_normal((3, 3)))
    w = rng.standard_normal(tuple(make_view(ember.zeros(3, 3)).shape))

    def f(x):
        b = x * 1.0
        v = make_view(b)
        b.sin_()
        return (v * ember.tensor(w)).sum()

    # The view holds sin(x) at its elements: d/dx sum(w * sin(x)[view]) = cos(x) * (w scattered).
    scattered = np.zeros((3, 3))
    np.add.at(scattered.reshape(-1), np64(make_view(ember.arange(9.0).view(3, 3))).astype(int).ravel(), w.ravel())
    np.testing.assert_allclose(grad_of(f, x), np.cos(np64(x)) * scattered, rtol=1e-10)
    gradchecks(f, [np64(x)])


def test_view_of_a_view_follows_a_write_to_the_root_base():
    x = leaf(np.arange(1.0, 7.0))

    def f(x):
        b = x * 1.0
        row = b.view(2, 3)[1]
        part = row[::2]
        b.mul_(b)
        return part.sum()

    np.testing.assert_allclose(grad_of(f, x), [0, 0, 0, 8, 0, 12])
    gradchecks(f, [np64(x)])


def test_sibling_views_overlapping_and_disjoint():
    x = leaf(np.arange(1.0, 6.0))

    def overlapping(x):
        b = x * 1.0
        v1, v2 = b[:3], b[1:]
        v1.mul_(3)
        return (v2 ** 2).sum()

    def disjoint(x):
        b = x * 1.0
        v1, v2 = b[:2], b[2:]
        v1.mul_(3)
        return (v1 * v2[:2]).sum() + v2.sum()

    a = np64(x)
    # v2 = [3 x1, 3 x2, x3, x4]
    np.testing.assert_allclose(grad_of(overlapping, x), [0, 18 * a[1], 18 * a[2], 2 * a[3], 2 * a[4]])
    # 3 x0 x2 + 3 x1 x3 + x2 + x3 + x4
    np.testing.assert_allclose(grad_of(disjoint, x), [3 * a[2], 3 * a[3], 3 * a[0] + 1, 3 * a[1] + 1, 1])
    gradchecks(overlapping, [a])
    gradchecks(disjoint, [a])


def test_written_view_and_its_base_keep_working():
    # The CopySlices path: the base and the written view itself.
    x = leaf(np.arange(1.0, 5.0))

    def via_base(x):
        b = x * 1.0
        b[1:3].mul_(b[0:2] + 1)
        return (b * b).sum()

    def via_view(x):
        b = x * 1.0
        v = b[1:3]
        v.exp_()
        return v.sum() + b.sum()

    a = np64(x)
    np.testing.assert_allclose(grad_of(via_view, x), [1, 2 * math.exp(a[1]), 2 * math.exp(a[2]), 1])
    gradchecks(via_base, [a])
    gradchecks(via_view, [a])


def test_view_made_before_the_base_required_grad():
    x = ember.ones(3, requires_grad=True)
    b = ember.zeros(3)
    v = b[1:]
    assert not v.requires_grad
    b.copy_(x * 2)
    assert v.requires_grad and not v.is_leaf
    v.sum().backward()
    np.testing.assert_allclose(np64(x.grad), [0, 2, 2])


def test_complex_and_real_views_of_one_storage():
    z0 = np.array([1 + 2j, -3 + 0.5j])
    z = ember.tensor(z0, dtype=ember.complex128).requires_grad_()

    def scaled_through_floats(z):
        b = z * 1.0
        ember.view_as_real(b).mul_(2)
        return b.abs().sum()

    def real_part_after_write(z):
        b = z * 1.0
        re = b.real
        b.mul_(b)
        return re.sum()

    scaled_through_floats(z).backward()
    np.testing.assert_allclose(np.asarray(z.grad), 2 * z0 / np.abs(z0))
    z.grad = None
    real_part_after_write(z).backward()
    # Re(z²) = x² - y²: gradient 2x - 2iy = 2 conj(z)
    np.testing.assert_allclose(np.asarray(z.grad), 2 * np.conj(z0))


def test_no_grad_view_written_in_grad_mode_is_refused():
    x = ember.ones(2, requires_grad=True)
    y = x * 1.0
    with ember.no_grad():
        v = y[:1]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace with grad mode enabled"):
        v.mul_(2)
    with ember.no_grad():
        v.mul_(2)  # both inside no_grad: fine, untracked


def test_no_grad_view_requires_grad_through_its_base_but_passes_no_gradient():
    # PyTorch: the view reports its base's requires_grad, is a leaf, and what it feeds into
    # backward reaches neither it nor its base
    a = ember.ones(3, requires_grad=True)
    with ember.no_grad():
        v, plain = a[1:], ember.ones(3)[1:]
    assert v.requires_grad and v.is_leaf and v.grad_fn is None
    assert not plain.requires_grad
    out = (v * 2).sum()
    assert out.requires_grad
    out.backward()
    assert a.grad is None and v.grad is None
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        v.mul_(2)
    assert not v.detach().requires_grad


def test_optimizer_style_write_under_no_grad_keeps_views_right():
    w = ember.ones(4, requires_grad=True)
    half = w[:2]
    with ember.no_grad():
        w.add_(1.0)
    (half * 3).sum().backward()
    np.testing.assert_allclose(np64(w.grad), [3, 3, 0, 0])


def test_retained_grad_is_the_latest_versions():
    x = ember.ones(2, requires_grad=True)
    y = x * 1.0
    y.retain_grad()
    y.mul_(3)
    y.sum().backward()
    np.testing.assert_allclose(np64(y.grad), [1, 1])
    np.testing.assert_allclose(np64(x.grad), [3, 3])


# ---- very deep graphs ----

def run_isolated(code):
    """Runs `code` in a fresh interpreter (default thread stack), so that a crash is a failure."""
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return r.stdout


@pytest.mark.parametrize("backward", [True, False], ids=["backward", "no-backward"])
def test_a_200000_node_graph_is_run_and_freed_without_recursion(backward):
    out = run_isolated(f"""
        import ember
        x = ember.ones(1, requires_grad=True)
        y = x
        for _ in range(200_000):
            y = y * 1.0
        if {backward}:
            y.backward()
            print(x.grad.item())
        del y
        print("freed")
    """)
    assert out.split() == (["1.0", "freed"] if backward else ["freed"])


def test_a_deep_graph_with_saved_tensors_is_freed():
    out = run_isolated("""
        import ember
        x = ember.full((1,), 1.0, requires_grad=True)
        y = x
        for _ in range(200_000):
            y = (y * y).sqrt()
        del y
        print("freed")
    """)
    assert out.split() == ["freed"]


# ---- misuse ----

def test_backward_twice_without_retain_graph():
    x = ember.ones(2, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_backward_of_a_non_scalar_needs_a_gradient():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"):
        ember.ones(2, dtype=ember.int64).requires_grad_()
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        ember.autograd.grad((x * 2).sum(), [ember.ones(2, dtype=ember.int64)])
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        (x * 2).long().sum().backward()


def test_a_hook_that_raises_propagates_its_exception_and_the_graph_still_works():
    x = ember.ones(2, requires_grad=True)
    y = x * 2

    def boom(g):
        raise ValueError("boom")

    h = y.register_hook(boom)
    z = y.sum()
    with pytest.raises(ValueError, match="boom"):
        z.backward(retain_graph=True)
    h.remove()
    z.backward()
    np.testing.assert_allclose(np64(x.grad), [2, 2])


def test_a_hook_may_not_change_the_gradients_size_or_dtype():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: ember.ones(2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="hook has changed the type of value"):
        y.sum().backward()
    y = x * 2
    y.register_hook(lambda g: ember.ones(3))
    with pytest.raises(RuntimeError, match="hook has changed the size of value"):
        y.sum().backward()


def test_modifying_a_saved_tensor_in_place_is_caught():
    x = ember.ones(2, requires_grad=True)
    y = x * 2
    z = y.sin()
    y[0].add_(1)  # through a view: the version counter is shared
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*output 0 of MulBackward0, is at version 1; expected version 0"):
        z.sum().backward()


def test_complex_outputs_need_a_gradient_of_their_kind():
    z = ember.ones(2, dtype=ember.complex64, requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for real scalar outputs"):
        (z * 2).sum().backward()
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="For complex Tensors, both grad_output and output are required to have the same dtype"):
        (x * 2).backward(ember.ones(2, dtype=ember.complex64))
