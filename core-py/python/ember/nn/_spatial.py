"""The spatial part of `ember.nn.functional`: convolution, pooling, interpolation and padding.

Signatures, defaults, output shapes and error messages follow PyTorch's. Arguments are
normalised here (ints to tuples, default strides, interpolate's size and scale rules); the
shape checks and the kernels live in `ember_core` (`ops/conv.rs`, `pool.rs`, `resize.rs`,
`pad.rs`). Float16 and bfloat16 compute in float32.
"""
import math
import numbers

from ember import _C
from ember._functorch._batched import batched

__all__ = [
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices", "interpolate", "pad",
]


def _tensor(x, fn, name="input", position=1):
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Tensor, not {type(x).__name__}")
    return x


def _ints(value, fn, name):
    """An int or a sequence of ints as a list (the kernel expands a single value per dim)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, list, tuple)):
        raise TypeError(f"{fn}(): argument '{name}' must be an int or a tuple of ints, not {type(value).__name__}")
    if isinstance(value, numbers.Integral):
        return [int(value)]
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value):
        raise TypeError(f"{fn}(): argument '{name}' must be an int or a tuple of ints, but got {value!r}")
    return [int(v) for v in value]


# ---- convolution ----

def _conv(dims, input, weight, bias, stride, padding, dilation, groups):
    fn = f"conv{dims}d"
    _tensor(input, fn)
    _tensor(weight, fn, "weight", 2)
    if bias is not None:
        _tensor(bias, fn, "bias", 3)
    if not isinstance(padding, str):
        padding = _ints(padding, fn, "padding")
    stride, dilation = _ints(stride, fn, "stride"), _ints(dilation, fn, "dilation")
    if input.dtype.is_complex or weight.dtype.is_complex:
        return _complex_conv(dims, input, weight, bias,
                             lambda x, w: _C.conv(x, w, None, stride, padding, dilation, groups, dims))
    try:
        return _C.conv(input, weight, bias, stride, padding, dilation, groups, dims)
    except TypeError:
        return batched("conv", input, weight, bias, stride, padding, dilation, groups, dims)


def _complex_conv(dims, input, weight, bias, conv):
    """A complex (transposed) convolution from three real ones, `conv(x, w)` (Gauss's trick, as
    PyTorch): `(a + ib)∗(c + id) = (a∗c - b∗d) + i((a + b)∗(c + d) - a∗c - b∗d)`. Both kinds are
    bilinear in (input, weight), which is all the trick needs."""
    if input.dtype != weight.dtype or (bias is not None and bias.dtype != input.dtype):
        other = weight.dtype if input.dtype != weight.dtype else bias.dtype
        raise RuntimeError(f"Input type ({input.dtype}) and weight type ({other}) should be the same")
    if input.dtype == _C.complex32:
        return _complex_conv(dims, input.to(_C.complex64), weight.to(_C.complex64),
                             None if bias is None else bias.to(_C.complex64), conv).to(_C.complex32)
    a, b, c, d = input.real, input.imag, weight.real, weight.imag
    ac, bd = conv(a, c), conv(b, d)
    out = _C.complex(ac - bd, conv(a + b, c + d) - ac - bd)
    if bias is not None:
        out = out + bias.reshape([-1] + [1] * dims)
    return out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution of `input` `(N, C_in, L)` or `(C_in, L)` with `weight` `(C_out, C_in/groups, k)`.

    `padding` is an int, a 1-tuple, `'valid'` (none) or `'same'` (output as long as the input;
    stride 1 only; an odd total padding puts the extra element on the right, as PyTorch does).
    """
    return _conv(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution of `input` `(N, C_in, H, W)` or `(C_in, H, W)` with `weight`
    `(C_out, C_in/groups, kH, kW)`; `groups == C_in` is a depthwise convolution.

    `padding` is an int, a pair, `'valid'` or `'same'` (stride 1 only)."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d convolution of `input` `(N, C_in, D, H, W)` or unbatched, as `conv2d`."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(dims, input, weight, bias, stride, padding, output_padding, groups, dilation):
    fn = f"conv_transpose{dims}d"
    _tensor(input, fn)
    _tensor(weight, fn, "weight", 2)
    if bias is not None:
        _tensor(bias, fn, "bias", 3)
    geometry = (_ints(stride, fn, "stride"), _ints(padding, fn, "padding"), _ints(output_padding, fn, "output_padding"),
                groups, _ints(dilation, fn, "dilation"), dims)
    if input.dtype.is_complex or weight.dtype.is_complex:
        return _complex_conv(dims, input, weight, bias, lambda x, w: _C.conv_transpose(x, w, None, *geometry))
    return _C.conv_transpose(input, weight, bias, *geometry)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 1-d convolution; `weight` is `(C_in, C_out/groups, k)`."""
    return _conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 2-d convolution; `weight` is `(C_in, C_out/groups, kH, kW)`. The output is
    `(H - 1)·stride - 2·padding + dilation·(kH - 1) + output_padding + 1` high (likewise wide)."""
    return _conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed 3-d convolution; `weight` is `(C_in, C_out/groups, kD, kH, kW)`."""
    return _conv_transpose(3, input, weight, bias, stride, padding, output_padding, groups, dilation)


# ---- pooling ----

def _stride(stride, fn):
    return [] if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else _ints(stride, fn, "stride")


def _max_pool(dims, input, kernel_size, stride, padding, dilation, ceil_mode):
    fn = f"max_pool{dims}d"
    _tensor(input, fn)
    args = (dims, _ints(kernel_size, fn, "kernel_size"), _stride(stride, fn), _ints(padding, fn, "padding"),
            _ints(dilation, fn, "dilation"), bool(ceil_mode))
    try:
        return _C.max_pool(input, *args)
    except TypeError:
        return batched("max_pool", input, *args)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True):
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True):
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=True):
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of `(N, C, L)` or `(C, L)`; `stride` defaults to `kernel_size`.
    With `return_indices`, also the flat index of each maximum within its input plane (NaN wins)."""
    out, idx = _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of `(N, C, H, W)` or `(C, H, W)`; indices are `h·W + w`."""
    out, idx = _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over sliding windows of `(N, C, D, H, W)` or `(C, D, H, W)`."""
    out, idx = _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def _avg_pool(dims, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    fn = f"avg_pool{dims}d"
    _tensor(input, fn)
    if divisor_override is not None and (isinstance(divisor_override, bool) or not isinstance(divisor_override, numbers.Integral)):
        raise TypeError(f"{fn}(): argument 'divisor_override' must be int, not {type(divisor_override).__name__}")
    args = (dims, _ints(kernel_size, fn, "kernel_size"), _stride(stride, fn), _ints(padding, fn, "padding"),
            bool(ceil_mode), bool(count_include_pad), divisor_override)
    try:
        return _C.avg_pool(input, *args)
    except TypeError:
        return batched("avg_pool", input, *args)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over sliding windows of `(N, C, L)` or `(C, L)`; with `count_include_pad` the
    zero padding counts towards the divisor."""
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """Mean over sliding windows of `(N, C, H, W)` or `(C, H, W)`; `divisor_override`
    replaces the window size as divisor."""
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def _output_size(output_size, dims, fn):
    """`output_size` as a list with one entry per spatial dim; `None` keeps the input size."""
    if output_size is None or isinstance(output_size, numbers.Integral):
        return [output_size] * dims
    sizes = list(output_size)
    if not all(s is None or (isinstance(s, numbers.Integral) and not isinstance(s, bool)) for s in sizes):
        raise TypeError(f"{fn}(): argument 'output_size' must be an int or a tuple of ints, but got {output_size!r}")
    return sizes


def _adaptive_avg(dims, input, output_size):
    fn = f"adaptive_avg_pool{dims}d"
    _tensor(input, fn)
    sizes = _output_size(output_size, dims, fn)
    try:
        return _C.adaptive_avg_pool(input, dims, sizes)
    except TypeError:
        return batched("adaptive_avg_pool", input, dims, sizes)


def _adaptive_max(dims, input, output_size):
    fn = f"adaptive_max_pool{dims}d"
    _tensor(input, fn)
    sizes = _output_size(output_size, dims, fn)
    try:
        return _C.adaptive_max_pool(input, dims, sizes)
    except TypeError:
        return batched("adaptive_max_pool", input, dims, sizes)


def adaptive_avg_pool1d(input, output_size):
    """Mean over `output_size` windows covering `floor(i·L/out) .. ceil((i+1)·L/out)`."""
    return _adaptive_avg(1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """Mean over adaptive windows; `output_size` is an int or a pair (`None` keeps that size)."""
    return _adaptive_avg(2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg(3, input, output_size)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return _adaptive_max(1, input, output_size)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return _adaptive_max(2, input, output_size)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    return _adaptive_max(3, input, output_size)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    out, idx = _adaptive_max(1, input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max over adaptive windows; with `return_indices`, flat per-plane indices as `max_pool2d`."""
    out, idx = _adaptive_max(2, input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool3d(input, output_size, return_indices=False):
    out, idx = _adaptive_max(3, input, output_size)
    return (out, idx) if return_indices else out


# ---- interpolate ----

_NEEDS = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}
_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")


def _resize_target(input, size, scale_factor, dims):
    """(output size, scale factors or None) from interpolate's `size` / `scale_factor`."""
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dims:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got input with spatial "
                    f"dimensions of {spatial} and output size of {list(size)}. Please provide input tensor in "
                    "(N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
            return [int(s) for s in size], None
        return [int(size)] * dims, None
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != dims:
            raise ValueError(
                "Input and scale_factor must have the same number of spatial dimensions, but got input with spatial "
                f"dimensions of {spatial} and scale_factor of shape {list(scale_factor)}. Please provide input tensor in "
                "(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
        scales = [float(s) for s in scale_factor]
    else:
        scales = [float(scale_factor)] * dims
    return [math.floor(float(n) * s) for n, s in zip(spatial, scales)], scales


def _check_mode_rank(input, mode):
    if mode in _MODES and input.dim() in (3, 4, 5):
        need = _NEEDS.get(mode)
        if need is None or input.dim() == need:
            return
        if mode != "bicubic":
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {need}D input")
    raise NotImplementedError(
        f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for the modes: "
        f"nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact (got {mode})")


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None, antialias=False):
    """Resizes `(N, C, *spatial)` with 1 to 3 spatial dims, as `torch.nn.functional.interpolate`.

    The output size is `size`, or `floor(input_size · scale_factor)`. A given `scale_factor`
    also sets the coordinate mapping unless `recompute_scale_factor=True`. `antialias=True`
    (bilinear and bicubic, 4-D input) filters like PIL when downsampling; 'area' is
    `adaptive_avg_pool`.
    """
    _tensor(input, "interpolate")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dims = input.dim() - 2
    if dims < 1:
        _check_mode_rank(input, mode)
    output_size, scales = _resize_target(input, size, scale_factor, dims)
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" or recompute_scale_factor:
        scales = None
    if antialias and not (mode in ("bilinear", "bicubic") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor as input")
    _check_mode_rank(input, mode)
    if mode == "area":
        return _adaptive_avg(dims, input, output_size)
    scales = scales if scales is not None else [None] * dims
    return _C.interpolate(input, output_size, scales, mode, bool(align_corners), bool(antialias))


# ---- pad ----

def pad(input, pad, mode="constant", value=None):
    """Pads the last `len(pad) // 2` dims; `pad` is `(left, right, top, bottom, front, back)`
    from the last dim backwards. Negative pads crop. 'reflect', 'replicate' and 'circular' pad
    up to the last 3 dims of a batched or unbatched input; 'constant' pads any dims, any dtype."""
    _tensor(input, "pad")
    pads = _ints(pad, "pad", "pad")
    if mode != "constant" and value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    if value is not None and not isinstance(value, numbers.Number):
        raise TypeError(f"pad(): argument 'value' must be a number, not {type(value).__name__}")
    return _C.pad(input, pads, mode, 0 if value is None else value)
