"""Short-time Fourier transforms (`stft`, `istft`) and the window functions, with PyTorch's
signatures. Both transforms are compositions of differentiable ops (pad, unfold, window product,
`ember.fft`, overlap-add by `index_add`), so they carry gradients."""
import builtins
import numbers
import warnings

import numpy as np

import ember
from ember import _C

__all__ = ["stft", "istft", "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


# ---- windows ----

def _window(name, window_length, periodic, dtype, requires_grad, values):
    """`values(n, N)` over sample indices `n` of a symmetric window of `N` points; a periodic
    window is the symmetric one of `window_length + 1` points without its last point."""
    if isinstance(window_length, builtins.bool) or not isinstance(window_length, numbers.Integral):
        raise TypeError(f"{name}(): argument 'window_length' must be int, not {type(window_length).__name__}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    dtype = dtype or ember.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length <= 1:
        w = np.ones(window_length)
    else:
        total = window_length + 1 if periodic else window_length
        w = values(np.arange(total, dtype=np.float64), total)[:window_length]
    t = ember.from_numpy(np.ascontiguousarray(w))._to_dtype(dtype)
    return t.requires_grad_(True) if requires_grad else t


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """`0.5 - 0.5·cos(2πn / (N - 1))`."""
    return _window("hann_window", window_length, periodic, dtype, requires_grad,
                   lambda n, N: 0.5 - 0.5 * np.cos(2 * np.pi * n / (N - 1)))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None, requires_grad=False):
    """`alpha - beta·cos(2πn / (N - 1))`."""
    return _window("hamming_window", window_length, periodic, dtype, requires_grad,
                   lambda n, N: alpha - beta * np.cos(2 * np.pi * n / (N - 1)))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """`0.42 - 0.5·cos(2πn / (N - 1)) + 0.08·cos(4πn / (N - 1))`."""
    return _window("blackman_window", window_length, periodic, dtype, requires_grad,
                   lambda n, N: 0.42 - 0.5 * np.cos(2 * np.pi * n / (N - 1)) + 0.08 * np.cos(4 * np.pi * n / (N - 1)))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangle `1 - |2n / (N - 1) - 1|`."""
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad,
                   lambda n, N: 1 - np.abs(2 * n / (N - 1) - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """`I0(beta·sqrt(1 - (2n / (N - 1) - 1)²)) / I0(beta)`."""
    return _window("kaiser_window", window_length, periodic, dtype, requires_grad,
                   lambda n, N: np.i0(beta * np.sqrt(np.clip(1 - (2 * n / (N - 1) - 1) ** 2, 0, None))) / np.i0(beta))


# ---- stft / istft ----

def _positive(v, name, fn):
    if isinstance(v, builtins.bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{fn}(): argument '{name}' must be int, not {type(v).__name__}")
    return v


def _full_window(window, n_fft, win_length, dtype, fn):
    """The window as `n_fft` points: ones when none is given, a shorter one centred in zeros."""
    if window is None:
        window = ember.ones(win_length, dtype=dtype if dtype.is_floating_point else dtype.to_real())
    elif window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{fn}: expected a 1D window tensor of size equal to win_length={win_length}, but got window with size {list(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = ember.nn.functional.pad(window, (left, n_fft - win_length - left))
    return window


def _lengths(n_fft, hop_length, win_length, fn):
    _positive(n_fft, "n_fft", fn)
    hop_length = n_fft // 4 if hop_length is None else _positive(hop_length, "hop_length", fn)
    win_length = n_fft if win_length is None else _positive(win_length, "win_length", fn)
    if hop_length <= 0:
        raise RuntimeError(f"{fn}: expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"{fn}: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    return hop_length, win_length


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """Short-time Fourier transform of a signal `(L)` or batch `(B, L)`: `(B?, n_freq, n_frames)`.

    As in PyTorch, real input requires `return_complex` (False returns the deprecated
    `view_as_real` layout with a warning); `onesided` defaults to True for real input and window.
    """
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"stft(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    complex_in = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return complex tensors for all inputs, and return_complex=False will raise an error.", UserWarning, stacklevel=2)
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D tensor")
    hop_length, win_length = _lengths(n_fft, hop_length, win_length, "stft")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x._to_dtype(ember.get_default_dtype())
    if center:
        pad = n_fft // 2
        x = ember.nn.functional.pad(x.unsqueeze(0), (pad, pad), mode=pad_mode).squeeze(0)
    if not 0 < n_fft <= x.shape[-1]:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {x.shape[-1]}, but got n_fft={n_fft}")
    w = _full_window(window, n_fft, win_length, x.dtype, "stft")
    frames = x.unfold(-1, n_fft, hop_length) * w
    onesided = (not complex_in) if onesided is None else onesided
    if onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = (ember.fft.rfft if onesided else ember.fft.fft)(frames, dim=-1, norm=norm).transpose(-1, -2)
    if input.ndim == 1:
        spec = spec.squeeze(0)
    return spec if return_complex else ember.view_as_real(spec)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """Inverse of `stft` by windowed overlap-add: `(B?, n_freq, n_frames)` complex to the signal.
    The squared window's overlap-add must not vanish anywhere in the kept span (NOLA)."""
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"istft(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with return_complex=True.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex dtype, but got {input.ndim}")
    hop_length, win_length = _lengths(n_fft, hop_length, win_length, "istft")
    spec = input if input.ndim == 3 else input.unsqueeze(0)
    n_freq, n_frames = spec.shape[-2], spec.shape[-1]
    onesided = (n_freq != n_fft) if onesided is None else onesided
    expected = n_fft // 2 + 1 if onesided else n_fft
    if n_freq != expected:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to match n_fft / 2 + 1 when onesided=True, but got {n_freq}" if onesided
                           else f"istft: expected the frequency dimension of the input to equal n_fft={n_fft} when onesided=False, but got {n_freq}")
    if window is not None and window.dtype.is_complex and not return_complex:
        raise RuntimeError("Complex windows are incompatible with return_complex=False")
    w = _full_window(window, n_fft, win_length, spec.dtype.to_real(), "istft")
    norm = "ortho" if normalized else "backward"
    frames = spec.transpose(-1, -2)  # (B, n_frames, n_freq)
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = ember.fft.ifft(frames, n=n_fft, dim=-1, norm=norm)
    else:
        if not onesided:
            frames = frames.narrow(-1, 0, n_fft // 2 + 1)
        frames = ember.fft.irfft(frames, n=n_fft, dim=-1, norm=norm)
    frames = frames * w
    total = n_fft + hop_length * (n_frames - 1)
    index = (ember.arange(n_frames).unsqueeze(1) * hop_length + ember.arange(n_fft).unsqueeze(0)).reshape(-1)
    y = _overlap_add(frames, index, total)
    envelope = _overlap_add((w * w).expand(1, n_frames, n_fft), index, total).squeeze(0)
    start = n_fft // 2 if center else 0
    end = total
    if length is not None:
        end = start + length
    elif center:
        end = total - n_fft // 2
    end = min(end, total)
    y = y[:, start:end]
    envelope = envelope[start:end]
    if envelope.numel() and float(envelope.abs().min()) < 1e-11:
        raise RuntimeError("istft: window overlap add min is below 1e-11: the window and hop_length do not satisfy the NOLA condition")
    y = y / envelope
    if length is not None and y.shape[-1] < length:
        y = ember.nn.functional.pad(y, (0, length - y.shape[-1]))
    return y if input.ndim == 3 else y.squeeze(0)


def _overlap_add(frames, index, total):
    """Sums `frames` `(B, F, n)` into `(B, total)` at `index` (flattened frame positions)."""
    batch = frames.shape[0]
    if frames.dtype.is_complex:
        parts = ember.view_as_real(frames.contiguous()).reshape(batch, -1, 2)
        out = ember.zeros(batch, total, 2, dtype=parts.dtype).index_add(1, index, parts)
        return ember.view_as_complex(out.contiguous())
    flat = frames.reshape(batch, -1)
    return ember.zeros(batch, total, dtype=flat.dtype).index_add(1, index, flat)


