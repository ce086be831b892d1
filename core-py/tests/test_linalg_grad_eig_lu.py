"""Gradients of linalg.eig/eigvals (gauge-invariant losses, since each eigenvector's phase is
arbitrary) and of lu_factor (and so lu_solve): gradcheck on float64/complex128, parity with
torch.autograd where installed, and the refusals."""
import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

rng = np.random.default_rng(3)
DTYPES = [ember.float64, ember.complex128]


def rand(shape, dtype):
    x = rng.standard_normal(shape)
    if dtype.is_complex:
        x = x + 1j * rng.standard_normal(shape)
    return x


def separated_spectrum(n, dtype, batch=()):
    """A non-normal matrix with well-separated eigenvalues (so eig is smooth there)."""
    V = rand(batch + (n, n), dtype) + 2 * np.eye(n)
    w = np.arange(1, n + 1) * 1.5 + (0.7j * np.arange(n) if dtype.is_complex else 0)
    return V @ (w[..., :, None] * np.linalg.inv(V))


def _gc(fn, *inputs):
    xs = tuple(ember.from_numpy(np.ascontiguousarray(x)).requires_grad_() for x in inputs)
    assert gradcheck(fn, xs, eps=1e-6, atol=1e-5, rtol=1e-4)


def _eig_invariant(x):
    """Eigenvalues, and the spectral projector onto the first eigenvector (phase-free)."""
    w, V = ember.linalg.eig(x)
    W = ember.linalg.inv(V)
    return w, V[..., :, :1] @ W[..., :1, :], (V.abs() ** 2).sum(-2)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gradcheck_eig_and_eigvals(dtype):
    A = separated_spectrum(3, dtype, (2,))
    _gc(_eig_invariant, A)
    _gc(ember.linalg.eigvals, A)


def test_eig_of_a_real_matrix_with_complex_eigenvalues():
    A = np.array([[0.0, -2.0, 0.3], [1.0, 0.5, 0.0], [0.2, 0.1, 3.0]])
    _gc(lambda x: ember.linalg.eigvals(x).abs(), A)
    x = ember.from_numpy(A).requires_grad_()
    ember.linalg.eigvals(x).real.sum().backward()
    assert x.grad.dtype == ember.float64
    np.testing.assert_allclose(x.grad.numpy(), np.eye(3), atol=1e-10)  # d trace / dA


def test_eig_gradients_match_torch():
    torch = pytest.importorskip("torch")
    for dtype in DTYPES:
        A = separated_spectrum(4, dtype)
        x, tx = ember.from_numpy(A).requires_grad_(), torch.from_numpy(A).requires_grad_()
        gw, gV = rand((4,), ember.complex128), rand((4, 4), ember.complex128)

        def loss(w, V, lib):
            # |V| and the eigenvalues do not depend on the eigenvectors' phases.
            return (w * lib.from_numpy(gw)).real.sum() + (V.abs() * lib.from_numpy(gV.real)).sum()

        w, V = ember.linalg.eig(x)
        loss(w, V, ember).backward()
        tw, tV = torch.linalg.eig(tx)
        loss(tw, tV, torch).backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_eig_refuses_a_phase_dependent_loss():
    x = ember.from_numpy(separated_spectrum(3, ember.complex128)).requires_grad_()
    _, V = ember.linalg.eig(x)
    with pytest.raises(RuntimeError, match="phase"):
        V[0, 0].real.backward()


@pytest.mark.parametrize("dtype", DTYPES)
def test_gradcheck_lu_factor_and_lu_solve(dtype):
    A = rand((2, 4, 4), dtype)  # pivoting happens on random input
    B = rand((2, 4, 2), dtype)
    _gc(lambda a: ember.linalg.lu_factor(a).LU, A)
    _gc(lambda a, b: ember.linalg.lu_solve(*ember.linalg.lu_factor(a), b), A, B)
    _gc(lambda a, b: ember.linalg.lu_solve(*ember.linalg.lu_factor(a), b, adjoint=True, left=False), A, B.swapaxes(-1, -2))


def test_lu_factor_gradient_matches_torch():
    torch = pytest.importorskip("torch")
    A, G = rand((3, 5, 5), ember.complex128), rand((3, 5, 5), ember.complex128)
    x, tx = ember.from_numpy(A).requires_grad_(), torch.from_numpy(A).requires_grad_()
    ember.linalg.lu_factor(x).LU.backward(ember.from_numpy(G))
    torch.linalg.lu_factor(tx).LU.backward(torch.from_numpy(G))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_lu_factor_of_non_square_input_has_no_derivative_yet():
    x = ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]], dtype=ember.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for linalg_lu_factor_ex on non-square input is not implemented"):
        ember.linalg.lu_factor(x)
    with ember.no_grad():
        assert ember.linalg.lu_factor(x).LU.shape == (3, 2)
