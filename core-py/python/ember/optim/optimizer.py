"""`Optimizer`: parameter groups, per-parameter state, `state_dict` in PyTorch's format."""
import copy
import warnings
from collections import OrderedDict, defaultdict

import ember
from ember import _C
from ember.nn.modules.module import _typename
from ember.utils.hooks import add_hook

__all__ = ["Optimizer", "required"]


def _scalar_tensor(value):
    """A 0-d tensor for per-parameter scalar state (step counts, NAdam's mu_product, ASGD's eta
    and mu): float64 when that is the default dtype, else float32, as PyTorch keeps them (their
    rounding is part of the trajectory)."""
    dtype = _C.float64 if ember.get_default_dtype() == _C.float64 else _C.float32
    return ember.tensor(value, dtype=dtype)


class _RequiredParameter:
    """Marks a hyper-parameter with no default (every group must give it)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        self._optimizer_step_pre_hooks = OrderedDict()
        self._optimizer_step_post_hooks = OrderedDict()
        if isinstance(params, _C.Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but got " + _typename(params))
        param_groups = list(params)
        if not param_groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_optimizer_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_step_post_hooks", OrderedDict())

    def __repr__(self):
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    def add_param_group(self, param_group):
        """Adds a group of parameters with its own hyper-parameters (the rest from defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, _C.Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for param in param_group["params"]:
            if not isinstance(param, _C.Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in param_group["params"]]
        if len(ids) != len(set(ids)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause an error; see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)
        existing = {id(p) for group in self.param_groups for p in group["params"]}
        if existing & set(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if grad.grad_fn is not None:
                        grad = grad.detach()
                        p.grad = grad
                    grad.zero_()

    def step(self, closure=None):
        raise NotImplementedError

    def _run_step(self, closure, update):
        """Runs `closure` (with grad) for the loss, then `update(group)` for every group under
        no_grad, between the step hooks."""
        self._call_step_pre_hooks()
        loss = None
        if closure is not None:
            with ember.enable_grad():
                loss = closure()
        with ember.no_grad():
            for group in self.param_groups:
                update(group)
        self._call_step_post_hooks()
        return loss

    def _call_step_pre_hooks(self):
        for hook in list(self._optimizer_step_pre_hooks.values()):
            result = hook(self, (), {})
            if result is not None:
                raise RuntimeError(f"{hook} must return None or a tuple of (new_args, new_kwargs), but got {result}.")

    def _call_step_post_hooks(self):
        for hook in list(self._optimizer_step_post_hooks.values()):
            hook(self, (), {})

    def _update_group(self, group):
        """One group's update over its parameters that have a gradient: all of them at once
        through the multi-tensor ops with `foreach=True`, else one at a time (the default, as
        PyTorch's on the CPU). Both run `_step_tensors`, so their arithmetic is the same."""
        params = [p for p in group["params"] if p.grad is not None]
        if not params:
            return
        grads = [p.grad for p in params]
        states = [self._init_state(p, group) for p in params]
        if group.get("foreach"):
            self._step_tensors(group, params, grads, states)
        else:
            for p, g, s in zip(params, grads, states):
                self._step_tensors(group, [p], [g], [s])

    def _init_state(self, param, group):
        """The parameter's state, created on its first step."""
        return self.state[param]

    def register_step_pre_hook(self, hook):
        return add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        return add_hook(self._optimizer_step_post_hooks, hook)

    def state_dict(self):
        """{"state": {index: per-parameter state}, "param_groups": [group with params as
        indices]}: parameters are numbered in order across groups, as PyTorch numbers them."""
        index_of = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index_of.setdefault(id(p), len(index_of))
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index_of[id(k)] if isinstance(k, _C.Tensor) else k): v for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Restores groups' hyper-parameters and per-parameter state (tensors cast to the
        parameter's float dtype, except the step counts)."""
        state_dict = dict(state_dict)
        groups, saved_groups = self.param_groups, copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
        id_map = {old: p for g, s in zip(groups, saved_groups) for old, p in zip(s["params"], g["params"])}
        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = {k: _cast_state(param, k, v) for k, v in value.items()}
            else:
                state[key] = value
        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            new_groups.append(saved)
        self.__setstate__({"state": state, "param_groups": new_groups})


def _cast_state(param, key, value):
    """A copy of a loaded state tensor (never an alias of the state dict's), cast to the
    parameter's float dtype; step counts keep theirs."""
    if isinstance(value, (list, tuple)):  # LBFGS's history: fresh lists, never the state dict's
        return type(value)(_cast_state(param, key, v) for v in value)
    if not isinstance(value, _C.Tensor):
        return value
    if key != "step" and param.is_floating_point() and value.is_floating_point() and value.dtype != param.dtype:
        return value._to_dtype(param.dtype)
    return value.clone()
