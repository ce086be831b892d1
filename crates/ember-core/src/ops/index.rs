//! Indexing kernels: advanced (NumPy) indexing get/put, gather/scatter, index_*, masked_*,
//! take, nonzero, tril/triu. Every index is checked (and wrapped where PyTorch wraps) into a
//! fresh int64 tensor before a kernel reads or writes through it.
use super::binary::{binary, BinaryOp, Operand};
use crate::backend::cpu::map::{binary_into, ternary_into, unary_into, Ptr};
use crate::autograd::{self, LinearFn};
use crate::bail;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::layout::broadcast_shapes;
use crate::parallel::{for_range, pool, GRAIN};
use crate::strided::{unravel, Plan};
use crate::tensor::Tensor;
use crate::with_dtype;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Binds `$T` to an unsigned type of `$size` bytes, for kernels that only move elements.
macro_rules! with_width {
    ($size:expr, $T:ident, $body:expr) => {
        match $size {
            1 => {
                type $T = u8;
                $body
            }
            2 => {
                type $T = u16;
                $body
            }
            4 => {
                type $T = u32;
                $body
            }
            // complex128: two u64, so 8-byte aligned NumPy buffers are read correctly.
            16 => {
                type $T = [u64; 2];
                $body
            }
            _ => {
                type $T = u64;
                $body
            }
        }
    };
}

/// PyTorch's name for an int index dtype check: only integer tensors may index.
pub fn require_integer(index: &Tensor, what: &str) -> Result<()> {
    if !index.dtype().is_int() {
        bail!(Index, "{what}: tensors used as indices must be long, int, byte or bool tensors, got {}", index.dtype());
    }
    Ok(())
}

/// `index` as a contiguous int64 tensor whose values are checked against `size` (negatives wrapped
/// when `wrap`, as advanced indexing and `take` do; gather/scatter/index_* refuse them).
pub fn checked_index(index: &Tensor, size: usize, dim: usize, wrap: bool) -> Result<Tensor> {
    require_integer(index, "index")?;
    let out = Tensor::uninit(index.shape(), DType::I64)?;
    let (found, bad) = (AtomicBool::new(false), AtomicI64::new(0));
    let n = size as i64;
    with_dtype!(index.dtype(), I, unary_into::<I, i64>(index, &out, |v| {
        let i = v.to_i64();
        let w = if wrap && i < 0 { i + n } else { i };
        if (0..n).contains(&w) {
            w
        } else {
            bad.store(i, Ordering::Relaxed);
            found.store(true, Ordering::Relaxed);
            0
        }
    }));
    if found.load(Ordering::Relaxed) {
        bail!(Index, "index {} is out of bounds for dimension {dim} with size {size}", bad.load(Ordering::Relaxed));
    }
    Ok(out)
}

/// `sum_d coord_d * strides[d]` for every position of `shape`, as a contiguous int64 tensor.
fn layout_offsets(shape: &[usize], strides: &[isize]) -> Result<Tensor> {
    let acc = Tensor::zeros(shape, DType::I64)?;
    for d in 0..shape.len() {
        let coord = super::creation::from_index_fn::<i64>(shape[d], |i| i as i64)?;
        let mut l = vec![1usize; shape.len()];
        l[d] = shape[d];
        let coord = coord.reshape(&l.iter().map(|&s| s as i64).collect::<Vec<_>>()).unwrap().broadcast_to(shape).unwrap();
        let s = strides[d] as i64;
        binary_into::<i64, i64, i64>(&acc, &coord, &acc, |o, c| o + c * s);
    }
    Ok(acc)
}

/// Calls `f(offsets, len)` for every run of `plan`, serially (the caller parallelises outside).
pub(crate) fn for_each_run_serial<const N: usize>(plan: &Plan<N>, mut f: impl FnMut([isize; N], usize)) {
    let inner = plan.inner_len();
    let outer = &plan.shape[..plan.shape.len() - 1];
    let mut idx = vec![0usize; outer.len()];
    for _ in 0..outer.iter().product::<usize>() {
        f(std::array::from_fn(|k| idx.iter().zip(&plan.strides[k]).map(|(&i, &s)| i as isize * s).sum()), inner);
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < outer[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Calls `f(line, offsets)` for every line along `dim` of `shape`, in parallel over lines. A line
/// is never split across threads, so writes that can only collide within a line (scatter,
/// index_add along `dim`) stay race-free and in order.
pub(crate) fn for_each_line<const N: usize>(shape: &[usize], dim: usize, strides: [&[isize]; N], f: impl Fn(usize, [isize; N]) + Sync) {
    let outer: Vec<usize> = (0..shape.len()).filter(|&d| d != dim).map(|d| shape[d]).collect();
    let outer_strides: [Vec<isize>; N] =
        std::array::from_fn(|k| (0..shape.len()).filter(|&d| d != dim).map(|d| strides[k][d]).collect());
    let lines: usize = outer.iter().product();
    let len = shape.get(dim).copied().unwrap_or(1);
    if lines == 0 || len == 0 {
        return;
    }
    for_range(lines, (GRAIN / len).max(1), |start, end| {
        let mut idx = unravel(start, &outer);
        for line in start..end {
            f(line, std::array::from_fn(|k| idx.iter().zip(&outer_strides[k]).map(|(&i, &s)| i as isize * s).sum()));
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < outer[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    });
}

/// How an advanced index maps onto its tensor: the broadcast index shape `B`, each position's
/// element offset into the indexed tensor, the non-indexed ("rest") dims, and the result shape
/// with NumPy's placement rule (adjacent index dims stay in place, separated ones go first).
struct IndexPlan {
    offsets: Tensor,
    rest_shape: Vec<usize>,
    rest_strides: Vec<isize>,
    out_shape: Vec<usize>,
    /// Permutation of the result dims that lists the `B` dims first, then the rest.
    to_work: Vec<i64>,
}

impl IndexPlan {
    fn new(x: &Tensor, indices: &[(usize, Tensor)]) -> Result<IndexPlan> {
        let dims: Vec<usize> = indices.iter().map(|(d, _)| *d).collect();
        if dims.is_empty() || dims.windows(2).any(|w| w[0] >= w[1]) || dims.iter().any(|&d| d >= x.ndim()) {
            bail!(Index, "advanced index dims must be distinct, increasing and below {}, got {dims:?}", x.ndim());
        }
        let mut b_shape: Vec<usize> = vec![];
        for (_, idx) in indices {
            b_shape = broadcast_shapes(&b_shape, idx.shape()).map_err(|_| {
                let shapes: Vec<String> = indices.iter().map(|(_, i)| format!("{:?}", i.shape())).collect();
                crate::error::Error::new(crate::ErrorKind::Index, format!("shape mismatch: indexing tensors could not be broadcast together with shapes {}", shapes.join(", ")))
            })?;
        }
        let offsets = Tensor::zeros(&b_shape, DType::I64)?;
        let rest: Vec<usize> = (0..x.ndim()).filter(|d| !dims.contains(d)).collect();
        // No element moves when another dim is empty: PyTorch checks no index then, nor does this.
        let moves_nothing = rest.iter().any(|&d| x.shape()[d] == 0);
        for (d, idx) in indices {
            // Byte and bool masks arrive here as the coordinates of their nonzeros.
            if !matches!(idx.dtype(), DType::I64 | DType::I32) {
                bail!(Index, "tensors used as indices must be long, int, byte or bool tensors, got {}", idx.dtype());
            }
            if moves_nothing {
                continue;
            }
            let checked = checked_index(idx, x.shape()[*d], *d, true)?.broadcast_to(&b_shape)?;
            let s = x.strides()[*d] as i64;
            binary_into::<i64, i64, i64>(&offsets, &checked, &offsets, |o, i| o + i * s);
        }
        let adjacent = dims.windows(2).all(|w| w[1] == w[0] + 1);
        let (nb, first) = (b_shape.len(), dims[0]);
        let lead = if adjacent { first } else { 0 };
        let rest_shape: Vec<usize> = rest.iter().map(|&d| x.shape()[d]).collect();
        let mut out_shape = rest_shape[..lead].to_vec();
        out_shape.extend(&b_shape);
        out_shape.extend(&rest_shape[lead..]);
        let to_work = (lead..lead + nb).chain(0..lead).chain(lead + nb..out_shape.len()).map(|d| d as i64).collect();
        Ok(IndexPlan { offsets, rest_strides: rest.iter().map(|&d| x.strides()[d]).collect(), rest_shape, out_shape, to_work })
    }
}

/// For every index position b: `op(dst[dst_offs[b] + r], src[src_offs[b] + r])` over the rest
/// positions r. Blocks run in parallel unless `ordered` (accumulation, where two blocks may hit
/// one element); then each block's rest runs in parallel instead.
#[allow(clippy::too_many_arguments)]
fn move_blocks<T: Copy + Send + Sync>(
    dst: Ptr<T>,
    dst_offs: &Tensor,
    dst_rest: &[isize],
    src: Ptr<T>,
    src_offs: &Tensor,
    src_rest: &[isize],
    rest_shape: &[usize],
    ordered: bool,
    op: impl Fn(*mut T, T) + Sync,
) {
    let nb = dst_offs.numel();
    let rest_n: usize = rest_shape.iter().product();
    if nb == 0 || rest_n == 0 {
        return;
    }
    let plan = Plan::new(rest_shape, [dst_rest, src_rest]);
    let [sd, ss] = plan.inner_strides();
    let (pd, ps) = (Ptr(dst_offs.data_ptr::<i64>()), Ptr(src_offs.data_ptr::<i64>()));
    let run = |b: usize, [od, os]: [isize; 2], n: usize| unsafe {
        let (d, s) = (dst.at(*pd.at(b as isize) as isize + od), src.at(*ps.at(b as isize) as isize + os));
        for k in 0..n as isize {
            op(d.offset(k * sd), *s.offset(k * ss));
        }
    };
    if ordered || (nb < pool().current_num_threads() && rest_n >= GRAIN) {
        for b in 0..nb {
            plan.for_each_run(|offs, n| run(b, offs, n));
        }
    } else {
        for_range(nb, (GRAIN / rest_n).max(1), |start, end| {
            for b in start..end {
                for_each_run_serial(&plan, |offs, n| run(b, offs, n));
            }
        });
    }
}

/// `x[indices]` for advanced indices `(dim, integer tensor)` on distinct increasing dims. Its
/// derivative adds the gradient into zeros at the same indices.
pub fn index(x: &Tensor, indices: &[(usize, Tensor)]) -> Result<Tensor> {
    if !autograd::needs_grad(&[x]) {
        return gather_indexed(x, indices);
    }
    let (shape, ind) = (x.shape().to_vec(), Arc::new(indices.to_vec()));
    let i = ind.clone();
    let map: LinearFn = Arc::new(move |t: &Tensor| gather_indexed(t, &i));
    let adjoint: LinearFn = Arc::new(move |g: &Tensor| {
        let z = Tensor::zeros(&shape, g.dtype())?;
        put(&z, &ind, g, true)?;
        Ok(z)
    });
    autograd::linear(["IndexBackward0", "IndexPutBackward0"], x, map, adjoint)
}

fn gather_indexed(x: &Tensor, indices: &[(usize, Tensor)]) -> Result<Tensor> {
    let plan = IndexPlan::new(x, indices)?;
    let out = Tensor::uninit(&plan.out_shape, x.dtype())?;
    let work = out.permute(&plan.to_work)?;
    let nb = plan.offsets.ndim();
    let out_offs = layout_offsets(&work.shape()[..nb], &work.strides()[..nb])?;
    with_width!(x.dtype().size(), T, move_blocks::<T>(
        Ptr(out.byte_ptr() as *mut T),
        &out_offs,
        &work.strides()[nb..],
        Ptr(x.byte_ptr() as *mut T),
        &plan.offsets,
        &plan.rest_strides,
        &plan.rest_shape,
        false,
        |d, s| unsafe { *d = s },
    ));
    Ok(out)
}

/// `x[indices] = values` (or `+=` with `accumulate`), `values` broadcast to the indexing result.
/// Under autograd, `x`'s gradient passes except where it was overwritten, and `values` receive
/// the gradient at the indices.
pub fn index_put(x: &Tensor, indices: &[(usize, Tensor)], values: &Tensor, accumulate: bool) -> Result<()> {
    let inputs: Vec<&Tensor> = indices.iter().map(|(_, i)| i).chain([values]).collect();
    super::overlap::check_no_overlap(x, &inputs)?;
    autograd::inplace::in_place(x, &[values], || put(x, indices, values, accumulate), || {
        let fresh = {
            let _raw = autograd::untracked();
            let c = x.deep_clone();
            put(&c, indices, values, accumulate)?;
            c
        };
        let keep = if accumulate {
            None
        } else {
            let k = super::creation::full(x.shape(), super::binary::Scalar::Int(1), x.dtype())?;
            put(&k, indices, &Tensor::scalar(0i64).to_dtype(x.dtype()), false)?;
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
            let gv = if ctx.needs_input_grad(1) { Some(index(&g[0], &ind)?) } else { None };
            Ok(vec![gx, gv])
        })?;
        Ok(fresh)
    })
}

fn put(x: &Tensor, indices: &[(usize, Tensor)], values: &Tensor, accumulate: bool) -> Result<()> {
    let plan = IndexPlan::new(x, indices)?;
    let values = values.to_dtype(x.dtype());
    let values = values.broadcast_to(&plan.out_shape).map_err(|_| {
        crate::error::Error::new(crate::ErrorKind::Runtime, format!("shape mismatch: value tensor of shape {:?} cannot be broadcast to indexing result of shape {:?}", values.shape(), plan.out_shape))
    })?;
    let work = values.permute(&plan.to_work)?;
    let nb = plan.offsets.ndim();
    let src_offs = layout_offsets(&work.shape()[..nb], &work.strides()[..nb])?;
    if accumulate && x.dtype().is_complex() {
        crate::with_complex!(x.dtype(), T, move_blocks::<T>(
            Ptr(x.data_ptr::<T>()),
            &plan.offsets,
            &plan.rest_strides,
            Ptr(values.data_ptr::<T>()),
            &src_offs,
            &work.strides()[nb..],
            &plan.rest_shape,
            true,
            |d, s| unsafe { *d += s },
        ));
    } else if accumulate {
        with_dtype!(x.dtype(), T, move_blocks::<T>(
            Ptr(x.data_ptr::<T>()),
            &plan.offsets,
            &plan.rest_strides,
            Ptr(values.data_ptr::<T>()),
            &src_offs,
            &work.strides()[nb..],
            &plan.rest_shape,
            true,
            |d, s| unsafe { *d = combine(Reduce::Sum, *d, s) },
        ));
    } else {
        with_width!(x.dtype().size(), T, move_blocks::<T>(
            Ptr(x.byte_ptr() as *mut T),
            &plan.offsets,
            &plan.rest_strides,
            Ptr(values.byte_ptr() as *mut T),
            &src_offs,
            &work.strides()[nb..],
            &plan.rest_shape,
            false,
            |d, s| unsafe { *d = s },
        ));
    }
    x.bump_version();
    Ok(())
}

/// The reductions scatter can apply where several sources meet one destination.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reduce {
    /// Plain assignment (the last write wins).
    Assign,
    Sum,
    Prod,
    Mean,
    Amax,
    Amin,
}

impl Reduce {
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

    /// The value a destination starts from when `include_self=False`.
    fn identity<T: Element>(self) -> T {
        let float = T::DTYPE.is_float();
        match self {
            Reduce::Prod => T::one(),
            Reduce::Amax if float => T::from_f64(f64::NEG_INFINITY),
            Reduce::Amin if float => T::from_f64(f64::INFINITY),
            Reduce::Amax => T::from_i64(int_limit::<T>(false)),
            Reduce::Amin => T::from_i64(int_limit::<T>(true)),
            _ => T::zero(),
        }
    }
}

fn int_limit<T: Element>(max: bool) -> i64 {
    let (lo, hi) = match T::DTYPE {
        DType::Bool => (0, 1),
        DType::U8 => (0, u8::MAX as i64),
        DType::I8 => (i8::MIN as i64, i8::MAX as i64),
        DType::I16 => (i16::MIN as i64, i16::MAX as i64),
        DType::I32 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    };
    if max {
        hi
    } else {
        lo
    }
}

/// `a (op) b` in `T`: floats through f64, complex numbers through complex128 (the ordering
/// reductions are refused on them before a kernel runs), integers wrapping in i64, bools as logic.
#[inline(always)]
fn combine<T: Element>(op: Reduce, a: T, b: T) -> T {
    if T::DTYPE.is_complex() {
        let (x, y) = (a.to_c128(), b.to_c128());
        T::from_c128(match op {
            Reduce::Assign => y,
            Reduce::Prod => x * y,
            _ => x + y,
        })
    } else if T::DTYPE.is_float() {
        let (x, y) = (a.to_f64(), b.to_f64());
        T::from_f64(match op {
            Reduce::Assign => y,
            Reduce::Sum | Reduce::Mean => x + y,
            Reduce::Prod => x * y,
            Reduce::Amax => if x.is_nan() || y.is_nan() { f64::NAN } else { x.max(y) },
            Reduce::Amin => if x.is_nan() || y.is_nan() { f64::NAN } else { x.min(y) },
        })
    } else if T::DTYPE == DType::Bool {
        let (x, y) = (a.is_nonzero(), b.is_nonzero());
        T::from_i64(match op {
            Reduce::Assign => y,
            Reduce::Sum | Reduce::Mean | Reduce::Amax => x | y,
            Reduce::Prod | Reduce::Amin => x & y,
        } as i64)
    } else {
        let (x, y) = (a.to_i64(), b.to_i64());
        T::from_i64(match op {
            Reduce::Assign => y,
            Reduce::Sum | Reduce::Mean => x.wrapping_add(y),
            Reduce::Prod => x.wrapping_mul(y),
            Reduce::Amax => x.max(y),
            Reduce::Amin => x.min(y),
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

/// Shape and strides of `t` seen as a tensor of `rank` dims (0-d tensors become [1]).
fn as_rank(t: &Tensor, rank: usize) -> (Vec<usize>, Vec<isize>) {
    if t.ndim() == rank {
        (t.shape().to_vec(), t.strides().to_vec())
    } else {
        (vec![1; rank], vec![0; rank])
    }
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
    let z = Tensor::zeros(shape, g.dtype())?;
    scatter_kernel(&z, dim, index, g, Reduce::Sum, true)?;
    Ok(z)
}

fn gather_kernel(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let d = x.wrap_dim(dim)?;
    check_index_shape("gather", x, index, d, None)?;
    let size = x.shape().get(d).copied().unwrap_or(1);
    let idx = checked_index(index, size, d, false)?;
    let out = Tensor::uninit(index.shape(), x.dtype())?;
    let rank = index.ndim().max(1);
    let (shape, out_strides) = as_rank(&out, rank);
    let (_, idx_strides) = as_rank(&idx, rank);
    let x_strides = if x.ndim() == 0 { vec![0; rank] } else { x.strides().to_vec() };
    let (sx, si, so) = (x_strides[d], idx_strides[d], out_strides[d]);
    let len = shape[d];
    with_width!(x.dtype().size(), T, {
        let (po, pi, px) = (Ptr(out.byte_ptr() as *mut T), Ptr(idx.data_ptr::<i64>()), Ptr(x.byte_ptr() as *mut T));
        for_each_line(&shape, d, [&out_strides, &idx_strides, &x_strides], |_, [oo, oi, ox]| unsafe {
            for j in 0..len as isize {
                *po.at(oo + j * so) = *px.at(ox + *pi.at(oi + j * si) as isize * sx);
            }
        });
    });
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
            let c = x.deep_clone();
            scatter_kernel(&c, dim, index, src, op, include_self)?;
            c
        };
        let keep = if op == Reduce::Assign {
            let k = super::creation::full(x.shape(), super::binary::Scalar::Int(1), x.dtype())?;
            scatter_kernel(&k, dim, index, &Tensor::zeros(&[], x.dtype())?.broadcast_to(index.shape())?, Reduce::Assign, true)?;
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
    let size = x.shape().get(d).copied().unwrap_or(1);
    let idx = checked_index(index, size, d, false)?;
    let src = src.to_dtype(x.dtype());
    let rank = index.ndim().max(1);
    let (shape, idx_strides) = as_rank(&idx, rank);
    let (_, src_strides) = as_rank(&src, rank);
    let x_strides = if x.ndim() == 0 { vec![0; rank] } else { x.strides().to_vec() };
    let (sx, si, ss) = (x_strides[d], idx_strides[d], src_strides[d]);
    let len = shape[d];
    crate::with_any_dtype!(x.dtype(), T, {
        let (px, pi, ps) = (Ptr(x.data_ptr::<T>()), Ptr(idx.data_ptr::<i64>()), Ptr(src.data_ptr::<T>()));
        for_each_line(&shape, d, [&x_strides, &idx_strides, &src_strides], |_, [ox, oi, os]| unsafe {
            let target = |j: isize| px.at(ox + *pi.at(oi + j * si) as isize * sx);
            if op == Reduce::Assign {
                for j in 0..len as isize {
                    *target(j) = *ps.at(os + j * ss);
                }
                return;
            }
            if !include_self {
                for j in 0..len as isize {
                    *target(j) = op.identity::<T>();
                }
            }
            for j in 0..len as isize {
                *target(j) = combine(op, *target(j), *ps.at(os + j * ss));
            }
        });
    });
    if op == Reduce::Mean {
        divide_by_counts(x, d, &idx, include_self)?;
    }
    x.bump_version();
    Ok(())
}

/// Finishes a `Mean` scatter: divides each destination by the number of values that met there
/// (plus itself with `include_self`); floor division for integers, as PyTorch does.
fn divide_by_counts(x: &Tensor, d: usize, idx: &Tensor, include_self: bool) -> Result<()> {
    let counts = super::creation::full(x.shape(), super::binary::Scalar::Int(include_self as i64), DType::I64)?;
    let ones = Tensor::scalar(1i64).broadcast_to(idx.shape())?;
    scatter_kernel(&counts, d as i64, idx, &ones, Reduce::Sum, true)?;
    crate::with_any_dtype!(x.dtype(), T, binary_into::<T, i64, T>(x, &counts, x, |v, c| match c {
        0 => v,
        c if T::DTYPE.is_complex() => T::from_c128(v.to_c128() / c as f64),
        c if T::DTYPE.is_float() => T::from_f64(v.to_f64() / c as f64),
        c => T::from_i64(v.to_i64().div_euclid(c)),
    }));
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
    // Unlike indexing, these refuse negative indices, as PyTorch does.
    let index = checked_index(index, x.shape().get(d).copied().unwrap_or(1), d, false)?;
    let x1 = at_least_1d(x);
    let src = if x.ndim() == 0 { source.reshape(&[-1])? } else { source.clone() };
    index_put(&x1, &[(d, at_least_1d(&index))], &src, accumulate)
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
    let size = x.shape().get(d).copied().unwrap_or(1);
    checked_index(positions, size, d, false)?;
    let out = index(&at_least_1d(x), &[(d, at_least_1d(positions))])?;
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
        let z = Tensor::zeros(&[n as usize], g.dtype())?;
        put(&z, &[(0, p.clone())], g, true)?;
        z.reshape(&size)
    });
    let adjoint: LinearFn = Arc::new(move |t: &Tensor| gather_indexed(&t.reshape(&[-1])?, &[(0, q.clone())]));
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
    let shape = out.shape();
    let (m, xb, v) = (mask.broadcast_to(shape)?, x.broadcast_to(shape)?, value.to_dtype(out.dtype()).broadcast_to(shape)?);
    crate::with_any_dtype!(out.dtype(), T, ternary_into::<bool, T, T, T>(&m, &xb, &v, out, |m, x, v| if m { v } else { x }));
    out.bump_version();
    Ok(())
}

/// `masked_fill`: a fresh tensor of `x`'s dtype and the broadcast shape of `x` and `mask`.
pub fn masked_fill(x: &Tensor, mask: &Tensor, value: &Tensor) -> Result<Tensor> {
    let kernel = || {
        let out = Tensor::uninit(&broadcast_shapes(x.shape(), mask.shape())?, x.dtype())?;
        masked_fill_kernel(x, mask, value, &out)?;
        Ok(out)
    };
    autograd::track(&[x, value], kernel, |y| super::grad::index::record_masked_fill(x, mask, value, y))
}

/// The coordinates (one int64 row per element) of every non-zero element, in row-major order.
/// Chunks count their non-zeros in parallel, then write their rows at their prefix offsets.
pub fn nonzero(x: &Tensor) -> Result<Tensor> {
    let (n, ndim) = (x.numel(), x.ndim());
    let chunk = GRAIN.max(n.div_ceil(pool().current_num_threads().max(1)));
    let chunks = n.div_ceil(chunk);
    let counts: Vec<AtomicUsize> = (0..chunks).map(|_| AtomicUsize::new(0)).collect();
    Ok(crate::with_any_dtype!(x.dtype(), T, {
        let px = Ptr(x.data_ptr::<T>());
        let visit = |c: usize, f: &mut dyn FnMut(&[usize])| {
            let (start, end) = (c * chunk, ((c + 1) * chunk).min(n));
            let mut idx = unravel(start, x.shape());
            for _ in start..end {
                let off: isize = idx.iter().zip(x.strides()).map(|(&i, &s)| i as isize * s).sum();
                if unsafe { *px.at(off) }.is_nonzero() {
                    f(&idx);
                }
                for d in (0..ndim).rev() {
                    idx[d] += 1;
                    if idx[d] < x.shape()[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        };
        for_range(chunks, 1, |s, e| {
            for c in s..e {
                let mut k = 0;
                visit(c, &mut |_| k += 1);
                counts[c].store(k, Ordering::Relaxed);
            }
        });
        let starts: Vec<usize> = counts.iter().scan(0, |acc, c| {
            let s = *acc;
            *acc += c.load(Ordering::Relaxed);
            Some(s)
        }).collect();
        let total = starts.last().map_or(0, |s| s + counts[chunks - 1].load(Ordering::Relaxed));
        let out = Tensor::uninit(&[total, ndim], DType::I64)?;
        let po = Ptr(out.data_ptr::<i64>());
        for_range(chunks, 1, |s, e| {
            for c in s..e {
                let mut row = starts[c];
                visit(c, &mut |idx| {
                    for (k, &i) in idx.iter().enumerate() {
                        unsafe { *po.at((row * ndim + k) as isize) = i as i64 };
                    }
                    row += 1;
                });
            }
        });
        out
    }))
}

/// `masked_select`: the elements of `x` where `mask` (both broadcast), as a 1-d tensor in
/// row-major order. Chunks count their selected elements in parallel, then copy them to their
/// prefix offsets.
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
        let z = Tensor::zeros(n.shape(), g.dtype())?;
        masked_scatter_(&z, &n, g)?;
        Ok(z)
    });
    autograd::linear(["MaskedSelectBackward0", "MaskedScatterBackward0"], &x.broadcast_to(&shape)?, map, adjoint)
}

fn masked_select_kernel(x: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let shape = broadcast_shapes(x.shape(), mask.shape())?;
    let (xs, ms) = (x.broadcast_to(&shape)?.contiguous(), mask.broadcast_to(&shape)?.contiguous());
    let n = xs.numel();
    let chunk = GRAIN.max(n.div_ceil(pool().current_num_threads().max(1)));
    let span = |c: usize| c * chunk..((c + 1) * chunk).min(n);
    let pm = Ptr(ms.data_ptr::<bool>() as *mut u8);
    // Bools are bytes 0 and 1: counting them is a sum.
    let mask_of = |c: usize| unsafe { std::slice::from_raw_parts(pm.at(span(c).start as isize) as *const u8, span(c).len()) };
    let counts: Vec<usize> = pool().install(|| (0..n.div_ceil(chunk)).into_par_iter().map(|c| mask_of(c).iter().map(|&b| b as usize).sum()).collect());
    let starts: Vec<usize> = counts.iter().scan(0, |acc, &k| Some(std::mem::replace(acc, *acc + k))).collect();
    let out = Tensor::uninit(&[counts.iter().sum()], x.dtype())?;
    crate::with_any_dtype!(x.dtype(), T, {
        let (px, po) = (Ptr(xs.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
        for_range(counts.len(), 1, |s, e| {
            for c in s..e {
                let m = mask_of(c);
                // Branch-free: every element is written and the cursor advances only past selected
                // ones; stopping at the last selected element keeps writes inside this chunk's part.
                let Some(last) = m.iter().rposition(|&b| b != 0) else { continue };
                let (src, mut o) = (px.at(span(c).start as isize), starts[c]);
                for (i, &b) in m[..=last].iter().enumerate() {
                    unsafe { *po.at(o as isize) = *src.add(i) };
                    o += b as usize;
                }
            }
        });
    });
    Ok(out)
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
        return Ok(vec![(0, Tensor::zeros(&[coords.shape()[0]], DType::I64)?)]);
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
    let (rows, cols) = (x.shape()[x.ndim() - 2], x.shape()[x.ndim() - 1]);
    let last = x.ndim() - 1;
    let (sx, so) = (x.strides()[last], out.strides()[last]);
    crate::with_any_dtype!(x.dtype(), T, {
        let (px, po) = (Ptr(x.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
        for_each_line(x.shape(), last, [out.strides(), x.strides()], |line, [oo, ox]| unsafe {
            let i = (line % rows.max(1)) as i64;
            for j in 0..cols as i64 {
                let keep = if upper { j - i >= diagonal } else { j - i <= diagonal };
                *po.at(oo + j as isize * so) = if keep { *px.at(ox + j as isize * sx) } else { T::zero() };
            }
        });
    });
    out.bump_version();
    Ok(())
}

/// `tril`/`triu` into a fresh tensor.
pub fn tri(x: &Tensor, diagonal: i64, upper: bool) -> Result<Tensor> {
    let kernel = || {
        let out = Tensor::uninit(x.shape(), x.dtype())?;
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
    fn checked_index_wraps_and_refuses() {
        let t = checked_index(&ints(&[0, -1, 2]), 3, 0, true).unwrap();
        assert_eq!(t.to_vec::<i64>().unwrap(), vec![0, 2, 2]);
        let e = checked_index(&ints(&[5]), 3, 0, true).unwrap_err();
        assert_eq!(e.kind, crate::ErrorKind::Index);
        assert_eq!(e.message, "index 5 is out of bounds for dimension 0 with size 3");
        let e = checked_index(&ints(&[-1]), 3, 1, false).unwrap_err();
        assert_eq!(e.message, "index -1 is out of bounds for dimension 1 with size 3");
        assert!(checked_index(&ints(&[-4]), 3, 0, true).is_err());
        let f = Tensor::from_vec(vec![1.0f32], &[1]).unwrap();
        assert_eq!(checked_index(&f, 3, 0, true).unwrap_err().kind, crate::ErrorKind::Index);
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
