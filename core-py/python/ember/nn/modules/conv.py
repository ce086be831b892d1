"""Conv1d/2d/3d and ConvTranspose1d/2d/3d with PyTorch's parameters, defaults and checks, and
their lazy forms (LazyConv*, LazyConvTranspose*: `in_channels` from the first input)."""
import math

import ember
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.lazy import LazyModuleMixin
from ember.nn.modules.module import Module, _place
from ember.nn.parameter import Parameter, UninitializedParameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d", "LazyConv2d",
           "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _tuple(value, n):
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,) * n


class _ConvNd(Module):
    _dims = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed, output_padding,
                 groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        ember._device.check(device)
        n = self._dims
        self._check(in_channels, out_channels, groups, padding, stride, padding_mode, n)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _tuple(kernel_size, n), _tuple(stride, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        self.dilation, self.transposed = _tuple(dilation, n), transposed
        self.output_padding, self.groups, self.padding_mode = _tuple(output_padding, n), groups, padding_mode
        self._reversed_padding_repeated_twice = self._explicit_padding()
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(ember.empty(*(shape + self.kernel_size), dtype=dtype))
        if bias:
            self.bias = Parameter(ember.empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        _place(self, device)

    @staticmethod
    def _check(in_channels, out_channels, groups, padding, stride, padding_mode, n):
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _tuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")

    def _explicit_padding(self):
        """F.pad's argument (last dim first, left then right) for non-zero padding modes."""
        if self.padding == "valid":
            return [0, 0] * self._dims
        pads = []
        for d in reversed(range(self._dims)):
            if self.padding == "same":
                total = self.dilation[d] * (self.kernel_size[d] - 1)
                pads += [total // 2, total - total // 2]
            else:
                pads += [self.padding[d], self.padding[d]]
        return pads

    def reset_parameters(self):
        """Kaiming-uniform weight (a = √5) and U(±1/√fan_in) bias, as PyTorch initialises convs."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault("padding_mode", "zeros")


class _Conv(_ConvNd):
    _functional = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                         padding_mode, device, dtype)
        _place(self, device)

    def _conv_forward(self, input, weight, bias):
        conv = type(self)._functional
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    _dims = 1
    _functional = staticmethod(F.conv1d)


class Conv2d(_Conv):
    _dims = 2
    _functional = staticmethod(F.conv2d)


class Conv3d(_Conv):
    _dims = 3
    _functional = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    _functional = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__} does not support string padding")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding,
                         groups, bias, padding_mode, device, dtype)
        _place(self, device)

    def _output_padding(self, input, output_size):
        """The output_padding that makes the output `output_size` (which must be reachable)."""
        if output_size is None:
            return self.output_padding
        n = self._dims
        output_size = list(output_size)[-n:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have {n} or {n + 2} elements (got {len(output_size)})")
        result = []
        for d in range(n):
            in_size = input.shape[input.ndim - n + d]
            smallest = (in_size - 1) * self.stride[d] - 2 * self.padding[d] + self.dilation[d] * (self.kernel_size[d] - 1) + 1
            largest = smallest + self.stride[d] - 1
            if not smallest <= output_size[d] <= largest:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {smallest} to {largest} (for an input of {list(input.shape[-n:])})")
            result.append(output_size[d] - smallest)
        return tuple(result)

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return type(self)._functional(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                      self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    _dims = 1
    _functional = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    _dims = 2
    _functional = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    _dims = 3
    _functional = staticmethod(F.conv_transpose3d)


class _LazyConvMixin(LazyModuleMixin):
    """Built with 0 channels and uninitialized weight and bias; the first input gives
    `in_channels` (dim 1 when batched, dim 0 when not)."""

    def _make_lazy(self, out_channels, bias, dtype):
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input):
        unbatched = self._dims + 1
        if input.ndim not in (unbatched, unbatched + 1):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {unbatched + 1}D (batched) input to {type(self).__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.ndim == unbatched + 1 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        if not self.has_uninitialized_params():
            return
        self.in_channels = self._get_in_channels(input)
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups)
        else:
            shape = (self.out_channels, self.in_channels // self.groups)
        self.weight.materialize(shape + self.kernel_size)
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


class _LazyConv(_LazyConvMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device, dtype)
        self._make_lazy(out_channels, bias, dtype)
        _place(self, device)


class _LazyConvTranspose(_LazyConvMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device, dtype)
        self._make_lazy(out_channels, bias, dtype)
        _place(self, device)


class LazyConv1d(_LazyConv, Conv1d):
    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    cls_to_become = ConvTranspose3d
