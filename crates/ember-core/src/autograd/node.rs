//! Graph nodes: one per recorded op (its backward function, the edges to its inputs' nodes and
//! its saved tensors) or per leaf that requires grad (the gradient accumulator).
use crate::bail;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::{Inner, Tensor};
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// A tensor hook: sees the gradient flowing into a tensor and may replace it.
pub type Hook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// A backward function that takes missing output gradients as `None`.
pub type RawBackwardFn = dyn Fn(&Ctx, &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> + Send + Sync;

/// Where a gradient goes: output `input_nr` of `node` (PyTorch's name: it is the node's input
/// in the backward direction).
#[derive(Clone)]
pub struct Edge {
    /// The node that receives the gradient.
    pub node: Arc<Node>,
    /// Which of that node's gradient inputs (its forward output) this is.
    pub input_nr: usize,
}

/// Shape, dtype and device a gradient must have.
pub(crate) struct Meta {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub device: Device,
}

impl Meta {
    fn of(t: &Tensor) -> Meta {
        Meta { shape: t.shape().to_vec(), dtype: t.dtype(), device: t.device() }
    }
}

pub(crate) enum Kind {
    Backward(Arc<RawBackwardFn>),
    /// Adds the gradient into the leaf's `.grad`.
    Accumulate(Tensor),
}

/// One recorded op of the backward graph (PyTorch's `grad_fn`, a `torch.autograd.graph.Node`):
/// its backward function, the edges to its inputs' nodes, and its hooks.
pub struct Node {
    name: Cow<'static, str>,
    /// Creation order. A node's edges always point at older nodes, so running nodes from the
    /// newest down is a topological order.
    pub(crate) seq: u64,
    pub(crate) next: Vec<Option<Edge>>,
    /// What each input's gradient must look like (the engine sums broadcast gradients down
    /// and casts them to it).
    pub(crate) inputs: Vec<Meta>,
    pub(crate) outputs: Vec<Meta>,
    pub(crate) kind: Kind,
    saved: Mutex<Vec<SavedTensor>>,
    /// Hooks of non-leaf tensors this node made: (output, id, hook).
    pub(crate) pre_hooks: Mutex<Vec<(usize, u64, Hook)>>,
    /// Non-leaf outputs whose `.grad` is kept (`retain_grad`).
    pub(crate) retained: Mutex<Vec<(usize, Weak<Inner>)>>,
}

static SEQ: AtomicU64 = AtomicU64::new(0);
pub(crate) static HOOK_ID: AtomicU64 = AtomicU64::new(0);

impl Node {
    fn new(name: Cow<'static, str>, next: Vec<Option<Edge>>, inputs: Vec<Meta>, outputs: Vec<Meta>, kind: Kind, saved: Vec<SavedTensor>) -> Node {
        Node {
            name,
            seq: SEQ.fetch_add(1, Ordering::Relaxed),
            next,
            inputs,
            outputs,
            kind,
            saved: Mutex::new(saved),
            pre_hooks: Mutex::new(Vec::new()),
            retained: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn accumulator(leaf: &Tensor) -> Node {
        Node::new(Cow::Borrowed("AccumulateGrad"), vec![], vec![], vec![Meta::of(leaf)], Kind::Accumulate(leaf.clone()), vec![])
    }

    /// PyTorch's class name of the node: `AddBackward0`, `AccumulateGrad`, ...
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The edges to the nodes of this node's inputs (`None` for inputs that need no gradient).
    pub fn next_edges(&self) -> &[Option<Edge>] {
        &self.next
    }

    /// The leaf a gradient accumulator writes to.
    pub fn variable(&self) -> Option<&Tensor> {
        match &self.kind {
            Kind::Accumulate(t) => Some(t),
            Kind::Backward(_) => None,
        }
    }

    /// Frees the saved tensors (after a backward pass that does not retain the graph).
    pub(crate) fn release(&self) {
        for s in self.saved.lock().unwrap().iter_mut() {
            s.data = None;
        }
    }

    /// Replaces saved inputs that are `t` itself by a copy of its current contents (with its
    /// history, for create_graph), before an in-place write to `t`.
    pub(crate) fn snapshot_saved(&self, t: &Tensor) -> Result<()> {
        let mut saved = self.saved.lock().unwrap();
        for s in saved.iter_mut().filter(|s| s.output_nr.is_none()) {
            if s.data.as_ref().is_some_and(|d| Arc::ptr_eq(&d.0, &t.0)) {
                let copy = t.deep_clone()?;
                s.version = copy.version();
                s.data = Some(copy);
            }
        }
        Ok(())
    }

    /// Gives the saved copies of the outputs the tangents the outputs got after this node was
    /// recorded (forward-over-reverse differentiates through them).
    pub(crate) fn share_output_tangents(&self, outputs: &[&Tensor]) {
        for s in self.saved.lock().unwrap().iter() {
            if let (Some(nr), Some(d)) = (s.output_nr, &s.data) {
                super::forward::set_tangent_if_any(d, outputs[nr]);
            }
        }
    }

    pub(crate) fn add_pre_hook(self: &Arc<Self>, output_nr: usize, hook: Hook) -> HookHandle {
        let id = HOOK_ID.fetch_add(1, Ordering::Relaxed);
        self.pre_hooks.lock().unwrap().push((output_nr, id, hook));
        HookHandle { target: HookTarget::Node(Arc::downgrade(self)), id }
    }
}

/// Frees the graph behind a node without recursing: a chain of 200,000 ops would otherwise
/// free node by node, each inside the last one's `drop`, and overflow the stack. The nodes
/// and tensors whose last handle this node holds are taken apart in a loop instead (as
/// PyTorch's `deleteNode`); what others still hold is only released.
impl Drop for Node {
    fn drop(&mut self) {
        let mut parts = Parts::default();
        parts.take_from(self);
        parts.free();
    }
}

/// Graph pieces waiting to be freed.
#[derive(Default)]
struct Parts {
    nodes: Vec<Arc<Node>>,
    tensors: Vec<Tensor>,
}

impl Parts {
    /// Moves out what a node holds that can lead on to other nodes.
    fn take_from(&mut self, node: &mut Node) {
        self.nodes.extend(node.next.drain(..).flatten().map(|e| e.node));
        let saved = node.saved.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.tensors.extend(saved.drain(..).filter_map(|s| s.data));
    }

    fn free(&mut self) {
        loop {
            if let Some(node) = self.nodes.pop() {
                if let Ok(mut node) = Arc::try_unwrap(node) {
                    self.take_from(&mut node);
                }
            } else if let Some(t) = self.tensors.pop() {
                if let Some((meta, base)) = t.into_last_parts() {
                    self.tensors.extend(base);
                    if let Some(mut meta) = meta {
                        self.nodes.extend(meta.grad_fn.take());
                        self.tensors.extend(meta.grad.take());
                        self.tensors.extend(meta.tangent.take().map(|t| t.1));
                    }
                }
            } else {
                return;
            }
        }
    }
}

/// What a backward function sees besides the gradients.
pub struct Ctx<'a> {
    pub(crate) node: &'a Arc<Node>,
    /// Forward mode: the inputs whose tangents are wanted (they replace `needs_input_grad`).
    pub(crate) wanted: Option<&'a [bool]>,
}

impl Ctx<'_> {
    /// Saved tensor `i`, checked against in-place changes since it was saved.
    pub fn saved(&self, i: usize) -> Result<Tensor> {
        let saved = self.node.saved.lock().unwrap();
        saved[i].unpack(self.node)
    }

    /// Whether input `i` takes a gradient (others may return `None`).
    pub fn needs_input_grad(&self, i: usize) -> bool {
        if let Some(wanted) = self.wanted {
            return wanted.get(i).copied().unwrap_or(false);
        }
        self.node.next.get(i).is_some_and(|e| e.is_some())
    }

    /// Shape, dtype and device of each output (what its gradient has).
    pub fn output_shapes(&self) -> impl Iterator<Item = (&[usize], DType, Device)> {
        self.node.outputs.iter().map(|m| (m.shape.as_slice(), m.dtype, m.device))
    }

    /// The node's name, as PyTorch's `grad_fn.name()` (`MulBackward0`).
    pub fn name(&self) -> &str {
        &self.node.name
    }
}

/// A tensor a backward function needs, with the version it had when saved.
pub(crate) struct SavedTensor {
    /// `None` once the graph has been freed. A saved output is held without its history (the
    /// history is the node holding it: a cycle) and given it back when unpacked.
    data: Option<Tensor>,
    version: u64,
    output_nr: Option<usize>,
    /// The saved tensor's grad_fn and output number, for the in-place error message.
    origin: Option<(Cow<'static, str>, usize)>,
}

impl SavedTensor {
    fn new(t: &Tensor, output_nr: Option<usize>) -> SavedTensor {
        let origin = match output_nr {
            Some(_) => None,
            None => t.grad_fn().map(|f| (f.name.clone(), t.output_nr())),
        };
        let data = if output_nr.is_some() { t.detach() } else { t.clone() };
        SavedTensor { version: t.version(), data: Some(data), output_nr, origin }
    }

    fn unpack(&self, node: &Arc<Node>) -> Result<Tensor> {
        let Some(t) = &self.data else {
            bail!(Runtime, "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.");
        };
        if t.version() != self.version {
            let which = match (self.output_nr, &self.origin) {
                (Some(nr), _) => format!(", which is output {nr} of {},", node.name),
                (None, Some((name, nr))) => format!(", which is output {nr} of {name},"),
                (None, None) => String::new(),
            };
            let shape = t.shape().iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ");
            bail!(
                Runtime,
                "one of the variables needed for gradient computation has been modified by an inplace operation: [ember.{}Tensor [{shape}]]{which} is at version {}; expected version {} instead. Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!",
                t.dtype().legacy_name(),
                t.version(),
                self.version
            );
        }
        match self.output_nr {
            // Under create_graph the saved result must carry its history into the formulas.
            Some(nr) if super::is_grad_enabled() => {
                let d = t.detach();
                super::forward::set_tangent_if_any(&d, t);
                d.set_history(node.clone(), nr);
                Ok(d)
            }
            _ => Ok(t.clone()),
        }
    }
}

/// The edge a gradient for `t` flows along: its grad_fn, or its leaf accumulator.
pub(crate) fn gradient_edge(t: &Tensor) -> Option<Edge> {
    if !t.requires_grad() {
        return None;
    }
    match t.grad_fn() {
        Some(node) => Some(Edge { node, input_nr: t.output_nr() }),
        // It requires grad through its base but has no path to it: PyTorch drops its gradient.
        None if t.is_no_grad_view() && !t.0.requires_grad.load(std::sync::atomic::Ordering::Relaxed) => None,
        None => Some(Edge { node: t.grad_accumulator(), input_nr: 0 }),
    }
}

/// Records `f` as the node that made `outputs` from `inputs` and returns it.
pub(crate) fn attach(name: Cow<'static, str>, inputs: &[&Tensor], outputs: &[&Tensor], saved: &[&Tensor], f: Arc<RawBackwardFn>) -> Arc<Node> {
    let node = Arc::new(detached(name, inputs, outputs, saved, f));
    for (nr, out) in outputs.iter().enumerate() {
        out.set_history(node.clone(), nr);
    }
    node
}

/// A node for `f` that no tensor has as its history: what forward mode runs an op's backward
/// function on when nothing needs its reverse-mode graph.
pub(crate) fn detached(name: Cow<'static, str>, inputs: &[&Tensor], outputs: &[&Tensor], saved: &[&Tensor], f: Arc<RawBackwardFn>) -> Node {
    let next = inputs.iter().map(|t| gradient_edge(t)).collect();
    let input_meta = inputs.iter().map(|t| Meta::of(t)).collect();
    let output_meta = outputs.iter().map(|t| Meta::of(t)).collect();
    let saved = saved
        .iter()
        .map(|s| SavedTensor::new(s, outputs.iter().position(|o| Arc::ptr_eq(&o.0, &s.0))))
        .collect();
    Node::new(name, next, input_meta, output_meta, Kind::Backward(f), saved)
}

/// Removes the hook it was returned for.
pub struct HookHandle {
    target: HookTarget,
    id: u64,
}

enum HookTarget {
    Leaf(Weak<Inner>),
    Node(Weak<Node>),
}

impl HookHandle {
    pub(crate) fn leaf(t: &Tensor, id: u64) -> HookHandle {
        HookHandle { target: HookTarget::Leaf(Arc::downgrade(&t.0)), id }
    }

    /// Removes the hook; removing it twice, or after its tensor or node is gone, does nothing
    /// (`RemovableHandle.remove()`).
    pub fn remove(&self) {
        match &self.target {
            HookTarget::Node(n) => {
                if let Some(n) = n.upgrade() {
                    n.pre_hooks.lock().unwrap().retain(|h| h.1 != self.id);
                }
            }
            HookTarget::Leaf(t) => {
                if let Some(t) = t.upgrade() {
                    if let Some(meta) = t.autograd.lock().unwrap().as_mut() {
                        meta.hooks.retain(|h| h.0 != self.id);
                    }
                }
            }
        }
    }
}
