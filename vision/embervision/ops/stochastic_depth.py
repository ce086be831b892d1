"""Stochastic depth ("Deep Networks with Stochastic Depth", Huang et al. 2016)."""
import ember
from ember import nn


def stochastic_depth(input, p, mode, training=True):
    """Zeroes whole rows (mode "row": each sample of the batch) or the whole input (mode "batch")
    with probability `p`, scaling what survives by 1/(1-p); the identity when not training."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival = 1.0 - p
    size = [input.shape[0]] + [1] * (input.ndim - 1) if mode == "row" else [1] * input.ndim
    noise = ember.empty(size, dtype=input.dtype, device=input.device).bernoulli_(survival)
    if survival > 0.0:
        noise.div_(survival)
    return input * noise


class StochasticDepth(nn.Module):
    """Module form of `stochastic_depth`."""

    def __init__(self, p: float, mode: str) -> None:
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input):
        return stochastic_depth(input, self.p, self.mode, self.training)

    def __repr__(self):
        return f"{self.__class__.__name__}(p={self.p}, mode={self.mode})"
