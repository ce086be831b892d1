"""`ember.nn.init`: in-place initialisers, run under no_grad, drawing from Ember's Philox
generator (so `ember.manual_seed` makes them reproducible; `generator=` picks another one) on
the tensor's device (the same numbers on every device).
The draws are Ember's own: the same seed does not give PyTorch's numbers."""
import math
import warnings

import numpy as np

import ember
from ember import _C

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
]


def _draw_dtype(tensor):
    """float64 tensors draw in float64; every other float dtype draws in float32 and is cast."""
    return ember.float64 if tensor.dtype == ember.float64 else ember.float32


def _fill(tensor, values):
    with ember.no_grad():
        tensor.copy_(values)
    return tensor


def _check_tensor(tensor, fn):
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"{fn}(): argument 'tensor' must be Tensor, not {type(tensor).__name__}")


def calculate_gain(nonlinearity, param=None):
    """The gain that keeps activations' variance stable through `nonlinearity`."""
    linear = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fills with U(a, b)."""
    _check_tensor(tensor, "uniform_")
    return _fill(tensor, _C.uniform(tuple(tensor.shape), float(a), float(b), _draw_dtype(tensor), generator, str(tensor.device)))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fills with N(mean, std²)."""
    _check_tensor(tensor, "normal_")
    return _fill(tensor, _C.normal(tuple(tensor.shape), float(mean), float(std), _draw_dtype(tensor), generator, str(tensor.device)))


def _erfinv(y):
    """Inverse error function on a float64 tensor: Giles' single-precision approximation
    polished by two Newton steps on erf (exact to float64 rounding away from ±1)."""
    w = -ember.log((1.0 - y) * (1.0 + y))
    central = w < 5.0
    wc = w - 2.5
    pc = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
        pc = pc * wc + c
    wt = ember.sqrt(w) - 3.0
    pt = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
        pt = pt * wt + c
    x = ember.where(central, pc, pt) * y
    for _ in range(2):
        x = x - (ember.erf(x) - y) / (2.0 / math.sqrt(math.pi) * ember.exp(-x * x))
    return x


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fills with N(mean, std²) truncated to [a, b], by inverting the normal CDF on uniform
    draws between the CDF's values at a and b."""
    _check_tensor(tensor, "trunc_normal_")

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may be incorrect.", stacklevel=2)
    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    u = _C.uniform(tuple(tensor.shape), 2 * lo - 1, 2 * hi - 1, ember.float64, generator, str(tensor.device))
    values = ember.clamp(_erfinv(u) * (std * math.sqrt(2.0)) + mean, a, b)
    return _fill(tensor, values)


def constant_(tensor, val):
    _check_tensor(tensor, "constant_")
    return _fill(tensor, val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def eye_(tensor):
    """Fills a 2-d tensor with the identity (ones on the diagonal)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, ember.eye(tensor.shape[0], tensor.shape[1], dtype=tensor.dtype))


def dirac_(tensor, groups=1):
    """Fills a 3-5-d conv weight so the convolution passes its input channels through."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_per_group = tensor.shape[0] // groups
    if tensor.shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    values = np.zeros(tuple(tensor.shape))
    centre = tuple(s // 2 for s in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, tensor.shape[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    return _fill(tensor, ember.from_numpy(values))


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-a, a) with a = gain · sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std²) with std = gain · sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def _empty_noop(tensor):
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return True
    return False


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-b, b) with b = gain · sqrt(3 / fan) (He et al.)."""
    if _empty_noop(tensor):
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std²) with std = gain / sqrt(fan)."""
    if _empty_noop(tensor):
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a Gaussian draw, signs fixed so
    the distribution is uniform (Saxe et al.); higher dims are flattened after the first."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    draw = np.asarray(_C.normal((rows, cols), 0.0, 1.0, ember.float64, generator))
    if rows < cols:
        draw = draw.T
    q, r = np.linalg.qr(draw)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, ember.from_numpy(np.ascontiguousarray(q * gain)).reshape(tuple(tensor.shape)))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """N(0, std²) with a fraction `sparsity` of each column set to zero."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros_per_col = int(math.ceil(sparsity * rows))
    values = np.asarray(_C.normal((rows, cols), 0.0, float(std), ember.float64, generator)).copy()
    for c in range(cols):
        order = np.asarray(ember.randperm(rows, generator=generator))
        values[order[:zeros_per_col], c] = 0
    return _fill(tensor, ember.from_numpy(values))


def _deprecated_alias(new):
    """The old name without the trailing underscore: warns, then runs `new`."""
    old = new.__name__[:-1]

    def alias(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.", FutureWarning, stacklevel=2)
        return new(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated alias of `{new.__name__}`."
    return alias


uniform = _deprecated_alias(uniform_)
normal = _deprecated_alias(normal_)
constant = _deprecated_alias(constant_)
eye = _deprecated_alias(eye_)
dirac = _deprecated_alias(dirac_)
xavier_uniform = _deprecated_alias(xavier_uniform_)
xavier_normal = _deprecated_alias(xavier_normal_)
kaiming_uniform = _deprecated_alias(kaiming_uniform_)
kaiming_normal = _deprecated_alias(kaiming_normal_)
orthogonal = _deprecated_alias(orthogonal_)
sparse = _deprecated_alias(sparse_)
