"""ember.optim: trajectories equal to PyTorch's, param groups, state_dict round trips, errors,
and the lr schedulers' sequences."""
import numpy as np
import pytest

import ember
from ember import nn, optim
from nn_helpers import to_np

OPTIMIZERS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, betas=(0.8, 0.9), amsgrad=True, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.9, weight_decay=0.1)),
]


def _quadratic_trajectory(lib, opt_name, kwargs, start, target, steps=8):
    params = [lib.tensor(start[0], requires_grad=True), lib.tensor(start[1], requires_grad=True)]
    opt = getattr(lib.optim, opt_name)([{"params": [params[0]]}, {"params": [params[1]], "lr": kwargs["lr"] / 2}], **kwargs)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((params[0] - lib.tensor(target[0])) ** 2).sum() + (params[1] * lib.tensor(target[1])).sin().sum()
        loss.backward()
        opt.step()
        out.append([np.array(p.detach().numpy()) for p in params])
    return out


@pytest.mark.parametrize("name,kwargs", OPTIMIZERS)
def test_trajectory_matches_torch(name, kwargs):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    start = [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(5).astype(np.float32)]
    target = [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(5).astype(np.float32)]
    ours = _quadratic_trajectory(ember, name, kwargs, start, target)
    theirs = _quadratic_trajectory(torch, name, kwargs, start, target)
    for a, b in zip(ours, theirs):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,kwargs", OPTIMIZERS[1::2])
def test_state_dict_format_and_resume(name, kwargs):
    torch = pytest.importorskip("torch")
    w = nn.Parameter(ember.randn(4))
    opt = getattr(optim, name)([w], **kwargs)
    for _ in range(2):
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
    sd = opt.state_dict()
    tw = torch.nn.Parameter(torch.randn(4))
    topt = getattr(torch.optim, name)([tw], **kwargs)
    (tw * tw).sum().backward()
    topt.step()
    tsd = topt.state_dict()
    assert sorted(sd["state"]) == sorted(tsd["state"])
    assert sorted(sd["state"][0]) == sorted(tsd["state"][0])
    assert sorted(sd["param_groups"][0]) == sorted(tsd["param_groups"][0])
    # resuming from the state dict continues the same trajectory
    w2 = nn.Parameter(w.detach().clone())
    opt2 = getattr(optim, name)([w2], **kwargs)
    opt2.load_state_dict(sd)
    for o, p in ((opt, w), (opt2, w2)):
        o.zero_grad()
        (p * p).sum().backward()
        o.step()
    np.testing.assert_array_equal(to_np(w), to_np(w2))


def test_param_groups_and_errors():
    a, b = nn.Parameter(ember.ones(2)), nn.Parameter(ember.ones(3))
    opt = optim.SGD([a], lr=0.1, momentum=0.5)
    opt.add_param_group({"params": b, "lr": 0.01})
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]
    assert opt.param_groups[1]["momentum"] == 0.5
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.SGD(a, lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {nn.Parameter(ember.ones(1))}})
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.Adam([a], lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires"):
        optim.SGD([a], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        optim.AdamW([a], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([a * 2], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([a], lr=0.1).load_state_dict(opt.state_dict())
    assert "Parameter Group 1" in repr(opt)


def test_zero_grad_and_closure():
    w = nn.Parameter(ember.ones(3))
    opt = optim.SGD([w], lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert float(loss) == 3.0
    np.testing.assert_allclose(to_np(w), [0.0, 0.0, 0.0])
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(to_np(w.grad), [0.0, 0.0, 0.0])
    opt.zero_grad()
    assert w.grad is None


def _lrs(lib, make, steps=12, metric=None):
    p = lib.nn.Parameter(lib.zeros(1))
    opt = lib.optim.SGD([p, ], lr=0.5, momentum=0.9)
    sched = make(lib.optim, opt)
    out = []
    for i in range(steps):
        opt.step()
        sched.step(metric[i]) if metric else sched.step()
        out.append(sched.get_last_lr()[0])
    return out


SCHEDULERS = [
    lambda o, opt: o.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5),
    lambda o, opt: o.lr_scheduler.MultiStepLR(opt, milestones=[2, 5, 5, 9], gamma=0.3),
    lambda o, opt: o.lr_scheduler.ExponentialLR(opt, gamma=0.9),
    lambda o, opt: o.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.01),
    lambda o, opt: o.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=12),
    lambda o, opt: o.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=12, three_phase=True, anneal_strategy="linear"),
    lambda o, opt: o.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (e + 1)),
    lambda o, opt: o.lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=4),
    lambda o, opt: o.lr_scheduler.SequentialLR(opt, [o.lr_scheduler.LinearLR(opt, 0.1, total_iters=3), o.lr_scheduler.ExponentialLR(opt, 0.8)], milestones=[4]),
]


@pytest.mark.parametrize("make", SCHEDULERS)
def test_scheduler_sequences_match_torch(make):
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(_lrs(ember, make), _lrs(torch, make), rtol=1e-12)


def test_reduce_on_plateau_matches_torch():
    torch = pytest.importorskip("torch")
    metric = [1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.85]

    def make(o, opt):
        return o.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=2, cooldown=1)

    np.testing.assert_allclose(_lrs(ember, make, metric=metric), _lrs(torch, make, metric=metric))


def test_one_cycle_drives_momentum_and_scheduler_state_dict():
    p = nn.Parameter(ember.zeros(1))
    opt = optim.Adam([p], lr=0.1)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)
    assert opt.param_groups[0]["betas"][0] == pytest.approx(0.95)
    for _ in range(3):
        opt.step()
        sched.step()
    state = sched.state_dict()
    assert "optimizer" not in state and state["last_epoch"] == 3
    with pytest.raises(ValueError, match="total_steps OR"):
        optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        optim.lr_scheduler.StepLR(object(), 2)
