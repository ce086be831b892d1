"""Max, average and adaptive pooling modules (1-3 spatial dims)."""
from ember.nn import functional as F
from ember.nn.modules.module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d"]


class _MaxPoolNd(Module):
    _functional = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return type(self)._functional(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                      ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, dilation={self.dilation}, ceil_mode={self.ceil_mode}"


class MaxPool1d(_MaxPoolNd):
    _functional = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    _functional = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    _functional = staticmethod(F.max_pool3d)


def _single(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


class AvgPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self._store(kernel_size, stride, padding, ceil_mode, count_include_pad)

    def _store(self, kernel_size, stride, padding, ceil_mode, count_include_pad):
        # AvgPool1d keeps its sizes as 1-tuples, as PyTorch does (its repr shows them so).
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(AvgPool1d):
    _functional = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.divisor_override = divisor_override

    def _store(self, kernel_size, stride, padding, ceil_mode, count_include_pad):
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode, self.count_include_pad = padding, ceil_mode, count_include_pad

    def forward(self, input):
        return type(self)._functional(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                      self.count_include_pad, self.divisor_override)


class AvgPool2d(_AvgPoolNd):
    _functional = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    _functional = staticmethod(F.avg_pool3d)


class _AdaptiveAvgPoolNd(Module):
    _functional = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return type(self)._functional(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    _functional = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    _functional = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _functional = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPoolNd(_AdaptiveAvgPoolNd):
    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return type(self)._functional(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    _functional = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    _functional = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    _functional = staticmethod(F.adaptive_max_pool3d)
