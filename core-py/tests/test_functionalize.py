"""`ember.func.functionalize`: PyTorch's observable semantics (mutations of inputs applied at
the end, outputs never aliasing inputs, no view outputs with remove="mutations_and_views"),
composition with grad and vmap, and torch.func's results where installed."""
import numpy as np
import pytest

import ember
from ember import func


def mutate_through_view(a):
    b = a.view(-1)
    b.add_(1)
    c = b * 2
    c.mul_(3)
    return b, a[0], c


def test_input_mutations_reach_inputs_once_at_the_end():
    x = ember.zeros(2, 2)
    seen = []

    def f(a):
        a.add_(1)
        seen.append(x.sum().item())  # the caller's tensor is untouched while f runs
        return a * 2

    out = func.functionalize(f)(x)
    assert seen == [0.0] and (x == 1).all() and (out == 2).all()


def test_outputs_do_not_alias_inputs():
    x = ember.zeros(2, 2)
    flat, first, scaled = func.functionalize(mutate_through_view)(x)
    assert (x == 1).all() and (flat == 1).all() and (scaled == 6).all()
    assert not flat._same_storage(x) and not first._same_storage(x)
    assert flat._is_view()  # remove="mutations" keeps views (of private memory)
    flat2, first2, _ = func.functionalize(mutate_through_view, remove="mutations_and_views")(x)
    assert not flat2._is_view() and not first2._is_view() and (x == 2).all()


def test_unmutated_input_returned_as_itself_and_non_tensors_pass_through():
    x = ember.ones(3)
    out, k = func.functionalize(lambda a, n: (a, n + 1))(x, 4)
    assert out is x and k == 5


def test_composes_with_grad_and_vmap():
    def f(a):
        b = a.clone()
        b.mul_(a)  # an in-place op on an intermediate: b = a * a
        return b.sum()

    x = ember.tensor([1.0, 2.0, 3.0])
    np.testing.assert_allclose(func.grad(func.functionalize(f))(x).numpy(), 2 * x.numpy())

    def g(a):
        a.mul_(2)
        return a.sum()

    np.testing.assert_allclose(func.grad(func.functionalize(g))(x).numpy(), [2.0, 2.0, 2.0])
    xs = ember.ones(4, 3)
    np.testing.assert_allclose(func.vmap(func.functionalize(f))(xs).numpy(), [3.0] * 4)


def test_bad_remove():
    with pytest.raises(RuntimeError, match="received invalid argument for remove=views"):
        func.functionalize(lambda a: a, remove="views")


def test_matches_torch_func():
    torch = pytest.importorskip("torch")
    mine = func.functionalize(mutate_through_view)(ember.zeros(2, 2))
    x = torch.zeros(2, 2)
    theirs = torch.func.functionalize(mutate_through_view)(x)
    for m, t in zip(mine, theirs):
        np.testing.assert_allclose(m.numpy(), t.numpy())
    def square_through_view(a):
        b = a.clone()
        b.view(-1).mul_(a.view(-1))
        return b

    jac = func.jacrev(func.functionalize(square_through_view))(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
    jac_t = torch.func.jacrev(torch.func.functionalize(square_through_view))(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_allclose(jac.numpy(), jac_t.numpy())
