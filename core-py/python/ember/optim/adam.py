"""Adam and AdamW (decoupled weight decay), with amsgrad and maximize."""
import ember
from ember import _foreach as fe
from ember.optim.optimizer import Optimizer

__all__ = ["Adam", "AdamW"]


def _check(lr, eps, betas, weight_decay):
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check(lr, eps, betas, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay or self._decoupled)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        if not state:
            state["step"] = ember.tensor(0.0)
            state["exp_avg"] = ember.zeros_like(p)
            state["exp_avg_sq"] = ember.zeros_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = ember.zeros_like(p)
        return state

    def step(self, closure=None):
        return self._run_step(closure, self._update_group)

    def _step_tensors(self, group, params, grads, states):
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay = group["weight_decay"]
        if group["maximize"]:
            grads = fe._foreach_neg(grads)
        steps = [s["step"] for s in states]
        fe._foreach_add_(steps, 1)
        if weight_decay != 0:
            if group.get("decoupled_weight_decay", self._decoupled):
                fe._foreach_mul_(params, 1 - lr * weight_decay)
            else:
                grads = fe._foreach_add(grads, params, alpha=weight_decay)
        exp_avgs, exp_avg_sqs = [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states]
        fe._foreach_lerp_(exp_avgs, grads, 1 - beta1)
        fe._foreach_mul_(exp_avg_sqs, beta2)
        fe._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
        counts = [float(step.item()) for step in steps]
        if group["amsgrad"]:
            max_sqs = [s["max_exp_avg_sq"] for s in states]
            fe._foreach_maximum_(max_sqs, exp_avg_sqs)
            denom = fe._foreach_sqrt(max_sqs)
        else:
            denom = fe._foreach_sqrt(exp_avg_sqs)
        fe._foreach_div_(denom, [(1 - beta2**n) ** 0.5 for n in counts])
        fe._foreach_add_(denom, eps)
        fe._foreach_addcdiv_(params, exp_avgs, denom, [-(lr / (1 - beta1**n)) for n in counts])


class AdamW(Adam):
    """Adam with weight decay applied to the parameters directly (p ← p · (1 - lr · wd))."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
