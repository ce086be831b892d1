//! Singular value decomposition (`svd`, `svdvals`): singular values non-increasing.
use crate::ops::linalg::check_matrix;
use super::{each, real_tensor, scratch, stack, Batch, Out};
use crate::ops::linalg::Info;
use crate::dtype::Element;
use crate::error::Result;
use crate::backend::cpu::map::Ptr;
use crate::tensor::Tensor;
use crate::with_field;
use faer::linalg::svd::{self, ComputeSvdVectors};
use faer::diag::Diag;
use faer::Mat;

/// `(U, S, Vh)` (`U`, `Vh` only when `vectors`; `m×m`, `n×n` when `full`, else `m×k`, `k×n`).
pub fn svd_kernel(a: &Tensor, full: bool, vectors: bool) -> Result<(Option<Tensor>, Tensor, Option<Tensor>, Info)> {
    check_matrix(if vectors { "linalg.svd" } else { "linalg.svdvals" }, a, false)?;
    let a = Batch::new(a)?;
    let (m, n, k) = (a.m, a.n, a.m.min(a.n));
    let (ucols, vrows) = if full { (m, n) } else { (k, k) };
    let u = vectors.then(|| Out::new(&a.lead, m, ucols, a.t.dtype())).transpose()?;
    let vh = vectors.then(|| Out::new(&a.lead, vrows, n, a.t.dtype())).transpose()?;
    let mut values = vec![0.0f64; a.count * k];
    let pv = Ptr(values.as_mut_ptr());
    let mut info = Info::new(a.count);
    let codes = info.writer();
    let how = match (vectors, full) {
        (false, _) => ComputeSvdVectors::No,
        (true, true) => ComputeSvdVectors::Full,
        (true, false) => ComputeSvdVectors::Thin,
    };
    with_field!(a.t.dtype(), T, {
        each(a.count, 12 * m * n * k, |i, par| unsafe {
            let mut s = Diag::<T>::zeros(k);
            let mut uu = vectors.then(|| Mat::<T>::zeros(m, ucols));
            let mut vv = vectors.then(|| Mat::<T>::zeros(n, vrows));
            let mut buf = scratch(svd::svd_scratch::<T>(m, n, how, how, par, Default::default()));
            let done = svd::svd(a.mat::<T>(i), s.as_mut(), uu.as_mut().map(|x| x.as_mut()), vv.as_mut().map(|x| x.as_mut()), par, stack(&mut buf), Default::default());
            if done.is_err() {
                *codes.at(i as isize) = 1;
                return;
            }
            for j in 0..k {
                *pv.at((i * k + j) as isize) = s.column_vector()[j].to_c128().re;
            }
            if let (Some(uo), Some(uu)) = (&u, &uu) {
                uo.mat::<T>(i).copy_from(uu.as_ref());
            }
            if let (Some(vo), Some(vv)) = (&vh, &vv) {
                vo.mat::<T>(i).copy_from(vv.as_ref().adjoint());
            }
        })
    });
    let mut shape = a.lead.clone();
    shape.push(k);
    Ok((u.map(|o| o.t), real_tensor(values, &shape, a.t.dtype().to_real())?, vh.map(|o| o.t), info))
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn singular_values_of_a_diagonal_matrix_are_sorted() {
        let a = Tensor::from_vec(vec![1.0f32, 0.0, 0.0, 0.0, -3.0, 0.0], &[2, 3]).unwrap();
        let (u, s, vh, _) = svd_kernel(&a, false, true).unwrap();
        assert_eq!(s.to_vec::<f32>().unwrap(), vec![3.0, 1.0]);
        assert_eq!((u.unwrap().shape().to_vec(), vh.unwrap().shape().to_vec()), (vec![2, 2], vec![2, 3]));
    }
}
