//! Embedding lookups: rows of a (num_embeddings, embedding_dim) weight picked by integer
//! indices, pooled per bag for `embedding_bag`, and the in-place `max_norm` renormalisation.
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

fn check_weight(weight: &Tensor) -> Result<(usize, usize)> {
    match weight.shape() {
        [v, d] => Ok((*v, *d)),
        _ => bail!(Runtime, "'weight' must be 2-D"),
    }
}

/// The indices as i64, checked to be an integer tensor whose values address a row of `weight`.
fn checked_indices(indices: &Tensor, rows: usize, what: &str) -> Result<Vec<i64>> {
    if !matches!(indices.dtype(), DType::I64 | DType::I32) {
        bail!(Runtime, "Expected tensor for argument #1 '{what}' to have one of the following scalar types: Long, Int; but got {} instead", indices.dtype().legacy_name());
    }
    let idx = indices.to_dtype(DType::I64)?.contiguous()?.to_vec::<i64>()?;
    if idx.iter().any(|&i| i < 0 || i as usize >= rows) {
        bail!(Index, "index out of range in self");
    }
    Ok(idx)
}

/// `weight[indices]`: a tensor of shape `indices.shape + [embedding_dim]`. Under autograd the
/// rows at `padding_idx` receive no gradient.
pub fn embedding(weight: &Tensor, indices: &Tensor, padding_idx: Option<i64>) -> Result<Tensor> {
    weight.dtype().require_real("embedding")?;
    if !crate::autograd::needs_grad(&[weight]) {
        return lookup(weight, indices);
    }
    check_weight(weight)?;
    checked_indices(indices, weight.shape()[0], "indices")?;
    super::grad::nn::embedding(weight, indices, padding_idx, lookup)
}

/// `weight[indices]` through the backend's advanced indexing, the indices checked first with
/// the embedding's own error.
fn lookup(weight: &Tensor, indices: &Tensor) -> Result<Tensor> {
    let (rows, _) = check_weight(weight)?;
    checked_indices(indices, rows, "indices")?;
    super::index::gather_indexed(weight, &[(0, indices.to_dtype(DType::I64)?)], false)
}

/// Rescales, in place, each row of `weight` named in `indices` whose `norm_type`-norm exceeds
/// `max_norm` to norm `max_norm` (PyTorch's `embedding_renorm_`).
pub fn embedding_renorm_(weight: &Tensor, indices: &Tensor, max_norm: f64, norm_type: f64) -> Result<()> {
    weight.dtype().require_real("embedding_renorm_")?;
    let (rows, _) = check_weight(weight)?;
    if !weight.dtype().is_float() {
        bail!(Runtime, "\"embedding_renorm_\" not implemented for '{}'", weight.dtype().legacy_name());
    }
    let mut idx = checked_indices(indices, rows, "indices")?;
    idx.sort_unstable();
    idx.dedup();
    crate::backend::of(weight.device())?.embedding_renorm(weight, &idx, max_norm, norm_type)?;
    weight.bump_version();
    Ok(())
}

/// `embedding_bag`'s `mode`: how each bag's rows combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BagMode {
    /// The (weighted) sum of the bag's rows.
    Sum,
    /// Their mean; an empty bag gives zeros.
    Mean,
    /// Their elementwise maximum; an empty bag gives zeros.
    Max,
}

impl BagMode {
    /// The mode PyTorch names `name` (`"sum"`, `"mean"`, `"max"`); a `ValueError` otherwise.
    pub fn from_name(name: &str) -> Result<BagMode> {
        Ok(match name {
            "sum" => BagMode::Sum,
            "mean" => BagMode::Mean,
            "max" => BagMode::Max,
            _ => bail!(Value, "mode has to be one of sum, mean or max"),
        })
    }
}

/// The [start, end) of each bag from `offsets` (checked: starting at 0, non-decreasing, in range).
fn bag_bounds(offsets: &Tensor, len: usize, include_last_offset: bool) -> Result<Vec<(usize, usize)>> {
    let offs = checked_indices(offsets, usize::MAX, "offsets")?;
    if offs.first().is_some_and(|&o| o != 0) {
        bail!(Value, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got {}", offs[0]);
    }
    if offs.windows(2).any(|w| w[1] < w[0]) || offs.last().is_some_and(|&o| o as usize > len) {
        bail!(Runtime, "offsets must be non-decreasing and at most the number of indices ({len}), got {offs:?}");
    }
    let mut ends: Vec<usize> = offs.iter().skip(1).map(|&o| o as usize).collect();
    if !include_last_offset {
        ends.push(len);
    }
    Ok(offs.iter().zip(ends).map(|(&s, e)| (s as usize, e)).collect())
}

/// `embedding_bag` over 1-d `indices` cut into bags by `offsets`; entries equal to
/// `padding_idx` are skipped (and not counted by `mean`); an empty bag gives zeros.
pub fn embedding_bag(
    weight: &Tensor,
    indices: &Tensor,
    offsets: &Tensor,
    mode: BagMode,
    per_sample_weights: Option<&Tensor>,
    include_last_offset: bool,
    padding_idx: Option<i64>,
) -> Result<Tensor> {
    weight.dtype().require_real("embedding_bag")?;
    crate::autograd::not_implemented("embedding_bag", &[weight])?;
    if let Some(p) = per_sample_weights {
        crate::autograd::not_implemented("embedding_bag", &[p])?;
    }
    let (rows, dim) = check_weight(weight)?;
    if indices.ndim() != 1 || offsets.ndim() != 1 {
        bail!(Value, "input has to be 1D Tensor when offsets is given, and offsets has to be a 1D Tensor");
    }
    let idx = checked_indices(indices, rows, "indices")?;
    let bags = bag_bounds(offsets, idx.len(), include_last_offset)?;
    let psw = match per_sample_weights {
        Some(_) if mode != BagMode::Sum => bail!(NotImplemented, "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='{}'). Please open a feature request on GitHub.", if mode == BagMode::Mean { "mean" } else { "max" }),
        Some(p) if p.shape() != indices.shape() => bail!(Value, "embedding_bag: If per_sample_weights ({:?}) is not None, then it must have the same shape as the input ({:?})", p.shape(), indices.shape()),
        Some(p) => p.to_dtype(DType::F64)?.contiguous()?.to_vec::<f64>()?,
        None => vec![1.0; idx.len()],
    };
    let out = Tensor::empty_on(&[bags.len(), dim], weight.dtype(), weight.device())?;
    crate::backend::of(weight.device())?.embedding_bag(weight, &idx, &bags, mode, &psw, padding_idx, &out)?;
    Ok(out)
}
