"""ASGD: SGD with a decaying step size, keeping a running average of the iterates in `ax`."""
import ember
from ember import _foreach as fe
from ember.optim.optimizer import Optimizer, _scalar_tensor

__all__ = ["ASGD"]


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lambd:
            raise ValueError(f"Invalid lambd value: {lambd}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _init_state(self, p, group):
        state = self.state[p]
        if not state:
            state["step"] = _scalar_tensor(0.0)
            # the current step size and averaging weight, rounded to the scalar dtype as PyTorch's
            state["eta"] = _scalar_tensor(group["lr"])
            state["mu"] = _scalar_tensor(1.0)
            state["ax"] = ember.zeros_like(p)
        return state

    def step(self, closure=None):
        return self._run_step(closure, self._update_group)

    def _step_tensors(self, group, params, grads, states):
        lr, lambd, alpha = group["lr"], group["lambd"], group["alpha"]
        if group["maximize"]:
            grads = fe._foreach_neg(grads)
        steps = [s["step"] for s in states]
        fe._foreach_add_(steps, 1)
        if group["weight_decay"] != 0:
            grads = fe._foreach_add(grads, params, alpha=group["weight_decay"])
        etas = [s["eta"].item() for s in states]
        fe._foreach_mul_(params, [1 - lambd * eta for eta in etas])
        for param, grad, eta in zip(params, grads, etas):
            param.add_(grad, alpha=-eta)
        self._average(params, states)
        for state, step in zip(states, steps):
            n = step.item()
            # through a default-dtype tensor, as PyTorch: rounded so even where a loaded state
            # dict made eta and mu float64
            state["eta"].copy_(ember.tensor(lr / ((1 + lambd * lr * n) ** alpha)))
            state["mu"].copy_(ember.tensor(1 / max(1, n - group["t0"])))

    @staticmethod
    def _average(params, states):
        """ax ← ax + mu · (param - ax); a plain copy while mu is 1 (before t0)."""
        for param, state in zip(params, states):
            mu, ax = state["mu"].item(), state["ax"]
            if mu != 1:
                ax.add_(param.sub(ax).mul_(mu))
            else:
                ax.copy_(param)
