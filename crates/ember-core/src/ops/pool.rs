//! Max, average and adaptive pooling over 1 to 3 spatial dims.
//!
//! Every leading dim (batch, channels) is flattened into independent planes, which run in
//! parallel. Each spatial dim becomes an `Axis`: for every output position, the input positions
//! its window reads. Windowed and adaptive pools differ only in how the axes are built.
use super::conv::{check_float, compute_dtype};
use crate::backend::cpu::map::Ptr;
use crate::bail;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::storage::try_vec;
use crate::parallel::{for_range, GRAIN};
use crate::tensor::Tensor;

/// The input positions each output position of one spatial dim reads.
pub(crate) struct Axis {
    /// `taps[o]`: the in-bounds input positions of output `o`'s window.
    pub(crate) taps: Vec<Vec<usize>>,
    /// `padded[o]`: the window's size counting padding (the `count_include_pad` divisor).
    pub(crate) padded: Vec<usize>,
}

impl Axis {
    fn unit() -> Axis {
        Axis { taps: vec![vec![0]], padded: vec![1] }
    }

    /// The taps of each of `output` windows. Positions are found arithmetically (a kernel may
    /// be far wider than the input) in i128, where no geometry that passed validation overflows.
    fn window(input: usize, output: usize, w: &Window1) -> Result<Axis> {
        let (mut taps, mut padded) = (try_vec(output)?, try_vec(output)?);
        let (kernel, dilation, last_input) = (w.kernel as i128, w.dilation as i128, input as i128 - 1);
        for o in 0..output {
            let start = o as i128 * w.stride as i128 - w.pad as i128;
            let first = if start >= 0 { 0 } else { (-start + dilation - 1) / dilation };
            let last = (last_input - start).div_euclid(dilation).min(kernel - 1);
            taps.push((first..=last).map(|j| (start + j * dilation) as usize).collect());
            let end = (start + kernel).min(input as i128 + w.pad as i128);
            padded.push((end - start) as usize);
        }
        Ok(Axis { taps, padded })
    }

    /// PyTorch's adaptive windows: output `o` covers `floor(o·in/out) .. ceil((o+1)·in/out)`.
    fn adaptive(input: usize, output: usize) -> Result<Axis> {
        let (mut taps, mut padded) = (try_vec(output)?, try_vec(output)?);
        let (i, n) = (input as u128, output as u128);
        for o in 0..n {
            let window = ((o * i / n) as usize)..(((o + 1) * i).div_ceil(n) as usize);
            padded.push(window.len());
            taps.push(window.collect());
        }
        Ok(Axis { taps, padded })
    }

    pub(crate) fn len(&self) -> usize {
        self.taps.len()
    }
}

/// One spatial dim's window parameters, validated.
struct Window1 {
    kernel: usize,
    stride: usize,
    pad: usize,
    dilation: usize,
}

impl Window1 {
    /// The span of a dilated window, in i128: `dilation · (kernel - 1)` may pass 2**64.
    fn effective(&self) -> i128 {
        self.dilation as i128 * (self.kernel as i128 - 1) + 1
    }
}

/// Window parameters as the functional API takes them: one value or one per spatial dim;
/// an empty `stride` means "the kernel size".
#[derive(Clone, Copy, Debug)]
pub struct WindowArgs<'a> {
    pub kernel_size: &'a [i64],
    pub stride: &'a [i64],
    pub padding: &'a [i64],
    pub dilation: &'a [i64],
    pub ceil_mode: bool,
}

fn per_dim(op: &str, name: &str, values: &[i64], dims: usize) -> Result<Vec<i64>> {
    match values.len() {
        1 => Ok(vec![values[0]; dims]),
        n if n == dims => Ok(values.to_vec()),
        _ => bail!(Runtime, "{op}: {name} must either be a single int, or a tuple of {dims} ints, but got {name}={values:?}"),
    }
}

/// PyTorch's pooling output size, with `ceil_mode`'s rule that the last window must start
/// inside the input or its left padding.
fn pooled_size(input: usize, w: &Window1, ceil_mode: bool) -> i128 {
    let effective = w.effective();
    let (stride, pad, input) = (w.stride as i128, w.pad as i128, input as i128);
    let span = input + 2 * pad - effective + if ceil_mode { stride - 1 } else { 0 };
    let mut out = span.div_euclid(stride) + 1;
    if ceil_mode && (out - 1) * stride >= input + pad {
        out -= 1;
    }
    out
}

/// Validates a pooling input (`dims + 1` or `dims + 2` dims) and returns (planes, spatial).
fn planes(op: &str, input: &Tensor, dims: usize) -> Result<(usize, Vec<usize>)> {
    check_float(op, input)?;
    if input.ndim() != dims + 1 && input.ndim() != dims + 2 {
        bail!(Runtime, "{op}: Expected {}D or {}D (batch mode) tensor for input, but got input of size: {:?}", dims + 1, dims + 2, input.shape());
    }
    let split = input.ndim() - dims;
    let spatial = input.shape()[split..].to_vec();
    if let Some(d) = (1..input.ndim()).find(|&d| input.shape()[d] == 0) {
        bail!(Runtime, "{op}: Expected input to have non-zero size for non-batch dimensions, but input has sizes {:?} with dimension {d} being empty", input.shape());
    }
    Ok((input.shape()[..split].iter().product(), spatial))
}

/// Validates window arguments and builds the axes for a windowed pool.
fn window_axes(op: &str, spatial: &[usize], args: &WindowArgs, dims: usize) -> Result<Vec<Axis>> {
    let kernel = per_dim(op, "kernel_size", args.kernel_size, dims)?;
    let stride = if args.stride.is_empty() { kernel.clone() } else { per_dim(op, "stride", args.stride, dims)? };
    let padding = per_dim(op, "padding", args.padding, dims)?;
    let dilation = per_dim(op, "dilation", args.dilation, dims)?;
    if kernel.iter().any(|&k| k <= 0) {
        bail!(Runtime, "{op}: kernel_size must be greater than zero, but got kernel_size={kernel:?}");
    }
    if stride.iter().any(|&s| s <= 0) {
        bail!(Runtime, "{op}: stride must be greater than zero, but got stride={stride:?}");
    }
    if dilation.iter().any(|&d| d <= 0) {
        bail!(Runtime, "{op}: dilation must be greater than zero, but got dilation={dilation:?}");
    }
    if padding.iter().any(|&p| p < 0) {
        bail!(Runtime, "{op}: pad must be non-negative, but got padding={padding:?}");
    }
    let mut windows = Vec::with_capacity(dims);
    for d in 0..dims {
        let w = Window1 { kernel: kernel[d] as usize, stride: stride[d] as usize, pad: padding[d] as usize, dilation: dilation[d] as usize };
        if w.pad as i128 > w.effective() / 2 {
            bail!(Runtime, "pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation={}", w.pad, w.kernel, w.dilation);
        }
        windows.push(w);
    }
    let sizes: Vec<i128> = (0..dims).map(|d| pooled_size(spatial[d], &windows[d], args.ceil_mode)).collect();
    if sizes.iter().any(|&s| s < 1) {
        let join = |v: Vec<String>| v.join("x");
        bail!(Runtime, "Given input size: ({}). Calculated output size: ({}). Output size is too small",
            join(spatial.iter().map(|s| s.to_string()).collect()), join(sizes.iter().map(|s| s.to_string()).collect()));
    }
    if sizes.iter().any(|&s| s > isize::MAX as i128) {
        return Err(crate::layout::size_overflow(&sizes));
    }
    (0..dims).map(|d| Axis::window(spatial[d], sizes[d] as usize, &windows[d])).collect()
}

fn adaptive_axes(op: &str, spatial: &[usize], output_size: &[Option<i64>], dims: usize) -> Result<Vec<Axis>> {
    if output_size.len() != dims {
        bail!(Runtime, "{op}: output_size must be {dims}, but got output_size of length {}", output_size.len());
    }
    let mut axes = Vec::with_capacity(dims);
    for d in 0..dims {
        let out = match output_size[d] {
            None => spatial[d],
            Some(o) if o < 0 => bail!(Runtime, "{op}: elements of output_size must be greater than or equal to 0 but received {:?}", output_size),
            Some(o) => o as usize,
        };
        axes.push(Axis::adaptive(spatial[d], out)?);
    }
    Ok(axes)
}

/// Pads the axis list to three dims (D, H, W) with single-position axes in front.
fn three(mut axes: Vec<Axis>) -> [Axis; 3] {
    while axes.len() < 3 {
        axes.insert(0, Axis::unit());
    }
    let [d, h, w]: [Axis; 3] = axes.try_into().unwrap_or_else(|_| unreachable!("at most three spatial dims"));
    [d, h, w]
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
    use crate::backend::cpu::pool_simd::{fold_maxima, window_maxima_row};
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
                    crate::backend::cpu::pool_simd::max_pairs_row(top, iw, ow, (2 * oy * iw) as i32, o.at(k), ix.at(k));
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

/// How an average pool divides each window's sum.
#[derive(Clone, Copy)]
pub(crate) enum Divisor {
    /// By the in-bounds taps.
    Taps,
    /// By the window clipped to the padded input (`count_include_pad=True`).
    Padded,
    Fixed(usize),
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

fn run_max(input: &Tensor, planes: usize, spatial: &[usize], axes: [Axis; 3], dims: usize) -> Result<(Tensor, Tensor)> {
    if dims == 2 && crate::backend::cpu::nhwc::is_channels_last(input) {
        return crate::backend::cpu::nhwc::max_pool2d(input, &axes[1], &axes[2]);
    }
    let x = as_planes3(input, planes, spatial)?;
    let shape = output_shape(input, dims, &axes);
    let out = Tensor::uninit(&shape, x.dtype())?;
    let idx = Tensor::uninit(&shape, DType::I64)?;
    if x.dtype() == DType::F64 {
        max_kernel::<f64>(&x, planes, &axes, &out, &idx);
    } else {
        max_kernel::<f32>(&x, planes, &axes, &out, &idx);
    }
    Ok((out.to_dtype(input.dtype())?, idx))
}

fn run_mean(input: &Tensor, planes: usize, spatial: &[usize], axes: [Axis; 3], dims: usize, divisor: Divisor) -> Result<Tensor> {
    if dims == 2 && crate::backend::cpu::nhwc::is_channels_last(input) {
        return crate::backend::cpu::nhwc::mean_pool2d(input, &axes[1], &axes[2], divisor);
    }
    let x = as_planes3(input, planes, spatial)?;
    let out = Tensor::uninit(&output_shape(input, dims, &axes), x.dtype())?;
    if x.dtype() == DType::F64 {
        mean_kernel::<f64>(&x, planes, &axes, divisor, &out);
    } else {
        mean_kernel::<f32>(&x, planes, &axes, divisor, &out);
    }
    Ok(out.to_dtype(input.dtype())?)
}

/// `max_pool{1,2,3}d` with indices: (values, flat index of each maximum within its input plane).
pub fn max_pool(input: &Tensor, dims: usize, args: &WindowArgs) -> Result<(Tensor, Tensor)> {
    input.dtype().require_real("max_pool")?;
    let name = ["MaxPool1DWithIndicesBackward0", "MaxPool2DWithIndicesBackward0", "MaxPool3DWithIndicesBackward0"][dims.clamp(1, 3) - 1];
    crate::autograd::track(&[input], || max_pool_kernel(input, dims, args), |(v, i)| super::grad::pool::record_max_pool(name, input, dims, v, i))
}

fn max_pool_kernel(input: &Tensor, dims: usize, args: &WindowArgs) -> Result<(Tensor, Tensor)> {
    let op = format!("max_pool{dims}d");
    let (planes, spatial) = planes(&op, input, dims)?;
    let axes = three(window_axes(&op, &spatial, args, dims)?);
    run_max(input, planes, &spatial, axes, dims)
}

/// The gradient of a max pool: `g` (`[planes, outputs]`) added onto the input positions `idx`
/// recorded by the forward pass, in a zeroed `[planes, inputs]`. Planes are independent, so
/// they run in parallel; the indices need no bounds check, the forward made them.
pub(crate) fn max_pool_backward(g: &Tensor, idx: &Tensor, inputs: usize) -> Result<Tensor> {
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

/// `avg_pool{1,2,3}d`; `args.dilation` must be `[1]`.
///
/// Its derivative: average pooling is separable (the divisor is a product of per-dim counts),
/// so the gradient applies each dim's 1-d pooling matrix, transposed.
pub fn avg_pool(input: &Tensor, dims: usize, args: &WindowArgs, count_include_pad: bool, divisor_override: Option<i64>) -> Result<Tensor> {
    input.dtype().require_real("avg_pool")?;
    crate::autograd::track(&[input], || avg_pool_kernel(input, dims, args, count_include_pad, divisor_override), |y| {
        let spatial = &input.shape()[input.ndim() - dims..];
        let pick = |v: &[i64], i: usize| if v.len() == 1 { v[0] } else { v[i] };
        let matrices = (0..dims)
            .map(|i| {
                let k = [pick(args.kernel_size, i)];
                let s = [if args.stride.is_empty() { k[0] } else { pick(args.stride, i) }];
                let a = WindowArgs { kernel_size: &k, stride: &s, padding: &[pick(args.padding, i)], dilation: &[1], ceil_mode: args.ceil_mode };
                super::grad::pool::matrix_of(spatial[i], input.dtype(), |b| avg_pool_kernel(b, 1, &a, count_include_pad, divisor_override.map(|_| 1)))
            })
            .collect::<Result<Vec<_>>>()?;
        let factor = divisor_override.map_or(1.0, |d| 1.0 / d as f64);
        let name = ["AvgPool1DBackward0", "AvgPool2DBackward0", "AvgPool3DBackward0"][dims.clamp(1, 3) - 1];
        super::grad::pool::record_separable(name, input, matrices, factor, y)
    })
}

fn avg_pool_kernel(input: &Tensor, dims: usize, args: &WindowArgs, count_include_pad: bool, divisor_override: Option<i64>) -> Result<Tensor> {
    let op = format!("avg_pool{dims}d");
    let (planes, spatial) = planes(&op, input, dims)?;
    let divisor = match divisor_override {
        Some(0) => bail!(Runtime, "{op}: divisor must be not zero"),
        Some(n) if n < 0 => bail!(Runtime, "{op}: divisor must be positive, but got divisor_override={n}"),
        Some(n) => Divisor::Fixed(n as usize),
        None if count_include_pad => Divisor::Padded,
        None => Divisor::Taps,
    };
    let axes = three(window_axes(&op, &spatial, args, dims)?);
    run_mean(input, planes, &spatial, axes, dims, divisor)
}

/// `adaptive_avg_pool{1,2,3}d`; `None` in `output_size` keeps that dim's input size.
pub fn adaptive_avg_pool(input: &Tensor, dims: usize, output_size: &[Option<i64>]) -> Result<Tensor> {
    input.dtype().require_real("adaptive_avg_pool")?;
    crate::autograd::track(&[input], || adaptive_avg_pool_kernel(input, dims, output_size), |y| {
        let (n, first) = (input.ndim(), input.ndim() - dims);
        let matrices = (0..dims)
            .map(|i| super::grad::pool::matrix_of(input.shape()[first + i], input.dtype(), |b| adaptive_avg_pool_kernel(b, 1, &[Some(y.shape()[n - dims + i] as i64)])))
            .collect::<Result<Vec<_>>>()?;
        let name = ["AdaptiveAvgPool1DBackward0", "AdaptiveAvgPool2DBackward0", "AdaptiveAvgPool3DBackward0"][dims.clamp(1, 3) - 1];
        super::grad::pool::record_separable(name, input, matrices, 1.0, y)
    })
}

fn adaptive_avg_pool_kernel(input: &Tensor, dims: usize, output_size: &[Option<i64>]) -> Result<Tensor> {
    let op = format!("adaptive_avg_pool{dims}d");
    let (planes, spatial) = planes(&op, input, dims)?;
    let axes = three(adaptive_axes(&op, &spatial, output_size, dims)?);
    run_mean(input, planes, &spatial, axes, dims, Divisor::Taps)
}

/// `adaptive_max_pool{1,2,3}d` with indices.
pub fn adaptive_max_pool(input: &Tensor, dims: usize, output_size: &[Option<i64>]) -> Result<(Tensor, Tensor)> {
    input.dtype().require_real("adaptive_max_pool")?;
    let name = ["AdaptiveMaxPool1DBackward0", "AdaptiveMaxPool2DBackward0", "AdaptiveMaxPool3DBackward0"][dims.clamp(1, 3) - 1];
    crate::autograd::track(&[input], || adaptive_max_pool_kernel(input, dims, output_size), |(v, i)| super::grad::pool::record_max_pool(name, input, dims, v, i))
}

fn adaptive_max_pool_kernel(input: &Tensor, dims: usize, output_size: &[Option<i64>]) -> Result<(Tensor, Tensor)> {
    let op = format!("adaptive_max_pool{dims}d");
    let (planes, spatial) = planes(&op, input, dims)?;
    let axes = three(adaptive_axes(&op, &spatial, output_size, dims)?);
    run_max(input, planes, &spatial, axes, dims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceil_mode_drops_a_window_starting_in_the_right_padding() {
        let w = Window1 { kernel: 2, stride: 2, pad: 1, dilation: 1 };
        assert_eq!(pooled_size(4, &w, false), 3);
        assert_eq!(pooled_size(4, &w, true), 3);
        let w = Window1 { kernel: 3, stride: 2, pad: 0, dilation: 1 };
        assert_eq!(pooled_size(6, &w, true), 3);
    }

    #[test]
    fn adaptive_windows_overlap_like_pytorch() {
        let a = Axis::adaptive(5, 3).unwrap();
        assert_eq!(a.taps, vec![vec![0, 1], vec![1, 2, 3], vec![3, 4]]);
    }

    #[test]
    fn max_pool_returns_flat_indices() {
        let x = Tensor::from_vec((0..16).map(|v| v as f32).collect(), &[1, 4, 4]).unwrap();
        let args = WindowArgs { kernel_size: &[2], stride: &[], padding: &[0], dilation: &[1], ceil_mode: false };
        let (v, i) = max_pool(&x, 2, &args).unwrap();
        assert_eq!(v.to_vec::<f32>().unwrap(), vec![5., 7., 13., 15.]);
        assert_eq!(i.to_vec::<i64>().unwrap(), vec![5, 7, 13, 15]);
    }
}
