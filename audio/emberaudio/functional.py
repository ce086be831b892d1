"""TorchAudio 0.12's `torchaudio.functional` front end on Ember ops.

Everything here is built from differentiable ember ops (`ember.stft` / `istft`, `matmul`,
`nn.functional.conv1d`, elementwise math), so gradients flow through Ember's autograd.
Filter banks, DCT matrices and resampling kernels are computed in float64 NumPy and cast.
The multi-channel beamforming functions live in `_beamforming.py` and are re-exported here.
"""
import math
import warnings

import numpy as np

import ember

from ._beamforming import apply_beamforming, mvdr_weights_rtf, mvdr_weights_souden, psd, rtf_evd, rtf_power

__all__ = ["spectrogram", "inverse_spectrogram", "melscale_fbanks", "create_dct", "amplitude_to_DB",
           "DB_to_amplitude", "resample", "psd", "mvdr_weights_souden", "mvdr_weights_rtf", "rtf_evd", "rtf_power",
           "apply_beamforming"]


def _check_tensor(x, name):
    if not isinstance(x, ember.Tensor):
        raise TypeError(f"{name} must be an ember.Tensor, got {type(x).__name__}")


def _spec_norms(normalized):
    """(frame_length_norm, window_norm) from `normalized` (bool, "window" or "frame_length")."""
    if isinstance(normalized, str):
        if normalized == "window":
            return False, True
        if normalized == "frame_length":
            return True, False
        raise ValueError(f"Invalid normalized parameter: {normalized}")
    return False, bool(normalized)


def _window_norm(window):
    return float(np.sqrt((window.detach().double().numpy() ** 2).sum()))


def spectrogram(waveform, pad, window, n_fft, hop_length, win_length, power, normalized, center=True,
                pad_mode="reflect", onesided=True, return_complex=None):
    """Spectrogram of `waveform` `(..., time)`: `(..., n_fft // 2 + 1, frames)`.

    `power` None gives the complex STFT (or its `view_as_real` layout when `return_complex` is
    False); otherwise `|STFT| ** power`. `normalized` True (or "window") divides by the window's
    L2 norm; "frame_length" uses the STFT's orthonormal scaling.
    """
    _check_tensor(waveform, "waveform")
    if waveform.ndim < 1:
        raise ValueError("waveform must have at least one dimension (..., time)")
    if not isinstance(n_fft, int) or n_fft <= 0:
        raise ValueError(f"n_fft must be a positive integer, got {n_fft!r}")
    if hop_length is None or hop_length <= 0:
        raise ValueError(f"hop_length must be positive, got {hop_length!r}")
    frame_length_norm, window_norm = _spec_norms(normalized)
    if pad > 0:
        waveform = ember.nn.functional.pad(waveform, (pad, pad), mode="constant")
    shape = tuple(waveform.shape)
    flat = waveform.reshape(-1, shape[-1])
    spec = ember.stft(flat, n_fft, hop_length, win_length, window, center, pad_mode, frame_length_norm,
                      onesided, return_complex=True)
    spec = spec.reshape(shape[:-1] + tuple(spec.shape[-2:]))
    if window_norm:
        spec = spec / _window_norm(window)
    if power is not None:
        mag = spec.abs()
        return mag if power == 1.0 else mag.pow(power)
    if return_complex is False:  # True and None (later TorchAudio's default) both mean complex output
        warnings.warn("The use of pseudo complex type in spectrogram is deprecated: use return_complex=True "
                      "(or leave it None) for a complex tensor.")
        return ember.view_as_real(spec)
    return spec


def inverse_spectrogram(spectrogram, length, pad, window, n_fft, hop_length, win_length, normalized, center=True,
                        pad_mode="reflect", onesided=True):
    """Waveform `(..., time)` from a complex spectrogram `(..., freq, frames)` (inverse of `spectrogram`
    with `power=None`)."""
    _check_tensor(spectrogram, "spectrogram")
    if not spectrogram.dtype.is_complex:
        raise ValueError("Expected `spectrogram` to be complex dtype.")
    if spectrogram.ndim < 2:
        raise ValueError("spectrogram must have at least two dimensions (..., freq, time)")
    frame_length_norm, window_norm = _spec_norms(normalized)
    if window_norm:
        spectrogram = spectrogram * _window_norm(window)
    shape = tuple(spectrogram.shape)
    flat = spectrogram.reshape(-1, shape[-2], shape[-1])
    wave = ember.istft(flat, n_fft, hop_length, win_length, window, center, frame_length_norm, onesided,
                       length + 2 * pad if length is not None else None, return_complex=False)
    if length is not None and pad > 0:
        wave = wave[:, pad:-pad]
    return wave.reshape(shape[:-2] + tuple(wave.shape[-1:]))


def _check_mel_scale(mel_scale):
    if mel_scale not in ("slaney", "htk"):
        raise ValueError('mel_scale should be one of "htk" or "slaney".')


def _hz_to_mel(freq, mel_scale="htk"):
    """Hz to mels (scalar float)."""
    _check_mel_scale(mel_scale)
    if mel_scale == "htk":
        return 2595.0 * math.log10(1.0 + freq / 700.0)
    f_sp = 200.0 / 3  # Slaney: linear below 1 kHz, logarithmic above
    mels = freq / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    if freq >= min_log_hz:
        mels = min_log_mel + math.log(freq / min_log_hz) / logstep
    return mels


def _mel_to_hz(mels, mel_scale="htk"):
    """Mels to Hz (NumPy array)."""
    _check_mel_scale(mel_scale)
    mels = np.asarray(mels, dtype=np.float64)
    if mel_scale == "htk":
        return 700.0 * (10.0 ** (mels / 2595.0) - 1.0)
    f_sp = 200.0 / 3
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    freqs = f_sp * mels
    log_part = mels >= min_log_mel
    freqs[log_part] = min_log_hz * np.exp(logstep * (mels[log_part] - min_log_mel))
    return freqs


def _mel_fbanks_np(n_freqs, f_min, f_max, n_mels, sample_rate, norm, mel_scale):
    if norm is not None and norm != "slaney":
        raise ValueError('norm must be one of None or "slaney"')
    _check_mel_scale(mel_scale)
    all_freqs = np.linspace(0, sample_rate // 2, n_freqs, dtype=np.float32).astype(np.float64)
    m_pts = np.linspace(_hz_to_mel(f_min, mel_scale), _hz_to_mel(f_max, mel_scale), n_mels + 2,
                        dtype=np.float32).astype(np.float64)
    f_pts = _mel_to_hz(m_pts, mel_scale)
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts[None, :] - all_freqs[:, None]  # (n_freqs, n_mels + 2)
    down = -slopes[:, :-2] / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    fb = np.maximum(0.0, np.minimum(down, up))
    if norm == "slaney":
        fb = fb * (2.0 / (f_pts[2:n_mels + 2] - f_pts[:n_mels]))[None, :]
    if (fb.max(axis=0) == 0.0).any():
        warnings.warn("At least one mel filterbank has all zero values. The value for `n_mels` "
                      f"({n_mels}) may be set too high. Or, the value for `n_freqs` ({n_freqs}) may be set too low.")
    return fb


def melscale_fbanks(n_freqs, f_min, f_max, n_mels, sample_rate, norm=None, mel_scale="htk"):
    """Triangular mel filter bank `(n_freqs, n_mels)` (float32) mapping a linear-frequency
    spectrogram's bins to mel bins: `mel = spec.transpose(-1, -2) @ fb`."""
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be positive, got {sample_rate}")
    if n_freqs <= 0 or n_mels <= 0:
        raise ValueError(f"n_freqs and n_mels must be positive, got {n_freqs} and {n_mels}")
    fb = _mel_fbanks_np(n_freqs, f_min, f_max, n_mels, sample_rate, norm, mel_scale)
    return ember.from_numpy(np.ascontiguousarray(fb.astype(np.float32)))


def create_dct(n_mfcc, n_mels, norm):
    """DCT-II matrix `(n_mels, n_mfcc)` (float32), orthonormal with `norm="ortho"`, scaled by 2 with None."""
    if norm is not None and norm != "ortho":
        raise ValueError('norm must be either "ortho" or None')
    if n_mfcc <= 0 or n_mels <= 0:
        raise ValueError(f"n_mfcc and n_mels must be positive, got {n_mfcc} and {n_mels}")
    n = np.arange(n_mels, dtype=np.float32).astype(np.float64)
    k = np.arange(n_mfcc, dtype=np.float64)[:, None]
    dct = np.cos(math.pi / n_mels * (n + 0.5) * k)  # (n_mfcc, n_mels)
    if norm is None:
        dct = dct * 2.0
    else:
        dct[0] *= 1.0 / math.sqrt(2.0)
        dct = dct * math.sqrt(2.0 / n_mels)
    return ember.from_numpy(np.ascontiguousarray(dct.T.astype(np.float32)))


def amplitude_to_DB(x, multiplier, amin, db_multiplier, top_db=None):
    """`multiplier * log10(max(x, amin)) - multiplier * db_multiplier`, floored at `max - top_db`
    per spectrogram (the max over the last three dims, (channel, freq, time), of each batch item)."""
    _check_tensor(x, "x")
    x_db = multiplier * ember.log10(ember.clamp(x, min=amin))
    x_db = x_db - multiplier * db_multiplier
    if top_db is not None:
        shape = tuple(x_db.shape)
        if len(shape) < 2:
            raise ValueError("amplitude_to_DB with top_db expects at least 2 dimensions (freq, time)")
        packed = shape[-3] if len(shape) > 2 else 1
        x_db = x_db.reshape(-1, packed, shape[-2], shape[-1])
        floor = x_db.amax(dim=(-3, -2, -1)) - top_db
        x_db = ember.maximum(x_db, floor.reshape(-1, 1, 1, 1))
        x_db = x_db.reshape(shape)
    return x_db


def DB_to_amplitude(x, ref, power):
    """Inverse of `amplitude_to_DB` without clipping: `ref * (10 ** (0.1 * x)) ** power`."""
    _check_tensor(x, "x")
    return ref * ember.pow(ember.pow(10.0, 0.1 * x), power)


_METHODS = {"sinc_interp_hann": "hann", "sinc_interpolation": "hann",
            "sinc_interp_kaiser": "kaiser", "kaiser_window": "kaiser"}


def _sinc_resample_kernel_np(orig_freq, new_freq, gcd, lowpass_filter_width=6, rolloff=0.99,
                             resampling_method="sinc_interp_hann", beta=None):
    """(kernel `(new, 1, 2 * width + orig)` float64 NumPy, width) after reducing by `gcd`."""
    if not (int(orig_freq) == orig_freq and int(new_freq) == new_freq):
        raise ValueError("Frequencies must be of integer type to ensure quality resampling computation. "
                         "To work around this, manually convert both frequencies to integer values that maintain "
                         "their resampling rate ratio before passing them into the function.")
    if resampling_method not in _METHODS:
        raise ValueError(f"Invalid resampling method: {resampling_method}")
    orig = int(orig_freq) // gcd
    new = int(new_freq) // gcd
    if lowpass_filter_width <= 0:
        raise ValueError("Low pass filter width should be positive.")
    base_freq = min(orig, new) * rolloff
    width = math.ceil(lowpass_filter_width * orig / base_freq)
    idx = np.arange(-width, width + orig, dtype=np.float64)[None, None] / orig
    t = np.arange(0, -new, -1, dtype=np.float64)[:, None, None] / new + idx
    t = np.clip(t * base_freq, -lowpass_filter_width, lowpass_filter_width)
    if _METHODS[resampling_method] == "hann":
        window = np.cos(t * math.pi / lowpass_filter_width / 2) ** 2
    else:
        beta = 14.769656459379492 if beta is None else float(beta)
        window = np.i0(beta * np.sqrt(1 - (t / lowpass_filter_width) ** 2)) / np.i0(beta)
    t = t * math.pi
    with np.errstate(invalid="ignore", divide="ignore"):
        sinc = np.where(t == 0, 1.0, np.sin(t) / np.where(t == 0, 1.0, t))
    return sinc * window * (base_freq / orig), width


def _check_freqs(orig_freq, new_freq):
    if orig_freq <= 0.0 or new_freq <= 0.0:
        raise ValueError("Original frequency and desired frequecy should be positive")


def _sinc_resample_kernel(orig_freq, new_freq, gcd, lowpass_filter_width=6, rolloff=0.99,
                          resampling_method="sinc_interp_hann", beta=None, dtype=None):
    kernel, width = _sinc_resample_kernel_np(orig_freq, new_freq, gcd, lowpass_filter_width, rolloff,
                                             resampling_method, beta)
    np_dtype = np.float64 if dtype == ember.float64 else np.float32
    out = ember.from_numpy(np.ascontiguousarray(kernel.astype(np_dtype)))
    if dtype is not None and dtype not in (ember.float32, ember.float64):
        out = out.to(dtype)
    return out, width


def _apply_sinc_resample_kernel(waveform, orig_freq, new_freq, gcd, kernel, width):
    if not waveform.dtype.is_floating_point:
        raise TypeError(f"Expected floating point type for waveform tensor, but received {waveform.dtype}.")
    orig = int(orig_freq) // gcd
    new = int(new_freq) // gcd
    shape = tuple(waveform.shape)
    flat = waveform.reshape(-1, shape[-1])
    num_wavs, length = flat.shape
    if kernel.dtype != flat.dtype:
        kernel = kernel.to(flat.dtype)
    padded = ember.nn.functional.pad(flat, (width, width + orig))
    out = ember.nn.functional.conv1d(padded.unsqueeze(1), kernel, stride=orig)  # (num_wavs, new, frames)
    out = out.transpose(1, 2).reshape(num_wavs, -1)
    target = int(math.ceil(new * length / orig))
    out = out[..., :target]
    return out.reshape(shape[:-1] + tuple(out.shape[-1:]))


def resample(waveform, orig_freq, new_freq, lowpass_filter_width=6, rolloff=0.99,
             resampling_method="sinc_interp_hann", beta=None):
    """Resamples `waveform` `(..., time)` from `orig_freq` to `new_freq` with a windowed-sinc
    band-limited interpolation kernel (Hann or Kaiser window), applied as a strided conv1d.

    `resampling_method`: "sinc_interp_hann" / "sinc_interp_kaiser" or TorchAudio 0.12's names
    "sinc_interpolation" / "kaiser_window". Output length `ceil(new * time / orig)`."""
    _check_tensor(waveform, "waveform")
    _check_freqs(orig_freq, new_freq)
    if waveform.ndim < 1:
        raise ValueError("waveform must have at least one dimension (..., time)")
    if orig_freq == new_freq:
        return waveform
    gcd = math.gcd(int(orig_freq), int(new_freq))
    dtype = waveform.dtype if waveform.dtype.is_floating_point else None
    kernel, width = _sinc_resample_kernel(orig_freq, new_freq, gcd, lowpass_filter_width, rolloff,
                                          resampling_method, beta, dtype)
    return _apply_sinc_resample_kernel(waveform, orig_freq, new_freq, gcd, kernel, width)
