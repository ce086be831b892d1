//! The differentiable entry points: argument checks, the kernel, and the node that records the
//! derivative (formulas in `ops::grad::linalg`).
use super::{broadcast_pair, check_dtype, check_matrix, inv_message, not_positive_definite, NO_CONVERGENCE, SINGULAR, SVD_NO_CONVERGENCE};
use crate::backend::{self, Backend};
use crate::autograd::{not_implemented, track};
use crate::bail;
use crate::error::Result;
use crate::ops::grad::linalg as grad;
use crate::tensor::Tensor;

fn on(a: &Tensor) -> Result<&'static dyn Backend> {
    backend::of(a.device())
}

fn same_dtype(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() != b.dtype() {
        bail!(Runtime, "{op}: Expected A and B to have the same dtype, but found A of type {} and B of type {} instead", a.dtype().legacy_name(), b.dtype().legacy_name());
    }
    Ok(())
}

/// `solve_ex(A, B)` for matrix `B: [*, n, k]`: `X` and the per-matrix info. Singular input
/// raises unless `check_errors` is false (then `X` holds garbage where info is nonzero).
pub fn solve_ex(a: &Tensor, b: &Tensor, check_errors: bool) -> Result<(Tensor, Tensor)> {
    check_matrix("linalg.solve", a, true)?;
    check_dtype("linalg.solve", b)?;
    same_dtype("linalg.solve", a, b)?;
    let (a, b) = broadcast_pair("linalg.solve", a, b)?;
    let (x, info) = track(&[&a, &b], || backend::serving(&a, [&b])?.solve(&a, &b), |(x, _)| grad::record_solve(&a, &b, x))?;
    if check_errors {
        info.check("torch.linalg.solve", |_| SINGULAR.into())?;
    }
    Ok((x, info.tensor(&a.shape()[..a.ndim() - 2])))
}

/// `torch.linalg.solve`: `X` with `A X = B`, batch dims broadcast; a `LinAlgError` where a
/// matrix is singular.
pub fn solve(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    Ok(solve_ex(a, b, true)?.0)
}

/// `torch.linalg.inv_ex`: the inverse and the int32 `info` per matrix (0, or the 1-based
/// position of a zero pivot); with `check_errors`, a `LinAlgError` for the first failure.
pub fn inv_ex(a: &Tensor, check_errors: bool) -> Result<(Tensor, Tensor)> {
    check_matrix("linalg.inv", a, true)?;
    let (y, info) = track(&[a], || on(a)?.inv(a), |(y, _)| grad::record_inv(a, y))?;
    if check_errors {
        info.check("linalg.inv", inv_message)?;
    }
    Ok((y, info.tensor(&a.shape()[..a.ndim() - 2])))
}

/// `torch.linalg.inv`: a `LinAlgError` where a matrix is singular.
pub fn inv(a: &Tensor) -> Result<Tensor> {
    Ok(inv_ex(a, true)?.0)
}

/// `torch.linalg.det` over the last two dims (square); 0 for a singular matrix.
pub fn det(a: &Tensor) -> Result<Tensor> {
    track(&[a], || Ok(on(a)?.det(a, false)?.0), |d| grad::record_det(a, d))
}

/// `(sign, logabsdet)`.
pub fn slogdet(a: &Tensor) -> Result<(Tensor, Tensor)> {
    track(&[a], || on(a)?.det(a, true), |(s, l)| grad::record_slogdet(a, s, l))
}

fn check_uplo(uplo: &str) -> Result<bool> {
    match uplo {
        "L" | "l" => Ok(true),
        "U" | "u" => Ok(false),
        _ => bail!(Runtime, "Expected UPLO argument to be 'L' or 'U', but got {uplo}"),
    }
}

/// `(eigenvalues, eigenvectors)` of Hermitian matrices, reading the `uplo` triangle.
pub fn eigh(a: &Tensor, uplo: &str) -> Result<(Tensor, Tensor)> {
    let lower = check_uplo(uplo)?;
    let (l, q) = track(&[a], || {
        let (l, q, info) = on(a)?.eigh(a, lower, true)?;
        info.check("linalg.eigh", |_| NO_CONVERGENCE.into())?;
        Ok((l, q.expect("eigenvectors were asked for")))
    }, |(l, q)| grad::record_eigh(a, l, q))?;
    Ok((l, q))
}

/// Eigenvalues of Hermitian matrices; differentiable through `eigh`.
pub fn eigvalsh(a: &Tensor, uplo: &str) -> Result<Tensor> {
    if crate::autograd::needs_grad(&[a]) {
        return Ok(eigh(a, uplo)?.0);
    }
    let (l, _, info) = on(a)?.eigh(a, check_uplo(uplo)?, false)?;
    info.check("linalg.eigvalsh", |_| NO_CONVERGENCE.into())?;
    Ok(l)
}

/// `cholesky_ex`: the lower (or, with `upper`, upper) factor and the info.
pub fn cholesky_ex(a: &Tensor, upper: bool, check_errors: bool) -> Result<(Tensor, Tensor)> {
    let (l, info) = track(&[a], || on(a)?.cholesky(a), |(l, _)| grad::record_cholesky(a, l))?;
    if check_errors {
        info.check("linalg.cholesky", not_positive_definite)?;
    }
    let l = if upper { crate::ops::complex::conj(&l)?.transpose(-2, -1)? } else { l };
    Ok((l, info.tensor(&a.shape()[..a.ndim() - 2])))
}

/// Solves `A X = B` (`left`) or `X A = B` for triangular `A`.
pub fn solve_triangular(a: &Tensor, b: &Tensor, upper: bool, left: bool, unitriangular: bool) -> Result<Tensor> {
    check_matrix("linalg.solve_triangular", a, true)?;
    check_matrix("linalg.solve_triangular", b, false)?;
    same_dtype("linalg.solve_triangular", a, b)?;
    if !left {
        // X A = B  <=>  Aᵀ Xᵀ = Bᵀ, and the transpose swaps the triangle.
        return solve_triangular(&a.transpose(-2, -1)?, &b.transpose(-2, -1)?, !upper, true, unitriangular)?.transpose(-2, -1);
    }
    let (a, b) = broadcast_pair("linalg.solve_triangular", a, b)?;
    track(&[&a, &b], || backend::serving(&a, [&b])?.solve_triangular(&a, &b, upper, unitriangular), |x| grad::record_solve_triangular(&a, &b, x, upper, unitriangular))
}

/// `(Q, R)`; differentiable for "reduced" mode with at least as many rows as columns (and so
/// "complete" on square input).
pub fn qr(a: &Tensor, mode: &str) -> Result<(Tensor, Tensor)> {
    check_matrix("linalg.qr", a, false)?;
    let (m, n) = (a.shape()[a.ndim() - 2], a.shape()[a.ndim() - 1]);
    let differentiable = m >= n && (mode == "reduced" || (mode == "complete" && m == n));
    if !differentiable {
        not_implemented("linalg_qr (only mode='reduced' with rows >= columns)", &[a])?;
        return on(a)?.qr(a, mode);
    }
    track(&[a], || on(a)?.qr(a, mode), |(q, r)| grad::record_qr(a, q, r))
}

/// `(U, S, Vh)`; differentiable for `full_matrices=False` (or square input).
pub fn svd(a: &Tensor, full_matrices: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let square = a.ndim() >= 2 && a.shape()[a.ndim() - 1] == a.shape()[a.ndim() - 2];
    if full_matrices && !square {
        not_implemented("linalg_svd with full_matrices=True on non-square input", &[a])?;
    }
    track(&[a], || {
        let (u, s, vh, info) = on(a)?.svd(a, full_matrices, true)?;
        info.check("linalg.svd", |_| SVD_NO_CONVERGENCE.into())?;
        Ok((u.expect("asked for U"), s, vh.expect("asked for Vh")))
    }, |(u, s, vh)| grad::record_svd(a, u, s, vh))
}

/// Singular values; differentiable through `svd`.
pub fn svdvals(a: &Tensor) -> Result<Tensor> {
    if crate::autograd::needs_grad(&[a]) {
        return Ok(svd(a, false)?.1);
    }
    let (_, s, _, info) = on(a)?.svd(a, false, false)?;
    info.check("linalg.svd", |_| SVD_NO_CONVERGENCE.into())?;
    Ok(s)
}

/// `(eigenvalues, eigenvectors)` of general matrices, complex. Under autograd the eigenvectors
/// are computed even for `eigvals`, since the derivative needs them.
pub fn eig(a: &Tensor, vectors: bool) -> Result<(Tensor, Option<Tensor>)> {
    if crate::autograd::needs_grad(&[a]) {
        let (w, v) = track(&[a], || {
            let (w, v, info) = on(a)?.eig(a, true)?;
            info.check("linalg.eig", |_| NO_CONVERGENCE.into())?;
            Ok((w, v.expect("eigenvectors were asked for")))
        }, |(w, v)| grad::record_eig(a, w, v))?;
        return Ok((w, vectors.then_some(v)));
    }
    let (w, v, info) = on(a)?.eig(a, vectors)?;
    info.check("linalg.eig", |_| NO_CONVERGENCE.into())?;
    Ok((w, v))
}

/// `(LU, pivots, info)`; differentiable for square input.
pub fn lu_factor_ex(a: &Tensor, check_errors: bool) -> Result<(Tensor, Tensor, Tensor)> {
    let square = a.ndim() >= 2 && a.shape()[a.ndim() - 1] == a.shape()[a.ndim() - 2];
    if !square {
        not_implemented("linalg_lu_factor_ex on non-square input", &[a])?;
    }
    let (lu, piv, info) = track(&[a], || on(a)?.lu_factor(a), |(lu, piv, _)| grad::record_lu_factor(a, lu, piv))?;
    if check_errors {
        info.check("torch.linalg.lu_factor_ex", |c| format!("U[{c},{c}] is zero and using it on lu_solve would result in a division by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"))?;
    }
    Ok((lu, piv, info.tensor(&a.shape()[..a.ndim() - 2])))
}
