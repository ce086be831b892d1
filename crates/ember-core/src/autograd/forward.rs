//! Forward-mode automatic differentiation (dual tensors).
//!
//! Inside a dual level a tensor may carry a tangent: the directional derivative of its value
//! along the direction given to [`make_dual`]. Every differentiable op goes through
//! [`super::record`], which computes the tangents of its outputs from those of its inputs
//! while the kernel's result is at hand: with the op's own JVP rule where it has one (views,
//! linear maps, the cheap elementwise ops), else generically from its backward function. A
//! backward function `u ↦ Jᴴu` is linear in `u`, so for input tangents `tᵢ` the output
//! tangent is the gradient in `u` of `Σᵢ Re⟨Jᵢᴴu, tᵢ⟩ = Re⟨u, Σᵢ Jᵢtᵢ⟩`: one backward call
//! recorded with grad mode on and one reverse pass through it. Ops without a backward formula
//! have no JVP either and refuse dual inputs the same way.
//!
//! Tangents mirror their primal's memory (same layout, over a storage of the same size), so
//! the tangent of a view is the same view of the tangent, and an in-place op on a view writes
//! the base's tangent as well (see `assign_in_place`).
//!
//! As in PyTorch, one level exists at a time (index 0), shared by all threads, and the
//! tangents made in it are dropped when it exits. Forward mode ignores grad mode: `no_grad`
//! still propagates tangents.
use super::{enable_grad, engine, Ctx, Node};
use crate::bail;
use crate::error::Result;
use crate::ops::binary::{binary, BinaryOp, Operand};
use crate::ops::reduce::{reduce, sum_to, ReduceOp};
use crate::ops::unary::{unary, UnaryOp};
use crate::tensor::{Inner, Tensor};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Whether a dual level exists: the one word ops read when it does not.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Generation of the current level: tangents are tagged with it, so that one made in an exited
/// level is never seen in a later one.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// The tensors given tangents in the current level, whose tangents are freed when it exits.
static DUALS: Mutex<Vec<Weak<Inner>>> = Mutex::new(Vec::new());

thread_local! {
    /// Set while tangents are being computed (and while kernels run), so that the ops doing
    /// that work do not propagate tangents of their own.
    static SUSPENDED: Cell<bool> = const { Cell::new(false) };
}

/// `enter_dual_level`: opens the level and returns its index (always 0: nesting is refused).
pub fn enter_dual_level() -> Result<u64> {
    if ACTIVE.swap(true, Ordering::SeqCst) {
        bail!(Runtime, "Nested forward mode AD is not supported at the moment");
    }
    GENERATION.fetch_add(1, Ordering::SeqCst);
    Ok(0)
}

/// `exit_dual_level`: closes level `level` and drops every tangent made in it.
pub fn exit_dual_level(level: u64) -> Result<()> {
    if !ACTIVE.load(Ordering::SeqCst) || level != 0 {
        bail!(Runtime, "Trying to exit a forward AD level that was not the last one that was created. This is not supported.");
    }
    let duals = std::mem::take(&mut *DUALS.lock().unwrap());
    ACTIVE.store(false, Ordering::SeqCst);
    for inner in duals.iter().filter_map(Weak::upgrade) {
        if let Some(meta) = inner.autograd.lock().unwrap().as_mut() {
            meta.tangent = None;
        }
    }
    Ok(())
}

/// The index of the open level, if any.
pub fn current_level() -> Option<u64> {
    ACTIVE.load(Ordering::Relaxed).then_some(0)
}

fn check_level(level: u64, op: &str) -> Result<()> {
    if current_level() != Some(level) {
        bail!(Runtime, "Invalid level given to {op}");
    }
    Ok(())
}

/// Runs the work of forward mode itself with tangent propagation off until dropped.
#[must_use = "propagation resumes when the guard is dropped"]
pub struct Suspended(bool);

impl Drop for Suspended {
    fn drop(&mut self) {
        SUSPENDED.with(|s| s.set(self.0));
    }
}

/// Tangent propagation off on this thread until the guard drops.
pub(crate) fn suspend() -> Suspended {
    Suspended(SUSPENDED.with(|s| s.replace(true)))
}

/// Turns tangent propagation off (`true`) or back on for this thread; returns the previous
/// state (for bindings that cannot hold a [`Suspended`] guard, such as custom functions).
pub fn set_suspended(on: bool) -> bool {
    SUSPENDED.with(|s| s.replace(on))
}

/// Whether an op on `inputs` must compute tangents. A single relaxed load when no level is open.
#[inline]
pub fn is_dual(inputs: &[&Tensor]) -> bool {
    ACTIVE.load(Ordering::Relaxed) && !SUSPENDED.with(Cell::get) && inputs.iter().any(|t| tangent(t).is_some())
}

/// The tangent of `t` in the open level (`None`: zero).
pub fn tangent(t: &Tensor) -> Option<Tensor> {
    if !ACTIVE.load(Ordering::Relaxed) {
        return None;
    }
    let generation = GENERATION.load(Ordering::Relaxed);
    let meta = t.0.autograd.lock().unwrap();
    match meta.as_deref()?.tangent.as_ref()? {
        (g, tangent) if *g == generation => Some(tangent.clone()),
        _ => None,
    }
}

/// Gives `t` the tangent `tangent`, which must already mirror it.
pub(crate) fn set_tangent(t: &Tensor, tangent: Option<Tensor>) {
    let generation = GENERATION.load(Ordering::Relaxed);
    t.with_meta(|m| m.tangent = tangent.map(|x| (generation, x)));
    let mut duals = DUALS.lock().unwrap();
    // Forget tensors that died, now and then, so that long loops inside a level stay bounded.
    if duals.len() >= 1024 && duals.len().is_power_of_two() {
        duals.retain(|w| w.strong_count() > 0);
    }
    duals.push(Arc::downgrade(&t.0));
}

/// Gives `to` (an alias of `from`) `from`'s tangent, if it has one.
pub(crate) fn set_tangent_if_any(to: &Tensor, from: &Tensor) {
    if let Some(t) = tangent(from) {
        set_tangent(to, Some(t));
    }
}

/// Whether `tangent` is laid out over its storage exactly as `primal` over its own.
fn mirrors(primal: &Tensor, tangent: &Tensor) -> bool {
    tangent.dtype() == primal.dtype() && tangent.layout() == primal.layout() && tangent.storage().bytes() == primal.storage().bytes()
}

/// `tangent` itself when it mirrors `primal`, else a copy of it that does (a fresh storage the
/// size of the primal's, zero outside the primal's elements).
pub(crate) fn mirror(primal: &Tensor, tangent: &Tensor) -> Result<Tensor> {
    if mirrors(primal, tangent) {
        return Ok(tangent.clone());
    }
    let _raw = super::untracked();
    let bytes = primal.storage().bytes();
    let whole = Tensor::zeros(&[bytes / primal.dtype().size()], primal.dtype())?;
    let m = whole.with_layout(primal.layout().clone());
    m.copy_(&tangent.detach())?;
    Ok(m)
}

/// `make_dual`: a view of `primal` whose tangent is `tangent` (its values, cast to the
/// primal's dtype, copied when laid out differently from the primal). Differentiable in
/// reverse mode with respect to `primal`.
pub fn make_dual(primal: &Tensor, tangent: &Tensor, level: u64) -> Result<Tensor> {
    if current_level().is_none() {
        bail!(Runtime, "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first.");
    }
    check_level(level, "_make_dual")?;
    if !primal.dtype().is_inexact() {
        bail!(Value, "Expected primal to be floating point or complex, but got: torch.{}", primal.dtype());
    }
    if !tangent.dtype().is_inexact() {
        bail!(Value, "Expected tangent to be floating point or complex, but got: torch.{}", tangent.dtype());
    }
    if tangent.dtype().is_complex() && !primal.dtype().is_complex() {
        bail!(Runtime, "Expected tangent to be real when the primal is real, but got a {} tangent for a {} primal", tangent.dtype(), primal.dtype());
    }
    if tangent.shape() != primal.shape() {
        bail!(
            Runtime,
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size {:?} while the given forward gradient is of size {:?}.",
            primal.shape(),
            tangent.shape()
        );
    }
    if self::tangent(primal).is_some() {
        bail!(Runtime, "Making a dual Tensor based on a Tensor that already has a forward gradient at the same level {level} is not supported.");
    }
    let dual = alias(primal, "ViewBackward0")?;
    let t = if tangent.dtype() == primal.dtype() { tangent.clone() } else { tangent.to_dtype(primal.dtype())? };
    set_tangent(&dual, Some(mirror(&dual, &t)?));
    Ok(dual)
}

/// `unpack_dual`: the primal (a view of `t` without its tangent, still differentiable in
/// reverse mode) and the tangent, `None` when `t` has none at `level`.
pub fn unpack_dual(t: &Tensor, level: u64) -> Result<(Tensor, Option<Tensor>)> {
    if current_level().is_none() {
        return Ok((t.clone(), None));
    }
    check_level(level, "_fw_primal")?;
    let Some(tan) = tangent(t) else { return Ok((t.clone(), None)) };
    Ok((alias(t, "AliasBackward0")?, Some(tan)))
}

/// A view of `t` with the same layout and no tangent, recorded as an identity in reverse mode.
fn alias(t: &Tensor, name: &'static str) -> Result<Tensor> {
    let out = t.with_layout(t.layout().clone());
    if super::needs_reverse(&[t]) {
        super::node::attach(name.into(), &[t], &[&out], &[], Arc::new(|_: &Ctx, g: &[Option<Tensor>]| Ok(vec![g[0].clone()])));
    }
    Ok(out)
}

/// The tangents of an op's inputs.
pub(crate) fn input_tangents(inputs: &[&Tensor]) -> Vec<Option<Tensor>> {
    inputs.iter().map(|t| tangent(t)).collect()
}

/// Gives `t`, the fresh result of an op outside [`super::record`] (a custom function), its
/// tangent.
pub fn set_result_tangent(t: &Tensor, tangent: &Tensor) -> Result<()> {
    set_output_tangents(&[t], vec![Some(tangent.clone())])
}

/// Gives the op's outputs their tangents.
pub(crate) fn set_output_tangents(outputs: &[&Tensor], tangents: Vec<Option<Tensor>>) -> Result<()> {
    for (out, t) in outputs.iter().zip(tangents) {
        let t = match t {
            Some(t) if t.shape() != out.shape() => bail!(Runtime, "a forward-mode rule returned a tangent of shape {:?} for an output of shape {:?}", t.shape(), out.shape()),
            Some(t) => Some(mirror(out, &t.to_dtype(out.dtype())?)?),
            None => None,
        };
        if t.is_some() {
            set_tangent(out, t);
        }
    }
    Ok(())
}

/// The tangent of a view made by a single-input op: the same view of the input's tangent,
/// when the output shares the input's storage and that tangent mirrors the input.
pub(crate) fn view_tangents(inputs: &[&Tensor], outputs: &[&Tensor], tangents: &[Option<Tensor>]) -> Option<Vec<Option<Tensor>>> {
    let ([input], [out], [Some(t)]) = (inputs, outputs, tangents) else { return None };
    (out.same_storage(input) && mirrors(input, t)).then(|| vec![Some(t.with_dtype_layout(out.dtype(), out.layout().clone()))])
}

/// Output tangents from the op's backward function (`node`'s, its saved tensors at hand): the
/// gradient in the output cotangents `u` of `Σᵢ Re⟨backwardᵢ(u), tᵢ⟩`. `keep_graph`: the
/// tangents keep their reverse-mode history (inputs that require grad, under grad mode).
pub(crate) fn generic(node: &Arc<Node>, inputs: &[&Tensor], tangents: &[Option<Tensor>], keep_graph: bool) -> Result<Vec<Option<Tensor>>> {
    let _quiet = suspend();
    let _record = enable_grad();
    let us = node
        .outputs
        .iter()
        .map(|m| {
            let u = Tensor::zeros_on(&m.shape, m.dtype, m.device)?;
            if m.dtype.is_inexact() {
                u.set_requires_grad(true)?;
            }
            Ok(u)
        })
        .collect::<Result<Vec<_>>>()?;
    let wanted: Vec<bool> = tangents.iter().map(Option::is_some).collect();
    let super::node::Kind::Backward(backward) = &node.kind else { unreachable!("a recorded op's node") };
    let grads = backward(&Ctx { node, wanted: Some(&wanted) }, &us.iter().cloned().map(Some).collect::<Vec<_>>())?;
    let mut total: Option<Tensor> = None;
    for ((g, t), input) in grads.iter().zip(tangents).zip(inputs) {
        let (Some(g), Some(t)) = (g, t) else { continue };
        let term = pairing(&fit(g, input)?, t)?;
        total = Some(match total {
            None => term,
            Some(s) => binary(BinaryOp::Add, Operand::Tensor(&s), Operand::Tensor(&term))?,
        });
    }
    let mut out = vec![None; us.len()];
    let Some(total) = total.filter(Tensor::requires_grad) else { return Ok(out) };
    // Integer outputs (indices) have no tangent.
    let (slots, seeds): (Vec<usize>, Vec<Tensor>) = us.into_iter().enumerate().filter(|(_, u)| u.requires_grad()).unzip();
    let _mode = super::grad_mode(keep_graph);
    for (slot, t) in slots.into_iter().zip(engine::grad(&[total], &seeds, &[None], false, keep_graph, true)?) {
        out[slot] = t;
    }
    Ok(out)
}

/// A backward function's gradient for `input`, summed down from a broadcast shape and cast
/// to the input's dtype (what the engine does before passing it on).
fn fit(g: &Tensor, input: &Tensor) -> Result<Tensor> {
    let g = if g.shape() != input.shape() { sum_to(g, input.shape())? } else { g.clone() };
    Ok(if g.dtype() != input.dtype() { g.to_dtype(input.dtype())? } else { g })
}

/// `Re Σ conj(g)·t`, the real inner product under which backward functions are adjoints.
fn pairing(g: &Tensor, t: &Tensor) -> Result<Tensor> {
    if !g.dtype().is_complex() {
        let p = binary(BinaryOp::Mul, Operand::Tensor(g), Operand::Tensor(t))?;
        return reduce(ReduceOp::Sum, &p, None, false, None);
    }
    let p = binary(BinaryOp::Mul, Operand::Tensor(&unary(UnaryOp::Conj, g)?), Operand::Tensor(t))?;
    crate::ops::complex::real(&reduce(ReduceOp::Sum, &p, None, false, None)?)
}

/// After an in-place op wrote `value` into `dst`: `dst`'s tangent becomes `value`'s. An
/// existing tangent is overwritten in place (so a view's write reaches its base's tangent);
/// a view of a base without a tangent gives the base a zero tangent first.
pub(crate) fn assign_in_place(dst: &Tensor, value: &Tensor) -> Result<()> {
    let new = tangent(value);
    let current = match tangent(dst) {
        Some(t) => t,
        None if new.is_none() => return Ok(()),
        None => {
            let root = dst.base().cloned().unwrap_or_else(|| dst.clone());
            let root_tangent = match tangent(&root) {
                Some(t) => t,
                None => {
                    let z = mirror(&root, &Tensor::zeros(root.shape(), root.dtype())?)?;
                    set_tangent(&root, Some(z.clone()));
                    z
                }
            };
            let t = root_tangent.with_dtype_layout(dst.dtype(), dst.layout().clone());
            set_tangent(dst, Some(t.clone()));
            t
        }
    };
    let _raw = super::untracked();
    match new {
        Some(n) => current.copy_(&n.detach()),
        None => current.copy_(&Tensor::zeros(&[], current.dtype())?),
    }
}
