//! Indexing kernels: advanced-index gather and put, gather/scatter along a dim, nonzero,
//! masked_select, tril/triu. Every index is checked (and wrapped where asked) into a fresh
//! int64 tensor before a kernel reads or writes through it.
use crate::backend::cpu::map::{binary_into, unary_into, Ptr};
use crate::bail;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::ops::index::{IndexShape, Reduce};
use crate::parallel::{for_range, pool, GRAIN};
use crate::strided::{unravel, Plan};
use crate::tensor::Tensor;
use crate::with_dtype;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

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

/// `index` as a contiguous int64 tensor whose values are checked against `size` (negatives wrapped
/// when `wrap`, as advanced indexing and `take` do; gather/scatter/index_* refuse them).
fn checked_index(index: &Tensor, size: usize, dim: usize, wrap: bool) -> Result<Tensor> {
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
        let coord = crate::ops::creation::from_index_fn::<i64>(shape[d], |i| i as i64)?;
        let mut l = vec![1usize; shape.len()];
        l[d] = shape[d];
        let coord = coord.reshape(&l.iter().map(|&s| s as i64).collect::<Vec<_>>()).unwrap().broadcast_to(shape).unwrap();
        let s = strides[d] as i64;
        binary_into::<i64, i64, i64>(&acc, &coord, &acc, |o, c| o + c * s);
    }
    Ok(acc)
}

/// Calls `f(offsets, len)` for every run of `plan`, serially (the caller parallelises outside).
fn for_each_run_serial<const N: usize>(plan: &Plan<N>, mut f: impl FnMut([isize; N], usize)) {
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
fn for_each_line<const N: usize>(shape: &[usize], dim: usize, strides: [&[isize]; N], f: impl Fn(usize, [isize; N]) + Sync) {
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

/// Each advanced-index position's element offset into `x`, the indices checked against their
/// dims.
fn offsets(x: &Tensor, indices: &[(usize, Tensor)], shape: &IndexShape, wrap: bool) -> Result<Tensor> {
    let offsets = Tensor::zeros(&shape.b_shape, DType::I64)?;
    // No element moves when another dim is empty: PyTorch's advanced indexing (which wraps)
    // checks no index then, nor does this; index_select/index_add/index_copy check them all.
    if wrap && shape.rest.iter().any(|&d| x.shape()[d] == 0) {
        return Ok(offsets);
    }
    for (d, idx) in indices {
        let checked = checked_index(idx, x.shape()[*d], *d, wrap)?.broadcast_to(&shape.b_shape)?;
        let s = x.strides()[*d] as i64;
        binary_into::<i64, i64, i64>(&offsets, &checked, &offsets, |o, i| o + i * s);
    }
    Ok(offsets)
}

/// Where an advanced index moves elements: each index position's offset into `x` and into
/// `result` (the indexing result's layout: `out` of a get, `values` of a put), and the rest dims'
/// shape and strides in `x` and in `result`.
struct Moves {
    x_offsets: Tensor,
    result_offsets: Tensor,
    rest_shape: Vec<usize>,
    x_rest: Vec<isize>,
    result_rest: Vec<isize>,
}

impl Moves {
    fn new(x: &Tensor, indices: &[(usize, Tensor)], shape: &IndexShape, wrap: bool, result: &Tensor) -> Result<Moves> {
        let x_offsets = offsets(x, indices, shape, wrap)?;
        let work = result.permute(&shape.to_work)?;
        let nb = x_offsets.ndim();
        let result_offsets = layout_offsets(&work.shape()[..nb], &work.strides()[..nb])?;
        let (rest_shape, x_rest) = shape.rest_of(x);
        Ok(Moves { x_offsets, result_offsets, rest_shape, x_rest, result_rest: work.strides()[nb..].to_vec() })
    }
}

/// `out = x[indices]` (see `Backend::index`).
pub fn index(x: &Tensor, indices: &[(usize, Tensor)], shape: &IndexShape, wrap: bool, out: &Tensor) -> Result<()> {
    let m = Moves::new(x, indices, shape, wrap, out)?;
    with_width!(x.dtype().size(), T, move_blocks::<T>(
        Ptr(out.byte_ptr() as *mut T),
        &m.result_offsets,
        &m.result_rest,
        Ptr(x.byte_ptr() as *mut T),
        &m.x_offsets,
        &m.x_rest,
        &m.rest_shape,
        false,
        |d, s| unsafe { *d = s },
    ));
    Ok(())
}

/// `x[indices] = values` or `+=` (see `Backend::index_put`).
pub fn index_put(x: &Tensor, indices: &[(usize, Tensor)], shape: &IndexShape, values: &Tensor, accumulate: bool, wrap: bool) -> Result<()> {
    let m = Moves::new(x, indices, shape, wrap, values)?;
    // Accumulation is ordered: two index positions may name one element.
    macro_rules! put {
        ($T:ty, $ordered:expr, $op:expr) => {
            move_blocks::<$T>(Ptr(x.byte_ptr() as *mut $T), &m.x_offsets, &m.x_rest, Ptr(values.byte_ptr() as *mut $T), &m.result_offsets, &m.result_rest, &m.rest_shape, $ordered, $op)
        };
    }
    if accumulate && x.dtype().is_complex() {
        crate::with_complex!(x.dtype(), T, put!(T, true, |d, s| unsafe { *d += s }));
    } else if accumulate {
        with_dtype!(x.dtype(), T, put!(T, true, |d, s| unsafe { *d = combine(Reduce::Sum, *d, s) }));
    } else {
        with_width!(x.dtype().size(), T, put!(T, false, |d, s| unsafe { *d = s }));
    }
    Ok(())
}

/// `out[..j..] = x[..index[..j..]..]` along `d` (see `Backend::gather`).
pub fn gather(x: &Tensor, d: usize, index: &Tensor, out: &Tensor) -> Result<()> {
    let idx = checked_index(index, x.shape().get(d).copied().unwrap_or(1), d, false)?;
    let rank = index.ndim().max(1);
    let (shape, out_strides) = as_rank(out, rank);
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
    Ok(())
}

/// `x[..index[..j..]..] (op)= src[..j..]` along `d` (see `Backend::scatter`).
pub fn scatter(x: &Tensor, d: usize, index: &Tensor, src: &Tensor, op: Reduce, include_self: bool) -> Result<()> {
    let idx = checked_index(index, x.shape().get(d).copied().unwrap_or(1), d, false)?;
    let rank = index.ndim().max(1);
    let (shape, idx_strides) = as_rank(&idx, rank);
    let (_, src_strides) = as_rank(src, rank);
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
                    *target(j) = identity::<T>(op);
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
    Ok(())
}

/// Finishes a `Mean` scatter: divides each destination by the number of values that met there
/// (plus itself with `include_self`); floor division for integers, as PyTorch does.
fn divide_by_counts(x: &Tensor, d: usize, idx: &Tensor, include_self: bool) -> Result<()> {
    let counts = crate::ops::creation::full(x.shape(), crate::ops::binary::Scalar::Int(include_self as i64), DType::I64)?;
    let ones = Tensor::scalar(1i64).broadcast_to(idx.shape())?;
    scatter(&counts, d, idx, &ones, Reduce::Sum, true)?;
    crate::with_any_dtype!(x.dtype(), T, binary_into::<T, i64, T>(x, &counts, x, |v, c| match c {
        0 => v,
        c if T::DTYPE.is_complex() => T::from_c128(v.to_c128() / c as f64),
        c if T::DTYPE.is_float() => T::from_f64(v.to_f64() / c as f64),
        c => T::from_i64(v.to_i64().div_euclid(c)),
    }));
    Ok(())
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

/// The value a destination starts from when `include_self=False`.
fn identity<T: Element>(op: Reduce) -> T {
    let float = T::DTYPE.is_float();
    match op {
        Reduce::Prod => T::one(),
        Reduce::Amax if float => T::from_f64(f64::NEG_INFINITY),
        Reduce::Amin if float => T::from_f64(f64::INFINITY),
        Reduce::Amax => T::from_i64(int_limit::<T>(false)),
        Reduce::Amin => T::from_i64(int_limit::<T>(true)),
        _ => T::zero(),
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

/// Shape and strides of `t` seen as a tensor of `rank` dims (0-d tensors become [1]).
fn as_rank(t: &Tensor, rank: usize) -> (Vec<usize>, Vec<isize>) {
    if t.ndim() == rank {
        (t.shape().to_vec(), t.strides().to_vec())
    } else {
        (vec![1; rank], vec![0; rank])
    }
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

/// `x`'s elements where `mask` (of `x`'s shape), in row-major order. Chunks count their
/// selected elements in parallel, then copy them to their prefix offsets.
pub fn masked_select(x: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let (xs, ms) = (x.contiguous()?, mask.contiguous()?);
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

/// `tril`/`triu` of the last two dims of `x` into `out` (see `Backend::tri`).
pub fn tri(x: &Tensor, diagonal: i64, upper: bool, out: &Tensor) -> Result<()> {
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
    Ok(())
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
    }
}
