//! Direct float32 convolution on AVX-512 for 1-d and 2-d kernels (stride 1 with any dilation,
//! or any stride without dilation): an implicit GEMM that never builds im2col columns.
//!
//! The input is copied once into zero-padded "phase planes": for strides (sy, sx), plane (a, b)
//! holds the padded pixels at rows `a + sy·i` and columns `b + sx·j`, so every tap reads its plane at
//! stride 1. Outputs are computed on the flattened grid `p = y·Wq + x` of a plane (`Wq` wide, the
//! columns `x >= Wo` being discarded), where the pixels a tap reads for consecutive `p` are
//! consecutive in memory: one vector load serves 16 outputs of a tap wherever they wrap rows.
//! The micro-kernel keeps 8 output channels × `NV` vectors of 16 positions in registers and
//! broadcasts weights straight from the caller's `[out, in, kh, kw]` layout, so nothing is packed.
use crate::backend::cpu::map::{has_avx512, Ptr};
use crate::parallel::pool;
use rayon::prelude::*;

/// Output channels per micro-kernel call.
const CO: usize = 8;
/// Positions per vector.
const LANES: usize = 16;
/// Bytes of input a reduction chunk may read per position block.
const L1_WINDOW: usize = 24 * 1024;
/// Bytes of phase planes built and consumed at a time: about what two cores' L2 holds.
const PLANES_IN_CACHE: usize = 2 << 20;

/// The geometry the direct kernel supports, in 2-d (a 1-d conv has `h = kh = 1`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Conv2d {
    /// Input and output channels of one group.
    pub channels: usize,
    pub out_channels: usize,
    pub groups: usize,
    pub input: [usize; 2],
    pub output: [usize; 2],
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub pad: [usize; 2],
    pub dilation: [usize; 2],
}

impl Conv2d {
    /// Whether the direct kernel handles this conv on this machine, and is worth it.
    pub fn supported(&self) -> bool {
        let reduction = self.channels * self.kernel[0] * self.kernel[1];
        let taps_fit = self.stride == [1, 1] || self.dilation == [1, 1];
        taps_fit && self.kernel != [1, 1] && reduction >= 16 && self.out_channels >= 4 && has_avx512()
    }
    /// Rows and columns of each phase plane.
    fn plane_dims(&self) -> [usize; 2] {
        let s = self.stride;
        // Padded extent: everything any output reads (a 'same' pad's extra right column is never read).
        let extent = |d: usize| self.input[d] + 2 * self.pad[d];
        let needed = |d: usize| s[d] * (self.output[d] - 1) + self.dilation[d] * (self.kernel[d] - 1) + 1;
        [extent(0).max(needed(0)).div_ceil(s[0]), extent(1).max(needed(1)).div_ceil(s[1])]
    }
    fn phases(&self) -> usize {
        self.stride[0] * self.stride[1]
    }
    /// Flattened grid positions computed per image.
    fn positions(&self) -> usize {
        self.output[0] * self.plane_dims()[1]
    }
    /// The offset into the padded planes of one channel that tap (ky, kx) reads for position 0.
    fn tap_offset(&self, ky: usize, kx: usize) -> usize {
        let [hq, wq] = self.plane_dims();
        let [sy, sx] = self.stride;
        let (ry, rx) = (ky * self.dilation[0], kx * self.dilation[1]);
        ((ry % sy) * sx + rx % sx) * hq * wq + (ry / sy) * wq + rx / sx
    }
}

/// `out[i] = bias[g] + W[g] ⋆ x[i]` for the `images` = batch × groups (image, group) pairs of an
/// input `[batch, groups·channels, h, w]`, with `g = i % groups`; `out` is
/// `[batch, groups·out_channels, ho, wo]`. Only call when `Conv2d::supported`.
///
/// # Safety
/// `x`, `w`, `bias` and `out` must hold the sizes above.
pub(crate) unsafe fn conv2d(c: &Conv2d, images: usize, x: *const f32, w: *const f32, bias: Option<*const f32>, out: *mut f32) {
    #[cfg(target_arch = "x86_64")]
    {
        // A few images at a time (whole groups), so their planes are still in cache when read.
        let [hq, wq] = c.plane_dims();
        let plane_bytes = c.channels * c.phases() * hq * wq * std::mem::size_of::<f32>();
        let step = (PLANES_IN_CACHE / (plane_bytes * c.groups)).max(1) * c.groups;
        let (in_image, out_image) = (c.channels * c.input[0] * c.input[1], c.out_channels * c.output[0] * c.output[1]);
        // One rayon job for all of it: its threads stay awake from one step to the next.
        let (x, w, out) = (Ptr(x as *mut f32), Ptr(w as *mut f32), Ptr(out));
        let bias = bias.map(|b| Ptr(b as *mut f32));
        pool().install(|| {
            for first in (0..images).step_by(step) {
                let n = step.min(images - first);
                let (x, out) = (x.at((first * in_image) as isize), out.at((first * out_image) as isize));
                let planes = phase_planes(c, n, x);
                let (w, bias) = (w.at(0) as *const f32, bias.map(|b| b.at(0) as *const f32));
                match vectors_per_block(c.positions()) {
                    1 => run::<1>(c, n, &planes, w, bias, out),
                    2 => run::<2>(c, n, &planes, w, bias, out),
                    _ => run::<3>(c, n, &planes, w, bias, out),
                }
            }
        });
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("the direct conv kernel is x86-64 only ({c:?}, {images}, {x:?}, {w:?}, {bias:?}, {out:?})")
}

/// Vectors of positions per block: the most (fewer loads per FMA) that waste little of the grid.
fn vectors_per_block(positions: usize) -> usize {
    let waste = |nv: usize| positions.next_multiple_of(nv * LANES) - positions;
    (1..=3).rev().min_by_key(|&nv| (waste(nv) * 8 / positions.max(1), 3 - nv)).unwrap()
}

/// The zero-padded phase planes of every image and channel, with slack at the end for the
/// vector loads of discarded positions past the last plane.
unsafe fn phase_planes(c: &Conv2d, images: usize, x: *const f32) -> Vec<f32> {
    let [hq, wq] = c.plane_dims();
    let per_channel = c.phases() * hq * wq;
    let slack = 3 * LANES + wq + 1;
    let mut planes = vec![0f32; images * c.channels * per_channel + slack];
    let (src, dst) = (Ptr(x as *mut f32), Ptr(planes.as_mut_ptr()));
    let [h, wd] = c.input;
    let [sy, sx] = c.stride;
    // Where each input row starts in its phase plane, and for each phase column `b` (every
    // `sx`-th pixel from `first`) the first pixel, where it lands in the row and how many.
    let rows: Vec<usize> = (0..h).map(|iy| iy + c.pad[0]).map(|py| ((py % sy) * sx * hq + py / sy) * wq).collect();
    let columns: Vec<[usize; 3]> = (0..sx).map(|b| {
        let first = (b + sx - c.pad[1] % sx) % sx;
        let at = ((first + c.pad[1]) % sx) * hq * wq + (first + c.pad[1]) / sx;
        [first, at, wd.saturating_sub(first).div_ceil(sx)]
    }).collect();
    (0..images * c.channels).into_par_iter().with_min_len(4).for_each(|ch| {
        let (plane, base) = (src.at((ch * h * wd) as isize), dst.at((ch * per_channel) as isize));
        for (iy, &row) in rows.iter().enumerate() {
            let line = plane.add(iy * wd);
            for &[first, at, n] in &columns {
                copy_every(sx, line.add(first), base.add(row + at), n);
            }
        }
    });
    planes
}

/// `dst[j] = src[j·step]` for `j < n`, with the common steps as constants so the copy vectorises
/// (the stride-2 planes were a seventh of a strided conv's time with a run-time step).
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx512f"))]
unsafe fn copy_every(step: usize, src: *const f32, dst: *mut f32, n: usize) {
    #[inline(always)]
    unsafe fn every<const S: usize>(src: *const f32, dst: *mut f32, n: usize) {
        for j in 0..n {
            *dst.add(j) = *src.add(j * S);
        }
    }
    match step {
        1 => std::ptr::copy_nonoverlapping(src, dst, n),
        2 => every::<2>(src, dst, n),
        _ => (0..n).for_each(|j| *dst.add(j) = *src.add(j * step)),
    }
}

/// Splits (image, position blocks, channel blocks) into tasks and runs the micro-kernel, on the
/// rayon pool it is called in.
#[cfg(target_arch = "x86_64")]
unsafe fn run<const NV: usize>(c: &Conv2d, images: usize, planes: &[f32], w: *const f32, bias: Option<*const f32>, out: *mut f32) {
    let [hq, wq] = c.plane_dims();
    let per_channel = c.phases() * hq * wq;
    let block = NV * LANES;
    let p_blocks = c.positions().div_ceil(block);
    let co_blocks = c.out_channels.div_ceil(CO);
    // Tasks of one position block each, stolen by idle threads; the channel blocks are split as
    // well when there are too few tasks to keep every thread busy, or so few that the last round
    // leaves threads idle for more than 5% of the run (17 tasks on 2 threads: 18 rounds of work).
    let threads = rayon::current_num_threads();
    let balanced = |chunks: usize| {
        let tasks = images * p_blocks * chunks;
        tasks >= 4 * threads && 20 * tasks.next_multiple_of(threads) <= 21 * tasks
    };
    let co_per = co_blocks.div_ceil((1..=co_blocks).find(|&chunks| balanced(chunks)).unwrap_or(co_blocks));
    let co_chunks = co_blocks.div_ceil(co_per);
    let offsets = reduction_offsets(c, per_channel);
    let k = offsets.len();
    // The reduction runs in chunks of input channels whose pixels under one position block stay
    // in L1 while every channel block uses them.
    let taps = c.kernel[0] * c.kernel[1];
    let reach = (c.dilation[0] * (c.kernel[0] - 1) / c.stride[0]) * wq + c.dilation[1] * (c.kernel[1] - 1) / c.stride[1];
    let window = c.phases() * (block + reach) * std::mem::size_of::<f32>();
    let chunk = (L1_WINDOW / window).clamp(1, c.channels) * taps;
    let (src, wp, dst) = (Ptr(planes.as_ptr() as *mut f32), Ptr(w as *mut f32), Ptr(out));
    let bias = bias.map(|b| Ptr(b as *mut f32));
    let out_plane = c.output[0] * c.output[1];
    let task = |t: usize| {
        let (n, pb, cc) = (t / (p_blocks * co_chunks), t / co_chunks % p_blocks, t % co_chunks);
        let image = src.at((n * c.channels * per_channel) as isize);
        let image_out = dst.at((n * c.out_channels * out_plane) as isize);
        let group = (n % c.groups) * c.out_channels;
        let p0 = pb * block;
        let stores: [Store; NV] = std::array::from_fn(|v| Store::new(c, p0 + v * LANES, wq));
        for k0 in (0..k).step_by(chunk) {
            let offsets = &offsets[k0..(k0 + chunk).min(k)];
            for cb in cc * co_per..((cc + 1) * co_per).min(co_blocks) {
                let co0 = cb * CO;
                let rows = (c.out_channels - co0).min(CO);
                let init: [f32; CO] = std::array::from_fn(|j| bias.map_or(0.0, |b| *b.at((group + co0 + j.min(rows - 1)) as isize)));
                let weights: [*const f32; CO] = std::array::from_fn(|j| wp.at(((group + co0 + j.min(rows - 1)) * k + k0) as isize) as *const f32);
                micro_kernel::<NV>(image.add(p0), offsets, &weights, &init, k0 > 0, &stores, image_out.add(co0 * out_plane), out_plane, rows);
            }
        }
    };
    (0..images * p_blocks * co_chunks).into_par_iter().for_each(task);
}

/// For each reduction index `ci·kh·kw + ky·kw + kx` (the weight's own order), where in the phase
/// planes of an image the tap reads for position 0.
fn reduction_offsets(c: &Conv2d, per_channel: usize) -> Vec<usize> {
    let mut offsets = Vec::with_capacity(c.channels * c.kernel[0] * c.kernel[1]);
    for ci in 0..c.channels {
        for ky in 0..c.kernel[0] {
            for kx in 0..c.kernel[1] {
                offsets.push(ci * per_channel + c.tap_offset(ky, kx));
            }
        }
    }
    offsets
}

/// Where one vector of 16 grid positions lands in the output: the lanes with a real output
/// (column < Wo, row < Ho) and the output index of the first of them; those outputs are
/// consecutive, because the discarded columns are exactly the gap between output rows.
#[derive(Clone, Copy)]
struct Store {
    mask: u16,
    first: usize,
}

impl Store {
    fn new(c: &Conv2d, p0: usize, wq: usize) -> Self {
        let [ho, wo] = c.output;
        let (mut mask, mut first) = (0u16, usize::MAX);
        for lane in 0..LANES {
            let (y, x) = ((p0 + lane) / wq, (p0 + lane) % wq);
            if y < ho && x < wo {
                mask |= 1 << lane;
                first = first.min(y * wo + x);
            }
        }
        Store { mask, first }
    }
}

/// `out[j, positions] = start[j] + Σ_k weights[j][k] · x[offsets[k] + positions]` for `rows` ≤ 8
/// output channels (spare rows repeat the last channel and are not stored), where `start` is
/// `init[j]`, or with `resume` the partial sums already in `out`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
unsafe fn micro_kernel<const NV: usize>(x: *const f32, offsets: &[usize], weights: &[*const f32; CO], init: &[f32; CO], resume: bool, stores: &[Store; NV], out: *mut f32, out_plane: usize, rows: usize) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_ps(); NV]; CO];
    for j in 0..CO {
        for v in 0..NV {
            acc[j][v] = if !resume {
                _mm512_set1_ps(init[j])
            } else if j < rows {
                _mm512_maskz_expandloadu_ps(stores[v].mask, out.add(j * out_plane + stores[v].first.min(out_plane)))
            } else {
                _mm512_setzero_ps()
            };
        }
    }
    let acc = accumulate::<NV>(acc, x, offsets, weights);
    for j in 0..CO {
        for v in 0..NV {
            let s = stores[v];
            if j < rows && s.mask != 0 {
                let packed = _mm512_maskz_compress_ps(s.mask, acc[j][v]);
                let n = s.mask.count_ones();
                _mm512_mask_storeu_ps(out.add(j * out_plane + s.first), crate::backend::cpu::map::lanes(n as usize), packed);
            }
        }
    }
}

/// The reduction itself, kept out of line: the prologue and epilogue index `acc` at run time,
/// and sharing a body with them would make LLVM store every accumulator on each step.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline(never)]
#[allow(clippy::needless_range_loop)]
unsafe fn accumulate<const NV: usize>(
    mut acc: [[std::arch::x86_64::__m512; NV]; CO],
    x: *const f32,
    offsets: &[usize],
    weights: &[*const f32; CO],
) -> [[std::arch::x86_64::__m512; NV]; CO] {
    use std::arch::x86_64::*;
    for (k, &off) in offsets.iter().enumerate() {
        let src = x.add(off);
        let mut xs = [_mm512_setzero_ps(); NV];
        for v in 0..NV {
            xs[v] = _mm512_loadu_ps(src.add(v * LANES));
        }
        for j in 0..CO {
            let wv = _mm512_set1_ps(*weights[j].add(k));
            for v in 0..NV {
                acc[j][v] = _mm512_fmadd_ps(wv, xs[v], acc[j][v]);
            }
        }
    }
    acc
}
