"""RMSprop, optionally centered and with momentum."""
import ember
from ember.optim import _inplace as K
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

    def _update_group(self, group):
        lr, alpha, eps, momentum = group["lr"], group["alpha"], group["eps"], group["momentum"]
        weight_decay, centered, maximize = group["weight_decay"], group["centered"], group["maximize"]
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            state = self._init_state(p, group)
            K.add_(state["step"], 1)
            if maximize:
                grad = -grad
            if weight_decay != 0:
                grad = grad + p * weight_decay
            square_avg = state["square_avg"]
            K.mul_(square_avg, alpha)
            K.addcmul_(square_avg, grad, grad, 1 - alpha)
            if centered:
                grad_avg = state["grad_avg"]
                K.lerp_(grad_avg, grad, 1 - alpha)
                avg = square_avg - grad_avg * grad_avg
                avg = K.sqrt(avg)
            else:
                avg = K.sqrt(square_avg)
            K.add_(avg, eps)
            if momentum > 0:
                buf = state["momentum_buffer"]
                K.mul_(buf, momentum)
                K.addcdiv_(buf, grad, avg, 1)
                K.axpy_(p, buf, -lr)
            else:
                K.addcdiv_(p, grad, avg, -lr)
