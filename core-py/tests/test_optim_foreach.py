"""Multi-tensor (`foreach=True`) optimizer steps and the `ember._foreach_*` ops they use: the
same trajectories as the one-parameter-at-a-time steps, and as PyTorch's foreach steps where
PyTorch is installed."""
import numpy as np
import pytest

import ember
from nn_helpers import to_np

CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "maximize": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "dampening": 0.3}),
    ("Adam", {"lr": 0.05}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True, "maximize": True}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.05}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True, "weight_decay": 0.1}),
]
STEPS = 6


def _start():
    """Three parameters of different shapes (one never gets a gradient) and fixed targets."""
    rng = np.random.default_rng(0)
    shapes = [(3, 4), (5,), (2, 2, 2)]
    return [rng.standard_normal(s).astype(np.float32) for s in shapes], [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _trajectory(lib, name, kwargs, foreach):
    starts, targets = _start()
    params = [lib.nn.Parameter(lib.from_numpy(s.copy())) for s in starts]
    targets = [lib.from_numpy(t) for t in targets]
    opt = getattr(lib.optim, name)(params, foreach=foreach, **kwargs)
    history = []
    for _ in range(STEPS):
        opt.zero_grad()
        # The last parameter is left out of the loss: it has no gradient and must not move.
        loss = sum(((p - t) ** 2 * (i + 1)).sum() for i, (p, t) in enumerate(zip(params[:2], targets[:2])))
        loss.backward()
        opt.step()
        history.append([np.array(p.detach().numpy()) for p in params])
    return history


@pytest.mark.parametrize("name,kwargs", CONFIGS)
def test_foreach_equals_for_loop(name, kwargs):
    looped = _trajectory(ember, name, kwargs, foreach=False)
    fused = _trajectory(ember, name, kwargs, foreach=True)
    for a, b in zip(looped, fused):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(fused[-1][2], _start()[0][2])
    assert not np.allclose(fused[-1][0], _start()[0][0])


@pytest.mark.parametrize("name,kwargs", CONFIGS)
def test_foreach_matches_torch_foreach(name, kwargs):
    torch = pytest.importorskip("torch")
    ours, theirs = _trajectory(ember, name, kwargs, True), _trajectory(torch, name, kwargs, True)
    for a, b in zip(ours, theirs):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_foreach_flag_is_a_group_setting():
    p, q = ember.nn.Parameter(ember.ones(2)), ember.nn.Parameter(ember.ones(3))
    opt = ember.optim.SGD([{"params": [p], "foreach": True}, {"params": [q]}], lr=0.5)
    assert [g["foreach"] for g in opt.param_groups] == [True, None]
    (p.sum() + q.sum()).backward()
    opt.step()
    assert p.tolist() == [0.5, 0.5] and q.tolist() == [0.5, 0.5, 0.5]


def test_foreach_ops_by_hand():
    a, b = [ember.tensor([1.0, 2.0]), ember.tensor([3.0])], [ember.tensor([10.0, 20.0]), ember.tensor([30.0])]
    ember._foreach_add_(a, b, alpha=0.5)
    assert [t.tolist() for t in a] == [[6.0, 12.0], [18.0]]
    ember._foreach_mul_(a, [2.0, 0.5])
    assert [t.tolist() for t in a] == [[12.0, 24.0], [9.0]]
    ember._foreach_addcmul_(a, b, b, 0.01)
    assert [t.tolist() for t in a] == [[13.0, 28.0], [18.0]]
    ember._foreach_addcdiv_(a, b, b, [1.0, -2.0])
    assert [t.tolist() for t in a] == [[14.0, 29.0], [16.0]]
    ember._foreach_lerp_(a, b, 0.5)
    assert [t.tolist() for t in a] == [[12.0, 24.5], [23.0]]
    ember._foreach_sub_(a, 2.0)
    ember._foreach_div_(a, ember.tensor(2.0))
    assert [t.tolist() for t in a] == [[5.0, 11.25], [10.5]]
    ember._foreach_maximum_(a, [ember.tensor([6.0, 0.0]), ember.tensor([0.0])])
    assert [t.tolist() for t in a] == [[6.0, 11.25], [10.5]]
    ember._foreach_zero_(a)
    assert [t.tolist() for t in a] == [[0.0, 0.0], [0.0]]


def test_out_of_place_foreach_ops_leave_inputs():
    a, b = [ember.tensor([4.0, 9.0]), ember.tensor([16.0])], [ember.tensor([1.0, 1.0]), ember.tensor([2.0])]
    results = {
        "sqrt": ember._foreach_sqrt(a),
        "neg": ember._foreach_neg(a),
        "add": ember._foreach_add(a, b, alpha=2),
        "addcmul": ember._foreach_addcmul(a, b, b, -1),
        "lerp": ember._foreach_lerp(a, b, [0.0, 1.0]),
    }
    assert [t.tolist() for t in a] == [[4.0, 9.0], [16.0]]
    assert {k: [t.tolist() for t in v] for k, v in results.items()} == {
        "sqrt": [[2.0, 3.0], [4.0]], "neg": [[-4.0, -9.0], [-16.0]], "add": [[6.0, 11.0], [20.0]],
        "addcmul": [[3.0, 8.0], [12.0]], "lerp": [[4.0, 9.0], [2.0]]}
    assert isinstance(results["sqrt"], tuple)


def test_foreach_op_errors():
    a = [ember.ones(2), ember.ones(3)]
    with pytest.raises(RuntimeError, match="Tensor lists must have the same number of tensors, got 2 and 1"):
        ember._foreach_add_(a, [ember.ones(2)])
    with pytest.raises(RuntimeError, match="Tensor list must have at least one tensor."):
        ember._foreach_add_([], 1)
    with pytest.raises(RuntimeError, match="Tensor list must have same number of elements as scalar list."):
        ember._foreach_mul_(a, [1.0])
    with pytest.raises(TypeError, match="expected other to be a Number, a list of Numbers, a Tensor or a list of Tensors"):
        ember._foreach_add_(a, "x")
    with pytest.raises(RuntimeError):
        ember._foreach_add_(a, [ember.ones(3), ember.ones(3)])


def test_foreach_ops_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    data = [[rng.random(s).astype(np.float32) + 0.5 for s in [(3,), (2, 2)]] for _ in range(3)]

    def run(lib):
        a, b, c = ([lib.from_numpy(x.copy()) for x in group] for group in data)
        lib._foreach_addcdiv_(a, b, c, [0.3, -0.7])
        lib._foreach_lerp_(a, c, 0.25)
        lib._foreach_addcmul_(a, b, c, 2.0)
        out = lib._foreach_sqrt(a)
        return [t.numpy() for t in out]

    for x, y in zip(run(ember), run(torch)):
        np.testing.assert_allclose(x, y, rtol=1e-6)


def test_foreach_momentum_keeps_grads_untouched():
    p = ember.nn.Parameter(ember.ones(3))
    opt = ember.optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True, foreach=True)
    for _ in range(2):
        opt.zero_grad()
        (p * 2).sum().backward()
        opt.step()
        assert to_np(p.grad).tolist() == [2.0, 2.0, 2.0]
