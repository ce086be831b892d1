//! Pooling on host memory: max (with the index of each maximum) and mean over the windows the
//! op computed, and the max pool's gradient.
pub(crate) mod simd;

use crate::backend::cpu::map::Ptr;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::backend::cpu::conv::compute_dtype;
use crate::ops::pool::{Axis, Divisor};
use crate::parallel::{for_range, GRAIN};
use crate::tensor::Tensor;

/// (planes, spatial sizes) of an input whose last `dims` dims are pooled.
fn planes_of(input: &Tensor, dims: usize) -> (usize, Vec<usize>) {
    let split = input.ndim() - dims;
    (input.shape()[..split].iter().product(), input.shape()[split..].to_vec())
}

fn output_shape(input: &Tensor, dims: usize, axes: &[Axis; 3]) -> Vec<usize> {
    let mut shape = input.shape()[..input.ndim() - dims].to_vec();
    shape.extend(axes[3 - dims..].iter().map(|a| a.len()));
    shape
}

/// Calls `f(plane, first, count)` over output planes in parallel, `count` consecutive planes at a time.
fn for_planes(planes: usize, per_plane: usize, f: impl Fn(usize, usize) + Sync) {
    let grain = (GRAIN / per_plane.max(1)).max(1);
    for_range(planes, grain, |s, e| f(s, e));
}

impl Axis {
    /// Whether output `o` reads exactly taps `2o` and `2o + 1`: a 2-wide window at stride 2.
    fn is_pairs(&self) -> bool {
        self.taps.iter().enumerate().all(|(o, t)| t[..] == [2 * o, 2 * o + 1])
    }
}

/// Max over each window, with the flat per-plane index of the maximum (NaN wins, as in PyTorch).
fn max_kernel<T: Element + num_traits::Float>(input: &Tensor, planes: usize, axes: &[Axis; 3], out: &Tensor, idx: &Tensor) {
    let [ad, ah, aw] = axes;
    if ad.len() == 1 && ad.taps[0] == [0] && ah.is_pairs() && aw.is_pairs() {
        return max_2x2::<T>(input, planes, ah.len(), aw.len(), out, idx);
    }
    #[cfg(target_arch = "x86_64")]
    if T::DTYPE == DType::F32 && crate::backend::cpu::map::has_avx512() && input.shape()[input.ndim() - 3..].iter().product::<usize>() < i32::MAX as usize {
        return max_separable(input, planes, axes, out, idx);
    }
    let in_plane = input.shape()[input.ndim() - 3..].iter().product::<usize>();
    let (ih, iw) = (input.shape()[input.ndim() - 2], input.shape()[input.ndim() - 1]);
    let out_plane = ad.len() * ah.len() * aw.len();
    let (x, o, ix) = (Ptr(input.data_ptr::<T>()), Ptr(out.data_ptr::<T>()), Ptr(idx.data_ptr::<i64>()));
    for_planes(planes, out_plane * 9, |s, e| unsafe {
        for p in s..e {
            let src = x.at((p * in_plane) as isize);
            let mut k = p * out_plane;
            for td in &ad.taps {
                for th in &ah.taps {
                    for tw in &aw.taps {
                        let (mut best, mut at) = (T::neg_infinity(), -1i64);
                        for &d in td {
                            for &h in th {
                                let row = (d * ih + h) * iw;
                                for &w in tw {
                                    // A select, not a branch: on real data which tap wins is
                                    // unpredictable.
                                    let v = *src.add(row + w);
                                    let take = at < 0 || v > best || v.is_nan();
                                    best = if take { v } else { best };
                                    at = if take { (row + w) as i64 } else { at };
                                }
                            }
                        }
                        *o.at(k as isize) = best;
                        *ix.at(k as isize) = at;
                        k += 1;
                    }
                }
            }
        }
    });
}

/// `max_kernel` for float32 on AVX-512, separably: every input row's maxima over each output
/// column's window (gathered, sixteen columns at a time), then a fold of each window's rows. A
/// later row must be greater to take over, so the first row holding the maximum keeps it with
/// its first column: the index the whole-window loop picks, ties and NaNs alike.
#[cfg(target_arch = "x86_64")]
fn max_separable(input: &Tensor, planes: usize, axes: &[Axis; 3], out: &Tensor, idx: &Tensor) {
    use simd::{fold_maxima, window_maxima_row};
    let [ad, ah, aw] = axes;
    let (ih, iw) = (input.shape()[input.ndim() - 2], input.shape()[input.ndim() - 1]);
    let rows = input.shape()[input.ndim() - 3] * ih;
    let ow = aw.len();
    let out_plane = ad.len() * ah.len() * ow;
    let step = aw.taps.iter().find(|t| t.len() > 1).map_or(1, |t| t[1] - t[0]) as i32;
    let starts: Vec<i32> = aw.taps.iter().map(|t| t.first().map_or(0, |&w| w as i32)).collect();
    let counts: Vec<i32> = aw.taps.iter().map(|t| t.len() as i32).collect();
    let (x, o, ix) = (Ptr(input.data_ptr::<f32>()), Ptr(out.data_ptr::<f32>()), Ptr(idx.data_ptr::<i64>()));
    for_planes(planes, out_plane * 9, |s, e| unsafe {
        let (mut values, mut indices) = (vec![0f32; rows * ow], vec![0i32; rows * ow]);
        let (mut best, mut at) = (vec![0f32; ow], vec![0i32; ow]);
        for p in s..e {
            let src = x.at((p * rows * iw) as isize);
            for r in 0..rows {
                window_maxima_row(src.add(r * iw), (&starts, &counts, step), (r * iw) as i32, values.as_mut_ptr().add(r * ow), indices.as_mut_ptr().add(r * ow));
            }
            let mut k = (p * out_plane) as isize;
            for (td, th) in ad.taps.iter().flat_map(|td| ah.taps.iter().map(move |th| (td, th))) {
                best.fill(f32::NEG_INFINITY);
                at.fill(-1);
                for r in td.iter().flat_map(|&d| th.iter().map(move |&h| d * ih + h)) {
                    fold_maxima(values.as_ptr().add(r * ow), indices.as_ptr().add(r * ow), ow, best.as_mut_ptr(), at.as_mut_ptr());
                }
                std::ptr::copy_nonoverlapping(best.as_ptr(), o.at(k), ow);
                at.iter().enumerate().for_each(|(j, &a)| *ix.at(k + j as isize) = a as i64);
                k += ow as isize;
            }
        }
    });
}

/// `max_kernel` for 2x2 windows at stride 2 (the CNN default): the same taps in the same order,
/// as selects over fixed offsets, since the general loop mispredicts its branch on real data.
fn max_2x2<T: Element + num_traits::Float>(input: &Tensor, planes: usize, oh: usize, ow: usize, out: &Tensor, idx: &Tensor) {
    let (ih, iw) = (input.shape()[input.ndim() - 2], input.shape()[input.ndim() - 1]);
    let (x, o, ix) = (Ptr(input.data_ptr::<T>()), Ptr(out.data_ptr::<T>()), Ptr(idx.data_ptr::<i64>()));
    #[cfg(target_arch = "x86_64")]
    if T::DTYPE == DType::F32 && crate::backend::cpu::map::has_avx512() && ih * iw < i32::MAX as usize {
        let x = Ptr(x.0 as *mut f32);
        let o = Ptr(o.0 as *mut f32);
        return for_planes(planes, oh * ow * 4, |s, e| unsafe {
            for p in s..e {
                for oy in 0..oh {
                    let k = ((p * oh + oy) * ow) as isize;
                    let top = x.at((p * ih * iw + 2 * oy * iw) as isize);
                    simd::max_pairs_row(top, iw, ow, (2 * oy * iw) as i32, o.at(k), ix.at(k));
                }
            }
        });
    }
    for_planes(planes, oh * ow * 4, |s, e| unsafe {
        for p in s..e {
            let src = x.at((p * ih * iw) as isize);
            for oy in 0..oh {
                let k = (p * oh + oy) * ow;
                for ox in 0..ow {
                    let top = 2 * oy * iw + 2 * ox;
                    let (mut best, mut at) = (*src.add(top), top);
                    for tap in [top + 1, top + iw, top + iw + 1] {
                        let v = *src.add(tap);
                        let take = v > best || v.is_nan();
                        best = if take { v } else { best };
                        at = if take { tap } else { at };
                    }
                    *o.at((k + ox) as isize) = best;
                    *ix.at((k + ox) as isize) = at as i64;
                }
            }
        }
    });
}

fn mean_kernel<T: Element + num_traits::Float>(input: &Tensor, planes: usize, axes: &[Axis; 3], divisor: Divisor, out: &Tensor) {
    let [ad, ah, aw] = axes;
    let in_plane = input.shape()[input.ndim() - 3..].iter().product::<usize>();
    let (ih, iw) = (input.shape()[input.ndim() - 2], input.shape()[input.ndim() - 1]);
    let out_plane = ad.len() * ah.len() * aw.len();
    let (x, o) = (Ptr(input.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
    for_planes(planes, out_plane * 9, |s, e| unsafe {
        for p in s..e {
            let src = x.at((p * in_plane) as isize);
            let mut k = p * out_plane;
            for (od, td) in ad.taps.iter().enumerate() {
                for (oh, th) in ah.taps.iter().enumerate() {
                    for (ow, tw) in aw.taps.iter().enumerate() {
                        let mut sum = <T as Element>::zero();
                        for &d in td {
                            for &h in th {
                                let row = src.add((d * ih + h) * iw);
                                for &w in tw {
                                    sum = sum + *row.add(w);
                                }
                            }
                        }
                        let count = td.len() * th.len() * tw.len();
                        let by = match divisor {
                            Divisor::Taps => count,
                            Divisor::Padded => ad.padded[od] * ah.padded[oh] * aw.padded[ow],
                            Divisor::Fixed(n) => n,
                        };
                        *o.at(k as isize) = if count == 0 { <T as Element>::zero() } else { sum / T::from_f64(by as f64) };
                        k += 1;
                    }
                }
            }
        }
    });
}

/// The input in the compute dtype, contiguous, viewed with three spatial dims.
fn as_planes3(input: &Tensor, planes: usize, spatial: &[usize]) -> Result<Tensor> {
    let mut shape = vec![planes as i64];
    shape.extend(std::iter::repeat(1).take(3 - spatial.len()));
    shape.extend(spatial.iter().map(|&s| s as i64));
    input.to_dtype(compute_dtype(input.dtype()))?.contiguous()?.reshape(&shape)
}

/// `Backend::max_pool` on host memory: a channels-last 2-d input keeps its layout, any other
/// runs contiguous in float32 or float64.
pub fn max_pool(input: &Tensor, dims: usize, axes: &[Axis; 3]) -> Result<(Tensor, Tensor)> {
    let (planes, spatial) = planes_of(input, dims);
    if dims == 2 && crate::backend::cpu::nhwc::is_channels_last(input) {
        return crate::backend::cpu::nhwc::max_pool2d(input, &axes[1], &axes[2]);
    }
    let x = as_planes3(input, planes, &spatial)?;
    let shape = output_shape(input, dims, axes);
    let out = Tensor::uninit(&shape, x.dtype())?;
    let idx = Tensor::uninit(&shape, DType::I64)?;
    if x.dtype() == DType::F64 {
        max_kernel::<f64>(&x, planes, axes, &out, &idx);
    } else {
        max_kernel::<f32>(&x, planes, axes, &out, &idx);
    }
    Ok((out.to_dtype(input.dtype())?, idx))
}

/// `Backend::mean_pool` on host memory, laid out as `max_pool`.
pub fn mean_pool(input: &Tensor, dims: usize, axes: &[Axis; 3], divisor: Divisor) -> Result<Tensor> {
    let (planes, spatial) = planes_of(input, dims);
    if dims == 2 && crate::backend::cpu::nhwc::is_channels_last(input) {
        return crate::backend::cpu::nhwc::mean_pool2d(input, &axes[1], &axes[2], divisor);
    }
    let x = as_planes3(input, planes, &spatial)?;
    let out = Tensor::uninit(&output_shape(input, dims, axes), x.dtype())?;
    if x.dtype() == DType::F64 {
        mean_kernel::<f64>(&x, planes, axes, divisor, &out);
    } else {
        mean_kernel::<f32>(&x, planes, axes, divisor, &out);
    }
    Ok(out.to_dtype(input.dtype())?)
}


/// The gradient of a max pool: `g` (`[planes, outputs]`) added onto the input positions `idx`
/// recorded by the forward pass, in a zeroed `[planes, inputs]`. Planes are independent, so
/// they run in parallel; the indices need no bounds check, the forward made them.
pub fn max_pool_backward(g: &Tensor, idx: &Tensor, inputs: usize) -> Result<Tensor> {
    let gc = g.to_dtype(compute_dtype(g.dtype()))?.contiguous()?;
    let idx = idx.contiguous()?;
    let out = Tensor::zeros(&[gc.shape()[0], inputs], gc.dtype())?;
    if gc.dtype() == DType::F64 {
        scatter_planes::<f64>(&gc, &idx, &out);
    } else {
        scatter_planes::<f32>(&gc, &idx, &out);
    }
    Ok(out.to_dtype(g.dtype())?)
}

fn scatter_planes<T: Element + std::ops::AddAssign>(g: &Tensor, idx: &Tensor, out: &Tensor) {
    let (outputs, inputs) = (g.shape()[1], out.shape()[1]);
    let (pg, pi, po) = (Ptr(g.data_ptr::<T>()), Ptr(idx.data_ptr::<i64>()), Ptr(out.data_ptr::<T>()));
    for_planes(g.shape()[0], outputs, |s, e| unsafe {
        for p in s..e {
            let (src, at, dst) = (pg.at((p * outputs) as isize), pi.at((p * outputs) as isize), po.at((p * inputs) as isize));
            for j in 0..outputs {
                *dst.add(*at.add(j) as usize) += *src.add(j);
            }
        }
    });
}

