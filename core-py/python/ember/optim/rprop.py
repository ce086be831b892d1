"""Rprop: per-element step sizes grown while the gradient keeps its sign and shrunk when it
flips; only the gradient's sign moves the parameters."""
import ember
from ember import _foreach as fe
from ember.optim.optimizer import Optimizer, _scalar_tensor

__all__ = ["Rprop"]


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        if not state:
            state["step"] = _scalar_tensor(0.0)
            state["prev"] = ember.zeros_like(p)
            state["step_size"] = ember.full_like(p, group["lr"])
        return state

    def step(self, closure=None):
        return self._run_step(closure, self._update_group)

    def _step_tensors(self, group, params, grads, states):
        (eta_minus, eta_plus), (size_min, size_max) = group["etas"], group["step_sizes"]
        for param, grad, state in zip(params, grads, states):
            state["step"].add_(1)
            if group["maximize"]:
                grad = grad.neg()
            sign = grad.mul(state["prev"]).sign()
            # the factor per element: eta_plus where the gradient kept its sign, eta_minus where
            # it flipped, 1 where either was zero (written over `sign` in this order, as PyTorch)
            sign.masked_fill_(sign.gt(0), eta_plus)
            sign.masked_fill_(sign.lt(0), eta_minus)
            sign.masked_fill_(sign.eq(0), 1)
            state["step_size"].mul_(sign).clamp_(size_min, size_max)
            # after a flip the step is skipped and the gradient forgotten, so the next step grows again
            grad = grad.masked_fill(sign.eq(eta_minus), 0)
            fe._foreach_addcmul_([param], [grad.sign()], [state["step_size"]], -1)
            state["prev"].copy_(grad)
