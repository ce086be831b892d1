//! Op families, one file each.
mod arith;
pub mod binary;
pub mod complex;
pub mod complex_binary;
mod complex_reduce;
pub mod complex_unary;
pub mod conv;
pub mod creation;
pub mod embedding;
pub mod fft;
pub mod linalg;
pub(crate) mod grad;
pub mod index;
pub mod join;
pub mod loss;
pub mod matmul;
pub mod nn;
pub mod overlap;
pub mod pad;
pub mod pool;
pub mod random;
pub mod reduce;
pub mod resize;
pub mod scan;
pub mod sort;
pub mod unary;
pub mod view;

use crate::bail;
use crate::dtype::{Category, DType};
use crate::error::Result;
use crate::tensor::Tensor;

/// PyTorch's `can_cast`: never to a lower category (float to int, int to bool).
pub fn can_cast(from: DType, to: DType) -> bool {
    from.category() <= to.category() || (to.category() == Category::Float && from.is_float())
}

/// Checks an `out=` (or in-place) target for a result of `shape` and `dtype`.
pub fn check_out(out: &Tensor, shape: &[usize], dtype: DType) -> Result<()> {
    if out.shape() != shape {
        bail!(Runtime, "output with shape {:?} doesn't match the broadcast shape {shape:?}", out.shape());
    }
    check_cast(dtype, out)
}

/// Refuses to write a result of `dtype` into `out` when PyTorch's `can_cast` says no.
pub fn check_cast(dtype: DType, out: &Tensor) -> Result<()> {
    if !can_cast(dtype, out.dtype()) {
        bail!(Runtime, "result type {} can't be cast to the desired output type {}", dtype, out.dtype());
    }
    Ok(())
}
