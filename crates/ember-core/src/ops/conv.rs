//! Convolution and transposed convolution over 1 to 3 spatial dims, lowered to the `gemm` crate.
//!
//! Every geometry is handled in three dims (D, H, W); 1-d and 2-d convolutions use leading 1s.
//! A 1x1 stride-1 unpadded conv multiplies the weight by the input as it is. Other convs unfold
//! the input (im2col) one tile of output rows at a time into a reused buffer, so the buffer stays
//! bounded however large the image. Transposed convs multiply first and fold the columns back
//! (col2im). Small GEMMs (depthwise, tiny images) run one per thread over (batch, group, tile);
//! large ones are each split across all threads.
use crate::backend::cpu::conv_direct::{self, Conv2d};
use crate::backend::cpu::conv_small;
use crate::backend::cpu::map::Ptr;
use crate::bail;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::parallel::{for_range, pool};
use crate::tensor::Tensor;

/// Column-buffer budget per tile, in elements: large enough for GEMM to run at full speed,
/// small enough to stay in the outer caches.
pub(crate) const COLUMN_BUDGET: usize = 1 << 18;

/// Multiply-adds per GEMM below which tasks run one per thread; larger GEMMs are split across
/// all threads instead, which keeps each thread's share of the weights and output in cache.
const SMALL_GEMM: usize = 1 << 20;

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
pub(crate) struct Geom {
    pub(crate) input: [usize; 3],
    pub(crate) output: [usize; 3],
    pub(crate) kernel: [usize; 3],
    pub(crate) stride: [usize; 3],
    pub(crate) pad: [usize; 3],
    pub(crate) dilation: [usize; 3],
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
    fn rows_are_runs(&self) -> bool {
        self.stride[1] == 1 && self.stride[2] == 1 && self.input[2] == self.output[2]
    }
    /// Input position of output position `o` at kernel tap `k` along `dim` (may be outside).
    fn source(&self, dim: usize, o: usize, k: usize) -> isize {
        (o * self.stride[dim] + k * self.dilation[dim]) as isize - self.pad[dim] as isize
    }
    /// The outputs `lo..hi` along W whose input for tap `k` lies inside the image.
    fn valid_w(&self, k: usize) -> (usize, usize) {
        let (s, n) = (self.stride[2] as isize, self.input[2] as isize);
        let off = (k * self.dilation[2]) as isize - self.pad[2] as isize;
        let lo = if off < 0 { (-off + s - 1) / s } else { 0 };
        let hi = if n - 1 - off < 0 { 0 } else { (n - 1 - off) / s + 1 };
        let out = self.output[2] as isize;
        (lo.min(out) as usize, hi.clamp(lo.min(out), out) as usize)
    }
}

/// Unfolds channels `channels` of one image into rows `c·kvol + tap` of `cols` (`ld` apart),
/// for the output rows `rows` (each `output[2]` wide); taps that fall into the padding read as
/// zero.
unsafe fn im2col<T: Element>(src: *const T, g: &Geom, channels: std::ops::Range<usize>, rows: std::ops::Range<usize>, cols: *mut T, ld: usize) {
    let width = g.output[2];
    let [kd_n, kh_n, kw_n] = g.kernel;
    for c in channels {
        let plane = src.add(c * g.input_volume());
        for kd in 0..kd_n {
            for kh in 0..kh_n {
                for kw in 0..kw_n {
                    let r = ((c * kd_n + kd) * kh_n + kh) * kw_n + kw;
                    if g.rows_are_runs() {
                        tap_in_runs(plane, g, (kd, kh, kw), rows.clone(), cols.add(r * ld));
                        continue;
                    }
                    let (lo, hi) = g.valid_w(kw);
                    let w0 = g.source(2, 0, kw);
                    for (t, row) in rows.clone().enumerate() {
                        let dst = cols.add(r * ld + t * width);
                        let (id, ih) = (g.source(0, row / g.output[1], kd), g.source(1, row % g.output[1], kh));
                        if id < 0 || id >= g.input[0] as isize || ih < 0 || ih >= g.input[1] as isize || lo >= hi {
                            std::ptr::write_bytes(dst, 0, width);
                            continue;
                        }
                        let line = plane.wrapping_offset((id * g.input[1] as isize + ih) * g.input[2] as isize + w0);
                        zero_edge(dst, lo);
                        copy_strided(line, g.stride[2], dst, lo, hi);
                        zero_edge(dst.add(hi), width - hi);
                    }
                }
            }
        }
    }
}

/// One tap's column rows when `Geom::rows_are_runs`: a run of consecutive valid output rows reads
/// consecutive image rows of the same width, so the whole run is one copy (its padding columns,
/// which pick up neighbouring rows' pixels, are zeroed after). Rows outside the image are zero.
unsafe fn tap_in_runs<T: Element>(plane: *const T, g: &Geom, (kd, kh, kw): (usize, usize, usize), rows: std::ops::Range<usize>, dst: *mut T) {
    let width = g.output[2];
    let (lo, hi) = g.valid_w(kw);
    let off = g.source(2, 0, kw);
    let mut t = 0;
    while t < rows.len() {
        let row = rows.start + t;
        let (id, ih) = (g.source(0, row / g.output[1], kd), g.source(1, row % g.output[1], kh));
        if id < 0 || id >= g.input[0] as isize || ih < 0 || ih >= g.input[1] as isize {
            std::ptr::write_bytes(dst.add(t * width), 0, width);
            t += 1;
            continue;
        }
        // Extend the run while the next row stays in this depth slice and inside the image.
        let mut len = 1;
        while t + len < rows.len() && (row + len) / g.output[1] == row / g.output[1] && ih + (len as isize) < g.input[1] as isize {
            len += 1;
        }
        let start = plane.offset((id * g.input[1] as isize + ih) * g.input[2] as isize);
        let total = (len * width) as isize;
        let (j0, j1) = ((-off).max(0), total - off.max(0));
        if j0 < j1 {
            std::ptr::copy_nonoverlapping(start.offset(j0 + off), dst.add(t * width + j0 as usize), (j1 - j0) as usize);
        }
        for r in t..t + len {
            zero_edge(dst.add(r * width), lo);
            zero_edge(dst.add(r * width + hi), width - hi);
        }
        t += len;
    }
}

/// Zeroes the `n` padding columns at one edge of a row: usually none or one or two, where a
/// call to `memset` would cost more than the stores.
#[inline(always)]
unsafe fn zero_edge<T: Element>(dst: *mut T, n: usize) {
    match n {
        0 => {}
        1 => dst.write(T::zero()),
        2 => {
            dst.write(T::zero());
            dst.add(1).write(T::zero());
        }
        _ => std::ptr::write_bytes(dst, 0, n),
    }
}

/// `dst[o] = line[o·stride]` for `o` in `lo..hi`.
#[inline(always)]
unsafe fn copy_strided<T: Copy>(line: *const T, stride: usize, dst: *mut T, lo: usize, hi: usize) {
    if stride == 1 {
        std::ptr::copy_nonoverlapping(line.add(lo), dst.add(lo), hi - lo);
    } else {
        for o in lo..hi {
            *dst.add(o) = *line.add(o * stride);
        }
    }
}

/// The inverse of `im2col`: adds every column entry back onto the image position it came from.
unsafe fn col2im<T: Element + std::ops::AddAssign>(cols: *const T, g: &Geom, channels: std::ops::Range<usize>, rows: std::ops::Range<usize>, dst: *mut T) {
    let width = g.output[2];
    let ncols = rows.len() * width;
    let [kd_n, kh_n, kw_n] = g.kernel;
    for c in channels {
        let plane = dst.add(c * g.input_volume());
        for kd in 0..kd_n {
            for kh in 0..kh_n {
                for kw in 0..kw_n {
                    let r = ((c * kd_n + kd) * kh_n + kh) * kw_n + kw;
                    let (lo, hi) = g.valid_w(kw);
                    let w0 = g.source(2, 0, kw);
                    for (t, row) in rows.clone().enumerate() {
                        let (id, ih) = (g.source(0, row / g.output[1], kd), g.source(1, row % g.output[1], kh));
                        if id < 0 || id >= g.input[0] as isize || ih < 0 || ih >= g.input[1] as isize {
                            continue;
                        }
                        let src = cols.add(r * ncols + t * width);
                        let line = plane.wrapping_offset((id * g.input[1] as isize + ih) * g.input[2] as isize + w0);
                        for o in lo..hi {
                            *line.add(o * g.stride[2]) += *src.add(o);
                        }
                    }
                }
            }
        }
    }
}

/// `dst (m×n) = [dst +] a (m×k) · b (k×n)` for f32/f64, every operand given as (row, column)
/// strides; `threads` > 1 splits the product over the pool.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn gemm<T: Element>(
    mnk: (usize, usize, usize),
    dst: *mut T, dst_strides: (isize, isize),
    a: *const T, a_strides: (isize, isize),
    b: *const T, b_strides: (isize, isize),
    accumulate: bool, threads: usize,
) {
    if threads <= 1 {
        return gemm_with(mnk, dst, dst_strides, a, a_strides, b, b_strides, accumulate, gemm::Parallelism::None);
    }
    let (d, pa, pb) = (Ptr(dst), Ptr(a as *mut T), Ptr(b as *mut T));
    pool().install(move || gemm_with(mnk, d.at(0), dst_strides, pa.at(0), a_strides, pb.at(0), b_strides, accumulate, gemm::Parallelism::Rayon(threads)))
}

#[allow(clippy::too_many_arguments)]
unsafe fn gemm_with<T: Element>(
    (m, n, k): (usize, usize, usize),
    dst: *mut T, (dst_rs, dst_cs): (isize, isize),
    a: *const T, (a_rs, a_cs): (isize, isize),
    b: *const T, (b_rs, b_cs): (isize, isize),
    accumulate: bool, par: gemm::Parallelism,
) {
    macro_rules! call {
        ($t:ty) => {
            gemm::gemm::<$t>(m, n, k, dst as *mut $t, dst_cs, dst_rs, accumulate, a as *const $t, a_cs, a_rs,
                b as *const $t, b_cs, b_rs, if accumulate { 1.0 } else { 0.0 }, 1.0, false, false, false, par)
        };
    }
    match T::DTYPE {
        DType::F32 => call!(f32),
        DType::F64 => call!(f64),
        other => unreachable!("conv computes in float32 or float64, not {other}"),
    }
}

/// Sets `rows` rows of `len` elements (row stride `rs`) to `bias[r]`, or to zero without a bias.
unsafe fn fill_rows<T: Element>(dst: *mut T, rs: usize, rows: usize, len: usize, bias: Option<*const T>) {
    for r in 0..rows {
        let v = bias.map_or(T::zero(), |b| *b.add(r));
        std::slice::from_raw_parts_mut(dst.add(r * rs), len).fill(v);
    }
}

/// The validated operands of one (transposed) convolution, in the dtype the kernel computes in.
struct Operands {
    input: Tensor,
    weight: Tensor,
    bias: Option<Tensor>,
    batch: usize,
    groups: usize,
    unbatched: bool,
    /// A 2-d conv whose input (or weight) is channels-last: `input` is channels-last and the
    /// NHWC kernel runs.
    channels_last: bool,
    /// The caller's dtype, restored on the result.
    dtype: DType,
}

/// f16 and bf16 compute in f32 (as PyTorch's CPU kernels do); f32 and f64 in themselves.
pub(crate) fn compute_dtype(d: DType) -> DType {
    if d == DType::F64 {
        DType::F64
    } else {
        DType::F32
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

/// Checks ranks, groups and bias shared by both directions and brings the operands into the
/// compute dtype, batched and contiguous (one copy at most).
fn prepare(op: &str, input: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: i64, dims: usize, transposed: bool) -> Result<Operands> {
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
    // bf16 convs run on the bf16 GEMM where the CPU has one; everything else in f32 or f64.
    let native_bf16 = !transposed && crate::backend::cpu::conv_bf16::applies(input.dtype(), w1);
    let c = if native_bf16 { DType::BF16 } else { compute_dtype(input.dtype()) };
    // PyTorch's rule: a channels-last input or weight gives a channels-last conv.
    let channels_last = !transposed && dims == 2 && (crate::backend::cpu::nhwc::is_channels_last(&input) || crate::backend::cpu::nhwc::is_channels_last(weight));
    // The NHWC kernel reads the weight in any layout.
    let (x, w) = (input.to_dtype(c)?, weight.to_dtype(c)?);
    Ok(Operands {
        batch: input.shape()[0],
        input: if channels_last { crate::backend::cpu::nhwc::to_channels_last(&x)? } else { x.contiguous()? },
        weight: if channels_last { w } else { w.contiguous()? },
        channels_last,
        bias: bias.map(|b| b.to_dtype(c)?.contiguous()).transpose()?,
        groups: g,
        unbatched,
        dtype: weight.dtype(),
    })
}

fn finish(ops: &Operands, out: Tensor) -> Result<Tensor> {
    let out = out.to_dtype(ops.dtype)?;
    if ops.unbatched {
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
    let ops = prepare(&op, input, weight, bias, groups, dims, false)?;
    let stride = positive("stride", "non-positive stride is not supported", stride, dims)?;
    let dilation = positive("dilation", "dilation should be greater than zero", dilation, dims)?;
    let kernel = &ops.weight.shape()[2..];
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
    let spatial = &ops.input.shape()[2..];
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
    if ops.channels_last {
        if let Some(out) = small_channels_last(&ops, &geom) {
            return finish(&ops, out);
        }
        let two = |v: [usize; 3]| [v[1], v[2]];
        let g = crate::backend::cpu::nhwc::Geom2 { input: two(geom.input), output: two(geom.output), kernel: two(geom.kernel), stride: two(geom.stride), pad: two(geom.pad), dilation: two(geom.dilation) };
        return finish(&ops, crate::backend::cpu::nhwc::conv2d(&ops.input, &ops.weight, ops.bias.as_ref(), ops.groups, &g)?);
    }
    let out_channels = ops.weight.shape()[0];
    let mut shape = vec![ops.batch, out_channels];
    shape.extend(&output);
    let out = Tensor::uninit(&shape, ops.input.dtype())?;
    if out.numel() > 0 {
        if ops.input.dtype() == DType::BF16 {
            crate::backend::cpu::conv_bf16::conv(&ops.input, &ops.weight, ops.bias.as_ref(), ops.groups, &geom, &out);
        } else if ops.input.dtype() == DType::F64 {
            conv_forward::<f64>(&ops, &geom, &out);
        } else {
            conv_forward::<f32>(&ops, &geom, &out);
        }
    }
    finish(&ops, out)
}

/// A channels-last float32 conv that `conv_small` takes: it reads and writes NHWC through
/// strides, and beats the NHWC GEMM on small images. The weight comes in any layout; a flipped
/// one (negative strides) is left to the NHWC kernel.
fn small_channels_last(ops: &Operands, g: &Geom) -> Option<Tensor> {
    let (batch, cin, cout) = (ops.batch, ops.input.shape()[1], ops.weight.shape()[0]);
    let forward_strides = ops.weight.strides().iter().all(|&s| s >= 0);
    let c = direct_geometry(g, cin, cout, 1).filter(|c| forward_strides && ops.groups == 1 && ops.input.dtype() == DType::F32 && conv_small::preferred(c, batch))?;
    let out = Tensor::uninit(&[batch, g.output[1], g.output[2], cout], DType::F32).ok()?.permute(&[0, 3, 1, 2]).ok()?;
    let strides = |t: &Tensor| -> conv_small::Strides { std::array::from_fn(|d| t.strides()[d] as usize) };
    let (x, w) = ((ops.input.data_ptr::<f32>() as *const f32, strides(&ops.input)), (ops.weight.data_ptr::<f32>() as *const f32, strides(&ops.weight)));
    let bias = ops.bias.as_ref().map(|b| b.data_ptr::<f32>() as *const f32);
    unsafe { conv_small::conv2d(&c, batch, x, w, bias, (out.data_ptr::<f32>(), strides(&out))) };
    Some(out)
}

/// Runs the forward GEMMs: out[n, group] = W[group] · columns(input[n, group]), or the direct
/// kernel where it applies.
fn conv_forward<T: Element + std::ops::AddAssign>(ops: &Operands, g: &Geom, out: &Tensor) {
    let (groups, batch) = (ops.groups, ops.batch);
    let cin = ops.input.shape()[1] / groups;
    let cout = ops.weight.shape()[0] / groups;
    if let Some(c) = direct_geometry(g, cin, cout, groups).filter(|_| T::DTYPE == DType::F32) {
        let bias = ops.bias.as_ref().map(|b| b.data_ptr::<f32>() as *const f32);
        let (x, w, o) = (ops.input.data_ptr::<f32>(), ops.weight.data_ptr::<f32>(), out.data_ptr::<f32>());
        if conv_small::preferred(&c, batch) {
            let (xs, os) = (conv_small::dense([batch * groups, cin, g.input[1], g.input[2]]), conv_small::dense([batch * groups, cout, g.output[1], g.output[2]]));
            let ws = conv_small::dense([groups * cout, cin, g.kernel[1], g.kernel[2]]);
            unsafe { conv_small::conv2d(&c, batch * groups, (x, xs), (w, ws), bias, (o, os)) };
        } else {
            unsafe { conv_direct::conv2d(&c, batch * groups, x, w, bias, o) };
        }
        return;
    }
    let k = cin * g.kernel_volume();
    let l = g.output_volume();
    let threads = pool().current_num_threads();
    let rows_per_tile = if g.is_pointwise() { g.output_rows() } else { tile_rows(g, k, batch * groups, threads) };
    let tiles = g.output_rows().div_ceil(rows_per_tile);
    let (x, w, o) = (Ptr(ops.input.data_ptr::<T>()), Ptr(ops.weight.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
    let bias = ops.bias.as_ref().map(|b| Ptr(b.data_ptr::<T>()));
    // One task: a tile of output rows of one (image, group); `threads` > 1 splits its GEMM.
    let task = |t: usize, cols: &mut Vec<T>, threads: usize| unsafe {
        let (tile, ng) = (t % tiles, t / tiles);
        let (n, grp) = (ng / groups, ng % groups);
        let rows = tile * rows_per_tile..((tile + 1) * rows_per_tile).min(g.output_rows());
        let (col0, ncols) = (rows.start * g.output[2], rows.len() * g.output[2]);
        let src = x.at(((n * groups + grp) * cin * g.input_volume()) as isize);
        let dst = o.at(((n * groups + grp) * cout * l + col0) as isize);
        if let Some(b) = bias {
            fill_rows(dst, l, cout, ncols, Some(b.at((grp * cout) as isize) as *const T));
        }
        let b = if g.is_pointwise() {
            src as *const T
        } else {
            cols.resize(k * ncols, T::zero());
            im2col_split(src, g, cin, rows, (cols.as_mut_ptr(), ncols), threads);
            cols.as_ptr()
        };
        let a = w.at((grp * cout * k) as isize);
        let b_rs = if g.is_pointwise() { l } else { ncols };
        gemm((cout, ncols, k), dst, (l as isize, 1), a, (k as isize, 1), b, (b_rs as isize, 1), bias.is_some(), threads);
    };
    let tasks = batch * groups * tiles;
    let per_task = cout * k * rows_per_tile * g.output[2];
    if tasks >= threads.max(2) || (tasks > 1 && per_task < SMALL_GEMM) {
        for_range(tasks, 1, |s, e| {
            let mut cols = Vec::new();
            (s..e).for_each(|t| task(t, &mut cols, 1));
        });
    } else {
        let threads = if per_task < SMALL_GEMM { 1 } else { threads };
        let mut cols = Vec::new();
        (0..tasks).for_each(|t| task(t, &mut cols, threads));
    }
}

/// The direct kernel's view of a 1-d or 2-d geometry, when it supports it.
fn direct_geometry(g: &Geom, channels: usize, out_channels: usize, groups: usize) -> Option<Conv2d> {
    let flat = g.input[0] == 1 && g.output[0] == 1 && g.kernel[0] == 1 && g.pad[0] == 0;
    let two = |v: [usize; 3]| [v[1], v[2]];
    let c = Conv2d {
        channels,
        out_channels,
        groups,
        input: two(g.input),
        output: two(g.output),
        kernel: two(g.kernel),
        stride: two(g.stride),
        pad: two(g.pad),
        dilation: two(g.dilation),
    };
    (flat && c.supported()).then_some(c)
}

/// Output rows per im2col tile: at most `COLUMN_BUDGET` columns of `k` rows, in the fewest tiles
/// of near-equal size that give every thread the same number of (image, group, tile) tasks.
fn tile_rows(g: &Geom, k: usize, images: usize, threads: usize) -> usize {
    let rows = g.output_rows();
    let budget = (COLUMN_BUDGET / (k * g.output[2]).max(1)).clamp(1, rows);
    (rows.div_ceil(budget)..=rows).map(|tiles| rows.div_ceil(tiles)).find(|&r| (images * rows.div_ceil(r)) % threads == 0).unwrap_or(budget)
}

/// `im2col` over all channels into rows `ld` apart, split across threads by channel when
/// `threads` > 1.
pub(crate) unsafe fn im2col_split<T: Element>(src: *const T, g: &Geom, channels: usize, rows: std::ops::Range<usize>, (cols, ld): (*mut T, usize), threads: usize) {
    if threads <= 1 {
        return im2col(src, g, 0..channels, rows, cols, ld);
    }
    let (s, c) = (Ptr(src as *mut T), Ptr(cols));
    for_range(channels, 1, |c0, c1| im2col(s.at(0), g, c0..c1, rows.clone(), c.at(0), ld));
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
    let ops = prepare(&op, input, weight, bias, groups, dims, true)?;
    let stride = positive("stride", "non-positive stride is not supported", stride, dims)?;
    let dilation = positive("dilation", "dilation should be greater than zero", dilation, dims)?;
    let padding = non_negative("padding", "negative padding is not supported", padding, dims)?;
    let output_padding = non_negative("output_padding", "negative output_padding is not supported", output_padding, dims)?;
    if (0..dims).any(|i| output_padding[i] >= stride[i] && output_padding[i] >= dilation[i]) {
        bail!(Runtime, "output padding must be smaller than either stride or dilation, but got output_padding={output_padding:?}, stride={stride:?}, dilation={dilation:?}");
    }
    let kernel = &ops.weight.shape()[2..];
    let spatial = &ops.input.shape()[2..];
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
    let out_channels = ops.weight.shape()[1] * ops.groups;
    let mut shape = vec![ops.batch, out_channels];
    shape.extend(&output);
    let out = Tensor::uninit(&shape, ops.input.dtype())?;
    if out.numel() > 0 {
        if ops.input.dtype() == DType::F64 {
            conv_transpose_forward::<f64>(&ops, &geom, &out);
        } else {
            conv_transpose_forward::<f32>(&ops, &geom, &out);
        }
    }
    finish(&ops, out)
}

/// columns = W[group]ᵀ · input[n, group], folded back onto out[n, group] one tile at a time.
fn conv_transpose_forward<T: Element + std::ops::AddAssign>(ops: &Operands, g: &Geom, out: &Tensor) {
    let (groups, batch) = (ops.groups, ops.batch);
    let cin = ops.input.shape()[1] / groups;
    let cout = ops.weight.shape()[1];
    let m = cout * g.kernel_volume();
    let l = g.output_volume();
    let plane = g.input_volume();
    let rows_per_tile = (COLUMN_BUDGET / (m * g.output[2]).max(1)).clamp(1, g.output_rows());
    let (x, w, o) = (Ptr(ops.input.data_ptr::<T>()), Ptr(ops.weight.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
    let bias = ops.bias.as_ref().map(|b| Ptr(b.data_ptr::<T>()));
    let threads = pool().current_num_threads();
    // One task: a whole (image, group), since tiles fold onto overlapping outputs.
    let task = |ng: usize, cols: &mut Vec<T>, threads: usize| unsafe {
        let grp = ng % groups;
        let src = x.at((ng * cin * l) as isize);
        let dst = o.at((ng * cout * plane) as isize);
        fill_rows(dst, plane, cout, plane, bias.map(|b| b.at((grp * cout) as isize) as *const T));
        let a = w.at((grp * cin * m) as isize);
        for start in (0..g.output_rows()).step_by(rows_per_tile) {
            let rows = start..(start + rows_per_tile).min(g.output_rows());
            let (col0, ncols) = (rows.start * g.output[2], rows.len() * g.output[2]);
            cols.resize(m * ncols, T::zero());
            gemm((m, ncols, cin), cols.as_mut_ptr(), (ncols as isize, 1), a, (1, m as isize), src.add(col0), (l as isize, 1), false, threads);
            col2im_split(cols.as_ptr(), g, cout, rows, dst, threads);
        }
    };
    if batch * groups > 1 && m * cin * l < SMALL_GEMM {
        for_range(batch * groups, 1, |s, e| {
            let mut cols = Vec::new();
            (s..e).for_each(|t| task(t, &mut cols, 1));
        });
    } else {
        let mut cols = Vec::new();
        (0..batch * groups).for_each(|t| task(t, &mut cols, threads));
    }
}

/// `col2im` over all channels, split across threads by channel (disjoint outputs) when asked.
unsafe fn col2im_split<T: Element + std::ops::AddAssign>(cols: *const T, g: &Geom, channels: usize, rows: std::ops::Range<usize>, dst: *mut T, threads: usize) {
    if threads <= 1 {
        return col2im(cols, g, 0..channels, rows, dst);
    }
    let (c, d) = (Ptr(cols as *mut T), Ptr(dst));
    for_range(channels, 1, |c0, c1| col2im(c.at(0), g, c0..c1, rows.clone(), d.at(0)));
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
