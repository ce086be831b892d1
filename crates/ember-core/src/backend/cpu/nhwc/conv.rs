//! conv2d on channels-last memory as GEMMs over `[positions, channels]` rows.
//!
//! Output row `p` (one (image, y, x) position) holds all output channels, so for each group
//! `out[p, group] = columns[p, :] · W[group]ᵀ`, with `W` laid out `[K, kh, kw, C/groups]`.
//! A 1x1 stride-1 unpadded conv multiplies the input itself (`[N·H·W, C]`, no copy); other
//! convs gather each position's window (`kh·kw` runs of `C/groups` channels) into a reused
//! buffer, a tile of positions at a time. Depthwise convs (one channel per group) skip the GEMM:
//! each tap adds `x[position, :] · w[tap, :]` over a contiguous run of channels (in float32 on
//! AVX-512, `depthwise.rs` keeps the sums in registers).
use super::{nhwc_view, uninit_channels_last};
use crate::dtype::{DType, Element};
use crate::backend::cpu::map::{has_avx2, Ptr};
use crate::parallel::{for_each_with, for_range, pool, GRAIN};
use crate::tensor::Tensor;
use crate::backend::cpu::half::gemm::{self as bgemm, Mat, MatMut};
use half::bf16;

/// Column-buffer budget per tile, in elements: enough positions per GEMM that packing the weight
/// (which the `gemm` crate does per call) costs little next to the product.
const COLUMN_BUDGET: usize = 1 << 20;

/// Positions per tile from which a tile per thread amortises packing the weight.
const SHARED_PACKING: usize = 1024;

/// Positions per bf16 GEMM at least: the bf16 GEMM packs the weight per call too.
const BF16_MIN_TILE: usize = 256;

/// The spatial geometry of one 2-d convolution (H, W), validated by the caller.
#[derive(Clone, Copy, Debug)]
pub struct Geom2 {
    pub input: [usize; 2],
    pub output: [usize; 2],
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub pad: [usize; 2],
    pub dilation: [usize; 2],
}

impl Geom2 {
    fn is_pointwise(&self) -> bool {
        self.kernel == [1, 1] && self.stride == [1, 1] && self.pad == [0, 0]
    }
    fn positions_per_image(&self) -> usize {
        self.output[0] * self.output[1]
    }
    /// Input coordinate along `dim` of output `o` at tap `k`, when inside the image.
    pub(super) fn source(&self, dim: usize, o: usize, k: usize) -> Option<usize> {
        let i = (o * self.stride[dim] + k * self.dilation[dim]) as isize - self.pad[dim] as isize;
        (i >= 0 && (i as usize) < self.input[dim]).then_some(i as usize)
    }
}

/// The operands as raw pointers, with the sizes every task needs.
struct Job<T> {
    x: Ptr<T>,
    w: Ptr<T>,
    bias: Option<Ptr<T>>,
    out: Ptr<T>,
    channels: usize,
    out_channels: usize,
    groups: usize,
}

impl<T> Job<T> {
    fn group_in(&self) -> usize {
        self.channels / self.groups
    }
    fn group_out(&self) -> usize {
        self.out_channels / self.groups
    }
}

/// conv2d of a channels-last `x [N, C, H, W]` (float32 or float64, or bfloat16 where
/// `conv::bf16::applies`) with `weight [K, C/groups,
/// kh, kw]` (any layout) and an optional contiguous `bias [K]`; the result is channels-last.
pub fn conv2d(x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: usize, g: &Geom2) -> crate::error::Result<Tensor> {
    let (n, c, k) = (x.shape()[0], x.shape()[1], weight.shape()[0]);
    let out = uninit_channels_last([n, k, g.output[0], g.output[1]], x.dtype())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let depthwise = groups == c && k == c;
    // [K, kh, kw, C/groups]: a view when the weight is itself channels-last. Depthwise taps
    // are read as [kh, kw, C] rows instead.
    let w = if depthwise { weight.reshape(&[k as i64, -1]).and_then(|w| w.t()) } else { weight.permute(&[0, 2, 3, 1]) }.expect("a 4-d weight").contiguous()?;
    let (xs, os) = (nhwc_view(x), nhwc_view(&out));
    if x.dtype() == DType::BF16 {
        run_bf16(&xs, &w, bias, &os, groups, g);
    } else if x.dtype() == DType::F64 {
        run::<f64>(&xs, &w, bias, &os, groups, g, depthwise);
    } else if depthwise && super::depthwise::applies(g) {
        let bias = bias.map(|b| b.data_ptr::<f32>() as *const f32);
        unsafe { super::depthwise::conv2d(g, n, c, xs.data_ptr::<f32>(), w.data_ptr::<f32>(), bias, os.data_ptr::<f32>()) };
    } else if super::direct::applies(g, c, k, groups) {
        let bias = bias.map(|b| b.data_ptr::<f32>() as *const f32);
        unsafe { super::direct::conv2d(g, [n, c, k], xs.data_ptr::<f32>(), w.data_ptr::<f32>(), bias, os.data_ptr::<f32>()) };
    } else {
        run::<f32>(&xs, &w, bias, &os, groups, g, depthwise);
    }
    Ok(out)
}

fn run<T: Element + std::ops::AddAssign + std::ops::Mul<Output = T>>(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, out: &Tensor, groups: usize, g: &Geom2, depthwise: bool) {
    let job = Job {
        x: Ptr(x.data_ptr::<T>()),
        w: Ptr(w.data_ptr::<T>()),
        bias: bias.map(|b| Ptr(b.data_ptr::<T>())),
        out: Ptr(out.data_ptr::<T>()),
        channels: x.shape()[3],
        out_channels: out.shape()[3],
        groups,
    };
    let positions = x.shape()[0] * g.positions_per_image();
    if depthwise {
        let taps = g.kernel[0] * g.kernel[1];
        let grain = (GRAIN / (job.channels * taps).max(1)).max(1);
        let avx2 = has_avx2();
        return for_range(positions, grain, |s, e| unsafe {
            #[cfg(target_arch = "x86_64")]
            if avx2 {
                return depthwise_rows_avx2(&job, g, s..e);
            }
            let _ = avx2;
            depthwise_rows(&job, g, s..e)
        });
    }
    gemm_tiles(&job, g, positions);
}

/// `depthwise_rows` compiled for AVX2: 8 lanes where the baseline build has SSE's 4 (float32
/// stride-2 convs run here, `depthwise.rs` taking stride 1).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn depthwise_rows_avx2<T: Element + std::ops::AddAssign + std::ops::Mul<Output = T>>(job: &Job<T>, g: &Geom2, rows: std::ops::Range<usize>) {
    depthwise_rows(job, g, rows)
}

/// One output row per position of a depthwise conv: bias, then each in-bounds tap's products.
#[inline(always)]
unsafe fn depthwise_rows<T: Element + std::ops::AddAssign + std::ops::Mul<Output = T>>(job: &Job<T>, g: &Geom2, rows: std::ops::Range<usize>) {
    let c = job.channels;
    for p in rows {
        let (img, oy, ox) = split_position(g, p);
        let dst = std::slice::from_raw_parts_mut(job.out.at((p * c) as isize), c);
        match job.bias {
            Some(b) => dst.copy_from_slice(std::slice::from_raw_parts(b.at(0), c)),
            None => dst.fill(T::zero()),
        }
        for ky in 0..g.kernel[0] {
            let Some(iy) = g.source(0, oy, ky) else { continue };
            for kx in 0..g.kernel[1] {
                let Some(ix) = g.source(1, ox, kx) else { continue };
                let src = std::slice::from_raw_parts(job.x.at((((img * g.input[0] + iy) * g.input[1] + ix) * c) as isize), c);
                let tap = std::slice::from_raw_parts(job.w.at(((ky * g.kernel[1] + kx) * c) as isize), c);
                for ((d, &v), &wt) in dst.iter_mut().zip(src).zip(tap) {
                    *d += v * wt;
                }
            }
        }
    }
}

/// (image, output y, output x) of flat output position `p`.
fn split_position(g: &Geom2, p: usize) -> (usize, usize, usize) {
    let per = g.positions_per_image();
    let rem = p % per;
    (p / per, rem / g.output[1], rem % g.output[1])
}

/// Runs the GEMMs over tiles of positions, one (tile, group) per task when there are enough of
/// them, otherwise one tile at a time with each GEMM split across all threads.
fn gemm_tiles<T: Element>(job: &Job<T>, g: &Geom2, positions: usize) {
    let depth = job.group_in() * g.kernel[0] * g.kernel[1];
    let threads = pool().current_num_threads();
    let budget = if g.is_pointwise() { usize::MAX } else { (COLUMN_BUDGET / depth.max(1)).max(32) };
    // Tasks that each pack the whole weight pay off when they are many or long; otherwise one
    // GEMM at a time (as large as the budget allows) is split across the threads.
    let per_tile = budget.min(positions.div_ceil(threads).max(32)).min(positions);
    let split = positions.div_ceil(per_tile) * job.groups < 2 * threads && per_tile < SHARED_PACKING;
    // Tiles in a multiple of the threads, of equal size, so no thread waits on the last one.
    let per_tile = if split { budget.min(positions) } else { positions.div_ceil(positions.div_ceil(per_tile).next_multiple_of(threads)) };
    let tiles = positions.div_ceil(per_tile);
    let tasks = tiles * job.groups;
    let task = |t: usize, cols: &mut Vec<T>, par: gemm::Parallelism| unsafe {
        let (tile, grp) = (t / job.groups, t % job.groups);
        let rows = tile * per_tile..((tile + 1) * per_tile).min(positions);
        tile_gemm(job, g, rows, grp, cols, par);
    };
    if !split {
        for_each_with(tasks, Vec::new, |cols, t| task(t, cols, gemm::Parallelism::None));
    } else {
        let mut cols = Vec::new();
        pool().install(|| (0..tasks).for_each(|t| task(t, &mut cols, gemm::Parallelism::Rayon(threads))));
    }
}

/// `out[rows, group] = (bias +) columns[rows] · W[group]ᵀ`.
unsafe fn tile_gemm<T: Element>(job: &Job<T>, g: &Geom2, rows: std::ops::Range<usize>, grp: usize, cols: &mut Vec<T>, par: gemm::Parallelism) {
    let (cg, kg, k) = (job.group_in(), job.group_out(), job.out_channels);
    let depth = cg * g.kernel[0] * g.kernel[1];
    let dst = job.out.at((rows.start * k + grp * kg) as isize);
    if let Some(b) = job.bias {
        let bias = std::slice::from_raw_parts(b.at((grp * kg) as isize), kg);
        for r in 0..rows.len() {
            std::slice::from_raw_parts_mut(dst.add(r * k), kg).copy_from_slice(bias);
        }
    }
    let (lhs, lhs_rs) = if g.is_pointwise() {
        (job.x.at((rows.start * job.channels + grp * cg) as isize) as *const T, job.channels)
    } else {
        cols.resize(rows.len() * depth, T::zero());
        gather_windows(job, g, rows.clone(), grp, cols.as_mut_ptr());
        (cols.as_ptr(), depth)
    };
    let rhs = job.w.at((grp * kg * depth) as isize) as *const T;
    gemm_into((rows.len(), kg, depth), (dst, k), (lhs, lhs_rs), rhs, job.bias.is_some(), par);
}

/// NHWC im2col: row `r` of `cols` is output position `rows.start + r`'s window, tap by tap,
/// `C/groups` channels of group `grp` per tap; taps in the padding read as zero.
unsafe fn gather_windows<T: Element>(job: &Job<T>, g: &Geom2, rows: std::ops::Range<usize>, grp: usize, cols: *mut T) {
    let cg = job.group_in();
    let depth = cg * g.kernel[0] * g.kernel[1];
    // Without groups or dilation, a window row's taps are one run of the input row.
    let whole_rows = job.groups == 1 && g.dilation[1] == 1;
    for (r, p) in rows.enumerate() {
        let (img, oy, ox) = split_position(g, p);
        let row = cols.add(r * depth);
        for ky in 0..g.kernel[0] {
            let iy = g.source(0, oy, ky);
            if whole_rows {
                let dst = std::slice::from_raw_parts_mut(row.add(ky * g.kernel[1] * cg), g.kernel[1] * cg);
                window_row(job, g, iy.map(|iy| (img * g.input[0] + iy) * g.input[1]), ox, dst);
                continue;
            }
            for kx in 0..g.kernel[1] {
                let dst = std::slice::from_raw_parts_mut(row.add((ky * g.kernel[1] + kx) * cg), cg);
                match (iy, g.source(1, ox, kx)) {
                    (Some(iy), Some(ix)) => {
                        let at = ((img * g.input[0] + iy) * g.input[1] + ix) * job.channels + grp * cg;
                        dst.copy_from_slice(std::slice::from_raw_parts(job.x.at(at as isize), cg));
                    }
                    _ => dst.fill(T::zero()),
                }
            }
        }
    }
}

/// One window row (all `kw` taps of all channels) of output column `ox` from input row `line`
/// (its first position's index; `None` in the padding): the in-bounds taps as one copy, the
/// rest zero.
unsafe fn window_row<T: Element>(job: &Job<T>, g: &Geom2, line: Option<usize>, ox: usize, dst: &mut [T]) {
    let (kw, c) = (g.kernel[1], job.channels);
    let Some(line) = line else { return dst.fill(T::zero()) };
    let x0 = (ox * g.stride[1]) as isize - g.pad[1] as isize;
    let lo = (-x0).clamp(0, kw as isize) as usize;
    let hi = (g.input[1] as isize - x0).clamp(lo as isize, kw as isize) as usize;
    dst[..lo * c].fill(T::zero());
    let src = job.x.at((line as isize + x0 + lo as isize) * c as isize);
    dst[lo * c..hi * c].copy_from_slice(std::slice::from_raw_parts(src, (hi - lo) * c));
    dst[hi * c..].fill(T::zero());
}

/// `dst (m×n, row stride) = [dst +] lhs (m×k, row stride) · rhsᵀ`, where `rhs` is `n` rows of
/// `k` contiguous elements (the weight's own layout).
unsafe fn gemm_into<T: Element>((m, n, k): (usize, usize, usize), (dst, dst_rs): (*mut T, usize), (lhs, lhs_rs): (*const T, usize), rhs: *const T, accumulate: bool, par: gemm::Parallelism) {
    macro_rules! call {
        ($t:ty) => {
            gemm::gemm::<$t>(m, n, k, dst as *mut $t, 1, dst_rs as isize, accumulate, lhs as *const $t, 1, lhs_rs as isize,
                rhs as *const $t, k as isize, 1, if accumulate { 1.0 } else { 0.0 }, 1.0, false, false, false, par)
        };
    }
    match T::DTYPE {
        DType::F32 => call!(f32),
        DType::F64 => call!(f64),
        other => unreachable!("the NHWC conv computes in float32 or float64, not {other}"),
    }
}

/// bfloat16 on the bf16 GEMM (`conv/bf16.rs` has the rationale): per tile of positions and
/// group, `out[tile, group] = bias + columns · W[group]ᵀ`, written by the GEMM through the output's
/// row stride, summed in float32 and rounded once.
fn run_bf16(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, out: &Tensor, groups: usize, g: &Geom2) {
    let job = Job {
        x: Ptr(x.data_ptr::<bf16>()),
        w: Ptr(w.data_ptr::<bf16>()),
        bias: None,
        out: Ptr(out.data_ptr::<bf16>()),
        channels: x.shape()[3],
        out_channels: out.shape()[3],
        groups,
    };
    let bias: Option<Vec<bf16>> = bias.map(|b| b.to_vec::<bf16>().expect("a contiguous bias"));
    let (cg, kg) = (job.group_in(), job.group_out());
    let depth = cg * g.kernel[0] * g.kernel[1];
    let positions = x.shape()[0] * g.positions_per_image();
    let tiles = positions.div_ceil((COLUMN_BUDGET / depth.max(kg)).max(BF16_MIN_TILE));
    let per_tile = positions.div_ceil(tiles);
    let mut cols = Vec::new();
    for t in 0..tiles {
        let rows = t * per_tile..((t + 1) * per_tile).min(positions);
        for grp in 0..groups {
            let a = if g.is_pointwise() {
                Mat { ptr: Ptr(job.x.at((rows.start * job.channels + grp * cg) as isize)), rs: job.channels as isize, cs: 1 }
            } else {
                cols.resize(rows.len() * depth, bf16::ZERO);
                let pc = Ptr(cols.as_mut_ptr());
                for_range(rows.len(), (GRAIN / depth).max(1), |s, e| unsafe { gather_windows(&job, g, rows.start + s..rows.start + e, grp, pc.at((s * depth) as isize)) });
                Mat { ptr: pc, rs: depth as isize, cs: 1 }
            };
            let b = Mat { ptr: Ptr(job.w.at((grp * kg * depth) as isize)), rs: 1, cs: depth as isize };
            let c = MatMut { ptr: Ptr(job.out.at((rows.start * job.out_channels + grp * kg) as isize)), rs: job.out_channels as isize, cs: 1 };
            let bias = bias.as_ref().map(|b| &b[grp * kg..(grp + 1) * kg]);
            unsafe {
                if let Some(b) = bias {
                    fill_bias(c, rows.len(), b);
                }
                bgemm::gemm(rows.len(), kg, depth, a, b, c, bias.is_some());
            }
        }
    }
}

/// Sets each of the `rows` rows of `c` to `bias`, so the GEMM adds its sums onto it.
unsafe fn fill_bias(c: MatMut<bf16>, rows: usize, bias: &[bf16]) {
    let n = bias.len();
    for_range(rows, (GRAIN / n).max(1), |s, e| {
        for r in s..e {
            std::slice::from_raw_parts_mut(c.ptr.at(r as isize * c.rs), n).copy_from_slice(bias);
        }
    });
}
