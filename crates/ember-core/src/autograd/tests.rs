//! The engine on small graphs, against hand-computed derivatives.
use super::*;
use crate::ops::binary::{binary, BinaryOp, Operand, Scalar};
use crate::ops::reduce::{reduce, ReduceOp};
use crate::ops::unary::{unary, UnaryOp};

fn leaf(v: &[f64]) -> Tensor {
    let t = Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap();
    t.set_requires_grad(true).unwrap();
    t
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn mul(a: &Tensor, b: &Tensor) -> Tensor {
    binary(BinaryOp::Mul, Operand::Tensor(a), Operand::Tensor(b)).unwrap()
}

fn sum(t: &Tensor) -> Tensor {
    reduce(ReduceOp::Sum, t, None, false, None).unwrap()
}

#[test]
fn product_rule_and_accumulation() {
    let x = leaf(&[1.0, 2.0, 3.0]);
    let y = sum(&mul(&x, &x));
    assert_eq!(y.grad_fn().unwrap().name(), "SumBackward0");
    y.backward(None, true, false, None).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![2.0, 4.0, 6.0]);
    y.backward(None, false, false, None).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![4.0, 8.0, 12.0]);
}

#[test]
fn second_backward_without_retain_graph_fails() {
    let x = leaf(&[1.0, 2.0]);
    let y = sum(&mul(&x, &x));
    y.backward(None, false, false, None).unwrap();
    let e = y.backward(None, false, false, None).unwrap_err();
    assert!(e.message.starts_with("Trying to backward through the graph a second time"), "{}", e.message);
}

#[test]
fn create_graph_gives_second_derivatives() {
    // d²/dx² x³ = 6x
    let x = leaf(&[1.0, -2.0]);
    let y = sum(&binary(BinaryOp::Pow, Operand::Tensor(&x), Operand::Scalar(Scalar::Int(3))).unwrap());
    let g = grad(&[y], &[x.clone()], &[None], true, true, false).unwrap().remove(0).unwrap();
    assert_eq!(vals(&g), vec![3.0, 12.0]);
    let h = grad(&[sum(&g)], &[x.clone()], &[None], false, false, false).unwrap().remove(0).unwrap();
    assert_eq!(vals(&h), vec![6.0, -12.0]);
    assert!(x.grad().is_none());
}

#[test]
fn version_counter_catches_in_place_changes() {
    let x = leaf(&[1.0, 2.0]);
    let e = unary(UnaryOp::Exp, &x).unwrap();
    let y = sum(&e);
    {
        let _off = no_grad();
        crate::ops::binary::binary_out(BinaryOp::Add, Operand::Tensor(&e), Operand::Scalar(Scalar::Int(1)), &e).unwrap();
    }
    let err = y.backward(None, false, false, None).unwrap_err();
    assert!(err.message.contains("which is output 0 of ExpBackward0, is at version 1; expected version 0 instead"), "{}", err.message);
}

#[test]
fn leaves_refuse_in_place_ops_in_grad_mode() {
    let x = leaf(&[1.0]);
    let e = crate::ops::unary::unary_out(UnaryOp::Exp, &x, &x).unwrap_err();
    assert_eq!(e.message, "a leaf Variable that requires grad is being used in an in-place operation.");
    let _off = no_grad();
    crate::ops::unary::unary_out(UnaryOp::Exp, &x, &x).unwrap();
}

#[test]
fn in_place_on_a_non_leaf_rebases_its_history() {
    let x = leaf(&[1.0, 2.0]);
    let y = mul(&x, &x);
    crate::ops::binary::binary_out(BinaryOp::Mul, Operand::Tensor(&y), Operand::Scalar(Scalar::Int(3)), &y).unwrap();
    assert_eq!(y.grad_fn().unwrap().name(), "MulBackward0");
    sum(&y).backward(None, false, false, None).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![6.0, 12.0]);
}

#[test]
fn in_place_on_a_view_rewrites_the_base() {
    let x = leaf(&[1.0, 2.0, 3.0]);
    let y = mul(&x, &Tensor::from_vec(vec![1.0, 1.0, 1.0], &[3]).unwrap());
    let v = y.narrow(0, 1, 2).unwrap();
    crate::ops::binary::binary_out(BinaryOp::Mul, Operand::Tensor(&v), Operand::Scalar(Scalar::Int(3)), &v).unwrap();
    assert_eq!(vals(&y), vec![1.0, 6.0, 9.0]);
    assert_eq!(y.grad_fn().unwrap().name(), "CopySlices");
    assert_eq!(v.grad_fn().unwrap().name(), "AsStridedBackward0");
    sum(&y).backward(None, false, false, None).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![1.0, 3.0, 3.0]);
}

#[test]
fn broadcasting_sums_back_and_grad_checks_usage() {
    let x = leaf(&[1.0, 2.0]);
    let w = leaf(&[5.0]);
    let unused = leaf(&[0.0]);
    let y = sum(&mul(&x.reshape(&[2, 1]).unwrap().expand(&[2, 3]).unwrap(), &w));
    let g = grad(&[y.clone()], &[x.clone(), w.clone(), unused.clone()], &[None], true, false, true).unwrap();
    assert_eq!(vals(g[0].as_ref().unwrap()), vec![15.0, 15.0]);
    assert_eq!(vals(g[1].as_ref().unwrap()), vec![9.0]);
    assert!(g[2].is_none());
    let e = grad(&[y], &[unused], &[None], false, false, false).unwrap_err();
    assert!(e.message.starts_with("One of the differentiated Tensors appears to not have been used"));
}

#[test]
fn hooks_replace_gradients_and_retain_grad_keeps_them() {
    let x = leaf(&[1.0, 2.0]);
    let y = mul(&x, &x);
    y.retain_grad().unwrap();
    let h = y.register_hook(Arc::new(|g: &Tensor| Ok(Some(crate::ops::grad::scale(g, 10.0)?)))).unwrap();
    sum(&y).backward(None, true, false, None).unwrap();
    assert_eq!(vals(&y.grad().unwrap()), vec![10.0, 10.0]);
    assert_eq!(vals(&x.grad().unwrap()), vec![20.0, 40.0]);
    h.remove();
    x.set_grad(None).unwrap();
    sum(&y).backward(None, false, false, None).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![2.0, 4.0]);
}

#[test]
fn no_grad_records_nothing() {
    let x = leaf(&[1.0]);
    let y = {
        let _off = no_grad();
        mul(&x, &x)
    };
    assert!(!y.requires_grad() && y.grad_fn().is_none());
    let e = y.backward(None, false, false, None).unwrap_err();
    assert_eq!(e.message, "element 0 of tensors does not require grad and does not have a grad_fn");
}

#[test]
fn saved_tensors_are_freed_by_backward_unless_retained() {
    let x = leaf(&[1.0, 2.0]);
    let e = unary(UnaryOp::Exp, &x).unwrap();
    let storage = Arc::downgrade(e.storage());
    let y = sum(&e);
    drop(e);
    assert!(storage.upgrade().is_some(), "the node keeps its saved output");
    y.backward(None, true, false, None).unwrap();
    assert!(storage.upgrade().is_some(), "retain_graph keeps it");
    y.backward(None, false, false, None).unwrap();
    assert!(storage.upgrade().is_none(), "freed after the last backward");
}

#[test]
fn a_view_made_before_a_write_to_its_base_takes_the_new_history() {
    let x = leaf(&[0.0, 1.0, 2.0]);
    let b = x.deep_clone().unwrap();
    let v = b.reshape(&[3]).unwrap();
    crate::ops::unary::unary_out(UnaryOp::Exp, &b, &b).unwrap();
    assert_eq!(v.grad_fn().unwrap().name(), "AsStridedBackward0");
    sum(&v).backward(None, false, false, None).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![1.0, 1f64.exp(), 2f64.exp()]);
}

#[test]
fn a_sibling_view_sees_a_write_through_another_view() {
    let x = leaf(&[1.0, 2.0, 3.0, 4.0]);
    let b = x.deep_clone().unwrap();
    let (front, back) = (b.narrow(0, 0, 3).unwrap(), b.narrow(0, 1, 3).unwrap());
    crate::ops::binary::binary_out(BinaryOp::Mul, Operand::Tensor(&front), Operand::Scalar(Scalar::Int(3)), &front).unwrap();
    sum(&back).backward(None, false, false, None).unwrap();
    assert_eq!(vals(&x.grad().unwrap()), vec![0.0, 3.0, 3.0, 1.0]);
}

/// A chain of `n` multiplications by one, from `x`.
fn chain(x: &Tensor, n: usize) -> Tensor {
    let mut y = x.clone();
    for _ in 0..n {
        y = binary(BinaryOp::Mul, Operand::Tensor(&y), Operand::Scalar(Scalar::Float(1.0))).unwrap();
    }
    y
}

#[test]
fn deep_graphs_run_and_free_without_recursion() {
    // On a thread with a small stack: a recursive free of 200,000 nodes would overflow it.
    std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(|| {
            let x = leaf(&[2.0]);
            let y = chain(&x, 200_000);
            y.backward(None, false, false, None).unwrap();
            assert_eq!(vals(&x.grad().unwrap()), vec![1.0]);
            drop(y);
            drop(chain(&x, 200_000));
        })
        .unwrap()
        .join()
        .unwrap();
}
