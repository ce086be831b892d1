"""Activation modules (one per `nn.functional` activation), softmax family, PReLU and GLU."""
import ember
from ember.nn import functional as F
from ember.nn import init
from ember.nn.modules.module import Module, _place
from ember.nn.parameter import Parameter

__all__ = [
    "ReLU", "ReLU6", "Hardtanh", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Hardswish",
    "Hardsigmoid", "Softplus", "Sigmoid", "Tanh", "LogSigmoid", "Softsign", "Tanhshrink", "Threshold",
    "Hardshrink", "Softshrink", "PReLU", "GLU", "Softmax", "LogSoftmax", "Softmin", "Softmax2d",
]


def _inplace_repr(inplace):
    return "inplace=True" if inplace else ""


class _Inplace(Module):
    """An activation with only an `inplace` flag."""

    _functional = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._functional(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class _Plain(Module):
    """An activation without arguments."""

    _functional = None

    def forward(self, input):
        return type(self)._functional(input)


class ReLU(_Inplace):
    _functional = staticmethod(F.relu)


class SELU(_Inplace):
    _functional = staticmethod(F.selu)


class SiLU(_Inplace):
    _functional = staticmethod(F.silu)


class Mish(_Inplace):
    _functional = staticmethod(F.mish)


class Hardswish(_Inplace):
    _functional = staticmethod(F.hardswish)


class Hardsigmoid(_Inplace):
    _functional = staticmethod(F.hardsigmoid)


class Sigmoid(_Plain):
    _functional = staticmethod(F.sigmoid)


class Tanh(_Plain):
    _functional = staticmethod(F.tanh)


class LogSigmoid(_Plain):
    _functional = staticmethod(F.logsigmoid)


class Softsign(_Plain):
    _functional = staticmethod(F.softsign)


class Tanhshrink(_Plain):
    _functional = staticmethod(F.tanhshrink)


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class LeakyReLU(Module):
    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    _functional = staticmethod(F.elu)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return type(self)._functional(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    _functional = staticmethod(F.celu)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Threshold(Module):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class Hardshrink(Module):
    """x where |x| > lambd, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return ember.where(ember.abs(input) > self.lambd, input, 0.0)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """x - lambd above lambd, x + lambd below -lambd, else 0."""

    def forward(self, input):
        shrunk = input - ember.clamp(input, -self.lambd, self.lambd)
        return shrunk


class PReLU(Module):
    """max(0, x) + weight · min(0, x), with one learnt slope or one per channel (dim 1)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        ember._device.check(device)
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(ember.empty(num_parameters, dtype=dtype))
        self.reset_parameters()
        _place(self, device)

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):
        weight = self.weight
        if input.ndim >= 2 and self.num_parameters > 1:
            weight = weight.reshape((self.num_parameters,) + (1,) * (input.ndim - 2))
        return ember.where(input >= 0, input, weight * input)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """a · sigmoid(b) for the two halves a, b of `dim`."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        if input.shape[self.dim] % 2:
            raise RuntimeError(f"Halving dimension must be even, but dimension {self.dim} is size {input.shape[self.dim]}")
        a, b = input.chunk(2, self.dim)
        return a * F.sigmoid(b)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(Module):
    _functional = staticmethod(F.softmax)

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault("dim", None)

    def forward(self, input):
        return type(self)._functional(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    _functional = staticmethod(F.log_softmax)


class Softmin(Softmax):
    _functional = staticmethod(F.softmin)


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)
