"""TorchAudio 0.12/0.13's multi-channel transforms: `PSD`, `MVDR`, `SoudenMVDR`, `RTFMVDR`.

`ember.nn.Module`s over the beamforming functions; MVDR keeps TorchAudio's buffers (`psd_s`,
`psd_n`, `mask_sum_s`, `mask_sum_n`) so state_dict keys match, and in online mode updates them
chunk by chunk.
"""
import warnings

import ember
from ember import nn

from . import _beamforming as F

__all__ = ["PSD", "MVDR", "SoudenMVDR", "RTFMVDR"]

_SOLUTIONS = ("ref_channel", "stv_evd", "stv_power")


def _mvdr_vector(psd_s, psd_n, reference_vector, solution="ref_channel", diagonal_loading=True, diag_eps=1e-7,
                 eps=1e-8):
    """MVDR weights `(..., freq, channel)` by `solution`: Souden's formula, or the RTF formula on a
    steering vector from the principal eigenvector (`stv_evd`) or the power method (`stv_power`)."""
    if solution == "ref_channel":
        return F.mvdr_weights_souden(psd_s, psd_n, reference_vector, diagonal_loading, diag_eps, eps)
    if solution == "stv_evd":
        stv = F.rtf_evd(psd_s)
    else:
        stv = F.rtf_power(psd_s, psd_n, reference_vector, diagonal_loading=diagonal_loading, diag_eps=diag_eps)
    return F.mvdr_weights_rtf(stv, psd_n, reference_vector, diagonal_loading, diag_eps, eps)


class PSD(nn.Module):
    """Cross-channel PSD matrix `(..., freq, channel, channel)` of `(..., channel, freq, time)`.

    With `multi_mask`, masks `(..., channel, freq, time)` are averaged over channels first.
    """

    def __init__(self, multi_mask=False, normalize=True, eps=1e-15):
        super().__init__()
        self.multi_mask = multi_mask
        self.normalize = normalize
        self.eps = eps

    def forward(self, specgram, mask=None):
        if mask is not None and self.multi_mask:
            mask = mask.mean(dim=-3)
        return F.psd(specgram, mask, self.normalize, self.eps)


class MVDR(nn.Module):
    """MVDR beamforming driven by time-frequency masks of speech and noise.

    The PSD matrices of speech and noise come from the masks (`PSD`), the weights from `solution`
    (`"ref_channel"`: Souden's formula; `"stv_evd"` / `"stv_power"`: the RTF formula with a steering
    vector from the principal eigenvector or the power method), and the enhanced spectrum is
    `wᴴ Y`. Work is done in complex128 (a complex64 input is promoted and the output cast back),
    as TorchAudio does for stability.

    `online=True` keeps the PSD matrices and mask sums of earlier calls (the buffers) and blends each
    new chunk in with TorchAudio's recursive rule: `Φ ← Φ_old · m_old / (m_old + m_new) + Φ_new /
    (m_old + m_new)`, where `Φ_new` is the chunk's (already mask-normalised) PSD and `m` the mask
    sums over time. That rule weights the new chunk by `1 / (m_old + m_new)` rather than by
    `m_new / (m_old + m_new)`; it is kept as TorchAudio has it so results agree.
    """

    def __init__(self, ref_channel=0, solution="ref_channel", multi_mask=False, diag_loading=True, diag_eps=1e-7,
                 online=False):
        super().__init__()
        if solution not in _SOLUTIONS:
            raise ValueError(f"Unknown solution provided. Must be one of {list(_SOLUTIONS)}, got {solution!r}.")
        self.ref_channel = ref_channel
        self.solution = solution
        self.multi_mask = multi_mask
        self.diag_loading = diag_loading
        self.diag_eps = diag_eps
        self.online = online
        self.psd = PSD(multi_mask)
        # Placeholders of one element until the first online call stores real statistics.
        for name in ("psd_s", "psd_n", "mask_sum_s", "mask_sum_n"):
            self.register_buffer(name, ember.zeros(1))

    def _blend(self, old_psd, old_sum, new_psd, new_sum):
        total = old_sum + new_sum
        return old_psd * (old_sum / total)[..., None, None] + new_psd * (1 / total)[..., None, None]

    def _get_updated_mvdr_vector(self, psd_s, psd_n, mask_s, mask_n, reference_vector, solution="ref_channel",
                                 diagonal_loading=True, diag_eps=1e-7, eps=1e-8):
        """Fold this chunk's PSDs into the stored ones (or store them, on the first call) and return
        the weights from the running PSDs."""
        if self.multi_mask:
            mask_s = mask_s.mean(dim=-3)
            mask_n = mask_n.mean(dim=-3)
        sum_s, sum_n = mask_s.sum(dim=-1), mask_n.sum(dim=-1)
        if self.psd_s.ndim != 1:
            psd_s = self._blend(self.psd_s, self.mask_sum_s, psd_s, sum_s)
            psd_n = self._blend(self.psd_n, self.mask_sum_n, psd_n, sum_n)
            sum_s, sum_n = self.mask_sum_s + sum_s, self.mask_sum_n + sum_n
        self.psd_s, self.psd_n = psd_s, psd_n
        self.mask_sum_s, self.mask_sum_n = sum_s, sum_n
        return _mvdr_vector(psd_s, psd_n, reference_vector, solution, diagonal_loading, diag_eps, eps)

    def _check_specgram(self, specgram):
        if not isinstance(specgram, ember.Tensor):
            raise TypeError(f"specgram must be an ember.Tensor, got {type(specgram).__name__}")
        if specgram.ndim < 3:
            raise ValueError(f"Expected at least 3D tensor (..., channel, freq, time). Found: {tuple(specgram.shape)}")
        if not specgram.is_complex():
            raise ValueError("The type of ``specgram`` tensor must be ``ember.cfloat`` or ``ember.cdouble``. "
                             f"Found: {specgram.dtype}")

    def _pack_mask(self, mask, shape):
        """Masks with the batch dims flattened, like the spectrum: `(batch, [channel,] freq, time)`."""
        if self.multi_mask:
            return mask.reshape(-1, shape[-3], shape[-2], shape[-1])
        return mask.reshape(-1, shape[-2], shape[-1])

    def _reference_vector(self, specgram):
        u = ember.zeros(tuple(specgram.shape[:-2]), dtype=ember.complex128)  # (batch, channel)
        u[..., self.ref_channel] = 1
        return u

    def forward(self, specgram, mask_s, mask_n=None):
        """Enhanced single-channel spectrum `(..., freq, time)` of `specgram` `(..., channel, freq,
        time)`; masks `(..., freq, time)`, or `(..., channel, freq, time)` with `multi_mask`.
        Without `mask_n`, `1 - mask_s` is used (with a warning)."""
        self._check_specgram(specgram)
        dtype = specgram.dtype
        specgram = specgram.to(ember.complex128)
        if mask_n is None:
            warnings.warn("``mask_n`` is not provided, use ``1 - mask_s`` as ``mask_n``.")
            mask_n = 1 - mask_s
        shape = tuple(specgram.shape)
        specgram = specgram.reshape(-1, shape[-3], shape[-2], shape[-1])
        mask_s, mask_n = self._pack_mask(mask_s, shape), self._pack_mask(mask_n, shape)
        psd_s, psd_n = self.psd(specgram, mask_s), self.psd(specgram, mask_n)
        u = self._reference_vector(specgram)
        if self.online:
            weights = self._get_updated_mvdr_vector(psd_s, psd_n, mask_s, mask_n, u, self.solution,
                                                    self.diag_loading, self.diag_eps)
        else:
            weights = _mvdr_vector(psd_s, psd_n, u, self.solution, self.diag_loading, self.diag_eps)
        enhanced = F.apply_beamforming(weights, specgram)
        return enhanced.reshape(shape[:-3] + shape[-2:]).to(dtype)


class RTFMVDR(nn.Module):
    """MVDR beamforming from the RTF (steering vector) of the target and the noise PSD:
    `forward(specgram, rtf, psd_n, reference_channel, diagonal_loading=True, diag_eps=1e-7,
    eps=1e-8)` → `(..., freq, time)`."""

    def forward(self, specgram, rtf, psd_n, reference_channel, diagonal_loading=True, diag_eps=1e-7, eps=1e-8):
        weights = F.mvdr_weights_rtf(rtf, psd_n, reference_channel, diagonal_loading, diag_eps, eps)
        return F.apply_beamforming(weights, specgram)


class SoudenMVDR(nn.Module):
    """MVDR beamforming by Souden's formula from the speech and noise PSDs:
    `forward(specgram, psd_s, psd_n, reference_channel, diagonal_loading=True, diag_eps=1e-7,
    eps=1e-8)` → `(..., freq, time)`."""

    def forward(self, specgram, psd_s, psd_n, reference_channel, diagonal_loading=True, diag_eps=1e-7, eps=1e-8):
        weights = F.mvdr_weights_souden(psd_s, psd_n, reference_channel, diagonal_loading, diag_eps, eps)
        return F.apply_beamforming(weights, specgram)
