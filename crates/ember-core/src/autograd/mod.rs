//! Reverse-mode automatic differentiation.
//!
//! Each differentiable op states its derivative once, next to its definition: when grad mode
//! is on and one of its inputs requires grad, the op runs its kernel untracked ([`track`]) and
//! [`record`]s a [`Node`] on its result. A node holds the op's backward function, one [`Edge`]
//! per input (to the node that produced it, or to the leaf's gradient accumulator) and the
//! tensors its backward needs, each with the version it had when saved. Backward functions are
//! written with the same differentiable ops, so running them with grad mode on (`create_graph`)
//! records their own graph and higher-order derivatives come for free. [`engine`] runs a graph
//! backwards.
//!
//! Grad mode is per thread, as in PyTorch: [`no_grad`], [`enable_grad`], [`grad_mode`] and
//! [`inference_mode`] return guards that restore the previous mode when dropped.
//!
//! ```
//! use ember_core::ops::binary::{binary, BinaryOp, Operand, Scalar};
//! use ember_core::ops::reduce::{reduce, ReduceOp};
//! use ember_core::{autograd, Tensor};
//!
//! let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3]).unwrap();
//! x.set_requires_grad(true).unwrap();
//! let cube = binary(BinaryOp::Pow, Operand::Tensor(&x), Operand::Scalar(Scalar::Int(3))).unwrap();
//! let y = reduce(ReduceOp::Sum, &cube, None, false, None).unwrap();
//! // dy/dx = 3x², kept differentiable (create_graph) for a second derivative, 6x.
//! let g = autograd::grad(&[y], &[x.clone()], &[None], true, true, false).unwrap().remove(0).unwrap();
//! assert_eq!(g.to_vec::<f64>().unwrap(), vec![3.0, 12.0, 27.0]);
//! let gsum = reduce(ReduceOp::Sum, &g, None, false, None).unwrap();
//! gsum.backward(None, false, false, None).unwrap();
//! assert_eq!(x.grad().unwrap().to_vec::<f64>().unwrap(), vec![6.0, 12.0, 18.0]);
//! ```
pub mod engine;
pub mod forward;
pub mod inplace;
pub(crate) mod meta;
pub mod node;
mod tensor;

pub use engine::{backward, grad};
pub use node::{Ctx, Edge, Hook, HookHandle, Node};

use crate::bail;
use crate::error::Result;
use crate::tensor::Tensor;
use std::borrow::Cow;
use std::cell::Cell;
use std::sync::Arc;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static INFERENCE: Cell<bool> = const { Cell::new(false) };
}

/// Whether ops on this thread record graphs (PyTorch's `is_grad_enabled`).
#[inline]
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

/// Whether inference mode is on for this thread (`torch.is_inference_mode_enabled`).
pub fn is_inference_mode() -> bool {
    INFERENCE.with(Cell::get)
}

/// Sets grad mode on this thread until changed again (prefer the guards).
pub fn set_grad_enabled(on: bool) {
    GRAD_ENABLED.with(|g| g.set(on));
}

/// Sets the inference-mode flag on this thread (prefer [`inference_mode`]).
pub fn set_inference_mode(on: bool) {
    INFERENCE.with(|i| i.set(on));
}

/// Restores the grad and inference modes it found when dropped.
#[must_use = "the mode reverts when the guard is dropped"]
pub struct ModeGuard {
    grad: bool,
    inference: bool,
}

impl Drop for ModeGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.grad));
        INFERENCE.with(|i| i.set(self.inference));
    }
}

fn set_modes(grad: bool, inference: bool) -> ModeGuard {
    let guard = ModeGuard { grad: is_grad_enabled(), inference: is_inference_mode() };
    GRAD_ENABLED.with(|g| g.set(grad));
    INFERENCE.with(|i| i.set(inference));
    guard
}

/// Grad mode `on` until the guard drops (`set_grad_enabled` as a context manager).
pub fn grad_mode(on: bool) -> ModeGuard {
    set_modes(on, is_inference_mode() && !on)
}

/// Grad mode off until the guard drops (`torch.no_grad()`).
pub fn no_grad() -> ModeGuard {
    grad_mode(false)
}

/// Grad mode on until the guard drops (`torch.enable_grad()`).
pub fn enable_grad() -> ModeGuard {
    grad_mode(true)
}

/// Runs kernels that must not be differentiated: no graph recorded, no tangents propagated.
pub fn untracked() -> (ModeGuard, forward::Suspended) {
    (no_grad(), forward::suspend())
}

/// Inference mode: no recording, as `no_grad`. (PyTorch also marks the tensors made inside
/// as unusable by autograd later; Ember does not, so they behave like `no_grad` results.)
pub fn inference_mode(on: bool) -> ModeGuard {
    if on {
        set_modes(false, true)
    } else {
        set_modes(is_grad_enabled(), false)
    }
}

/// True when an op on `inputs` must [`record`]: grad mode is on and an input requires grad, or
/// an input carries a forward-mode tangent. A relaxed load per input and one for the dual
/// level when neither holds, which is all an untracked op pays.
#[inline]
pub fn needs_grad(inputs: &[&Tensor]) -> bool {
    needs_reverse(inputs) || forward::is_dual(inputs)
}

/// True when an op on `inputs` must build its reverse-mode graph.
#[inline]
pub fn needs_reverse(inputs: &[&Tensor]) -> bool {
    inputs.iter().any(|t| t.requires_grad()) && is_grad_enabled()
}

/// Runs an op. When it must record, the kernel runs with grad mode off (so the ops it is built
/// from record nothing of their own) and `attach` records the op's node on the result.
#[inline]
pub fn track<T>(inputs: &[&Tensor], kernel: impl FnOnce() -> Result<T>, attach: impl FnOnce(&T) -> Result<()>) -> Result<T> {
    if !needs_grad(inputs) {
        return kernel();
    }
    let out = {
        let _untracked = untracked();
        kernel()?
    };
    attach(&out)?;
    Ok(out)
}

/// The refusal of an op that has no derivative yet, when an input would need one.
pub fn not_implemented(name: &str, inputs: &[&Tensor]) -> Result<()> {
    if needs_grad(inputs) {
        bail!(Runtime, "derivative for {name} is not implemented");
    }
    Ok(())
}

/// Records the derivative of an op that made `outputs` (fresh tensors) from `inputs`; `saved`
/// are the tensors `backward` reads through `ctx.saved(i)`, in order. Outputs receive the
/// gradient of their own, materialised as zeros where nothing flowed into them. The node goes
/// on the outputs when an input requires grad; when an input has a forward-mode tangent, the
/// outputs get theirs, derived from `backward` (see [`forward`]).
pub fn record(
    name: impl Into<Cow<'static, str>>,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    saved: &[&Tensor],
    backward: impl Fn(&Ctx, &[Tensor]) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static,
) -> Result<()> {
    finish(name.into(), inputs, outputs, saved, materialising(backward), None)
}

/// The rule of an op for its output tangents, given its input tangents (`None`: zero). It runs
/// with tangent propagation off; its results must not depend on the order of evaluation.
pub type JvpFn<'a> = Box<dyn FnOnce(&[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> + 'a>;

/// [`record`] for an op with a forward-mode rule of its own, cheaper than deriving the
/// tangents from `backward`.
pub fn record_with_jvp(
    name: impl Into<Cow<'static, str>>,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    saved: &[&Tensor],
    backward: impl Fn(&Ctx, &[Tensor]) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static,
    jvp: JvpFn<'_>,
) -> Result<()> {
    finish(name.into(), inputs, outputs, saved, materialising(backward), Some(jvp))
}

pub(crate) fn materialising(backward: impl Fn(&Ctx, &[Tensor]) -> Result<Vec<Option<Tensor>>> + Send + Sync + 'static) -> Arc<node::RawBackwardFn> {
    Arc::new(move |ctx: &Ctx, grads: &[Option<Tensor>]| {
        let grads: Vec<Tensor> = grads.iter().zip(ctx.output_shapes()).map(|(g, (shape, dtype, device))| match g {
            Some(g) => Ok(g.clone()),
            None => Tensor::zeros_on(shape, dtype, device),
        }).collect::<Result<_>>()?;
        backward(ctx, &grads)
    })
}

fn finish(name: Cow<'static, str>, inputs: &[&Tensor], outputs: &[&Tensor], saved: &[&Tensor], f: Arc<node::RawBackwardFn>, jvp: Option<JvpFn<'_>>) -> Result<()> {
    let reverse = needs_reverse(inputs);
    let node = if reverse { Some(node::attach(name.clone(), inputs, outputs, saved, f.clone())) } else { None };
    if !forward::is_dual(inputs) {
        return Ok(());
    }
    let tangents = forward::input_tangents(inputs);
    let out_tangents = if let Some(v) = forward::view_tangents(inputs, outputs, &tangents) {
        v
    } else if let Some(rule) = jvp {
        let _quiet = forward::suspend();
        rule(&tangents)?
    } else {
        // The tangents keep their reverse history (reverse-over-forward) when the node is real.
        let node = node.clone().unwrap_or_else(|| Arc::new(node::detached(name, inputs, outputs, saved, f)));
        forward::generic(&node, inputs, &tangents, reverse)?
    };
    forward::set_output_tangents(outputs, out_tangents)?;
    if let Some(node) = node {
        node.share_output_tangents(outputs);
    }
    Ok(())
}

/// [`record`] for backward functions that take missing gradients as `None` (custom functions
/// that choose not to materialise them). Reverse mode only: custom functions state their
/// forward-mode rule themselves.
pub fn record_raw(
    name: impl Into<Cow<'static, str>>,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    saved: &[&Tensor],
    backward: Box<node::RawBackwardFn>,
) -> Result<()> {
    node::attach(name.into(), inputs, outputs, saved, Arc::from(backward));
    Ok(())
}

/// A linear map of tensors, as a kernel (it records nothing itself).
pub type LinearFn = Arc<dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync>;

/// `map(x)` for a linear `map` whose derivative is `adjoint` (gather and scatter, a view and
/// its scatter into zeros, ...). The adjoint is recorded the same way with `map` as its own
/// derivative, so derivatives of every order work. `names`: the node of `map`, the adjoint's.
pub fn linear(names: [&'static str; 2], x: &Tensor, map: LinearFn, adjoint: LinearFn) -> Result<Tensor> {
    track(&[x], || map(x), |out| {
        let (m, a) = (map.clone(), adjoint.clone());
        let jvp: JvpFn = Box::new(|t| Ok(vec![t[0].as_ref().map(|t| map(t)).transpose()?]));
        record_with_jvp(names[0], &[x], &[out], &[], move |_, g| Ok(vec![Some(linear([names[1], names[0]], &g[0], a.clone(), m.clone())?)]), jvp)
    })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod forward_tests;
