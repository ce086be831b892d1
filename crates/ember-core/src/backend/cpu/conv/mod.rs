//! Convolution and transposed convolution on host memory, lowered to the `gemm` crate.
//!
//! A 1x1 stride-1 unpadded conv multiplies the weight by the input as it is. Other convs unfold
//! the input (im2col) one tile of output rows at a time into a reused buffer, so the buffer stays
//! bounded however large the image. Transposed convs multiply first and fold the columns back
//! (col2im). Small GEMMs (depthwise, tiny images) run one per thread over (batch, group, tile);
//! large ones are each split across all threads. Float32 2-d convs of suitable shapes run the
//! direct kernels (`direct.rs`, `small.rs`; depthwise ones `depthwise.rs`), bfloat16 ones the bf16 GEMM where the CPU has one
//! (`bf16.rs`), channels-last ones the NHWC kernels (`../nhwc`).
pub(crate) mod bf16;
pub(crate) mod depthwise;
pub(crate) mod direct;
pub(crate) mod small;
pub(crate) mod weight_grad;

use crate::backend::cpu::map::Ptr;
use crate::backend::cpu::nhwc;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::ops::conv::Geom;
use crate::parallel::{for_range, pool};
use crate::tensor::Tensor;
use direct::Conv2d;

/// `Backend::conv` on host memory.
pub fn conv(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: usize, geom: &Geom) -> Result<Tensor> {
    let ops = Operands::new(input, weight, bias, groups, false)?;
    if ops.channels_last {
        if let Some(out) = small_channels_last(&ops, geom) {
            return ops.finish(out);
        }
        let two = |v: [usize; 3]| [v[1], v[2]];
        let g = nhwc::Geom2 { input: two(geom.input), output: two(geom.output), kernel: two(geom.kernel), stride: two(geom.stride), pad: two(geom.pad), dilation: two(geom.dilation) };
        return ops.finish(nhwc::conv2d(&ops.input, &ops.weight, ops.bias.as_ref(), ops.groups, &g)?);
    }
    let mut shape = vec![ops.batch, ops.weight.shape()[0]];
    shape.extend(&geom.output[3 - (input.ndim() - 2)..]);
    let out = Tensor::uninit(&shape, ops.input.dtype())?;
    if out.numel() > 0 {
        if ops.input.dtype() == DType::BF16 {
            bf16::conv(&ops.input, &ops.weight, ops.bias.as_ref(), ops.groups, geom, &out);
        } else if ops.input.dtype() == DType::F64 {
            conv_forward::<f64>(&ops, geom, &out);
        } else {
            conv_forward::<f32>(&ops, geom, &out);
        }
    }
    ops.finish(out)
}

/// `Backend::conv_transpose` on host memory.
pub fn conv_transpose(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: usize, geom: &Geom) -> Result<Tensor> {
    let ops = Operands::new(input, weight, bias, groups, true)?;
    let mut shape = vec![ops.batch, ops.weight.shape()[1] * groups];
    shape.extend(&geom.input[3 - (input.ndim() - 2)..]);
    let out = Tensor::uninit(&shape, ops.input.dtype())?;
    if out.numel() > 0 {
        if ops.input.dtype() == DType::F64 {
            conv_transpose_forward::<f64>(&ops, geom, &out);
        } else {
            conv_transpose_forward::<f32>(&ops, geom, &out);
        }
    }
    ops.finish(out)
}

impl Operands {
    /// The operands in the dtype and layout the kernel computes in (one copy at most).
    fn new(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: usize, transposed: bool) -> Result<Operands> {
        let dims = input.ndim() - 2;
        // bf16 convs run on the bf16 GEMM where the CPU has one; everything else in f32 or f64.
        let native_bf16 = !transposed && bf16::applies(input.dtype(), weight.shape()[1]);
        let c = if native_bf16 { DType::BF16 } else { compute_dtype(input.dtype()) };
        // PyTorch's rule: a channels-last input or weight gives a channels-last conv.
        let channels_last = !transposed && dims == 2 && (nhwc::is_channels_last(input) || nhwc::is_channels_last(weight));
        // The NHWC kernel reads the weight in any layout.
        let (x, w) = (input.to_dtype(c)?, weight.to_dtype(c)?);
        Ok(Operands {
            batch: input.shape()[0],
            input: if channels_last { nhwc::to_channels_last(&x)? } else { x.contiguous()? },
            weight: if channels_last { w } else { w.contiguous()? },
            channels_last,
            bias: bias.map(|b| b.to_dtype(c)?.contiguous()).transpose()?,
            groups,
            dtype: weight.dtype(),
        })
    }

    fn finish(&self, out: Tensor) -> Result<Tensor> {
        out.to_dtype(self.dtype)
    }
}

/// Column-buffer budget per tile, in elements: large enough for GEMM to run at full speed,
/// small enough to stay in the outer caches.
pub(crate) const COLUMN_BUDGET: usize = 1 << 18;

/// Multiply-adds per GEMM below which tasks run one per thread; larger GEMMs are split across
/// all threads instead, which keeps each thread's share of the weights and output in cache.
const SMALL_GEMM: usize = 1 << 20;

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
    /// A 2-d conv whose input (or weight) is channels-last: `input` is channels-last and the
    /// NHWC kernel runs.
    channels_last: bool,
    /// The caller's dtype, restored on the result.
    dtype: DType,
}

/// f16 and bf16 compute in f32 (as PyTorch's CPU kernels do); f32 and f64 in themselves.
pub fn compute_dtype(d: DType) -> DType {
    if d == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// A channels-last float32 conv that `conv_small` takes: it reads and writes NHWC through
/// strides, and beats the NHWC GEMM on small images. The weight comes in any layout; a flipped
/// one (negative strides) is left to the NHWC kernel.
fn small_channels_last(ops: &Operands, g: &Geom) -> Option<Tensor> {
    let (batch, cin, cout) = (ops.batch, ops.input.shape()[1], ops.weight.shape()[0]);
    let forward_strides = ops.weight.strides().iter().all(|&s| s >= 0);
    let c = flat_geometry(g, cin, cout, 1).filter(|c| c.supported() && forward_strides && ops.groups == 1 && ops.input.dtype() == DType::F32 && small::preferred(c, batch))?;
    let out = Tensor::uninit(&[batch, g.output[1], g.output[2], cout], DType::F32).ok()?.permute(&[0, 3, 1, 2]).ok()?;
    let strides = |t: &Tensor| -> small::Strides { std::array::from_fn(|d| t.strides()[d] as usize) };
    let (x, w) = ((ops.input.data_ptr::<f32>() as *const f32, strides(&ops.input)), (ops.weight.data_ptr::<f32>() as *const f32, strides(&ops.weight)));
    let bias = ops.bias.as_ref().map(|b| b.data_ptr::<f32>() as *const f32);
    unsafe { small::conv2d(&c, batch, x, w, bias, (out.data_ptr::<f32>(), strides(&out))) };
    Some(out)
}

/// Runs the forward GEMMs: out[n, group] = W[group] · columns(input[n, group]), or the direct
/// kernel where it applies.
fn conv_forward<T: Element + std::ops::AddAssign>(ops: &Operands, g: &Geom, out: &Tensor) {
    let (groups, batch) = (ops.groups, ops.batch);
    let cin = ops.input.shape()[1] / groups;
    let cout = ops.weight.shape()[0] / groups;
    let flat = flat_geometry(g, cin, cout, groups).filter(|_| T::DTYPE == DType::F32);
    if let Some(c) = flat.filter(depthwise::applies) {
        let bias = ops.bias.as_ref().map(|b| b.data_ptr::<f32>() as *const f32);
        unsafe { depthwise::conv2d(&c, batch, ops.input.data_ptr::<f32>(), ops.weight.data_ptr::<f32>(), bias, out.data_ptr::<f32>()) };
        return;
    }
    if let Some(c) = flat.filter(Conv2d::supported) {
        let bias = ops.bias.as_ref().map(|b| b.data_ptr::<f32>() as *const f32);
        let (x, w, o) = (ops.input.data_ptr::<f32>(), ops.weight.data_ptr::<f32>(), out.data_ptr::<f32>());
        if small::preferred(&c, batch) {
            let (xs, os) = (small::dense([batch * groups, cin, g.input[1], g.input[2]]), small::dense([batch * groups, cout, g.output[1], g.output[2]]));
            let ws = small::dense([groups * cout, cin, g.kernel[1], g.kernel[2]]);
            unsafe { small::conv2d(&c, batch * groups, (x, xs), (w, ws), bias, (o, os)) };
        } else {
            unsafe { direct::conv2d(&c, batch * groups, x, w, bias, o) };
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

/// The direct kernels' view of a 1-d or 2-d geometry (`None` for a 3-d one).
fn flat_geometry(g: &Geom, channels: usize, out_channels: usize, groups: usize) -> Option<Conv2d> {
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
    flat.then_some(c)
}

/// Output rows per im2col tile: at most `COLUMN_BUDGET` columns of `k` rows, in the fewest tiles
/// of near-equal size that give every thread the same number of (image, group, tile) tasks.
fn tile_rows(g: &Geom, k: usize, images: usize, threads: usize) -> usize {
    let rows = g.output_rows();
    let budget = (COLUMN_BUDGET / (k * g.output[2]).max(1)).clamp(1, rows);
    (rows.div_ceil(budget)..=rows).map(|tiles| rows.div_ceil(tiles)).find(|&r| (images * rows.div_ceil(r)) % threads == 0).unwrap_or(budget)
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

/// `im2col` over all channels into rows `ld` apart, split across threads by channel when
/// `threads` > 1.
pub(crate) unsafe fn im2col_split<T: Element>(src: *const T, g: &Geom, channels: usize, rows: std::ops::Range<usize>, (cols, ld): (*mut T, usize), threads: usize) {
    if threads <= 1 {
        return im2col(src, g, 0..channels, rows, cols, ld);
    }
    let (s, c) = (Ptr(src as *mut T), Ptr(cols));
    for_range(channels, 1, |c0, c1| im2col(s.at(0), g, c0..c1, rows.clone(), c.at(0), ld));
}
