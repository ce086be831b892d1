"""`ember.nn.functional`: activations, softmax and normalisation over native kernels."""
from ember import _C, _ops


def _act(name, input, inplace):
    if inplace:
        _C.unary(name, input, input)
        return input
    return _C.unary(name, input)


def relu(input, inplace=False):
    return _act("relu", input, inplace)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    if inplace:
        _C.unary_with("hardtanh", input, min_val, max_val, None, input)
        return input
    return _C.unary_with("hardtanh", input, min_val, max_val)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace:
        _C.unary_with("leaky_relu", input, negative_slope, None, None, input)
        return input
    return _C.unary_with("leaky_relu", input, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    if inplace:
        _C.unary_with("elu", input, alpha, None, None, input)
        return input
    return _C.unary_with("elu", input, alpha)


def selu(input, inplace=False):
    return _act("selu", input, inplace)


def celu(input, alpha=1.0, inplace=False):
    if alpha == 0:
        raise ValueError("celu: alpha cannot be 0")
    r = elu(input / alpha) * alpha
    return input.copy_(r) if inplace else r


def gelu(input, approximate="none"):
    """GELU; `approximate="tanh"` uses the tanh formula."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate argument must be either none or tanh, got '{approximate}'")
    return _C.unary("gelu" if approximate == "none" else "gelu_tanh", input)


def silu(input, inplace=False):
    return _act("silu", input, inplace)


def mish(input, inplace=False):
    return _act("mish", input, inplace)


def hardswish(input, inplace=False):
    return _act("hardswish", input, inplace)


def hardsigmoid(input, inplace=False):
    return _act("hardsigmoid", input, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    return _C.unary_with("softplus", input, beta, threshold)


def sigmoid(input):
    return _C.unary("sigmoid", input)


def tanh(input):
    return _C.unary("tanh", input)


def logsigmoid(input):
    return -softplus(-input)


def softsign(input):
    return input / (_ops.abs(input) + 1)


def tanhshrink(input):
    return input - _ops.tanh(input)


def threshold(input, threshold, value, inplace=False):
    r = _ops.where(input > threshold, input, value)
    return input.copy_(r) if inplace else r
from ember.nn._spatial import *  # noqa
