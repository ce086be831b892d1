//! Cholesky and QR factorisations.
use super::{check_matrix, each, scratch, stack, Batch, Field, Info, Out};
use faer::traits::math_utils::{conj, mul};
use faer::MatMut;
use crate::error::Result;
use crate::tensor::Tensor;
use crate::with_field;
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch, LltRegularization};
use faer::Mat;

/// `cholesky`: the lower factor `L` of each matrix (read from its lower triangle, as LAPACK's
/// `potrf` with `uplo='L'`); info is the order of the first leading minor that is not positive
/// definite.
pub fn cholesky_kernel(a: &Tensor) -> Result<(Tensor, Info)> {
    check_matrix("linalg.cholesky", a, true)?;
    let a = Batch::new(a);
    let n = a.n;
    let out = Out::new(&a.lead, n, n, a.t.dtype());
    let mut info = Info::new(a.count);
    let codes = info.writer();
    with_field!(a.t.dtype(), T, {
        each(a.count, n * n * n / 3, |i, par| unsafe {
            let mut l: Mat<T> = a.mat::<T>(i).to_owned();
            let mut buf = scratch(cholesky_in_place_scratch::<T>(n, par, Default::default()));
            let none = LltRegularization { dynamic_regularization_delta: 0.0.into(), dynamic_regularization_epsilon: 0.0.into() };
            match cholesky_in_place(l.as_mut(), none, par, stack(&mut buf), Default::default()) {
                Ok(_) => {
                    let mut o = out.mat::<T>(i);
                    for c in 0..n {
                        for r in c..n {
                            o[(r, c)] = l[(r, c)];
                        }
                    }
                }
                Err(faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index }) => *codes.at(i as isize) = index as i32 + 1,
            }
        })
    });
    Ok((out.t, info))
}

/// Moves the phase of each diagonal entry of `R` into the matching column of `Q`, so that the
/// diagonal of `R` is real as LAPACK's is (the QR derivative relies on it).
fn real_diagonal<T: Field>(mut r: MatMut<'_, T>, mut q: Option<MatMut<'_, T>>) {
    if !T::DTYPE.is_complex() {
        return;
    }
    for i in 0..r.nrows().min(r.ncols()) {
        let d = r[(i, i)].to_c128();
        let norm = d.norm();
        if norm == 0.0 {
            continue;
        }
        let phase = T::from_c128(d / norm);
        let back = conj(&phase);
        for c in i..r.ncols() {
            r[(i, c)] = mul(&r[(i, c)], &back);
        }
        if let Some(q) = q.as_mut() {
            for row in 0..q.nrows() {
                q[(row, i)] = mul(&q[(row, i)], &phase);
            }
        }
    }
}

pub fn not_positive_definite(code: i32) -> String {
    format!("The factorization could not be completed because the input is not positive-definite (the leading minor of order {code} is not positive-definite).")
}

/// `qr`: `(Q, R)` for `mode` "reduced" (`Q: m×k`, `R: k×n`, `k = min(m, n)`), "complete"
/// (`Q: m×m`, `R: m×n`) or "r" (`R` only, `Q` empty).
pub fn qr_kernel(a: &Tensor, mode: &str) -> Result<(Tensor, Tensor)> {
    check_matrix("linalg.qr", a, false)?;
    if !matches!(mode, "reduced" | "complete" | "r") {
        crate::bail!(Runtime, "qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'");
    }
    let a = Batch::new(a);
    let (m, n, k) = (a.m, a.n, a.m.min(a.n));
    let rows_r = if mode == "complete" { m } else { k };
    let q = Out::new(&a.lead, if mode == "r" { 0 } else { m }, if mode == "complete" { m } else if mode == "r" { 0 } else { k }, a.t.dtype());
    let r = Out::new(&a.lead, rows_r, n, a.t.dtype());
    with_field!(a.t.dtype(), T, {
        each(a.count, 2 * m * n * k, |i, _| unsafe {
            let f = a.mat::<T>(i).qr();
            let mut ro = r.mat::<T>(i);
            let full = f.R();
            for row in 0..rows_r.min(full.nrows()) {
                for col in row..n {
                    ro[(row, col)] = full[(row, col)];
                }
            }
            let mut qi = q.mat::<T>(i);
            match mode {
                "reduced" => qi.copy_from(f.compute_thin_Q()),
                "complete" => qi.copy_from(f.compute_Q()),
                _ => {}
            }
            real_diagonal(ro, if mode == "r" { None } else { Some(qi) });
        })
    });
    Ok((q.t, r.t))
}
