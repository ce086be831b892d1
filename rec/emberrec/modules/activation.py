"""TorchRec's activation modules."""
import ember
import ember.nn as nn

__all__ = ["SwishLayerNorm"]


class SwishLayerNorm(nn.Module):
    """input * sigmoid(layer_norm(input)), normalized over the trailing `input_dims`."""

    def __init__(self, input_dims, device=None):
        super().__init__()
        self.norm = nn.Sequential(nn.LayerNorm(input_dims), nn.Sigmoid())

    def forward(self, input):
        return input * self.norm(input)
