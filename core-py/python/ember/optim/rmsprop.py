"""RMSprop, optionally centered and with momentum."""
import ember
from ember import _foreach as fe
from ember.optim.optimizer import Optimizer

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        if not state:
            state["step"] = ember.tensor(0.0)
            state["square_avg"] = ember.zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = ember.zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = ember.zeros_like(p)
        return state

    def step(self, closure=None):
        return self._run_step(closure, self._update_group)

    def _step_tensors(self, group, params, grads, states):
        lr, alpha, momentum = group["lr"], group["alpha"], group["momentum"]
        fe._foreach_add_([s["step"] for s in states], 1)
        if group["maximize"]:
            grads = fe._foreach_neg(grads)
        if group["weight_decay"] != 0:
            grads = fe._foreach_add(grads, params, alpha=group["weight_decay"])
        square_avgs = [s["square_avg"] for s in states]
        fe._foreach_mul_(square_avgs, alpha)
        fe._foreach_addcmul_(square_avgs, grads, grads, 1 - alpha)
        if group["centered"]:
            grad_avgs = [s["grad_avg"] for s in states]
            fe._foreach_lerp_(grad_avgs, grads, 1 - alpha)
            avg = fe._foreach_addcmul(square_avgs, grad_avgs, grad_avgs, -1)
            fe._foreach_sqrt_(avg)
        else:
            avg = fe._foreach_sqrt(square_avgs)
        fe._foreach_add_(avg, group["eps"])
        if momentum > 0:
            bufs = [s["momentum_buffer"] for s in states]
            fe._foreach_mul_(bufs, momentum)
            fe._foreach_addcdiv_(bufs, grads, avg)
            fe._foreach_add_(params, bufs, alpha=-lr)
        else:
            fe._foreach_addcdiv_(params, grads, avg, -lr)
