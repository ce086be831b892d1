"""`ember.fft`: PyTorch's NumPy-compatible discrete Fourier transforms.

Every transform is one of three native primitives (complex-to-complex, real-to-complex and
complex-to-real over a set of dims, on rustfft/realfft, each differentiable); this module turns
`n`/`s` (zero-padding or trimming), `dim` and `norm` ("backward", "ortho", "forward") into calls
of them, as PyTorch does. Integer and bool input computes in the default float dtype, float16
in float32 with a complex32 result; bfloat16 is refused as in PyTorch.
"""
import builtins
import numbers

import ember
from ember import _C
from ember._out import write_out

__all__ = [
    "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn",
    "rfftn", "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

_SWAP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _check_norm(norm):
    if norm not in _SWAP:
        raise ValueError(f'Invalid normalization mode: "{norm}"')
    return norm


def _input(x, fn):
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"fft_{fn}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    if x.dtype == _C.bfloat16:
        raise RuntimeError("Unsupported dtype BFloat16")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x._to_dtype(ember.get_default_dtype())
    return x


def _as_complex(x):
    return x if x.dtype.is_complex else x._to_dtype(x.dtype.to_complex())


def _require_real(x, fn):
    if x.dtype.is_complex:
        raise RuntimeError(f"{fn} expects a real input tensor, but got {x.dtype.name}")


def _wrap(dim, ndim):
    if isinstance(dim, builtins.bool) or not isinstance(dim, numbers.Integral):
        raise TypeError(f"fft: dim must be an int, got {type(dim).__name__}")
    if not -max(ndim, 1) <= dim < max(ndim, 1) or ndim == 0:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    return dim % ndim


def _resize(x, dim, n):
    """`x` zero-padded or trimmed to `n` points along `dim`."""
    if n is None:
        return x
    if isinstance(n, builtins.bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    size = x.shape[dim]
    if n < size:
        return x.narrow(dim, 0, n)
    if n > size:
        pad = list(x.shape)
        pad[dim] = n - size
        return ember.cat([x, ember.zeros(pad, dtype=x.dtype)], dim)
    return x


def _dims_and_sizes(x, s, dim, fn):
    """PyTorch's rules: no `dim` means the last `len(s)` dims (all dims without `s` either);
    an `s` entry of -1 keeps that dim's size."""
    if dim is not None:
        dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
        dims = [_wrap(d, x.ndim) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError(f"When given, dim and shape arguments must have the same length (got {len(s)} and {len(dims)})")
    elif s is not None:
        if len(s) > x.ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {x.ndim} dimensions.")
        dims = list(range(x.ndim - len(s), x.ndim))
    else:
        dims = list(range(x.ndim))
    if not dims:
        raise RuntimeError(f"{fn} must transform at least one axis")
    sizes = [None] * len(dims) if s is None else [None if n == -1 else n for n in s]
    return dims, sizes


def _finish(r, out):
    return write_out("_finish", out, r)


def _c2c_or_r2c(x, dims, norm, forward):
    """A full complex transform; real input goes through the faster real-to-complex one."""
    if x.dtype.is_complex:
        return _C.fft_c2c(x, dims, norm, forward)
    if forward:
        return _C.fft_r2c(x, dims, norm, False)
    # The inverse of real input is the conjugate of its forward transform, same factor.
    return ember.conj(_C.fft_r2c(x, dims, _SWAP[norm], False))


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """One-dimensional discrete Fourier transform along `dim`, of `n` points (zero-padded or
    trimmed)."""
    x = _input(input, "fft")
    d = _wrap(dim, x.ndim)
    return _finish(_c2c_or_r2c(_resize(x, d, n), [d], _check_norm(norm), True), out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """Inverse of `fft`."""
    x = _input(input, "ifft")
    d = _wrap(dim, x.ndim)
    return _finish(_c2c_or_r2c(_resize(x, d, n), [d], _check_norm(norm), False), out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """FFT of real input: the `n // 2 + 1` non-redundant outputs."""
    x = _input(input, "rfft")
    _require_real(x, "rfft")
    d = _wrap(dim, x.ndim)
    return _finish(_C.fft_r2c(_resize(x, d, n), [d], _check_norm(norm), True), out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Inverse of `rfft`: a real signal of `n` points (default `2 * (size - 1)`)."""
    x = _as_complex(_input(input, "irfft"))
    d = _wrap(dim, x.ndim)
    n = 2 * (x.shape[d] - 1) if n is None else n
    if isinstance(n, builtins.bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return _finish(_C.fft_c2r(_resize(x, d, n // 2 + 1), [d], _check_norm(norm), n), out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """FFT of a hermitian-symmetric signal given by its first half: a real result of `n` points
    (default `2 * (size - 1)`)."""
    x = _as_complex(_input(input, "hfft"))
    d = _wrap(dim, x.ndim)
    n = 2 * (x.shape[d] - 1) if n is None else n
    if isinstance(n, builtins.bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    half = ember.conj(_resize(x, d, n // 2 + 1))
    return _finish(_C.fft_c2r(half, [d], _SWAP[_check_norm(norm)], n), out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Inverse of `hfft`: the first half of the hermitian spectrum of a real signal."""
    x = _input(input, "ihfft")
    _require_real(x, "ihfft")
    d = _wrap(dim, x.ndim)
    return _finish(ember.conj(_C.fft_r2c(_resize(x, d, n), [d], _SWAP[_check_norm(norm)], True)), out)


def _resized(x, dims, sizes):
    for d, n in zip(dims, sizes):
        x = _resize(x, d, n)
    return x


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-dimensional FFT over `dim` (all dims by default), each padded or trimmed to `s`."""
    x = _input(input, "fftn")
    dims, sizes = _dims_and_sizes(x, s, dim, "fftn")
    return _finish(_c2c_or_r2c(_resized(x, dims, sizes), dims, _check_norm(norm), True), out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """Inverse of `fftn`."""
    x = _input(input, "ifftn")
    dims, sizes = _dims_and_sizes(x, s, dim, "ifftn")
    return _finish(_c2c_or_r2c(_resized(x, dims, sizes), dims, _check_norm(norm), False), out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-dimensional FFT of real input; the last transformed dim keeps `n // 2 + 1` outputs."""
    x = _input(input, "rfftn")
    _require_real(x, "rfftn")
    dims, sizes = _dims_and_sizes(x, s, dim, "rfftn")
    return _finish(_C.fft_r2c(_resized(x, dims, sizes), dims, _check_norm(norm), True), out)


def _c2r_n(x, s, dim, norm, fn):
    """The complex-to-real transform over `dim` that `irfftn` and `hfftn` are; the last dim's
    output length defaults to `2 * (size - 1)`."""
    dims, sizes = _dims_and_sizes(x, s, dim, fn)
    last = sizes[-1] if sizes[-1] is not None else 2 * (x.shape[dims[-1]] - 1)
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    x = _resized(x, dims[:-1], sizes[:-1])
    x = _resize(x, dims[-1], last // 2 + 1)
    return _C.fft_c2r(x, dims, norm, last)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Inverse of `rfftn`; the last dim's output length defaults to `2 * (size - 1)`."""
    x = _as_complex(_input(input, "irfftn"))
    return _finish(_c2r_n(x, s, dim, _check_norm(norm), "irfftn"), out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """N-dimensional FFT of a signal hermitian-symmetric along the last transformed dim, given by
    its first half there: a real result (last dim `2 * (size - 1)` long by default). Since that
    result is real it equals the inverse transform of the conjugate, so this is `irfftn` of
    `conj(input)` with the normalisation swapped."""
    x = _as_complex(_input(input, "hfftn"))
    return _finish(_c2r_n(ember.conj(x), s, dim, _SWAP[_check_norm(norm)], "hfftn"), out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """Inverse of `hfftn`: the half spectrum (last transformed dim) of a real signal, i.e. the
    conjugate of `rfftn` with the normalisation swapped."""
    x = _input(input, "ihfftn")
    _require_real(x, "ihfftn")
    dims, sizes = _dims_and_sizes(x, s, dim, "ihfftn")
    r = _C.fft_r2c(_resized(x, dims, sizes), dims, _SWAP[_check_norm(norm)], True)
    return _finish(ember.conj(r), out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return fftn(input, s, dim, norm, out=out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ifftn(input, s, dim, norm, out=out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return rfftn(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return irfftn(input, s, dim, norm, out=out)


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return hfftn(input, s, dim, norm, out=out)


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ihfftn(input, s, dim, norm, out=out)


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Sample frequencies of an `n`-point FFT with sample spacing `d`: `[0, 1, ..., -1] / (d·n)`."""
    if isinstance(n, builtins.bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise RuntimeError(f"fftfreq: n must be a non-negative int, got {n!r}")
    k = ember.arange(n, dtype=dtype or ember.get_default_dtype())
    r = ember.where(k >= (n + 1) // 2, k - n, k) / (d * n)
    r = r._to_dtype(dtype or ember.get_default_dtype())
    return _finish(r.requires_grad_(requires_grad) if requires_grad else r, out)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Sample frequencies of `rfft`: `[0, 1, ..., n // 2] / (d·n)`."""
    if isinstance(n, builtins.bool) or not isinstance(n, numbers.Integral) or n < 0:
        raise RuntimeError(f"rfftfreq: n must be a non-negative int, got {n!r}")
    r = (ember.arange(n // 2 + 1, dtype=dtype or ember.get_default_dtype()) / (d * n))._to_dtype(dtype or ember.get_default_dtype())
    return _finish(r.requires_grad_(requires_grad) if requires_grad else r, out)


def _shift(x, dim, sign):
    if dim is None:
        dims = list(range(x.ndim))
    else:
        dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
        dims = [_wrap(d, x.ndim) for d in dims]
    if not dims:
        return x.clone()
    shifts = [sign * (x.shape[d] // 2) for d in dims]
    return ember.roll(x, shifts, dims)


def fftshift(input, dim=None):
    """Moves the zero frequency to the centre (a roll by `size // 2` along each of `dim`)."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """Inverse of `fftshift` (a roll by `-(size // 2)`)."""
    return _shift(input, dim, -1)
