"""TorchAudio 0.12/0.13's multi-channel beamforming functions (`torchaudio.functional`).

PSD matrices, MVDR weights (Souden's reference-channel form and the RTF / steering-vector form),
RTF estimation (eigenvector of the speech PSD, or the power method) and the application of
weights to a multi-channel spectrum. Everything is built from differentiable ember ops
(`matmul`, `ember.linalg.solve` / `eigh`, elementwise complex math), so gradients flow through
Ember's autograd. Shapes follow TorchAudio: spectra `(..., channel, freq, time)`, PSD matrices
`(..., freq, channel, channel)`, weights and RTFs `(..., freq, channel)`.
"""
import ember

__all__ = ["psd", "mvdr_weights_souden", "mvdr_weights_rtf", "rtf_evd", "rtf_power", "apply_beamforming"]


def _check_tensor(x, name):
    if not isinstance(x, ember.Tensor):
        raise TypeError(f"{name} must be an ember.Tensor, got {type(x).__name__}")


def _conj_transpose(x):
    return x.conj().transpose(-1, -2)


def psd(specgram, mask=None, normalize=True, eps=1e-10):
    """Cross-channel power spectral density `(..., freq, channel, channel)` of `specgram`
    `(..., channel, freq, time)`: the sum over time of `mask · y yᴴ`.

    `mask` `(..., freq, time)` weights each frame; with `normalize` it is first divided by its sum
    over time plus `eps`.
    """
    _check_tensor(specgram, "specgram")
    if specgram.ndim < 3:
        raise ValueError(f"Expected at least 3D Tensor (..., channel, freq, time) for specgram. "
                         f"Found {tuple(specgram.shape)}.")
    # (..., freq, channel, time), copied once: Ember's batched matmul runs about twice as fast on a
    # contiguous operand as on the strided view, and both operands below read it.
    frames = specgram.transpose(-3, -2).contiguous()
    weighted = frames
    if mask is not None:
        _check_tensor(mask, "mask")
        if mask.shape[:-1] != frames.shape[:-2] or mask.shape[-1] != frames.shape[-1]:
            raise ValueError("The dimensions of mask except the channel dimension should be the same as specgram. "
                             f"Found {tuple(mask.shape)} for mask and {tuple(specgram.shape)} for specgram.")
        if normalize:
            mask = mask / (mask.sum(dim=-1, keepdim=True) + eps)
        weighted = frames * mask.unsqueeze(-2)
    # One matmul over time instead of TorchAudio's (time, channel, channel) outer products: same sum.
    return ember.matmul(weighted, _conj_transpose(frames))


def _compute_mat_trace(input, dim1=-1, dim2=-2):
    """Trace of `input` over `dim1` and `dim2`."""
    if input.ndim < 2:
        raise ValueError("The dimension of the tensor must be at least 2.")
    if input.shape[dim1] != input.shape[dim2]:
        raise ValueError("The size of ``dim1`` and ``dim2`` must be the same.")
    return ember.diagonal(input, 0, dim1, dim2).sum(dim=-1)


def _tik_reg(mat, reg=1e-7, eps=1e-8):
    """Tikhonov regularisation: `mat + (reg · Re(trace) + eps) · I` (`eps` keeps an all-zero matrix
    invertible)."""
    eye = ember.eye(mat.shape[-1], dtype=mat.dtype)
    loading = _compute_mat_trace(mat).real[..., None, None] * reg + eps
    return mat + loading * eye


def _assert_psd_matrices(psd_s, psd_n):
    _check_tensor(psd_s, "psd_s")
    _check_tensor(psd_n, "psd_n")
    if psd_s.ndim < 3 or psd_n.ndim < 3:
        raise ValueError("Expected at least 3D Tensor (..., freq, channel, channel) for psd_s and psd_n. "
                         f"Found {tuple(psd_s.shape)} for psd_s and {tuple(psd_n.shape)} for psd_n.")
    if not (psd_s.is_complex() and psd_n.is_complex()):
        raise TypeError("The type of psd_s and psd_n must be ``ember.cfloat`` or ``ember.cdouble``. "
                        f"Found {psd_s.dtype} for psd_s and {psd_n.dtype} for psd_n.")
    if psd_s.shape != psd_n.shape:
        raise ValueError("The dimensions of psd_s and psd_n should be the same. "
                         f"Found {tuple(psd_s.shape)} and {tuple(psd_n.shape)}.")
    if psd_s.shape[-1] != psd_s.shape[-2]:
        raise ValueError(f"The last two dimensions of psd_s should be the same. Found {tuple(psd_s.shape)}.")


def _contract_reference(x, reference_channel, dtype, broadcast_dims):
    """`x`'s last (channel) dimension picked at `reference_channel`: an index, or a one-hot (or any
    weighting) tensor `(..., channel)`, broadcast over `x`'s `broadcast_dims` dims before the last
    (freq, and the rows of a matrix)."""
    if isinstance(reference_channel, int):
        return x[..., reference_channel]
    if isinstance(reference_channel, ember.Tensor):
        weights = reference_channel.to(dtype)
        for _ in range(broadcast_dims):
            weights = weights.unsqueeze(-2)
        return (x * weights).sum(dim=-1)
    raise TypeError(f'Expected "int" or "Tensor" for reference_channel. Found: {type(reference_channel)}.')


def mvdr_weights_souden(psd_s, psd_n, reference_channel, diagonal_loading=True, diag_eps=1e-7, eps=1e-8):
    """MVDR weights `(..., freq, channel)` by Souden et al.:
    `w = (Φ_NN⁻¹ Φ_SS) / (trace(Φ_NN⁻¹ Φ_SS) + eps) · u`, `u` the reference channel (an index or a
    one-hot tensor `(..., channel)`). `diagonal_loading` first adds `diag_eps · Re(trace) + 1e-8`
    to `Φ_NN`'s diagonal."""
    _assert_psd_matrices(psd_s, psd_n)
    if diagonal_loading:
        psd_n = _tik_reg(psd_n, reg=diag_eps)
    numerator = ember.linalg.solve(psd_n, psd_s)  # Φ_NN⁻¹ Φ_SS without forming the inverse
    ws = numerator / (_compute_mat_trace(numerator)[..., None, None] + eps)
    return _contract_reference(ws, reference_channel, psd_n.dtype, 2)


def _check_rtf_and_psd_n(rtf, psd_n):
    _check_tensor(rtf, "rtf")
    _check_tensor(psd_n, "psd_n")
    if rtf.ndim < 2:
        raise ValueError(f"Expected at least 2D Tensor (..., freq, channel) for rtf. Found {tuple(rtf.shape)}.")
    if psd_n.ndim < 3:
        raise ValueError("Expected at least 3D Tensor (..., freq, channel, channel) for psd_n. "
                         f"Found {tuple(psd_n.shape)}.")
    if not (rtf.is_complex() and psd_n.is_complex()):
        raise TypeError("The type of rtf and psd_n must be ``ember.cfloat`` or ``ember.cdouble``. "
                        f"Found {rtf.dtype} for rtf and {psd_n.dtype} for psd_n.")
    if rtf.shape != psd_n.shape[:-1]:
        raise ValueError("The dimensions of rtf and the dimensions without the last dimension of psd_n should be "
                         f"the same. Found {tuple(rtf.shape)} for rtf and {tuple(psd_n.shape)} for psd_n.")
    if psd_n.shape[-1] != psd_n.shape[-2]:
        raise ValueError(f"The last two dimensions of psd_n should be the same. Found {tuple(psd_n.shape)}.")


def mvdr_weights_rtf(rtf, psd_n, reference_channel=None, diagonal_loading=True, diag_eps=1e-7, eps=1e-8):
    """MVDR weights `(..., freq, channel)` from the RTF / steering vector `v` `(..., freq, channel)`:
    `w = Φ_NN⁻¹ v / (Re(vᴴ Φ_NN⁻¹ v) + eps)`, scaled by `conj(v[ref])` when `reference_channel` (an
    index or a one-hot tensor `(..., channel)`) is given."""
    _check_rtf_and_psd_n(rtf, psd_n)
    if diagonal_loading:
        psd_n = _tik_reg(psd_n, reg=diag_eps)
    numerator = ember.linalg.solve(psd_n, rtf.unsqueeze(-1)).squeeze(-1)  # Φ_NN⁻¹ v
    denominator = (rtf.conj() * numerator).sum(dim=-1)  # vᴴ Φ_NN⁻¹ v
    weights = numerator / (denominator.real.unsqueeze(-1) + eps)
    if reference_channel is None:
        return weights
    scale = _contract_reference(rtf.conj(), reference_channel, psd_n.dtype, 1)
    return weights * scale.unsqueeze(-1)


def rtf_evd(psd_s):
    """RTF `(..., freq, channel)`: the eigenvector of `psd_s` with the largest eigenvalue."""
    _check_tensor(psd_s, "psd_s")
    if not psd_s.is_complex():
        raise TypeError(f"The type of psd_s must be ``ember.cfloat`` or ``ember.cdouble``. Found {psd_s.dtype}.")
    if psd_s.ndim < 2 or psd_s.shape[-1] != psd_s.shape[-2]:
        raise ValueError(f"The last two dimensions of psd_s should be the same. Found {tuple(psd_s.shape)}.")
    _, vectors = ember.linalg.eigh(psd_s)  # eigenvalues ascending, so the last column is the principal one
    return vectors[..., -1]


def rtf_power(psd_s, psd_n, reference_channel, n_iter=3, diagonal_loading=True, diag_eps=1e-7):
    """RTF `(..., freq, channel)` by `n_iter` steps of the power method on `Φ_NN⁻¹ Φ_SS`, started
    at the reference channel's column; the last step multiplies by `Φ_SS` (so the result is a
    steering vector, not a whitened one)."""
    _assert_psd_matrices(psd_s, psd_n)
    if not isinstance(n_iter, int) or n_iter <= 0:
        raise ValueError(f"The number of iteration must be greater than 0. Found {n_iter!r}.")
    if diagonal_loading:
        psd_n = _tik_reg(psd_n, reg=diag_eps)
    phi = ember.linalg.solve(psd_n, psd_s)  # counts as the first iteration
    rtf = _contract_reference(phi, reference_channel, psd_n.dtype, 2).unsqueeze(-1)
    if n_iter == 1:
        # One step: Φ_NN Φ_NN⁻¹ Φ_SS u, i.e. Φ_SS's reference column (through the loaded Φ_NN).
        return ember.matmul(psd_n, rtf).squeeze(-1)
    for _ in range(n_iter - 2):
        rtf = ember.matmul(phi, rtf)
    return ember.matmul(psd_s, rtf).squeeze(-1)


def apply_beamforming(beamform_weights, specgram):
    """Single-channel spectrum `(..., freq, time)` = `wᴴ Y` per frequency, from weights
    `(..., freq, channel)` and a multi-channel spectrum `(..., channel, freq, time)`."""
    _check_tensor(beamform_weights, "beamform_weights")
    _check_tensor(specgram, "specgram")
    if beamform_weights.ndim < 2 or specgram.ndim < 3 or beamform_weights.shape[:-2] != specgram.shape[:-3]:
        raise ValueError("The dimensions except the last two dimensions of beamform_weights should be the same "
                         "as the dimensions except the last three dimensions of specgram. Found "
                         f"{tuple(beamform_weights.shape)} for beamform_weights and {tuple(specgram.shape)} "
                         "for specgram.")
    if not (beamform_weights.is_complex() and specgram.is_complex()):
        raise TypeError("The type of beamform_weights and specgram must be ``ember.cfloat`` or ``ember.cdouble``. "
                        f"Found {beamform_weights.dtype} for beamform_weights and {specgram.dtype} for specgram.")
    freq, channel = beamform_weights.shape[-2:]
    if specgram.shape[-3] != channel or specgram.shape[-2] != freq:
        raise RuntimeError(f"beamform_weights has {freq} frequencies and {channel} channels but specgram "
                           f"(..., channel, freq, time) has shape {tuple(specgram.shape)}.")
    # (..., freq, 1, channel) @ (..., freq, channel, time) → (..., freq, 1, time)
    rows = beamform_weights.conj().unsqueeze(-2)
    return ember.matmul(rows, specgram.transpose(-3, -2)).squeeze(-2)
