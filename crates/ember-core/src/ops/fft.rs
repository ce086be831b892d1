//! Discrete Fourier transforms on rustfft and realfft: the three primitives PyTorch builds
//! `torch.fft` on (complex-to-complex, real-to-complex, complex-to-real over a set of dims), each
//! with its derivative. `ember.fft` (Python) turns `n`/`s`, `dim` and the hermitian variants into
//! calls of these.
//!
//! Each transform runs one dim at a time: the dim is moved last and made contiguous (a fresh
//! buffer, never the input's), and the rows are transformed in place, groups of rows spread over
//! the pool. float16/complex32 compute in float32, float64/complex128 in float64. The
//! normalisation is one factor applied while the last stage's rows are still in cache.
use super::fft_plan::FftFloat;
use super::map::Ptr;
use crate::autograd;
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::parallel::{pool, GRAIN};
use crate::tensor::Tensor;
use num_complex::Complex;
use rayon::prelude::*;

/// The `norm` argument: which direction carries the `1/n` (or both `1/sqrt(n)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Norm {
    Backward,
    Ortho,
    Forward,
}

impl Norm {
    /// `None` is "backward", PyTorch's default.
    pub fn from_name(name: Option<&str>) -> Result<Norm> {
        Ok(match name {
            None | Some("backward") => Norm::Backward,
            Some("ortho") => Norm::Ortho,
            Some("forward") => Norm::Forward,
            Some(other) => bail!(Value, "Invalid normalization mode: \"{other}\""),
        })
    }

    /// The factor a transform of `n` points in `forward` direction multiplies by.
    fn scale(self, n: usize, forward: bool) -> f64 {
        match (self, forward) {
            (Norm::Ortho, _) => 1.0 / (n as f64).sqrt(),
            (Norm::Backward, false) | (Norm::Forward, true) => 1.0 / n as f64,
            _ => 1.0,
        }
    }

    /// The mode whose scale in the opposite direction equals this one's: the adjoint of a
    /// transform is the opposite transform with the same factor.
    pub fn swapped(self) -> Norm {
        match self {
            Norm::Backward => Norm::Forward,
            Norm::Forward => Norm::Backward,
            Norm::Ortho => Norm::Ortho,
        }
    }
}

fn check_dims(x: &Tensor, dims: &[usize]) -> Result<()> {
    if dims.is_empty() {
        bail!(Runtime, "fft: at least one dim must be transformed");
    }
    for (i, &d) in dims.iter().enumerate() {
        if d >= x.ndim() {
            bail!(Index, "Dimension out of range (expected to be in range of [{}, {}], but got {d})", -(x.ndim() as i64), x.ndim() as i64 - 1);
        }
        if dims[..i].contains(&d) {
            bail!(Runtime, "FFT dims must be unique");
        }
        if x.shape()[d] == 0 {
            bail!(Runtime, "Invalid number of data points (0) specified");
        }
    }
    Ok(())
}

fn points(x: &Tensor, dims: &[usize]) -> usize {
    dims.iter().map(|&d| x.shape()[d]).product()
}

/// Complex-to-complex transform over `dims` (forward: `e^{-2πi jk/n}`), `norm` as PyTorch's.
pub fn fft_c2c(x: &Tensor, dims: &[usize], norm: Norm, forward: bool) -> Result<Tensor> {
    let dims_owned = dims.to_vec();
    autograd::track(&[x], || c2c_kernel(x, dims, norm, forward), move |y| {
        let dims = dims_owned.clone();
        autograd::record("FftC2CBackward0", &[x], &[y], &[], move |_, g| Ok(vec![Some(fft_c2c(&g[0], &dims, norm.swapped(), !forward)?)]))
    })
}

/// Real-to-complex forward transform over `dims`; `onesided` keeps the last dim's first
/// `n/2 + 1` outputs (the rest are their conjugates).
pub fn fft_r2c(x: &Tensor, dims: &[usize], norm: Norm, onesided: bool) -> Result<Tensor> {
    let dims_owned = dims.to_vec();
    let full = dims.last().and_then(|&d| x.shape().get(d).copied()).unwrap_or(0);
    let in_dtype = x.dtype();
    autograd::track(&[x], || r2c_kernel(x, dims, norm, onesided), move |y| {
        let dims = dims_owned.clone();
        autograd::record("FftR2CBackward0", &[x], &[y], &[], move |_, g| Ok(vec![Some(r2c_backward(&g[0], &dims, norm, onesided, full, in_dtype)?)]))
    })
}

/// Complex-to-real inverse transform over `dims`: the last dim holds the first `n/2 + 1`
/// coefficients of a hermitian signal whose length is `last_size`.
pub fn fft_c2r(x: &Tensor, dims: &[usize], norm: Norm, last_size: usize) -> Result<Tensor> {
    let dims_owned = dims.to_vec();
    autograd::track(&[x], || c2r_kernel(x, dims, norm, last_size), move |y| {
        let dims = dims_owned.clone();
        autograd::record("FftC2RBackward0", &[x], &[y], &[], move |_, g| Ok(vec![Some(c2r_backward(&g[0], &dims, norm)?)]))
    })
}

/// The adjoint of the onesided r2c: the missing half of the spectrum is zero, then an inverse
/// c2c with the same factor, of which the real input keeps the real part.
fn r2c_backward(g: &Tensor, dims: &[usize], norm: Norm, onesided: bool, full: usize, in_dtype: DType) -> Result<Tensor> {
    let last = dims[dims.len() - 1];
    let g = if onesided && g.shape()[last] < full {
        let mut shape = g.shape().to_vec();
        shape[last] = full - g.shape()[last];
        super::join::cat(&[g.clone(), Tensor::zeros(&shape, g.dtype())], last as i64)?
    } else {
        g.clone()
    };
    let back = fft_c2c(&g, dims, norm.swapped(), false)?;
    Ok(super::complex::real(&back)?.to_dtype(in_dtype))
}

/// The adjoint of c2r: a forward r2c of the gradient with the same factor, the coefficients
/// that stand for two (a value and its conjugate) doubled.
fn c2r_backward(g: &Tensor, dims: &[usize], norm: Norm) -> Result<Tensor> {
    let last = dims[dims.len() - 1];
    let n = g.shape()[last];
    let half = fft_r2c(g, dims, norm.swapped(), true)?;
    let doubled = n - half.shape()[last];
    if doubled == 0 {
        return Ok(half);
    }
    let m = half.shape()[last];
    let weights: Vec<f64> = (0..m).map(|k| if k >= 1 && k <= doubled { 2.0 } else { 1.0 }).collect();
    let mut wshape = vec![1usize; g.ndim()];
    wshape[last] = m;
    let w = Tensor::from_vec(weights, &wshape)?.to_dtype(half.dtype().to_real());
    super::grad::mul(&half, &w)
}

/// The dtype the kernels compute in for complex `d` (complex32 widens to complex64).
fn working_complex(d: DType) -> DType {
    if d == DType::C128 { DType::C128 } else { DType::C64 }
}

fn c2c_kernel(x: &Tensor, dims: &[usize], norm: Norm, forward: bool) -> Result<Tensor> {
    if !x.dtype().is_complex() {
        bail!(Runtime, "fft_c2c: expected a complex tensor, got {}", x.dtype());
    }
    check_dims(x, dims)?;
    let scale = norm.scale(points(x, dims), forward);
    let w = x.to_dtype(working_complex(x.dtype()));
    let mut cur = Stage { t: w, owned: x.dtype() != working_complex(x.dtype()) };
    for (i, &d) in dims.iter().enumerate() {
        let s = if i + 1 == dims.len() { scale } else { 1.0 };
        cur = match cur.t.dtype() {
            DType::C128 => c2c_stage::<f64>(cur, d, forward, s)?,
            _ => c2c_stage::<f32>(cur, d, forward, s)?,
        };
    }
    Ok(cur.t.contiguous().to_dtype(x.dtype()))
}

fn r2c_kernel(x: &Tensor, dims: &[usize], norm: Norm, onesided: bool) -> Result<Tensor> {
    let work = match x.dtype() {
        DType::F64 => DType::F64,
        DType::F32 | DType::F16 => DType::F32,
        d => bail!(Runtime, "Unsupported dtype {}", d.legacy_name()),
    };
    check_dims(x, dims)?;
    let scale = norm.scale(points(x, dims), true);
    let (last, rest) = dims.split_last().expect("checked non-empty");
    let only = rest.is_empty();
    let w = x.to_dtype(work);
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
    Ok(cur.t.contiguous().to_dtype(out_dtype))
}

fn c2r_kernel(x: &Tensor, dims: &[usize], norm: Norm, last_size: usize) -> Result<Tensor> {
    if !x.dtype().is_complex() {
        bail!(Runtime, "fft_c2r: expected a complex tensor, got {}", x.dtype());
    }
    check_dims(x, dims)?;
    let (last, rest) = dims.split_last().expect("checked non-empty");
    if last_size == 0 || x.shape()[*last] != last_size / 2 + 1 {
        bail!(Runtime, "Invalid number of data points ({last_size}) specified");
    }
    let n: usize = rest.iter().map(|&d| x.shape()[d]).product::<usize>() * last_size;
    let scale = norm.scale(n, false);
    let work = working_complex(x.dtype());
    let mut cur = Stage { t: x.to_dtype(work), owned: x.dtype() != work };
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
    Ok(out.contiguous().to_dtype(x.dtype().to_real()))
}

/// An intermediate result, and whether its buffer is ours to transform in place.
struct Stage {
    t: Tensor,
    owned: bool,
}

/// `t` with `dim` moved last, as a contiguous buffer that may be written (a copy unless `t` is
/// already ours and `dim` already last and contiguous), and the permutation that undoes it.
fn rows_along(t: &Tensor, owned: bool, dim: usize) -> Result<(Tensor, Vec<i64>)> {
    let nd = t.ndim();
    let mut order: Vec<i64> = (0..nd as i64).filter(|&d| d != dim as i64).collect();
    order.push(dim as i64);
    let moved = t.permute(&order)?;
    let rows = if owned && moved.is_contiguous() { moved } else { moved.contiguous_fresh() };
    let mut inverse = vec![0i64; nd];
    for (i, &d) in order.iter().enumerate() {
        inverse[d as usize] = i as i64;
    }
    Ok((rows, inverse))
}

impl Tensor {
    /// A contiguous copy that never aliases this tensor.
    fn contiguous_fresh(&self) -> Tensor {
        if self.is_contiguous() { self.deep_clone() } else { self.contiguous() }
    }
}

/// Rows per task: enough points that a task outweighs its scheduling.
fn rows_per_task(n: usize, rows: usize) -> usize {
    let threads = pool().current_num_threads();
    (GRAIN / n.max(1)).max(1).min(rows.div_ceil(threads).max(1))
}

fn c2c_stage<T: FftFloat>(cur: Stage, dim: usize, forward: bool, scale: f64) -> Result<Stage> {
    let (rows, inverse) = rows_along(&cur.t, cur.owned, dim)?;
    let n = rows.shape()[rows.ndim() - 1];
    let total = rows.numel();
    if total > 0 {
        let plan = T::complex_plan(n, forward);
        let data = unsafe { std::slice::from_raw_parts_mut(rows.byte_ptr() as *mut Complex<T>, total) };
        let s = T::from(scale).expect("scale fits the float type");
        let per = rows_per_task(n, total / n);
        pool().install(|| {
            data.par_chunks_mut(n * per).for_each_init(
                || vec![Complex::new(T::zero(), T::zero()); plan.get_inplace_scratch_len()],
                |scratch, chunk| {
                    plan.process_with_scratch(chunk, scratch);
                    if scale != 1.0 {
                        chunk.iter_mut().for_each(|z| *z = z.scale(s));
                    }
                },
            )
        });
    }
    Ok(Stage { t: rows.permute(&inverse)?, owned: true })
}

fn r2c_stage<T: FftFloat>(x: &Tensor, dim: usize, onesided: bool, scale: f64) -> Result<Stage> {
    let (rows, inverse) = rows_along(x, false, dim)?;
    let n = rows.shape()[rows.ndim() - 1];
    let m = if onesided { n / 2 + 1 } else { n };
    let mut out_shape = rows.shape().to_vec();
    *out_shape.last_mut().unwrap() = m;
    let out = Tensor::uninit(&out_shape, working_complex(x.dtype().to_complex()));
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
    let (rows, inverse) = rows_along(x, false, dim)?;
    let m = n / 2 + 1;
    let mut out_shape = rows.shape().to_vec();
    *out_shape.last_mut().unwrap() = n;
    let out = Tensor::uninit(&out_shape, x.dtype().to_real());
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
                        if n % 2 == 0 {
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
