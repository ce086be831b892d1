"""Adadelta: steps scaled by the ratio of running RMS of past updates to that of gradients."""
import ember
from ember import _foreach as fe
from ember.optim.optimizer import Optimizer, _scalar_tensor

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        if not state:
            state["step"] = _scalar_tensor(0.0)
            state["square_avg"] = ember.zeros_like(p)
            state["acc_delta"] = ember.zeros_like(p)
        return state

    def step(self, closure=None):
        return self._run_step(closure, self._update_group)

    def _step_tensors(self, group, params, grads, states):
        rho, eps = group["rho"], group["eps"]
        fe._foreach_add_([s["step"] for s in states], 1)
        if group["maximize"]:
            grads = fe._foreach_neg(grads)
        if group["weight_decay"] != 0:
            grads = fe._foreach_add(grads, params, alpha=group["weight_decay"])
        square_avgs, acc_deltas = [s["square_avg"] for s in states], [s["acc_delta"] for s in states]
        fe._foreach_mul_(square_avgs, rho)
        fe._foreach_addcmul_(square_avgs, grads, grads, 1 - rho)
        std = fe._foreach_add(square_avgs, eps)
        fe._foreach_sqrt_(std)
        deltas = fe._foreach_add(acc_deltas, eps)
        fe._foreach_sqrt_(deltas)
        fe._foreach_div_(deltas, std)
        fe._foreach_mul_(deltas, grads)
        fe._foreach_mul_(acc_deltas, rho)
        fe._foreach_addcmul_(acc_deltas, deltas, deltas, 1 - rho)
        fe._foreach_add_(params, deltas, alpha=-group["lr"])
