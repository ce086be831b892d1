//! Derivative formulas, one file per op family. They are written with Ember's own ops, which
//! record when grad mode is on, so a backward pass run with `create_graph` builds the graph of
//! its own gradients (higher-order derivatives).
pub(crate) mod binary;
pub(crate) mod complex;
pub(crate) mod conv;
pub(crate) mod index;
pub(crate) mod linalg;
pub(crate) mod matmul;
pub(crate) mod nn;
pub(crate) mod pool;
pub(crate) mod reduce;
pub(crate) mod unary;

use super::binary::{binary, where_, BinaryOp, Operand, Scalar};
use super::unary::{unary, UnaryOp};
use crate::error::Result;
use crate::tensor::Tensor;

pub(crate) fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Mul, Operand::Tensor(a), Operand::Tensor(b))
}

pub(crate) fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Div, Operand::Tensor(a), Operand::Tensor(b))
}

pub(crate) fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Add, Operand::Tensor(a), Operand::Tensor(b))
}

pub(crate) fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Sub, Operand::Tensor(a), Operand::Tensor(b))
}

/// `a * s` in `a`'s dtype.
pub(crate) fn scale(a: &Tensor, s: f64) -> Result<Tensor> {
    binary(BinaryOp::Mul, Operand::Tensor(a), Operand::Scalar(Scalar::Float(s)))
}

/// `a + s` in `a`'s dtype.
pub(crate) fn shift(a: &Tensor, s: f64) -> Result<Tensor> {
    binary(BinaryOp::Add, Operand::Tensor(a), Operand::Scalar(Scalar::Float(s)))
}

pub(crate) fn neg(a: &Tensor) -> Result<Tensor> {
    unary(UnaryOp::Neg, a)
}

pub(crate) fn apply(op: UnaryOp, a: &Tensor) -> Result<Tensor> {
    unary(op, a)
}

/// `a op s` for a comparison `op`: a bool mask.
pub(crate) fn cmp(op: BinaryOp, a: &Tensor, s: f64) -> Result<Tensor> {
    binary(op, Operand::Tensor(a), Operand::Scalar(Scalar::Float(s)))
}

/// `op(a, b)` for any binary op (comparisons give bool masks).
pub(crate) fn bin(op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary(op, Operand::Tensor(a), Operand::Tensor(b))
}

/// `g` where `mask`, zero elsewhere. Outside create_graph (nothing to record) a CPU gradient
/// takes one fused pass rather than `where`, since masks are most of what elementwise backward
/// passes do.
pub(crate) fn keep(mask: &Tensor, g: &Tensor) -> Result<Tensor> {
    if crate::autograd::needs_grad(&[g]) || g.device() != crate::Device::Cpu {
        return where_(mask, Operand::Tensor(g), Operand::Scalar(Scalar::Float(0.0)));
    }
    let shape = crate::layout::broadcast_shapes(mask.shape(), g.shape())?;
    let (m, v) = (mask.to_dtype(crate::DType::Bool)?.broadcast_to(&shape)?, g.broadcast_to(&shape)?);
    let out = Tensor::uninit_like(&shape, g.dtype(), g.device(), Some(g))?;
    crate::with_any_dtype!(g.dtype(), T, {
        let zero = <T as crate::Element>::from_f64(0.0);
        crate::backend::cpu::map::binary_into::<T, bool, T>(&v, &m, &out, move |x, k| if k { x } else { zero })
    });
    Ok(out)
}

/// `a` where `mask`, `b` elsewhere.
pub(crate) fn pick(mask: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    where_(mask, Operand::Tensor(a), Operand::Tensor(b))
}

pub(crate) fn zeros_like(t: &Tensor) -> Result<Tensor> {
    Tensor::zeros_on(t.shape(), t.dtype(), t.device())
}
