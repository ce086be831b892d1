//! Softmax and normalisation kernels. Each works on contiguous rows: a row stays in L1 across
//! its passes (max, exp+sum, write; or mean, variance, write), rows run in parallel, and the
//! inner loops fold into 8 lanes so they vectorise. float16/bfloat16 compute in float32.
use crate::backend::cpu::map::{has_avx2, Ptr};
use crate::backend::cpu::math::Real;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::parallel::{for_range, GRAIN};
use crate::tensor::Tensor;
use half::{bf16, f16};
use num_traits::Float as _;

/// A float storage type and the type it computes in.
pub trait Stored: Element {
    type R: Real;
    fn load(self) -> Self::R;
    fn store(v: Self::R) -> Self;
}

macro_rules! stored {
    ($t:ty, $r:ty, $load:expr, $store:expr) => {
        impl Stored for $t {
            type R = $r;
            #[inline(always)]
            fn load(self) -> $r {
                $load(self)
            }
            #[inline(always)]
            fn store(v: $r) -> Self {
                $store(v)
            }
        }
    };
}
stored!(f32, f32, |x| x, |v| v);
stored!(f64, f64, |x| x, |v| v);
stored!(f16, f32, f16::to_f32, f16::from_f32);
stored!(bf16, f32, bf16::to_f32, bf16::from_f32);

/// Runs `$body` with `$T` bound to the float type of `$dtype` (callers check the dtype first).
#[macro_export]
macro_rules! with_float {
    ($dtype:expr, $T:ident, $body:expr) => {{
        use $crate::dtype::DType;
        match $dtype {
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            DType::F16 => {
                type $T = half::f16;
                $body
            }
            DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            _ => unreachable!("with_float on a non-float dtype"),
        }
    }};
}

/// Compiles the `#[inline(always)]` kernel `$name` a second time with AVX2+FMA and defines
/// `$any`, which picks the best copy at runtime (as `map.rs` does for elementwise loops).
macro_rules! avx2_twin {
    ($any:ident, $avx:ident, $name:ident, ($($a:ident: $t:ty),*)) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn $avx<T: Stored>($($a: $t),*) {
            $name::<T>($($a),*)
        }
        unsafe fn $any<T: Stored>($($a: $t),*) {
            #[cfg(target_arch = "x86_64")]
            if has_avx2() {
                return $avx::<T>($($a),*);
            }
            $name::<T>($($a),*)
        }
    };
}

#[inline(always)]
fn real<R: Real>(v: f64) -> R {
    <R as Element>::from_f64(v)
}

/// Folds `f(0..n)` with `step` into 8 independent lanes, then across them.
#[inline(always)]
fn fold8<R: Real>(n: usize, init: R, f: impl Fn(usize) -> R, step: impl Fn(R, R) -> R) -> R {
    let mut lanes = [init; 8];
    let full = n / 8 * 8;
    let mut k = 0;
    while k < full {
        for (l, lane) in lanes.iter_mut().enumerate() {
            *lane = step(*lane, f(k + l));
        }
        k += 8;
    }
    let mut acc = lanes.into_iter().fold(init, &step);
    for k in full..n {
        acc = step(acc, f(k));
    }
    acc
}

#[inline(always)]
fn max_of<R: Real>(a: R, b: R) -> R {
    if a > b {
        a
    } else {
        b
    }
}

// ---- softmax / log_softmax ----

/// Rows `start..end` of length `n`: max, then exp (into `scratch`, so half types keep float32
/// precision) and its sum, then scale. Each loop is a separate sweep so each vectorises.
#[inline(always)]
unsafe fn softmax_rows<T: Stored>(x: Ptr<T>, o: Ptr<T>, n: usize, start: usize, end: usize, log: bool) {
    let mut scratch = vec![real::<T::R>(0.0); if log { 0 } else { n }];
    let sp = scratch.as_mut_ptr();
    for r in start..end {
        let (xr, or) = (x.at((r * n) as isize), o.at((r * n) as isize));
        let load = |k: usize| (*xr.add(k)).load();
        let max = fold8(n, real(f64::NEG_INFINITY), load, max_of);
        if log {
            let sum = fold8(n, real(0.0), |k| (load(k) - max).vexp(), |a, b| a + b);
            let shift = max + sum.ln();
            for k in 0..n {
                *or.add(k) = T::store(load(k) - shift);
            }
        } else {
            for k in 0..n {
                *sp.add(k) = (load(k) - max).vexp();
            }
            let inv = real::<T::R>(1.0) / fold8(n, real(0.0), |k| *sp.add(k), |a, b| a + b);
            for k in 0..n {
                *or.add(k) = T::store(*sp.add(k) * inv);
            }
        }
    }
}
avx2_twin!(softmax_rows_any, softmax_rows_avx2, softmax_rows, (x: Ptr<T>, o: Ptr<T>, n: usize, start: usize, end: usize, log: bool));

/// Columns `j0..j0+w` of one `[n, inner]` block: the reduced dim is walked with `w` columns
/// side by side, so every pass is a contiguous (vectorisable) sweep over `w` elements.
#[inline(always)]
unsafe fn softmax_cols<T: Stored>(x: Ptr<T>, o: Ptr<T>, n: usize, inner: usize, w: usize, log: bool) {
    let mut max = [real::<T::R>(f64::NEG_INFINITY); COLS];
    let mut sum = [real::<T::R>(0.0); COLS];
    let at = |k: usize, j: usize| (k * inner + j) as isize;
    for k in 0..n {
        for j in 0..w {
            max[j] = max_of(max[j], (*x.at(at(k, j))).load());
        }
    }
    for k in 0..n {
        for j in 0..w {
            sum[j] = sum[j] + ((*x.at(at(k, j))).load() - max[j]).vexp();
        }
    }
    for j in 0..w {
        sum[j] = if log { max[j] + sum[j].ln() } else { real::<T::R>(1.0) / sum[j] };
    }
    for k in 0..n {
        for j in 0..w {
            let v = (*x.at(at(k, j))).load();
            *o.at(at(k, j)) = T::store(if log { v - sum[j] } else { (v - max[j]).vexp() * sum[j] });
        }
    }
}
avx2_twin!(softmax_cols_any, softmax_cols_avx2, softmax_cols, (x: Ptr<T>, o: Ptr<T>, n: usize, inner: usize, w: usize, log: bool));

/// Columns handled together by the non-last-dim softmax.
const COLS: usize = 64;

/// `out` = softmax (log_softmax if `log`) of `x` along `d` (see `Backend::softmax`).
pub fn softmax(x: &Tensor, d: usize, log: bool, out: &Tensor) -> Result<()> {
    if x.numel() == 0 {
        return Ok(());
    }
    let xc = x.contiguous()?;
    let n = if x.ndim() == 0 { 1 } else { x.shape()[d] };
    let inner: usize = x.shape().get(d + 1..).unwrap_or(&[]).iter().product();
    let outer = x.numel() / (n * inner);
    with_float!(x.dtype(), T, {
        let (px, po) = (Ptr(xc.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
        if inner == 1 {
            for_range(outer, (GRAIN / n).max(1), |s, e| unsafe { softmax_rows_any::<T>(px, po, n, s, e, log) });
        } else {
            let chunks = inner.div_ceil(COLS);
            for_range(outer * chunks, (GRAIN / (n * COLS)).max(1), |s, e| {
                for task in s..e {
                    let (b, j0) = (task / chunks, task % chunks * COLS);
                    let base = (b * n * inner + j0) as isize;
                    let w = COLS.min(inner - j0);
                    unsafe { softmax_cols_any::<T>(Ptr(px.at(base)), Ptr(po.at(base)), n, inner, w, log) };
                }
            });
        }
    });
    Ok(())
}

// ---- layer norm ----

/// Mean and biased variance of `n` elements (two passes: exact enough in float32 too).
#[inline(always)]
unsafe fn moments<T: Stored>(xr: *const T, n: usize) -> (T::R, T::R) {
    let load = |k: usize| (*xr.add(k)).load();
    let count = real::<T::R>(n as f64);
    let mean = fold8(n, real(0.0), load, |a, b| a + b) / count;
    let var = fold8(n, real(0.0), |k| (load(k) - mean) * (load(k) - mean), |a, b| a + b) / count;
    (mean, var)
}

#[inline(always)]
unsafe fn layer_norm_rows<T: Stored>(x: Ptr<T>, o: Ptr<T>, n: usize, start: usize, end: usize, w: Ptr<T::R>, b: Ptr<T::R>, eps: f64) {
    for r in start..end {
        let (xr, or) = (x.at((r * n) as isize), o.at((r * n) as isize));
        let (mean, var) = moments(xr, n);
        let rstd = real::<T::R>(1.0) / (var + real(eps)).sqrt();
        for k in 0..n {
            *or.add(k) = T::store(((*xr.add(k)).load() - mean) * rstd * *w.at(k as isize) + *b.at(k as isize));
        }
    }
}
avx2_twin!(layer_norm_rows_any, layer_norm_rows_avx2, layer_norm_rows, (x: Ptr<T>, o: Ptr<T>, n: usize, start: usize, end: usize, w: Ptr<T::R>, b: Ptr<T::R>, eps: f64));

/// The elements of an optional parameter in the compute type (`fill` where it is absent).
fn param_or<R: Real>(p: Option<&Tensor>, n: usize, fill: f64) -> Result<Vec<R>> {
    Ok(match p {
        Some(t) => t.to_dtype(DType::F64)?.to_vec::<f64>()?.into_iter().map(real).collect(),
        None => vec![real(fill); n],
    })
}

/// `out` = rows of `n` elements of `x` normalised, times `weight` plus `bias` (see
/// `Backend::layer_norm`).
pub fn layer_norm(x: &Tensor, n: usize, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64, out: &Tensor) -> Result<()> {
    if x.numel() == 0 {
        return Ok(());
    }
    let xc = x.contiguous()?;
    with_float!(x.dtype(), T, {
        let (w, b) = (param_or::<<T as Stored>::R>(weight, n, 1.0)?, param_or::<<T as Stored>::R>(bias, n, 0.0)?);
        let (pw, pb) = (Ptr(w.as_ptr() as *mut _), Ptr(b.as_ptr() as *mut _));
        let (px, po) = (Ptr(xc.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
        for_range(x.numel() / n, (GRAIN / n).max(1), |s, e| unsafe { layer_norm_rows_any::<T>(px, po, n, s, e, pw, pb, eps) });
    });
    Ok(())
}

// ---- group, batch and instance norm: per-row statistics, then a per-row affine map ----

#[inline(always)]
unsafe fn moments_rows<T: Stored>(x: Ptr<T>, n: usize, start: usize, end: usize, mean: Ptr<f64>, var: Ptr<f64>) {
    for r in start..end {
        let (m, v) = moments(x.at((r * n) as isize), n);
        *mean.at(r as isize) = m.to_f64();
        *var.at(r as isize) = v.to_f64();
    }
}
avx2_twin!(moments_rows_any, moments_rows_avx2, moments_rows, (x: Ptr<T>, n: usize, start: usize, end: usize, mean: Ptr<f64>, var: Ptr<f64>));

#[inline(always)]
unsafe fn affine_rows<T: Stored>(x: Ptr<T>, o: Ptr<T>, n: usize, start: usize, end: usize, scale: Ptr<f64>, shift: Ptr<f64>) {
    for r in start..end {
        let (xr, or) = (x.at((r * n) as isize), o.at((r * n) as isize));
        let (a, b) = (real::<T::R>(*scale.at(r as isize)), real::<T::R>(*shift.at(r as isize)));
        for k in 0..n {
            *or.add(k) = T::store((*xr.add(k)).load() * a + b);
        }
    }
}
avx2_twin!(affine_rows_any, affine_rows_avx2, affine_rows, (x: Ptr<T>, o: Ptr<T>, n: usize, start: usize, end: usize, scale: Ptr<f64>, shift: Ptr<f64>));

/// (mean, biased variance) of each of the `rows` contiguous rows of `x`.
pub fn row_moments(x: &Tensor, rows: usize) -> (Vec<f64>, Vec<f64>) {
    let n = x.numel() / rows.max(1);
    let (mut mean, mut var) = (vec![0.0; rows], vec![0.0; rows]);
    let (pm, pv) = (Ptr(mean.as_mut_ptr()), Ptr(var.as_mut_ptr()));
    with_float!(x.dtype(), T, {
        let px = Ptr(x.data_ptr::<T>());
        for_range(rows, (GRAIN / n.max(1)).max(1), |s, e| unsafe { moments_rows_any::<T>(px, n, s, e, pm, pv) });
    });
    (mean, var)
}

/// `out = x * scale[r] + shift[r]` for each contiguous row `r` of `x`.
pub fn affine(x: &Tensor, scale: &[f64], shift: &[f64], out: &Tensor) {
    let rows = scale.len();
    let n = x.numel() / rows.max(1);
    let (ps, pb) = (Ptr(scale.as_ptr() as *mut f64), Ptr(shift.as_ptr() as *mut f64));
    with_float!(x.dtype(), T, {
        let (px, po) = (Ptr(x.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
        for_range(rows, (GRAIN / n.max(1)).max(1), |s, e| unsafe { affine_rows_any::<T>(px, po, n, s, e, ps, pb) });
    });
}
