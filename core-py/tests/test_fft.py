"""`ember.fft`, `stft`/`istft` and the windows: parity with numpy.fft (and PyTorch where it is
installed) over odd, prime and batched shapes, every norm, padding/trimming and dims; bad input;
gradients."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

RNG = np.random.default_rng(1)
NORMS = [None, "backward", "ortho", "forward"]


def real(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def cplx(*shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def close(got, want, tol=1e-9):
    np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol * max(1.0, float(np.abs(want).max(initial=0))))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("shape,dim,n", [((17,), -1, None), ((3, 13), 0, None), ((4, 10), 1, 7), ((2, 3, 11), -2, 8),
                                         ((5, 1), 0, 1), ((2, 97), -1, 128), ((6,), 0, 2)])
def test_1d_transforms_match_numpy(shape, dim, n, norm):
    z, x = cplx(*shape), real(*shape)
    close(ember.fft.fft(ember.from_numpy(z), n, dim, norm), np.fft.fft(z, n, dim, norm))
    close(ember.fft.ifft(ember.from_numpy(z), n, dim, norm), np.fft.ifft(z, n, dim, norm))
    close(ember.fft.fft(ember.from_numpy(x), n, dim, norm), np.fft.fft(x, n, dim, norm))
    close(ember.fft.ifft(ember.from_numpy(x), n, dim, norm), np.fft.ifft(x, n, dim, norm))
    close(ember.fft.rfft(ember.from_numpy(x), n, dim, norm), np.fft.rfft(x, n, dim, norm))
    close(ember.fft.ihfft(ember.from_numpy(x), n, dim, norm), np.fft.ihfft(x, n, dim, norm))
    close(ember.fft.irfft(ember.from_numpy(z), n, dim, norm), np.fft.irfft(z, n, dim, norm))
    close(ember.fft.hfft(ember.from_numpy(z), n, dim, norm), np.fft.hfft(z, n, dim, norm))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("shape,s,dim", [((5, 6), None, None), ((3, 7, 4), None, (0, 2)), ((3, 7, 4), (4, 9), None),
                                         ((2, 5, 6), (3, -1), (2, 1)), ((8, 9), (5, 12), (-2, -1))])
def test_nd_transforms_match_numpy(shape, s, dim, norm):
    z, x = cplx(*shape), real(*shape)
    axes = list(dim) if dim is not None else list(range(len(shape) - (len(s) if s is not None else len(shape)), len(shape)))
    # -1 keeps a dim's size, except irfftn's last dim, whose default output is 2 * (size - 1).
    ns = None if s is None else [shape[d] if v == -1 else v for v, d in zip(s, axes)]
    ns_c2r = None if s is None else ns[:-1] + [2 * (shape[axes[-1]] - 1) if s[-1] == -1 else s[-1]]
    close(ember.fft.fftn(ember.from_numpy(z), s, dim, norm), np.fft.fftn(z, ns, axes, norm))
    close(ember.fft.ifftn(ember.from_numpy(z), s, dim, norm), np.fft.ifftn(z, ns, axes, norm))
    close(ember.fft.fftn(ember.from_numpy(x), s, dim, norm), np.fft.fftn(x, ns, axes, norm))
    close(ember.fft.rfftn(ember.from_numpy(x), s, dim, norm), np.fft.rfftn(x, ns, axes, norm))
    close(ember.fft.irfftn(ember.from_numpy(z), s, dim, norm), np.fft.irfftn(z, ns_c2r, axes, norm))


def test_2d_variants_and_round_trips():
    x = real(3, 10, 12)
    close(ember.fft.fft2(ember.from_numpy(x)), np.fft.fft2(x))
    close(ember.fft.ifft2(ember.from_numpy(x)), np.fft.ifft2(x))
    close(ember.fft.rfft2(ember.from_numpy(x), s=(7, 9)), np.fft.rfft2(x, s=(7, 9)))
    close(ember.fft.irfft2(ember.fft.rfft2(ember.from_numpy(x))), x)
    z = cplx(6, 11)
    close(ember.fft.ifft(ember.fft.fft(ember.from_numpy(z), norm="ortho"), norm="ortho"), z)


@pytest.mark.parametrize("dtype,tol", [(np.complex64, 1e-4), (np.complex128, 1e-9)])
def test_columns_wider_than_one_gathered_block(dtype, tol):
    # 70 columns: whole blocks of 32 (complex64) or 16 (complex128) neighbours and a partial one,
    # gathered from the input (dim 1 alone) and in place after the rows (both dims).
    z = cplx(2, 9, 70, dtype=dtype)
    close(ember.fft.fft(ember.from_numpy(z), dim=1), np.fft.fft(z, axis=1), tol)
    close(ember.fft.ifft2(ember.from_numpy(z), norm="ortho"), np.fft.ifft2(z, norm="ortho"), tol)
    close(ember.fft.fftn(ember.from_numpy(z)), np.fft.fftn(z), tol)


def test_float32_and_dtypes():
    x = real(4, 33, dtype=np.float32)
    got = ember.fft.rfft(ember.from_numpy(x))
    assert got.dtype == ember.complex64
    np.testing.assert_allclose(got.numpy(), np.fft.rfft(x.astype(np.float64)), rtol=1e-4, atol=1e-4)
    assert ember.fft.fft(ember.from_numpy(x)).dtype == ember.complex64
    assert ember.fft.irfft(got).dtype == ember.float32
    assert ember.fft.fft(ember.arange(8)).dtype == ember.complex64
    close(ember.fft.fft(ember.arange(8)), np.fft.fft(np.arange(8)), 1e-5)


def test_half_precision_computes_in_float32_and_returns_complex32():
    x = real(64, dtype=np.float16)
    r = ember.fft.rfft(ember.from_numpy(x))
    assert r.dtype == ember.complex32
    np.testing.assert_allclose(np.array(r.tolist()), np.fft.rfft(x.astype(np.float64)), rtol=1e-2, atol=5e-2)
    z = ember.from_numpy(cplx(16, dtype=np.complex64)).to(ember.complex32)
    f = ember.fft.fft(z)
    assert f.dtype == ember.complex32
    back = ember.fft.ifft(f)
    np.testing.assert_allclose(np.array(back.tolist()), np.array(z.tolist()), atol=2e-2)
    assert ember.fft.irfft(r).dtype == ember.float16


def test_input_is_not_modified_and_non_contiguous_input():
    z = cplx(6, 8)
    t = ember.from_numpy(z.copy())
    ember.fft.fft(t, dim=0)
    ember.fft.fft(t)
    np.testing.assert_array_equal(t.numpy(), z)
    close(ember.fft.fft(ember.from_numpy(z)[:, ::2].T), np.fft.fft(z[:, ::2].T))
    x = real(10, 6)
    close(ember.fft.rfft(ember.from_numpy(x).T, dim=0), np.fft.rfft(x.T, axis=0))


def test_large_batched_transform_across_threads():
    x = real(64, 1000, dtype=np.float32)
    np.testing.assert_allclose(ember.fft.rfft(ember.from_numpy(x)).numpy(), np.fft.rfft(x), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(ember.fft.fft(ember.from_numpy(x), dim=0).numpy(), np.fft.fft(x, axis=0), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("n", [1 << 17, 131070])
def test_long_single_transforms_split_over_threads(n):
    # One row this long is split in two halves transformed side by side; an odd half length too.
    z = cplx(n)
    kept = z.copy()
    for norm in NORMS:
        close(ember.fft.fft(ember.from_numpy(z), norm=norm), np.fft.fft(z, norm=norm))
        close(ember.fft.ifft(ember.from_numpy(z), norm=norm), np.fft.ifft(z, norm=norm))
    np.testing.assert_array_equal(z, kept)
    strided = cplx(2 * n)
    close(ember.fft.fft(ember.from_numpy(strided)[::2]), np.fft.fft(strided[::2]))
    z64 = z.astype(np.complex64)
    np.testing.assert_allclose(ember.fft.fft(ember.from_numpy(z64)).numpy(), np.fft.fft(z64), rtol=1e-3, atol=1e-3 * np.sqrt(n))


def test_freqs_and_shifts():
    for n in (1, 8, 9):
        close(ember.fft.fftfreq(n, 0.5, dtype=ember.float64), np.fft.fftfreq(n, 0.5))
        close(ember.fft.rfftfreq(n, 2.0, dtype=ember.float64), np.fft.rfftfreq(n, 2.0))
    assert ember.fft.fftfreq(4).dtype == ember.float32
    a = real(4, 5)
    close(ember.fft.fftshift(ember.from_numpy(a)), np.fft.fftshift(a))
    close(ember.fft.ifftshift(ember.from_numpy(a), dim=1), np.fft.ifftshift(a, axes=1))
    close(ember.fft.ifftshift(ember.fft.fftshift(ember.from_numpy(a))), a)


def test_bad_arguments():
    x = ember.ones(8)
    with pytest.raises(ValueError, match="Invalid normalization mode"):
        ember.fft.fft(x, norm="bogus")
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        ember.fft.fft(x, n=0)
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        ember.fft.irfft(ember.ones(1, dtype=ember.complex64))
    with pytest.raises(IndexError):
        ember.fft.fft(x, dim=1)
    with pytest.raises(RuntimeError, match="unique"):
        ember.fft.fftn(ember.ones(2, 2), dim=(0, 0))
    with pytest.raises(RuntimeError, match="real input"):
        ember.fft.rfft(ember.ones(4, dtype=ember.complex64))
    with pytest.raises(RuntimeError, match="BFloat16"):
        ember.fft.fft(ember.ones(4, dtype=ember.bfloat16))
    with pytest.raises(RuntimeError, match="same length"):
        ember.fft.fftn(ember.ones(2, 2), s=(2,), dim=(0, 1))
    with pytest.raises(TypeError):
        ember.fft.fft([1.0, 2.0])


def test_matches_torch_fft():
    torch = pytest.importorskip("torch")
    x = real(3, 10)
    for name in ["fft", "ifft", "rfft", "ihfft", "fft2", "rfft2", "fftn"]:
        np.testing.assert_allclose(getattr(ember.fft, name)(ember.from_numpy(x), norm="ortho").numpy(),
                                   getattr(torch.fft, name)(torch.from_numpy(x), norm="ortho").resolve_conj().numpy(), rtol=1e-10, atol=1e-12)
    z = cplx(3, 6)
    for name in ["irfft", "hfft", "irfft2", "irfftn"]:
        np.testing.assert_allclose(getattr(ember.fft, name)(ember.from_numpy(z)).numpy(),
                                   getattr(torch.fft, name)(torch.from_numpy(z)).resolve_conj().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ember.fft.irfftn(ember.from_numpy(z), s=(-1, -1)).numpy(),
                               torch.fft.irfftn(torch.from_numpy(z), s=(-1, -1)).numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("shape,s,dim", [((4, 6), None, None), ((3, 5, 4), (4, 7), None), ((3, 5, 4), None, (0, 2)),
                                         ((2, 3, 5), (-1, 3), (2, 1)), ((6,), None, None), ((3, 4, 5), (3, 4, 5), None)])
def test_hermitian_nd_transforms_match_torch(shape, s, dim, norm):
    torch = pytest.importorskip("torch")
    z, x = cplx(*shape), real(*shape)
    kw = dict(s=s, dim=dim, norm=norm)
    close(ember.fft.hfftn(ember.from_numpy(z), **kw), torch.fft.hfftn(torch.from_numpy(z), **kw).numpy())
    close(ember.fft.ihfftn(ember.from_numpy(x), **kw), torch.fft.ihfftn(torch.from_numpy(x), **kw).resolve_conj().numpy())


def test_hfft2_ihfft2_defaults_round_trip_and_errors():
    torch = pytest.importorskip("torch")
    z, x = cplx(2, 4, 5), real(2, 4, 8)
    close(ember.fft.hfft2(ember.from_numpy(z), norm="ortho"), torch.fft.hfft2(torch.from_numpy(z), norm="ortho").numpy())
    close(ember.fft.ihfft2(ember.from_numpy(x), s=(3, 6)), torch.fft.ihfft2(torch.from_numpy(x), s=(3, 6)).resolve_conj().numpy())
    # hfftn inverts ihfftn given the output length of the last dim.
    close(ember.fft.hfftn(ember.fft.ihfftn(ember.from_numpy(x)), s=x.shape), x)
    assert ember.fft.hfft2(ember.ones(3, 3)).dtype == ember.float32
    assert ember.fft.ihfft2(ember.ones(3, 4, dtype=ember.float32)).dtype == ember.complex64
    with pytest.raises(RuntimeError, match="real input"):
        ember.fft.ihfftn(ember.from_numpy(z))
    with pytest.raises(ValueError, match="normalization"):
        ember.fft.hfftn(ember.from_numpy(z), norm="both")
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        ember.fft.hfft2(ember.ones(2, 1, dtype=ember.complex64))


# ---- gradients ----

def _req(a):
    return ember.from_numpy(a).requires_grad_()


@pytest.mark.parametrize("fn", [
    lambda z: ember.fft.fft(z), lambda z: ember.fft.ifft(z, n=7, norm="ortho"), lambda z: ember.fft.fft(z, n=3, norm="forward"),
    lambda z: ember.fft.fftn(z.reshape(2, 3)), lambda z: ember.fft.irfft(z), lambda z: ember.fft.hfft(z, n=7, norm="ortho"),
    lambda z: ember.fft.irfftn(z.reshape(2, 3), s=(2, 4)), lambda z: ember.fft.hfft2(z.reshape(2, 3), norm="forward"),
    lambda z: ember.fft.hfftn(z.reshape(3, 2), s=(2, 3), dim=(1, 0)),
])
def test_gradcheck_complex_input(fn):
    assert gradcheck(fn, (_req(cplx(6)),))


@pytest.mark.parametrize("fn", [
    lambda x: ember.fft.rfft(x), lambda x: ember.fft.rfft(x, n=9, norm="forward"), lambda x: ember.fft.fft(x),
    lambda x: ember.fft.ihfft(x, norm="ortho"), lambda x: ember.fft.rfft2(x.reshape(2, 3)), lambda x: ember.fft.ifft(x, n=4),
    lambda x: ember.fft.irfft(ember.fft.rfft(x), n=6).sum() * 2, lambda x: ember.fft.ihfft2(x.reshape(2, 3), norm="ortho"),
    lambda x: ember.fft.ihfftn(x.reshape(3, 2), s=(4, 2)),
])
def test_gradcheck_real_input(fn):
    assert gradcheck(fn, (_req(real(6)),))


def test_fft_gradients_match_torch():
    torch = pytest.importorskip("torch")
    a = real(2, 7)
    x, tx = _req(a), torch.tensor(a, requires_grad=True)
    (ember.fft.rfft(x, n=10).abs() ** 2).sum().backward()
    (torch.fft.rfft(tx, n=10).abs() ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9)


# ---- windows and stft ----

@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_match_torch(name, n, periodic):
    torch = pytest.importorskip("torch")
    got = getattr(ember, name)(n, periodic, dtype=ember.float64)
    want = getattr(torch, name)(n, periodic, dtype=torch.float64).numpy()
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)


def test_windows_defaults_and_errors():
    assert ember.hann_window(8).dtype == ember.float32
    np.testing.assert_allclose(ember.hann_window(5, periodic=False, dtype=ember.float64).numpy(), np.hanning(5))
    np.testing.assert_allclose(ember.kaiser_window(6, False, beta=5.0, dtype=ember.float64).numpy(), np.kaiser(6, 5.0))
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.hann_window(-1)
    with pytest.raises(RuntimeError, match="floating point"):
        ember.hann_window(4, dtype=ember.int64)


STFT_CASES = [dict(n_fft=16), dict(n_fft=16, hop_length=5, win_length=12), dict(n_fft=15, center=False),
              dict(n_fft=16, normalized=True, pad_mode="constant"), dict(n_fft=16, onesided=False)]


@pytest.mark.parametrize("kw", STFT_CASES)
def test_stft_matches_torch(kw):
    torch = pytest.importorskip("torch")
    x = real(2, 100)
    win = kw.get("win_length", kw["n_fft"])
    got = ember.stft(ember.from_numpy(x), window=ember.hann_window(win, dtype=ember.float64), return_complex=True, **kw)
    want = torch.stft(torch.from_numpy(x), window=torch.hann_window(win, dtype=torch.float64), return_complex=True, **kw)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-10)
    single = ember.stft(ember.from_numpy(x[0]), window=ember.hann_window(win, dtype=ember.float64), return_complex=True, **kw)
    np.testing.assert_allclose(single.numpy(), want[0].numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kw", [dict(n_fft=16), dict(n_fft=16, hop_length=5, win_length=12), dict(n_fft=16, normalized=True)])
def test_istft_inverts_stft_and_matches_torch(kw):
    torch = pytest.importorskip("torch")
    x = real(2, 100)
    win = kw.get("win_length", kw["n_fft"])
    w, tw = ember.hann_window(win, dtype=ember.float64), torch.hann_window(win, dtype=torch.float64)
    spec = ember.stft(ember.from_numpy(x), window=w, return_complex=True, **kw)
    back = ember.istft(spec, window=w, length=100, **kw)
    np.testing.assert_allclose(back.numpy(), x, atol=1e-10)
    want = torch.istft(torch.from_numpy(spec.numpy()), window=tw, length=100, **kw)
    np.testing.assert_allclose(back.numpy(), want.numpy(), atol=1e-10)
    nolen = ember.istft(spec, window=w, **kw)
    np.testing.assert_allclose(nolen.numpy(), torch.istft(torch.from_numpy(spec.numpy()), window=tw, **kw).numpy(), atol=1e-10)


def test_stft_arguments():
    x = ember.randn(64)
    with pytest.raises(RuntimeError, match="return_complex"):
        ember.stft(x, 16)
    with pytest.warns(UserWarning, match="deprecated"):
        legacy = ember.stft(x, 16, window=ember.hann_window(16), return_complex=False)
    assert legacy.shape == (9, 17, 2)
    with pytest.raises(RuntimeError, match="n_fft"):
        ember.stft(ember.randn(8), 64, center=False, return_complex=True)
    with pytest.raises(RuntimeError, match="hop_length"):
        ember.stft(x, 16, hop_length=0, return_complex=True)
    with pytest.raises(RuntimeError, match="win_length"):
        ember.stft(x, 16, win_length=20, return_complex=True)
    with pytest.raises(RuntimeError, match="1D window"):
        ember.stft(x, 16, window=ember.ones(8), return_complex=True)
    with pytest.raises(RuntimeError, match="1D or 2D"):
        ember.stft(ember.randn(1, 2, 64), 16, return_complex=True)
    with pytest.raises(RuntimeError, match="complex-valued"):
        ember.istft(ember.randn(9, 5), 16)
    assert ember.stft(ember.randn(64, dtype=ember.complex64), 16).shape == (16, 17)


def test_stft_gradcheck():
    x = _req(real(24))
    w = ember.hann_window(8, dtype=ember.float64)
    assert gradcheck(lambda a: ember.stft(a, 8, hop_length=4, window=w, return_complex=True), (x,))
    spec = _req(ember.stft(ember.from_numpy(real(24)), 8, hop_length=4, window=w, return_complex=True).numpy())
    assert gradcheck(lambda s: ember.istft(s, 8, hop_length=4, window=w), (spec,))
