"""Adamax: Adam with the second moment replaced by an exponentially decayed infinity norm."""
import ember
from ember import _foreach as fe
from ember.optim.adam import _check
from ember.optim.optimizer import Optimizer, _scalar_tensor

__all__ = ["Adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        if not state:
            state["step"] = _scalar_tensor(0.0)
            state["exp_avg"] = ember.zeros_like(p)
            state["exp_inf"] = ember.zeros_like(p)
        return state

    def step(self, closure=None):
        return self._run_step(closure, self._update_group)

    def _step_tensors(self, group, params, grads, states):
        lr, (beta1, beta2) = group["lr"], group["betas"]
        if group["maximize"]:
            grads = fe._foreach_neg(grads)
        steps = [s["step"] for s in states]
        fe._foreach_add_(steps, 1)
        if group["weight_decay"] != 0:
            grads = fe._foreach_add(grads, params, alpha=group["weight_decay"])
        exp_avgs, exp_infs = [s["exp_avg"] for s in states], [s["exp_inf"] for s in states]
        fe._foreach_lerp_(exp_avgs, grads, 1 - beta1)
        fe._foreach_mul_(exp_infs, beta2)
        bounds = fe._foreach_abs(grads)
        fe._foreach_add_(bounds, group["eps"])
        fe._foreach_maximum_(exp_infs, bounds)
        fe._foreach_addcdiv_(params, exp_avgs, exp_infs, [-(lr / (1 - beta1 ** step.item())) for step in steps])
