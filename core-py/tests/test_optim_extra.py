"""The optimizers Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop, LBFGS and SparseAdam, the lr
schedulers CyclicLR, CosineAnnealingWarmRestarts, PolynomialLR, ConstantLR, MultiplicativeLR and
ChainedScheduler, and amp.GradScaler, against PyTorch's trajectories stored in
fixtures/torch_optim_trajectories.npz (written by fixtures/make_optim_trajectories.py, whose
cases and problem these tests run): argument errors, state_dict formats and round trips."""
import copy
import importlib.util
import json
import math
import os
import pickle
import warnings

import numpy as np
import pytest

import ember
from ember import optim
from ember.optim import lr_scheduler

_spec = importlib.util.spec_from_file_location(
    "make_optim_trajectories", os.path.join(os.path.dirname(__file__), "fixtures", "make_optim_trajectories.py"))
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)
FIXTURE = np.load(cases.FIXTURE)
FORMATS = json.loads(str(FIXTURE["formats"]))
# float64 all through: what is left is the order of a few roundings (dot products, fused ops)
TOL = dict(rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name,kwargs", cases.OPTIMIZERS, ids=lambda c: c if isinstance(c, str) else json.dumps(c))
def test_trajectory_and_state_match_torch(name, kwargs):
    key = cases.optimizer_key(name, kwargs)
    rows, opt, _ = cases.run_optimizer(ember, name, kwargs)
    np.testing.assert_allclose(rows, FIXTURE[key], **TOL)
    state = cases.final_state(opt)
    assert sorted(state) == sorted(k.split("/state/")[1] for k in FIXTURE.files if k.startswith(key + "/state/"))
    for state_key, value in state.items():
        np.testing.assert_allclose(value, FIXTURE[f"{key}/state/{state_key}"], **TOL)


@pytest.mark.parametrize("name", sorted({name for name, _ in cases.OPTIMIZERS}))
def test_state_dict_format_matches_torch(name):
    _, opt, _ = cases.run_optimizer(ember, name, next(k for n, k in cases.OPTIMIZERS if n == name), steps=1)
    assert cases.state_format(opt) == FORMATS[name]


@pytest.mark.parametrize("name,kwargs", cases.RESUMED, ids=lambda c: c if isinstance(c, str) else json.dumps(c))
def test_state_dict_round_trip_continues_the_trajectory(name, kwargs):
    """Saved mid-run and loaded into a fresh optimizer over copies of the parameters, the run
    goes on as PyTorch's does after the same round trip."""
    rows = cases.run_resumed_optimizer(ember, name, kwargs)
    np.testing.assert_allclose(rows, FIXTURE["resumed/" + cases.optimizer_key(name, kwargs)], **TOL)


def test_loading_casts_scalar_state_but_not_step_as_torch():
    _, opt, params = cases.run_optimizer(ember, "ASGD", {"lr": 0.05}, steps=2)
    fresh = cases.make_optimizer(ember, "ASGD", {"lr": 0.05}, cases.make_params(ember))
    fresh.load_state_dict(opt.state_dict())
    state = fresh.state_dict()["state"][1]
    assert state["eta"].dtype == ember.float64 and state["step"].dtype == ember.float32
    assert state["ax"] is not opt.state_dict()["state"][1]["ax"]


@pytest.mark.parametrize("kwargs", cases.LBFGS_CASES, ids=json.dumps)
def test_lbfgs_matches_torch(kwargs):
    rows, _, _ = cases.run_lbfgs(ember, kwargs)
    np.testing.assert_allclose(rows, FIXTURE[cases.lbfgs_key(kwargs)], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kwargs", cases.LBFGS_CASES[1:3], ids=json.dumps)
def test_lbfgs_state_dict_round_trip(kwargs):
    _, opt, params = cases.run_lbfgs(ember, kwargs, steps=2)
    assert cases.state_format(opt) == FORMATS["LBFGS"]
    saved = copy.deepcopy(opt.state_dict())
    fresh_params = [ember.tensor(p.detach().numpy(), dtype=ember.float64, requires_grad=True) for p in params]
    fresh = ember.optim.LBFGS(fresh_params, **kwargs)
    fresh.load_state_dict(saved)
    rows, _, _ = cases.run_lbfgs(ember, kwargs, steps=cases.LBFGS_STEPS - 2, opt=fresh, params=fresh_params)
    np.testing.assert_allclose(rows, FIXTURE[cases.lbfgs_key(kwargs)][2:], rtol=1e-10, atol=1e-12)


def test_lbfgs_needs_one_group_and_a_known_line_search():
    a, b = cases.make_params(ember)
    with pytest.raises(ValueError, match=r"LBFGS doesn't support per-parameter options \(parameter groups\)"):
        optim.LBFGS([{"params": [a]}, {"params": [b]}])
    opt = optim.LBFGS([a, b], line_search_fn="armijo")
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(lambda: cases.loss_fn(ember, [a, b]).backward() or cases.loss_fn(ember, [a, b]))
    assert optim.LBFGS([a], max_iter=8).defaults["max_eval"] == 10


BAD_ARGUMENTS = [
    ("Adadelta", dict(lr=-1.0), "Invalid learning rate: -1.0"),
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Adadelta", dict(eps=-1e-3), "Invalid epsilon value: -0.001"),
    ("Adadelta", dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    ("Adamax", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    ("Adamax", dict(betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("NAdam", dict(lr=-0.5), "Invalid learning rate: -0.5"),
    ("RAdam", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("RAdam", dict(eps=-1), "Invalid epsilon value: -1"),
    ("ASGD", dict(lambd=-1), "Invalid lambd value: -1"),
    ("ASGD", dict(alpha=-1), "Invalid alpha value: -1"),
    ("Rprop", dict(etas=(1.1, 1.2)), "Invalid eta values: 1.1, 1.2"),
    ("Rprop", dict(etas=(0.5, 0.9)), "Invalid eta values: 0.5, 0.9"),
    ("SparseAdam", dict(lr=0.0), "Invalid learning rate: 0.0"),
    ("SparseAdam", dict(eps=0.0), "Invalid epsilon value: 0.0"),
    ("LBFGS", dict(lr=-1), "Invalid learning rate: -1"),
]


@pytest.mark.parametrize("name,kwargs,message", BAD_ARGUMENTS)
def test_bad_arguments_raise_torch_errors(name, kwargs, message):
    with pytest.raises(ValueError) as info:
        getattr(optim, name)(cases.make_params(ember), **kwargs)
    assert str(info.value) == message


def test_defaults_match_torch():
    params = cases.make_params(ember)
    assert optim.Adadelta(params).defaults == dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False,
                                                   capturable=False, foreach=None, differentiable=False)
    assert optim.NAdam(params).defaults["momentum_decay"] == 4e-3
    assert optim.ASGD(params).defaults["t0"] == 1e6
    assert optim.Rprop(params).defaults["step_sizes"] == (1e-6, 50)
    assert optim.LBFGS(params).defaults["max_eval"] == 25


def test_sparse_adam_refuses_dense_gradients():
    params = cases.make_params(ember)
    opt = optim.SparseAdam(params)
    assert opt.step() is None  # nothing to update yet
    cases.loss_fn(ember, params).backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, please consider Adam instead"):
        opt.step()
    with pytest.raises(ValueError, match=r"Complex params at indices \[\[0, 0\]\]: SparseAdam does not support complex"):
        optim.SparseAdam([ember.zeros(2, dtype=ember.complex64, requires_grad=True)])


def test_nadam_state_keeps_mu_product_in_the_scalar_dtype():
    _, opt, _ = cases.run_optimizer(ember, "NAdam", {"lr": 0.05}, steps=2)
    state = opt.state_dict()["state"][0]
    assert state["mu_product"].dtype == ember.float32 and state["step"].item() == 2.0


SCHEDULER_KEYS = sorted(cases.SCHEDULERS)


@pytest.mark.parametrize("key", SCHEDULER_KEYS)
def test_scheduler_matches_torch(key):
    rows, _, sched = cases.run_scheduler(ember, key)
    np.testing.assert_allclose(rows, FIXTURE["sched/" + key], rtol=1e-14, atol=0)
    assert sched.get_last_lr() == list(rows[-1, :2])


def test_cyclic_lr_cycles_adam_beta1():
    rows, opt, _ = cases.run_scheduler(ember, "cyclic_triangular", opt_name="Adam")
    np.testing.assert_allclose(rows, FIXTURE["sched/cyclic_adam"], rtol=1e-14, atol=0)
    assert opt.param_groups[0]["betas"][1] == 0.999


def test_warm_restarts_take_fractional_epochs():
    np.testing.assert_allclose(cases.run_warm_restart_epochs(ember), FIXTURE["sched/warm_restart_epochs"], rtol=1e-14)


@pytest.mark.parametrize("key", SCHEDULER_KEYS)
def test_scheduler_state_dict_round_trip(key):
    """Optimizer and scheduler saved after 15 steps and loaded into fresh ones go on as the
    uninterrupted run."""
    _, opt, sched = cases.run_scheduler(ember, key, steps=15)
    state = pickle.loads(pickle.dumps((opt.state_dict(), sched.state_dict())))
    rows, _, _ = cases.run_scheduler(ember, key, steps=cases.SCHEDULER_STEPS - 15, state=state)
    np.testing.assert_allclose(rows, FIXTURE["sched/" + key][15:], rtol=1e-14, atol=0)


def test_cyclic_lr_state_dict_keeps_callable_objects_state():
    class Scale:
        def __init__(self):
            self.base = 0.5

        def __call__(self, x):
            return self.base**x

    opt = cases.make_scheduled_optimizer(ember)
    fn = Scale()
    sched = lr_scheduler.CyclicLR(opt, 0.01, 0.1, step_size_up=2, scale_fn=fn)
    fn.base = 0.25
    state = sched.state_dict()
    assert "_scale_fn_ref" not in state and state["_scale_fn_custom"] == {"base": 0.25}
    other_fn = Scale()
    other = lr_scheduler.CyclicLR(cases.make_scheduled_optimizer(ember), 0.01, 0.1, step_size_up=2, scale_fn=other_fn)
    other.load_state_dict(state)
    assert other_fn.base == 0.25
    triangular = lr_scheduler.CyclicLR(opt, 0.01, 0.1, mode="exp_range", gamma=0.5)
    assert triangular.state_dict()["_scale_fn_custom"] is None


def test_scheduler_bad_arguments():
    opt = cases.make_scheduled_optimizer(ember)
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        lr_scheduler.CyclicLR(opt, 0.01, 0.1, mode="sawtooth")
    with pytest.raises(ValueError, match=r"base_lr must have the same length as optimizer.param_groups. base_lr has 3 values, param_groups has 2."):
        lr_scheduler.CyclicLR(opt, [0.1, 0.2, 0.3], 0.1)
    adagrad = optim.Adagrad(cases.make_params(ember))
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1 with `cycle_momentum` option enabled"):
        lr_scheduler.CyclicLR(adagrad, 0.01, 0.1)
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 1.5"):
        lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=1.5)
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2).step(-1)
    with pytest.raises(ValueError, match="Constant multiplicative factor expected to be between 0 and 1."):
        lr_scheduler.ConstantLR(opt, factor=1.5)
    with pytest.raises(TypeError, match="lr_lambda should be a function, but got float"):
        lr_scheduler.MultiplicativeLR(opt, 0.9)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        lr_scheduler.MultiplicativeLR(opt, [cases._decay])
    with pytest.raises(ValueError, match="ChainedScheduler expects at least one scheduler to be chained, but got no scheduler."):
        lr_scheduler.ChainedScheduler([])
    other = lr_scheduler.ConstantLR(cases.make_scheduled_optimizer(ember))
    with pytest.raises(ValueError, match="ChainedScheduler expects all schedulers to belong to the same optimizer"):
        lr_scheduler.ChainedScheduler([lr_scheduler.ConstantLR(opt), other])
    with pytest.raises(ValueError, match="ChainedScheduler does not support `ReduceLROnPlateau`"):
        lr_scheduler.ChainedScheduler([lr_scheduler.ReduceLROnPlateau(opt)])


def test_closed_forms_with_an_epoch():
    opt = cases.make_scheduled_optimizer(ember)
    poly = lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0)
    with pytest.warns(UserWarning, match="epoch parameter"):
        poly.step(2)
    assert poly.get_last_lr() == [0.1 * 0.25, 0.05 * 0.25]
    const = lr_scheduler.ConstantLR(cases.make_scheduled_optimizer(ember), factor=0.5, total_iters=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        const.step(3)
    assert const.get_last_lr() == [0.1, 0.05]


def test_grad_scaler_matches_torch():
    """Skipped steps on inf, backoff by 0.25 then growth by 4 after 3 clean steps, as PyTorch."""
    rows = cases.run_grad_scaler(ember, cases.make_grad_scaler(ember))
    np.testing.assert_array_equal(rows, FIXTURE["grad_scaler"])
    # the steps with an inf left the parameters where they were
    for i in sorted(cases.SCALER_INF_STEPS):
        np.testing.assert_array_equal(rows[i, :4], rows[i - 1, :4])


def test_grad_scaler_unscale_and_step():
    w = ember.tensor([1.0, -2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.5)
    scaler = ember.amp.GradScaler("cpu", init_scale=8.0)
    assert scaler.get_scale() == 8.0 and scaler.is_enabled()
    scaled = scaler.scale((w * w).sum())
    assert scaled.item() == 40.0
    scaled.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [16.0, -32.0])
    scaler.unscale_(opt)
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, -4.0])  # ready to clip
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer since the last update\(\)."):
        scaler.unscale_(opt)
    assert scaler.step(opt) is None
    np.testing.assert_array_equal(w.detach().numpy(), [0.0, 0.0])
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)."):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)."):
        scaler.unscale_(opt)
    scaler.update()
    assert scaler.state_dict() == {"scale": 8.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
                                   "_growth_tracker": 1}
    scaler.update(3.0)
    assert scaler.get_scale() == 3.0
    scaler.update(ember.tensor([5.0]))
    assert scaler.get_scale() == 5.0


def test_grad_scaler_nested_outputs_and_errors():
    scaler = ember.amp.GradScaler("cpu", init_scale=2.0)
    out = scaler.scale([ember.ones(2), (ember.ones(1), ember.full((1,), 3.0))])
    assert isinstance(out, list) and isinstance(out[1], tuple) and out[1][1].item() == 6.0
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale(3.0)
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        ember.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        ember.amp.GradScaler("cpu", backoff_factor=1.0)
    with pytest.raises(AssertionError, match="Attempted step but _scale is None"):
        ember.amp.GradScaler("cpu").step(optim.SGD([ember.ones(1, requires_grad=True)]))
    w = ember.ones(2, dtype=ember.float16, requires_grad=True)
    (scaler.scale(w.float().sum())).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(optim.SGD([w]))
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if GradScaler is enabled."):
        scaler.step(optim.SGD([w]), closure=lambda: None)


def test_grad_scaler_state_dict_and_pickle():
    scaler = ember.amp.GradScaler("cpu", init_scale=4.0, growth_interval=5)
    scaler.scale(ember.ones(1))
    restored = ember.amp.GradScaler("cpu")
    restored.load_state_dict(scaler.state_dict())
    assert restored.get_scale() == 4.0 and restored.get_growth_interval() == 5
    clone = pickle.loads(pickle.dumps(scaler))
    assert clone.get_scale() == 4.0 and clone._scale is None
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
        disabled = ember.amp.GradScaler()
    assert not disabled.is_enabled() and disabled.state_dict() == {} and disabled.get_scale() == 1.0
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        restored.load_state_dict(disabled.state_dict())
    x = ember.ones(1)
    assert disabled.scale(x) is x


def test_disabled_grad_scaler_steps_through():
    w = ember.tensor([1.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.5)
    scaler = ember.amp.GradScaler("cpu", enabled=False)
    scaler.scale((w * w).sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert w.item() == 0.0


def test_cpu_amp_grad_scaler_is_deprecated_spelling():
    with pytest.warns(FutureWarning, match=r"`ember.cpu.amp.GradScaler\(args...\)` is deprecated"):
        scaler = ember.cpu.amp.GradScaler(init_scale=32.0)
    assert isinstance(scaler, ember.amp.GradScaler) and scaler.is_enabled() and scaler.get_scale() == 32.0
    assert scaler._device == "cpu" and not math.isnan(scaler.get_scale())


def test_lbfgs_runs_the_step_hooks():
    params = cases.make_params(ember)
    opt = optim.LBFGS(params, max_iter=2)
    calls = []
    opt.register_step_pre_hook(lambda o, args, kwargs: calls.append("pre"))
    opt.register_step_post_hook(lambda o, args, kwargs: calls.append("post"))

    def closure():
        opt.zero_grad()
        loss = cases.loss_fn(ember, params)
        loss.backward()
        return loss

    first = opt.step(closure)
    assert calls == ["pre", "post"] and first.item() == pytest.approx(cases.loss_fn(ember, cases.make_params(ember)).item())
    # max_eval defaults to max_iter * 5 // 4 = 2 evaluations: spent after the first iteration
    assert opt.state_dict()["state"][0]["func_evals"] == 2 and opt.state_dict()["state"][0]["n_iter"] == 1
