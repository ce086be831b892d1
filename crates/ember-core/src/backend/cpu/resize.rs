//! Resampling on host memory: one separable pass of `interpolate`.
use crate::backend::cpu::map::Ptr;
use crate::dtype::Element;
use crate::error::Result;
use crate::ops::resize::Taps;
use crate::parallel::{for_range, GRAIN};
use crate::tensor::Tensor;
use num_traits::Float;

/// One pass: `[outer, n_in, inner]` to `[outer, n_out, inner]`, parallel over output rows.
pub fn resample<T: Element + Float>(src: &Tensor, taps: &Taps) -> Result<Tensor> {
    let [outer, n_in, inner] = [src.shape()[0], src.shape()[1], src.shape()[2]];
    let n_out = taps.outputs();
    let out = Tensor::uninit(&[outer, n_out, inner], src.dtype())?;
    let (x, o) = (Ptr(src.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
    let weights: Vec<T> = taps.weight.iter().map(|&w| T::from_f64(w)).collect();
    let grain = (GRAIN / (inner * taps.width).max(1)).max(1);
    for_range(outer * n_out, grain, |s, e| unsafe {
        for row in s..e {
            let (b, j) = (row / n_out, row % n_out);
            let dst = std::slice::from_raw_parts_mut(o.at((row * inner) as isize), inner);
            let base = x.at((b * n_in * inner) as isize) as *const T;
            let tap = j * taps.width;
            for t in 0..taps.count[j] {
                let (line, w) = (std::slice::from_raw_parts(base.add(taps.index[tap + t] * inner), inner), weights[tap + t]);
                if t == 0 {
                    dst.iter_mut().zip(line).for_each(|(d, &v)| *d = w * v);
                } else {
                    dst.iter_mut().zip(line).for_each(|(d, &v)| *d = *d + w * v);
                }
            }
        }
    });
    Ok(out)
}

