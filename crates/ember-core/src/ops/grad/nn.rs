//! Derivatives of softmax, the normalisation layers, `nll_loss` and embeddings. The norms
//! recompute their statistics from the saved input with differentiable ops, so their
//! gradients are differentiable too.
use super::{apply, mul, shift, sub};
use crate::autograd::{self, record, LinearFn};
use crate::error::Result;
use crate::ops::index::gather_adjoint;
use crate::ops::reduce::{reduce, ReduceOp};
use crate::ops::unary::UnaryOp;
use crate::tensor::Tensor;
use std::sync::Arc;

fn sum_keep(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    reduce(ReduceOp::Sum, t, Some(dims), true, None)
}

fn mean_keep(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    reduce(ReduceOp::Mean, t, Some(dims), true, None)
}

/// `y = softmax(x)` or `log_softmax(x)` along `d`.
pub(crate) fn record_softmax(x: &Tensor, d: usize, log: bool, y: &Tensor) -> Result<()> {
    let dims = [d as i64];
    if log {
        record("LogSoftmaxBackward0", &[x], &[y], &[y], move |ctx, g| {
            let p = apply(UnaryOp::Exp, &ctx.saved(0)?)?;
            Ok(vec![Some(sub(&g[0], &mul(&p, &sum_keep(&g[0], &dims)?)?)?)])
        })
    } else {
        record("SoftmaxBackward0", &[x], &[y], &[y], move |ctx, g| {
            let y = ctx.saved(0)?;
            Ok(vec![Some(mul(&y, &sub(&g[0], &sum_keep(&mul(&g[0], &y)?, &dims)?)?)?)])
        })
    }
}

/// `(x - mean) / sqrt(var + eps)` over `dims` and its `1 / sqrt(var + eps)`.
fn normalized(x: &Tensor, dims: &[i64], eps: f64) -> Result<(Tensor, Tensor)> {
    let centred = sub(x, &mean_keep(x, dims)?)?;
    let rstd = apply(UnaryOp::Rsqrt, &shift(&mean_keep(&mul(&centred, &centred)?, dims)?, eps)?)?;
    Ok((mul(&centred, &rstd)?, rstd))
}

/// The input gradient of a normalisation over `dims` given the gradient `gh` of its
/// normalised value `xh`: `rstd · (gh - mean(gh) - xh · mean(gh · xh))`.
fn through_normalization(gh: &Tensor, xh: &Tensor, rstd: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let centred = sub(&sub(gh, &mean_keep(gh, dims)?)?, &mul(xh, &mean_keep(&mul(gh, xh)?, dims)?)?)?;
    mul(rstd, &centred)
}

/// A per-channel parameter `[C]` shaped to broadcast against `[N, C, *]` of rank `ndim`.
fn per_channel(p: &Tensor, ndim: usize) -> Result<Tensor> {
    let mut shape = vec![1i64; ndim];
    shape[1] = -1;
    p.reshape(&shape)
}

fn all_but_channel(ndim: usize) -> Vec<i64> {
    (0..ndim as i64).filter(|&d| d != 1).collect()
}

/// Records an affine normalisation `y = x̂ · w + b` whose `x̂` and input gradient come from
/// `norm`; `w`/`b` gradients are `Σ g·x̂` and `Σ g` over the dims `param_dims`, reshaped to the
/// parameters' shapes.
fn record_affine_norm(
    name: &'static str,
    x: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    y: &Tensor,
    norm: impl Fn(&Tensor, &Tensor, Option<&Tensor>) -> Result<(Tensor, Tensor)> + Send + Sync + 'static,
    param_dims: Vec<i64>,
) -> Result<()> {
    let w_shape: Option<Vec<i64>> = weight.map(|w| w.shape().iter().map(|&d| d as i64).collect());
    let b_shape: Option<Vec<i64>> = bias.map(|b| b.shape().iter().map(|&d| d as i64).collect());
    let placeholder = Tensor::zeros(&[0], x.dtype())?;
    let inputs = [x, weight.unwrap_or(&placeholder), bias.unwrap_or(&placeholder)];
    let saved: Vec<&Tensor> = match weight {
        Some(w) => vec![x, w],
        None => vec![x],
    };
    record(name, &inputs, &[y], &saved, move |ctx, g| {
        let (g, x) = (&g[0], ctx.saved(0)?);
        let w = if w_shape.is_some() { Some(ctx.saved(1)?) } else { None };
        let (xh, gx) = norm(g, &x, w.as_ref())?;
        let gw = match &w_shape {
            Some(s) if ctx.needs_input_grad(1) => Some(reduce(ReduceOp::Sum, &mul(g, &xh)?, Some(&param_dims), false, None)?.reshape(s)?),
            _ => None,
        };
        let gb = match &b_shape {
            Some(s) if ctx.needs_input_grad(2) => Some(reduce(ReduceOp::Sum, g, Some(&param_dims), false, None)?.reshape(s)?),
            _ => None,
        };
        Ok(vec![ctx.needs_input_grad(0).then_some(gx), gw, gb])
    })
}

pub(crate) fn record_layer_norm(x: &Tensor, k: usize, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64, y: &Tensor) -> Result<()> {
    let n = x.ndim();
    let dims: Vec<i64> = (n - k..n).map(|d| d as i64).collect();
    let lead: Vec<i64> = (0..n - k).map(|d| d as i64).collect();
    let norm = move |g: &Tensor, x: &Tensor, w: Option<&Tensor>| {
        let (xh, rstd) = normalized(x, &dims, eps)?;
        let gh = match w {
            Some(w) => mul(g, w)?,
            None => g.clone(),
        };
        let gx = through_normalization(&gh, &xh, &rstd, &dims)?;
        Ok((xh, gx))
    };
    record_affine_norm("NativeLayerNormBackward0", x, weight, bias, y, norm, lead)
}

pub(crate) fn record_group_norm(x: &Tensor, groups: usize, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64, y: &Tensor) -> Result<()> {
    let shape: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
    let grouped = [shape[0], groups as i64, -1];
    let ndim = x.ndim();
    let norm = move |g: &Tensor, x: &Tensor, w: Option<&Tensor>| {
        let (xh, rstd) = normalized(&x.reshape(&grouped)?, &[2], eps)?;
        let gh = match w {
            Some(w) => mul(g, &per_channel(w, ndim)?)?,
            None => g.clone(),
        };
        let gx = through_normalization(&gh.reshape(&grouped)?, &xh, &rstd, &[2])?;
        Ok((xh.reshape(&shape)?, gx.reshape(&shape)?))
    };
    record_affine_norm("NativeGroupNormBackward0", x, weight, bias, y, norm, all_but_channel(ndim))
}

/// Batch norm with batch statistics (`training`) or with the running ones (`stats` = the
/// running mean and `1/sqrt(var + eps)` at the time of the call).
pub(crate) fn record_batch_norm(x: &Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64, stats: Option<(Tensor, Tensor)>, y: &Tensor) -> Result<()> {
    let ndim = x.ndim();
    let dims = all_but_channel(ndim);
    let d = dims.clone();
    let norm = move |g: &Tensor, x: &Tensor, w: Option<&Tensor>| {
        let gh = match w {
            Some(w) => mul(g, &per_channel(w, ndim)?)?,
            None => g.clone(),
        };
        match &stats {
            None => {
                let (xh, rstd) = normalized(x, &d, eps)?;
                let gx = through_normalization(&gh, &xh, &rstd, &d)?;
                Ok((xh, gx))
            }
            Some((mean, invstd)) => {
                let (m, s) = (per_channel(mean, ndim)?, per_channel(invstd, ndim)?);
                Ok((mul(&sub(x, &m)?, &s)?, mul(&gh, &s)?))
            }
        }
    };
    record_affine_norm("NativeBatchNormBackward0", x, weight, bias, y, norm, dims)
}

/// Instance norm with per-instance statistics: each (n, c) plane normalised on its own.
pub(crate) fn record_instance_norm(x: &Tensor, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64, y: &Tensor) -> Result<()> {
    let ndim = x.ndim();
    let spatial: Vec<i64> = (2..ndim as i64).collect();
    let norm = move |g: &Tensor, x: &Tensor, w: Option<&Tensor>| {
        let (xh, rstd) = normalized(x, &spatial, eps)?;
        let gh = match w {
            Some(w) => mul(g, &per_channel(w, ndim)?)?,
            None => g.clone(),
        };
        let gx = through_normalization(&gh, &xh, &rstd, &spatial)?;
        Ok((xh, gx))
    };
    record_affine_norm("NativeBatchNormBackward0", x, weight, bias, y, norm, all_but_channel(ndim))
}

/// `loss = nll_loss(input, target)`: `coef[i] = -weight[target[i]]` (0 for ignored targets,
/// divided by the total weight for the mean) times the loss gradient, put at the target class
/// of each position. Linear in the input, so its own derivative is a gather.
pub(crate) fn record_nll_loss(input: &Tensor, coef: Tensor, safe_target: Tensor, loss: &Tensor) -> Result<()> {
    let class_dim = if input.ndim() == 1 { 0 } else { 1 };
    let shape = input.shape().to_vec();
    record("NllLossBackward0", &[input], &[loss], &[&coef, &safe_target], move |ctx, g| {
        let c = mul(&ctx.saved(0)?, &g[0])?;
        let at = |t: &Tensor| if shape.len() == 1 { t.reshape(&[1]) } else { t.unsqueeze(class_dim as i64) };
        Ok(vec![Some(gather_adjoint(&at(&c)?, class_dim as i64, &at(&ctx.saved(1)?)?, &shape)?)])
    })
}

/// `y = weight[indices]`: the gradient of each looked-up row is added into its row of zeros
/// (rows at `padding_idx` get none).
pub(crate) fn embedding(weight: &Tensor, indices: &Tensor, padding_idx: Option<i64>, kernel: fn(&Tensor, &Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let rows = weight.shape()[0];
    let dim = weight.shape()[1];
    let flat = indices.to_dtype(crate::DType::I64)?.reshape(&[-1])?;
    // Positions of padding_idx take no gradient: they are redirected to nothing by a mask.
    let keep = padding_idx.map(|p| {
        let p = if p < 0 { p + rows as i64 } else { p };
        crate::ops::grad::cmp(crate::ops::binary::BinaryOp::Ne, &flat, p as f64)
    }).transpose()?;
    let (idx, f2) = (indices.clone(), flat.clone());
    let map: LinearFn = Arc::new(move |w: &Tensor| kernel(w, &idx));
    let adjoint: LinearFn = Arc::new(move |g: &Tensor| {
        let g = g.reshape(&[-1, dim as i64])?;
        let g = match &keep {
            Some(k) => super::keep(&k.unsqueeze(1)?, &g)?,
            None => g,
        };
        let z = Tensor::zeros_on(&[rows, dim], g.dtype(), g.device())?;
        crate::ops::index::index_add_or_copy_(&z, 0, &f2, &g, true)?;
        Ok(z)
    });
    autograd::linear(["EmbeddingBackward0", "EmbeddingDenseBackwardBackward0"], weight, map, adjoint)
}
