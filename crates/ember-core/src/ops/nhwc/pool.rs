//! 2-d max and average pooling (windowed and adaptive) on channels-last memory: each output
//! position folds its window's input positions, every one a contiguous run of all channels.
use super::{nhwc_view, uninit_channels_last};
use crate::dtype::{DType, Element};
use crate::ops::conv::compute_dtype;
use crate::ops::map::Ptr;
use crate::ops::pool::{Axis, Divisor};
use crate::parallel::{for_range, GRAIN};
use crate::tensor::Tensor;
use num_traits::Float;

/// The input in its compute dtype as `[N, H, W, C]` memory, and the output shape.
fn prepare(input: &Tensor, ah: &Axis, aw: &Axis) -> (Tensor, [usize; 4]) {
    let x = nhwc_view(&input.to_dtype(compute_dtype(input.dtype()))).contiguous();
    let s = input.shape();
    (x, [s[0], s[1], ah.len(), aw.len()])
}

/// Calls `f(position)` for every output position `(image, y, x)`, in parallel.
fn for_positions(count: usize, per_position: usize, f: impl Fn(usize) + Sync) {
    for_range(count, (GRAIN / per_position.max(1)).max(1), |s, e| (s..e).for_each(&f));
}

/// Max pooling of a channels-last `input [N, C, H, W]` over the windows of axes (H, W): values
/// in the input's dtype and flat `h·W + w` indices, both channels-last. Ties and NaNs resolve
/// as in the NCHW kernel (first maximum; a NaN wins).
pub(in crate::ops) fn max_pool2d(input: &Tensor, ah: &Axis, aw: &Axis) -> (Tensor, Tensor) {
    let (x, shape) = prepare(input, ah, aw);
    let out = uninit_channels_last(shape, x.dtype());
    let idx = uninit_channels_last(shape, DType::I64);
    if x.dtype() == DType::F64 {
        max_kernel::<f64>(&x, ah, aw, &nhwc_view(&out), &nhwc_view(&idx));
    } else {
        max_kernel::<f32>(&x, ah, aw, &nhwc_view(&out), &nhwc_view(&idx));
    }
    (out.to_dtype(input.dtype()), idx)
}

fn max_kernel<T: Element + Float>(x: &Tensor, ah: &Axis, aw: &Axis, out: &Tensor, idx: &Tensor) {
    let [_, ih, iw, c]: [usize; 4] = x.shape().try_into().expect("4-d");
    let (oh, ow) = (ah.len(), aw.len());
    let (px, po, pi) = (Ptr(x.data_ptr::<T>()), Ptr(out.data_ptr::<T>()), Ptr(idx.data_ptr::<i64>()));
    for_positions(out.numel() / c, c * 4, |p| unsafe {
        let (img, oy, ox) = (p / (oh * ow), p / ow % oh, p % ow);
        let best = std::slice::from_raw_parts_mut(po.at((p * c) as isize), c);
        let at = std::slice::from_raw_parts_mut(pi.at((p * c) as isize), c);
        best.fill(T::neg_infinity());
        at.fill(-1);
        for &h in &ah.taps[oy] {
            for &w in &aw.taps[ox] {
                let flat = (h * iw + w) as i64;
                let src = std::slice::from_raw_parts(px.at((((img * ih + h) * iw + w) * c) as isize), c);
                for ((b, a), &v) in best.iter_mut().zip(at.iter_mut()).zip(src) {
                    let take = *a < 0 || v > *b || v.is_nan();
                    *b = if take { v } else { *b };
                    *a = if take { flat } else { *a };
                }
            }
        }
    });
}

/// Average pooling of a channels-last `input` over the windows of axes (H, W), each window's sum
/// divided as `divisor` says; the result is channels-last.
pub(in crate::ops) fn mean_pool2d(input: &Tensor, ah: &Axis, aw: &Axis, divisor: Divisor) -> Tensor {
    let (x, shape) = prepare(input, ah, aw);
    let out = uninit_channels_last(shape, x.dtype());
    if x.dtype() == DType::F64 {
        mean_kernel::<f64>(&x, ah, aw, divisor, &nhwc_view(&out));
    } else {
        mean_kernel::<f32>(&x, ah, aw, divisor, &nhwc_view(&out));
    }
    out.to_dtype(input.dtype())
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
