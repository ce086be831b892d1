//! Cholesky and QR factorisations.
use crate::ops::linalg::check_matrix;
use super::{each, scratch, stack, Batch, Field, Out};
use crate::ops::linalg::Info;
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
    let a = Batch::new(a)?;
    let n = a.n;
    let out = Out::new(&a.lead, n, n, a.t.dtype())?;
    let mut info = Info::new(a.count);
    let codes = info.writer();
    with_field!(a.t.dtype(), T, {
        each(a.count, n * n * n / 3, |i, par| unsafe {
            let mut l: Mat<T> = a.mat::<T>(i).to_owned();
            let mut buf = scratch(cholesky_in_place_scratch::<T>(n, par, Default::default()));
            let none = LltRegularization { dynamic_regularization_delta: 0.0, dynamic_regularization_epsilon: 0.0 };
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
/// diagonal of `R` is real, with LAPACK's signs (the QR derivative relies on a real diagonal).
fn real_diagonal<T: Field>(mut r: MatMut<'_, T>, mut q: Option<MatMut<'_, T>>, rows: usize) {
    if !T::DTYPE.is_complex() {
        return;
    }
    for i in 0..r.nrows().min(r.ncols()) {
        let d = r[(i, i)].to_c128();
        let norm = d.norm();
        if norm == 0.0 {
            continue;
        }
        // faer's diagonal is `-phase(α)·‖x‖` for the leading entry α of each Householder step,
        // LAPACK's `-sign(Re α)·‖x‖`, so the sign of the real part carries over; on the last row
        // of a square or wide matrix faer reflects nothing (the entry is α itself) while LAPACK
        // still reflects a non-real α.
        let last = i + 1 == rows;
        let flip = if last { d.im != 0.0 && d.re >= 0.0 || d.im == 0.0 && d.re < 0.0 } else { d.re < 0.0 };
        let phase = T::from_c128(d / if flip { -norm } else { norm });
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


/// `qr`: `(Q, R)` for `mode` "reduced" (`Q: m×k`, `R: k×n`, `k = min(m, n)`), "complete"
/// (`Q: m×m`, `R: m×n`) or "r" (`R` only, `Q` empty).
pub fn qr_kernel(a: &Tensor, mode: &str) -> Result<(Tensor, Tensor)> {
    check_matrix("linalg.qr", a, false)?;
    if !matches!(mode, "reduced" | "complete" | "r") {
        crate::bail!(Runtime, "qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'");
    }
    let a = Batch::new(a)?;
    let (m, n, k) = (a.m, a.n, a.m.min(a.n));
    let rows_r = if mode == "complete" { m } else { k };
    let q = Out::new(&a.lead, if mode == "r" { 0 } else { m }, if mode == "complete" { m } else if mode == "r" { 0 } else { k }, a.t.dtype())?;
    let r = Out::new(&a.lead, rows_r, n, a.t.dtype())?;
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
            real_diagonal(ro, if mode == "r" { None } else { Some(qi) }, m);
        })
    });
    Ok((q.t, r.t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_reports_the_failing_leading_minor() {
        let a = Tensor::from_vec(vec![4.0f64, 2.0, 2.0, 1.0], &[2, 2]).unwrap();
        let (_, info) = cholesky_kernel(&a).unwrap();
        assert_eq!(info.tensor(&[]).to_vec::<i32>().unwrap(), vec![2]);
        let spd = Tensor::from_vec(vec![4.0f64, 2.0, 2.0, 5.0], &[2, 2]).unwrap();
        let (l, _) = cholesky_kernel(&spd).unwrap();
        assert_eq!(l.to_vec::<f64>().unwrap(), vec![2.0, 0.0, 1.0, 2.0]);
    }

    #[test]
    fn complex_qr_has_a_real_diagonal() {
        use crate::dtype::CDouble;
        let a = Tensor::from_vec(vec![CDouble::new(1.0, 2.0), CDouble::new(0.5, 0.0), CDouble::new(0.0, -1.0), CDouble::new(3.0, 1.0)], &[2, 2]).unwrap();
        let (_, r) = qr_kernel(&a, "reduced").unwrap();
        let r = r.to_vec::<CDouble>().unwrap();
        assert!(r[0].im.abs() < 1e-12 && r[3].im.abs() < 1e-12 && r[2].norm() == 0.0, "{r:?}");
        // LAPACK's sign: minus the sign of the real part of the column's leading entry (1 + 2i).
        assert!(r[0].re < 0.0);
    }
}
