"""SparseAdam: PyTorch's lazy Adam for sparse gradients (only the rows a gradient touches are
updated). Ember has no sparse tensors, so every gradient is dense, and PyTorch refuses dense
gradients here: the optimizer builds and validates like PyTorch's, and `step` raises."""
from ember.optim.optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, p in enumerate(group["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex parameters")

    def step(self, closure=None):
        return self._run_step(closure, _refuse_dense)


def _refuse_dense(group):
    if any(p.grad is not None for p in group["params"]):
        # NotImplementedError is a RuntimeError, the type PyTorch raises here
        raise NotImplementedError("SparseAdam does not support dense gradients, please consider Adam instead "
                                  "(Ember has no sparse tensors, so every gradient is dense)")
