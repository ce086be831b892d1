"""TorchAudio 0.12's `torchaudio.transforms` front end as `ember.nn.Module`s.

Buffers are registered under TorchAudio's names (`window`, `fb`, `dct_mat`; Resample's `kernel`
is non-persistent), so state_dict keys match TorchAudio's. The multi-channel modules (`PSD`,
`MVDR`, `SoudenMVDR`, `RTFMVDR`) live in `_multi_channel.py` and are re-exported here.
"""
import math

import ember
from ember import nn

from . import functional as F
from ._multi_channel import MVDR, PSD, RTFMVDR, SoudenMVDR

__all__ = ["Spectrogram", "InverseSpectrogram", "MelScale", "MelSpectrogram", "MFCC", "AmplitudeToDB", "Resample",
           "PSD", "MVDR", "SoudenMVDR", "RTFMVDR"]


def _make_window(window_fn, win_length, wkwargs):
    return window_fn(win_length) if wkwargs is None else window_fn(win_length, **wkwargs)


def _lengths(n_fft, win_length, hop_length):
    if not isinstance(n_fft, int) or n_fft <= 0:
        raise ValueError(f"n_fft must be a positive integer, got {n_fft!r}")
    win_length = win_length if win_length is not None else n_fft
    if not 0 < win_length <= n_fft:
        raise ValueError(f"win_length must be in (0, n_fft={n_fft}], got {win_length}")
    hop_length = hop_length if hop_length is not None else win_length // 2
    if hop_length <= 0:
        raise ValueError(f"hop_length must be positive, got {hop_length} (win_length={win_length})")
    return win_length, hop_length


class Spectrogram(nn.Module):
    """`(..., time)` → `(..., n_fft // 2 + 1, frames)`: power spectrogram, or complex with `power=None`."""
    __constants__ = ["n_fft", "win_length", "hop_length", "pad", "power", "normalized"]

    def __init__(self, n_fft=400, win_length=None, hop_length=None, pad=0, window_fn=ember.hann_window,
                 power=2.0, normalized=False, wkwargs=None, center=True, pad_mode="reflect", onesided=True,
                 return_complex=None):
        super().__init__()
        self.n_fft = n_fft
        self.win_length, self.hop_length = _lengths(n_fft, win_length, hop_length)
        self.register_buffer("window", _make_window(window_fn, self.win_length, wkwargs))
        self.pad = pad
        self.power = power
        self.normalized = normalized
        self.center = center
        self.pad_mode = pad_mode
        self.onesided = onesided
        self.return_complex = return_complex

    def forward(self, waveform):
        return F.spectrogram(waveform, self.pad, self.window, self.n_fft, self.hop_length, self.win_length,
                             self.power, self.normalized, self.center, self.pad_mode, self.onesided,
                             self.return_complex)


class InverseSpectrogram(nn.Module):
    """Complex `(..., freq, frames)` → `(..., time)`; `forward(spectrogram, length=None)`."""
    __constants__ = ["n_fft", "win_length", "hop_length", "pad", "power", "normalized"]

    def __init__(self, n_fft=400, win_length=None, hop_length=None, pad=0, window_fn=ember.hann_window,
                 normalized=False, wkwargs=None, center=True, pad_mode="reflect", onesided=True):
        super().__init__()
        self.n_fft = n_fft
        self.win_length, self.hop_length = _lengths(n_fft, win_length, hop_length)
        self.register_buffer("window", _make_window(window_fn, self.win_length, wkwargs))
        self.pad = pad
        self.normalized = normalized
        self.center = center
        self.pad_mode = pad_mode
        self.onesided = onesided

    def forward(self, spectrogram, length=None):
        return F.inverse_spectrogram(spectrogram, length, self.pad, self.window, self.n_fft, self.hop_length,
                                     self.win_length, self.normalized, self.center, self.pad_mode, self.onesided)


class AmplitudeToDB(nn.Module):
    """Power (`stype="power"`, 10·log10) or magnitude (`"magnitude"`, 20·log10) to decibels,
    `amin=1e-10`, reference 1, optionally floored at `max - top_db`."""
    __constants__ = ["multiplier", "amin", "ref_value", "db_multiplier"]

    def __init__(self, stype="power", top_db=None):
        super().__init__()
        if stype not in ("power", "magnitude"):
            raise ValueError(f'stype must be "power" or "magnitude", got {stype!r}')
        self.stype = stype
        if top_db is not None and top_db < 0:
            raise ValueError("top_db must be positive value")
        self.top_db = top_db
        self.multiplier = 10.0 if stype == "power" else 20.0
        self.amin = 1e-10
        self.ref_value = 1.0
        self.db_multiplier = math.log10(max(self.amin, self.ref_value))

    def forward(self, x):
        return F.amplitude_to_DB(x, self.multiplier, self.amin, self.db_multiplier, self.top_db)


class MelScale(nn.Module):
    """Linear spectrogram `(..., n_stft, time)` → mel spectrogram `(..., n_mels, time)`."""
    __constants__ = ["n_mels", "sample_rate", "f_min", "f_max"]

    def __init__(self, n_mels=128, sample_rate=16000, f_min=0.0, f_max=None, n_stft=201, norm=None, mel_scale="htk"):
        super().__init__()
        if sample_rate <= 0:
            raise ValueError(f"sample_rate must be positive, got {sample_rate}")
        self.n_mels = n_mels
        self.sample_rate = sample_rate
        self.f_max = f_max if f_max is not None else float(sample_rate // 2)
        self.f_min = f_min
        self.norm = norm
        self.mel_scale = mel_scale
        if f_min > self.f_max:
            raise ValueError(f"Require f_min: {f_min} < f_max: {self.f_max}")
        self.register_buffer("fb", F.melscale_fbanks(n_stft, self.f_min, self.f_max, self.n_mels, self.sample_rate,
                                                     self.norm, self.mel_scale))

    def forward(self, specgram):
        if specgram.ndim < 2:
            raise ValueError(f"MelScale expects (..., freq, time), got shape {tuple(specgram.shape)}")
        if specgram.shape[-2] != self.fb.shape[0]:
            raise RuntimeError(f"MelScale: the spectrogram has {specgram.shape[-2]} frequency bins, "
                               f"the filter bank expects n_stft={self.fb.shape[0]}")
        fb = self.fb if self.fb.dtype == specgram.dtype else self.fb.to(specgram.dtype)
        return ember.matmul(specgram.transpose(-1, -2), fb).transpose(-1, -2)


class MelSpectrogram(nn.Module):
    """`(..., time)` → `(..., n_mels, frames)`: `Spectrogram` followed by `MelScale`."""
    __constants__ = ["sample_rate", "n_fft", "win_length", "hop_length", "pad", "n_mels", "f_min"]

    def __init__(self, sample_rate=16000, n_fft=400, win_length=None, hop_length=None, f_min=0.0, f_max=None,
                 pad=0, n_mels=128, window_fn=ember.hann_window, power=2.0, normalized=False, wkwargs=None,
                 center=True, pad_mode="reflect", onesided=True, norm=None, mel_scale="htk"):
        super().__init__()
        self.sample_rate = sample_rate
        self.n_fft = n_fft
        self.win_length, self.hop_length = _lengths(n_fft, win_length, hop_length)
        self.pad = pad
        self.power = power
        self.normalized = normalized
        self.n_mels = n_mels
        self.f_max = f_max
        self.f_min = f_min
        self.spectrogram = Spectrogram(n_fft=self.n_fft, win_length=self.win_length, hop_length=self.hop_length,
                                       pad=self.pad, window_fn=window_fn, power=self.power, normalized=self.normalized,
                                       wkwargs=wkwargs, center=center, pad_mode=pad_mode, onesided=onesided)
        self.mel_scale = MelScale(self.n_mels, self.sample_rate, self.f_min, self.f_max, self.n_fft // 2 + 1,
                                  norm, mel_scale)

    def forward(self, waveform):
        return self.mel_scale(self.spectrogram(waveform))


class MFCC(nn.Module):
    """`(..., time)` → `(..., n_mfcc, frames)`: DCT-II of the dB (or log, with `log_mels`) mel spectrogram."""
    __constants__ = ["sample_rate", "n_mfcc", "dct_type", "top_db", "log_mels"]

    def __init__(self, sample_rate=16000, n_mfcc=40, dct_type=2, norm="ortho", log_mels=False, melkwargs=None):
        super().__init__()
        if dct_type not in (2,):
            raise ValueError(f"DCT type not supported: {dct_type}")
        self.sample_rate = sample_rate
        self.n_mfcc = n_mfcc
        self.dct_type = dct_type
        self.norm = norm
        self.top_db = 80.0
        self.amplitude_to_DB = AmplitudeToDB("power", self.top_db)
        self.MelSpectrogram = MelSpectrogram(sample_rate=self.sample_rate, **(melkwargs or {}))
        if self.n_mfcc > self.MelSpectrogram.n_mels:
            raise ValueError("Cannot select more MFCC coefficients than # mel bins")
        self.register_buffer("dct_mat", F.create_dct(self.n_mfcc, self.MelSpectrogram.n_mels, self.norm))
        self.log_mels = log_mels

    def forward(self, waveform):
        mel = self.MelSpectrogram(waveform)
        if self.log_mels:
            mel = ember.log(mel + 1e-6)
        else:
            mel = self.amplitude_to_DB(mel)
        dct = self.dct_mat if self.dct_mat.dtype == mel.dtype else self.dct_mat.to(mel.dtype)
        return ember.matmul(mel.transpose(-1, -2), dct).transpose(-1, -2)


class Resample(nn.Module):
    """`(..., time)` at `orig_freq` → `(..., ceil(time * new_freq / orig_freq))` at `new_freq`, with a
    precomputed windowed-sinc kernel (`dtype` float32 by default, or `dtype=ember.float64`)."""

    def __init__(self, orig_freq=16000, new_freq=16000, resampling_method="sinc_interp_hann",
                 lowpass_filter_width=6, rolloff=0.99, beta=None, *, dtype=None):
        super().__init__()
        F._check_freqs(orig_freq, new_freq)
        self.orig_freq = orig_freq
        self.new_freq = new_freq
        self.gcd = math.gcd(int(self.orig_freq), int(self.new_freq))
        self.resampling_method = resampling_method
        self.lowpass_filter_width = lowpass_filter_width
        self.rolloff = rolloff
        self.beta = beta
        if self.orig_freq != self.new_freq:
            kernel, self.width = F._sinc_resample_kernel(self.orig_freq, self.new_freq, self.gcd,
                                                         self.lowpass_filter_width, self.rolloff,
                                                         self.resampling_method, beta, dtype)
            self.register_buffer("kernel", kernel, persistent=False)

    def forward(self, waveform):
        if self.orig_freq == self.new_freq:
            return waveform
        return F._apply_sinc_resample_kernel(waveform, self.orig_freq, self.new_freq, self.gcd, self.kernel, self.width)
