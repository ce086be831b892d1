"""Adagrad: per-element learning rates from the running sum of squared gradients."""
import ember
from ember import _foreach as fe
from ember.optim.optimizer import Optimizer

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = ember.tensor(0.0)
                state["sum"] = ember.full_like(p, group["initial_accumulator_value"])

    def step(self, closure=None):
        return self._run_step(closure, self._update_group)

    def _step_tensors(self, group, params, grads, states):
        lr, lr_decay = group["lr"], group["lr_decay"]
        if group["maximize"]:
            grads = fe._foreach_neg(grads)
        steps = [s["step"] for s in states]
        fe._foreach_add_(steps, 1)
        if group["weight_decay"] != 0:
            grads = fe._foreach_add(grads, params, alpha=group["weight_decay"])
        sums = [s["sum"] for s in states]
        fe._foreach_addcmul_(sums, grads, grads, 1)
        std = fe._foreach_sqrt(sums)
        fe._foreach_add_(std, group["eps"])
        fe._foreach_addcdiv_(params, grads, std, [-lr / (1 + (float(step.item()) - 1) * lr_decay) for step in steps])
