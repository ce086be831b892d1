"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""
from ember.optim import _inplace as K
from ember.optim.optimizer import Optimizer

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        return self._run_step(closure, self._update_group)

    def _update_group(self, group):
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if maximize:
                grad = -grad
            if weight_decay != 0:
                grad = grad + p * weight_decay
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = grad.detach().clone()
                else:
                    K.mul_(buf, momentum)
                    K.axpy_(buf, grad, 1 - dampening)
                grad = grad + buf * momentum if nesterov else buf
            K.axpy_(p, grad, -lr)
