//! Derivatives of the indexing and joining ops that are not plain linear pairs recorded where
//! they are defined (gather, index, take, index_put and scatter live in `ops::index`).
use super::{keep, pick, zeros_like};
use crate::autograd::record;
use crate::error::Result;
use crate::ops::join::roll;
use crate::ops::index::tri;
use crate::ops::reduce::{reduce, ReduceOp};
use crate::tensor::Tensor;

/// `y = masked_fill(x, mask, value)`: `x` keeps the gradient where the mask is off, the (0-d)
/// value receives the sum of it where the mask is on.
pub(crate) fn record_masked_fill(x: &Tensor, mask: &Tensor, value: &Tensor, y: &Tensor) -> Result<()> {
    record("MaskedFillBackward0", &[x, value], &[y], &[mask], |ctx, g| {
        let (g, m) = (&g[0], ctx.saved(0)?);
        let gx = if ctx.needs_input_grad(0) { Some(pick(&m, &zeros_like(g)?, g)?) } else { None };
        let gv = if ctx.needs_input_grad(1) { Some(reduce(ReduceOp::Sum, &keep(&m, g)?, None, false, None)?) } else { None };
        Ok(vec![gx, gv])
    })
}

/// `y = cat(xs, d)`: each input receives its slice of the gradient (`None` for the 1-d empty
/// inputs that `cat` skips).
pub(crate) fn record_cat(xs: &[&Tensor], d: usize, y: &Tensor) -> Result<()> {
    let sizes: Vec<Option<usize>> = xs.iter().map(|t| (!(t.ndim() == 1 && t.numel() == 0)).then(|| t.shape()[d])).collect();
    record("CatBackward0", xs, &[y], &[], move |ctx, g| {
        let mut start = 0;
        let mut out = Vec::with_capacity(sizes.len());
        for (i, s) in sizes.iter().enumerate() {
            out.push(match s {
                Some(n) => {
                    let piece = ctx.needs_input_grad(i).then(|| g[0].narrow(d as i64, start as i64, *n as i64)).transpose()?;
                    start += n;
                    piece
                }
                None => None,
            });
        }
        Ok(out)
    })
}

pub(crate) fn record_roll(x: &Tensor, shifts: &[i64], dims: &[i64], y: &Tensor) -> Result<()> {
    let back: Vec<i64> = shifts.iter().map(|s| -s).collect();
    let dims = dims.to_vec();
    record("RollBackward0", &[x], &[y], &[], move |_, g| Ok(vec![Some(roll(&g[0], &back, &dims)?)]))
}

/// `y = repeat(x, repeats)`: the gradient seen as `[r0, s0, r1, s1, ...]`, summed over the r's.
pub(crate) fn record_repeat(x: &Tensor, repeats: &[i64], y: &Tensor) -> Result<()> {
    let lead = repeats.len() - x.ndim();
    let sizes: Vec<i64> = std::iter::repeat_n(1, lead).chain(x.shape().iter().map(|&s| s as i64)).collect();
    let pairs: Vec<i64> = repeats.iter().zip(&sizes).flat_map(|(&r, &s)| [r, s]).collect();
    let rep_dims: Vec<i64> = (0..repeats.len() as i64).map(|k| 2 * k).collect();
    let shape: Vec<i64> = x.shape().iter().map(|&s| s as i64).collect();
    record("RepeatBackward0", &[x], &[y], &[], move |_, g| {
        let summed = reduce(ReduceOp::Sum, &g[0].reshape(&pairs)?, Some(&rep_dims), false, None)?;
        Ok(vec![Some(summed.reshape(&shape)?)])
    })
}

pub(crate) fn record_tri(x: &Tensor, diagonal: i64, upper: bool, y: &Tensor) -> Result<()> {
    record(if upper { "TriuBackward0" } else { "TrilBackward0" }, &[x], &[y], &[], move |_, g| Ok(vec![Some(tri(&g[0], diagonal, upper)?)]))
}

/// Values picked along `d` at `indices` (sort, topk, kthvalue, median, mode): the gradient
/// goes back to where each value came from.
pub(crate) fn record_picked(name: &'static str, x: &Tensor, d: usize, keepdim: bool, values: &Tensor, indices: &Tensor) -> Result<()> {
    let shape = x.shape().to_vec();
    record(name, &[x], &[values], &[indices], move |ctx, g| {
        Ok(vec![Some(super::reduce::select_backward(&g[0], &ctx.saved(0)?, d, keepdim, &shape)?)])
    })
}
