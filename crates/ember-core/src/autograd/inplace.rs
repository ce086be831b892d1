//! In-place ops under autograd. An in-place op that must record computes the new contents out
//! of place (recorded like any op, so the tensors it saves keep the versions they had before
//! the write), writes them into the target and makes their history the target's. When the
//! target is a view, its base's history is rewritten too (`CopySlices`): the base's gradient
//! passes through outside the view and goes to the written value inside it. Every view of the
//! base (the target included) is then stale: its history is remade from the base's when next
//! used (`remake_view_history`), as are those of views made before a write to the base
//! itself. In forward mode the target's tangent becomes the new contents' (written into the
//! tangent it had, so that a view's write reaches its base's tangent).
use super::node::{self, Node};
use super::{forward, is_grad_enabled, materialising, record, untracked};
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::binary::{binary, BinaryOp, Operand, Scalar};
use crate::ops::complex::{view_as_complex, view_as_real};
use crate::ops::index::{take, take_adjoint};
use crate::ops::overlap;
use crate::ops::view::address_map;
use crate::tensor::Tensor;
use std::borrow::Cow;
use std::sync::{Arc, Mutex};

/// Runs an in-place op on `dst` whose other operands are `others`: `kernel` writes `dst`
/// directly when nothing is recorded and no operand overlaps `dst` in a way the kernel cannot
/// meet (see `ops::overlap`), else `value` computes the new contents out of place.
pub fn in_place(dst: &Tensor, others: &[&Tensor], kernel: impl FnOnce() -> Result<()>, value: impl FnOnce() -> Result<Tensor>) -> Result<()> {
    let through_copy = overlap::check_write(dst, others)?;
    // A view of a base that requires grad is written with autograd even when the view itself
    // is not tracked (made in no_grad mode: `check_writable` refuses it, as PyTorch).
    let tracked = is_grad_enabled() && (dst.requires_grad() || dst.base().is_some_and(Tensor::requires_grad) || others.iter().any(|t| t.requires_grad()));
    let dual = forward::is_dual(&[dst]) || forward::is_dual(others);
    if !tracked && !dual && !through_copy {
        return kernel();
    }
    if tracked {
        check_writable(dst)?;
    }
    let v = value()?;
    if !tracked {
        let v = if v.dtype() != dst.dtype() { v.to_dtype(dst.dtype())? } else { v };
        // `value` may be a view of an operand (`copy_`'s is), still on `dst`'s memory.
        let v = if v.same_storage(dst) { v.deep_clone()? } else { v };
        write(dst, &v)?;
        return forward::assign_in_place(dst, &v);
    }
    if let Some(node) = v.grad_fn() {
        // The write below would invalidate `dst` where the new value's node saved it (mul_,
        // pow_ ...): it keeps a copy of the old contents instead, as PyTorch does.
        node.snapshot_saved(dst)?;
    }
    let v = if v.dtype() != dst.dtype() { v.to_dtype(dst.dtype())? } else { v };
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

const NO_GRAD_VIEW_WRITE: &str = "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).";

/// Refuses to write a leaf that requires grad (or a view of one) while grad mode is on.
pub fn check_writable(dst: &Tensor) -> Result<()> {
    if dst.is_no_grad_view() {
        bail!(Runtime, "{NO_GRAD_VIEW_WRITE}");
    }
    if dst.requires_grad() && dst.is_leaf() {
        bail!(Runtime, "a leaf Variable that requires grad is being used in an in-place operation.");
    }
    if let Some((function, k)) = dst.multi_output() {
        bail!(Runtime, "Output {k} of {function} is a view and is being modified inplace. This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.");
    }
    if let Some(base) = dst.base() {
        if base.requires_grad() && base.is_leaf() {
            bail!(Runtime, "a view of a leaf Variable that requires grad is being used in an in-place operation.");
        }
        if !dst.is_differentiable_view() {
            bail!(Runtime, "{NO_GRAD_VIEW_WRITE}");
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

/// Rewrites the base's history for a write of `value` into `view`: the base's old contents
/// keep their gradient outside the view, `value` gets it inside. The view's own history is
/// remade from the new base history when next used.
fn copy_slices(base: &Tensor, view: &Tensor, value: &Tensor) -> Result<()> {
    let map = Arc::new(ViewMap::new(base, view));
    map.positions()?;
    write(view, value)?;
    record("CopySlices", &[base, value], &[base], &[], move |ctx, g| {
        let old = if ctx.needs_input_grad(0) { Some(map.outside(&g[0])?) } else { None };
        let new = if ctx.needs_input_grad(1) { Some(map.to_view(&g[0])?) } else { None };
        Ok(vec![old, new])
    })
}

/// The history of a view whose base was written (directly or through another view) after
/// the view's history was made: its elements, picked from the base's current history.
/// `view`'s history becomes the returned node.
pub(crate) fn remake_view_history(view: &Tensor, base: &Tensor) -> Arc<Node> {
    let map = ViewMap::new(base, view);
    let f = materialising(move |_, g| Ok(vec![Some(map.to_base(&g[0])?)]));
    node::attach(Cow::Borrowed("AsStridedBackward0"), &[base], &[view], &[], f)
}

/// Where a view's elements lie in its base, to move gradients between the two. A view that
/// sees complex numbers as pairs of floats (`view_as_real`, `real`, `imag`), or floats as
/// complex numbers, is mapped in float units: its complex side is seen through
/// `view_as_real`. The element map is found on first use (a graph may never run).
struct ViewMap {
    base: Layout,
    view: Layout,
    /// The base is complex and the view real: the base's gradients are mapped as floats.
    base_floats: bool,
    /// The view is complex and the base real.
    view_floats: bool,
    /// Dtypes that no complex reinterpretation relates.
    unrelated: Option<(DType, DType)>,
    positions: Mutex<Option<Tensor>>,
}

impl ViewMap {
    fn new(base: &Tensor, view: &Tensor) -> ViewMap {
        let (b, v) = (base.dtype(), view.dtype());
        let base_floats = b.is_complex() && !v.is_complex() && b.to_real() == v;
        let view_floats = v.is_complex() && !b.is_complex() && v.to_real() == b;
        let unrelated = (b != v && !base_floats && !view_floats).then_some((b, v));
        ViewMap {
            base: if base_floats { as_floats(base.layout()) } else { base.layout().clone() },
            view: if view_floats { as_floats(view.layout()) } else { view.layout().clone() },
            base_floats,
            view_floats,
            unrelated,
            positions: Mutex::new(None),
        }
    }

    /// For each element of the view (in units), the flat index of the base's element there (a
    /// CPU tensor: the gradients' users move it to their device).
    fn positions(&self) -> Result<Tensor> {
        if let Some((b, v)) = self.unrelated {
            bail!(Runtime, "derivative for a {v} view of a {b} tensor is not implemented");
        }
        let mut p = self.positions.lock().unwrap();
        if p.is_none() {
            *p = Some(address_map(&self.base, &self.view)?);
        }
        Ok(p.clone().unwrap())
    }

    /// The base's gradient for the view's gradient `g`: `g` where the view's elements lie,
    /// zero elsewhere.
    fn to_base(&self, g: &Tensor) -> Result<Tensor> {
        let g = if self.view_floats { view_as_real(g)? } else { g.clone() };
        let gb = take_adjoint(&g, &self.positions()?.to_device(g.device())?, self.base.shape())?;
        if self.base_floats { view_as_complex(&gb) } else { Ok(gb) }
    }

    /// The view's part of the base's gradient `g`.
    fn to_view(&self, g: &Tensor) -> Result<Tensor> {
        let g = if self.base_floats { view_as_real(g)? } else { g.clone() };
        let gv = take(&g, &self.positions()?.to_device(g.device())?)?;
        if self.view_floats { view_as_complex(&gv) } else { Ok(gv) }
    }

    /// The base's gradient `g` with the view's elements zeroed.
    fn outside(&self, g: &Tensor) -> Result<Tensor> {
        let g = if self.base_floats { view_as_real(g)? } else { g.clone() };
        let keep = {
            let _raw = untracked();
            let dtype = g.dtype().to_real();
            let k = crate::ops::creation::full_on(g.shape(), Scalar::Int(1), dtype, g.device())?;
            let positions = self.positions()?.to_device(g.device())?;
            crate::ops::index::index_fill_(&k.reshape(&[-1])?, 0, &positions.reshape(&[-1])?, &Tensor::scalar(0i64).to_dtype(dtype)?)?;
            k
        };
        let out = binary(BinaryOp::Mul, Operand::Tensor(&g), Operand::Tensor(&keep))?;
        if self.base_floats { view_as_complex(&out) } else { Ok(out) }
    }
}

/// A complex layout seen as pairs of floats (`view_as_real`'s layout).
fn as_floats(l: &Layout) -> Layout {
    let mut shape = l.shape().to_vec();
    shape.push(2);
    let mut strides: Vec<isize> = l.strides().iter().map(|s| s * 2).collect();
    strides.push(1);
    Layout::new(shape, strides, l.offset() * 2)
}
