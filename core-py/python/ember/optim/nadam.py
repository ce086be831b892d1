"""NAdam: Adam with Nesterov momentum, whose coefficient warms up by `momentum_decay`."""
import ember
from ember import _foreach as fe
from ember.optim.adam import _check
from ember.optim.optimizer import Optimizer, _scalar_tensor

__all__ = ["NAdam"]


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        if not state:
            state["step"] = _scalar_tensor(0.0)
            # the running product of the momentum coefficients, kept (and rounded) as PyTorch keeps it
            state["mu_product"] = _scalar_tensor(1.0)
            state["exp_avg"] = ember.zeros_like(p)
            state["exp_avg_sq"] = ember.zeros_like(p)
        return state

    def step(self, closure=None):
        return self._run_step(closure, self._update_group)

    def _step_tensors(self, group, params, grads, states):
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        if group["maximize"]:
            grads = fe._foreach_neg(grads)
        steps = [s["step"] for s in states]
        fe._foreach_add_(steps, 1)
        counts = [step.item() for step in steps]
        grads = _weight_decay(group, params, grads)
        mus = [_momentum_coefficient(beta1, group["momentum_decay"], n) for n in counts]
        next_mus = [_momentum_coefficient(beta1, group["momentum_decay"], n + 1) for n in counts]
        mu_products = [s["mu_product"] for s in states]
        fe._foreach_mul_(mu_products, mus)
        exp_avgs, exp_avg_sqs = [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states]
        fe._foreach_lerp_(exp_avgs, grads, 1 - beta1)
        fe._foreach_mul_(exp_avg_sqs, beta2)
        fe._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
        denom = fe._foreach_div(exp_avg_sqs, [1 - beta2**n for n in counts])
        fe._foreach_sqrt_(denom)
        fe._foreach_add_(denom, eps)
        products = [m.item() for m in mu_products]
        fe._foreach_addcdiv_(params, grads, denom, [-lr * (1.0 - mu) / (1.0 - prod) for mu, prod in zip(mus, products)])
        fe._foreach_addcdiv_(params, exp_avgs, denom,
                             [(-lr * mu_next) / (1.0 - prod * mu_next) for mu_next, prod in zip(next_mus, products)])


def _momentum_coefficient(beta1, momentum_decay, step):
    return beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))


def _weight_decay(group, params, grads):
    """The gradients with L2 weight decay added, or (decoupled, as AdamW) the parameters
    shrunk in place and the gradients unchanged. Shared with RAdam."""
    weight_decay = group["weight_decay"]
    if weight_decay == 0:
        return grads
    if group["decoupled_weight_decay"]:
        fe._foreach_mul_(params, 1 - group["lr"] * weight_decay)
        return grads
    return fe._foreach_add(grads, params, alpha=weight_decay)
