//! The autograd state of a tensor that autograd deals with (see `Inner::autograd`).
use super::node::{Hook, Node};
use crate::tensor::Tensor;
use std::sync::{Arc, Weak};

#[derive(Default)]
pub(crate) struct AutogradMeta {
    /// The node that made this tensor (`None` for a leaf).
    pub grad_fn: Option<Arc<Node>>,
    /// Which of `grad_fn`'s outputs this tensor is.
    pub output_nr: usize,
    pub grad: Option<Tensor>,
    pub retains_grad: bool,
    /// A leaf's accumulator, shared by every node that uses the leaf while any lives (the
    /// accumulator holds the leaf, so this side is weak).
    pub accumulator: Weak<Node>,
    /// A leaf's hooks; a non-leaf's live on its grad_fn.
    pub hooks: Vec<(u64, Hook)>,
    /// The forward-mode tangent, tagged with the generation of the dual level it was made in.
    pub tangent: Option<(u64, Tensor)>,
}
