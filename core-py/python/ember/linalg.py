"""`ember.linalg`: PyTorch's linear algebra on faer, batched over leading dims, real and complex.

The factorisations and solvers are native (`ember._C.linalg_*`, each differentiable where
PyTorch's are: solve, inv, det, slogdet, cholesky, solve_triangular, qr, eigh, svd); what is
built from them (pinv, lstsq, matrix_rank, matrix_power, matrix_exp, the norms, cross,
multi_dot, vecdot, lu_solve) is composed here from differentiable ops, so gradients flow through
it too. Singular or non-positive-definite input raises `LinAlgError` (a `RuntimeError`), with
PyTorch's messages; the `_ex` variants return the per-matrix `info` instead.
"""
import builtins
import collections
import math

import ember
from ember import _C

LinAlgError = _C.LinAlgError

__all__ = [
    "LinAlgError", "vector_norm", "matrix_norm", "norm", "det", "slogdet", "inv", "inv_ex", "solve", "solve_ex",
    "solve_triangular", "lstsq", "cholesky", "cholesky_ex", "qr", "eig", "eigvals", "eigh", "eigvalsh", "svd",
    "svdvals", "pinv", "matrix_rank", "matrix_power", "matrix_exp", "cross", "multi_dot", "vecdot", "lu_factor",
    "lu_factor_ex", "lu_solve",
]


def _result(name, fields):
    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"ember.return_types.{name}(\n{body})"

    base = collections.namedtuple(name, fields)
    return type(name, (base,), {"__slots__": (), "__repr__": __repr__, "__module__": "ember.return_types"})


_SolveEx = _result("linalg_solve_ex", ["result", "info"])
_InvEx = _result("linalg_inv_ex", ["inverse", "info"])
_Slogdet = _result("linalg_slogdet", ["sign", "logabsdet"])
_Eigh = _result("linalg_eigh", ["eigenvalues", "eigenvectors"])
_Eig = _result("linalg_eig", ["eigenvalues", "eigenvectors"])
_CholeskyEx = _result("linalg_cholesky_ex", ["L", "info"])
_Qr = _result("linalg_qr", ["Q", "R"])
_Svd = _result("linalg_svd", ["U", "S", "Vh"])
_LuFactor = _result("linalg_lu_factor", ["LU", "pivots"])
_LuFactorEx = _result("linalg_lu_factor_ex", ["LU", "pivots", "info"])
_Lstsq = _result("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def _tensor(x, fn, name="A"):
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"linalg_{fn}(): argument '{name}' (position 1) must be Tensor, not {type(x).__name__}")
    return x


def _vector_rhs(A, B):
    """PyTorch's rule: `B` is a (batch of) vector(s) when it is 1-d or has one dim less than `A`
    with matching batch and row sizes."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    _tensor(A, "solve_ex"), _tensor(B, "solve_ex", "B")
    if not left:
        r = solve_ex(A.mT, B.mT, check_errors=check_errors)
        return _SolveEx(r.result.mT, r.info)
    vector = _vector_rhs(A, B)
    X, info = _C.linalg_solve_ex(A, B.unsqueeze(-1) if vector else B, check_errors)
    return _SolveEx(X.squeeze(-1) if vector else X, info)


def solve(A, B, *, left=True, out=None):
    """`X` with `A X = B` (`X A = B` when `left=False`)."""
    return solve_ex(A, B, left=left, check_errors=True).result


def inv_ex(A, *, check_errors=False, out=None):
    return _InvEx(*_C.linalg_inv_ex(_tensor(A, "inv_ex"), check_errors))


def inv(A, *, out=None):
    return _C.linalg_inv_ex(_tensor(A, "inv"), True)[0]


def det(A, *, out=None):
    return _C.linalg_det(_tensor(A, "det"))


def slogdet(A, *, out=None):
    return _Slogdet(*_C.linalg_slogdet(_tensor(A, "slogdet")))


def eigh(A, UPLO="L", *, out=None):
    return _Eigh(*_C.linalg_eigh(_tensor(A, "eigh"), UPLO))


def eigvalsh(A, UPLO="L", *, out=None):
    return _C.linalg_eigvalsh(_tensor(A, "eigvalsh"), UPLO)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    return _CholeskyEx(*_C.linalg_cholesky_ex(_tensor(A, "cholesky_ex"), upper, check_errors))


def cholesky(A, *, upper=False, out=None):
    return _C.linalg_cholesky_ex(_tensor(A, "cholesky"), upper, True)[0]


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    return _C.linalg_solve_triangular(_tensor(A, "solve_triangular"), _tensor(B, "solve_triangular", "B"), upper, left, unitriangular)


def qr(A, mode="reduced", *, out=None):
    return _Qr(*_C.linalg_qr(_tensor(A, "qr"), mode))


def svd(A, full_matrices=True, *, driver=None, out=None):
    return _Svd(*_C.linalg_svd(_tensor(A, "svd"), full_matrices))


def svdvals(A, *, driver=None, out=None):
    return _C.linalg_svdvals(_tensor(A, "svdvals"))


def eig(A, *, out=None):
    return _Eig(*_C.linalg_eig(_tensor(A, "eig"), True))


def eigvals(A, *, out=None):
    return _C.linalg_eig(_tensor(A, "eigvals"), False)[0]


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    if not pivot:
        raise NotImplementedError("linalg.lu_factor_ex: LU without pivoting is not supported on CPU (as in PyTorch)")
    return _LuFactorEx(*_C.linalg_lu_factor_ex(_tensor(A, "lu_factor_ex"), check_errors))


def lu_factor(A, *, pivot=True, out=None):
    r = lu_factor_ex(A, pivot=pivot, check_errors=True)
    return _LuFactor(r.LU, r.pivots)


def _permutation(pivots, n):
    """The row order a batch of LAPACK pivot vectors (1-based successive swaps) produces."""
    flat = pivots.reshape(-1, pivots.shape[-1]).tolist()
    orders = []
    for swaps in flat:
        order = list(range(n))
        for j, p in enumerate(swaps):
            order[j], order[p - 1] = order[p - 1], order[j]
        orders.append(order)
    return ember.tensor(orders, dtype=ember.int64).reshape(*pivots.shape[:-1], n)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """Solves with the factors of `lu_factor`: `P L U X = B` (or its adjoint, or from the right)."""
    if not left:
        # X A = B  <=>  Aᴴ Xᴴ = Bᴴ
        return lu_solve(LU, pivots, B.mH, adjoint=not adjoint).mH
    n = LU.shape[-1]
    order = _permutation(pivots, n)
    L, U = ember.tril(LU, -1) + ember.eye(n, dtype=LU.dtype), ember.triu(LU)
    lead = ember.broadcast_shapes(tuple(LU.shape[:-2]), tuple(B.shape[:-2]))
    B = B.expand(*lead, *B.shape[-2:])
    index = order.expand(*lead, n).unsqueeze(-1).expand(*lead, n, B.shape[-1])
    if not adjoint:
        Y = solve_triangular(L, ember.gather(B, -2, index), upper=False, unitriangular=True)
        return solve_triangular(U, Y, upper=True)
    Y = solve_triangular(U.mH, B, upper=False)
    Z = solve_triangular(L.mH, Y, upper=True, unitriangular=True)
    return ember.zeros_like(Z).scatter(-2, index, Z)


_EPS = {"float32": 1.1920928955078125e-07, "complex64": 1.1920928955078125e-07, "float64": 2.220446049250313e-16, "complex128": 2.220446049250313e-16}


def _tolerance(S, atol, rtol, shape_mn, dtype):
    """max(atol, rtol·σ₁) per matrix; rtol defaults to eps·max(m, n) when atol is not given."""
    if rtol is None:
        rtol = 0.0 if atol is not None and not _is_zero(atol) else _EPS[dtype.name] * builtins.max(shape_mn)
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else ember.zeros(*S.shape[:-1], 1, dtype=S.dtype)
    tol = smax * rtol
    if atol is not None:
        tol = ember.maximum(tol, atol if isinstance(atol, _C.Tensor) else ember.full_like(tol, atol))
    return tol


def _is_zero(x):
    return not isinstance(x, _C.Tensor) and x == 0


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """Moore-Penrose pseudo-inverse through the SVD (eigh when `hermitian`)."""
    _tensor(A, "pinv")
    m, n = A.shape[-2], A.shape[-1]
    if hermitian:
        L, Q = eigh(A)
        tol = _tolerance(L.abs(), atol, rtol, (m, n), A.dtype)
        keep = L.abs() > tol
        Linv = ember.where(keep, 1.0 / ember.where(keep, L, ember.ones_like(L)), ember.zeros_like(L))
        return (Q * Linv.unsqueeze(-2).to(Q.dtype)) @ Q.mH
    U, S, Vh = svd(A, full_matrices=False)
    tol = _tolerance(S, atol, rtol, (m, n), A.dtype)
    keep = S > tol
    Sinv = ember.where(keep, 1.0 / ember.where(keep, S, ember.ones_like(S)), ember.zeros_like(S))
    return (Vh.mH * Sinv.unsqueeze(-2).to(A.dtype)) @ U.mH


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    _tensor(A, "matrix_rank")
    S = eigvalsh(A).abs() if hermitian else svdvals(A)
    tol = _tolerance(S, atol, rtol, (A.shape[-2], A.shape[-1]), A.dtype)
    return (S > tol).sum(-1)


def lstsq(A, B, rcond=None, *, driver=None, out=None):
    """Least squares through the pseudo-inverse (rank-revealing, like the default 'gelsy').
    `residuals` are given, as in PyTorch, for full-rank tall input with a driver other than
    'gelsy'; `singular_values` for 'gelsd'/'gelss'."""
    _tensor(A, "lstsq"), _tensor(B, "lstsq", "B")
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), but got {driver}")
    vector = B.ndim == A.ndim - 1
    Bm = B.unsqueeze(-1) if vector else B
    rtol = rcond if rcond is not None and rcond > 0 else None
    X = pinv(A, rtol=rtol) @ Bm
    m, n = A.shape[-2], A.shape[-1]
    driver = driver or "gelsy"
    rank = matrix_rank(A, rtol=rtol) if driver != "gels" else ember.empty(0, dtype=ember.int64)
    residuals = ember.empty(0, dtype=A.dtype.to_real() if A.dtype.is_complex else A.dtype)
    if driver != "gelsy" and m > n and bool((matrix_rank(A) == n).all()):
        residuals = ((A @ X - Bm).abs() ** 2).sum(-2)
    sv = svdvals(A) if driver in ("gelsd", "gelss") else ember.empty(0, dtype=residuals.dtype)
    return _Lstsq(X.squeeze(-1) if vector else X, residuals, rank, sv)


def matrix_power(A, n, *, out=None):
    """`A` to the integer power `n` by repeated squaring (`inv(A)` for negative `n`)."""
    _tensor(A, "matrix_power")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are {A.shape[-2] if A.ndim > 1 else 1} by {A.shape[-1] if A.ndim else 1} matrices")
    if n == 0:
        return ember.eye(A.shape[-1], dtype=A.dtype).expand(*A.shape).clone()
    if n < 0:
        A, n = inv(A), -n
    result, base = None, A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


def matrix_exp(A):
    """exp(A) by scaling and squaring with a degree-18 Taylor polynomial (Horner form), each
    step a differentiable op."""
    _tensor(A, "matrix_exp")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.matrix_exp: A must be batches of square matrices")
    n = A.shape[-1]
    norm = float(A.detach().abs().sum(-2).amax().item()) if A.numel() else 0.0
    squarings = builtins.max(0, math.ceil(math.log2(norm)) + 1) if norm > 0.5 else 0
    X = A / (2.0 ** squarings)
    eye = ember.eye(n, dtype=A.dtype)
    result = eye + X / 18.0
    for k in range(17, 0, -1):
        result = eye + (X @ result) / float(k)
    for _ in range(squarings):
        result = result @ result
    return result


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    _tensor(x, "vector_norm", "x")
    if dtype is not None:
        x = x.to(dtype)
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got {x.dtype.name}")
    dims = () if dim is None else dim
    a = x.abs()
    if ord == math.inf:
        return a.amax(dims, keepdim)
    if ord == -math.inf:
        return a.amin(dims, keepdim)
    if dim is None:
        a = a.reshape(-1) if not keepdim else a
        dims = tuple(range(a.ndim))
    if ord == 0:
        return (a != 0).to(a.dtype).sum(dims, keepdim)
    if ord == 1:
        return a.sum(dims, keepdim)
    if ord == 2:
        return (a * a).sum(dims, keepdim).sqrt()
    return (a ** ord).sum(dims, keepdim) ** (1.0 / ord)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    _tensor(A, "matrix_norm")
    if dtype is not None:
        A = A.to(dtype)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if not (A.is_floating_point() or A.is_complex()):
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as input. Got {A.dtype}")
    d0, d1 = (d % A.ndim for d in dim)
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord in ("nuc", 2, -2):
        moved = A.movedim((d0, d1), (-2, -1))
        S = svdvals(moved)
        r = S.sum(-1) if ord == "nuc" else (S.amax(-1) if ord == 2 else S.amin(-1))
        if keepdim:
            r = r.unsqueeze(builtins.min(d0, d1)).unsqueeze(builtins.max(d0, d1))
        return r
    if ord in (1, -1, math.inf, -math.inf):
        sum_dim, max_dim = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(sum_dim, keepdim=True)
        r = s.amax(max_dim, keepdim=True) if ord > 0 else s.amin(max_dim, keepdim=True)
        return r if keepdim else r.squeeze((d0, d1))
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    _tensor(A, "norm")
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if dim is not None and len(dim) == 2 or dim is None and A.ndim == 2:
        return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.ndim}D.")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def cross(input, other, *, dim=-1, out=None):
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[dim]} and {other.shape[dim]}")
    a0, a1, a2 = (input.select(dim, i) for i in range(3))
    b0, b1, b2 = (other.select(dim, i) for i in range(3))
    return ember.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices (first may be a row vector, last a column vector),
    multiplied in the cheapest order."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    mats = list(tensors)
    first_vec, last_vec = mats[0].ndim == 1, mats[-1].ndim == 1
    if first_vec:
        mats[0] = mats[0].unsqueeze(0)
    if last_vec:
        mats[-1] = mats[-1].unsqueeze(-1)
    for i, t in enumerate(mats):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    r = _chain(mats)
    if first_vec:
        r = r.squeeze(0)
    if last_vec:
        r = r.squeeze(-1)
    return r


def _chain(mats):
    dims = [mats[0].shape[0]] + [m.shape[1] for m in mats]
    n = len(mats)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def build(i, j):
        return mats[i] if i == j else build(i, split[i][j]) @ build(split[i][j] + 1, j)

    return build(0, n - 1)


def vecdot(x, y, *, dim=-1, out=None):
    """Σ conj(x)·y over `dim`, broadcasting the rest."""
    return (ember.conj(x) * y).sum(dim)
