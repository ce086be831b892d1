//! In-place ops under autograd. An in-place op that must record computes the new contents out
//! of place (recorded like any op, so the tensors it saves keep the versions they had before
//! the write), writes them into the target and makes their history the target's. When the
//! target is a view, its base's history is rewritten too (`CopySlices`): the base's gradient
//! passes through outside the view and goes to the written value inside it. In forward mode
//! the target's tangent becomes the new contents' (written into the tangent it had, so that a
//! view's write reaches its base's tangent).
use super::{forward, is_grad_enabled, record, untracked};
use crate::bail;
use crate::error::Result;
use crate::ops::binary::{binary, BinaryOp, Operand};
use crate::ops::index::{take, take_adjoint};
use crate::ops::overlap;
use crate::ops::view::address_map;
use crate::tensor::Tensor;

/// Runs an in-place op on `dst` whose other operands are `others`: `kernel` writes `dst`
/// directly when nothing is recorded and no operand overlaps `dst` in a way the kernel cannot
/// meet (see `ops::overlap`), else `value` computes the new contents out of place.
pub fn in_place(dst: &Tensor, others: &[&Tensor], kernel: impl FnOnce() -> Result<()>, value: impl FnOnce() -> Result<Tensor>) -> Result<()> {
    let through_copy = overlap::check_write(dst, others)?;
    let tracked = is_grad_enabled() && (dst.requires_grad() || others.iter().any(|t| t.requires_grad()));
    let dual = forward::is_dual(&[dst]) || forward::is_dual(others);
    if !tracked && !dual && !through_copy {
        return kernel();
    }
    if tracked {
        check_writable(dst)?;
    }
    let v = value()?;
    if !tracked {
        let v = if v.dtype() != dst.dtype() { v.to_dtype(dst.dtype()) } else { v };
        // `value` may be a view of an operand (`copy_`'s is), still on `dst`'s memory.
        let v = if v.same_storage(dst) { v.deep_clone() } else { v };
        write(dst, &v)?;
        return forward::assign_in_place(dst, &v);
    }
    if let Some(node) = v.grad_fn() {
        // The write below would invalidate `dst` where the new value's node saved it (mul_,
        // pow_ ...): it keeps a copy of the old contents instead, as PyTorch does.
        node.snapshot_saved(dst);
    }
    let v = if v.dtype() != dst.dtype() { v.to_dtype(dst.dtype()) } else { v };
    if v.shape() != dst.shape() {
        bail!(Runtime, "output with shape {:?} doesn't match the broadcast shape {:?}", dst.shape(), v.shape());
    }
    {
        let _quiet = forward::suspend();
        rebase(dst, &v)?;
    }
    if dual {
        forward::assign_in_place(dst, &v)?;
    }
    Ok(())
}

/// Refuses an out= target when an operand requires grad (PyTorch does not differentiate them).
pub fn check_out(out: &Tensor, inputs: &[&Tensor]) -> Result<()> {
    if is_grad_enabled() && (out.requires_grad() || inputs.iter().any(|t| t.requires_grad())) {
        bail!(Runtime, "functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad.");
    }
    Ok(())
}

/// Runs an elementwise op with `out=`: `kernel` writes `out` directly unless an input overlaps
/// it in a way the kernel cannot meet (see `ops::overlap`); then `value` computes the result
/// out of place and it is copied in.
pub fn out_write(out: &Tensor, inputs: &[&Tensor], kernel: impl FnOnce() -> Result<()>, value: impl FnOnce() -> Result<Tensor>) -> Result<()> {
    check_out(out, inputs)?;
    if !overlap::check_write(out, inputs)? {
        return kernel();
    }
    let v = value()?;
    crate::ops::check_out(out, v.shape(), v.dtype())?;
    out.copy_(&v)
}

/// Refuses to write a leaf that requires grad (or a view of one) while grad mode is on.
pub fn check_writable(dst: &Tensor) -> Result<()> {
    if dst.requires_grad() && dst.is_leaf() {
        bail!(Runtime, "a leaf Variable that requires grad is being used in an in-place operation.");
    }
    if let Some(base) = dst.base() {
        if base.requires_grad() && base.is_leaf() {
            bail!(Runtime, "a view of a leaf Variable that requires grad is being used in an in-place operation.");
        }
    }
    Ok(())
}

/// Writes `value` into `dst` and gives `dst` its history.
fn rebase(dst: &Tensor, value: &Tensor) -> Result<()> {
    if let Some(base) = dst.base() {
        if base.requires_grad() || value.requires_grad() {
            return copy_slices(base, dst, value);
        }
    }
    write(dst, value)?;
    match value.grad_fn() {
        Some(node) => dst.set_history(node, value.output_nr()),
        // A leaf (or a constant) written into `dst`: an identity node carries the gradient to
        // it (to nothing for a constant; the old contents receive none either way).
        None => record("CopyBackwards", &[value], &[dst], &[], |ctx, g| Ok(vec![ctx.needs_input_grad(0).then(|| g[0].clone())]))?,
    }
    Ok(())
}

fn write(dst: &Tensor, value: &Tensor) -> Result<()> {
    let _raw = untracked();
    dst.copy_(value)
}

fn copy_slices(base: &Tensor, view: &Tensor, value: &Tensor) -> Result<()> {
    let idx = address_map(base.layout(), view.layout())?;
    // 1 outside the view, 0 inside: what of the base's gradient passes to its old contents.
    let keep = {
        let _raw = untracked();
        let k = crate::ops::creation::full(base.shape(), crate::ops::binary::Scalar::Int(1), base.dtype())?;
        let flat = k.reshape(&[-1])?;
        crate::ops::index::index_fill_(&flat, 0, &idx.reshape(&[-1])?, &Tensor::scalar(0i64).to_dtype(base.dtype()))?;
        k
    };
    write(view, value)?;
    record("CopySlices", &[base, value], &[base], &[&keep, &idx], move |ctx, g| {
        let old = if ctx.needs_input_grad(0) { Some(binary(BinaryOp::Mul, Operand::Tensor(&g[0]), Operand::Tensor(&ctx.saved(0)?))?) } else { None };
        let new = if ctx.needs_input_grad(1) { Some(take(&g[0], &ctx.saved(1)?)?) } else { None };
        Ok(vec![old, new])
    })?;
    let shape = base.shape().to_vec();
    record("AsStridedBackward0", &[base], &[view], &[&idx], move |ctx, g| Ok(vec![Some(take_adjoint(&g[0], &ctx.saved(0)?, &shape)?)]))
}
