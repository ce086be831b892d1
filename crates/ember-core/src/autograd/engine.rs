//! Runs a graph backwards from its roots.
//!
//! Every node reachable from the roots is visited once, newest first: a node's edges point at
//! older nodes only, so by the time a node runs, every gradient for it has arrived (summed in
//! its input buffer). `grad` (and `backward(inputs=...)`) capture the gradients of chosen
//! tensors instead and run only the nodes that lie on a path to them.
use super::node::{gradient_edge, Edge, Kind, Meta, Node};
use super::{grad_mode, Ctx};
use crate::bail;
use crate::error::Result;
use crate::ops::binary::{binary, BinaryOp, Operand};
use crate::ops::reduce::sum_to;
use crate::tensor::Tensor;
use std::collections::HashMap;
use std::sync::Arc;

/// `autograd.backward`: accumulates d(roots)/d(leaf) · grad_outputs into every leaf's `.grad`
/// (or only into `inputs`' when given).
pub fn backward(roots: &[Tensor], grad_outputs: &[Option<Tensor>], retain_graph: bool, create_graph: bool, inputs: Option<&[Tensor]>) -> Result<()> {
    let roots = root_edges(roots, grad_outputs)?;
    let Some(inputs) = inputs else {
        run(roots, &[], retain_graph, create_graph, true)?;
        return Ok(());
    };
    if inputs.is_empty() {
        bail!(Runtime, "'inputs' argument to backward() cannot be empty.");
    }
    let targets = target_edges(inputs)?;
    let grads = run(roots, &targets, retain_graph, create_graph, false)?;
    for (t, g) in inputs.iter().zip(grads) {
        if let Some(g) = g {
            accumulate(t, g, create_graph)?;
        }
    }
    Ok(())
}

/// `autograd.grad`: d(outputs)/d(inputs) · grad_outputs, with no `.grad` touched.
pub fn grad(
    outputs: &[Tensor],
    inputs: &[Tensor],
    grad_outputs: &[Option<Tensor>],
    retain_graph: bool,
    create_graph: bool,
    allow_unused: bool,
) -> Result<Vec<Option<Tensor>>> {
    let roots = root_edges(outputs, grad_outputs)?;
    let targets = target_edges(inputs)?;
    let grads = run(roots, &targets, retain_graph, create_graph, false)?;
    if !allow_unused && grads.iter().any(Option::is_none) {
        bail!(Runtime, "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior.");
    }
    Ok(grads)
}

fn root_edges(roots: &[Tensor], grads: &[Option<Tensor>]) -> Result<Vec<(Edge, Tensor)>> {
    if roots.len() != grads.len() {
        bail!(Runtime, "grad requires one gradient per output: got {} gradients for {} outputs", grads.len(), roots.len());
    }
    let mut edges = Vec::with_capacity(roots.len());
    for (i, (t, g)) in roots.iter().zip(grads).enumerate() {
        let Some(edge) = gradient_edge(t) else {
            bail!(Runtime, "element {i} of tensors does not require grad and does not have a grad_fn");
        };
        let g = match g {
            Some(g) if g.shape() != t.shape() => {
                bail!(Runtime, "Mismatch in shape: grad_output[{i}] has a shape of {} and output[{i}] has a shape of {}.", size(g.shape()), size(t.shape()))
            }
            Some(g) if g.dtype().is_complex() != t.dtype().is_complex() => {
                bail!(Runtime, "For complex Tensors, both grad_output and output are required to have the same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of {} and output[{i}] has a dtype of {}", g.dtype(), t.dtype())
            }
            Some(g) => g.clone(),
            None if t.numel() != 1 => bail!(Runtime, "grad can be implicitly created only for scalar outputs"),
            None if t.dtype().is_complex() => bail!(Runtime, "grad can be implicitly created only for real scalar outputs but got {}", t.dtype()),
            None => crate::ops::creation::full_on(t.shape(), crate::ops::binary::Scalar::Int(1), t.dtype(), t.device())?,
        };
        edges.push((edge, g));
    }
    Ok(edges)
}

fn size(s: &[usize]) -> String {
    format!("ember.Size({s:?})")
}

/// The edges whose gradients `grad` returns. A leaf no live graph uses has no accumulator
/// yet: its edge stays `None` and its gradient is "unused".
fn target_edges(inputs: &[Tensor]) -> Result<Vec<Option<Edge>>> {
    inputs
        .iter()
        .map(|t| {
            if !t.requires_grad() {
                bail!(Runtime, "One of the differentiated Tensors does not require grad");
            }
            Ok(match t.grad_fn() {
                Some(node) => Some(Edge { node, input_nr: t.output_nr() }),
                None => t.live_accumulator().map(|node| Edge { node, input_nr: 0 }),
            })
        })
        .collect()
}

fn key(node: &Arc<Node>) -> usize {
    Arc::as_ptr(node) as usize
}

/// Runs the graph; returns the gradients captured at `targets` (leaf accumulators only run
/// when nothing is captured, i.e. for a plain `backward`).
fn run(roots: Vec<(Edge, Tensor)>, targets: &[Option<Edge>], retain_graph: bool, create_graph: bool, accumulate_leaves: bool) -> Result<Vec<Option<Tensor>>> {
    // Every reachable node, newest first.
    let mut nodes: Vec<Arc<Node>> = Vec::new();
    let mut index: HashMap<usize, usize> = HashMap::new();
    let mut stack: Vec<Arc<Node>> = roots.iter().map(|(e, _)| e.node.clone()).collect();
    while let Some(n) = stack.pop() {
        if index.contains_key(&key(&n)) {
            continue;
        }
        index.insert(key(&n), nodes.len());
        stack.extend(n.next.iter().flatten().map(|e| e.node.clone()));
        nodes.push(n);
    }
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    order.sort_unstable_by_key(|&i| std::cmp::Reverse(nodes[i].seq));

    // With targets, only the nodes with a path to one run (oldest first fills `reaches`).
    let capture = !targets.is_empty();
    let mut is_target = vec![false; nodes.len()];
    for e in targets.iter().flatten() {
        if let Some(&i) = index.get(&key(&e.node)) {
            is_target[i] = true;
        }
    }
    let mut reaches = is_target.clone();
    let mut execute = vec![!capture; nodes.len()];
    if capture {
        for &i in order.iter().rev() {
            let child_reaches = nodes[i].next.iter().flatten().any(|e| reaches[index[&key(&e.node)]]);
            reaches[i] |= child_reaches;
            execute[i] = child_reaches && matches!(nodes[i].kind, Kind::Backward(_));
        }
    }
    if !accumulate_leaves {
        for (i, n) in nodes.iter().enumerate() {
            execute[i] &= !matches!(n.kind, Kind::Accumulate(_));
        }
    }

    let mut buffers: Vec<Vec<Option<Tensor>>> = nodes.iter().map(|n| vec![None; n.outputs.len()]).collect();
    let _mode = grad_mode(create_graph);
    for (edge, g) in roots {
        add_to(&mut buffers[index[&key(&edge.node)]], edge.input_nr, g)?;
    }
    let mut captured: HashMap<(usize, usize), Tensor> = HashMap::new();
    for &i in &order {
        if !execute[i] && !is_target[i] {
            continue;
        }
        let node = &nodes[i];
        let mut grads = std::mem::take(&mut buffers[i]);
        if grads.iter().all(Option::is_none) {
            continue;
        }
        run_pre_hooks(node, &mut grads)?;
        if is_target[i] {
            for (nr, g) in grads.iter().enumerate() {
                if let Some(g) = g {
                    captured.insert((key(node), nr), g.clone());
                }
            }
        }
        if !execute[i] {
            continue;
        }
        match &node.kind {
            Kind::Accumulate(leaf) => {
                if let Some(g) = grads.pop().flatten() {
                    accumulate(leaf, g, create_graph)?;
                }
            }
            Kind::Backward(f) => {
                let out = f(&Ctx { node, wanted: None }, &grads)?;
                if out.len() != node.next.len() {
                    bail!(Runtime, "function {} returned an incorrect number of gradients (expected {}, got {})", node.name(), node.next.len(), out.len());
                }
                for (k, (g, edge)) in out.into_iter().zip(&node.next).enumerate() {
                    if let (Some(g), Some(edge)) = (g, edge) {
                        let g = conform(node, k, g, &node.inputs[k])?;
                        add_to(&mut buffers[index[&key(&edge.node)]], edge.input_nr, g)?;
                    }
                }
            }
        }
        if !retain_graph {
            node.release();
        }
    }
    Ok(targets
        .iter()
        .map(|e| e.as_ref().and_then(|e| captured.get(&(key(&e.node), e.input_nr)).cloned()))
        .collect())
}

/// Tensor hooks of the node's outputs (a leaf's, for an accumulator), then retained grads.
fn run_pre_hooks(node: &Arc<Node>, grads: &mut [Option<Tensor>]) -> Result<()> {
    let hooks: Vec<_> = match &node.kind {
        Kind::Accumulate(leaf) => leaf.leaf_hooks().into_iter().map(|h| (0, h)).collect(),
        Kind::Backward(_) => node.pre_hooks.lock().unwrap().iter().map(|(nr, _, h)| (*nr, h.clone())).collect(),
    };
    for (nr, hook) in hooks {
        if let Some(g) = &grads[nr] {
            if let Some(replacement) = hook(g)? {
                if replacement.shape() != g.shape() {
                    bail!(Runtime, "hook has changed the size of value: expected {:?} but got {:?}", g.shape(), replacement.shape());
                }
                if replacement.dtype() != g.dtype() {
                    bail!(Runtime, "hook has changed the type of value (was ember.{}Tensor got ember.{}Tensor)", g.dtype().legacy_name(), replacement.dtype().legacy_name());
                }
                grads[nr] = Some(replacement);
            }
        }
    }
    let retained: Vec<_> = node.retained.lock().unwrap().clone();
    for (nr, weak) in retained {
        if let (Some(inner), Some(g)) = (weak.upgrade(), &grads[nr]) {
            let t = Tensor(inner);
            let old = t.grad();
            let g = if super::is_grad_enabled() { g.clone() } else { g.detach() };
            t.with_meta(|m| m.grad = Some(g.clone()));
            if let Some(old) = old {
                let sum = add(&old, &g)?;
                t.with_meta(|m| m.grad = Some(sum));
            }
        }
    }
    Ok(())
}

/// Makes a returned gradient fit its input: broadcast gradients are summed down to the
/// input's shape, other dtypes cast to the input's.
fn conform(node: &Node, k: usize, g: Tensor, meta: &Meta) -> Result<Tensor> {
    let g = if g.shape() != meta.shape.as_slice() {
        if crate::layout::broadcast_shapes(&meta.shape, g.shape()).ok().as_deref() != Some(g.shape()) {
            bail!(Runtime, "Function {} returned an invalid gradient at index {k} - got {:?} but expected shape compatible with {:?}", node.name(), g.shape(), meta.shape);
        }
        sum_to(&g, &meta.shape)?
    } else {
        g
    };
    let g = g.to_device(meta.device)?;
    Ok(if g.dtype() != meta.dtype { g.to_dtype(meta.dtype)? } else { g })
}

fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Add, Operand::Tensor(a), Operand::Tensor(b))
}

fn add_to(buffer: &mut [Option<Tensor>], nr: usize, g: Tensor) -> Result<()> {
    buffer[nr] = Some(match buffer[nr].take() {
        None => g,
        Some(prev) => add(&prev, &g)?,
    });
    Ok(())
}

/// Adds `g` (past the leaf's hooks) into the leaf's `.grad`. The first gradient is taken as it
/// is when nothing else holds it and it is laid out densely (later ones are added in place),
/// else copied; under create_graph the sum is out of place so that it keeps its history.
fn accumulate(leaf: &Tensor, g: Tensor, create_graph: bool) -> Result<()> {
    let new = match leaf.grad() {
        None if create_graph => g,
        None => owned(g)?,
        Some(old) if !create_graph && !old.requires_grad() => {
            crate::ops::binary::binary_out(BinaryOp::Add, Operand::Tensor(&old), Operand::Tensor(&g), &old)?;
            old
        }
        Some(old) => add(&old, &g)?,
    };
    leaf.with_meta(|m| m.grad = Some(new));
    Ok(())
}

/// `g` itself when it is a dense, unshared, untracked tensor; otherwise a copy.
fn owned(g: Tensor) -> Result<Tensor> {
    let unshared = Arc::strong_count(&g.0) == 1 && Arc::strong_count(g.storage()) == 1 && g.base().is_none();
    if unshared && !g.requires_grad() && (g.is_contiguous() || g.layout().dense_order().is_some()) {
        Ok(g)
    } else {
        g.detach().deep_clone()
    }
}
