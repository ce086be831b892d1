//! LU with partial pivoting and what is built on it: `solve`, `inv`, `det`, `slogdet`,
//! `lu_factor`/`lu_solve`, and triangular solves.
use crate::ops::linalg::check_matrix;
use super::{each, scratch, stack, Batch, Field, Out};
use crate::ops::linalg::Info;
use crate::dtype::{CDouble, DType};
use faer::reborrow::ReborrowMut;
use crate::error::Result;
use crate::tensor::Tensor;
use crate::with_field;
use faer::linalg::lu::partial_pivoting::factor::{lu_in_place, lu_in_place_scratch};
use faer::linalg::triangular_solve as tri;
use faer::{Mat, MatMut, MatRef, Par};

/// One matrix's LU factors (column-major, L unit-lower below the diagonal, U on and above), its
/// row permutation (`perm[i]`: the source row of row `i`) and the parity of its transpositions.
pub struct Lu<T: Field> {
    pub lu: Mat<T>,
    pub perm: Vec<usize>,
    pub odd: bool,
}

impl<T: Field> Lu<T> {
    pub fn new(a: MatRef<'_, T>, par: Par) -> Lu<T> {
        let (m, n) = (a.nrows(), a.ncols());
        let mut lu = a.to_owned();
        let (mut fwd, mut bwd) = (vec![0usize; m], vec![0usize; m]);
        let mut buf = scratch(lu_in_place_scratch::<usize, T>(m, n, par, Default::default()));
        let (info, perm) = lu_in_place(lu.as_mut(), &mut fwd, &mut bwd, par, stack(&mut buf), Default::default());
        let perm = perm.arrays().0.to_vec();
        let lu = Lu { lu, perm, odd: info.transposition_count % 2 == 1 };
        if lu.zero_pivot() != 0 {
            // faer divides the column below a zero pivot by it, so every later entry is NaN.
            return Lu::singular(a);
        }
        lu
    }

    /// LAPACK's unblocked `getf2` (in complex128): a zero pivot column is skipped, so the factors
    /// of a singular matrix are finite and its `det` is 0.
    fn singular(a: MatRef<'_, T>) -> Lu<T> {
        let (m, n) = (a.nrows(), a.ncols());
        let mut w: Vec<CDouble> = (0..m * n).map(|k| a[(k % m, k / m)].to_c128()).collect();
        let at = |i: usize, j: usize| i + j * m;
        let (mut perm, mut swaps): (Vec<usize>, usize) = ((0..m).collect(), 0);
        for j in 0..m.min(n) {
            let abs1 = |z: CDouble| z.re.abs() + z.im.abs();
            let p = (j..m).fold(j, |best, i| if abs1(w[at(i, j)]) > abs1(w[at(best, j)]) { i } else { best });
            let pivot = w[at(p, j)];
            if pivot == CDouble::new(0.0, 0.0) {
                continue;
            }
            if p != j {
                (0..n).for_each(|k| w.swap(at(p, k), at(j, k)));
                perm.swap(p, j);
                swaps += 1;
            }
            for i in j + 1..m {
                w[at(i, j)] /= pivot;
            }
            for k in j + 1..n {
                let u = w[at(j, k)];
                for i in j + 1..m {
                    let l = w[at(i, j)];
                    w[at(i, k)] -= l * u;
                }
            }
        }
        let lu = Mat::from_fn(m, n, |i, j| T::from_c128(w[at(i, j)]));
        Lu { lu, perm, odd: swaps % 2 == 1 }
    }

    /// 1-based index of the first exactly-zero pivot of U (LAPACK's `info`), 0 when none.
    pub fn zero_pivot(&self) -> i32 {
        let k = self.lu.nrows().min(self.lu.ncols());
        (0..k).find(|&i| self.lu[(i, i)] == T::zero()).map_or(0, |i| i as i32 + 1)
    }

    /// Solves `A X = B` in place (`b`: n × k).
    pub fn solve_in_place(&self, mut b: MatMut<'_, T>, par: Par) {
        let permuted = Mat::from_fn(b.nrows(), b.ncols(), |i, j| b[(self.perm[i], j)]);
        b.copy_from(&permuted);
        tri::solve_unit_lower_triangular_in_place(self.lu.as_ref(), b.rb_mut(), par);
        tri::solve_upper_triangular_in_place(self.lu.as_ref(), b, par);
    }

    /// `(sign, log|det|)` with the sign of unit modulus (0 for a singular matrix).
    pub fn slogdet(&self) -> (CDouble, f64) {
        let mut sign = CDouble::new(if self.odd { -1.0 } else { 1.0 }, 0.0);
        let mut log = 0.0;
        for i in 0..self.lu.nrows() {
            let u = self.lu[(i, i)].to_c128();
            let r = u.norm();
            if r == 0.0 {
                return (CDouble::new(0.0, 0.0), f64::NEG_INFINITY);
            }
            sign *= u / r;
            log += r.ln();
        }
        (sign, log)
    }

    /// `det` as a product, so that it underflows and overflows as LAPACK-based ones do.
    pub fn det(&self) -> CDouble {
        let mut d = CDouble::new(if self.odd { -1.0 } else { 1.0 }, 0.0);
        for i in 0..self.lu.nrows() {
            d *= self.lu[(i, i)].to_c128();
        }
        d
    }
}

fn flops(n: usize, k: usize) -> usize {
    n * n * (n + k)
}

/// `A X = B` for `A: [*, n, n]`, `B: [*, n, k]` (batch dims already broadcast to the same shape):
/// `X` and the info (1-based zero pivot).
pub fn solve_kernel(a: &Tensor, b: &Tensor) -> Result<(Tensor, Info)> {
    let (a, b) = (Batch::new(a)?, Batch::new(b)?);
    let out = Out::new(&b.lead, b.m, b.n, b.t.dtype())?;
    let mut info = Info::new(a.count);
    let codes = info.writer();
    with_field!(a.t.dtype(), T, {
        each(a.count, flops(a.n, b.n), |i, par| unsafe {
            let lu = Lu::<T>::new(a.mat::<T>(i), par);
            let mut x = out.mat::<T>(i);
            x.copy_from(b.mat::<T>(i));
            let code = lu.zero_pivot();
            *codes.at(i as isize) = code;
            if code == 0 {
                lu.solve_in_place(x, par);
            }
        })
    });
    Ok((out.t, info))
}



/// `inv(A)`: the solve against the identity; info is the zero pivot.
pub fn inv_kernel(a: &Tensor) -> Result<(Tensor, Info)> {
    let n = a.shape()[a.ndim() - 1];
    let eye = crate::ops::creation::eye(n, n, a.dtype())?.broadcast_to(a.shape())?;
    solve_kernel(a, &eye)
}


/// `det` (`log = false`) or `(sign, logabsdet)` of each matrix.
pub fn det_kernel(a: &Tensor, log: bool) -> Result<(Tensor, Tensor)> {
    check_matrix(if log { "linalg.slogdet" } else { "linalg.det" }, a, true)?;
    let a = Batch::new(a)?;
    let mut signs = vec![CDouble::new(0.0, 0.0); a.count];
    let mut logs = vec![0.0f64; a.count];
    let (ps, pl) = (crate::backend::cpu::map::Ptr(signs.as_mut_ptr()), crate::backend::cpu::map::Ptr(logs.as_mut_ptr()));
    with_field!(a.t.dtype(), T, {
        each(a.count, flops(a.n, 0), |i, par| unsafe {
            let lu = Lu::<T>::new(a.mat::<T>(i), par);
            if log {
                let (s, l) = lu.slogdet();
                (*ps.at(i as isize), *pl.at(i as isize)) = (s, l);
            } else {
                *ps.at(i as isize) = lu.det();
            }
        })
    });
    let dtype = a.t.dtype();
    let first = Tensor::from_vec(signs, &a.lead)?.to_dtype(if dtype.is_complex() { dtype } else { DType::F64 })?.to_dtype(dtype)?;
    Ok((first, Tensor::from_vec(logs, &a.lead)?.to_dtype(dtype.to_real())?))
}

/// `lu_factor`: packed LU factors and 1-based int32 pivots (LAPACK's convention), and the info.
pub fn lu_factor_kernel(a: &Tensor) -> Result<(Tensor, Tensor, Info)> {
    check_matrix("torch.linalg.lu_factor", a, false)?;
    let a = Batch::new(a)?;
    let k = a.m.min(a.n);
    let out = Out::new(&a.lead, a.m, a.n, a.t.dtype())?;
    let mut pivots = vec![0i32; a.count * k];
    let piv = crate::backend::cpu::map::Ptr(pivots.as_mut_ptr());
    let mut info = Info::new(a.count);
    let codes = info.writer();
    with_field!(a.t.dtype(), T, {
        each(a.count, flops(k, a.n), |i, par| unsafe {
            let lu = Lu::<T>::new(a.mat::<T>(i), par);
            out.mat::<T>(i).copy_from(lu.lu.as_ref());
            *codes.at(i as isize) = lu.zero_pivot();
            for (j, p) in transpositions(&lu.perm, k).into_iter().enumerate() {
                *piv.at((i * k + j) as isize) = p as i32 + 1;
            }
        })
    });
    let mut pshape = a.lead.clone();
    pshape.push(k);
    Ok((out.t, Tensor::from_vec(pivots, &pshape)?, info))
}

/// The row swaps (`step j swaps rows j and t[j]`) that produce the permutation `perm`.
fn transpositions(perm: &[usize], k: usize) -> Vec<usize> {
    let mut rows: Vec<usize> = (0..perm.len()).collect(); // rows[i]: original row now at i
    let mut at: Vec<usize> = (0..perm.len()).collect(); // at[r]: where original row r now is
    let mut swaps = Vec::with_capacity(k);
    for j in 0..k {
        let t = at[perm[j]];
        swaps.push(t);
        let (rj, rt) = (rows[j], rows[t]);
        rows.swap(j, t);
        at[rj] = t;
        at[rt] = j;
    }
    swaps
}

/// Solves `op(A) X = B` for triangular `A` (`upper`, unit diagonal when `unit`); `B: [*, n, k]`
/// with batch dims matching `A`'s.
pub fn solve_triangular_kernel(a: &Tensor, b: &Tensor, upper: bool, unit: bool) -> Result<Tensor> {
    let (a, b) = (Batch::new(a)?, Batch::new(b)?);
    let out = Out::new(&b.lead, b.m, b.n, b.t.dtype())?;
    with_field!(a.t.dtype(), T, {
        each(a.count, a.n * a.n * b.n, |i, par| unsafe {
            let (t, mut x) = (a.mat::<T>(i), out.mat::<T>(i));
            x.copy_from(b.mat::<T>(i));
            match (upper, unit) {
                (true, false) => tri::solve_upper_triangular_in_place(t, x, par),
                (true, true) => tri::solve_unit_upper_triangular_in_place(t, x, par),
                (false, false) => tri::solve_lower_triangular_in_place(t, x, par),
                (false, true) => tri::solve_unit_lower_triangular_in_place(t, x, par),
            }
        })
    });
    Ok(out.t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solve_recovers_a_known_solution() {
        let a = Tensor::from_vec(vec![4.0f64, 1.0, 2.0, 3.0], &[2, 2]).unwrap();
        let b = Tensor::from_vec(vec![6.0f64, 8.0], &[2, 1]).unwrap();
        let (x, info) = solve_kernel(&a, &b).unwrap();
        assert!(info.check("solve", |_| String::new()).is_ok());
        let x = x.to_vec::<f64>().unwrap();
        assert!((x[0] - 1.0).abs() < 1e-12 && (x[1] - 2.0).abs() < 1e-12, "{x:?}");
    }

    #[test]
    fn singular_matrix_reports_its_zero_pivot_per_batch_element() {
        let a = Tensor::from_vec(vec![1.0f32, 0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 4.0], &[2, 2, 2]).unwrap();
        let (_, info) = inv_kernel(&a).unwrap();
        let err = info.check("linalg.inv", crate::ops::linalg::inv_message).unwrap_err();
        assert_eq!(err.message, "linalg.inv: (Batch element 1): The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular.");
    }

    #[test]
    fn slogdet_of_a_permuted_matrix_has_negative_sign() {
        let a = Tensor::from_vec(vec![0.0f64, 2.0, 3.0, 0.0], &[2, 2]).unwrap();
        let (sign, log) = det_kernel(&a, true).unwrap();
        assert_eq!(sign.to_vec::<f64>().unwrap(), vec![-1.0]);
        assert!((log.to_vec::<f64>().unwrap()[0] - 6f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn lu_pivots_are_lapack_style_swaps() {
        assert_eq!(transpositions(&[2, 0, 1], 3), vec![2, 2, 2]);
        assert_eq!(transpositions(&[0, 1, 2], 3), vec![0, 1, 2]);
    }
}
