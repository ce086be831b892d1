//! Max, average and adaptive pooling over 1 to 3 spatial dims.
//!
//! Every leading dim (batch, channels) is flattened into independent planes, which run in
//! parallel. Each spatial dim becomes an `Axis`: for every output position, the input positions
//! its window reads. Windowed and adaptive pools differ only in how the axes are built.
use super::conv::check_float;
use crate::bail;
use crate::error::Result;
use crate::storage::try_vec;
use crate::tensor::Tensor;

/// The input positions each output position of one spatial dim reads: what a backend pools.
pub struct Axis {
    /// `taps[o]`: the in-bounds input positions of output `o`'s window.
    pub taps: Vec<Vec<usize>>,
    /// `padded[o]`: the window's size counting padding (the `count_include_pad` divisor).
    pub padded: Vec<usize>,
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

    /// The number of outputs.
    pub fn len(&self) -> usize {
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

/// How an average pool divides each window's sum.
#[derive(Clone, Copy)]
pub enum Divisor {
    /// By the in-bounds taps.
    Taps,
    /// By the window clipped to the padded input (`count_include_pad=True`).
    Padded,
    /// By `divisor_override`.
    Fixed(usize),
}

/// Window parameters as the functional API takes them: one value or one per spatial dim;
/// an empty `stride` means "the kernel size".
#[derive(Clone, Copy, Debug)]
pub struct WindowArgs<'a> {
    /// The window's size in elements.
    pub kernel_size: &'a [i64],
    /// The step between windows; empty for the kernel size.
    pub stride: &'a [i64],
    /// Implicit padding on both sides (at most half the kernel size).
    pub padding: &'a [i64],
    /// The spacing between a window's elements (max pooling only; 1 for the others).
    pub dilation: &'a [i64],
    /// Whether the output size rounds up, so a last partial window counts.
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

/// Validates a pooling input (`dims + 1` or `dims + 2` dims) and returns its spatial sizes.
fn spatial_of(op: &str, input: &Tensor, dims: usize) -> Result<Vec<usize>> {
    check_float(op, input)?;
    if input.ndim() != dims + 1 && input.ndim() != dims + 2 {
        bail!(Runtime, "{op}: Expected {}D or {}D (batch mode) tensor for input, but got input of size: {:?}", dims + 1, dims + 2, input.shape());
    }
    let split = input.ndim() - dims;
    let spatial = input.shape()[split..].to_vec();
    if let Some(d) = (1..input.ndim()).find(|&d| input.shape()[d] == 0) {
        bail!(Runtime, "{op}: Expected input to have non-zero size for non-batch dimensions, but input has sizes {:?} with dimension {d} being empty", input.shape());
    }
    Ok(spatial)
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


/// `max_pool{1,2,3}d` with indices: (values, flat index of each maximum within its input plane).
pub fn max_pool(input: &Tensor, dims: usize, args: &WindowArgs) -> Result<(Tensor, Tensor)> {
    input.dtype().require_real("max_pool")?;
    let name = ["MaxPool1DWithIndicesBackward0", "MaxPool2DWithIndicesBackward0", "MaxPool3DWithIndicesBackward0"][dims.clamp(1, 3) - 1];
    crate::autograd::track(&[input], || max_pool_kernel(input, dims, args), |(v, i)| super::grad::pool::record_max_pool(name, input, dims, v, i))
}

fn max_pool_kernel(input: &Tensor, dims: usize, args: &WindowArgs) -> Result<(Tensor, Tensor)> {
    let op = format!("max_pool{dims}d");
    let spatial = spatial_of(&op, input, dims)?;
    let axes = three(window_axes(&op, &spatial, args, dims)?);
    crate::backend::of(input.device())?.max_pool(input, dims, &axes)
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
    let spatial = spatial_of(&op, input, dims)?;
    let divisor = match divisor_override {
        Some(0) => bail!(Runtime, "{op}: divisor must be not zero"),
        Some(n) if n < 0 => bail!(Runtime, "{op}: divisor must be positive, but got divisor_override={n}"),
        Some(n) => Divisor::Fixed(n as usize),
        None if count_include_pad => Divisor::Padded,
        None => Divisor::Taps,
    };
    let axes = three(window_axes(&op, &spatial, args, dims)?);
    crate::backend::of(input.device())?.mean_pool(input, dims, &axes, divisor)
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
    let spatial = spatial_of(&op, input, dims)?;
    let axes = three(adaptive_axes(&op, &spatial, output_size, dims)?);
    crate::backend::of(input.device())?.mean_pool(input, dims, &axes, Divisor::Taps)
}

/// `adaptive_max_pool{1,2,3}d` with indices.
pub fn adaptive_max_pool(input: &Tensor, dims: usize, output_size: &[Option<i64>]) -> Result<(Tensor, Tensor)> {
    input.dtype().require_real("adaptive_max_pool")?;
    let name = ["AdaptiveMaxPool1DBackward0", "AdaptiveMaxPool2DBackward0", "AdaptiveMaxPool3DBackward0"][dims.clamp(1, 3) - 1];
    crate::autograd::track(&[input], || adaptive_max_pool_kernel(input, dims, output_size), |(v, i)| super::grad::pool::record_max_pool(name, input, dims, v, i))
}

fn adaptive_max_pool_kernel(input: &Tensor, dims: usize, output_size: &[Option<i64>]) -> Result<(Tensor, Tensor)> {
    let op = format!("adaptive_max_pool{dims}d");
    let spatial = spatial_of(&op, input, dims)?;
    let axes = three(adaptive_axes(&op, &spatial, output_size, dims)?);
    crate::backend::of(input.device())?.max_pool(input, dims, &axes)
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
