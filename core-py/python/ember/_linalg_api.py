"""PyTorch's top-level linear-algebra functions and Tensor methods, on `ember.linalg`."""
import collections

import ember
from ember import _C, linalg

__all__ = ["det", "logdet", "slogdet", "inverse", "cholesky", "matrix_exp", "matrix_power", "pinverse", "svd", "qr"]

_Svd = collections.namedtuple("svd", ["U", "S", "V"])
_Qr = collections.namedtuple("qr", ["Q", "R"])


def det(input):
    return linalg.det(input)


def logdet(input):
    """log(det): NaN for a negative determinant, -inf for a singular matrix (real input)."""
    sign, logabs = linalg.slogdet(input)
    if input.dtype.is_complex:
        return logabs + ember.log(sign)
    return ember.where(sign >= 0, logabs, float("nan"))


def slogdet(input):
    return linalg.slogdet(input)


def inverse(input):
    return linalg.inv(input)


def cholesky(input, upper=False):
    return linalg.cholesky(input, upper=upper)


def matrix_exp(input):
    return linalg.matrix_exp(input)


def matrix_power(input, n):
    return linalg.matrix_power(input, n)


def pinverse(input, rcond=1e-15):
    return linalg.pinv(input, rtol=rcond)


def svd(input, some=True, compute_uv=True):
    """The old `torch.svd`: `V` rather than `Vh`; zeros for U and V when not `compute_uv`."""
    U, S, Vh = linalg.svd(input, full_matrices=not some)
    if not compute_uv:
        return _Svd(ember.zeros_like(U), S, ember.zeros_like(Vh))
    return _Svd(U, S, Vh.mH)


def qr(input, some=True):
    return _Qr(*linalg.qr(input, mode="reduced" if some else "complete"))


for _name in __all__:
    setattr(_C.Tensor, _name, globals()[_name])
