//! Convolution and transposed convolution over 1 to 3 spatial dims: PyTorch's argument checks
//! and output geometry, autograd (through `grad/conv.rs`); the arithmetic is the backend's.
//!
//! Every geometry is handled in three dims (D, H, W); 1-d and 2-d convolutions use leading 1s.
use crate::bail;
use crate::error::Result;
use crate::tensor::Tensor;

/// How a convolution pads its input.
#[derive(Clone, Copy, Debug)]
pub enum ConvPadding<'a> {
    /// The same padding on both sides of each spatial dim (one value per dim).
    Explicit(&'a [i64]),
    /// Output as large as the input (stride 1 only); an odd total puts the extra on the right.
    Same,
    /// No padding.
    Valid,
}

/// One convolution's spatial geometry. `input` is what im2col reads and `output` what the GEMM
/// produces; a transposed conv uses the same geometry the other way round.
#[derive(Clone, Copy, Debug)]
pub struct Geom {
    /// Spatial sizes of the (forward conv's) input.
    pub input: [usize; 3],
    /// Spatial sizes of the (forward conv's) output.
    pub output: [usize; 3],
    /// Kernel sizes.
    pub kernel: [usize; 3],
    /// Strides.
    pub stride: [usize; 3],
    /// Padding before each dim (an asymmetric 'same' pad's extra is past every tap).
    pub pad: [usize; 3],
    /// Dilations.
    pub dilation: [usize; 3],
}

impl Geom {
    pub(crate) fn kernel_volume(&self) -> usize {
        self.kernel.iter().product()
    }
    pub(crate) fn input_volume(&self) -> usize {
        self.input.iter().product()
    }
    pub(crate) fn output_volume(&self) -> usize {
        self.output.iter().product()
    }
    /// Output rows: every (d, h) pair; a row is `output[2]` long.
    pub(crate) fn output_rows(&self) -> usize {
        self.output[0] * self.output[1]
    }
    pub(crate) fn is_pointwise(&self) -> bool {
        self.kernel == [1; 3] && self.stride == [1; 3] && self.pad == [0; 3]
    }
    /// Stride 1 along H and W with equal input and output widths: consecutive output rows of a
    /// tap read consecutive, equally long image rows, which im2col copies as one run.
    pub(crate) fn rows_are_runs(&self) -> bool {
        self.stride[1] == 1 && self.stride[2] == 1 && self.input[2] == self.output[2]
    }
    /// Input position of output position `o` at kernel tap `k` along `dim` (may be outside).
    pub(crate) fn source(&self, dim: usize, o: usize, k: usize) -> isize {
        (o * self.stride[dim] + k * self.dilation[dim]) as isize - self.pad[dim] as isize
    }
    /// The outputs `lo..hi` along W whose input for tap `k` lies inside the image.
    pub(crate) fn valid_w(&self, k: usize) -> (usize, usize) {
        let (s, n) = (self.stride[2] as isize, self.input[2] as isize);
        let off = (k * self.dilation[2]) as isize - self.pad[2] as isize;
        let lo = if off < 0 { (-off + s - 1) / s } else { 0 };
        let hi = if n - 1 - off < 0 { 0 } else { (n - 1 - off) / s + 1 };
        let out = self.output[2] as isize;
        (lo.min(out) as usize, hi.clamp(lo.min(out), out) as usize)
    }
}

pub(crate) fn check_float(op: &str, t: &Tensor) -> Result<()> {
    if !t.dtype().is_float() {
        bail!(Runtime, "\"{op}\" not implemented for '{}'", t.dtype());
    }
    Ok(())
}

fn check_dtypes(op: &str, input: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<()> {
    check_float(op, input)?;
    if weight.dtype() != input.dtype() {
        bail!(Runtime, "Input type ({}) and weight type ({}) should be the same", input.dtype(), weight.dtype());
    }
    if let Some(b) = bias.filter(|b| b.dtype() != input.dtype()) {
        bail!(Runtime, "Input type ({}) and bias type ({}) should be the same", input.dtype(), b.dtype());
    }
    Ok(())
}

/// A per-dim parameter given as one value or one per spatial dim, as `usize`s.
fn per_dim(name: &str, values: &[i64], dims: usize) -> Result<Vec<i64>> {
    match values.len() {
        1 => Ok(vec![values[0]; dims]),
        n if n == dims => Ok(values.to_vec()),
        _ => bail!(Runtime, "expected {name} to be a single integer value or a list of {dims} values to match the convolution dimensions, but got {name}={values:?}"),
    }
}

fn positive(name: &str, message: &str, values: &[i64], dims: usize) -> Result<Vec<usize>> {
    let v = per_dim(name, values, dims)?;
    if v.iter().any(|&x| x <= 0) {
        bail!(Runtime, "{message}");
    }
    Ok(v.into_iter().map(|x| x as usize).collect())
}

fn non_negative(name: &str, message: &str, values: &[i64], dims: usize) -> Result<Vec<usize>> {
    let v = per_dim(name, values, dims)?;
    if v.iter().any(|&x| x < 0) {
        bail!(Runtime, "{message}");
    }
    Ok(v.into_iter().map(|x| x as usize).collect())
}

/// Left-pads a per-dim list with `fill` up to three dims.
pub(crate) fn to3(v: &[usize], fill: usize) -> [usize; 3] {
    let mut out = [fill; 3];
    out[3 - v.len()..].copy_from_slice(v);
    out
}

fn dims_name(dims: usize) -> String {
    ["conv1d", "conv2d", "conv3d"][dims - 1].to_string()
}

/// Checks ranks, groups and bias shared by both directions; returns the input batched (a view)
/// and whether it was unbatched.
fn check(op: &str, input: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: i64, dims: usize, transposed: bool) -> Result<(Tensor, bool)> {
    check_dtypes(op, input, weight, bias)?;
    if input.ndim() != dims + 1 && input.ndim() != dims + 2 {
        bail!(Runtime, "Expected {}D (unbatched) or {}D (batched) input to {op}, but got input of size: {:?}", dims + 1, dims + 2, input.shape());
    }
    let unbatched = input.ndim() == dims + 1;
    let input = if unbatched { input.unsqueeze(0)? } else { input.clone() };
    if weight.ndim() != dims + 2 {
        bail!(Runtime, "Expected {}-dimensional input for {}-dimensional weight {:?}, but got {}-dimensional input of size {:?} instead", weight.ndim(), weight.ndim(), weight.shape(), input.ndim(), input.shape());
    }
    if groups <= 0 {
        bail!(Runtime, "non-positive groups is not supported");
    }
    let g = groups as usize;
    let (w0, w1) = (weight.shape()[0], weight.shape()[1]);
    if w0 % g != 0 {
        bail!(Runtime, "Given groups={g}, expected weight to be divisible by {g} at dimension 0, but got weight of size {:?} instead", weight.shape());
    }
    let (in_channels, out_channels) = if transposed { (w0, w1 * g) } else { (w1 * g, w0) };
    if input.shape()[1] != in_channels {
        let prefix = if transposed { "Given transposed=1, weight".to_string() } else { format!("Given groups={g}, weight") };
        bail!(Runtime, "{prefix} of size {:?}, expected input{:?} to have {in_channels} channels, but got {} channels instead", weight.shape(), input.shape(), input.shape()[1]);
    }
    if let Some(b) = bias.filter(|b| b.ndim() != 1 || b.numel() != out_channels) {
        let prefix = if transposed { "Given transposed=1, weight" } else { "Given weight" };
        bail!(Runtime, "{prefix} of size {:?}, expected bias to be 1-dimensional with {out_channels} elements, but got bias of size {:?} instead", weight.shape(), b.shape());
    }
    Ok((input, unbatched))
}

/// The result with the batch dim the input lacked removed again.
fn unbatch(out: Tensor, unbatched: bool) -> Result<Tensor> {
    if unbatched {
        out.squeeze(Some(&[0]))
    } else {
        Ok(out)
    }
}

/// Output sizes computed in i128, refused as PyTorch's overflow when one does not fit an isize.
fn fitting_sizes(sizes: Vec<i128>) -> Result<Vec<usize>> {
    if sizes.iter().any(|&s| s > isize::MAX as i128) {
        return Err(crate::layout::size_overflow(&sizes));
    }
    Ok(sizes.into_iter().map(|s| s as usize).collect())
}

/// `torch.nn.functional.conv{1,2,3}d` for `dims` spatial dims: input `[N, C, *spatial]` (or
/// without `N`), weight `[out, C/groups, *kernel]`, optional bias `[out]`.
pub fn conv(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>, stride: &[i64], padding: ConvPadding, dilation: &[i64], groups: i64, dims: usize) -> Result<Tensor> {
    input.dtype().require_real("conv")?;
    // Autograd: recorded calls go through the derivative's module, which calls back untracked.
    if crate::autograd::needs_grad(&[input, weight]) || bias.is_some_and(|b| crate::autograd::needs_grad(&[b])) {
        return super::grad::conv::conv(input, weight, bias, stride, padding, dilation, groups, dims);
    }
    let op = dims_name(dims);
    let (x, unbatched) = check(&op, input, weight, bias, groups, dims, false)?;
    let stride = positive("stride", "non-positive stride is not supported", stride, dims)?;
    let dilation = positive("dilation", "dilation should be greater than zero", dilation, dims)?;
    let kernel = &weight.shape()[2..];
    let (pad_lo, pad_hi) = match padding {
        ConvPadding::Explicit(p) => {
            let p = non_negative("padding", "negative padding is not supported", p, dims)?;
            (p.clone(), p)
        }
        ConvPadding::Valid => (vec![0; dims], vec![0; dims]),
        ConvPadding::Same => {
            if stride.iter().any(|&s| s != 1) {
                bail!(Runtime, "padding='same' is not supported for strided convolutions");
            }
            let total: Vec<usize> = (0..dims).map(|i| dilation[i] * (kernel[i] - 1)).collect();
            (total.iter().map(|t| t / 2).collect(), total.iter().map(|t| t - t / 2).collect())
        }
    };
    let spatial = &x.shape()[2..];
    // In i128: sizes, pads and dilations near 2**63 pass usize when added or multiplied.
    let padded: Vec<i128> = (0..dims).map(|i| spatial[i] as i128 + pad_lo[i] as i128 + pad_hi[i] as i128).collect();
    let effective: Vec<i128> = (0..dims).map(|i| dilation[i] as i128 * (kernel[i] as i128 - 1) + 1).collect();
    if (0..dims).any(|i| padded[i] < effective[i]) {
        let join = |v: &[i128]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(" x ");
        bail!(Runtime, "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size", join(&padded), join(&effective));
    }
    let output = fitting_sizes((0..dims).map(|i| (padded[i] - effective[i]) / stride[i] as i128 + 1).collect())?;
    // An asymmetric 'same' pad adds its extra column on the right, past the last tap any output
    // reads with symmetric padding, so only the left pad enters the geometry.
    let geom = Geom {
        input: to3(spatial, 1),
        output: to3(&output, 1),
        kernel: to3(kernel, 1),
        stride: to3(&stride, 1),
        pad: to3(&pad_lo, 0),
        dilation: to3(&dilation, 1),
    };
    let out = crate::backend::serving(&x, [weight].into_iter().chain(bias))?.conv(&x, weight, bias, groups as usize, &geom)?;
    unbatch(out, unbatched)
}

/// `torch.nn.functional.conv_transpose{1,2,3}d`: input `[N, C, *spatial]` (or without `N`),
/// weight `[C, out/groups, *kernel]`, optional bias `[out]`.
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>, stride: &[i64], padding: &[i64], output_padding: &[i64], groups: i64, dilation: &[i64], dims: usize) -> Result<Tensor> {
    input.dtype().require_real("conv_transpose")?;
    if crate::autograd::needs_grad(&[input, weight]) || bias.is_some_and(|b| crate::autograd::needs_grad(&[b])) {
        return super::grad::conv::conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, dims);
    }
    let op = format!("conv_transpose{dims}d");
    let (x, unbatched) = check(&op, input, weight, bias, groups, dims, true)?;
    let stride = positive("stride", "non-positive stride is not supported", stride, dims)?;
    let dilation = positive("dilation", "dilation should be greater than zero", dilation, dims)?;
    let padding = non_negative("padding", "negative padding is not supported", padding, dims)?;
    let output_padding = non_negative("output_padding", "negative output_padding is not supported", output_padding, dims)?;
    if (0..dims).any(|i| output_padding[i] >= stride[i] && output_padding[i] >= dilation[i]) {
        bail!(Runtime, "output padding must be smaller than either stride or dilation, but got output_padding={output_padding:?}, stride={stride:?}, dilation={dilation:?}");
    }
    let kernel = &weight.shape()[2..];
    let spatial = &x.shape()[2..];
    let full: Vec<i128> = (0..dims)
        .map(|i| (spatial[i] as i128 - 1) * stride[i] as i128 + dilation[i] as i128 * (kernel[i] as i128 - 1) + output_padding[i] as i128 + 1 - 2 * padding[i] as i128)
        .collect();
    if full.iter().any(|&o| o <= 0) {
        bail!(Runtime, "Given input size per channel: {spatial:?}. Calculated output size per channel: {full:?}. Output size is too small");
    }
    let output = fitting_sizes(full)?;
    // The transposed conv's output is what the matching forward conv would read.
    let geom = Geom {
        input: to3(&output, 1),
        output: to3(spatial, 1),
        kernel: to3(kernel, 1),
        stride: to3(&stride, 1),
        pad: to3(&padding, 0),
        dilation: to3(&dilation, 1),
    };
    let out = crate::backend::serving(&x, [weight].into_iter().chain(bias))?.conv_transpose(&x, weight, bias, groups as usize, &geom)?;
    unbatch(out, unbatched)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<f32>, s: &[usize]) -> Tensor {
        Tensor::from_vec(v, s).unwrap()
    }

    #[test]
    fn conv1d_matches_hand_computation() {
        let x = t(vec![1., 2., 3., 4., 5.], &[1, 1, 5]);
        let w = t(vec![1., 0., -1.], &[1, 1, 3]);
        let y = conv(&x, &w, None, &[1], ConvPadding::Explicit(&[1]), &[1], 1, 1).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![-2., -2., -2., -2., 4.]);
    }

    #[test]
    fn transpose_inverts_shapes() {
        let x = t(vec![1.; 2 * 3 * 3], &[1, 2, 3, 3]);
        let w = t(vec![1.; 2 * 4 * 9], &[2, 4, 3, 3]);
        let y = conv_transpose(&x, &w, None, &[2], &[1], &[1], 1, &[1], 2).unwrap();
        assert_eq!(y.shape(), &[1, 4, 6, 6]);
    }

    /// conv2d by its definition, in f64.
    #[allow(clippy::too_many_arguments)]
    fn naive_conv2d(x: &[f32], xs: [usize; 4], w: &[f32], ws: [usize; 4], bias: &[f32], stride: [usize; 2], pad: [usize; 2], dil: [usize; 2], groups: usize) -> (Vec<f32>, [usize; 4]) {
        let [n, cin, h, wd] = xs;
        let [cout, cg, kh, kw] = ws;
        let ho = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) / stride[0] + 1;
        let wo = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) / stride[1] + 1;
        let mut out = vec![0f32; n * cout * ho * wo];
        for (i, o) in out.iter_mut().enumerate() {
            let (b, co, y, xo) = (i / (cout * ho * wo), i / (ho * wo) % cout, i / wo % ho, i % wo);
            let g = co / (cout / groups);
            let mut acc = bias[co] as f64;
            for c in 0..cg {
                for ky in 0..kh {
                    for kx in 0..kw {
                        let iy = (y * stride[0] + ky * dil[0]) as isize - pad[0] as isize;
                        let ix = (xo * stride[1] + kx * dil[1]) as isize - pad[1] as isize;
                        if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < wd {
                            let xv = x[((b * cin + g * cg + c) * h + iy as usize) * wd + ix as usize];
                            acc += xv as f64 * w[((co * cg + c) * kh + ky) * kw + kx] as f64;
                        }
                    }
                }
            }
            *o = acc as f32;
        }
        (out, [n, cout, ho, wo])
    }

    #[test]
    fn conv2d_matches_definition_on_every_path() {
        let mut state = 12345u64;
        let mut rand = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        // (n, cin, cout, h, w, kh, kw, stride, pad, dilation, groups)
        let cases = [
            (1, 3, 64, 23, 19, 7, 7, [2, 2], [3, 3], [1, 1], 1),
            (2, 16, 13, 9, 11, 3, 3, [1, 1], [1, 1], [1, 1], 1),
            (1, 8, 8, 7, 7, 3, 3, [1, 1], [1, 1], [1, 1], 1),
            (2, 12, 20, 10, 9, 3, 3, [2, 2], [1, 1], [1, 1], 2),
            (1, 10, 9, 12, 13, 3, 2, [1, 1], [2, 0], [2, 3], 1),
            (1, 6, 5, 1, 40, 1, 5, [1, 3], [0, 2], [1, 1], 1),
            (3, 32, 16, 5, 4, 3, 3, [1, 2], [0, 1], [1, 1], 4),
            (1, 4, 4, 3, 3, 3, 3, [1, 1], [0, 0], [1, 1], 1),
            (1, 64, 8, 2, 2, 1, 1, [1, 1], [1, 1], [1, 1], 1),
            (1, 96, 10, 40, 40, 3, 3, [2, 2], [1, 1], [1, 1], 1),
        ];
        for (n, cin, cout, h, wd, kh, kw, stride, pad, dil, groups) in cases {
            let xs = [n, cin, h, wd];
            let ws = [cout, cin / groups, kh, kw];
            let x: Vec<f32> = (0..xs.iter().product::<usize>()).map(|_| rand()).collect();
            let w: Vec<f32> = (0..ws.iter().product::<usize>()).map(|_| rand()).collect();
            let b: Vec<f32> = (0..cout).map(|_| rand()).collect();
            let (want, shape) = naive_conv2d(&x, xs, &w, ws, &b, stride, pad, dil, groups);
            let to_i = |v: [usize; 2]| v.map(|e| e as i64);
            let got = conv(&t(x, &xs), &t(w, &ws), Some(&t(b, &[cout])), &to_i(stride), ConvPadding::Explicit(&to_i(pad)), &to_i(dil), groups as i64, 2).unwrap();
            assert_eq!(got.shape(), &shape);
            for (g, e) in got.to_vec::<f32>().unwrap().iter().zip(&want) {
                assert!((g - e).abs() < 1e-4, "{xs:?} {ws:?} stride {stride:?}: {g} vs {e}");
            }
        }
    }

    #[test]
    fn same_padding_keeps_size() {
        let x = t(vec![1.; 6], &[1, 1, 6]);
        let w = t(vec![1.; 4], &[1, 1, 4]);
        let y = conv(&x, &w, None, &[1], ConvPadding::Same, &[1], 1, 1).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap(), vec![3., 4., 4., 4., 3., 2.]);
    }
}
