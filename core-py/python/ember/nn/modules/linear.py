"""Identity, Linear, LazyLinear, Bilinear, Flatten and Unflatten."""
import math

import ember
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.lazy import LazyModuleMixin
from ember.nn.modules.module import Module, _place
from ember.nn.parameter import Parameter, UninitializedParameter

__all__ = ["Identity", "Linear", "LazyLinear", "Bilinear", "Flatten", "Unflatten"]


def _empty(*shape, dtype=None):
    return ember.empty(*shape, dtype=dtype)


class Identity(Module):
    """Returns its input; takes and ignores any constructor arguments."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x Wᵀ + b, with W of shape (out_features, in_features)."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        ember._device.check(device)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(_empty(out_features, in_features, dtype=dtype))
        if bias:
            self.bias = Parameter(_empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        _place(self, device)

    def reset_parameters(self):
        """Kaiming-uniform weight (a = √5) and U(±1/√fan_in) bias: PyTorch's defaults."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose `in_features` is the last dim of its first input."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        ember._device.check(device)
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)
        _place(self, device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            with ember.no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class Bilinear(Module):
    """y = x1ᵀ A x2 + b, with A of shape (out_features, in1_features, in2_features)."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        ember._device.check(device)
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(_empty(out_features, in1_features, in2_features, dtype=dtype))
        if bias:
            self.bias = Parameter(_empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        _place(self, device)

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return f"in1_features={self.in1_features}, in2_features={self.in2_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Flatten(Module):
    """Flattens dims start_dim..end_dim into one."""

    __constants__ = ["start_dim", "end_dim"]

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim `dim` into `unflattened_size`. PyTorch 2.15 dropped named tensors, so a
    named (str) dim is accepted here but refused by forward, as there."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        _require_tuple_of_ints(unflattened_size)
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


def _require_tuple_of_ints(sizes):
    if not isinstance(sizes, (tuple, list)):
        raise TypeError(f"unflattened_size must be a tuple of ints, but found type {type(sizes).__name__}")
    for pos, size in enumerate(sizes):
        if not isinstance(size, int):
            raise TypeError(f"unflattened_size must be tuple of ints, but found element of type {type(size).__name__} at pos {pos}")
