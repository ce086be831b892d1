//! Reductions of complex tensors. `sum` and `mean` reduce the float parts (the tensor seen
//! through `view_as_real`), so they share the vectorised real kernels and their accumulation
//! (complex32 sums in float32); `prod` folds complex products; `all`/`any`/`count_nonzero` test
//! both parts. Ordering reductions refuse as PyTorch does.
use super::reduce::{out_shape, reduce, ReduceOp};
use crate::backend::cpu::reduce::fold;
use crate::bail;
use crate::dtype::{CFloat, CHalf, DType, Element};
use crate::error::Result;
use crate::tensor::Tensor;
use half::f16;

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
    let out = Tensor::uninit(&out_shape(x.shape(), mask, keepdim), out_dtype)?;
    match (op, d) {
        (ReduceOp::Prod, DType::C32) => {
            let widen = |z: CHalf| CFloat::new(z.re.to_f32(), z.im.to_f32());
            let narrow = |z: CFloat, _| CHalf::new(f16::from_f32(z.re), f16::from_f32(z.im));
            fold::<CHalf, CFloat, CHalf>(x, mask, &out, CFloat::one(), widen, |a, b| a * b, narrow, None)
        }
        (ReduceOp::Prod, _) => crate::with_complex!(d, T, fold::<T, T, T>(x, mask, &out, T::one(), |v| v, |a, b| a * b, |a, _| a, None)),
        (ReduceOp::All, _) => crate::with_complex!(d, T, fold::<T, bool, bool>(x, mask, &out, true, |v| v.is_nonzero(), |a, b| a & b, |a, _| a, None)),
        (ReduceOp::Any, _) => crate::with_complex!(d, T, fold::<T, bool, bool>(x, mask, &out, false, |v| v.is_nonzero(), |a, b| a | b, |a, _| a, None)),
        _ => crate::with_complex!(d, T, fold::<T, i64, i64>(x, mask, &out, 0, |v| v.is_nonzero() as i64, |a, b| a + b, |a, _| a, None)),
    }?;
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
