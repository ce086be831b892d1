//! Cumulative ops along one dim: cumsum, cumprod, logcumsumexp, cummax and cummin. Each row is
//! a serial chain, so the parallelism is over rows (read through the input's own strides).
use super::sort::{is_nan, Rows};
use crate::backend::cpu::map::Ptr;
use crate::dtype::{CDouble, Element};
use crate::ops::scan::ScanOp;
use crate::tensor::Tensor;
use crate::with_dtype;

/// log(exp(a) + exp(b)) without overflow; equal infinities (where a - b is NaN) stay themselves.
fn log_add_exp(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if a == b {
        return a + std::f64::consts::LN_2;
    }
    let (hi, lo) = if a > b { (a, b) } else { (b, a) };
    hi + ((lo - hi).exp() + 1.0).ln()
}

/// Runs `out[k] = step(acc, x[k])` along every row of `x` into `out` (same shape).
fn scan_rows<T: Element, A: Copy + Send + Sync, O: Element>(
    x: &Tensor,
    out: &Tensor,
    d: usize,
    init: A,
    load: impl Fn(T) -> A + Sync,
    step: impl Fn(A, A) -> A + Sync,
    store: impl Fn(A) -> O + Sync,
) {
    let rows = Rows::new([x, out], d);
    let n = x.shape()[d];
    let (px, po) = (Ptr(x.data_ptr::<T>()), Ptr(out.data_ptr::<O>()));
    let [sx, so] = rows.steps;
    rows.for_each(n, |_, [bx, bo]| unsafe {
        let mut acc = init;
        for k in 0..n as isize {
            acc = step(acc, load(*px.at(bx + k * sx)));
            *po.at(bo + k * so) = store(acc);
        }
    });
}

/// The complex `log(exp(a) + exp(b))`: the operand with the larger real part factored out, as
/// PyTorch does, so the imaginary part is the plain sum of phases (not wrapped to (-π, π]).
fn log_add_exp_complex(a: CDouble, b: CDouble) -> CDouble {
    if a.is_nan() || b.is_nan() {
        return CDouble::new(f64::NAN, f64::NAN);
    }
    let (hi, lo) = if a.re >= b.re { (a, b) } else { (b, a) };
    if lo.re == f64::NEG_INFINITY {
        return hi;
    }
    hi + ((lo - hi).exp() + 1.0).ln()
}

/// `out` = the running `op` of `xs` along `d` (see `Backend::scan`): booleans and integers
/// accumulate in int64, floats in f64, complex numbers in complex128, as PyTorch's CPU kernels.
pub fn scan(op: ScanOp, xs: &Tensor, d: usize, out: &Tensor) {
    let in_dtype = xs.dtype();
    if in_dtype.is_complex() {
        let (init, step): (CDouble, fn(CDouble, CDouble) -> CDouble) = match op {
            ScanOp::Sum => (CDouble::new(0.0, 0.0), |a, b| a + b),
            ScanOp::Prod => (CDouble::new(1.0, 0.0), |a, b| a * b),
            ScanOp::LogSumExp => (CDouble::new(f64::NEG_INFINITY, 0.0), log_add_exp_complex),
        };
        crate::with_complex!(in_dtype, T, scan_rows::<T, CDouble, T>(xs, out, d, init, |v| v.to_c128(), step, T::from_c128));
    } else if in_dtype.is_float() {
        let (init, step): (f64, fn(f64, f64) -> f64) = match op {
            ScanOp::Sum => (0.0, |a, b| a + b),
            ScanOp::Prod => (1.0, |a, b| a * b),
            ScanOp::LogSumExp => (f64::NEG_INFINITY, log_add_exp),
        };
        with_dtype!(in_dtype, T, scan_rows::<T, f64, T>(xs, out, d, init, |v| v.to_f64(), step, T::from_f64));
    } else {
        let (init, step): (i64, fn(i64, i64) -> i64) = match op {
            ScanOp::Prod => (1, i64::wrapping_mul),
            _ => (0, i64::wrapping_add),
        };
        with_dtype!(in_dtype, T, scan_rows::<T, i64, i64>(xs, out, d, init, |v| v.to_i64(), step, |a| a));
    }
}

/// The running extreme of `xs` along `d` and where it was taken (see `Backend::cum_extreme`).
pub fn cum_extreme(xs: &Tensor, d: usize, max: bool, values: &Tensor, indices: &Tensor) {
    let rows = Rows::new([xs, values, indices], d);
    let n = xs.shape()[d];
    with_dtype!(xs.dtype(), T, {
        let (px, pv, pi) = (Ptr(xs.data_ptr::<T>()), Ptr(values.data_ptr::<T>()), Ptr(indices.data_ptr::<i64>()));
        let [sx, sv, si] = rows.steps;
        let takes_over = |v: T, best: T| is_nan(&v) || if max { v >= best } else { v <= best };
        rows.for_each(n, |_, [bx, bv, bi]| unsafe {
            if n == 0 {
                return;
            }
            let (mut best, mut at) = (*px.at(bx), 0i64);
            for k in 0..n as isize {
                let v = *px.at(bx + k * sx);
                if !is_nan(&best) && takes_over(v, best) {
                    best = v;
                    at = k as i64;
                }
                *pv.at(bv + k * sv) = best;
                *pi.at(bi + k * si) = at;
            }
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_add_exp_edges() {
        assert_eq!(log_add_exp(f64::NEG_INFINITY, 0.0), 0.0);
        assert_eq!(log_add_exp(f64::NEG_INFINITY, f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert_eq!(log_add_exp(f64::INFINITY, f64::INFINITY), f64::INFINITY);
        assert!(log_add_exp(f64::NAN, 1.0).is_nan());
        assert!((log_add_exp(1.0, 2.0) - (1f64.exp() + 2f64.exp()).ln()).abs() < 1e-12);
    }

    #[test]
    fn complex_log_add_exp_keeps_the_phase_sum_unwrapped() {
        let z = log_add_exp_complex(CDouble::new(0.0, 3.0), CDouble::new(f64::NEG_INFINITY, 0.0));
        assert_eq!(z, CDouble::new(0.0, 3.0));
        let w = log_add_exp_complex(CDouble::new(1.0, 0.5), CDouble::new(1.0, 0.5));
        assert!((w - CDouble::new(1.0 + std::f64::consts::LN_2, 0.5)).norm() < 1e-12);
    }
}
