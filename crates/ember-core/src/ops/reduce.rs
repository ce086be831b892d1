//! Reductions over any set of dims: the reduced dims, result dtypes and empty-input rules; the
//! folding is the backend's (`backend::cpu::reduce`).
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::wrap_dim;
use crate::tensor::Tensor;

/// A reduction over dims (`torch.sum`, `torch.amax`, ...).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReduceOp {
    /// `sum`: int64 for bool and integer inputs.
    Sum,
    /// `prod`: int64 for bool and integer inputs.
    Prod,
    /// `mean`: float and complex inputs only.
    Mean,
    /// `amax`: the largest value (NaN if any).
    Amax,
    /// `amin`: the smallest value (NaN if any).
    Amin,
    /// `all`: bool (uint8 for uint8 input).
    All,
    /// `any`: bool (uint8 for uint8 input).
    Any,
    /// `count_nonzero`: int64.
    CountNonzero,
}

impl ReduceOp {
    /// The op of PyTorch's function name (`"sum"`, `"count_nonzero"`, ...).
    pub fn from_name(name: &str) -> Option<ReduceOp> {
        use ReduceOp::*;
        Some(match name {
            "sum" => Sum,
            "prod" => Prod,
            "mean" => Mean,
            "amax" => Amax,
            "amin" => Amin,
            "all" => All,
            "any" => Any,
            "count_nonzero" => CountNonzero,
            _ => return None,
        })
    }
}

/// The reduced dims, deduplicated and checked; `None` means all.
pub fn reduced_dims(dims: Option<&[i64]>, ndim: usize) -> Result<Vec<bool>> {
    let mut mask = vec![dims.is_none() || dims == Some(&[]); ndim];
    let mut seen = vec![false; ndim.max(1)]; // a 0-d tensor has one dim to name (0 or -1)
    for &d in dims.unwrap_or(&[]) {
        let w = wrap_dim(d, ndim)?;
        if std::mem::replace(&mut seen[w], true) {
            bail!(Runtime, "dim {w} appears multiple times in the list of dims");
        }
        if ndim > 0 {
            mask[w] = true;
        }
    }
    Ok(mask)
}

/// The output shape: reduced dims dropped, or kept as 1 with `keepdim`.
pub fn out_shape(shape: &[usize], mask: &[bool], keepdim: bool) -> Vec<usize> {
    shape
        .iter()
        .zip(mask)
        .filter_map(|(&s, &r)| match (r, keepdim) {
            (false, _) => Some(s),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// `x` summed down to `shape`, which `x`'s shape is a broadcast of: the gradient of a
/// broadcast input.
pub fn sum_to(x: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let lead = x.ndim() - shape.len();
    let dims: Vec<i64> = (0..x.ndim()).filter(|&d| d < lead || (shape[d - lead] == 1 && x.shape()[d] != 1)).map(|d| d as i64).collect();
    if dims.is_empty() {
        return if x.shape() == shape { Ok(x.clone()) } else { x.reshape(&shape.iter().map(|&d| d as i64).collect::<Vec<_>>()) };
    }
    let summed = reduce(ReduceOp::Sum, x, Some(&dims), true, None)?;
    summed.reshape(&shape.iter().map(|&d| d as i64).collect::<Vec<_>>())
}

/// Reduces `x` over `dims` (all dims when `None` or empty), keeping them as size 1 with
/// `keepdim`; `dtype` casts the input first (`sum(dtype=)`). Errors: repeated or out-of-range
/// dims, `mean` of an integer tensor, `amax`/`amin` over an empty dim.
pub fn reduce(op: ReduceOp, x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    crate::autograd::track(&[x], || reduce_kernel(op, x, dims, keepdim, dtype), |y| {
        super::grad::reduce::record_reduce(op, x, reduced_dims(dims, x.ndim())?, keepdim, y, dims.is_none_or(|d| d.is_empty()))
    })
}

fn reduce_kernel(op: ReduceOp, x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    use ReduceOp::*;
    let mask = reduced_dims(dims, x.ndim())?;
    let x = match dtype {
        Some(d) => x.to_dtype(d)?,
        None => x.clone(),
    };
    let d = x.dtype();
    if d.is_complex() {
        return super::complex_reduce::reduce_complex(op, &x, &mask, keepdim);
    }
    if op == Mean && !d.is_float() {
        bail!(Runtime, "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}", d.legacy_name());
    }
    if matches!(op, Amax | Amin) && x.numel() == 0 {
        let name = if op == Amax { "amax" } else { "amin" };
        if dims.is_none_or(|d| d.is_empty()) {
            bail!(Runtime, "{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.");
        }
        if let Some(d) = (0..x.ndim()).find(|&d| mask[d] && x.shape()[d] == 0) {
            bail!(Index, "{name}(): Expected reduction dim {d} to have non-zero size.");
        }
    }
    let out_dtype = match op {
        Sum | Prod if !d.is_float() => DType::I64,
        All | Any => if d == DType::U8 { DType::U8 } else { DType::Bool },
        CountNonzero => DType::I64,
        _ => d,
    };
    let out = Tensor::empty_on(&out_shape(x.shape(), &mask, keepdim), out_dtype, x.device())?;
    crate::backend::of(x.device())?.reduce(op, &x, &mask, &out)?;
    // An integer `dtype` takes the int64 sum or product modulo its range (`sum(dtype=uint8)`).
    Ok(match dtype {
        Some(d) if d != out.dtype() => out.to_dtype(d)?,
        _ => out,
    })
}

/// `max`/`min` along one dim with the index of the first extreme (NaN counts as the extreme).
/// `dim = None` reduces the flattened tensor.
pub fn arg_reduce(x: &Tensor, dim: Option<i64>, keepdim: bool, max: bool) -> Result<(Tensor, Tensor)> {
    x.dtype().require_real(if max { "max_all" } else { "min_all" })?;
    crate::autograd::track(&[x], || arg_reduce_kernel(x, dim, keepdim, max), |(v, i)| {
        let d = dim.map(|d| x.wrap_dim(d)).transpose()?.filter(|_| x.ndim() > 0);
        super::grad::reduce::record_arg_reduce(x, d, keepdim, v, i, max)
    })
}

fn arg_reduce_kernel(x: &Tensor, dim: Option<i64>, keepdim: bool, max: bool) -> Result<(Tensor, Tensor)> {
    let name = if max { "max" } else { "min" };
    let (x, dim) = match dim {
        Some(d) => (x.clone(), x.wrap_dim(d)?),
        None => (x.reshape(&[-1])?, 0),
    };
    let scalar = x.ndim() == 0; // reduced as one element; the results stay 0-d, keepdim or not
    let x = if scalar { x.reshape(&[1])? } else { x };
    let n = x.shape()[dim];
    if n == 0 {
        bail!(Index, "{name}(): Expected reduction dim {dim} to have non-zero size.");
    }
    let mut mask = vec![false; x.ndim()];
    mask[dim] = true;
    let shape = out_shape(x.shape(), &mask, keepdim && !scalar);
    let values = Tensor::empty_on(&shape, x.dtype(), x.device())?;
    let indices = Tensor::empty_on(&shape, DType::I64, x.device())?;
    crate::backend::of(x.device())?.arg_reduce(&x, dim, max, &values, &indices)?;
    Ok((values, indices))
}
