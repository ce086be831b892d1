"""Adagrad: per-element learning rates from the running sum of squared gradients."""
import ember
from ember.optim import _inplace as K
from ember.optim.optimizer import Optimizer

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = ember.tensor(0.0)
                state["sum"] = ember.full_like(p, group["initial_accumulator_value"])

    def step(self, closure=None):
        return self._run_step(closure, self._update_group)

    def _update_group(self, group):
        lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
        weight_decay, maximize = group["weight_decay"], group["maximize"]
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            state = self.state[p]
            K.add_(state["step"], 1)
            step = float(state["step"].item())
            if maximize:
                grad = -grad
            if weight_decay != 0:
                grad = grad + p * weight_decay
            clr = lr / (1 + (step - 1) * lr_decay)
            K.addcmul_(state["sum"], grad, grad, 1)
            std = K.sqrt(state["sum"])
            K.add_(std, eps)
            K.addcdiv_(p, grad, std, -clr)
