//! Sorting and order statistics along one dim: sort, topk, kthvalue, median, mode, quantile,
//! unique and searchsorted: shapes, checks and autograd. The row kernels are the backend's; NaN
//! sorts as the largest value, as in PyTorch.
use crate::backend;
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// The statistic `Backend::select` takes from each row, with the index it was taken at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Statistic {
    /// The element at this ascending position (0-based).
    Kth(usize),
    /// The lower median, NaN if the row holds one; with `ignore_nan` the lower median of the
    /// non-NaN values (NaN only when all are NaN).
    Median {
        /// `nanmedian` rather than `median`.
        ignore_nan: bool,
    },
    /// The most frequent value (the smallest on ties) and the index of its last occurrence.
    Mode,
}

/// `x` with at least one dim (a 0-d tensor acts as one element) and `dim` wrapped.
pub fn along(x: &Tensor, dim: i64) -> Result<(Tensor, usize)> {
    let d = x.wrap_dim(dim)?;
    Ok((if x.ndim() == 0 { x.reshape(&[1])? } else { x.clone() }, d))
}

/// `x`'s shape with `dim` resized to `len`.
pub fn resized(x: &Tensor, dim: usize, len: usize) -> Vec<usize> {
    let mut s = x.shape().to_vec();
    s[dim] = len;
    s
}

/// Drops `dim` (size 1) unless `keepdim`, and gives a 0-d input its 0-d shape back.
fn finish(t: Tensor, input: &Tensor, dim: usize, keepdim: bool) -> Result<Tensor> {
    match (input.ndim(), keepdim) {
        (0, _) => t.reshape(&[]),
        (_, true) => Ok(t),
        (_, false) => t.squeeze(Some(&[dim as i64])),
    }
}

/// Runs a kernel that picks values along `dim` (with their indices) and records their
/// derivative: the gradient goes back to where each value came from.
fn track_picked(name: &'static str, x: &Tensor, dim: i64, keepdim: bool, kernel: impl FnOnce() -> Result<(Tensor, Tensor)>) -> Result<(Tensor, Tensor)> {
    crate::autograd::track(&[x], kernel, |(v, i)| {
        let d = if x.ndim() == 0 { 0 } else { x.wrap_dim(dim)? };
        super::grad::index::record_picked(name, x, d, keepdim, v, i)
    })
}

/// `sort`: (values, indices) along `dim`. Always stable: equal values keep their order.
pub fn sort(x: &Tensor, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
    x.dtype().require_real("sort")?;
    track_picked("SortBackward0", x, dim, true, || sort_kernel(x, dim, descending))
}

fn sort_kernel(x: &Tensor, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
    let (xs, d) = along(x, dim)?;
    let (values, indices) = values_and_indices(&xs, xs.shape())?;
    backend::of(xs.device())?.sort(&xs, d, descending, &values, &indices)?;
    Ok((values.reshape(&shape_i64(x.shape()))?, indices.reshape(&shape_i64(x.shape()))?))
}

/// Fresh values (of `x`'s dtype) and int64 indices of `shape`, on `x`'s device.
fn values_and_indices(x: &Tensor, shape: &[usize]) -> Result<(Tensor, Tensor)> {
    Ok((Tensor::empty_on(shape, x.dtype(), x.device())?, Tensor::empty_on(shape, DType::I64, x.device())?))
}

fn shape_i64(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&s| s as i64).collect()
}

/// `topk`: the `k` largest (or smallest) along `dim`; ties come out in their original order.
pub fn topk(x: &Tensor, k: i64, dim: i64, largest: bool, sorted: bool) -> Result<(Tensor, Tensor)> {
    x.dtype().require_real("topk_cpu")?;
    track_picked("TopkBackward0", x, dim, true, || topk_kernel(x, k, dim, largest, sorted))
}

fn topk_kernel(x: &Tensor, k: i64, dim: i64, largest: bool, sorted: bool) -> Result<(Tensor, Tensor)> {
    let (xs, d) = along(x, dim)?;
    let n = xs.shape()[d];
    if k < 0 || k as usize > n {
        bail!(Runtime, "selected index k out of range: k = {k} but dimension {d} has size {n}");
    }
    let (values, indices) = values_and_indices(&xs, &resized(&xs, d, k as usize))?;
    backend::of(xs.device())?.topk(&xs, k as usize, d, largest, sorted, &values, &indices)?;
    let shape = if x.ndim() == 0 { vec![] } else { shape_i64(values.shape()) };
    Ok((values.reshape(&shape)?, indices.reshape(&shape)?))
}

/// `stat` of every row along `dim`, and its index: the shared kernel of kthvalue, median,
/// nanmedian and mode.
fn select(name: &str, x: &Tensor, dim: i64, keepdim: bool, stat: Statistic) -> Result<(Tensor, Tensor)> {
    let (xs, d) = along(x, dim)?;
    if xs.shape()[d] == 0 {
        bail!(Index, "{name}(): Expected reduction dim {d} to have non-zero size.");
    }
    let (values, indices) = values_and_indices(&xs, &resized(&xs, d, 1))?;
    backend::of(xs.device())?.select(&xs, d, stat, &values, &indices)?;
    Ok((finish(values, x, d, keepdim)?, finish(indices, x, d, keepdim)?))
}

/// `kthvalue`: the `k`-th smallest (1-based) along `dim`.
pub fn kthvalue(x: &Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    x.dtype().require_real("kthvalue_cpu")?;
    track_picked("KthvalueBackward0", x, dim, keepdim, || kthvalue_kernel(x, k, dim, keepdim))
}

fn kthvalue_kernel(x: &Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let (xs, d) = along(x, dim)?;
    let n = xs.shape()[d] as i64;
    if k < 1 || k > n {
        bail!(Runtime, "kthvalue(): selected number k out of range for dimension {d}: k = {k} but the dimension has size {n}");
    }
    select("kthvalue", x, dim, keepdim, Statistic::Kth(k as usize - 1))
}

/// `median` (lower median; NaN if the row holds one) or, with `ignore_nan`, `nanmedian` (the
/// lower median of the non-NaN values; NaN only when all are NaN).
pub fn median(x: &Tensor, dim: i64, keepdim: bool, ignore_nan: bool) -> Result<(Tensor, Tensor)> {
    x.dtype().require_real("median_cpu")?;
    let name = if ignore_nan { "nanmedian" } else { "median" };
    track_picked("MedianBackward1", x, dim, keepdim, || select(name, x, dim, keepdim, Statistic::Median { ignore_nan }))
}

/// `mode`: the most frequent value along `dim` (the smallest on ties) and the index of its last
/// occurrence.
pub fn mode(x: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    x.dtype().require_real("mode_cpu")?;
    track_picked("ModeBackward0", x, dim, keepdim, || select("mode", x, dim, keepdim, Statistic::Mode))
}

/// How `quantile` picks a value between the two order statistics around it
/// (`interpolation=`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Interpolation {
    /// Linear between them (the default).
    Linear,
    /// The lower one.
    Lower,
    /// The higher one.
    Higher,
    /// Their mean.
    Midpoint,
    /// The nearer one (ties to the even position).
    Nearest,
}

impl Interpolation {
    /// From PyTorch's string; a `Value` error for others.
    pub fn from_name(name: &str) -> Result<Interpolation> {
        Ok(match name {
            "linear" => Interpolation::Linear,
            "lower" => Interpolation::Lower,
            "higher" => Interpolation::Higher,
            "midpoint" => Interpolation::Midpoint,
            "nearest" => Interpolation::Nearest,
            _ => bail!(Value, "quantile() interpolation must be one of linear, lower, higher, midpoint or nearest. Got {name}"),
        })
    }
}

/// `quantile`/`nanquantile` of float rows along `dim` (all elements when `dim` is None). The
/// result has a leading dim of `q.len()` unless `q_is_scalar`.
pub fn quantile(
    x: &Tensor,
    q: &[f64],
    q_is_scalar: bool,
    dim: Option<i64>,
    keepdim: bool,
    interpolation: Interpolation,
    ignore_nan: bool,
) -> Result<Tensor> {
    x.dtype().require_real("quantile")?;
    crate::autograd::not_implemented("quantile", &[x])?;
    if !matches!(x.dtype(), DType::F32 | DType::F64) {
        bail!(Runtime, "quantile() input tensor must be either float or double dtype, but got {}", x.dtype());
    }
    if x.numel() == 0 {
        bail!(Runtime, "quantile() input tensor must be non-empty");
    }
    if q.iter().any(|q| !(0.0..=1.0).contains(q)) {
        bail!(Runtime, "quantile() q values must be in the range [0, 1], but got {q:?}");
    }
    let (xs, d) = match dim {
        Some(dim) => along(x, dim)?,
        None => (x.reshape(&[-1])?, 0),
    };
    let kept = resized(&xs, d, 1);
    let count: usize = kept.iter().product();
    let out = Tensor::empty_on(&[q.len(), count], xs.dtype(), xs.device())?;
    backend::of(xs.device())?.quantile(&xs, d, q, interpolation, ignore_nan, &out)?;
    let mut shape: Vec<i64> = if q_is_scalar { vec![] } else { vec![q.len() as i64] };
    let reduced = match (dim, keepdim) {
        (None, true) => vec![1; x.ndim()],
        (None, false) => vec![],
        (Some(_), _) if x.ndim() == 0 => vec![],
        (Some(_), true) => shape_i64(&kept),
        (Some(_), false) => shape_i64(&kept).into_iter().enumerate().filter(|&(k, _)| k != d).map(|(_, s)| s).collect(),
    };
    shape.extend(reduced);
    out.reshape(&shape)
}

/// `unique` (sorted) or, with `consecutive`, `unique_consecutive`, of the elements or (with `dim`)
/// of the slices along `dim`. Returns (values, inverse if `with_inverse`, counts). NaNs never
/// equal each other, so each stays its own value, as in PyTorch.
pub fn unique(x: &Tensor, dim: Option<i64>, consecutive: bool, with_inverse: bool) -> Result<(Tensor, Option<Tensor>, Tensor)> {
    x.dtype().require_real("unique_cpu")?;
    crate::autograd::not_implemented("unique", &[x])?;
    let d = match dim {
        Some(dim) if x.ndim() == 0 => bail!(Index, "Dimension out of range (expected to be in range of [-1, 0], but got {dim}): unique() with dim needs a tensor with at least one dimension"),
        Some(dim) => Some(x.wrap_dim(dim)?),
        None => None,
    };
    let (values, inverse, counts) = backend::of(x.device())?.unique(x, d, consecutive, with_inverse)?;
    // Element-wise, the inverse has the input's shape.
    let inverse = match d {
        None => inverse.map(|i| i.reshape(&shape_i64(x.shape()))).transpose()?,
        Some(_) => inverse,
    };
    Ok((values, inverse, counts))
}

/// `searchsorted`: for each value of `x`, its insertion point in the matching row of `seq` (1-d,
/// or N-d with `x`'s leading dims), searched through `sorter` when given. Values compare in the
/// promoted dtype.
pub fn searchsorted(seq: &Tensor, x: &Tensor, right: bool, sorter: Option<&Tensor>, out_int32: bool) -> Result<Tensor> {
    x.dtype().require_real("searchsorted_cpu")?;
    seq.dtype().require_real("searchsorted_cpu")?;
    let fits = seq.ndim() == 1 || (seq.ndim() > 1 && seq.ndim() == x.ndim() && seq.shape()[..seq.ndim() - 1] == x.shape()[..x.ndim() - 1]);
    if !fits {
        bail!(Runtime, "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {:?} and input value tensor {:?}", seq.shape(), x.shape());
    }
    if let Some(s) = sorter {
        if s.dtype() != DType::I64 {
            bail!(Runtime, "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype {}", s.dtype());
        }
        if s.shape() != seq.shape() {
            bail!(Runtime, "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor {:?} and got sorter tensor {:?}", seq.shape(), s.shape());
        }
    }
    let common = DType::promote(seq.dtype(), x.dtype());
    let out = Tensor::empty_on(x.shape(), if out_int32 { DType::I32 } else { DType::I64 }, x.device())?;
    backend::of(x.device())?.searchsorted(&seq.to_dtype(common)?, &x.to_dtype(common)?, right, sorter, &out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_and_searchsorted_rows() {
        let x = Tensor::from_vec(vec![3.0f32, 1.0, 2.0, 0.0, 5.0, 4.0], &[2, 3]).unwrap();
        let (v, i) = sort(&x, 1, false).unwrap();
        assert_eq!(v.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 0.0, 4.0, 5.0]);
        assert_eq!(i.to_vec::<i64>().unwrap(), vec![1, 2, 0, 0, 2, 1]);
        let seq = Tensor::from_vec(vec![1i64, 2, 2, 3], &[4]).unwrap();
        let q = Tensor::from_vec(vec![2i64, 0, 9], &[3]).unwrap();
        assert_eq!(searchsorted(&seq, &q, false, None, false).unwrap().to_vec::<i64>().unwrap(), vec![1, 0, 4]);
        assert_eq!(searchsorted(&seq, &q, true, None, false).unwrap().to_vec::<i64>().unwrap(), vec![3, 0, 4]);
    }
}
