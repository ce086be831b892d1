//! Reductions of complex host memory: `prod`, `all`, `any` and `count_nonzero` (`sum` and
//! `mean` reduce the float parts, in `ops::complex_reduce`).
use super::{narrow, widen};
use crate::backend::cpu::reduce::fold;
use crate::dtype::{CFloat, CHalf, DType, Element};
use crate::error::Result;
use crate::ops::reduce::ReduceOp;
use crate::tensor::Tensor;

/// `prod` (complex32 widened to complex64 while it folds), `all`, `any` and `count_nonzero` of
/// a complex tensor.
pub fn reduce(op: ReduceOp, x: &Tensor, mask: &[bool], out: &Tensor) -> Result<()> {
    let d = x.dtype();
    match (op, d) {
        (ReduceOp::Prod, DType::C32) => {
            fold::<CHalf, CFloat, CHalf>(x, mask, out, CFloat::one(), widen, |a, b| a * b, |z, _| narrow(z), None)
        }
        (ReduceOp::Prod, _) => crate::with_complex!(d, T, fold::<T, T, T>(x, mask, out, T::one(), |v| v, |a, b| a * b, |a, _| a, None)),
        (ReduceOp::All, _) => crate::with_complex!(d, T, fold::<T, bool, bool>(x, mask, out, true, |v| v.is_nonzero(), |a, b| a & b, |a, _| a, None)),
        (ReduceOp::Any, _) => crate::with_complex!(d, T, fold::<T, bool, bool>(x, mask, out, false, |v| v.is_nonzero(), |a, b| a | b, |a, _| a, None)),
        _ => crate::with_complex!(d, T, fold::<T, i64, i64>(x, mask, out, 0, |v| v.is_nonzero() as i64, |a, b| a + b, |a, _| a, None)),
    }
}
