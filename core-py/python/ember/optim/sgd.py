"""Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""
from ember import _foreach as fe
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

    def _step_tensors(self, group, params, grads, states):
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        if group["maximize"]:
            grads = fe._foreach_neg(grads)
        if group["weight_decay"] != 0:
            grads = fe._foreach_add(grads, params, alpha=group["weight_decay"])
        if momentum != 0:
            grads = self._momentum(states, grads, momentum, dampening, group["nesterov"])
        fe._foreach_add_(params, grads, alpha=-lr)

    @staticmethod
    def _momentum(states, grads, momentum, dampening, nesterov):
        """Updates the momentum buffers (a copy of the gradient on the first step) and
        returns the step directions."""
        bufs, old = [], []
        for state, grad in zip(states, grads):
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.detach().clone()
            else:
                old.append((buf, grad))
            bufs.append(buf)
        if old:
            old_bufs, old_grads = [b for b, _ in old], [g for _, g in old]
            fe._foreach_mul_(old_bufs, momentum)
            fe._foreach_add_(old_bufs, old_grads, alpha=1 - dampening)
        return fe._foreach_add(grads, bufs, alpha=momentum) if nesterov else bufs
