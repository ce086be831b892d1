//! Indexing: advanced (NumPy) indexing get/put, gather/scatter, index_*, masked_*, take,
//! nonzero, tril/triu. Shapes, dtypes and autograd here; the backend checks the index values
//! (wrapping negatives where PyTorch wraps) as it runs the kernel.
use super::binary::{binary, BinaryOp, Operand};
use crate::autograd::{self, LinearFn};
use crate::backend;
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::broadcast_shapes;
use crate::tensor::Tensor;
use std::sync::Arc;

/// The shape side of an advanced index: the broadcast index shape `B`, the non-indexed ("rest")
/// dims, and the result shape with NumPy's placement rule (adjacent index dims stay in place,
/// separated ones go first).
pub struct IndexShape {
    /// `B`: the broadcast shape of the index tensors.
    pub b_shape: Vec<usize>,
    /// The dims of `x` no index names, in order.
    pub rest: Vec<usize>,
    /// The result's shape.
    pub out_shape: Vec<usize>,
    /// Permutation of the result dims that lists the `B` dims first, then the rest.
    pub to_work: Vec<i64>,
}

impl IndexShape {
    /// The shapes of `x[indices]`; an `Index` error for dims that are not distinct and increasing,
    /// index tensors that are not int32/int64, or index shapes that do not broadcast.
    pub fn new(x: &Tensor, indices: &[(usize, Tensor)]) -> Result<IndexShape> {
        let dims: Vec<usize> = indices.iter().map(|(d, _)| *d).collect();
        if dims.is_empty() || dims.windows(2).any(|w| w[0] >= w[1]) || dims.iter().any(|&d| d >= x.ndim()) {
            bail!(Index, "advanced index dims must be distinct, increasing and below {}, got {dims:?}", x.ndim());
        }
        let mut b_shape: Vec<usize> = vec![];
        for (_, idx) in indices {
            // Byte and bool masks arrive here as the coordinates of their nonzeros.
            if !matches!(idx.dtype(), DType::I64 | DType::I32) {
                bail!(Index, "tensors used as indices must be long, int, byte or bool tensors, got {}", idx.dtype());
            }
            b_shape = broadcast_shapes(&b_shape, idx.shape()).map_err(|_| {
                let shapes: Vec<String> = indices.iter().map(|(_, i)| format!("{:?}", i.shape())).collect();
                crate::error::Error::new(crate::ErrorKind::Index, format!("shape mismatch: indexing tensors could not be broadcast together with shapes {}", shapes.join(", ")))
            })?;
        }
        let rest: Vec<usize> = (0..x.ndim()).filter(|d| !dims.contains(d)).collect();
        let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
        let (nb, first) = (b_shape.len(), dims[0]);
        let lead = if adjacent { first } else { 0 };
        let mut out_shape: Vec<usize> = rest[..lead].iter().map(|&d| x.shape()[d]).collect();
        out_shape.extend(&b_shape);
        out_shape.extend(rest[lead..].iter().map(|&d| x.shape()[d]));
        let to_work = (lead..lead + nb).chain(0..lead).chain(lead + nb..out_shape.len()).map(|d| d as i64).collect();
        Ok(IndexShape { b_shape, rest, out_shape, to_work })
    }

    /// The shape and strides of `x`'s rest dims.
    pub fn rest_of(&self, x: &Tensor) -> (Vec<usize>, Vec<isize>) {
        self.rest.iter().map(|&d| (x.shape()[d], x.strides()[d])).unzip()
    }
}

/// `x[indices]` for advanced indices `(dim, integer tensor)` on distinct increasing dims. Its
/// derivative adds the gradient into zeros at the same indices.
pub fn index(x: &Tensor, indices: &[(usize, Tensor)]) -> Result<Tensor> {
    index_with(x, indices, true)
}

/// `index`, with negative indices wrapped (`wrap`) or refused.
fn index_with(x: &Tensor, indices: &[(usize, Tensor)], wrap: bool) -> Result<Tensor> {
    if !autograd::needs_grad(&[x]) {
        return gather_indexed(x, indices, wrap);
    }
    let (shape, ind) = (x.shape().to_vec(), Arc::new(indices.to_vec()));
    let i = ind.clone();
    let map: LinearFn = Arc::new(move |t: &Tensor| gather_indexed(t, &i, wrap));
    let adjoint: LinearFn = Arc::new(move |g: &Tensor| {
        let z = Tensor::zeros_on(&shape, g.dtype(), g.device())?;
        put(&z, &ind, g, true, wrap)?;
        Ok(z)
    });
    autograd::linear(["IndexBackward0", "IndexPutBackward0"], x, map, adjoint)
}

pub(crate) fn gather_indexed(x: &Tensor, indices: &[(usize, Tensor)], wrap: bool) -> Result<Tensor> {
    let backend = backend::serving(x, indices.iter().map(|(_, i)| i))?;
    let shape = IndexShape::new(x, indices)?;
    let out = Tensor::empty_on(&shape.out_shape, x.dtype(), x.device())?;
    backend.index(x, indices, &shape, wrap, &out)?;
    Ok(out)
}

/// `x[indices] = values` (or `+=` with `accumulate`), `values` broadcast to the indexing result.
/// Under autograd, `x`'s gradient passes except where it was overwritten, and `values` receive
/// the gradient at the indices.
pub fn index_put(x: &Tensor, indices: &[(usize, Tensor)], values: &Tensor, accumulate: bool) -> Result<()> {
    index_put_with(x, indices, values, accumulate, true)
}

/// `index_put`, with negative indices wrapped (`wrap`) or refused.
fn index_put_with(x: &Tensor, indices: &[(usize, Tensor)], values: &Tensor, accumulate: bool, wrap: bool) -> Result<()> {
    let inputs: Vec<&Tensor> = indices.iter().map(|(_, i)| i).chain([values]).collect();
    super::overlap::check_no_overlap(x, &inputs)?;
    autograd::inplace::in_place(x, &[values], || put(x, indices, values, accumulate, wrap), || {
        let fresh = {
            let _raw = autograd::untracked();
            let c = x.deep_clone()?;
            put(&c, indices, values, accumulate, wrap)?;
            c
        };
        let keep = if accumulate {
            None
        } else {
            let k = super::creation::full_on(x.shape(), super::binary::Scalar::Int(1), x.dtype(), x.device())?;
            put(&k, indices, &Tensor::scalar(0i64).to_dtype(x.dtype())?, false, wrap)?;
            Some(k)
        };
        let ind = indices.to_vec();
        let masked = keep.is_some();
        let saved: Vec<&Tensor> = keep.iter().collect();
        autograd::record("IndexPutBackward0", &[x, values], &[&fresh], &saved, move |ctx, g| {
            let gx = match (masked, ctx.needs_input_grad(0)) {
                (_, false) => None,
                (false, true) => Some(g[0].clone()),
                (true, true) => Some(binary(BinaryOp::Mul, Operand::Tensor(&g[0]), Operand::Tensor(&ctx.saved(0)?))?),
            };
            let gv = if ctx.needs_input_grad(1) { Some(index_with(&g[0], &ind, wrap)?) } else { None };
            Ok(vec![gx, gv])
        })?;
        Ok(fresh)
    })
}

fn put(x: &Tensor, indices: &[(usize, Tensor)], values: &Tensor, accumulate: bool, wrap: bool) -> Result<()> {
    let backend = backend::serving(x, indices.iter().map(|(_, i)| i).chain([values]))?;
    let shape = IndexShape::new(x, indices)?;
    // A 0-d CPU value (a Python number) goes with a tensor on any device: it moves there.
    let values = values.to_dtype(x.dtype())?.to_device(x.device())?;
    let values = values.broadcast_to(&shape.out_shape).map_err(|_| {
        crate::error::Error::new(crate::ErrorKind::Runtime, format!("shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result of shape {:?}", values.shape(), shape.out_shape))
    })?;
    backend.index_put(x, indices, &shape, &values, accumulate, wrap)?;
    x.bump_version();
    Ok(())
}

/// The reductions scatter can apply where several sources meet one destination.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reduce {
    /// Plain assignment (the last write wins).
    Assign,
    /// Added together (`"sum"`).
    Sum,
    /// Multiplied together (`"prod"`).
    Prod,
    /// Averaged, the destination's value included unless `include_self` is false (`"mean"`).
    Mean,
    /// The largest (`"amax"`).
    Amax,
    /// The smallest (`"amin"`).
    Amin,
}

impl Reduce {
    /// From PyTorch's `reduce=` string (`sum`/`add`, `prod`/`multiply`, `mean`, `amax`, `amin`);
    /// `None` for others.
    pub fn from_name(name: &str) -> Option<Reduce> {
        Some(match name {
            "sum" | "add" => Reduce::Sum,
            "prod" | "multiply" => Reduce::Prod,
            "mean" => Reduce::Mean,
            "amax" => Reduce::Amax,
            "amin" => Reduce::Amin,
            _ => return None,
        })
    }
}

/// Checks gather/scatter's shape rule: `index` has `x`'s rank and no dim larger than `limit`'s
/// (apart from `dim` for `x`).
fn check_index_shape(op: &str, x: &Tensor, index: &Tensor, dim: usize, src: Option<&Tensor>) -> Result<()> {
    if index.dtype() != DType::I64 {
        bail!(Runtime, "{op}(): Expected dtype int64 for index, got {}", index.dtype());
    }
    if index.ndim() != x.ndim() && !(index.ndim() <= 1 && x.ndim() <= 1) {
        bail!(Runtime, "Index tensor must have the same number of dimensions as input tensor ({op}: index has {} dims, input has {})", index.ndim(), x.ndim());
    }
    for d in 0..index.ndim() {
        let n = index.shape()[d];
        if d != dim && n > x.shape().get(d).copied().unwrap_or(1) {
            bail!(Runtime, "Size does not match at dimension {d} expected index {:?} to be smaller than self {:?} apart from dimension {dim}", index.shape(), x.shape());
        }
        if let Some(s) = src {
            if n > s.shape().get(d).copied().unwrap_or(1) {
                bail!(Runtime, "Expected index {:?} to be smaller than self {:?} apart from dimension {dim} and to be smaller size than src {:?}", index.shape(), x.shape(), s.shape());
            }
        }
    }
    Ok(())
}

/// `out[..., j, ...] = x[..., index[..., j, ...], ...]` along `dim` (PyTorch's `gather`). Its
/// derivative adds the gradient into zeros at the gathered positions.
pub fn gather(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    if !autograd::needs_grad(&[x]) {
        return gather_kernel(x, dim, index);
    }
    let (shape, i, j) = (x.shape().to_vec(), index.clone(), index.clone());
    let map: LinearFn = Arc::new(move |t: &Tensor| gather_kernel(t, dim, &i));
    let adjoint: LinearFn = Arc::new(move |g: &Tensor| scatter_zeros(g, dim, &j, &shape));
    autograd::linear(["GatherBackward0", "ScatterAddBackward0"], x, map, adjoint)
}

/// Zeros of `shape` with `g` added at `index` along `dim`: the derivative of `gather` (and of
/// every op that picks one element per output along a dim: max, sort, topk, ...).
pub fn gather_adjoint(g: &Tensor, dim: i64, index: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let (shape, i, j) = (shape.to_vec(), index.clone(), index.clone());
    let map: LinearFn = Arc::new(move |g: &Tensor| scatter_zeros(g, dim, &i, &shape));
    let adjoint: LinearFn = Arc::new(move |t: &Tensor| gather_kernel(t, dim, &j));
    autograd::linear(["ScatterAddBackward0", "GatherBackward0"], g, map, adjoint)
}

fn scatter_zeros(g: &Tensor, dim: i64, index: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let z = Tensor::zeros_on(shape, g.dtype(), g.device())?;
    scatter_kernel(&z, dim, index, g, Reduce::Sum, true)?;
    Ok(z)
}

fn gather_kernel(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let d = x.wrap_dim(dim)?;
    check_index_shape("gather", x, index, d, None)?;
    let backend = backend::serving(x, [index])?;
    let out = Tensor::empty_on(index.shape(), x.dtype(), x.device())?;
    backend.gather(x, d, index, &out)?;
    Ok(out)
}

/// `self[..., index[..., j, ...], ...] (op)= src[..., j, ...]` along `dim`, in place. With
/// `include_self=False` every destination that receives a value starts from the op's identity;
/// `Mean` divides by the number of values that met there (floor division for integers).
///
/// Under autograd (`Assign` and `Sum` only): `x`'s gradient passes except where assignment
/// overwrote it, and `src` receives the gradient gathered at `index`.
pub fn scatter_(x: &Tensor, dim: i64, index: &Tensor, src: &Tensor, op: Reduce, include_self: bool) -> Result<()> {
    super::overlap::check_no_overlap(x, &[index, src])?;
    autograd::inplace::in_place(x, &[src], || scatter_kernel(x, dim, index, src, op, include_self), || {
        if !matches!(op, Reduce::Assign | Reduce::Sum) || !include_self {
            bail!(Runtime, "derivative for scatter_reduce with reduce={op:?} and include_self={include_self} is not implemented");
        }
        let fresh = {
            let _raw = autograd::untracked();
            let c = x.deep_clone()?;
            scatter_kernel(&c, dim, index, src, op, include_self)?;
            c
        };
        let keep = if op == Reduce::Assign {
            let k = super::creation::full_on(x.shape(), super::binary::Scalar::Int(1), x.dtype(), x.device())?;
            scatter_kernel(&k, dim, index, &Tensor::zeros_on(&[], x.dtype(), x.device())?.broadcast_to(index.shape())?, Reduce::Assign, true)?;
            Some(k)
        } else {
            None
        };
        let name = if op == Reduce::Assign { "ScatterBackward0" } else { "ScatterAddBackward0" };
        let masked = keep.is_some();
        let saved: Vec<&Tensor> = std::iter::once(index).chain(keep.iter()).collect();
        autograd::record(name, &[x, src], &[&fresh], &saved, move |ctx, g| {
            let gx = match (masked, ctx.needs_input_grad(0)) {
                (_, false) => None,
                (false, true) => Some(g[0].clone()),
                (true, true) => Some(binary(BinaryOp::Mul, Operand::Tensor(&g[0]), Operand::Tensor(&ctx.saved(1)?))?),
            };
            let gs = if ctx.needs_input_grad(1) { Some(gather(&g[0], dim, &ctx.saved(0)?)?) } else { None };
            Ok(vec![gx, gs])
        })?;
        Ok(fresh)
    })
}

fn scatter_kernel(x: &Tensor, dim: i64, index: &Tensor, src: &Tensor, op: Reduce, include_self: bool) -> Result<()> {
    let d = x.wrap_dim(dim)?;
    if x.dtype().is_complex() {
        match op {
            Reduce::Amax => x.dtype().require_real("scatter_gather_tensor_cpu_reduce_amax")?,
            Reduce::Amin => x.dtype().require_real("scatter_gather_tensor_cpu_reduce_amin")?,
            _ => {}
        }
    }
    check_index_shape("scatter", x, index, d, Some(src))?;
    if src.ndim() != index.ndim() {
        bail!(Runtime, "Index tensor must have the same number of dimensions as src tensor ({} and {})", index.ndim(), src.ndim());
    }
    let backend = backend::serving(x, [index, src])?;
    backend.scatter(x, d, index, &src.to_dtype(x.dtype())?, op, include_self)?;
    x.bump_version();
    Ok(())
}

/// Checks `index_add`/`index_copy`'s rule: a 0-d or 1-d index with one entry per source slice,
/// and a source shaped like `x` apart from `dim`.
fn check_index_source(op: &str, x: &Tensor, d: usize, index: &Tensor, source: &Tensor) -> Result<()> {
    if index.ndim() > 1 {
        bail!(Index, "{op}(): Index is supposed to be a vector, got a tensor with {} dims", index.ndim());
    }
    if index.dtype() != DType::I64 && index.dtype() != DType::I32 {
        bail!(Index, "{op}(): Expected dtype int32/int64 for index, got {}", index.dtype());
    }
    let n = source.shape().get(d).copied().unwrap_or(1);
    if index.numel() != n {
        bail!(Index, "{op}(): Number of indices ({}) should be equal to source.size(dim) ({n})", index.numel());
    }
    let same_rest = source.ndim().max(1) == x.ndim().max(1)
        && (0..x.ndim()).all(|k| k == d || source.shape().get(k) == x.shape().get(k));
    if !same_rest {
        bail!(Runtime, "{op}(): source {:?} and self {:?} must have the same shape apart from dimension {d}", source.shape(), x.shape());
    }
    Ok(())
}

/// `x` seen with at least one dim, so a 0-d tensor indexes like `[1]`.
fn at_least_1d(t: &Tensor) -> Tensor {
    if t.ndim() == 0 {
        t.reshape(&[1]).expect("a scalar always views as [1]")
    } else {
        t.clone()
    }
}

/// `index_add_` (`alpha` already applied to `source`) and `index_copy_`: slice `i` of `source`
/// along `dim` goes to slice `index[i]` of `x`.
pub fn index_add_or_copy_(x: &Tensor, dim: i64, index: &Tensor, source: &Tensor, accumulate: bool) -> Result<()> {
    let op = if accumulate { "index_add_" } else { "index_copy_" };
    let d = x.wrap_dim(dim)?;
    check_index_source(op, x, d, index, source)?;
    let x1 = at_least_1d(x);
    let src = if x.ndim() == 0 { source.reshape(&[-1])? } else { source.clone() };
    // Unlike indexing, these refuse negative indices, as PyTorch does.
    index_put_with(&x1, &[(d, at_least_1d(index))], &src, accumulate, false)
}

/// `index_fill_`: every slice of `x` named by `index` along `dim` becomes `value` (a 0-d tensor).
pub fn index_fill_(x: &Tensor, dim: i64, index: &Tensor, value: &Tensor) -> Result<()> {
    let d = x.wrap_dim(dim)?;
    if index.ndim() > 1 {
        bail!(Index, "index_fill_(): Index is supposed to be a vector, got a tensor with {} dims", index.ndim());
    }
    if index.dtype() != DType::I64 {
        bail!(Index, "index_fill_(): Expected dtype int64 for index, got {}", index.dtype());
    }
    if value.ndim() != 0 {
        bail!(Runtime, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).", value.ndim());
    }
    let x1 = at_least_1d(x);
    index_put(&x1, &[(d, at_least_1d(index))], value, false)
}

/// `index_select`: the slices of `x` named by a 0-d or 1-d `index` along `dim`.
pub fn index_select(x: &Tensor, dim: i64, positions: &Tensor) -> Result<Tensor> {
    let d = x.wrap_dim(dim)?;
    if positions.ndim() > 1 {
        bail!(Index, "index_select(): Index is supposed to be a vector, got a tensor with {} dims", positions.ndim());
    }
    if positions.dtype() != DType::I64 && positions.dtype() != DType::I32 {
        bail!(Index, "index_select(): Expected dtype int32 or int64 for index, got {}", positions.dtype());
    }
    let out = index_with(&at_least_1d(x), &[(d, at_least_1d(positions))], false)?;
    if x.ndim() == 0 {
        return out.reshape(&[]);
    }
    Ok(out)
}

/// `take`: `x` read as if flattened, at `index` (negatives wrap); the result has `index`'s shape.
pub fn take(x: &Tensor, positions: &Tensor) -> Result<Tensor> {
    if positions.dtype() != DType::I64 {
        bail!(Runtime, "take(): Expected a long tensor for index, but got {}", positions.dtype());
    }
    if x.numel() == 0 && positions.numel() > 0 {
        bail!(Index, "take(): tried to take from an empty tensor");
    }
    index(&x.reshape(&[-1])?, &[(0, positions.clone())])
}

/// The derivative of `take(x, positions)` for `x` of `shape`: zeros of `shape` with `g` added
/// at `positions` (which must be in range).
pub fn take_adjoint(g: &Tensor, positions: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let n = crate::layout::numel(shape) as i64;
    let size: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let (p, q) = (positions.clone(), positions.clone());
    let map: LinearFn = Arc::new(move |g: &Tensor| {
        let z = Tensor::zeros_on(&[n as usize], g.dtype(), g.device())?;
        put(&z, &[(0, p.clone())], g, true, true)?;
        z.reshape(&size)
    });
    let adjoint: LinearFn = Arc::new(move |t: &Tensor| gather_indexed(&t.reshape(&[-1])?, &[(0, q.clone())], true));
    autograd::linear(["TakeBackwardBackward0", "TakeBackward0"], g, map, adjoint)
}

fn check_bool_mask(op: &str, mask: &Tensor) -> Result<()> {
    if mask.dtype() != DType::Bool {
        bail!(Runtime, "{op} only supports boolean masks, but got mask with dtype {}", mask.dtype());
    }
    Ok(())
}

/// `masked_fill` into `out` (which may be `x` itself): `value` where `mask`, else `x`.
pub fn masked_fill_into(x: &Tensor, mask: &Tensor, value: &Tensor, out: &Tensor) -> Result<()> {
    if out.is_alias_of(x) {
        return autograd::inplace::in_place(out, &[value, mask], || masked_fill_kernel(x, mask, value, out), || masked_fill(x, mask, value));
    }
    autograd::inplace::out_write(out, &[x, mask, value], || masked_fill_kernel(x, mask, value, out), || masked_fill(x, mask, value))
}

fn masked_fill_kernel(x: &Tensor, mask: &Tensor, value: &Tensor, out: &Tensor) -> Result<()> {
    check_bool_mask("masked_fill_", mask)?;
    if value.ndim() != 0 {
        bail!(Runtime, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).", value.ndim());
    }
    let backend = backend::serving(out, [x, mask, value])?;
    let shape = out.shape();
    let (m, xb, v) = (mask.broadcast_to(shape)?, x.broadcast_to(shape)?, value.to_dtype(out.dtype())?.to_device(out.device())?.broadcast_to(shape)?);
    backend.where_(&m, &v, &xb, out)?;
    out.bump_version();
    Ok(())
}

/// `masked_fill`: a fresh tensor of `x`'s dtype and the broadcast shape of `x` and `mask`.
pub fn masked_fill(x: &Tensor, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
    let kernel = || {
        let out = Tensor::empty_on(&broadcast_shapes(x.shape(), mask.shape())?, x.dtype(), x.device())?;
        masked_fill_kernel(x, mask, value, &out)?;
        Ok(out)
    };
    autograd::track(&[x, value], kernel, |y| super::grad::index::record_masked_fill(x, mask, value, y))
}

/// The coordinates (one int64 row per element) of every non-zero element, in row-major order.
pub fn nonzero(x: &Tensor) -> Result<Tensor> {
    backend::of(x.device())?.nonzero(x)
}

/// `masked_select`: the elements of `x` where `mask` (both broadcast), as a 1-d tensor in
/// row-major order.
///
/// Its derivative writes the gradient back at the selected positions (then sums it over the
/// dims `mask` broadcast `x` along).
pub fn masked_select(x: &Tensor, mask: &Tensor) -> Result<Tensor> {
    check_bool_mask("masked_select:", mask)?;
    if !autograd::needs_grad(&[x]) {
        return masked_select_kernel(x, mask);
    }
    let shape = broadcast_shapes(x.shape(), mask.shape())?;
    let (m, n) = (mask.broadcast_to(&shape)?, mask.broadcast_to(&shape)?);
    let map: LinearFn = Arc::new(move |t: &Tensor| masked_select_kernel(t, &m));
    let adjoint: LinearFn = Arc::new(move |g: &Tensor| {
        let z = Tensor::zeros_on(n.shape(), g.dtype(), g.device())?;
        masked_scatter_(&z, &n, g)?;
        Ok(z)
    });
    autograd::linear(["MaskedSelectBackward0", "MaskedScatterBackward0"], &x.broadcast_to(&shape)?, map, adjoint)
}

fn masked_select_kernel(x: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let backend = backend::serving(x, [mask])?;
    let shape = broadcast_shapes(x.shape(), mask.shape())?;
    backend.masked_select(&x.broadcast_to(&shape)?, &mask.broadcast_to(&shape)?)
}

/// `masked_scatter_`: the elements of `x` where `mask` take `source`'s elements in order.
pub fn masked_scatter_(x: &Tensor, mask: &Tensor, source: &Tensor) -> Result<()> {
    check_bool_mask("masked_scatter_:", mask)?;
    let coords = nonzero(&mask.broadcast_to(x.shape())?)?;
    let count = coords.shape()[0];
    if source.numel() < count {
        bail!(Runtime, "masked_scatter: expected source to have at least {count} elements, but got {}", source.numel());
    }
    if source.dtype() != x.dtype() {
        bail!(Runtime, "masked_scatter_: expected self and source to have same dtypes but got {} and {}", x.dtype(), source.dtype());
    }
    let values = source.reshape(&[-1])?.narrow(0, 0, count as i64)?;
    let x1 = at_least_1d(x);
    index_put(&x1, &coordinate_columns(&coords, x1.ndim())?, &values, false)
}

/// The columns of a `nonzero` result as advanced indices on dims `0..ndim` (a 0-d tensor's
/// single coordinate column is all zeros, which indexes it seen as `[1]`).
fn coordinate_columns(coords: &Tensor, ndim: usize) -> Result<Vec<(usize, Tensor)>> {
    if coords.shape()[1] == 0 {
        return Ok(vec![(0, Tensor::zeros_on(&[coords.shape()[0]], DType::I64, coords.device())?)]);
    }
    Ok((0..ndim).map(|k| (k, coords.select(1, k as i64).expect("nonzero has one column per dim"))).collect())
}

/// `tril` (`upper = false`) or `triu` of the last two dims into `out` (which may be `x`): keeps
/// the elements on and below (above) the `diagonal`-th diagonal, zeroes the rest.
pub fn tri_into(x: &Tensor, diagonal: i64, upper: bool, out: &Tensor) -> Result<()> {
    if out.is_alias_of(x) {
        return autograd::inplace::in_place(out, &[], || tri_kernel(x, diagonal, upper, out), || tri(x, diagonal, upper));
    }
    autograd::inplace::out_write(out, &[x], || tri_kernel(x, diagonal, upper, out), || tri(x, diagonal, upper))
}

fn tri_kernel(x: &Tensor, diagonal: i64, upper: bool, out: &Tensor) -> Result<()> {
    if x.ndim() < 2 {
        bail!(Runtime, "{}: input tensor must have at least 2 dimensions", if upper { "triu" } else { "tril" });
    }
    backend::serving(out, [x])?.tri(x, diagonal, upper, out)?;
    out.bump_version();
    Ok(())
}

/// `tril`/`triu` into a fresh tensor.
pub fn tri(x: &Tensor, diagonal: i64, upper: bool) -> Result<Tensor> {
    let kernel = || {
        let out = Tensor::empty_on(x.shape(), x.dtype(), x.device())?;
        tri_kernel(x, diagonal, upper, &out)?;
        Ok(out)
    };
    autograd::track(&[x], kernel, |y| super::grad::index::record_tri(x, diagonal, upper, y))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[i64]) -> Tensor {
        Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
    }

    #[test]
    fn index_plan_places_separated_dims_first() {
        let x = Tensor::zeros(&[2, 3, 4, 5], DType::F32).unwrap();
        let i = ints(&[0, 1]);
        assert_eq!(index(&x, &[(1, i.clone()), (2, i.clone())]).unwrap().shape(), &[2, 2, 5]);
        assert_eq!(index(&x, &[(1, i.clone()), (3, i.clone())]).unwrap().shape(), &[2, 2, 4]);
        let bad = index(&x, &[(1, i.clone()), (2, ints(&[0, 1, 2]))]).unwrap_err();
        assert_eq!(bad.kind, crate::ErrorKind::Index);
        assert!(bad.message.contains("could not be broadcast"));
    }

    #[test]
    fn gather_and_scatter_check_before_touching_memory() {
        let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
        assert_eq!(gather(&x, 0, &ints(&[2, 0])).unwrap().to_vec::<f32>().unwrap(), vec![3.0, 1.0]);
        assert_eq!(gather(&x, 0, &ints(&[3])).unwrap_err().kind, crate::ErrorKind::Index);
        let i32_index = Tensor::from_vec(vec![0i32], &[1]).unwrap();
        assert!(gather(&x, 0, &i32_index).unwrap_err().message.contains("Expected dtype int64 for index"));
        let src = Tensor::from_vec(vec![1.0f32, 1.0], &[2]).unwrap();
        scatter_(&x, 0, &ints(&[1, 1]), &src, Reduce::Sum, true).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![1.0, 4.0, 3.0]);
        assert!(scatter_(&x, 0, &ints(&[-1]), &src, Reduce::Assign, true).is_err());
    }

    #[test]
    fn nonzero_is_in_row_major_order() {
        let x = Tensor::from_vec(vec![0i32, 1, 1, 0, 0, 1], &[2, 3]).unwrap();
        assert_eq!(nonzero(&x).unwrap().to_vec::<i64>().unwrap(), vec![0, 1, 0, 2, 1, 2]);
        let t = x.transpose(0, 1).unwrap();
        assert_eq!(nonzero(&t).unwrap().to_vec::<i64>().unwrap(), vec![1, 0, 2, 0, 2, 1]);
    }
}
