//! Derivatives of the reductions (sum, mean, prod, amax/amin, max/min) and of the scans
//! (cumsum, cumprod, cummax/cummin).
use super::{apply, bin, cmp, div, keep, mul, pick, scale, zeros_like};
use crate::ops::unary::UnaryOp;
use crate::autograd::record;
use crate::error::Result;
use crate::ops::binary::BinaryOp::{Eq, LogicalAnd};
use crate::ops::index::gather_adjoint;
use crate::ops::reduce::{reduce, ReduceOp};
use crate::ops::scan::{scan, ScanOp};
use crate::tensor::Tensor;

/// The reduced dims (those `mask` marks) as a list.
fn dims_of(mask: &[bool]) -> Vec<i64> {
    mask.iter().enumerate().filter(|p| *p.1).map(|p| p.0 as i64).collect()
}

/// `g` (a reduction's result or its gradient) broadcast back over the reduced dims.
fn unreduce(g: &Tensor, shape: &[usize], mask: &[bool], keepdim: bool) -> Result<Tensor> {
    let kept: Vec<i64> = shape.iter().zip(mask).map(|(&s, &r)| if r { 1 } else { s as i64 }).collect();
    let g = if keepdim { g.clone() } else { g.reshape(&kept)? };
    g.broadcast_to(shape)
}

/// Records `y = op(x)` over the dims `mask` marks.
pub(crate) fn record_reduce(op: ReduceOp, x: &Tensor, mask: Vec<bool>, keepdim: bool, y: &Tensor, all: bool) -> Result<()> {
    if !y.dtype().is_inexact() {
        return Ok(());
    }
    // PyTorch numbers the full reduction 0 and the one over dims 1.
    let pick_name = |full: &'static str, dims: &'static str| if all { full } else { dims };
    let shape = x.shape().to_vec();
    let count: usize = shape.iter().zip(&mask).filter(|p| *p.1).map(|p| *p.0).product();
    match op {
        ReduceOp::Sum => record(pick_name("SumBackward0", "SumBackward1"), &[x], &[y], &[], move |_, g| Ok(vec![Some(unreduce(&g[0], &shape, &mask, keepdim)?)])),
        ReduceOp::Mean => record(pick_name("MeanBackward0", "MeanBackward1"), &[x], &[y], &[], move |_, g| {
            Ok(vec![Some(scale(&unreduce(&g[0], &shape, &mask, keepdim)?, 1.0 / count as f64)?)])
        }),
        ReduceOp::Prod if x.dtype().is_complex() => record(pick_name("ProdBackward0", "ProdBackward1"), &[x], &[y], &[x, y], move |ctx, g| {
            // Conjugate-Wirtinger: the gradient is g times the conjugate of the other factors.
            let others = div(&unreduce(&ctx.saved(1)?, &shape, &mask, keepdim)?, &ctx.saved(0)?)?;
            Ok(vec![Some(mul(&unreduce(&g[0], &shape, &mask, keepdim)?, &apply(UnaryOp::Conj, &others)?)?)])
        }),
        ReduceOp::Prod => record(pick_name("ProdBackward0", "ProdBackward1"), &[x], &[y], &[x], move |ctx, g| {
            let x = ctx.saved(0)?;
            Ok(vec![Some(mul(&unreduce(&g[0], &shape, &mask, keepdim)?, &product_of_others(&x, &mask)?)?)])
        }),
        ReduceOp::Amax | ReduceOp::Amin => {
            let name = if op == ReduceOp::Amax { "AmaxBackward0" } else { "AminBackward0" };
            record(name, &[x], &[y], &[x, y], move |ctx, g| {
                // Ties share the gradient equally.
                let ties = bin(Eq, &ctx.saved(0)?, &unreduce(&ctx.saved(1)?, &shape, &mask, keepdim)?)?;
                let n = reduce(ReduceOp::Sum, &ties, Some(&dims_of(&mask)), true, Some(g[0].dtype()))?;
                Ok(vec![Some(keep(&ties, &div(&unreduce(&g[0], &shape, &mask, keepdim)?, &n)?.broadcast_to(&shape)?)?)])
            })
        }
        ReduceOp::All | ReduceOp::Any | ReduceOp::CountNonzero => Ok(()),
    }
}

/// For each element, the product of the other elements of its reduction group (exact with
/// zeros: with one zero in a group only that element gets the product of the rest).
fn product_of_others(x: &Tensor, mask: &[bool]) -> Result<Tensor> {
    let dims = dims_of(mask);
    let zero = cmp(Eq, x, 0.0)?;
    let zeros = reduce(ReduceOp::Sum, &zero, Some(&dims), true, None)?;
    let nonzero = pick(&zero, &super::shift(&zeros_like(x)?, 1.0)?, x)?;
    let rest = reduce(ReduceOp::Prod, &nonzero, Some(&dims), true, None)?.broadcast_to(x.shape())?;
    let no_zero = bin(Eq, &zeros, &Tensor::scalar(0i64))?.broadcast_to(x.shape())?;
    let only_zero = bin(LogicalAnd, &zero, &bin(Eq, &zeros, &Tensor::scalar(1i64))?)?;
    pick(&no_zero, &div(&rest, x)?, &keep(&only_zero, &rest)?)
}

/// Records the values of `max`/`min` along `dim` (`indices` say where each came from), or of
/// the full reduction (`dim = None`, whose gradient ties share as `amax`'s).
pub(crate) fn record_arg_reduce(x: &Tensor, dim: Option<usize>, keepdim: bool, values: &Tensor, indices: &Tensor, max: bool) -> Result<()> {
    let name = match (max, dim) {
        (true, Some(_)) => "MaxBackward0",
        (false, Some(_)) => "MinBackward0",
        (true, None) => "MaxBackward1",
        (false, None) => "MinBackward1",
    };
    let shape = x.shape().to_vec();
    match dim {
        None => record(name, &[x], &[values], &[x, values], move |ctx, g| {
            let (x, v) = (ctx.saved(0)?, ctx.saved(1)?);
            let ties = bin(Eq, &x, &v)?;
            let n = reduce(ReduceOp::Sum, &ties, None, false, Some(g[0].dtype()))?;
            Ok(vec![Some(keep(&ties, &div(&g[0], &n)?.broadcast_to(&shape)?)?)])
        }),
        Some(d) => record(name, &[x], &[values], &[indices], move |ctx, g| Ok(vec![Some(select_backward(&g[0], &ctx.saved(0)?, d, keepdim, &shape)?)])),
    }
}

/// The gradient of values picked along `d` at `indices` (max/min, sort, topk, kthvalue ...).
pub(crate) fn select_backward(g: &Tensor, indices: &Tensor, d: usize, keepdim: bool, shape: &[usize]) -> Result<Tensor> {
    if shape.is_empty() {
        return g.reshape(&[]);
    }
    let (g, idx) = if keepdim { (g.clone(), indices.clone()) } else { (g.unsqueeze(d as i64)?, indices.unsqueeze(d as i64)?) };
    gather_adjoint(&g, d as i64, &idx, shape)
}

/// Records `y = scan(x)` along `d`.
pub(crate) fn record_scan(op: ScanOp, x: &Tensor, d: usize, y: &Tensor) -> Result<()> {
    if !y.dtype().is_inexact() {
        return Ok(());
    }
    match op {
        ScanOp::Sum => record("CumsumBackward0", &[x], &[y], &[], move |_, g| Ok(vec![Some(reverse_cumsum(&g[0], d)?)])),
        ScanOp::Prod => record("CumprodBackward0", &[x], &[y], &[x, y], move |ctx, g| {
            let (x, y) = (ctx.saved(0)?, ctx.saved(1)?);
            Ok(vec![Some(if y.dtype().is_complex() { cumprod_backward_complex(&g[0], &x, &y, d)? } else { cumprod_backward(&g[0], &x, &y, d)? })])
        }),
        ScanOp::LogSumExp => crate::autograd::not_implemented("logcumsumexp", &[x]),
    }
}

/// Sum from each position to the end of `d`.
fn reverse_cumsum(g: &Tensor, d: usize) -> Result<Tensor> {
    if g.ndim() == 0 {
        return Ok(g.clone());
    }
    scan(ScanOp::Sum, &g.flip(&[d as i64])?, d as i64, None)?.flip(&[d as i64])
}

/// cumprod is holomorphic, so its conjugate-Wirtinger gradient is `Jᴴg = conj(Jᵀ conj(g))`, the
/// real formula (which applies `Jᵀ`) between two conjugations.
fn cumprod_backward_complex(g: &Tensor, x: &Tensor, y: &Tensor, d: usize) -> Result<Tensor> {
    let conj = crate::ops::complex::conj;
    conj(&cumprod_backward(&conj(g)?, x, y, d)?)
}

/// d/dx_i of Σ_j g_j·y_j with y = cumprod(x): Σ_{j≥i} g_j·y_j / x_i before the first zero of a
/// row; at the first zero, Σ_{j≥z} g_j·Π_{k≤j, k≠z} x_k; after it, nothing.
fn cumprod_backward(g: &Tensor, x: &Tensor, y: &Tensor, d: usize) -> Result<Tensor> {
    let gy = reverse_cumsum(&mul(g, y)?, d)?;
    let zero = cmp(Eq, x, 0.0)?;
    let seen = scan(ScanOp::Sum, &zero, d as i64, None)?;
    if x.ndim() == 0 || !bool_any(&zero)? {
        return div(&gy, x);
    }
    let before = cmp(Eq, &seen, 0.0)?;
    let first = bin(LogicalAnd, &zero, &cmp(Eq, &seen, 1.0)?)?;
    let one = super::shift(&zeros_like(x)?, 1.0)?;
    let safe_x = pick(&before, x, &one)?;
    let part1 = keep(&before, &div(&gy, &safe_x)?)?;
    let y1 = scan(ScanOp::Prod, &pick(&first, &one, x)?, d as i64, None)?;
    let from_first = cmp(crate::ops::binary::BinaryOp::Ge, &seen, 1.0)?;
    let part2 = keep(&first, &reverse_cumsum(&keep(&from_first, &mul(g, &y1)?)?, d)?)?;
    super::add(&part1, &part2)
}

fn bool_any(mask: &Tensor) -> Result<bool> {
    Ok(reduce(ReduceOp::Any, mask, None, false, None)?.item_f64()? != 0.0)
}

/// Records the values of `cummax`/`cummin` (taken from `indices` along `d`).
pub(crate) fn record_cum_extreme(x: &Tensor, d: usize, values: &Tensor, indices: &Tensor, max: bool) -> Result<()> {
    let shape = x.shape().to_vec();
    record(if max { "CummaxBackward0" } else { "CumminBackward0" }, &[x], &[values], &[indices], move |ctx, g| {
        Ok(vec![Some(select_backward(&g[0], &ctx.saved(0)?, d, true, &shape)?)])
    })
}
