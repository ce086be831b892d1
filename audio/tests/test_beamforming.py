"""Beamforming (`emberaudio.functional` psd / MVDR weights / RTF / apply_beamforming and the
`PSD`, `MVDR`, `SoudenMVDR`, `RTFMVDR` modules) against NumPy transcriptions of TorchAudio's
formulas, gradients, and MVDR's SI-SNR gain on a simulated two-source, four-microphone mixture."""
import numpy as np
import pytest

import ember
from emberaudio import functional as F
from emberaudio import transforms as T

CHANNELS, FREQS, FRAMES = 4, 5, 12
TOL = {ember.complex64: dict(rtol=2e-4, atol=2e-5), ember.complex128: dict(rtol=1e-9, atol=1e-11)}
NP_DTYPE = {ember.complex64: np.complex64, ember.complex128: np.complex128}
REAL_DTYPE = {ember.complex64: np.float32, ember.complex128: np.float64}


# ----------------------------------------------------------------------------------------------
# NumPy transcription of TorchAudio's formulas (computed in complex128)

def np_psd(spec, mask=None, normalize=True, eps=1e-10):
    spec = np.swapaxes(spec, -3, -2)  # (..., freq, channel, time)
    outer = np.einsum("...ct,...et->...tce", spec, spec.conj())
    if mask is not None:
        if normalize:
            mask = mask / (mask.sum(axis=-1, keepdims=True) + eps)
        outer = outer * mask[..., None, None]
    return outer.sum(axis=-3)


def np_tik_reg(mat, reg=1e-7, eps=1e-8):
    loading = np.trace(mat, axis1=-2, axis2=-1).real[..., None, None] * reg + eps
    return mat + loading * np.eye(mat.shape[-1])


def np_pick(x, ref, inner):
    """x[..., ref] for an int; the one-hot contraction over the last axis for an array."""
    if isinstance(ref, int):
        return x[..., ref]
    ref = ref.astype(np.complex128)
    return np.einsum("...c,...c->...", x, ref.reshape(ref.shape[:-1] + (1,) * inner + ref.shape[-1:]))


def np_souden(psd_s, psd_n, ref, diagonal_loading=True, diag_eps=1e-7, eps=1e-8):
    if diagonal_loading:
        psd_n = np_tik_reg(psd_n, diag_eps)
    numerator = np.linalg.solve(psd_n, psd_s)
    ws = numerator / (np.trace(numerator, axis1=-2, axis2=-1)[..., None, None] + eps)
    return np_pick(ws, ref, 2)


def np_rtf_weights(rtf, psd_n, ref=None, diagonal_loading=True, diag_eps=1e-7, eps=1e-8):
    if diagonal_loading:
        psd_n = np_tik_reg(psd_n, diag_eps)
    numerator = np.linalg.solve(psd_n, rtf[..., None])[..., 0]
    denominator = np.einsum("...d,...d->...", rtf.conj(), numerator)
    weights = numerator / (denominator.real[..., None] + eps)
    if ref is not None:
        weights = weights * np_pick(rtf.conj(), ref, 1)[..., None]
    return weights


def np_rtf_power(psd_s, psd_n, ref, n_iter=3, diagonal_loading=True, diag_eps=1e-7):
    if diagonal_loading:
        psd_n = np_tik_reg(psd_n, diag_eps)
    phi = np.linalg.solve(psd_n, psd_s)
    rtf = np_pick(phi, ref, 2)[..., None]
    if n_iter >= 2:
        for _ in range(n_iter - 2):
            rtf = phi @ rtf
        rtf = psd_s @ rtf
    else:
        rtf = psd_n @ rtf
    return rtf[..., 0]


def np_apply(weights, spec):
    return np.einsum("...fc,...cft->...ft", weights.conj(), spec)


def np_mvdr_vector(psd_s, psd_n, ref, solution, diagonal_loading=True, diag_eps=1e-7, eps=1e-8):
    if solution == "ref_channel":
        return np_souden(psd_s, psd_n, ref, diagonal_loading, diag_eps, eps)
    if solution == "stv_evd":
        stv = np.linalg.eigh(psd_s)[1][..., -1]
    else:
        stv = np_rtf_power(psd_s, psd_n, ref, diagonal_loading=diagonal_loading, diag_eps=diag_eps)
    return np_rtf_weights(stv, psd_n, ref, diagonal_loading, diag_eps, eps)


# ----------------------------------------------------------------------------------------------
# Inputs

def random_spec(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def psd_pair(rng, batch=(2,)):
    """Hermitian positive-definite speech and noise PSDs `(*batch, freq, channel, channel)`."""
    spec_s = random_spec(rng, batch + (CHANNELS, FREQS, 3 * CHANNELS))
    spec_n = random_spec(rng, batch + (CHANNELS, FREQS, 3 * CHANNELS))
    return np_psd(spec_s), np_psd(spec_n)


def to_ember(array, dtype):
    return ember.from_numpy(np.ascontiguousarray(array).astype(NP_DTYPE[dtype]))


def reference_channels(batch=(2,)):
    """The reference channel as an int, a one-hot vector, and a batch of one-hot vectors."""
    one_hot = np.eye(CHANNELS, dtype=np.float32)[2]
    return [2, one_hot, np.broadcast_to(one_hot, batch + (CHANNELS,)).copy()]


def as_reference(ref):
    return ref if isinstance(ref, int) else ember.from_numpy(ref)


def assert_close(got, want, dtype):
    assert got.dtype == dtype
    np.testing.assert_allclose(got.detach().numpy(), want, **TOL[dtype])


DTYPES = [ember.complex64, ember.complex128]


# ----------------------------------------------------------------------------------------------
# Functions against the transcription

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (2, 3)])
def test_psd_matches_transcription(rng, dtype, batch):
    spec = random_spec(rng, batch + (CHANNELS, FREQS, FRAMES))
    mask = rng.random(batch + (FREQS, FRAMES)).astype(REAL_DTYPE[dtype])
    spec_e, mask_e = to_ember(spec, dtype), ember.from_numpy(mask)
    assert_close(F.psd(spec_e), np_psd(spec), dtype)
    assert_close(F.psd(spec_e, mask_e), np_psd(spec, mask), dtype)
    assert_close(F.psd(spec_e, mask_e, normalize=False), np_psd(spec, mask, False), dtype)
    assert F.psd(spec_e).shape == batch + (FREQS, CHANNELS, CHANNELS)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ref_index", [0, 1, 2])
@pytest.mark.parametrize("diagonal_loading", [True, False])
def test_mvdr_weights_souden(rng, dtype, ref_index, diagonal_loading):
    psd_s, psd_n = psd_pair(rng)
    ref = reference_channels()[ref_index]
    got = F.mvdr_weights_souden(to_ember(psd_s, dtype), to_ember(psd_n, dtype), as_reference(ref),
                                diagonal_loading=diagonal_loading, diag_eps=1e-3)
    assert got.shape == (2, FREQS, CHANNELS)
    assert_close(got, np_souden(psd_s, psd_n, ref, diagonal_loading, 1e-3), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ref_index", [None, 0, 1, 2])
@pytest.mark.parametrize("diagonal_loading", [True, False])
def test_mvdr_weights_rtf(rng, dtype, ref_index, diagonal_loading):
    _, psd_n = psd_pair(rng)
    rtf = random_spec(rng, (2, FREQS, CHANNELS))
    ref = None if ref_index is None else reference_channels()[ref_index]
    got = F.mvdr_weights_rtf(to_ember(rtf, dtype), to_ember(psd_n, dtype),
                             None if ref is None else as_reference(ref), diagonal_loading, 1e-3, 1e-6)
    assert_close(got, np_rtf_weights(rtf, psd_n, ref, diagonal_loading, 1e-3, 1e-6), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n_iter", [1, 2, 3, 5])
@pytest.mark.parametrize("ref_index", [0, 2])
@pytest.mark.parametrize("diagonal_loading", [True, False])
def test_rtf_power(rng, dtype, n_iter, ref_index, diagonal_loading):
    psd_s, psd_n = psd_pair(rng)
    ref = reference_channels()[ref_index]
    got = F.rtf_power(to_ember(psd_s, dtype), to_ember(psd_n, dtype), as_reference(ref), n_iter,
                      diagonal_loading, 1e-3)
    want = np_rtf_power(psd_s, psd_n, ref, n_iter, diagonal_loading, 1e-3)
    # The iterates grow like the dominant eigenvalue to the n_iter; compare relative to their scale.
    scale = np.abs(want).max()
    np.testing.assert_allclose(got.numpy() / scale, want / scale, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_rtf_evd_is_the_principal_eigenvector(rng, dtype):
    psd_s, _ = psd_pair(rng)
    got = F.rtf_evd(to_ember(psd_s, dtype)).numpy().astype(np.complex128)
    want = np.linalg.eigh(psd_s)[1][..., -1]
    # Eigenvectors are unique up to a unit phase: |<got, want>| must be 1.
    overlap = np.abs(np.einsum("...c,...c->...", got.conj(), want))
    np.testing.assert_allclose(overlap, 1.0, rtol=1e-4 if dtype == ember.complex64 else 1e-10)
    largest = np.linalg.eigvalsh(psd_s)[..., -1]
    applied = np.einsum("...ij,...j->...i", psd_s, got)
    np.testing.assert_allclose(applied, largest[..., None] * got, atol=1e-3 * largest.max())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch", [(), (3,)])
def test_apply_beamforming(rng, dtype, batch):
    weights = random_spec(rng, batch + (FREQS, CHANNELS))
    spec = random_spec(rng, batch + (CHANNELS, FREQS, FRAMES))
    got = F.apply_beamforming(to_ember(weights, dtype), to_ember(spec, dtype))
    assert got.shape == batch + (FREQS, FRAMES)
    assert_close(got, np_apply(weights, spec), dtype)


def test_non_contiguous_inputs(rng):
    spec = random_spec(rng, (CHANNELS, FRAMES, FREQS))
    spec_e = ember.from_numpy(spec).transpose(-1, -2)  # (channel, freq, time) as a strided view
    assert_close(F.psd(spec_e), np_psd(np.swapaxes(spec, -1, -2)), ember.complex128)


# ----------------------------------------------------------------------------------------------
# Errors

def test_bad_inputs_raise(rng):
    psd_s, psd_n = (to_ember(p, ember.complex128) for p in psd_pair(rng))
    spec = to_ember(random_spec(rng, (CHANNELS, FREQS, FRAMES)), ember.complex128)
    with pytest.raises(ValueError, match="mask"):
        F.psd(spec, ember.ones(FREQS + 1, FRAMES))
    with pytest.raises(TypeError, match="cfloat"):
        F.mvdr_weights_souden(psd_s.real, psd_n.real, 0)
    with pytest.raises(ValueError, match="same"):
        F.mvdr_weights_souden(psd_s[0], psd_n, 0)
    with pytest.raises(TypeError, match="reference_channel"):
        F.mvdr_weights_souden(psd_s, psd_n, 0.5)
    with pytest.raises(ValueError, match="rtf"):
        F.mvdr_weights_rtf(psd_s[..., 0, :-1], psd_n)
    with pytest.raises(ValueError, match="iteration"):
        F.rtf_power(psd_s, psd_n, 0, n_iter=0)
    with pytest.raises(TypeError, match="psd_s"):
        F.rtf_evd(psd_s.real)
    with pytest.raises(ValueError, match="beamform_weights"):
        F.apply_beamforming(psd_s[..., 0], spec)
    with pytest.raises(TypeError, match="cfloat"):
        F.apply_beamforming(psd_s[0, ..., 0].real, spec)
    with pytest.raises(RuntimeError, match="channels"):
        F.apply_beamforming(psd_s[0, :, :-1, 0], spec)
    with pytest.raises(ValueError, match="solution"):
        T.MVDR(solution="nope")
    with pytest.raises(ValueError, match="3D"):
        T.MVDR()(spec[0], ember.ones(FREQS, FRAMES))
    with pytest.raises(ValueError, match="cfloat"):
        T.MVDR()(spec.real, ember.ones(FREQS, FRAMES))


# ----------------------------------------------------------------------------------------------
# Modules

def test_psd_module_multi_mask(rng):
    spec = random_spec(rng, (2, CHANNELS, FREQS, FRAMES))
    mask = rng.random((2, CHANNELS, FREQS, FRAMES))
    got = T.PSD(multi_mask=True)(ember.from_numpy(spec), ember.from_numpy(mask))
    assert_close(got, np_psd(spec, mask.mean(axis=-3), eps=1e-15), ember.complex128)
    assert_close(T.PSD(normalize=False)(ember.from_numpy(spec), ember.from_numpy(mask[:, 0])),
                 np_psd(spec, mask[:, 0], normalize=False), ember.complex128)


@pytest.mark.parametrize("dtype", DTYPES)
def test_souden_and_rtf_modules(rng, dtype):
    psd_s, psd_n = psd_pair(rng)
    spec = random_spec(rng, (2, CHANNELS, FREQS, FRAMES))
    rtf = random_spec(rng, (2, FREQS, CHANNELS))
    ref = reference_channels()[2]
    got = T.SoudenMVDR()(to_ember(spec, dtype), to_ember(psd_s, dtype), to_ember(psd_n, dtype), ember.from_numpy(ref))
    assert_close(got, np_apply(np_souden(psd_s, psd_n, ref), spec), dtype)
    got = T.RTFMVDR()(to_ember(spec, dtype), to_ember(rtf, dtype), to_ember(psd_n, dtype), 1, False)
    assert_close(got, np_apply(np_rtf_weights(rtf, psd_n, 1, False), spec), dtype)


def np_mvdr_module(spec, mask_s, mask_n, ref, solution, multi_mask=False):
    if multi_mask:
        mask_s, mask_n = mask_s.mean(axis=-3), mask_n.mean(axis=-3)
    psd_s, psd_n = np_psd(spec, mask_s, eps=1e-15), np_psd(spec, mask_n, eps=1e-15)
    return np_apply(np_mvdr_vector(psd_s, psd_n, ref, solution), spec), (psd_s, psd_n)


def mvdr_inputs(rng, multi_mask, frames=FRAMES):
    spec = random_spec(rng, (2, CHANNELS, FREQS, frames))
    mask_shape = (2, CHANNELS, FREQS, frames) if multi_mask else (2, FREQS, frames)
    return spec, rng.random(mask_shape), rng.random(mask_shape)


@pytest.mark.parametrize("solution", ["ref_channel", "stv_evd", "stv_power"])
@pytest.mark.parametrize("multi_mask", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_mvdr_module(rng, solution, multi_mask, dtype):
    spec, mask_s, mask_n = mvdr_inputs(rng, multi_mask)
    module = T.MVDR(ref_channel=1, solution=solution, multi_mask=multi_mask)
    got = module(to_ember(spec, dtype), ember.from_numpy(mask_s), ember.from_numpy(mask_n))
    want, _ = np_mvdr_module(spec.astype(NP_DTYPE[dtype]).astype(np.complex128), mask_s, mask_n, 1, solution,
                             multi_mask)
    assert got.shape == (2, FREQS, FRAMES)
    assert_close(got, want, dtype)  # computed in complex128 inside, returned in the input's dtype


def test_mvdr_default_noise_mask_warns(rng):
    spec, mask_s, _ = mvdr_inputs(rng, False)
    with pytest.warns(UserWarning, match="mask_n"):
        got = T.MVDR()(ember.from_numpy(spec), ember.from_numpy(mask_s))
    assert_close(got, np_mvdr_module(spec, mask_s, 1 - mask_s, 0, "ref_channel")[0], ember.complex128)


def test_mvdr_batch_dims_are_flattened_and_restored(rng):
    spec = random_spec(rng, (2, 3, CHANNELS, FREQS, FRAMES))
    mask_s, mask_n = rng.random((2, 3, FREQS, FRAMES)), rng.random((2, 3, FREQS, FRAMES))
    got = T.MVDR(solution="stv_power")(ember.from_numpy(spec), ember.from_numpy(mask_s), ember.from_numpy(mask_n))
    want = np_mvdr_module(spec.reshape(6, CHANNELS, FREQS, FRAMES), mask_s.reshape(6, FREQS, FRAMES),
                          mask_n.reshape(6, FREQS, FRAMES), 0, "stv_power")[0]
    assert_close(got, want.reshape(2, 3, FREQS, FRAMES), ember.complex128)


@pytest.mark.parametrize("solution", ["ref_channel", "stv_power"])
def test_mvdr_online_updates_the_statistics(rng, solution):
    module = T.MVDR(solution=solution, online=True)
    assert sorted(module.state_dict()) == ["mask_sum_n", "mask_sum_s", "psd_n", "psd_s"]
    chunks = [mvdr_inputs(rng, False, frames) for frames in (10, 6, 8)]
    psd_s = psd_n = sum_s = sum_n = None
    for spec, mask_s, mask_n in chunks:
        got = module(ember.from_numpy(spec), ember.from_numpy(mask_s), ember.from_numpy(mask_n))
        new_s, new_n = np_psd(spec, mask_s, eps=1e-15), np_psd(spec, mask_n, eps=1e-15)
        if psd_s is None:
            psd_s, psd_n, sum_s, sum_n = new_s, new_n, mask_s.sum(-1), mask_n.sum(-1)
        else:  # TorchAudio's recursive rule
            total_s, total_n = sum_s + mask_s.sum(-1), sum_n + mask_n.sum(-1)
            psd_s = psd_s * (sum_s / total_s)[..., None, None] + new_s / total_s[..., None, None]
            psd_n = psd_n * (sum_n / total_n)[..., None, None] + new_n / total_n[..., None, None]
            sum_s, sum_n = total_s, total_n
        assert_close(got, np_apply(np_mvdr_vector(psd_s, psd_n, 0, solution), spec), ember.complex128)
        np.testing.assert_allclose(module.psd_s.numpy(), psd_s, rtol=1e-10)
        np.testing.assert_allclose(module.mask_sum_n.numpy(), sum_n, rtol=1e-12)


# ----------------------------------------------------------------------------------------------
# Gradients

def small_complex(rng, shape):
    return ember.from_numpy(random_spec(rng, shape)).requires_grad_()


def test_gradcheck_psd_and_apply_beamforming(rng):
    spec = small_complex(rng, (2, 3, 4))
    mask = ember.from_numpy(rng.random((3, 4))).requires_grad_()
    assert ember.autograd.gradcheck(lambda x, m: F.psd(x, m), (spec, mask))
    weights = small_complex(rng, (3, 2))
    assert ember.autograd.gradcheck(F.apply_beamforming, (weights, spec))


def small_psds(rng):
    spec = random_spec(rng, (2, 2, 2, 6))
    psd_s = ember.from_numpy(np_psd(spec[0])).requires_grad_()
    psd_n = ember.from_numpy(np_psd(spec[1])).requires_grad_()
    return psd_s, psd_n


def test_gradcheck_mvdr_weights(rng):
    psd_s, psd_n = small_psds(rng)
    assert ember.autograd.gradcheck(lambda s, n: F.mvdr_weights_souden(s, n, 1), (psd_s, psd_n))
    assert ember.autograd.gradcheck(lambda s, n: F.rtf_power(s, n, 0), (psd_s, psd_n))
    rtf = small_complex(rng, (2, 2))
    assert ember.autograd.gradcheck(lambda v, n: F.mvdr_weights_rtf(v, n, 0), (rtf, psd_n))


def test_gradcheck_mvdr_weights_from_rtf_evd(rng):
    # An eigenvector's phase is arbitrary, but the MVDR weights built from it (scaled by the
    # conjugate of its reference entry) do not depend on it, so their gradient is well defined.
    # eigh reads one triangle and assumes a Hermitian matrix: gradcheck's one-entry perturbations
    # go through the Hermitian part, as in PyTorch's own eigh gradchecks.
    psd_s, psd_n = small_psds(rng)

    def weights(s, n):
        return F.mvdr_weights_rtf(F.rtf_evd((s + s.conj().transpose(-1, -2)) / 2), n, 0)

    assert ember.autograd.gradcheck(weights, (psd_s, psd_n))


def test_mvdr_module_gradient_reaches_the_masks(rng):
    spec, mask_s, mask_n = mvdr_inputs(rng, False)
    mask_s_e = ember.from_numpy(mask_s).requires_grad_()
    for solution in ("ref_channel", "stv_evd", "stv_power"):
        mask_s_e.grad = None
        out = T.MVDR(solution=solution)(ember.from_numpy(spec).to(ember.complex64), mask_s_e,
                                         ember.from_numpy(mask_n))
        out.abs().sum().backward()
        grad = mask_s_e.grad.numpy()
        assert grad.shape == mask_s.shape and np.isfinite(grad).all() and np.abs(grad).max() > 0


# ----------------------------------------------------------------------------------------------
# MVDR on a simulated mixture

SAMPLE_RATE, N_FFT, HOP = 16000, 512, 128


def simulated_sources(rng, samples):
    """Two speech-like sources: harmonic voices on different pitches, each switching on and off."""
    t = np.arange(samples) / SAMPLE_RATE
    sources = []
    for f0, rate, phase in ((140.0, 3.0, 0.0), (215.0, 4.0, 1.7)):
        harmonics = sum(np.sin(2 * np.pi * k * f0 * t + rng.uniform(0, 2 * np.pi)) / k for k in range(1, 20))
        envelope = 0.5 + 0.5 * np.sin(2 * np.pi * rate * t + phase)
        sources.append(harmonics * envelope + 0.05 * rng.standard_normal(samples))
    return sources


def room_response(rng, direct_delay):
    """A short impulse response: the direct path and a few weaker reflections."""
    rir = np.zeros(96)
    rir[direct_delay] = 1.0
    rir[rng.integers(direct_delay + 10, 96, size=4)] += rng.uniform(-0.3, 0.3, size=4)
    return rir


def mic_images(rng, source, delays):
    return np.stack([np.convolve(source, room_response(rng, d))[:source.size] for d in delays])


def si_snr(estimate, reference):
    estimate, reference = estimate - estimate.mean(), reference - reference.mean()
    target = (estimate @ reference) / (reference @ reference) * reference
    return 10 * np.log10((target @ target) / ((estimate - target) @ (estimate - target)))


@pytest.fixture
def two_source_mixture(rng):
    """0.4 s of two sources at four microphones; the target's and the interferer's images."""
    samples = int(0.4 * SAMPLE_RATE)
    target, interferer = simulated_sources(rng, samples)
    target_images = mic_images(rng, target, [0, 3, 6, 9])
    interferer_images = mic_images(rng, interferer, [8, 5, 2, 0])
    sensor_noise = 0.01 * rng.standard_normal((CHANNELS, samples))
    return target_images, interferer_images + sensor_noise


@pytest.mark.parametrize("solution", ["ref_channel", "stv_evd", "stv_power"])
def test_mvdr_improves_si_snr_on_a_two_source_mixture(two_source_mixture, solution):
    target_images, noise_images = two_source_mixture
    mixture = target_images + noise_images
    spectrogram = T.Spectrogram(n_fft=N_FFT, hop_length=HOP, power=None)
    to_spec = lambda x: spectrogram(ember.from_numpy(x.astype(np.float32)))  # noqa: E731
    spec_mix, spec_target, spec_noise = to_spec(mixture), to_spec(target_images), to_spec(noise_images)
    # Ideal ratio masks from the reference microphone's images.
    mag_target, mag_noise = spec_target[0].abs(), spec_noise[0].abs()
    mask_s = mag_target / (mag_target + mag_noise + 1e-8)
    enhanced = T.MVDR(ref_channel=0, solution=solution)(spec_mix, mask_s, 1 - mask_s)
    waveform = T.InverseSpectrogram(n_fft=N_FFT, hop_length=HOP)(enhanced, mixture.shape[-1]).numpy()
    before = si_snr(mixture[0], target_images[0])
    after = si_snr(waveform.astype(np.float64), target_images[0])
    assert after - before > 5.0, f"SI-SNR {before:.1f} dB -> {after:.1f} dB"
