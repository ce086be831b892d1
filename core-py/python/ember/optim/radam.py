"""RAdam: Adam whose adaptive step is rectified by the variance of its second-moment estimate
(plain momentum SGD while that estimate is too young)."""
import ember
from ember import _foreach as fe
from ember.optim.adam import _check
from ember.optim.nadam import _weight_decay
from ember.optim.optimizer import Optimizer, _scalar_tensor

__all__ = ["RAdam"]


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False):
        _check(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        if not state:
            state["step"] = _scalar_tensor(0.0)
            state["exp_avg"] = ember.zeros_like(p)
            state["exp_avg_sq"] = ember.zeros_like(p)
        return state

    def step(self, closure=None):
        return self._run_step(closure, self._update_group)

    def _step_tensors(self, group, params, grads, states):
        lr, (beta1, beta2) = group["lr"], group["betas"]
        if group["maximize"]:
            grads = fe._foreach_neg(grads)
        steps = [s["step"] for s in states]
        fe._foreach_add_(steps, 1)
        grads = _weight_decay(group, params, grads)
        exp_avgs, exp_avg_sqs = [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states]
        fe._foreach_lerp_(exp_avgs, grads, 1 - beta1)
        fe._foreach_mul_(exp_avg_sqs, beta2)
        fe._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
        for param, exp_avg, exp_avg_sq, step in zip(params, exp_avgs, exp_avg_sqs, steps):
            param.sub_(_update(exp_avg, exp_avg_sq, step.item(), lr, beta1, beta2, group["eps"]))


def _update(exp_avg, exp_avg_sq, step, lr, beta1, beta2, eps):
    """The step to subtract: the bias-corrected momentum times lr, and, once the length of the
    approximated simple moving average passes 5, times the rectified adaptive factor."""
    bias_correction2 = 1 - beta2**step
    update = exp_avg / (1 - beta1**step) * lr
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
    if rho_t <= 5.0:
        return update
    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
    # PyTorch divides a number by a tensor as reciprocal(tensor) * number: so do we, for its rounding
    adaptive = (exp_avg_sq.sqrt() + eps).reciprocal() * bias_correction2**0.5
    return update * adaptive * rect
