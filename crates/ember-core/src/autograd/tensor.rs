//! The autograd side of `Tensor`: requires_grad, grad, grad_fn, hooks, backward.
use super::meta::AutogradMeta;
use super::node::{HookHandle, Node, HOOK_ID};
use super::Hook;
use crate::bail;
use crate::error::Result;
use crate::tensor::Tensor;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Tensor {
    /// Whether autograd tracks this tensor (a leaf that requires grad, or a result with a
    /// grad_fn).
    #[inline]
    pub fn requires_grad(&self) -> bool {
        self.0.requires_grad.load(Ordering::Relaxed) || self.base().is_some_and(|b| self.requires_grad_through(b))
    }

    /// A view made in no_grad mode requires grad when its base does, as in PyTorch. Another
    /// view that did not require grad does once a write through another alias of its base gave
    /// the base a history (the view's history is then remade from the base's).
    fn requires_grad_through(&self, base: &Tensor) -> bool {
        base.0.requires_grad.load(Ordering::Relaxed) && (self.is_stale_view() || self.is_no_grad_view())
    }

    pub(crate) fn with_meta<R>(&self, f: impl FnOnce(&mut AutogradMeta) -> R) -> R {
        let mut guard = self.0.autograd.lock().unwrap();
        f(guard.get_or_insert_with(Default::default))
    }

    fn read_meta<R>(&self, f: impl FnOnce(&AutogradMeta) -> R) -> Option<R> {
        self.0.autograd.lock().unwrap().as_deref().map(f)
    }

    /// `requires_grad_(flag)`: only leaves may change it, and only float tensors require grad.
    pub fn set_requires_grad(&self, flag: bool) -> Result<()> {
        if !self.is_leaf() {
            if flag {
                return Ok(());
            }
            bail!(Runtime, "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
        }
        if flag && !self.dtype().is_inexact() {
            bail!(Runtime, "only Tensors of floating point and complex dtype can require gradients");
        }
        self.0.requires_grad.store(flag, Ordering::Relaxed);
        Ok(())
    }

    /// The node that made this tensor. A view whose base was written in place since its
    /// history was made gets a new one first, picking its elements from the base's current
    /// history (PyTorch's `AsStridedBackward0`).
    pub fn grad_fn(&self) -> Option<Arc<Node>> {
        if !self.requires_grad() {
            return None;
        }
        if let Some(base) = self.base().filter(|b| self.is_stale_view() && b.requires_grad()) {
            return Some(super::inplace::remake_view_history(self, base));
        }
        self.read_meta(|m| m.grad_fn.clone()).flatten()
    }

    /// Which output of its grad_fn this tensor is.
    pub fn output_nr(&self) -> usize {
        self.read_meta(|m| m.output_nr).unwrap_or(0)
    }

    /// Whether no recorded op made this tensor (`tensor.is_leaf`).
    pub fn is_leaf(&self) -> bool {
        self.grad_fn().is_none()
    }

    /// Makes `node` (output `nr`) this tensor's history.
    /// A retained gradient follows the tensor to its new history: `.grad` is the gradient of
    /// its latest version, as in PyTorch.
    pub(crate) fn set_history(&self, node: Arc<Node>, nr: usize) {
        let replaced = self.with_meta(|m| {
            m.output_nr = nr;
            let old = m.grad_fn.replace(node.clone());
            if m.retains_grad { old } else { None }
        });
        self.0.requires_grad.store(true, Ordering::Relaxed);
        self.mark_view_current();
        if let Some(old) = replaced {
            old.retained.lock().unwrap().retain(|(_, w)| !std::ptr::eq(w.as_ptr(), Arc::as_ptr(&self.0)));
            node.retained.lock().unwrap().push((nr, Arc::downgrade(&self.0)));
        }
    }

    /// `detach_()`: this tensor becomes a leaf that does not require grad (and, if a view, no
    /// longer follows its base's history).
    pub fn detach_in_place(&self) {
        self.with_meta(|m| m.grad_fn = None);
        self.0.requires_grad.store(false, Ordering::Relaxed);
        self.set_differentiable_view(false);
    }

    /// The leaf's gradient accumulator, made on first use and shared while it lives.
    pub(crate) fn grad_accumulator(&self) -> Arc<Node> {
        self.with_meta(|m| {
            m.accumulator.upgrade().unwrap_or_else(|| {
                let node = Arc::new(Node::accumulator(self));
                m.accumulator = Arc::downgrade(&node);
                node
            })
        })
    }

    /// The accumulator if a live graph uses this leaf (no new one is made).
    pub(crate) fn live_accumulator(&self) -> Option<Arc<Node>> {
        self.read_meta(|m| m.accumulator.upgrade()).flatten()
    }

    /// The accumulated gradient (`.grad`).
    pub fn grad(&self) -> Option<Tensor> {
        self.read_meta(|m| m.grad.clone()).flatten()
    }

    /// Sets (or with `None` clears) `.grad`; it must match this tensor's shape and dtype.
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        if let Some(g) = &grad {
            if g.dtype() != self.dtype() {
                bail!(Runtime, "assigned grad has data of a different type");
            }
            if g.shape() != self.shape() {
                bail!(Runtime, "assigned grad has data of a different size");
            }
        }
        if grad.is_none() && self.0.autograd.lock().unwrap().is_none() {
            return Ok(());
        }
        self.with_meta(|m| m.grad = grad);
        Ok(())
    }

    pub(crate) fn leaf_hooks(&self) -> Vec<Hook> {
        self.read_meta(|m| m.hooks.iter().map(|h| h.1.clone()).collect()).unwrap_or_default()
    }

    /// `retain_grad()`: a non-leaf keeps the gradient that flows into it as its `.grad`.
    pub fn retain_grad(&self) -> Result<()> {
        if !self.requires_grad() {
            bail!(Runtime, "can't retain_grad on Tensor that has requires_grad=False");
        }
        let Some(node) = self.grad_fn() else { return Ok(()) };
        let nr = self.output_nr();
        if self.with_meta(|m| std::mem::replace(&mut m.retains_grad, true)) {
            return Ok(());
        }
        node.retained.lock().unwrap().push((nr, Arc::downgrade(&self.0)));
        Ok(())
    }

    /// Whether `retain_grad` was called on this non-leaf (`tensor.retains_grad`).
    pub fn retains_grad(&self) -> bool {
        self.read_meta(|m| m.retains_grad).unwrap_or(false)
    }

    /// Registers a hook on the gradient of this tensor; it may return a replacement.
    pub fn register_hook(&self, hook: Hook) -> Result<HookHandle> {
        if !self.requires_grad() {
            bail!(Runtime, "cannot register a hook on a tensor that doesn't require gradient");
        }
        if let Some(node) = self.grad_fn() {
            return Ok(node.add_pre_hook(self.output_nr(), hook));
        }
        let id = HOOK_ID.fetch_add(1, Ordering::Relaxed);
        self.with_meta(|m| m.hooks.push((id, hook)));
        Ok(HookHandle::leaf(self, id))
    }

    /// `backward(gradient)`: accumulates the gradient of this tensor with respect to every leaf
    /// of its graph into their `.grad` (only into `inputs`, when given).
    pub fn backward(&self, gradient: Option<Tensor>, retain_graph: bool, create_graph: bool, inputs: Option<&[Tensor]>) -> Result<()> {
        super::engine::backward(std::slice::from_ref(self), &[gradient], retain_graph, create_graph, inputs)
    }
}
