//! 2-d max and average pooling (windowed and adaptive) on channels-last memory: each output
//! position folds its window's input positions, every one a contiguous run of all channels.
use super::{nhwc_view, uninit_channels_last};
use crate::dtype::{DType, Element};
use crate::backend::cpu::conv::compute_dtype;
use crate::backend::cpu::map::Ptr;
use crate::ops::pool::{Axis, Divisor};
use crate::parallel::{for_range, GRAIN};
use crate::tensor::Tensor;
use crate::backend::cpu::norm::Stored;
use half::{bf16, f16};
use num_traits::Float;

/// The input in its compute dtype as `[N, H, W, C]` memory, and the output shape.
fn prepare(input: &Tensor, ah: &Axis, aw: &Axis) -> crate::error::Result<(Tensor, [usize; 4])> {
    let x = nhwc_view(&input.to_dtype(compute_dtype(input.dtype()))?).contiguous()?;
    let s = input.shape();
    Ok((x, [s[0], s[1], ah.len(), aw.len()]))
}

/// Calls `f(position)` for every output position `(image, y, x)`, in parallel.
fn for_positions(count: usize, per_position: usize, f: impl Fn(usize) + Sync) {
    for_range(count, (GRAIN / per_position.max(1)).max(1), |s, e| (s..e).for_each(&f));
}

/// Max pooling of a channels-last `input [N, C, H, W]` over the windows of axes (H, W): values
/// in the input's dtype and flat `h·W + w` indices, both channels-last. Ties and NaNs resolve
/// as in the NCHW kernel (first maximum; a NaN wins). Half types are compared in float32 where
/// they lie (widening is exact, so the maximum is one of the inputs, stored back unchanged).
pub(crate) fn max_pool2d(input: &Tensor, ah: &Axis, aw: &Axis) -> crate::error::Result<(Tensor, Tensor)> {
    let x = nhwc_view(input).contiguous()?;
    let s = input.shape();
    let shape = [s[0], s[1], ah.len(), aw.len()];
    let out = uninit_channels_last(shape, x.dtype())?;
    let idx = uninit_channels_last(shape, DType::I64)?;
    let (o, i) = (nhwc_view(&out), nhwc_view(&idx));
    match x.dtype() {
        DType::F64 => max_kernel::<f64>(&x, ah, aw, &o, &i),
        DType::BF16 => max_kernel::<bf16>(&x, ah, aw, &o, &i),
        DType::F16 => max_kernel::<f16>(&x, ah, aw, &o, &i),
        _ => max_kernel::<f32>(&x, ah, aw, &o, &i),
    }
    Ok((out, idx))
}

/// The pointers and sizes of one max pool.
struct MaxJob<'a, T> {
    x: Ptr<T>,
    out: Ptr<T>,
    idx: Ptr<i64>,
    ah: &'a Axis,
    aw: &'a Axis,
    /// Input height, width and channels.
    dims: [usize; 3],
}

fn max_kernel<T: Stored>(x: &Tensor, ah: &Axis, aw: &Axis, out: &Tensor, idx: &Tensor) {
    let [_, ih, iw, c]: [usize; 4] = x.shape().try_into().expect("4-d");
    let job = MaxJob { x: Ptr(x.data_ptr::<T>()), out: Ptr(out.data_ptr::<T>()), idx: Ptr(idx.data_ptr::<i64>()), ah, aw, dims: [ih, iw, c] };
    let taps = ah.taps.first().map_or(1, Vec::len) * aw.taps.first().map_or(1, Vec::len);
    for_range(out.numel() / c, (GRAIN / (c * taps).max(1)).max(1), |s, e| unsafe { max_positions_any(&job, s..e) });
}

/// `max_positions` compiled for AVX-512 where the CPU has it: the per-channel compare-and-select
/// loops then run 16 lanes wide (the baseline build only has SSE2).
unsafe fn max_positions_any<T: Stored>(job: &MaxJob<T>, positions: std::ops::Range<usize>) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bw") {
        return max_positions_avx512(job, positions);
    }
    max_positions(job, positions)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,fma")]
unsafe fn max_positions_avx512<T: Stored>(job: &MaxJob<T>, positions: std::ops::Range<usize>) {
    max_positions(job, positions)
}

/// Each output position's maximum over its window, channel runs at a time, branch-free: the first
/// tap seeds (value, index), later taps replace them where greater or NaN.
#[inline(always)]
unsafe fn max_positions<T: Stored>(job: &MaxJob<T>, positions: std::ops::Range<usize>) {
    let [ih, iw, c] = job.dims;
    let (oh, ow) = (job.ah.len(), job.aw.len());
    let mut best: Vec<T::R> = vec![<T::R as Element>::zero(); c];
    for p in positions {
        let (img, oy, ox) = (p / (oh * ow), p / ow % oh, p % ow);
        let at = std::slice::from_raw_parts_mut(job.idx.at((p * c) as isize), c);
        let mut first = true;
        for &h in &job.ah.taps[oy] {
            for &w in &job.aw.taps[ox] {
                let flat = (h * iw + w) as i64;
                let src = std::slice::from_raw_parts(job.x.at((((img * ih + h) * iw + w) * c) as isize), c);
                if first {
                    best.iter_mut().zip(src).for_each(|(b, &v)| *b = v.load());
                    at.fill(flat);
                    first = false;
                    continue;
                }
                for ((b, a), &v) in best.iter_mut().zip(at.iter_mut()).zip(src) {
                    let v = v.load();
                    #[allow(clippy::eq_op)] // v != v: NaN
                    let take = v > *b || v != v;
                    *b = if take { v } else { *b };
                    *a = if take { flat } else { *a };
                }
            }
        }
        let dst = std::slice::from_raw_parts_mut(job.out.at((p * c) as isize), c);
        if first {
            // An empty window (ceil mode past the edge): -inf and index -1, as the NCHW kernel.
            dst.fill(T::store(<T::R as Float>::neg_infinity()));
            at.fill(-1);
        } else {
            dst.iter_mut().zip(&best).for_each(|(d, &b)| *d = T::store(b));
        }
    }
}

/// Average pooling of a channels-last `input` over the windows of axes (H, W), each window's sum
/// divided as `divisor` says; the result is channels-last.
pub(crate) fn mean_pool2d(input: &Tensor, ah: &Axis, aw: &Axis, divisor: Divisor) -> crate::error::Result<Tensor> {
    let (x, shape) = prepare(input, ah, aw)?;
    let out = uninit_channels_last(shape, x.dtype())?;
    if x.dtype() == DType::F64 {
        mean_kernel::<f64>(&x, ah, aw, divisor, &nhwc_view(&out));
    } else {
        mean_kernel::<f32>(&x, ah, aw, divisor, &nhwc_view(&out));
    }
    Ok(out.to_dtype(input.dtype())?)
}

fn mean_kernel<T: Element + Float>(x: &Tensor, ah: &Axis, aw: &Axis, divisor: Divisor, out: &Tensor) {
    let [_, ih, iw, c]: [usize; 4] = x.shape().try_into().expect("4-d");
    let (oh, ow) = (ah.len(), aw.len());
    let (px, po) = (Ptr(x.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
    for_positions(out.numel() / c, c * 4, |p| unsafe {
        let (img, oy, ox) = (p / (oh * ow), p / ow % oh, p % ow);
        let sum = std::slice::from_raw_parts_mut(po.at((p * c) as isize), c);
        sum.fill(<T as Element>::zero());
        let (th, tw) = (&ah.taps[oy], &aw.taps[ox]);
        for &h in th {
            for &w in tw {
                let src = std::slice::from_raw_parts(px.at((((img * ih + h) * iw + w) * c) as isize), c);
                sum.iter_mut().zip(src).for_each(|(s, &v)| *s = *s + v);
            }
        }
        let count = th.len() * tw.len();
        let by = match divisor {
            Divisor::Taps => count,
            Divisor::Padded => ah.padded[oy] * aw.padded[ox],
            Divisor::Fixed(n) => n,
        };
        if count == 0 {
            sum.fill(<T as Element>::zero());
        } else {
            let scale = T::from_f64(1.0 / by as f64);
            sum.iter_mut().for_each(|s| *s = *s * scale);
        }
    });
}
