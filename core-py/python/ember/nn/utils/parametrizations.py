"""`nn.utils.parametrizations`: `orthogonal`, `spectral_norm` and `weight_norm` as
parametrizations (see `parametrize`), with PyTorch's maths and state_dict keys."""
from enum import Enum, auto

import numpy as np

import ember
from ember import _C
from ember.nn import functional as F
from ember.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ember.nn.modules.module import Module
from ember.nn.utils import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ---- orthogonal ----

def _householder_product(reflectors, tau):
    """The first k columns of H_1 ⋯ H_k, H_i = I - tau_i v_i v_iᴴ, where v_i is column i of
    `reflectors` below the diagonal with a 1 on it (LAPACK's orgqr); differentiable."""
    n, k = reflectors.shape[-2], reflectors.shape[-1]
    below = reflectors.tril(-1)
    eye = ember.eye(n, dtype=reflectors.dtype)
    q = eye[:, :k].expand(*reflectors.shape[:-2], n, k)
    for i in reversed(range(k)):
        v = (below[..., :, i] + eye[:, i]).unsqueeze(-1)
        q = q - tau[..., i, None, None] * v * (v.mH @ q)
    return q


def _sign_fixed_q(a):
    """The Q of A = QR with R's diagonal made non-negative: unique, so it does not depend
    on the QR routine's sign choices."""
    q, r = ember.linalg.qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _is_orthogonal(q):
    k = q.shape[-1]
    eps = 10.0 * q.shape[-2] * np.finfo(np.asarray(ember.zeros(1, dtype=q.dtype)).dtype).eps
    eye = ember.eye(k, dtype=q.dtype)
    return bool(((q.mH @ q - eye).abs() <= eps + 1e-5 * eye).all())  # allclose's rtol and atol


def _geqrf(a):
    """LAPACK's geqrf (Householder QR in place: R on and above the diagonal, the reflectors
    below it) and the reflectors' tau, computed in NumPy one matrix at a time."""
    data = np.array(np.asarray(a.detach()), dtype=np.float64)
    batch = data.reshape((-1,) + data.shape[-2:])
    taus = np.zeros(batch.shape[:1] + (min(batch.shape[-2:]),))
    for m, tau in zip(batch, taus):
        for j in range(tau.shape[0]):
            tau[j] = _reflect_column(m, j)
    return (ember.from_numpy(batch.reshape(data.shape)).to(a.dtype),
            ember.from_numpy(taus.reshape(data.shape[:-2] + taus.shape[-1:])).to(a.dtype))


def _reflect_column(m, j):
    """One step of Householder QR on column j of `m` (as LAPACK's larfg + larf); returns tau."""
    alpha, x = m[j, j], m[j + 1:, j]
    x_norm = np.linalg.norm(x)
    if x_norm == 0.0:
        return 0.0
    beta = -np.copysign(np.hypot(alpha, x_norm), alpha)
    tau = (beta - alpha) / beta
    v = np.concatenate([[1.0], x / (alpha - beta)])
    m[j:, j + 1:] -= tau * np.outer(v, v @ m[j:, j + 1:])
    m[j, j], m[j + 1:, j] = beta, v[1:]
    return tau


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps a matrix to an orthogonal one (its columns orthonormal when it is tall): through
    the exponential or the Cayley transform of a skew-symmetric matrix, or a product of
    Householder reflections. With trivialization, the result is `base @ map(X)` and
    assigning an orthogonal Q stores Q as `base` and X = -I."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        transposed = X.shape[-2] < X.shape[-1]
        if transposed:
            X = X.mT
        if self.orthogonal_map == _OrthMaps.householder:
            Q = self._householder(X)
        else:
            Q = self._from_skew(X)
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def _from_skew(self, X):
        n, k = X.shape[-2], X.shape[-1]
        X = X.tril()
        if n != k:
            X = ember.cat([X, ember.zeros(n, n - k, dtype=X.dtype).expand(*X.shape[:-2], -1, -1)], dim=-1)
        A = X - X.mH
        if self.orthogonal_map == _OrthMaps.matrix_exp:
            Q = ember.linalg.matrix_exp(A)
        else:
            eye = ember.eye(n, dtype=A.dtype)
            Q = ember.linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
        return Q[..., :k] if n != k else Q

    @staticmethod
    def _householder(X):
        A = X.tril(-1)
        tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
        return _householder_product(A, tau) * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)

    def right_inverse(self, Q):
        with ember.no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q):
        if tuple(Q.shape) != tuple(self.shape):
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. Got a tensor of shape {Q.shape}.")
        Q_init = Q
        transpose = Q.shape[-2] < Q.shape[-1]
        if transpose:
            Q = Q.mT
        if not hasattr(self, "base"):
            return self._householder_inverse(Q, transpose)
        self.base = self._completed_orthogonal(Q)
        minus_identity = ember.zeros_like(Q_init)
        minus_identity.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return minus_identity

    def _householder_inverse(self, Q, transpose):
        if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
            raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley parametrizations when use_trivialization=False.")
        A, tau = _geqrf(Q)
        # The diagonal keeps only R's signs, flipped where no reflection was needed.
        signs = A.diagonal(dim1=-2, dim2=-1).sign()
        signs = ember.where(tau == 0.0, -signs, signs)
        A.diagonal(dim1=-2, dim2=-1).copy_(signs)
        return A.mT if transpose else A

    @staticmethod
    def _completed_orthogonal(Q):
        """Q itself when already orthogonal; otherwise the orthogonal factor of Q (a tall Q
        first completed to a square matrix with random columns)."""
        n, k = Q.shape[-2], Q.shape[-1]
        if n == k:
            return Q.clone() if _is_orthogonal(Q) else _sign_fixed_q(Q)
        extra = ember.randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype)
        return _sign_fixed_q(ember.cat([Q, extra], dim=-1))


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Parametrizes `module.<name>` (a matrix or batch of matrices) as orthogonal. The map
    defaults to "matrix_exp" for square or complex matrices, else "householder"."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


# ---- weight norm ----

def _norm_except_dim(v, dim):
    """The 2-norm over every dim but `dim`, kept with size 1 (dim -1 means over all dims)."""
    if dim == -1:
        return v.norm()
    dim = dim + v.ndim if dim < 0 else dim
    return v.norm(2, dim=tuple(d for d in range(v.ndim) if d != dim), keepdim=True)


def _weight_norm(v, g, dim):
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    """weight = g · v / ‖v‖, the norm taken over every dim but `dim`."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Splits `module.<name>` into a magnitude g (`original0`) and a direction v (`original1`);
    state_dicts of the older `nn.utils.weight_norm` (`<name>_g`, `<name>_v`) still load."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def rename_legacy_keys(module, state_dict, prefix, *args):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module.register_load_state_dict_pre_hook(rename_legacy_keys)
    return module


# ---- spectral norm ----

def _matrix_view(weight, dim):
    """`weight` as a matrix whose rows run along `dim`."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.ndim) if d != dim))
    return weight.flatten(1)


class _SpectralNorm(Module):
    """weight / σ, σ the largest singular value estimated by power iteration on buffers `_u`
    and `_v` (advanced `n_power_iterations` steps per forward in training mode); 1-d
    weights are just normalized."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = _matrix_view(weight, self.dim)
            h, w = weight_mat.shape
            self.register_buffer("_u", F.normalize(ember.randn(h, dtype=weight.dtype), dim=0, eps=eps))
            self.register_buffer("_v", F.normalize(ember.randn(w, dtype=weight.dtype), dim=0, eps=eps))
            self._power_method(weight_mat, 15)  # start from a good estimate

    def _power_method(self, weight_mat, n_power_iterations):
        with ember.no_grad():
            for _ in range(n_power_iterations):
                F.normalize(ember.mv(weight_mat, self._v), dim=0, eps=self.eps, out=self._u)
                F.normalize(ember.mv(weight_mat.H, self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = _matrix_view(weight, self.dim)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # Copies, so later in-place power steps do not disturb this step's backward.
        u, v = self._u.clone(), self._v.clone()
        sigma = ember.dot(u.conj(), ember.mv(weight_mat, v))  # uᴴ W v (vdot) for complex weights too
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divides `module.<name>` by its spectral norm. `dim` (the output-channel dim) defaults to
    1 for ConvTranspose layers and 0 otherwise."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
