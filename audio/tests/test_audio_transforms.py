"""emberaudio.functional / transforms against NumPy transcriptions of TorchAudio 0.12's formulas
(written out independently here, element by element) and against torch.stft."""
import math
import warnings

import numpy as np
import pytest

import ember
from emberaudio import functional as F
from emberaudio import transforms as T


def _np(t):
    return t.detach().numpy()


def _t(a):
    return ember.from_numpy(np.ascontiguousarray(a))


# ---------------------------------------------------------------- NumPy references

def ref_hz_to_mel(f, scale):
    if scale == "htk":
        return 2595.0 * math.log10(1.0 + f / 700.0)
    if f < 1000.0:
        return 3.0 * f / 200.0
    return 15.0 + 27.0 * math.log(f / 1000.0) / math.log(6.4)


def ref_mel_to_hz(m, scale):
    if scale == "htk":
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    if m < 15.0:
        return 200.0 * m / 3.0
    return 1000.0 * 6.4 ** ((m - 15.0) / 27.0)


def ref_fbanks(n_freqs, f_min, f_max, n_mels, sr, norm, scale):
    freqs = np.linspace(0, sr // 2, n_freqs)
    lo, hi = ref_hz_to_mel(f_min, scale), ref_hz_to_mel(f_max, scale)
    pts = [ref_mel_to_hz(lo + (hi - lo) * i / (n_mels + 1), scale) for i in range(n_mels + 2)]
    fb = np.zeros((n_freqs, n_mels))
    for m in range(n_mels):
        left, centre, right = pts[m], pts[m + 1], pts[m + 2]
        for k, f in enumerate(freqs):
            rise = (f - left) / (centre - left)
            fall = (right - f) / (right - centre)
            fb[k, m] = max(0.0, min(rise, fall))
        if norm == "slaney":
            fb[:, m] *= 2.0 / (right - left)
    return fb


def ref_dct(n_mfcc, n_mels, norm):
    out = np.zeros((n_mels, n_mfcc))
    for n in range(n_mels):
        for k in range(n_mfcc):
            c = math.cos(math.pi * k * (2 * n + 1) / (2 * n_mels))
            if norm == "ortho":
                c *= math.sqrt((1.0 if k == 0 else 2.0) / n_mels)
            else:
                c *= 2.0
            out[n, k] = c
    return out


def ref_resample(x, orig, new, lpw=6, rolloff=0.99):
    """Band-limited interpolation evaluated directly at each output instant (Hann window)."""
    g = math.gcd(orig, new)
    orig, new = orig // g, new // g
    base = min(orig, new) * rolloff
    n_out = math.ceil(new * len(x) / orig)
    k = np.arange(len(x))
    y = np.zeros(n_out)
    for n in range(n_out):
        t = base * (k / orig - n / new)
        inside = np.abs(t) < lpw
        window = np.cos(np.pi * t[inside] / (2 * lpw)) ** 2
        y[n] = (x[inside] * np.sinc(t[inside]) * window).sum() * base / orig
    return y


# ---------------------------------------------------------------- filter banks and DCT

@pytest.mark.parametrize("scale", ["htk", "slaney"])
@pytest.mark.parametrize("norm", [None, "slaney"])
def test_melscale_fbanks(scale, norm):
    fb = F.melscale_fbanks(201, 20.0, 7600.0, 40, 16000, norm=norm, mel_scale=scale)
    assert fb.shape == (201, 40) and fb.dtype == ember.float32
    np.testing.assert_allclose(_np(fb), ref_fbanks(201, 20.0, 7600.0, 40, 16000, norm, scale), rtol=1e-4,
                               atol=1e-5 * float(_np(fb).max()))


def test_melscale_fbanks_errors_and_warning():
    with pytest.raises(ValueError, match="mel_scale"):
        F.melscale_fbanks(201, 0.0, 8000.0, 40, 16000, mel_scale="mel")
    with pytest.raises(ValueError, match="norm"):
        F.melscale_fbanks(201, 0.0, 8000.0, 40, 16000, norm="ortho")
    with pytest.raises(ValueError, match="sample_rate"):
        F.melscale_fbanks(201, 0.0, 8000.0, 40, 0)
    with pytest.warns(UserWarning, match="all zero"):
        F.melscale_fbanks(11, 0.0, 8000.0, 64, 16000)


@pytest.mark.parametrize("norm", [None, "ortho"])
def test_create_dct(norm):
    d = F.create_dct(13, 40, norm)
    assert d.shape == (40, 13)
    np.testing.assert_allclose(_np(d), ref_dct(13, 40, norm), rtol=1e-5, atol=1e-6)
    if norm == "ortho":
        np.testing.assert_allclose(_np(d).T @ _np(d), np.eye(13), atol=1e-5)
    with pytest.raises(ValueError, match="norm"):
        F.create_dct(13, 40, "slaney")


# ---------------------------------------------------------------- dB

def test_amplitude_to_db_and_back():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 10, size=(2, 3, 5, 7)) ** 4
    x[0, 0, 0, 0] = 0.0
    db = F.amplitude_to_DB(_t(x), 10.0, 1e-10, 0.0)
    np.testing.assert_allclose(_np(db), 10 * np.log10(np.maximum(x, 1e-10)), rtol=1e-10, atol=1e-9)
    floored = F.amplitude_to_DB(_t(x), 10.0, 1e-10, 0.0, top_db=30.0)
    want = 10 * np.log10(np.maximum(x, 1e-10))
    for b in range(2):  # the max is taken over (channel, freq, time) of each batch item
        want[b] = np.maximum(want[b], want[b].max() - 30.0)
    np.testing.assert_allclose(_np(floored), want, rtol=1e-10, atol=1e-9)
    back = F.DB_to_amplitude(F.amplitude_to_DB(_t(x + 1), 20.0, 1e-10, 0.0), 1.0, 0.5)
    np.testing.assert_allclose(_np(back), x + 1, rtol=1e-9)
    mag = T.AmplitudeToDB("magnitude", top_db=None)(_t(x[0, 0] + 1))
    np.testing.assert_allclose(_np(mag), 20 * np.log10(x[0, 0] + 1), rtol=1e-10)
    with pytest.raises(ValueError, match="top_db"):
        T.AmplitudeToDB(top_db=-1.0)
    with pytest.raises(ValueError):
        T.AmplitudeToDB("energy")


# ---------------------------------------------------------------- spectrograms

def test_spectrogram_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 1000))
    for power, normalized in [(2.0, False), (1.0, True), (None, False), (2.0, "frame_length")]:
        got = T.Spectrogram(n_fft=128, hop_length=32, power=power, normalized=normalized,
                            wkwargs={"dtype": ember.float64})(_t(x))
        tx = torch.from_numpy(x).reshape(-1, 1000)
        w = torch.hann_window(128, dtype=torch.float64)
        s = torch.stft(tx, 128, 32, 128, w, center=True, pad_mode="reflect",
                       normalized=normalized == "frame_length", onesided=True, return_complex=True)
        s = s.reshape(2, 3, 65, -1)
        if normalized is True:
            s = s / w.pow(2).sum().sqrt()
        want = s.numpy() if power is None else s.abs().pow(power).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(_np(got), want, rtol=1e-7, atol=1e-9)


def test_spectrogram_defaults_pad_and_shapes():
    x = ember.randn(4, 16000)
    spec = T.Spectrogram()
    assert spec.win_length == 400 and spec.hop_length == 200 and spec.window.shape == (400,)
    assert spec(x).shape == (4, 201, 81)
    assert T.Spectrogram(n_fft=64, pad=10)(ember.randn(100)).shape == (33, (120 // 32) + 1)
    assert T.Spectrogram(n_fft=64, center=False)(ember.randn(2, 1, 256)).shape == (2, 1, 33, 7)
    assert list(T.Spectrogram().state_dict()) == ["window"]
    ri = T.Spectrogram(n_fft=64, power=None, return_complex=False)
    with pytest.warns(UserWarning, match="pseudo complex"):
        assert ri(ember.randn(256)).shape == (33, 9, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert T.Spectrogram(n_fft=64, power=None, return_complex=True)(ember.randn(256)).dtype == ember.complex64


def test_spectrogram_errors():
    with pytest.raises(ValueError):
        T.Spectrogram(n_fft=0)
    with pytest.raises(ValueError):
        T.Spectrogram(n_fft=64, hop_length=0)
    with pytest.raises(ValueError):
        T.Spectrogram(n_fft=64, win_length=128)
    with pytest.raises(TypeError):
        T.Spectrogram()(np.zeros(1000))
    with pytest.raises(RuntimeError):  # too short for the reflect padding
        T.Spectrogram(n_fft=400)(ember.randn(10))
    with pytest.raises(ValueError, match="normalized"):
        T.Spectrogram(n_fft=64, normalized="unit")(ember.randn(256))


@pytest.mark.parametrize("normalized", [False, True])
def test_inverse_spectrogram_roundtrip(normalized):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 1000))
    kw = dict(n_fft=128, hop_length=32, pad=5, normalized=normalized, wkwargs={"dtype": ember.float64})
    spec = T.Spectrogram(power=None, **kw)(_t(x))
    inv = T.InverseSpectrogram(**kw)
    y = inv(spec, length=1000)
    assert y.shape == (2, 3, 1000)
    np.testing.assert_allclose(_np(y), x, atol=1e-9)
    assert list(inv.state_dict()) == ["window"]
    with pytest.raises(ValueError, match="complex"):
        inv(spec.abs())


# ---------------------------------------------------------------- mel, MFCC

def test_mel_spectrogram_matches_numpy_and_torch():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4000)).astype(np.float32)
    mel = T.MelSpectrogram(sample_rate=8000, n_fft=256, hop_length=64, n_mels=32, f_min=50.0, norm="slaney",
                           mel_scale="slaney")
    assert list(mel.state_dict()) == ["spectrogram.window", "mel_scale.fb"]
    got = _np(mel(_t(x)))
    assert got.shape == (2, 32, 4000 // 64 + 1)
    fb = ref_fbanks(129, 50.0, 4000.0, 32, 8000, "slaney", "slaney")
    torch = pytest.importorskip("torch")
    s = torch.stft(torch.from_numpy(x).double(), 256, 64, 256, torch.hann_window(256, dtype=torch.float64),
                   return_complex=True).abs() ** 2
    want = np.einsum("bft,fm->bmt", s.numpy(), fb)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-4 * want.max())


def test_mel_scale_errors():
    with pytest.raises(ValueError, match="f_min"):
        T.MelScale(f_min=9000.0, sample_rate=16000)
    with pytest.raises(ValueError):
        T.MelScale(sample_rate=-1)
    with pytest.raises(ValueError, match="mel_scale"):
        T.MelSpectrogram(mel_scale="bark")
    with pytest.raises(RuntimeError, match="n_stft"):
        T.MelScale(n_mels=40, n_stft=201)(ember.randn(100, 10))


@pytest.mark.parametrize("log_mels", [False, True])
def test_mfcc_matches_numpy(log_mels):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 2000))
    mfcc = T.MFCC(sample_rate=8000, n_mfcc=13, log_mels=log_mels,
                  melkwargs={"n_fft": 200, "n_mels": 24, "hop_length": 80, "wkwargs": {"dtype": ember.float64}})
    assert list(mfcc.state_dict()) == ["dct_mat", "MelSpectrogram.spectrogram.window", "MelSpectrogram.mel_scale.fb"]
    got = _np(mfcc(_t(x)))
    frames = np.lib.stride_tricks.sliding_window_view(np.pad(x, ((0, 0), (100, 100)), mode="reflect"), 200, axis=-1)
    frames = frames[:, ::80]
    w = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(200) / 200)
    power = np.abs(np.fft.rfft(frames * w, axis=-1)) ** 2  # (batch, frames, freq)
    mel = power @ ref_fbanks(101, 0.0, 4000.0, 24, 8000, None, "htk")
    if log_mels:
        feat = np.log(mel + 1e-6)
    else:
        feat = 10 * np.log10(np.maximum(mel, 1e-10))
        feat = np.maximum(feat, feat.max() - 80.0)  # 2D per item: packed as one channel → one max for all
    want = (feat @ ref_dct(13, 24, "ortho")).transpose(0, 2, 1)
    assert got.shape == want.shape == (3, 13, 26)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_mfcc_errors():
    with pytest.raises(ValueError, match="DCT type"):
        T.MFCC(dct_type=3)
    with pytest.raises(ValueError, match="MFCC coefficients"):
        T.MFCC(n_mfcc=50, melkwargs={"n_mels": 40})


# ---------------------------------------------------------------- resampling

def test_resample_kernel_matches_numpy():
    kernel, width = F._sinc_resample_kernel(44100, 16000, math.gcd(44100, 16000), dtype=ember.float64)
    orig, new = 441, 160
    base = min(orig, new) * 0.99
    assert width == math.ceil(6 * orig / base)
    k = _np(kernel)
    assert k.shape == (new, 1, 2 * width + orig)
    for j in (0, 1, 77, new - 1):
        for i in (0, 5, width, width + 3, 2 * width + orig - 1):
            t = base * ((i - width) / orig - j / new)
            w = math.cos(math.pi * t / 12) ** 2 if abs(t) < 6 else 0.0
            want = (math.sin(math.pi * t) / (math.pi * t) if t != 0 else 1.0) * w * base / orig
            assert abs(k[j, 0, i] - want) < 1e-12


def test_resample_kaiser_kernel():
    scipy_special = pytest.importorskip("scipy.special")
    kernel, width = F._sinc_resample_kernel(3, 2, 1, lowpass_filter_width=4, rolloff=0.9,
                                            resampling_method="sinc_interp_kaiser", beta=8.0, dtype=ember.float64)
    k = _np(kernel)
    base = 2 * 0.9
    for j in range(2):
        for i in range(2 * width + 3):
            t = min(max(base * ((i - width) / 3 - j / 2), -4.0), 4.0)
            w = scipy_special.i0(8.0 * math.sqrt(1 - (t / 4) ** 2)) / scipy_special.i0(8.0)
            s = math.sin(math.pi * t) / (math.pi * t) if t != 0 else 1.0
            assert abs(k[j, 0, i] - s * w * base / 3) < 1e-12
    old = F._sinc_resample_kernel(3, 2, 1, 4, 0.9, "kaiser_window", 8.0, ember.float64)[0]
    np.testing.assert_array_equal(_np(old), k)


@pytest.mark.parametrize("orig,new", [(16000, 8000), (8000, 16000), (44100, 16000), (5, 7)])
def test_resample_matches_direct_sum(orig, new):
    rng = np.random.default_rng(5)
    n = 300 if orig > 100 else 40
    x = rng.standard_normal(n)
    got = _np(F.resample(_t(x), orig, new))
    np.testing.assert_allclose(got, ref_resample(x, orig, new), atol=1e-10)


def test_resample_sine_keeps_frequency_and_batches():
    sr, new_sr, f = 16000, 44100, 440.0
    x = np.sin(2 * np.pi * f * np.arange(sr) / sr).astype(np.float32)
    batch = np.stack([x, 0.5 * x])[None]  # (1, 2, time)
    res = T.Resample(sr, new_sr)
    assert res.kernel.dtype == ember.float32 and list(res.state_dict()) == []
    y = _np(res(_t(batch)))
    assert y.shape == (1, 2, new_sr)
    spectrum = np.abs(np.fft.rfft(y[0, 0] * np.hanning(new_sr)))
    assert abs(np.argmax(spectrum) * new_sr / new_sr - f) <= 1.0  # 1 Hz bins
    np.testing.assert_allclose(y[0, 1], 0.5 * y[0, 0], rtol=1e-5, atol=1e-6)
    middle = slice(1000, new_sr - 1000)
    want = np.sin(2 * np.pi * f * np.arange(new_sr) / new_sr)
    np.testing.assert_allclose(y[0, 0, middle], want[middle], atol=2e-3)
    assert T.Resample(8000, 8000)(_t(batch)) is not None
    for method in ("sinc_interpolation", "kaiser_window", "sinc_interp_kaiser"):
        assert T.Resample(sr, 8000, resampling_method=method)(_t(x)).shape == (8000,)


def test_resample_errors():
    with pytest.raises(ValueError, match="positive"):
        F.resample(ember.randn(100), 0, 16000)
    with pytest.raises(ValueError, match="positive"):
        T.Resample(16000, -8000)
    with pytest.raises(ValueError, match="resampling method"):
        F.resample(ember.randn(100), 16000, 8000, resampling_method="linear")
    with pytest.raises(ValueError, match="integer"):
        F.resample(ember.randn(100), 16000.5, 8000)
    with pytest.raises(ValueError, match="width"):
        F.resample(ember.randn(100), 16000, 8000, lowpass_filter_width=0)
    with pytest.raises(TypeError, match="floating point"):
        T.Resample(16000, 8000)(ember.zeros(100, dtype=ember.int64))


# ---------------------------------------------------------------- gradients

def test_gradients_flow():
    x = ember.randn(2, 800, requires_grad=True)
    T.MFCC(sample_rate=8000, n_mfcc=8, melkwargs={"n_fft": 128, "n_mels": 16})(x).sum().backward()
    assert x.grad is not None and x.grad.shape == (2, 800) and np.isfinite(_np(x.grad)).all()
    y = ember.randn(3, 500, requires_grad=True)
    T.Resample(500, 300)(y).pow(2).sum().backward()
    assert y.grad.shape == (3, 500) and float(y.grad.abs().sum()) > 0


def test_gradcheck():
    gradcheck = pytest.importorskip("ember.autograd").gradcheck
    x = ember.randn(40, dtype=ember.float64, requires_grad=True)
    w = ember.hann_window(16, dtype=ember.float64)
    fb = F.melscale_fbanks(9, 0.0, 500.0, 4, 1000).to(ember.float64)
    assert gradcheck(lambda s: ember.matmul(F.spectrogram(s, 0, w, 16, 4, 16, 2.0, False).transpose(-1, -2), fb),
                     (x,), eps=1e-6, atol=1e-6)
    assert gradcheck(lambda s: F.resample(s, 3, 2, lowpass_filter_width=3), (x,), eps=1e-6, atol=1e-6)
    assert gradcheck(lambda s: F.amplitude_to_DB(s.abs() + 1.0, 10.0, 1e-10, 0.0), (x,), eps=1e-6, atol=1e-6)
