//! Direct float32 convolution on AVX-512 for small images, vectorised over output channels.
//!
//! `conv_direct` puts 16 output positions in a vector, which wastes the lanes that land on the
//! padding between rows: a 14x14 image fills 196 of 224 lanes, a 7x7 one 49 of 64. Here a vector
//! holds 16 output channels instead. The micro-kernel keeps up to 14 positions of one output row
//! × 32 channels in registers (two rows of up to 7 on narrower images), broadcasts each input
//! pixel it reads (any stride is an address step), and streams the weights from a copy of one
//! block of 32 channels packed as `[reduction index][32]`, made by the thread that uses it.
//! Every lane computes a real output.
use super::direct::Conv2d;
use crate::backend::cpu::map::{prefetch, Ptr};
use crate::parallel::for_range;

const LANES: usize = 16;
/// Output channels per micro-kernel call: two vectors.
const CB: usize = 2 * LANES;
/// Most positions per call: 2·14 accumulators, two weight vectors and a broadcast fill the 32
/// vector registers.
const MAX_P: usize = 14;

/// Whether this kernel should run `c` instead of `conv_direct`: output rows narrow enough that
/// the latter wastes lanes, and channels enough to fill these vectors. The widths are where it
/// measured faster on the ResNet-50 3x3 layers (stride 2 from 8 outputs up to 16). Every block
/// of weights is packed once per call, so `images` (all its images) must bring enough positions
/// per weight: one 14x14 image does, one 7x7 image (49) does not.
pub(crate) fn preferred(c: &Conv2d, images: usize) -> bool {
    let narrow = match c.stride[1] {
        1 => c.output[1] <= 32,
        2 => (8..=16).contains(&c.output[1]),
        _ => false,
    };
    let positions = images * c.output[0] * c.output[1];
    narrow && positions >= 128 && c.out_channels >= CB && c.kernel != [1, 1] && crate::backend::cpu::map::has_avx512()
}

/// Element strides of a 4-d operand: (image, channel, row, column) for `x` and `out`, (output
/// channel, input channel, row, column) for the weight.
pub(crate) type Strides = [usize; 4];

/// The contiguous strides of `shape`.
pub(crate) fn dense(shape: [usize; 4]) -> Strides {
    [shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3], 1]
}

/// The same contract as `conv_direct::conv2d`, `out[i] = bias[g] + W[g] ⋆ x[i]` for the
/// (image, group) pairs `i` of `[batch, groups·channels, h, w]`, `g = i % groups`, with each
/// operand in any layout its strides give (an image stride steps over one (image, group) pair,
/// so a layout that does not keep a pair's channels together needs `groups == 1`).
///
/// # Safety
/// `x`, `w`, `bias` and `out` must hold what the strides address; AVX-512F; the row stride 1 or 2.
pub(crate) unsafe fn conv2d(c: &Conv2d, images: usize, (x, xs): (*const f32, Strides), (w, ws): (*const f32, Strides), bias: Option<*const f32>, (out, os): (*mut f32, Strides)) {
    let planes = Planes::new(c);
    let padded = planes.fill(c, images, x, xs);
    let blocks = c.out_channels.div_ceil(CB);
    let lines = Lines::new(c, images);
    let offsets = planes.tap_offsets(c);
    let weights = Weights::new(c, w, ws);
    let (src, dst) = (Ptr(padded.as_ptr() as *mut f32), Ptr(out));
    let bias = bias.map(|b| Ptr(b as *mut f32));
    let tiles = lines.tiles_per_group();
    // Tasks ordered block-major, so a thread packs each block of weights it meets once, into a
    // copy that stays in its L2 while its consecutive tasks use it.
    for_range(blocks * c.groups * tiles, 1, |start, end| {
        let (mut packed, mut current) = (Vec::new(), None);
        for t in start..end {
            let (cb, group, tile) = (t / (c.groups * tiles), t / tiles % c.groups, t % tiles);
            if current != Some((group, cb)) {
                weights.pack(group, cb, &mut packed);
                current = Some((group, cb));
            }
            let rows = lines.of_tile(tile);
            let [first, last] = [rows.start, rows.end - 1].map(|l| lines.at(l, group));
            let input = |l: &Line| l.image * c.channels * planes.size() + l.y * c.stride[0] * planes.width + l.x0 * c.stride[1];
            let co0 = group * c.out_channels + cb * CB;
            let valid = CB.min(c.out_channels - cb * CB);
            let init: [f32; CB] = std::array::from_fn(|j| bias.filter(|_| j < valid).map_or(0.0, |b| *b.at((co0 + j) as isize)));
            let mut tile = [[0f32; CB]; MAX_P];
            let shape = Tile { width: first.width, rows: rows.len(), stride: c.stride[1], row_step: input(&last) - input(&first) };
            shape.compute(src.at(input(&first) as isize), &offsets, packed.as_ptr(), &init, &mut tile);
            for (r, line) in [first, last].into_iter().take(rows.len()).enumerate() {
                let at = dst.at((line.image * os[0] + cb * CB * os[1] + line.y * os[2] + line.x0 * os[3]) as isize);
                for (q, outputs) in tile[r * shape.width..(r + 1) * shape.width].iter().enumerate() {
                    (0..valid).for_each(|j| *at.add(q * os[3] + j * os[1]) = outputs[j]);
                }
            }
        }
    });
}

/// The output rows of one group's images cut into lines of at most `MAX_P` positions, and the
/// lines into micro-kernel tiles: one line each, or two when lines are at most half a tile
/// wide. Two lines of a tile may lie in consecutive images, so a 7x7 image wastes no half-tile.
struct Lines {
    /// Images of one group.
    images: usize,
    rows: usize,
    width: usize,
    /// Lines per output row.
    chunks: usize,
    pair: usize,
    groups: usize,
}

impl Lines {
    fn new(c: &Conv2d, images: usize) -> Self {
        let (rows, width) = (c.output[0], c.output[1]);
        let pair = if 2 * width <= MAX_P { 2 } else { 1 };
        Lines { images: images / c.groups, rows, width, chunks: width.div_ceil(MAX_P), pair, groups: c.groups }
    }
    fn tiles_per_group(&self) -> usize {
        (self.images * self.rows * self.chunks).div_ceil(self.pair)
    }
    fn of_tile(&self, tile: usize) -> std::ops::Range<usize> {
        tile * self.pair..((tile + 1) * self.pair).min(self.images * self.rows * self.chunks)
    }
    /// Line `l` of `group`.
    fn at(&self, l: usize, group: usize) -> Line {
        let (m, y, chunk) = (l / (self.rows * self.chunks), l / self.chunks % self.rows, l % self.chunks);
        let x0 = chunk * self.width / self.chunks;
        Line { image: m * self.groups + group, y, x0, width: (chunk + 1) * self.width / self.chunks - x0 }
    }
}

/// `width` outputs of row `y` of `image`, from column `x0`.
struct Line {
    image: usize,
    y: usize,
    x0: usize,
    width: usize,
}

/// Zero-padded input planes `[image][channel][height][width]`.
struct Planes {
    height: usize,
    width: usize,
}

impl Planes {
    fn new(c: &Conv2d) -> Self {
        // Everything any output reads ('same' padding may leave a right column unread).
        let extent = |d: usize| (c.input[d] + 2 * c.pad[d]).max(c.stride[d] * (c.output[d] - 1) + c.dilation[d] * (c.kernel[d] - 1) + 1);
        Planes { height: extent(0), width: extent(1) }
    }
    fn size(&self) -> usize {
        self.height * self.width
    }
    /// Copies every channel of `images` images into its padded plane.
    unsafe fn fill(&self, c: &Conv2d, images: usize, x: *const f32, xs: Strides) -> Vec<f32> {
        let mut planes = vec![0f32; images * c.channels * self.size()];
        let (src, dst) = (Ptr(x as *mut f32), Ptr(planes.as_mut_ptr()));
        let [h, w] = c.input;
        for_range(images * c.channels, 16, |start, end| {
            for ch in start..end {
                for iy in 0..h {
                    let to = dst.at((ch * self.size() + (iy + c.pad[0]) * self.width + c.pad[1]) as isize);
                    let from = src.at(((ch / c.channels) * xs[0] + (ch % c.channels) * xs[1] + iy * xs[2]) as isize);
                    match xs[3] {
                        1 => std::ptr::copy_nonoverlapping(from, to, w),
                        step => (0..w).for_each(|ix| *to.add(ix) = *from.add(ix * step)),
                    }
                }
            }
        });
        planes
    }
    /// For each reduction index `ci·kh·kw + ky·kw + kx` (the weight's own order), where the tap
    /// reads in an image's planes for output (0, 0).
    fn tap_offsets(&self, c: &Conv2d) -> Vec<usize> {
        let [kh, kw] = c.kernel;
        let tap = |ky: usize, kx: usize| ky * c.dilation[0] * self.width + kx * c.dilation[1];
        (0..c.channels).flat_map(|ci| (0..kh * kw).map(move |t| ci * self.size() + tap(t / kw, t % kw))).collect()
    }
}

/// The weights `[groups·out, channels, kh, kw]` in any layout, packed a block of 32 output
/// channels at a time as `[k][32]`, `k` running over (channel, row, column).
struct Weights {
    w: Ptr<f32>,
    row_stride: usize,
    out_channels: usize,
    /// Where each reduction index reads in a weight row.
    taps: Vec<usize>,
}

impl Weights {
    fn new(c: &Conv2d, w: *const f32, ws: Strides) -> Self {
        let [kh, kw] = c.kernel;
        let taps = (0..c.channels * kh * kw).map(|kk| (kk / (kh * kw)) * ws[1] + (kk / kw % kh) * ws[2] + (kk % kw) * ws[3]).collect();
        Weights { w: Ptr(w as *mut f32), row_stride: ws[0], out_channels: c.out_channels, taps }
    }

    /// Block `cb` of `group` into `packed`, zero past the last output channel. A run of taps
    /// at a time, its 32 rows read side by side while prefetching their next run: one tap at a
    /// time read all 32 rows a cache line apiece and stalled on each.
    unsafe fn pack(&self, group: usize, cb: usize, packed: &mut Vec<f32>) {
        const RUN: usize = 64;
        let k = self.taps.len();
        packed.resize(k * CB, 0.0);
        let valid = CB.min(self.out_channels - cb * CB);
        let first_row = group * self.out_channels + cb * CB;
        for (run, taps) in self.taps.chunks(RUN).enumerate() {
            let ahead = &self.taps[((run + 1) * RUN).min(k)..((run + 2) * RUN).min(k)];
            let to = &mut packed[run * RUN * CB..];
            for j in 0..CB {
                let row = self.w.at(((first_row + j.min(valid - 1)) * self.row_stride) as isize);
                for (t, &tap) in taps.iter().enumerate() {
                    to[t * CB + j] = if j < valid { *row.add(tap) } else { 0.0 };
                }
                ahead.iter().step_by(16).for_each(|&tap| prefetch(row.add(tap)));
            }
        }
    }
}

/// The positions of one micro-kernel call: `rows` (1 or 2) output rows `row_step` apart in the
/// planes, `width` outputs each, `stride` apart.
struct Tile {
    width: usize,
    rows: usize,
    stride: usize,
    row_step: usize,
}

impl Tile {
    /// `tile[p][j] = init[j] + Σ_k w[k][j] · x[offsets[k] + position p]`, positions row by row.
    unsafe fn compute(&self, x: *const f32, offsets: &[usize], w: *const f32, init: &[f32; CB], tile: &mut [[f32; CB]; MAX_P]) {
        macro_rules! dispatch {
            ($($q:literal)*; $($h:literal)*) => {
                match (self.rows, self.width, self.stride) {
                    $((1, $q, 1) => tile_kernel::<$q, 1, 1>(x, 0, offsets, w, init, tile),)*
                    $((1, $q, 2) => tile_kernel::<$q, 1, 2>(x, 0, offsets, w, init, tile),)*
                    $((2, $h, 1) => tile_kernel::<$h, 2, 1>(x, self.row_step, offsets, w, init, tile),)*
                    $((2, $h, 2) => tile_kernel::<$h, 2, 2>(x, self.row_step, offsets, w, init, tile),)*
                    _ => unreachable!("tiles are one row of 1 to 14 or two of 1 to 7, at stride 1 or 2"),
                }
            };
        }
        dispatch!(1 2 3 4 5 6 7 8 9 10 11 12 13 14; 1 2 3 4 5 6 7)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn tile_kernel<const Q: usize, const R: usize, const S: usize>(x: *const f32, row_step: usize, offsets: &[usize], w: *const f32, init: &[f32; CB], tile: &mut [[f32; CB]; MAX_P]) {
    use std::arch::x86_64::*;
    let start = [_mm512_loadu_ps(init.as_ptr()), _mm512_loadu_ps(init.as_ptr().add(LANES))];
    let acc = accumulate::<Q, R, S>([[start; Q]; R], x, row_step, offsets, w);
    for (p, outputs) in acc.iter().flatten().enumerate() {
        _mm512_storeu_ps(tile[p].as_mut_ptr(), outputs[0]);
        _mm512_storeu_ps(tile[p].as_mut_ptr().add(LANES), outputs[1]);
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn tile_kernel<const Q: usize, const R: usize, const S: usize>(_: *const f32, _: usize, _: &[usize], _: *const f32, _: &[f32; CB], _: &mut [[f32; CB]; MAX_P]) {
    unreachable!("the small-image conv kernel is x86-64 only")
}

/// The reduction itself, out of line so the accumulators stay in registers across it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline(never)]
unsafe fn accumulate<const Q: usize, const R: usize, const S: usize>(
    mut acc: [[[std::arch::x86_64::__m512; 2]; Q]; R],
    x: *const f32,
    row_step: usize,
    offsets: &[usize],
    w: *const f32,
) -> [[[std::arch::x86_64::__m512; 2]; Q]; R] {
    use std::arch::x86_64::*;
    for (k, &off) in offsets.iter().enumerate() {
        let (w0, w1) = (_mm512_loadu_ps(w.add(k * CB)), _mm512_loadu_ps(w.add(k * CB + LANES)));
        for (r, row) in acc.iter_mut().enumerate() {
            let src = x.add(off + r * row_step);
            for (q, a) in row.iter_mut().enumerate() {
                let v = _mm512_set1_ps(*src.add(q * S));
                a[0] = _mm512_fmadd_ps(v, w0, a[0]);
                a[1] = _mm512_fmadd_ps(v, w1, a[1]);
            }
        }
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A float64 reference convolution of the same contract.
    fn reference(c: &Conv2d, images: usize, x: &[f32], w: &[f32], bias: &[f32]) -> Vec<f64> {
        let ([h, wd], [ho, wo], [kh, kw]) = (c.input, c.output, c.kernel);
        let k = c.channels * kh * kw;
        let mut out = vec![0f64; images * c.out_channels * ho * wo];
        for (i, o) in out.iter_mut().enumerate() {
            let (image, co, y, xo) = (i / (c.out_channels * ho * wo), i / (ho * wo) % c.out_channels, i / wo % ho, i % wo);
            let row = (image % c.groups) * c.out_channels + co;
            *o = bias[row] as f64;
            for ci in 0..c.channels {
                for (ky, kx) in (0..kh).flat_map(|ky| (0..kw).map(move |kx| (ky, kx))) {
                    let iy = (y * c.stride[0] + ky * c.dilation[0]) as isize - c.pad[0] as isize;
                    let ix = (xo * c.stride[1] + kx * c.dilation[1]) as isize - c.pad[1] as isize;
                    if (0..h as isize).contains(&iy) && (0..wd as isize).contains(&ix) {
                        let pixel = x[((image * c.channels + ci) * h + iy as usize) * wd + ix as usize] as f64;
                        *o += pixel * w[row * k + (ci * kh + ky) * kw + kx] as f64;
                    }
                }
            }
        }
        out
    }

    /// Every tile shape (one row of 1 to 14, two rows of 1 to 7), partial channel blocks,
    /// groups, strides, dilation and padding, against the reference.
    #[test]
    fn matches_a_float64_reference() {
        if !crate::backend::cpu::map::has_avx512() {
            return;
        }
        let cases = [
            // (channels, out, groups, input, kernel, stride, pad, dilation)
            (3, 32, 1, [7, 7], [3, 3], [1, 1], [1, 1], [1, 1]),
            (5, 40, 2, [9, 13], [3, 3], [2, 2], [1, 1], [1, 1]),
            (4, 33, 1, [12, 29], [5, 3], [1, 1], [2, 1], [1, 1]),
            (6, 64, 1, [10, 10], [3, 3], [1, 1], [2, 2], [2, 2]),
            (2, 35, 3, [5, 1], [1, 3], [1, 2], [0, 1], [1, 1]),
            (4, 48, 1, [16, 4], [3, 2], [2, 1], [0, 0], [1, 2]),
        ];
        for (channels, out_channels, groups, input, kernel, stride, pad, dilation) in cases {
            let output = std::array::from_fn(|d| (input[d] + 2 * pad[d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1);
            let c = Conv2d { channels, out_channels, groups, input, output, kernel, stride, pad, dilation };
            let images = 2 * groups;
            let k = channels * kernel[0] * kernel[1];
            let x: Vec<f32> = (0..images * channels * input[0] * input[1]).map(|i| ((i * 7919) % 97) as f32 / 13.0 - 3.0).collect();
            let w: Vec<f32> = (0..groups * out_channels * k).map(|i| ((i * 104729) % 89) as f32 / 11.0 - 4.0).collect();
            let bias: Vec<f32> = (0..groups * out_channels).map(|i| i as f32 / 7.0 - 2.0).collect();
            let want = reference(&c, images, &x, &w, &bias);
            let mut out = vec![f32::NAN; want.len()];
            let (xs, os) = (dense([images, channels, input[0], input[1]]), dense([images, out_channels, output[0], output[1]]));
            let ws = dense([groups * out_channels, channels, kernel[0], kernel[1]]);
            unsafe { conv2d(&c, images, (x.as_ptr(), xs), (w.as_ptr(), ws), Some(bias.as_ptr()), (out.as_mut_ptr(), os)) };
            for (i, (&got, want)) in out.iter().zip(&want).enumerate() {
                assert!((got as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()), "{c:?} [{i}]: {got} vs {want}");
            }
            if groups == 1 {
                // Channels-last operands: the same values through the NHWC strides.
                let nhwc = |v: &[f32], [_, ch, h, wd]: [usize; 4]| -> Vec<f32> {
                    (0..v.len()).map(|i| { let (im, y, xx, cc) = (i / (h * wd * ch), i / (wd * ch) % h, i / ch % wd, i % ch); v[((im * ch + cc) * h + y) * wd + xx] }).collect()
                };
                let cl = |[_, ch, h, wd]: [usize; 4]| [h * wd * ch, 1, wd * ch, ch];
                let (xc, wc) = (nhwc(&x, [images, channels, input[0], input[1]]), nhwc(&w, [out_channels, channels, kernel[0], kernel[1]]));
                let mut oc = vec![f32::NAN; want.len()];
                let shapes = ([images, channels, input[0], input[1]], [out_channels, channels, kernel[0], kernel[1]], [images, out_channels, output[0], output[1]]);
                unsafe { conv2d(&c, images, (xc.as_ptr(), cl(shapes.0)), (wc.as_ptr(), cl(shapes.1)), Some(bias.as_ptr()), (oc.as_mut_ptr(), cl(shapes.2))) };
                let back = |i: usize| { let [_, ch, h, wd] = shapes.2; let (im, cc, y, xx) = (i / (ch * h * wd), i / (h * wd) % ch, i / wd % h, i % wd); oc[((im * h + y) * wd + xx) * ch + cc] };
                for (i, want) in want.iter().enumerate() {
                    assert!((back(i) as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()), "channels-last {c:?} [{i}]");
                }
            }
        }
    }
}
