//! Forward mode against hand-computed derivatives and against reverse mode.
use super::forward::{enter_dual_level, exit_dual_level, make_dual, tangent, unpack_dual};
use super::*;
use crate::ops::binary::{binary, BinaryOp, Operand, Scalar};
use crate::ops::reduce::{reduce, ReduceOp};
use crate::ops::unary::{unary, UnaryOp};
use std::sync::Mutex;

/// The dual level is process-wide: tests that open one take turns.
static LEVEL: Mutex<()> = Mutex::new(());

fn t(v: &[f64]) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
}

fn vals(t: &Tensor) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
}

/// y = sum(exp(x) * x²)
fn f(x: &Tensor) -> Tensor {
    let sq = binary(BinaryOp::Pow, Operand::Tensor(x), Operand::Scalar(Scalar::Int(2))).unwrap();
    let p = binary(BinaryOp::Mul, Operand::Tensor(&unary(UnaryOp::Exp, x).unwrap()), Operand::Tensor(&sq)).unwrap();
    reduce(ReduceOp::Sum, &p, None, false, None).unwrap()
}

#[test]
fn tangents_match_reverse_mode_and_leave_no_graph() {
    let _turn = LEVEL.lock().unwrap();
    let (x, v) = (t(&[0.5, -1.0, 2.0]), t(&[1.0, 2.0, -0.5]));
    let level = enter_dual_level().unwrap();
    let y = f(&make_dual(&x, &v, level).unwrap());
    assert!(!y.requires_grad());
    let jv = vals(&tangent(&y).unwrap());
    exit_dual_level(level).unwrap();
    assert!(tangent(&y).is_none());

    let xr = x.detach();
    xr.set_requires_grad(true).unwrap();
    let g = grad(&[f(&xr)], &[xr.clone()], &[None], false, false, false).unwrap().remove(0).unwrap();
    let want: f64 = vals(&g).iter().zip(vals(&v)).map(|(a, b)| a * b).sum();
    assert!(close(&jv, &[want]), "{jv:?} vs {want}");
}

#[test]
fn forward_over_reverse_gives_hessian_vector_products() {
    let _turn = LEVEL.lock().unwrap();
    // f(x) = sum(x³): H = diag(6x).
    let (x, v) = (t(&[1.0, -2.0]), t(&[3.0, 1.0]));
    let level = enter_dual_level().unwrap();
    let leaf = x.detach();
    leaf.set_requires_grad(true).unwrap();
    let d = make_dual(&leaf, &v, level).unwrap();
    let cube = binary(BinaryOp::Pow, Operand::Tensor(&d), Operand::Scalar(Scalar::Int(3))).unwrap();
    let y = reduce(ReduceOp::Sum, &cube, None, false, None).unwrap();
    let g = grad(&[y], &[d.clone()], &[None], false, false, false).unwrap().remove(0).unwrap();
    let hv = vals(&tangent(&g).unwrap());
    exit_dual_level(level).unwrap();
    assert!(close(&hv, &[18.0, -12.0]), "{hv:?}");
}

#[test]
fn views_and_in_place_writes_share_the_tangent() {
    let _turn = LEVEL.lock().unwrap();
    let level = enter_dual_level().unwrap();
    let d = make_dual(&t(&[1.0, 2.0, 3.0, 4.0]), &t(&[1.0, 1.0, 1.0, 1.0]), level).unwrap();
    let (primal, tan) = unpack_dual(&d, level).unwrap();
    assert!(tangent(&primal).is_none());
    let row = d.reshape(&[2, 2]).unwrap().select(0, 1).unwrap();
    assert!(tangent(&row).unwrap().same_storage(&tan.clone().unwrap()));
    crate::ops::binary::binary_out(BinaryOp::Mul, Operand::Tensor(&row), Operand::Scalar(Scalar::Int(5)), &row).unwrap();
    let whole = vals(&tangent(&d).unwrap());
    exit_dual_level(level).unwrap();
    assert_eq!(whole, vec![1.0, 1.0, 5.0, 5.0]);
}

#[test]
fn level_rules() {
    let _turn = LEVEL.lock().unwrap();
    let x = t(&[1.0]);
    assert!(make_dual(&x, &x, 0).unwrap_err().message.contains("no level exists"));
    let level = enter_dual_level().unwrap();
    assert_eq!(enter_dual_level().unwrap_err().message, "Nested forward mode AD is not supported at the moment");
    assert!(make_dual(&x, &t(&[1.0, 2.0]), level).unwrap_err().message.contains("different size"));
    assert!(exit_dual_level(7).is_err());
    exit_dual_level(level).unwrap();
    assert!(exit_dual_level(level).is_err());
}
