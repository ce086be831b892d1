"""Adam and AdamW (decoupled weight decay), with amsgrad and maximize."""
import ember
from ember.optim import _inplace as K
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

    def _init_state(self, p, amsgrad):
        state = self.state[p]
        if not state:
            state["step"] = ember.tensor(0.0)
            state["exp_avg"] = ember.zeros_like(p)
            state["exp_avg_sq"] = ember.zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = ember.zeros_like(p)
        return state

    def step(self, closure=None):
        return self._run_step(closure, self._update_group)

    def _update_group(self, group):
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay, amsgrad, maximize = group["weight_decay"], group["amsgrad"], group["maximize"]
        decoupled = group.get("decoupled_weight_decay", self._decoupled)
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if maximize:
                grad = -grad
            state = self._init_state(p, amsgrad)
            K.add_(state["step"], 1)
            step = float(state["step"].item())
            if weight_decay != 0:
                if decoupled:
                    K.mul_(p, 1 - lr * weight_decay)
                else:
                    grad = grad + p * weight_decay
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            K.lerp_(exp_avg, grad, 1 - beta1)
            K.mul_(exp_avg_sq, beta2)
            K.addcmul_(exp_avg_sq, grad, grad, 1 - beta2)
            step_size = lr / (1 - beta1**step)
            bias_correction2_sqrt = (1 - beta2**step) ** 0.5
            if amsgrad:
                K.maximum_(state["max_exp_avg_sq"], exp_avg_sq)
                denom = K.sqrt(state["max_exp_avg_sq"])
            else:
                denom = K.sqrt(exp_avg_sq)
            K.div_(denom, bias_correction2_sqrt)
            K.add_(denom, eps)
            K.addcdiv_(p, exp_avg, denom, -step_size)


class AdamW(Adam):
    """Adam with weight decay applied to the parameters directly (p ← p · (1 - lr · wd))."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
