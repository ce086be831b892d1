//! Reductions of complex tensors. `sum` and `mean` reduce the float parts (the tensor seen
//! through `view_as_real`), so they share the real kernels and their accumulation (complex32
//! sums in float32); `prod`, `all`, `any` and `count_nonzero` are the backend's complex
//! reductions. Ordering reductions refuse as PyTorch does.
use super::reduce::{out_shape, reduce, ReduceOp};
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// `op` over the dims `mask` marks (already checked by the caller).
pub fn reduce_complex(op: ReduceOp, x: &Tensor, mask: &[bool], keepdim: bool) -> Result<Tensor> {
    let d = x.dtype();
    let out_dtype = match op {
        ReduceOp::All | ReduceOp::Any => DType::Bool,
        ReduceOp::CountNonzero => DType::I64,
        ReduceOp::Amax => bail!(NotImplemented, "\"max_values_cpu\" not implemented for '{}'", d.legacy_name()),
        ReduceOp::Amin => bail!(NotImplemented, "\"min_values_cpu\" not implemented for '{}'", d.legacy_name()),
        _ => d,
    };
    if matches!(op, ReduceOp::Sum | ReduceOp::Mean) {
        return sum_of_parts(op, x, mask, keepdim);
    }
    let out = Tensor::empty_on(&out_shape(x.shape(), mask, keepdim), out_dtype, x.device())?;
    crate::backend::of(x.device())?.reduce(op, x, mask, &out)?;
    Ok(out)
}

/// `sum`/`mean` as the same reduction of the real and imaginary parts.
fn sum_of_parts(op: ReduceOp, x: &Tensor, mask: &[bool], keepdim: bool) -> Result<Tensor> {
    let dims: Vec<i64> = (0..x.ndim()).filter(|&d| mask[d]).map(|d| d as i64).collect();
    if dims.is_empty() {
        // A 0-d input: nothing to reduce.
        return Ok(x.deep_clone()?);
    }
    let parts = super::complex::view_as_real(x)?;
    let r = reduce(op, &parts, Some(&dims), keepdim, None)?;
    super::complex::view_as_complex(&r.contiguous()?)
}
