//! Discrete Fourier transforms on host memory, on rustfft and realfft.
//!
//! Each transform runs one dim at a time, groups of rows spread over the pool: complex
//! transforms work in the tensor's own layout (rows along the last dim where they lie, other dims
//! as blocks of neighbouring columns gathered into a scratch buffer), never writing the input;
//! the real transforms read each row into a task's buffer. float16/complex32 compute in float32,
//! float64/complex128 in float64. The normalisation is one factor applied while the last stage's
//! rows are still in cache.
pub(crate) mod plan;

use crate::backend::cpu::map::{prefetch, prefetch_for_write, Ptr};
use crate::dtype::DType;
use crate::error::Result;
use crate::parallel::{for_range, num_threads, pool, GRAIN};
use crate::tensor::Tensor;
use num_complex::Complex;
use plan::FftFloat;
use rayon::prelude::*;

/// The dtype the kernels compute in for complex `d` (complex32 widens to complex64).
fn working_complex(d: DType) -> DType {
    if d == DType::C128 { DType::C128 } else { DType::C64 }
}

/// `Backend::fft_c2c` on host memory.
pub fn c2c(x: &Tensor, dims: &[usize], forward: bool, scale: f64) -> Result<Tensor> {
    let w = x.to_dtype(working_complex(x.dtype()))?;
    let mut cur = Stage { t: w, owned: x.dtype() != working_complex(x.dtype()) };
    // The transforms commute: the innermost dim goes first, so it is the one that copies the input
    // (row by row) and the column gathers then work in place on lines they have just read.
    let mut order = dims.to_vec();
    order.sort_unstable_by(|a, b| b.cmp(a));
    for (i, &d) in order.iter().enumerate() {
        let s = if i + 1 == order.len() { scale } else { 1.0 };
        cur = match cur.t.dtype() {
            DType::C128 => c2c_stage::<f64>(cur, d, forward, s)?,
            _ => c2c_stage::<f32>(cur, d, forward, s)?,
        };
    }
    Ok(cur.t.contiguous()?.to_dtype(x.dtype())?)
}

/// `Backend::fft_r2c` on host memory.
pub fn r2c(x: &Tensor, dims: &[usize], onesided: bool, scale: f64) -> Result<Tensor> {
    let work = if x.dtype() == DType::F64 { DType::F64 } else { DType::F32 };
    let (last, rest) = dims.split_last().expect("checked non-empty");
    let only = rest.is_empty();
    let w = x.to_dtype(work)?;
    let mut cur = match work {
        DType::F64 => r2c_stage::<f64>(&w, *last, onesided, if only { scale } else { 1.0 })?,
        _ => r2c_stage::<f32>(&w, *last, onesided, if only { scale } else { 1.0 })?,
    };
    for (i, &d) in rest.iter().enumerate() {
        let s = if i + 1 == rest.len() { scale } else { 1.0 };
        cur = match work {
            DType::F64 => c2c_stage::<f64>(cur, d, true, s)?,
            _ => c2c_stage::<f32>(cur, d, true, s)?,
        };
    }
    let out_dtype = if x.dtype() == DType::F16 { DType::C32 } else { work.to_complex() };
    Ok(cur.t.contiguous()?.to_dtype(out_dtype)?)
}

/// `Backend::fft_c2r` on host memory.
pub fn c2r(x: &Tensor, dims: &[usize], last_size: usize, scale: f64) -> Result<Tensor> {
    let (last, rest) = dims.split_last().expect("checked non-empty");
    let work = working_complex(x.dtype());
    let mut cur = Stage { t: x.to_dtype(work)?, owned: x.dtype() != work };
    for &d in rest {
        cur = match work {
            DType::C128 => c2c_stage::<f64>(cur, d, false, 1.0)?,
            _ => c2c_stage::<f32>(cur, d, false, 1.0)?,
        };
    }
    let out = match work {
        DType::C128 => c2r_stage::<f64>(&cur.t, *last, last_size, scale)?,
        _ => c2r_stage::<f32>(&cur.t, *last, last_size, scale)?,
    };
    Ok(out.contiguous()?.to_dtype(x.dtype().to_real())?)
}

/// An intermediate result, and whether its buffer is ours to transform in place.
struct Stage {
    t: Tensor,
    owned: bool,
}

/// `t` with `dim` moved last, contiguous (a copy only when it is not laid out so already; the
/// caller only reads it), and the permutation that undoes the move.
fn rows_along(t: &Tensor, dim: usize) -> Result<(Tensor, Vec<i64>)> {
    let nd = t.ndim();
    let mut order: Vec<i64> = (0..nd as i64).filter(|&d| d != dim as i64).collect();
    order.push(dim as i64);
    let moved = t.permute(&order)?;
    let rows = moved.contiguous()?;
    let mut inverse = vec![0i64; nd];
    for (i, &d) in order.iter().enumerate() {
        inverse[d as usize] = i as i64;
    }
    Ok((rows, inverse))
}

/// Rows per task: enough points that a task outweighs its scheduling.
fn rows_per_task(n: usize, rows: usize) -> usize {
    let threads = pool().current_num_threads();
    (GRAIN / n.max(1)).max(1).min(rows.div_ceil(threads).max(1))
}

/// Bytes of each row a column task gathers: four cache lines, so each 4 KiB page a row lies in is
/// visited for more than one line (32 complex64 columns; 16 was 25% slower at 512 x 512).
const BLOCK_BYTES: usize = 256;
/// How many rows ahead the column gather reads, and the scatter claims for writing.
const PREFETCH_ROWS: usize = 8;

/// One complex transform along `dim`, in the tensor's own (contiguous) layout: rows along the
/// last dim are transformed where they lie; along another dim, blocks of neighbouring columns
/// (`BLOCK_BYTES` of each row) are gathered into a scratch buffer, transformed and scattered
/// back, so the data is read and written once and no transpose is made. In place when the buffer
/// is ours. Rows too few for the threads are each split in two (`transform_in_halves`).
fn c2c_stage<T: FftFloat>(cur: Stage, dim: usize, forward: bool, scale: f64) -> Result<Stage> {
    let src = cur.t.contiguous()?;
    let shape = src.shape();
    let n = shape[dim];
    let inner: usize = shape[dim + 1..].iter().product();
    let total = src.numel();
    let s = T::from(scale).expect("scale fits the float type");
    let ps = Ptr(src.byte_ptr() as *mut Complex<T>);
    if inner == 1 && total > 0 && split_pays(n, total / n) {
        // Out of place: the halves are gathered into the output before anything is transformed.
        let out = Tensor::uninit(shape, src.dtype())?;
        let po = Ptr(out.byte_ptr() as *mut Complex<T>);
        for row in (0..total).step_by(n) {
            let x = unsafe { std::slice::from_raw_parts(ps.at(row as isize), n) };
            transform_in_halves(x, unsafe { std::slice::from_raw_parts_mut(po.at(row as isize), n) }, forward, s);
        }
        return Ok(Stage { t: out, owned: true });
    }
    // A strided input is copied by `contiguous`, and that copy is ours too.
    let in_place = cur.owned || !cur.t.is_contiguous();
    let out = if in_place { src.clone() } else { Tensor::uninit(shape, src.dtype())? };
    if total == 0 {
        return Ok(Stage { t: out, owned: true });
    }
    let po = Ptr(out.byte_ptr() as *mut Complex<T>);
    let plan = T::complex_plan(n, forward);
    let zero = Complex::new(T::zero(), T::zero());
    let scratch_len = plan.get_inplace_scratch_len();
    if inner == 1 {
        let rows = total / n;
        let per = rows_per_task(n, rows);
        pool().install(|| {
            (0..rows.div_ceil(per)).into_par_iter().for_each_init(
                || vec![zero; scratch_len],
                |scratch, task| {
                    let (r0, r1) = (task * per, ((task + 1) * per).min(rows));
                    let chunk = unsafe { std::slice::from_raw_parts_mut(po.at((r0 * n) as isize), (r1 - r0) * n) };
                    if !in_place {
                        chunk.copy_from_slice(unsafe { std::slice::from_raw_parts(ps.at((r0 * n) as isize), chunk.len()) });
                    }
                    plan.process_with_scratch(chunk, scratch);
                    if scale != 1.0 {
                        chunk.iter_mut().for_each(|z| *z = z.scale(s));
                    }
                },
            )
        });
    } else {
        let size = std::mem::size_of::<Complex<T>>();
        let columns = BLOCK_BYTES / size;
        let blocks = inner.div_ceil(columns);
        let tasks = total / (n * inner) * blocks;
        let min_len = (GRAIN / (n * columns)).max(1);
        // Gathered columns lie 64 bytes past a multiple of n apart: at n·8 bytes = 4 KiB (n = 512,
        // complex64) the gather's writes per row all fell in one L1 set.
        let stride = n + 64 / size;
        pool().install(|| {
            (0..tasks).into_par_iter().with_min_len(min_len).for_each_init(
                || (vec![zero; stride * columns], vec![zero; scratch_len]),
                |(buf, scratch), task| {
                    let (outer, block) = (task / blocks, task % blocks);
                    let first = block * columns;
                    let width = columns.min(inner - first);
                    let base = outer * n * inner + first;
                    unsafe {
                        for k in 0..n {
                            let row = (base + k * inner) as isize;
                            // Rows lie `inner` apart, a stride the hardware prefetcher does not follow.
                            let ahead = ps.0.wrapping_offset(row + (PREFETCH_ROWS * inner) as isize);
                            (0..width).step_by(64 / size).for_each(|j| prefetch(ahead.wrapping_add(j)));
                            for j in 0..width {
                                *buf.get_unchecked_mut(j * stride + k) = *ps.at(row + j as isize);
                            }
                        }
                    }
                    for col in buf.chunks_exact_mut(stride).take(width) {
                        let col = &mut col[..n];
                        plan.process_with_scratch(col, scratch);
                        if scale != 1.0 {
                            col.iter_mut().for_each(|z| *z = z.scale(s));
                        }
                    }
                    unsafe {
                        for k in 0..n {
                            let row = (base + k * inner) as isize;
                            // Without the claim ahead, each store waits for its line's owner.
                            let ahead = po.0.wrapping_offset(row + (PREFETCH_ROWS * inner) as isize);
                            (0..width).step_by(64 / size).for_each(|j| prefetch_for_write(ahead.wrapping_add(j)));
                            for j in 0..width {
                                *po.at(row + j as isize) = *buf.get_unchecked(j * stride + k);
                            }
                        }
                    }
                },
            )
        });
    }
    Ok(Stage { t: out, owned: true })
}

/// Length from which a lone transform is split over two threads: below it, the two extra passes
/// over the data cost more than the second thread saves.
const SPLIT_FROM: usize = 1 << 16;

/// Whether there are too few rows for the threads and each is long enough to split in two.
fn split_pays(n: usize, rows: usize) -> bool {
    n >= SPLIT_FROM && n % 2 == 0 && 2 * rows <= num_threads()
}

/// One transform of even length `x.len()` into `y` on two threads (a radix-2 decimation in
/// time): the even and the odd samples are transformed apart, side by side, in the two halves of
/// `y`, and one butterfly pass joins them. `scale` is applied in that pass.
fn transform_in_halves<T: FftFloat>(x: &[Complex<T>], y: &mut [Complex<T>], forward: bool, scale: T) {
    let h = x.len() / 2;
    let (px, pe, po) = (Ptr(x.as_ptr() as *mut Complex<T>), Ptr(y.as_mut_ptr()), Ptr(y[h..].as_mut_ptr()));
    for_range(h, GRAIN, |a, b| unsafe {
        for k in a..b {
            *pe.at(k as isize) = *px.at(2 * k as isize);
            *po.at(k as isize) = *px.at(2 * k as isize + 1);
        }
    });
    let plan = T::complex_plan(h, forward);
    for_range(2, 1, |a, b| {
        let mut scratch = vec![Complex::new(T::zero(), T::zero()); plan.get_inplace_scratch_len()];
        for half in a..b {
            let start = if half == 0 { pe } else { po };
            plan.process_with_scratch(unsafe { std::slice::from_raw_parts_mut(start.0, h) }, &mut scratch);
        }
    });
    let w = T::half_twiddles(2 * h);
    for_range(h, GRAIN, |a, b| {
        for k in a..b {
            let wk = if forward { w[k] } else { w[k].conj() };
            unsafe {
                let (e, o) = (*pe.at(k as isize), *po.at(k as isize) * wk);
                *pe.at(k as isize) = (e + o).scale(scale);
                *po.at(k as isize) = (e - o).scale(scale);
            }
        }
    });
}

fn r2c_stage<T: FftFloat>(x: &Tensor, dim: usize, onesided: bool, scale: f64) -> Result<Stage> {
    // Rows are copied into a task's own buffer before the transform: the input is only read.
    let (rows, inverse) = rows_along(x, dim)?;
    let n = rows.shape()[rows.ndim() - 1];
    let m = if onesided { n / 2 + 1 } else { n };
    let mut out_shape = rows.shape().to_vec();
    *out_shape.last_mut().unwrap() = m;
    let out = Tensor::uninit(&out_shape, working_complex(x.dtype().to_complex()))?;
    let count = rows.numel() / n;
    if count > 0 {
        let plan = T::r2c_plan(n);
        let src = Ptr(rows.byte_ptr() as *mut T);
        let dst = unsafe { std::slice::from_raw_parts_mut(out.byte_ptr() as *mut Complex<T>, count * m) };
        let s = T::from(scale).expect("scale fits the float type");
        let per = rows_per_task(n, count);
        pool().install(|| {
            dst.par_chunks_mut(m * per).enumerate().for_each_init(
                || (vec![T::zero(); n], plan.make_scratch_vec()),
                |(buf, scratch), (task, chunk)| {
                    for (i, row) in chunk.chunks_mut(m).enumerate() {
                        let r = task * per + i;
                        let input = unsafe { std::slice::from_raw_parts(src.at((r * n) as isize), n) };
                        buf.copy_from_slice(input);
                        let half = n / 2 + 1;
                        plan.process_with_scratch(buf, &mut row[..half], scratch).expect("lengths come from the plan");
                        if scale != 1.0 {
                            row[..half].iter_mut().for_each(|z| *z = z.scale(s));
                        }
                        // The full spectrum of a real signal: X[n-k] = conj(X[k]).
                        for k in half..m {
                            row[k] = row[n - k].conj();
                        }
                    }
                },
            )
        });
    }
    Ok(Stage { t: out.permute(&inverse)?, owned: true })
}

fn c2r_stage<T: FftFloat>(x: &Tensor, dim: usize, n: usize, scale: f64) -> Result<Tensor> {
    // Rows are copied into a task's own buffer before the transform: the input is only read.
    let (rows, inverse) = rows_along(x, dim)?;
    let m = n / 2 + 1;
    let mut out_shape = rows.shape().to_vec();
    *out_shape.last_mut().unwrap() = n;
    let out = Tensor::uninit(&out_shape, x.dtype().to_real())?;
    let count = rows.numel() / m;
    if count > 0 {
        let plan = T::c2r_plan(n);
        let src = Ptr(rows.byte_ptr() as *mut Complex<T>);
        let dst = unsafe { std::slice::from_raw_parts_mut(out.byte_ptr() as *mut T, count * n) };
        let s = T::from(scale).expect("scale fits the float type");
        let per = rows_per_task(n, count);
        pool().install(|| {
            dst.par_chunks_mut(n * per).enumerate().for_each_init(
                || (vec![Complex::new(T::zero(), T::zero()); m], plan.make_scratch_vec()),
                |(buf, scratch), (task, chunk)| {
                    for (i, row) in chunk.chunks_mut(n).enumerate() {
                        let r = task * per + i;
                        buf.copy_from_slice(unsafe { std::slice::from_raw_parts(src.at((r * m) as isize), m) });
                        // A real signal's DC (and, for even n, Nyquist) coefficient is real:
                        // the imaginary parts there are ignored, as PyTorch and NumPy do.
                        buf[0].im = T::zero();
                        if n & 1 == 0 {
                            buf[m - 1].im = T::zero();
                        }
                        plan.process_with_scratch(buf, row, scratch).expect("imaginary parts zeroed above");
                        if scale != 1.0 {
                            row.iter_mut().for_each(|v| *v = *v * s);
                        }
                    }
                },
            )
        });
    }
    out.permute(&inverse)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::CDouble;

    fn naive_dft(x: &[CDouble], forward: bool) -> Vec<CDouble> {
        let n = x.len() as f64;
        let sign = if forward { -1.0 } else { 1.0 };
        (0..x.len())
            .map(|k| x.iter().enumerate().map(|(j, &v)| v * CDouble::from_polar(1.0, sign * 2.0 * std::f64::consts::PI * (j * k) as f64 / n)).sum())
            .collect()
    }

    fn close(a: &[CDouble], b: &[CDouble]) {
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).norm() < 1e-9, "{x} vs {y}");
        }
    }

    #[test]
    fn a_transform_split_in_halves_matches_the_definition() {
        for n in [2usize, 10, 64] {
            let x: Vec<CDouble> = (0..n).map(|i| CDouble::new((i as f64 * 0.37).sin(), (i as f64 * 0.91).cos())).collect();
            for forward in [true, false] {
                let mut y = vec![CDouble::new(f64::NAN, 0.0); n];
                transform_in_halves(&x, &mut y, forward, 0.5);
                let want: Vec<CDouble> = naive_dft(&x, forward).iter().map(|z| z * 0.5).collect();
                close(&y, &want);
            }
        }
    }
}
