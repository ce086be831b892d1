"""TorchRec's `Perceptron` (one linear layer and its activation) and `MLP` (a stack of them);
state-dict keys as TorchRec's: `_linear.weight`, `_mlp.<i>._linear.weight`."""
import ember
import ember.nn as nn

from emberrec.modules.activation import SwishLayerNorm

__all__ = ["Perceptron", "MLP"]


def _check_size(value, name):
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


class Perceptron(nn.Module):
    """activation(linear(input)). `activation` is a function or a module (a module with
    parameters is registered, as `_activation_fn`)."""

    def __init__(self, in_size, out_size, bias=True, activation=ember.relu, device=None, dtype=ember.float32):
        super().__init__()
        _check_size(in_size, "in_size")
        _check_size(out_size, "out_size")
        if not callable(activation):
            raise TypeError(f"activation must be callable, got {activation!r}")
        self._out_size = out_size
        self._in_size = in_size
        self._linear = nn.Linear(in_size, out_size, bias=bias, device=device, dtype=dtype)
        self._activation_fn = activation

    def forward(self, input):
        return self._activation_fn(self._linear(input))


class MLP(nn.Module):
    """Perceptrons of sizes `layer_sizes` in turn, each followed by `activation`: a function,
    a module, "relu", or "swish_layernorm" (TorchRec's SwishLayerNorm after each layer)."""

    def __init__(self, in_size, layer_sizes, bias=True, activation=ember.relu, device=None, dtype=ember.float32):
        super().__init__()
        _check_size(in_size, "in_size")
        if not isinstance(layer_sizes, (list, tuple)) or not layer_sizes:
            raise ValueError(f"layer_sizes must be a non-empty list of ints, got {layer_sizes!r}")
        for size in layer_sizes:
            _check_size(size, "each of layer_sizes")
        ins = [in_size, *layer_sizes[:-1]]
        self._mlp = nn.Sequential(*[
            Perceptron(i, o, bias=bias, activation=self._activation_for(activation, o), device=device, dtype=dtype)
            for i, o in zip(ins, layer_sizes)])

    @staticmethod
    def _activation_for(activation, size):
        if activation == "relu":
            return ember.relu
        if activation == "swish_layernorm":
            return SwishLayerNorm(size)
        if isinstance(activation, str):
            raise ValueError(f"activation must be a callable, 'relu' or 'swish_layernorm', got {activation!r}")
        return activation

    def forward(self, input):
        return self._mlp(input)
