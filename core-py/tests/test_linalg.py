"""ember.linalg against numpy.linalg (and PyTorch where installed): random shapes, batches, real and
complex dtypes, PyTorch's errors and info codes, and gradcheck for the differentiable ops."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

DTYPES = [ember.float32, ember.float64, ember.complex64, ember.complex128]
TOL = {ember.float32: 2e-4, ember.float64: 1e-10, ember.complex64: 2e-4, ember.complex128: 1e-10}
NP = {ember.float32: np.float32, ember.float64: np.float64, ember.complex64: np.complex64, ember.complex128: np.complex128}

rng = np.random.default_rng(0)


def rand(shape, dtype):
    x = rng.standard_normal(shape)
    if dtype.is_complex:
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(NP[dtype])


def well_conditioned(shape, dtype):
    n = shape[-1]
    return rand(shape, dtype) + 3 * n ** 0.5 * np.eye(n, dtype=NP[dtype])


def hermitian(shape, dtype):
    x = rand(shape, dtype)
    return (x + np.conj(np.swapaxes(x, -1, -2))) / 2


def spd(shape, dtype):
    x = rand(shape, dtype)
    return x @ np.conj(np.swapaxes(x, -1, -2)) + shape[-1] * np.eye(shape[-1], dtype=NP[dtype])


def close(got, want, dtype):
    np.testing.assert_allclose(np.asarray(got.numpy() if isinstance(got, ember.Tensor) else got), want, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)


def t(x):
    return ember.from_numpy(np.ascontiguousarray(x))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch,n,k", [((), 1, 1), ((), 5, 3), ((3,), 4, 2), ((2, 3), 6, 1), ((2,), 40, 7)])
def test_solve_inv_det_match_numpy(dtype, batch, n, k):
    A, B = well_conditioned((*batch, n, n), dtype), rand((*batch, n, k), dtype)
    close(ember.linalg.solve(t(A), t(B)), np.linalg.solve(A, B), dtype)
    close(ember.linalg.inv(t(A)), np.linalg.inv(A), dtype)
    close(ember.linalg.det(t(A)), np.linalg.det(A), dtype)
    sign, logabs = ember.linalg.slogdet(t(A))
    nsign, nlog = np.linalg.slogdet(A)
    close(sign, nsign, dtype)
    close(logabs, nlog, dtype)


def test_solve_vector_rhs_broadcasting_and_left_false():
    A, b = well_conditioned((3, 4, 4), ember.float64), rand((4,), ember.float64)
    x = ember.linalg.solve(t(A), t(b))
    assert tuple(x.shape) == (3, 4)
    close(x, np.linalg.solve(A, b[None, :, None].repeat(3, 0))[..., 0], ember.float64)
    B = rand((2, 1, 5, 4), ember.float64)
    close(ember.linalg.solve(t(A), t(B), left=False), np.swapaxes(np.linalg.solve(np.swapaxes(A, -1, -2), np.swapaxes(B, -1, -2)), -1, -2), ember.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (5, 5), (3, 6, 6), (2, 2, 17, 17)])
def test_eigh_eigvalsh_match_numpy(dtype, shape):
    A = hermitian(shape, dtype)
    L, Q = ember.linalg.eigh(t(A))
    close(L, np.linalg.eigvalsh(A), dtype)
    close(ember.linalg.eigvalsh(t(A)), np.linalg.eigvalsh(A), dtype)
    assert L.dtype == (ember.float32 if dtype in (ember.float32, ember.complex64) else ember.float64)
    Qn, Ln = Q.numpy(), L.numpy()
    close(Qn @ (Ln[..., None] * np.conj(np.swapaxes(Qn, -1, -2))), A, dtype)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_reads_only_one_triangle(uplo):
    A = rand((4, 4), ember.complex128)
    want = np.linalg.eigvalsh(A, UPLO=uplo)
    close(ember.linalg.eigvalsh(t(A), UPLO=uplo), want, ember.complex128)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 5, 5), (30, 30)])
def test_cholesky_matches_numpy(dtype, shape):
    A = spd(shape, dtype)
    close(ember.linalg.cholesky(t(A)), np.linalg.cholesky(A), dtype)
    U = ember.linalg.cholesky(t(A), upper=True)
    close(U, np.conj(np.swapaxes(np.linalg.cholesky(A), -1, -2)), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 7, 2)])
def test_qr_svd_reconstruct_and_match_numpy(dtype, shape):
    A = rand(shape, dtype)
    for mode in ("reduced", "complete"):
        Q, R = ember.linalg.qr(t(A), mode=mode)
        Qn, Rn = np.linalg.qr(A, mode=mode)
        assert Q.shape == Qn.shape and R.shape == Rn.shape
        close(Q.numpy() @ R.numpy(), A, dtype)
        close(np.triu(R.numpy()), R.numpy(), dtype)
        if dtype in (ember.float64, ember.complex128):  # in single precision a near-zero Re(α) may flip
            close(R, Rn, dtype)  # LAPACK's sign convention, so Q and R are numpy's
    assert ember.linalg.qr(t(A), mode="r").Q.numel() == 0
    for full in (True, False):
        U, S, Vh = ember.linalg.svd(t(A), full_matrices=full)
        Un, Sn, Vhn = np.linalg.svd(A, full_matrices=full)
        assert U.shape == Un.shape and Vh.shape == Vhn.shape
        close(S, Sn, dtype)
        k = S.shape[-1]
        close((U.numpy()[..., :k] * S.numpy()[..., None, :]) @ Vh.numpy()[..., :k, :], A, dtype)
    close(ember.linalg.svdvals(t(A)), np.linalg.svd(A, compute_uv=False), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eig_matches_numpy(dtype):
    A = rand((3, 5, 5), dtype)
    w, V = ember.linalg.eig(t(A))
    assert w.dtype.is_complex and V.dtype.is_complex
    close(np.sort_complex(w.numpy().astype(np.complex128)), np.sort_complex(np.linalg.eigvals(A).astype(np.complex128)), dtype)
    close(A.astype(np.complex128) @ V.numpy(), V.numpy() * w.numpy()[..., None, :], dtype)
    close(np.linalg.norm(V.numpy(), axis=-2), np.ones((3, 5)), dtype)
    close(np.sort_complex(ember.linalg.eigvals(t(A)).numpy()), np.sort_complex(w.numpy()), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_triangular_and_lu(dtype):
    A = np.triu(well_conditioned((2, 5, 5), dtype))
    B = rand((2, 5, 3), dtype)
    close(ember.linalg.solve_triangular(t(A), t(B), upper=True), np.linalg.solve(A, B), dtype)
    L = np.swapaxes(A, -1, -2).copy()
    C = rand((2, 3, 5), dtype)
    close(ember.linalg.solve_triangular(t(L), t(C), upper=False, left=False), C @ np.linalg.inv(L), dtype)
    G = well_conditioned((2, 5, 5), dtype)
    LU, piv = ember.linalg.lu_factor(t(G))
    assert piv.dtype == ember.int32
    close(ember.linalg.lu_solve(LU, piv, t(B)), np.linalg.solve(G, B), dtype)
    close(ember.linalg.lu_solve(LU, piv, t(B), adjoint=True), np.linalg.solve(np.conj(np.swapaxes(G, -1, -2)), B), dtype)


def test_lu_factor_matches_scipy():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    A = rand((6, 6), ember.float64)
    LU, piv = ember.linalg.lu_factor(t(A))
    lu, p = scipy_linalg.lu_factor(A)
    close(LU, lu, ember.float64)
    np.testing.assert_array_equal(piv.numpy(), p + 1)


@pytest.mark.parametrize("dtype", [ember.float64, ember.complex128])
def test_composed_ops(dtype):
    A = rand((2, 6, 4), dtype)
    close(ember.linalg.pinv(t(A)), np.linalg.pinv(A), dtype)
    H = hermitian((5, 5), dtype)
    close(ember.linalg.pinv(t(H), hermitian=True), np.linalg.pinv(H, hermitian=True), dtype)
    low = rand((6, 2), dtype) @ rand((2, 5), dtype)
    assert int(ember.linalg.matrix_rank(t(low))) == np.linalg.matrix_rank(low) == 2
    B = rand((2, 6, 3), dtype)
    close(ember.linalg.lstsq(t(A), t(B)).solution, np.stack([np.linalg.lstsq(A[i], B[i], rcond=None)[0] for i in range(2)]), dtype)
    S = rand((3, 3), dtype)
    for n in (-2, 0, 1, 5):
        close(ember.linalg.matrix_power(t(S), n), np.linalg.matrix_power(S, n), dtype)
    scipy_linalg = pytest.importorskip("scipy.linalg")
    close(ember.linalg.matrix_exp(t(S)), scipy_linalg.expm(S), dtype)
    close(ember.linalg.matrix_exp(t(4 * S)), scipy_linalg.expm(4 * S), dtype)


@pytest.mark.parametrize("dtype", [ember.float64, ember.complex128])
def test_norms_and_products(dtype):
    A = rand((3, 4, 5), dtype)
    for ord in ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
        close(ember.linalg.matrix_norm(t(A), ord=ord), np.linalg.norm(A, ord=ord, axis=(-2, -1)), dtype)
    for ord in (0, 1, 2, 3.5, np.inf, -np.inf):
        close(ember.linalg.vector_norm(t(A), ord=ord, dim=-1), np.linalg.norm(A, ord=ord, axis=-1), dtype)
    close(ember.linalg.vector_norm(t(A)), np.linalg.norm(A.ravel()), dtype)
    close(ember.linalg.norm(t(A[0])), np.linalg.norm(A[0]), dtype)
    x, y = rand((4, 3), dtype), rand((4, 3), dtype)
    close(ember.linalg.cross(t(x), t(y)), np.cross(x, y), dtype)
    close(ember.linalg.vecdot(t(x), t(y)), np.sum(np.conj(x) * y, -1), dtype)
    mats = [rand((2, 7), dtype), rand((7, 3), dtype), rand((3, 9), dtype), rand((9,), dtype)]
    close(ember.linalg.multi_dot([t(m) for m in mats]), np.linalg.multi_dot(mats), dtype)


def test_errors_and_info_match_pytorch():
    sing = np.zeros((2, 3, 3))
    sing[0] = np.eye(3)
    with pytest.raises(ember.linalg.LinAlgError, match=r"^torch.linalg.solve: \(Batch element 1\): The solver failed because the input matrix is singular.$"):
        ember.linalg.solve(t(sing), t(np.ones((2, 3, 1))))
    with pytest.raises(RuntimeError, match=r"^linalg.inv: The diagonal element 1 is zero"):
        ember.linalg.inv(t(sing[1]))
    with pytest.raises(ember.linalg.LinAlgError, match=r"the leading minor of order 1 is not positive-definite"):
        ember.linalg.cholesky(t(-np.eye(3)))
    assert ember.linalg.solve_ex(t(sing), t(np.ones((2, 3, 1)))).info.tolist() == [0, 1]
    assert ember.linalg.inv_ex(t(sing)).info.tolist() == [0, 1]
    assert ember.linalg.cholesky_ex(t(sing)).info.tolist() == [0, 1]
    sign, logabs = ember.linalg.slogdet(t(sing))
    assert sign.tolist() == [1.0, 0.0] and logabs.tolist()[1] == -np.inf
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 by 3 matrices"):
        ember.linalg.det(t(np.ones((2, 3))))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation AX = B \(3x3 and 4x1\)"):
        ember.linalg.solve(t(np.eye(3)), t(np.ones(4)))
    with pytest.raises(NotImplementedError, match="Expected a floating point or complex tensor as input. Got Long"):
        ember.linalg.inv(ember.eye(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        ember.linalg.eigh(t(np.eye(2)), UPLO="X")
    with pytest.raises(RuntimeError, match="The input tensor A must have at least 2 dimensions"):
        ember.linalg.det(t(np.ones(3)))
    assert issubclass(ember.linalg.LinAlgError, RuntimeError)


def test_against_pytorch_where_installed():
    torch = pytest.importorskip("torch")
    A = well_conditioned((2, 4, 4), ember.complex128)
    B = rand((2, 4, 2), ember.complex128)
    close(ember.linalg.solve(t(A), t(B)), torch.linalg.solve(torch.from_numpy(A), torch.from_numpy(B)).numpy(), ember.complex128)
    # eigh's gradient of a gauge-invariant loss, against PyTorch's
    H = hermitian((4, 4), ember.complex128)
    x = t(H).requires_grad_()
    L, Q = ember.linalg.eigh(x)
    (L.sum() + (Q.abs() ** 2)[..., 0, :].sum() * 0 + (Q[..., :2] @ Q[..., :2].mH).abs().sum()).backward()
    y = torch.from_numpy(H).requires_grad_()
    Lt, Qt = torch.linalg.eigh(y)
    (Lt.sum() + (Qt[..., :2] @ Qt[..., :2].mH).abs().sum()).backward()
    close(x.grad, y.grad.numpy(), ember.complex128)


def _gc(fn, *inputs):
    assert gradcheck(fn, tuple(t(x).requires_grad_() for x in inputs), eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("dtype", [ember.float64, ember.complex128])
def test_gradcheck_solve_inv_det_slogdet(dtype):
    A, B = well_conditioned((2, 3, 3), dtype), rand((2, 3, 2), dtype)
    _gc(ember.linalg.solve, A, B)
    _gc(lambda a, b: ember.linalg.solve(a, b, left=False), A, np.swapaxes(B, -1, -2).copy())
    _gc(ember.linalg.inv, A)
    _gc(ember.linalg.det, A)
    _gc(lambda a: ember.linalg.slogdet(a).logabsdet, A)
    if dtype.is_complex:
        _gc(lambda a: ember.linalg.slogdet(a).sign, A)


@pytest.mark.parametrize("dtype", [ember.float64, ember.complex128])
def test_gradcheck_cholesky_triangular_qr(dtype):
    X = rand((2, 3, 3), dtype)
    sym = lambda x: x @ x.mH + 3 * ember.eye(3, dtype=dtype)  # noqa: E731
    _gc(lambda x: ember.linalg.cholesky(sym(x)), X)
    _gc(lambda x: ember.linalg.cholesky(sym(x), upper=True), X)
    U, B = np.triu(well_conditioned((3, 3), dtype)), rand((3, 2), dtype)
    _gc(lambda a, b: ember.linalg.solve_triangular(a, b, upper=True), U, B)
    _gc(lambda a, b: ember.linalg.solve_triangular(a, b, upper=True, unitriangular=True), U, B)
    _gc(lambda a: ember.linalg.qr(a).Q, rand((4, 3), dtype))
    _gc(lambda a: ember.linalg.qr(a).R, rand((2, 3, 3), dtype))


@pytest.mark.parametrize("dtype", [ember.float64, ember.complex128])
def test_gradcheck_eigh_svd_pinv(dtype):
    # well-separated spectra and gauge-invariant losses (eigenvector phases are arbitrary)
    D = np.diag([1.0, 2.5, 4.0, 6.0]).astype(NP[dtype])
    Qr, _ = np.linalg.qr(rand((4, 4), dtype))
    H = Qr @ D @ np.conj(Qr.T)

    def eigh_loss(x):
        L, Q = ember.linalg.eigh((x + x.mH) / 2)
        return L, (Q[..., :2] @ Q[..., :2].mH)

    _gc(eigh_loss, H)
    _gc(lambda x: ember.linalg.eigvalsh((x + x.mH) / 2), H)
    M = Qr[:, :3] @ np.diag([1.0, 3.0, 5.0]).astype(NP[dtype]) @ np.conj(np.linalg.qr(rand((3, 3), dtype))[0].T)
    M = np.concatenate([M, 0.1 * rand((1, 3), dtype)])

    def svd_loss(x):
        U, S, Vh = ember.linalg.svd(x, full_matrices=False)
        return S, U @ Vh, U[..., :1] @ U[..., :1].mH

    _gc(svd_loss, M)
    _gc(lambda x: ember.linalg.svd(x, full_matrices=False)[0] @ ember.linalg.svd(x, full_matrices=False)[2], np.conj(M.T).copy())
    _gc(ember.linalg.svdvals, M)
    _gc(ember.linalg.pinv, M)


def test_create_graph_through_solve_and_inv():
    A = t(well_conditioned((3, 3), ember.float64)).requires_grad_()
    (g,) = ember.autograd.grad(ember.linalg.inv(A).sum(), A, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), A)
    assert gg.shape == A.shape and np.isfinite(gg.numpy()).all()


def test_top_level_aliases_and_methods():
    A = t(well_conditioned((3, 3), ember.float64))
    close(ember.det(A), np.linalg.det(A.numpy()), ember.float64)
    close(A.inverse(), np.linalg.inv(A.numpy()), ember.float64)
    close(A.det(), np.linalg.det(A.numpy()), ember.float64)
    S = spd((3, 3), ember.float64)
    close(ember.cholesky(t(S)), np.linalg.cholesky(S), ember.float64)
    U, Sv, V = ember.svd(A)
    close((U.numpy() * Sv.numpy()) @ V.numpy().T, A.numpy(), ember.float64)
    close(ember.logdet(t(S)), np.log(np.linalg.det(S)), ember.float64)
