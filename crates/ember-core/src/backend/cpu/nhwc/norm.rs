//! Batch-norm statistics and the per-channel affine map on channels-last memory, where a
//! channel's values are a column of the `[N·H·W, C]` matrix: rows are folded into C-long
//! accumulators, a chunk of rows per task, and the chunks' partial sums added in row order (the
//! same result whichever thread finishes first).
use super::{nhwc_view, uninit_channels_last};
use crate::dtype::{DType, Element};
use crate::backend::cpu::norm::Stored;
use half::{bf16, f16};
use crate::backend::cpu::map::Ptr;
use crate::parallel::{for_range, GRAIN};
use crate::tensor::Tensor;
use std::sync::Mutex;

/// Per-channel mean and biased variance of a channels-last float `x` (two passes).
pub fn channel_moments(x: &Tensor) -> (Vec<f64>, Vec<f64>) {
    let v = nhwc_view(x);
    let c = v.shape()[3];
    let rows = v.numel() / c;
    let mean: Vec<f64> = column_sums(&v, None).into_iter().map(|s| s / rows as f64).collect();
    let var = column_sums(&v, Some(&mean)).into_iter().map(|s| s / rows as f64).collect();
    (mean, var)
}

/// Column sums of `[rows, C]` memory, or of squared deviations from `center` when given.
fn column_sums(v: &Tensor, center: Option<&[f64]>) -> Vec<f64> {
    match v.dtype() {
        DType::F64 => column_sums_of::<f64>(v, center),
        DType::BF16 => column_sums_of::<bf16>(v, center),
        DType::F16 => column_sums_of::<f16>(v, center),
        _ => column_sums_of::<f32>(v, center),
    }
}

fn column_sums_of<T: Element>(v: &Tensor, center: Option<&[f64]>) -> Vec<f64> {
    let c = v.shape()[3];
    let rows = v.numel() / c;
    let partials = Mutex::new(Vec::new());
    let px = Ptr(v.data_ptr::<T>());
    for_range(rows, (GRAIN / c).max(1), |s, e| {
        let mut acc = vec![0.0f64; c];
        for r in s..e {
            let row = unsafe { std::slice::from_raw_parts(px.at((r * c) as isize), c) };
            match center {
                None => acc.iter_mut().zip(row).for_each(|(a, &x)| *a += x.to_f64()),
                Some(m) => acc.iter_mut().zip(row).zip(m).for_each(|((a, &x), &m)| *a += (x.to_f64() - m).powi(2)),
            }
        }
        partials.lock().expect("no task panics").push((s, acc));
    });
    let mut partials = partials.into_inner().expect("no task panics");
    partials.sort_by_key(|(s, _)| *s);
    partials.into_iter().fold(vec![0.0; c], |mut total, (_, acc)| {
        total.iter_mut().zip(acc).for_each(|(t, a)| *t += a);
        total
    })
}

/// `x[.., c] * scale[c] + shift[c]` for a channels-last float `x` (half types computed in
/// float32 and rounded once); channels-last result.
pub fn channel_affine(x: &Tensor, scale: &[f64], shift: &[f64]) -> crate::error::Result<Tensor> {
    let s = x.shape();
    let out = uninit_channels_last([s[0], s[1], s[2], s[3]], x.dtype())?;
    let (xv, ov) = (nhwc_view(x), nhwc_view(&out));
    match x.dtype() {
        DType::F64 => affine_of::<f64>(&xv, scale, shift, &ov),
        DType::BF16 => affine_of::<bf16>(&xv, scale, shift, &ov),
        DType::F16 => affine_of::<f16>(&xv, scale, shift, &ov),
        _ => affine_of::<f32>(&xv, scale, shift, &ov),
    }
    Ok(out)
}

fn affine_of<T: Stored>(x: &Tensor, scale: &[f64], shift: &[f64], out: &Tensor) {
    let c = x.shape()[3];
    let (a, b): (Vec<T::R>, Vec<T::R>) = (scale.iter().map(|&v| <T::R as Element>::from_f64(v)).collect(), shift.iter().map(|&v| <T::R as Element>::from_f64(v)).collect());
    let (px, po) = (Ptr(x.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
    for_range(x.numel() / c, (GRAIN / c).max(1), |s, e| unsafe {
        for r in s..e {
            let (src, dst) = (std::slice::from_raw_parts(px.at((r * c) as isize), c), std::slice::from_raw_parts_mut(po.at((r * c) as isize), c));
            for (((d, &v), &a), &b) in dst.iter_mut().zip(src).zip(&a).zip(&b) {
                *d = T::store(v.load() * a + b);
            }
        }
    });
}
