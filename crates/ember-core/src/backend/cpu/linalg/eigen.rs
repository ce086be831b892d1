//! Eigendecompositions: `eigh`/`eigvalsh` (Hermitian, ascending real eigenvalues, reading one
//! triangle as LAPACK does) and `eig`/`eigvals` (general, complex results).
use crate::ops::linalg::check_matrix;
use super::{each, real_tensor, scratch, stack, Batch, Field, Out};
use crate::ops::linalg::Info;
use crate::dtype::{CDouble, Element};
use crate::error::Result;
use crate::backend::cpu::map::Ptr;
use crate::tensor::Tensor;
use crate::with_field;
use faer::linalg::evd::{self, ComputeEigenvectors};
use faer::diag::Diag;
use faer::{Mat, MatRef};

/// The Hermitian matrix whose `lower` (else upper) triangle is that of `a` (the imaginary part of
/// the diagonal is dropped, as LAPACK does).
fn hermitian_from<T: Field>(a: MatRef<'_, T>, lower: bool) -> Mat<T> {
    use faer::traits::math_utils::{conj, from_real, real};
    let n = a.nrows();
    Mat::from_fn(n, n, |i, j| match (i == j, if lower { i > j } else { i < j }) {
        (true, _) => from_real(&real(&a[(i, i)])),
        (false, true) => a[(i, j)],
        (false, false) => conj(&a[(j, i)]),
    })
}

/// `eigh`: eigenvalues `[*, n]` (real dtype) and, when `vectors`, eigenvectors `[*, n, n]`.
pub fn eigh_kernel(a: &Tensor, lower: bool, vectors: bool) -> Result<(Tensor, Option<Tensor>, Info)> {
    check_matrix(if vectors { "linalg.eigh" } else { "linalg.eigvalsh" }, a, true)?;
    let a = Batch::new(a)?;
    let n = a.n;
    let out = vectors.then(|| Out::new(&a.lead, n, n, a.t.dtype())).transpose()?;
    let mut values = vec![0.0f64; a.count * n];
    let pv = Ptr(values.as_mut_ptr());
    let mut info = Info::new(a.count);
    let codes = info.writer();
    with_field!(a.t.dtype(), T, {
        each(a.count, 9 * n * n * n, |i, par| unsafe {
            let h = hermitian_from(a.mat::<T>(i), lower);
            let mut s = Diag::<T>::zeros(n);
            let want = if vectors { ComputeEigenvectors::Yes } else { ComputeEigenvectors::No };
            let mut buf = scratch(evd::self_adjoint_evd_scratch::<T>(n, want, par, Default::default()));
            // faer's divide and conquer and its Householder back-transform run on columns: a
            // column-major scratch, copied into the row-major output once at the end, is much
            // faster than handing it the output itself.
            let mut u = vectors.then(|| Mat::<T>::zeros(n, n));
            let done = evd::self_adjoint_evd(h.as_ref(), s.as_mut(), u.as_mut().map(|u| u.as_mut()), par, stack(&mut buf), Default::default());
            if done.is_err() {
                *codes.at(i as isize) = 1;
            }
            if let (Some(o), Some(u)) = (out.as_ref(), u.as_ref()) {
                o.mat::<T>(i).copy_from(u.as_ref());
            }
            for j in 0..n {
                *pv.at((i * n + j) as isize) = s.column_vector()[j].to_c128().re;
            }
        })
    });
    let mut shape = a.lead.clone();
    shape.push(n);
    Ok((real_tensor(values, &shape, a.t.dtype().to_real())?, out.map(|o| o.t), info))
}


/// `eig`: complex eigenvalues `[*, n]` and unit-norm eigenvectors `[*, n, n]` (when `vectors`).
pub fn eig_kernel(a: &Tensor, vectors: bool) -> Result<(Tensor, Option<Tensor>, Info)> {
    check_matrix(if vectors { "linalg.eig" } else { "linalg.eigvals" }, a, true)?;
    let a = Batch::new(a)?;
    let n = a.n;
    let cdtype = a.t.dtype().to_complex();
    let mut values = vec![CDouble::new(0.0, 0.0); a.count * n];
    let mut vecs = vec![CDouble::new(0.0, 0.0); if vectors { a.count * n * n } else { 0 }];
    let (pv, pe) = (Ptr(values.as_mut_ptr()), Ptr(vecs.as_mut_ptr()));
    let mut info = Info::new(a.count);
    let codes = info.writer();
    with_field!(a.t.dtype(), T, {
        each(a.count, 25 * n * n * n, |i, _| unsafe {
            let m = a.mat::<T>(i);
            match m.eigen() {
                Ok(e) => {
                    for j in 0..n {
                        let s = e.S()[j];
                        *pv.at((i * n + j) as isize) = CDouble::new(s.re.to_f64(), s.im.to_f64());
                    }
                    if vectors {
                        unit_columns(e.U(), |r, c, z| *pe.at((i * n * n + r * n + c) as isize) = z);
                    }
                }
                Err(_) => *codes.at(i as isize) = 1,
            }
        })
    });
    let mut shape = a.lead.clone();
    shape.push(n);
    let w = Tensor::from_vec(values, &shape)?.to_dtype(cdtype)?;
    shape.push(n);
    let v = if vectors { Some(Tensor::from_vec(vecs, &shape)?.to_dtype(cdtype)?) } else { None };
    Ok((w, v, info))
}

/// Writes the columns of `u` scaled to unit 2-norm (LAPACK's normalisation of eigenvectors).
fn unit_columns<R: Element>(u: MatRef<'_, num_complex::Complex<R>>, mut put: impl FnMut(usize, usize, CDouble)) {
    for c in 0..u.ncols() {
        let col: Vec<CDouble> = (0..u.nrows()).map(|r| CDouble::new(u[(r, c)].re.to_f64(), u[(r, c)].im.to_f64())).collect();
        let norm = col.iter().map(|z| z.norm_sqr()).sum::<f64>().sqrt();
        let scale = if norm > 0.0 { 1.0 / norm } else { 1.0 };
        for (r, z) in col.into_iter().enumerate() {
            put(r, c, z * scale);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eigh_of_a_symmetric_matrix_is_ascending_and_reads_one_triangle() {
        // [[2, 1], [1, 2]] has eigenvalues 1 and 3; the upper entry 99 is not read with UPLO=L.
        let a = Tensor::from_vec(vec![2.0f64, 99.0, 1.0, 2.0], &[2, 2]).unwrap();
        let (l, q, info) = eigh_kernel(&a, true, true).unwrap();
        assert!(info.check("eigh", |_| String::new()).is_ok());
        let l = l.to_vec::<f64>().unwrap();
        assert!((l[0] - 1.0).abs() < 1e-12 && (l[1] - 3.0).abs() < 1e-12, "{l:?}");
        let q = q.unwrap().to_vec::<f64>().unwrap();
        assert!((q[0].abs() - 0.5f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn eig_of_a_rotation_is_a_conjugate_pair() {
        let a = Tensor::from_vec(vec![0.0f32, -1.0, 1.0, 0.0], &[2, 2]).unwrap();
        let (w, _, _) = eig_kernel(&a, false).unwrap();
        let mut im: Vec<f32> = w.to_vec::<crate::dtype::CFloat>().unwrap().iter().map(|z| z.im).collect();
        im.sort_by(|a, b| a.partial_cmp(b).unwrap());
        assert_eq!(im, vec![-1.0, 1.0]);
    }
}
