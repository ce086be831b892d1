//! FBGEMM's jagged <-> dense operators over one jagged dimension (`jagged_to_padded_dense`,
//! `dense_to_jagged`, `jagged_dense_elementwise_*`, `batched_dense_vec_jagged_2d_mul`) and the
//! kernels of their backward passes.
//!
//! A jagged batch (`Jagged`) is `rows` rows of `inner` elements with `offsets` (B + 1): sample b
//! is rows offsets[b]..offsets[b + 1]. Its dense counterpart (`Dense`) is B x width x inner:
//! sample b's row j sits at dense[b, j] when j < width. Where one side has no row the other has,
//! FBGEMM's rule holds: a jagged output reads a missing dense row as zeros, a dense output reads
//! a missing jagged row as zeros (or the padding value), and rows past the width are dropped.
//!
//! Offsets are checked once (non-negative, non-decreasing, within the values), then turned into
//! `usize` bounds. Work is split by sample; each sample writes only its own rows of the output.
use crate::stream::{self, STREAM_MIN_BYTES};
use crate::tbe::Indices;
use crate::{fail, Result};
use half::{bf16, f16};
use rayon::prelude::*;
use std::ops::{Add, Mul};

/// A jagged batch: sample b is rows offsets[b]..offsets[b + 1] of `values` (`rows` x `inner`).
#[derive(Clone, Copy)]
pub struct Jagged<'a, T> {
    pub values: &'a [T],
    pub rows: usize,
    pub inner: usize,
    pub offsets: Indices<'a>,
}

/// A dense batch: `batch` x `width` x `inner`, row-major.
#[derive(Clone, Copy)]
pub struct Dense<'a, T> {
    pub data: &'a [T],
    pub batch: usize,
    pub width: usize,
    pub inner: usize,
}

/// A value the arithmetic jagged ops compute with (float32, float64, float16, bfloat16); the
/// half types compute in float32 and round once, as PyTorch's CPU kernels do.
pub trait Real: Copy + Send + Sync + 'static {
    type Acc: Copy + Default + Add<Output = Self::Acc> + Mul<Output = Self::Acc>;
    fn widen(self) -> Self::Acc;
    fn narrow(acc: Self::Acc) -> Self;
}

impl Real for f32 {
    type Acc = f32;
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
    #[inline(always)]
    fn narrow(acc: f32) -> f32 {
        acc
    }
}

impl Real for f64 {
    type Acc = f64;
    #[inline(always)]
    fn widen(self) -> f64 {
        self
    }
    #[inline(always)]
    fn narrow(acc: f64) -> f64 {
        acc
    }
}

impl Real for f16 {
    type Acc = f32;
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn narrow(acc: f32) -> f16 {
        f16::from_f32(acc)
    }
}

impl Real for bf16 {
    type Acc = f32;
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn narrow(acc: f32) -> bf16 {
        bf16::from_f32(acc)
    }
}

impl Indices<'_> {
    /// The entries as i64.
    pub(crate) fn to_i64(self) -> Vec<i64> {
        match self {
            Indices::I32(v) => v.iter().map(|&x| x as i64).collect(),
            Indices::I64(v) => v.to_vec(),
        }
    }
}

/// The offsets as bounds, after checking that they hold at least one entry, are non-negative,
/// do not decrease and end within `rows`.
pub(crate) fn sample_bounds(op: &str, offsets: Indices<'_>, rows: usize) -> Result<Vec<usize>> {
    let offsets = offsets.to_i64();
    let Some(&last) = offsets.last() else {
        return fail(format!("{op}: offsets must hold at least one entry (B samples have B + 1 offsets)"));
    };
    if offsets[0] < 0 {
        return fail(format!("{op}: offsets must be non-negative, got offsets[0] = {}", offsets[0]));
    }
    if let Some(i) = offsets.windows(2).position(|w| w[1] < w[0]) {
        return fail(format!("{op}: offsets must not decrease, but offsets[{}] = {} < offsets[{i}] = {}", i + 1, offsets[i + 1], offsets[i]));
    }
    if last as u64 > rows as u64 {
        return fail(format!("{op}: offsets end at {last}, past the {rows} rows of values"));
    }
    Ok(offsets.into_iter().map(|o| o as usize).collect())
}

fn check_jagged<T>(op: &str, x: &Jagged<'_, T>) -> Result<Vec<usize>> {
    if x.rows.checked_mul(x.inner) != Some(x.values.len()) {
        return fail(format!("{op}: values hold {} elements, not {} rows of {}", x.values.len(), x.rows, x.inner));
    }
    sample_bounds(op, x.offsets, x.rows)
}

fn check_dense<T>(op: &str, name: &str, y: &Dense<'_, T>, batch: usize, inner: usize) -> Result<()> {
    if y.batch != batch || y.inner != inner {
        return fail(format!("{op}: {name} must be {batch} samples of rows of {inner}, got {} samples of rows of {}", y.batch, y.inner));
    }
    let expected = y.batch.checked_mul(y.width).and_then(|n| n.checked_mul(y.inner));
    if expected != Some(y.data.len()) {
        return fail(format!("{op}: {name} holds {} elements, not {} x {} x {}", y.data.len(), y.batch, y.width, y.inner));
    }
    Ok(())
}

fn check_out<T>(op: &str, out: &[T], expected: usize) -> Result<()> {
    if out.len() != expected {
        return fail(format!("{op}: the output must hold {expected} elements, got {}", out.len()));
    }
    Ok(())
}

/// An output that tasks write disjoint parts of.
pub(crate) struct Shared<T>(*mut T);
// SAFETY: every task writes elements no other task writes, and the buffer outlives the tasks.
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    pub(crate) fn new(out: &mut [T]) -> Self {
        Shared(out.as_mut_ptr())
    }

    /// Elements start..start + len.
    ///
    /// # Safety
    /// The range lies in the buffer, and no other task touches it while the slice lives.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn slice(&self, start: usize, len: usize) -> &mut [T] {
        if len == 0 {
            return &mut [];
        }
        std::slice::from_raw_parts_mut(self.0.add(start), len)
    }
}

/// Elements below which a kernel runs on the calling thread: handing tasks to the pool costs
/// more than copying this much.
pub const PARALLEL_MIN_ELEMENTS: usize = 1 << 15;

/// Calls `task(i)` for each i in 0..n, on the pool when `work` (elements touched) is large.
pub(crate) fn for_each(n: usize, work: usize, task: impl Fn(usize) + Send + Sync) {
    if work < PARALLEL_MIN_ELEMENTS || n < 2 {
        (0..n).for_each(task);
    } else {
        // Tasks of about PARALLEL_MIN_ELEMENTS / 4 elements each, at most n.
        let per_task = (n * (PARALLEL_MIN_ELEMENTS / 4)).div_ceil(work).max(1);
        (0..n).into_par_iter().with_min_len(per_task).for_each(task);
    }
}

/// (B, max_length, inner): sample b's first max_length rows, then `padding` (FBGEMM's
/// `jagged_to_padded_dense`; any element type: rows are copied, not computed).
pub fn jagged_to_padded_dense<T: Copy + Send + Sync>(x: Jagged<'_, T>, max_length: usize, padding: T, out: &mut [T]) -> Result<()> {
    const OP: &str = "jagged_to_padded_dense";
    let bounds = check_jagged(OP, &x)?;
    let batch = bounds.len() - 1;
    let stride = max_length * x.inner;
    check_out(OP, out, batch * stride)?;
    let streamed = std::mem::size_of_val(out) >= STREAM_MIN_BYTES;
    let shared = Shared::new(out);
    for_each(batch, out.len(), |b| {
        let kept = (bounds[b + 1] - bounds[b]).min(max_length) * x.inner;
        // SAFETY: sample b alone writes its `stride` elements.
        let dst = unsafe { shared.slice(b * stride, stride) };
        stream::copy(&mut dst[..kept], &x.values[bounds[b] * x.inner..][..kept], streamed);
        stream::fill(&mut dst[kept..], padding, streamed);
    });
    Ok(())
}

/// The jagged rows of `dense` (FBGEMM's `dense_to_jagged`): `rows` x inner where sample b's
/// row j is dense[b, j], or `zero` past the dense width; rows outside every sample are `zero`.
pub fn dense_to_jagged<T: Copy + Send + Sync>(dense: Dense<'_, T>, offsets: Indices<'_>, rows: usize, zero: T, out: &mut [T]) -> Result<()> {
    const OP: &str = "dense_to_jagged";
    let bounds = sample_bounds(OP, offsets, rows)?;
    check_dense(OP, "dense", &dense, bounds.len() - 1, dense.inner)?;
    let inner = dense.inner;
    check_out(OP, out, rows * inner)?;
    out[..bounds[0] * inner].fill(zero);
    out[bounds[bounds.len() - 1] * inner..].fill(zero);
    let streamed = std::mem::size_of_val(out) >= STREAM_MIN_BYTES;
    let shared = Shared::new(out);
    let stride = dense.width * inner;
    for_each(bounds.len() - 1, rows * inner, |b| {
        let len = (bounds[b + 1] - bounds[b]) * inner;
        let kept = len.min(stride);
        // SAFETY: sample b alone writes its rows.
        let dst = unsafe { shared.slice(bounds[b] * inner, len) };
        stream::copy(&mut dst[..kept], &dense.data[b * stride..][..kept], streamed);
        stream::fill(&mut dst[kept..], zero, streamed);
    });
    Ok(())
}

/// How a jagged value and the dense values at its place combine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// x + y (+ y2): `jagged_dense_elementwise_add`, `..._add_jagged_output`,
    /// `jagged_dense_dense_elementwise_add_jagged_output`.
    Add,
    /// x * y: `jagged_dense_elementwise_mul`.
    Mul,
}

/// A jagged output shaped as `x`: each value combined with the values of `dense` (one or two
/// batches, Mul takes one) at its place, missing dense rows reading as zeros.
pub fn jagged_dense_jagged_output<T: Real>(x: Jagged<'_, T>, dense: &[Dense<'_, T>], combine: Combine, out: &mut [T]) -> Result<()> {
    const OP: &str = "jagged_dense_elementwise (jagged output)";
    let bounds = check_jagged(OP, &x)?;
    let batch = bounds.len() - 1;
    if dense.is_empty() || dense.len() > 2 || (combine == Combine::Mul && dense.len() != 1) {
        return fail(format!("{OP}: {} dense operands for {combine:?}", dense.len()));
    }
    for (k, y) in dense.iter().enumerate() {
        check_dense(OP, &format!("dense operand {k}"), y, batch, x.inner)?;
        if y.width != dense[0].width {
            return fail(format!("{OP}: the dense operands must be as wide, got {} and {}", dense[0].width, y.width));
        }
    }
    check_out(OP, out, x.values.len())?;
    let (inner, width) = (x.inner, dense[0].width);
    out[..bounds[0] * inner].copy_from_slice(&x.values[..bounds[0] * inner]);
    let end = bounds[batch] * inner;
    out[end..].copy_from_slice(&x.values[end..]);
    let shared = Shared::new(out);
    for_each(batch, x.values.len(), |b| {
        let (start, len) = (bounds[b] * inner, (bounds[b + 1] - bounds[b]) * inner);
        let covered = len.min(width * inner);
        // SAFETY: sample b alone writes its rows.
        let dst = unsafe { shared.slice(start, len) };
        let src = &x.values[start..start + len];
        let at = b * width * inner;
        match (combine, dense) {
            (Combine::Add, [y]) => {
                for ((o, &a), &c) in dst.iter_mut().zip(src).zip(&y.data[at..at + covered]) {
                    *o = T::narrow(a.widen() + c.widen());
                }
                dst[covered..].copy_from_slice(&src[covered..]);
            }
            (Combine::Add, [y, z]) => {
                for (((o, &a), &c), &d) in dst.iter_mut().zip(src).zip(&y.data[at..at + covered]).zip(&z.data[at..at + covered]) {
                    *o = T::narrow(a.widen() + c.widen() + d.widen());
                }
                dst[covered..].copy_from_slice(&src[covered..]);
            }
            (_, [y]) => {
                for ((o, &a), &c) in dst.iter_mut().zip(src).zip(&y.data[at..at + covered]) {
                    *o = T::narrow(a.widen() * c.widen());
                }
                dst[covered..].fill(T::narrow(T::Acc::default()));
            }
            _ => unreachable!("operand counts checked above"),
        }
    });
    Ok(())
}

/// The dense output of `jagged_dense_elementwise_add`: y + x padded with zeros (x's rows past
/// y's width dropped).
pub fn jagged_dense_add_dense_output<T: Real>(x: Jagged<'_, T>, y: Dense<'_, T>, out: &mut [T]) -> Result<()> {
    const OP: &str = "jagged_dense_elementwise_add";
    let bounds = check_jagged(OP, &x)?;
    check_dense(OP, "y", &y, bounds.len() - 1, x.inner)?;
    check_out(OP, out, y.data.len())?;
    let stride = y.width * y.inner;
    let shared = Shared::new(out);
    for_each(y.batch, y.data.len(), |b| {
        let kept = ((bounds[b + 1] - bounds[b]) * x.inner).min(stride);
        // SAFETY: sample b alone writes its `stride` elements.
        let dst = unsafe { shared.slice(b * stride, stride) };
        let dense = &y.data[b * stride..][..stride];
        for ((o, &a), &c) in dst.iter_mut().zip(&x.values[bounds[b] * x.inner..][..kept]).zip(dense) {
            *o = T::narrow(a.widen() + c.widen());
        }
        dst[kept..].copy_from_slice(&dense[kept..]);
    });
    Ok(())
}

/// The shapes of `batched_dense_vec_jagged_2d_mul`: `v` is (B * heads, width), `a` jagged with
/// rows of heads * dim; out[b * heads + h, :] = sum over j < min(len_b, width) of
/// v[b * heads + h, j] * a[offsets[b] + j, h * dim..(h + 1) * dim].
struct VecJaggedShape {
    bounds: Vec<usize>,
    heads: usize,
    width: usize,
    dim: usize,
}

fn vec_jagged_shape<T>(op: &str, v: &[T], v_rows: usize, a: &Jagged<'_, T>) -> Result<VecJaggedShape> {
    let bounds = check_jagged(op, a)?;
    let batch = bounds.len() - 1;
    if batch == 0 {
        if v_rows != 0 {
            return fail(format!("{op}: v has {v_rows} rows for 0 samples"));
        }
        return Ok(VecJaggedShape { bounds, heads: 0, width: 0, dim: 0 });
    }
    if v_rows % batch != 0 {
        return fail(format!("{op}: v's {v_rows} rows do not divide among the {batch} samples (B * H rows)"));
    }
    let heads = v_rows / batch;
    if heads == 0 || a.inner % heads != 0 {
        return fail(format!("{op}: a_values' rows of {} do not divide into {heads} heads", a.inner));
    }
    let width = if v_rows == 0 { 0 } else { v.len() / v_rows };
    if width * v_rows != v.len() {
        return fail(format!("{op}: v holds {} elements, not {v_rows} rows", v.len()));
    }
    Ok(VecJaggedShape { bounds, heads, width, dim: a.inner / heads })
}

/// `batched_dense_vec_jagged_2d_mul` (out: B * heads x dim).
pub fn batched_dense_vec_jagged_2d_mul<T: Real>(v: &[T], v_rows: usize, a: Jagged<'_, T>, out: &mut [T]) -> Result<()> {
    const OP: &str = "batched_dense_vec_jagged_2d_mul";
    let s = vec_jagged_shape(OP, v, v_rows, &a)?;
    check_out(OP, out, v_rows * s.dim)?;
    let shared = Shared::new(out);
    for_each(v_rows, v_rows * s.dim * s.width.max(1), |row| {
        let (b, h) = (row / s.heads, row % s.heads);
        let len = (s.bounds[b + 1] - s.bounds[b]).min(s.width);
        let mut acc = vec![T::Acc::default(); s.dim];
        for j in 0..len {
            let weight = v[row * s.width + j].widen();
            let a_row = &a.values[(s.bounds[b] + j) * a.inner + h * s.dim..][..s.dim];
            for (acc, &x) in acc.iter_mut().zip(a_row) {
                *acc = *acc + weight * x.widen();
            }
        }
        // SAFETY: row `row` of the output belongs to this task alone.
        let dst = unsafe { shared.slice(row * s.dim, s.dim) };
        for (o, &x) in dst.iter_mut().zip(&acc) {
            *o = T::narrow(x);
        }
    });
    Ok(())
}

/// The gradients of `batched_dense_vec_jagged_2d_mul` from the output's `grad` (B * heads x
/// dim): grad_v (shaped as v; zero past each sample's length) and grad_a (shaped as a's values;
/// zero in rows past the width).
#[allow(clippy::too_many_arguments)]
pub fn batched_dense_vec_jagged_2d_mul_backward<T: Real>(grad: &[T], v: &[T], v_rows: usize, a: Jagged<'_, T>, grad_v: &mut [T], grad_a: &mut [T]) -> Result<()> {
    const OP: &str = "batched_dense_vec_jagged_2d_mul_backward";
    let s = vec_jagged_shape(OP, v, v_rows, &a)?;
    check_out(OP, grad, v_rows * s.dim)?;
    check_out(OP, grad_v, v.len())?;
    check_out(OP, grad_a, a.values.len())?;
    let zero = T::narrow(T::Acc::default());
    let (shared_v, shared_a) = (Shared::new(grad_v), Shared::new(grad_a));
    grad_a_outside_samples(&s.bounds, a.inner, &shared_a, a.values.len(), zero);
    let batch = s.bounds.len() - 1;
    for_each(batch, a.values.len() + v.len(), |b| {
        let len = s.bounds[b + 1] - s.bounds[b];
        let kept = len.min(s.width);
        // SAFETY: sample b alone writes its rows of grad_a and its heads' rows of grad_v.
        let ga = unsafe { shared_a.slice(s.bounds[b] * a.inner, len * a.inner) };
        ga[kept * a.inner..].fill(zero);
        for h in 0..s.heads {
            let row = b * s.heads + h;
            let g = &grad[row * s.dim..][..s.dim];
            let gv = unsafe { shared_v.slice(row * s.width, s.width) };
            for j in 0..kept {
                let a_row = &a.values[(s.bounds[b] + j) * a.inner + h * s.dim..][..s.dim];
                let dot = a_row.iter().zip(g).fold(T::Acc::default(), |acc, (&x, &y)| acc + x.widen() * y.widen());
                gv[j] = T::narrow(dot);
                let weight = v[row * s.width + j].widen();
                for (o, &y) in ga[j * a.inner + h * s.dim..][..s.dim].iter_mut().zip(g) {
                    *o = T::narrow(weight * y.widen());
                }
            }
            gv[kept..].fill(zero);
        }
    });
    Ok(())
}

/// Zeros the rows of grad_a that no sample covers (before the first offset, after the last).
fn grad_a_outside_samples<T: Copy>(bounds: &[usize], inner: usize, grad_a: &Shared<T>, len: usize, zero: T) {
    let (first, last) = (bounds[0] * inner, bounds[bounds.len() - 1] * inner);
    // SAFETY: these rows belong to no sample, so no task writes them.
    unsafe {
        grad_a.slice(0, first).fill(zero);
        grad_a.slice(last, len - last).fill(zero);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jagged<'a>(values: &'a [f32], inner: usize, offsets: &'a [i64]) -> Jagged<'a, f32> {
        Jagged { values, rows: values.len() / inner, inner, offsets: Indices::I64(offsets) }
    }

    #[test]
    fn padded_dense_cuts_and_pads_and_dense_to_jagged_inverts_it() {
        let values: Vec<f32> = (1..=14).map(|x| x as f32).collect();
        let offsets = [0i64, 3, 3, 7];
        let mut out = vec![0f32; 3 * 2 * 2];
        jagged_to_padded_dense(jagged(&values, 2, &offsets), 2, -1.0, &mut out).unwrap();
        assert_eq!(out, [1., 2., 3., 4., -1., -1., -1., -1., 7., 8., 9., 10.]);
        let mut back = vec![f32::NAN; 14];
        dense_to_jagged(Dense { data: &out, batch: 3, width: 2, inner: 2 }, Indices::I64(&offsets), 7, 0.0, &mut back).unwrap();
        assert_eq!(back, [1., 2., 3., 4., 0., 0., 7., 8., 9., 10., 0., 0., 0., 0.]);
    }

    #[test]
    fn large_batches_run_in_parallel_with_int32_offsets() {
        let lengths: Vec<usize> = (0..300).map(|b| b * 7 % 23).collect();
        let mut offsets = vec![0i32];
        for &l in &lengths {
            offsets.push(offsets.last().unwrap() + l as i32);
        }
        let rows = *offsets.last().unwrap() as usize;
        let values: Vec<u64> = (0..rows * 16).map(|x| x as u64).collect();
        let x = Jagged { values: &values, rows, inner: 16, offsets: Indices::I32(&offsets) };
        let mut out = vec![0u64; 300 * 20 * 16];
        jagged_to_padded_dense(x, 20, 7, &mut out).unwrap();
        for (b, &l) in lengths.iter().enumerate() {
            for j in 0..20 {
                let want = if j < l { ((offsets[b] as usize + j) * 16) as u64 } else { 7 };
                assert_eq!(out[(b * 20 + j) * 16], want, "sample {b} row {j}");
            }
        }
    }

    #[test]
    fn elementwise_ops_follow_fbgemm_for_rows_past_the_dense_width() {
        // FBGEMM: add keeps x where y has no row, mul gives 0; the dense add drops x's extra rows.
        let values: Vec<f32> = (1..=7).map(|x| x as f32).collect();
        let offsets = [0i64, 3, 3, 7];
        let y = vec![100f32; 6];
        let dense = Dense { data: &y, batch: 3, width: 2, inner: 1 };
        let mut out = vec![0f32; 7];
        jagged_dense_jagged_output(jagged(&values, 1, &offsets), &[dense], Combine::Add, &mut out).unwrap();
        assert_eq!(out, [101., 102., 3., 104., 105., 6., 7.]);
        jagged_dense_jagged_output(jagged(&values, 1, &offsets), &[dense, dense], Combine::Add, &mut out).unwrap();
        assert_eq!(out, [201., 202., 3., 204., 205., 6., 7.]);
        jagged_dense_jagged_output(jagged(&values, 1, &offsets), &[dense], Combine::Mul, &mut out).unwrap();
        assert_eq!(out, [100., 200., 0., 400., 500., 0., 0.]);
        let mut dense_out = vec![0f32; 6];
        jagged_dense_add_dense_output(jagged(&values, 1, &offsets), dense, &mut dense_out).unwrap();
        assert_eq!(dense_out, [101., 102., 100., 100., 104., 105.]);
    }

    #[test]
    fn half_values_compute_in_float32() {
        let values = [f16::from_f32(1.5), f16::from_f32(2.0)];
        let y = [f16::from_f32(0.25), f16::from_f32(4.0)];
        let x = Jagged { values: &values, rows: 2, inner: 1, offsets: Indices::I64(&[0, 2]) };
        let mut out = [f16::ZERO; 2];
        jagged_dense_jagged_output(x, &[Dense { data: &y, batch: 1, width: 2, inner: 1 }], Combine::Mul, &mut out).unwrap();
        assert_eq!(out, [f16::from_f32(0.375), f16::from_f32(8.0)]);
    }

    #[test]
    fn batched_dense_vec_jagged_mul_and_its_gradients_match_loops() {
        let (heads, dim, width) = (2, 3, 2);
        let offsets = [0i64, 3, 4, 4];
        let a: Vec<f64> = (0..4 * heads * dim).map(|x| x as f64 * 0.5 - 3.0).collect();
        let v: Vec<f64> = (0..3 * heads * width).map(|x| x as f64 + 1.0).collect();
        let x = Jagged { values: &a, rows: 4, inner: heads * dim, offsets: Indices::I64(&offsets) };
        let mut out = vec![0f64; 3 * heads * dim];
        batched_dense_vec_jagged_2d_mul(&v, 3 * heads, x, &mut out).unwrap();
        let grad: Vec<f64> = (0..out.len()).map(|x| (x % 5) as f64 - 2.0).collect();
        let (mut gv, mut ga) = (vec![f64::NAN; v.len()], vec![f64::NAN; a.len()]);
        batched_dense_vec_jagged_2d_mul_backward(&grad, &v, 3 * heads, x, &mut gv, &mut ga).unwrap();
        let (mut want, mut want_gv, mut want_ga) = (vec![0f64; out.len()], vec![0f64; v.len()], vec![0f64; a.len()]);
        for b in 0..3 {
            let len = ((offsets[b + 1] - offsets[b]) as usize).min(width);
            for h in 0..heads {
                let row = b * heads + h;
                for j in 0..len {
                    for d in 0..dim {
                        let ai = (offsets[b] as usize + j) * heads * dim + h * dim + d;
                        want[row * dim + d] += v[row * width + j] * a[ai];
                        want_gv[row * width + j] += grad[row * dim + d] * a[ai];
                        want_ga[ai] += v[row * width + j] * grad[row * dim + d];
                    }
                }
            }
        }
        assert_eq!(out, want);
        assert_eq!(gv, want_gv);
        assert_eq!(ga, want_ga);
    }

    #[test]
    fn inconsistent_arguments_are_refused() {
        let values = [1f32, 2., 3.];
        let mut out = [0f32; 6];
        let mut bad = |offsets: &[i64]| jagged_to_padded_dense(jagged(&values, 1, offsets), 2, 0.0, &mut out[..2 * (offsets.len() - 1)]).unwrap_err();
        assert!(bad(&[0, 2, 1]).to_string().contains("must not decrease"));
        assert!(bad(&[-1, 2]).to_string().contains("non-negative"));
        assert!(bad(&[0, 4]).to_string().contains("past the 3 rows"));
        let x = jagged(&values, 1, &[0, 3]);
        assert!(jagged_to_padded_dense(x, 2, 0.0, &mut out).is_err());
        let y = Dense { data: &[0f32; 4], batch: 2, width: 2, inner: 1 };
        assert!(jagged_dense_jagged_output(x, &[y], Combine::Add, &mut out[..3]).unwrap_err().to_string().contains("1 samples"));
        assert!(batched_dense_vec_jagged_2d_mul(&[1f32; 3], 1, x, &mut out[..1]).is_ok());
        assert!(batched_dense_vec_jagged_2d_mul(&[1f32; 4], 2, x, &mut out[..2]).unwrap_err().to_string().contains("2 heads"));
    }
}
