//! Depthwise float32 convolution of NCHW memory on AVX-512 or AVX2: every group reads one input
//! channel (MobileNet's and EfficientNet's 3x3 and 5x5 layers), any stride, padding and dilation.
//!
//! A depthwise conv has no reduction over channels, so the GEMM paths run one tiny product per
//! channel and the direct kernels, built to reuse an input load across output channels, do not
//! apply. Here each (image, output channel) plane is its own task: the input plane is copied
//! once into a zero-padded buffer split by column phase (for stride `sx`, phase `b` holds padded
//! columns `b + sx·j`), so every tap of every output row reads consecutive floats. Up to four
//! vectors of a row's outputs stay in registers while all the taps accumulate into them.
use super::direct::Conv2d;
use crate::backend::cpu::map::{has_avx2, has_avx512, lanes, Ptr};
use crate::parallel::for_range;

/// Lanes of an AVX-512 vector; AVX2 has half.
const LANES: usize = 16;
/// Most vectors of one output row held in registers.
const MAX_VECTORS: usize = 4;

/// Whether this kernel runs `c`: one input channel per group (any channel multiplier), more than
/// one group (a single-group conv is a dense one), on AVX-512 or AVX2 with FMA.
pub(crate) fn applies(c: &Conv2d) -> bool {
    c.channels == 1 && c.groups > 1 && (has_avx512() || has_avx2())
}

/// `out[n, o] = bias[o] + w[o] ⋆ x[n, o / out_channels]` for `x [batch, groups, h, w]`,
/// `w [groups·out_channels, 1, kh, kw]` and `out [batch, groups·out_channels, ho, wo]`, all
/// contiguous.
///
/// # Safety
/// The pointers hold those shapes; only call when `applies`.
pub(crate) unsafe fn conv2d(c: &Conv2d, batch: usize, x: *const f32, w: *const f32, bias: Option<*const f32>, out: *mut f32) {
    let layout = Phases::new(c);
    let planes = batch * c.groups * c.out_channels;
    let (x, w, out, bias) = (Ptr(x as *mut f32), Ptr(w as *mut f32), Ptr(out), bias.map(|b| Ptr(b as *mut f32)));
    for_range(planes, 1, |start, end| {
        let mut padded = vec![0f32; layout.len()];
        let mut taps = Vec::with_capacity(c.kernel[0] * c.kernel[1]);
        for plane in start..end {
            let (image, channel) = (plane / (c.groups * c.out_channels), plane % (c.groups * c.out_channels));
            let source = x.at(((image * c.groups + channel / c.out_channels) * c.input[0] * c.input[1]) as isize);
            layout.fill(c, source, &mut padded);
            taps.clear();
            taps.extend(layout.taps(c, w.at((channel * c.kernel[0] * c.kernel[1]) as isize)));
            let b = bias.map_or(0.0, |b| *b.at(channel as isize));
            plane_rows(c, &layout, &padded, &taps, b, out.at((plane * c.output[0] * c.output[1]) as isize));
        }
    });
}

/// The padded, phase-split copy of one input plane: `stride[1]` phases of `rows × width`.
struct Phases {
    rows: usize,
    width: usize,
    count: usize,
}

impl Phases {
    fn new(c: &Conv2d) -> Self {
        // Everything any output reads, and the whole padded image (so a copy needs no clipping).
        let extent = |d: usize| (c.input[d] + 2 * c.pad[d]).max(c.stride[d] * (c.output[d] - 1) + c.dilation[d] * (c.kernel[d] - 1) + 1);
        Phases { rows: extent(0), width: extent(1).div_ceil(c.stride[1]), count: c.stride[1] }
    }
    /// Floats in the buffer: the phases, then room for the last row's full-width vector loads
    /// (their extra lanes fall on outputs past the row's end, which are never stored).
    fn len(&self) -> usize {
        self.count * self.rows * self.width + MAX_VECTORS * LANES
    }
    /// Copies one `[h, w]` plane into `buf`, padding with zeros.
    unsafe fn fill(&self, c: &Conv2d, src: *const f32, buf: &mut [f32]) {
        buf.fill(0.0);
        let [h, w] = c.input;
        let (sx, phase) = (self.count, self.rows * self.width);
        for y in 0..h {
            let line = std::slice::from_raw_parts(src.add(y * w), w);
            let row = (y + c.pad[0]) * self.width;
            if sx == 1 {
                buf[row + c.pad[1]..row + c.pad[1] + w].copy_from_slice(line);
                continue;
            }
            for b in 0..sx {
                // Phase b's columns b + sx·j read x = b + sx·j - pad, from the first j with x >= 0.
                let first = c.pad[1].saturating_sub(b).div_ceil(sx);
                let dst = &mut buf[b * phase + row + first..];
                for (d, &v) in dst.iter_mut().zip(line[b + sx * first - c.pad[1]..].iter().step_by(sx)) {
                    *d = v;
                }
            }
        }
    }
    /// Each tap's (offset into the buffer for output (0, 0), weight).
    unsafe fn taps<'a>(&'a self, c: &'a Conv2d, w: *const f32) -> impl Iterator<Item = (usize, f32)> + 'a {
        let phase = self.rows * self.width;
        (0..c.kernel[0]).flat_map(move |ky| (0..c.kernel[1]).map(move |kx| (ky, kx))).map(move |(ky, kx)| {
            let col = kx * c.dilation[1];
            let offset = (col % self.count) * phase + ky * c.dilation[0] * self.width + col / self.count;
            (offset, *w.add(ky * c.kernel[1] + kx))
        })
    }
}

/// Every output row of one plane, in chunks of up to `MAX_VECTORS` vectors.
unsafe fn plane_rows(c: &Conv2d, layout: &Phases, padded: &[f32], taps: &[(usize, f32)], bias: f32, out: *mut f32) {
    let wo = c.output[1];
    let avx512 = has_avx512();
    let lanes = if avx512 { LANES } else { LANES / 2 };
    for y in 0..c.output[0] {
        let row = padded.as_ptr().add(y * c.stride[0] * layout.width);
        for x0 in (0..wo).step_by(MAX_VECTORS * lanes) {
            let n = (wo - x0).min(MAX_VECTORS * lanes);
            let (src, dst) = (row.add(x0), out.add(y * wo + x0));
            macro_rules! call {
                ($nv:literal) => {
                    if avx512 { row_chunk::<$nv>(src, taps, bias, dst, n) } else { row_chunk_avx2::<$nv>(src, taps, bias, dst, n) }
                };
            }
            match n.div_ceil(lanes) {
                1 => call!(1),
                2 => call!(2),
                3 => call!(3),
                _ => call!(4),
            }
        }
    }
}

/// `dst[0..n] = bias + Σ_taps weight · src[offset..offset + n]`, `NV` vectors in registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::needless_range_loop)]
unsafe fn row_chunk<const NV: usize>(src: *const f32, taps: &[(usize, f32)], bias: f32, dst: *mut f32, n: usize) {
    use std::arch::x86_64::*;
    let mut acc = [_mm512_set1_ps(bias); NV];
    for &(offset, weight) in taps {
        let (p, wv) = (src.add(offset), _mm512_set1_ps(weight));
        for v in 0..NV {
            acc[v] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(p.add(v * LANES)), acc[v]);
        }
    }
    for v in 0..NV {
        _mm512_mask_storeu_ps(dst.add(v * LANES), lanes(n - v * LANES), acc[v]);
    }
}

/// `row_chunk` with AVX2 vectors of 8.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::needless_range_loop)]
unsafe fn row_chunk_avx2<const NV: usize>(src: *const f32, taps: &[(usize, f32)], bias: f32, dst: *mut f32, n: usize) {
    use std::arch::x86_64::*;
    const L: usize = LANES / 2;
    let mut acc = [_mm256_set1_ps(bias); NV];
    for &(offset, weight) in taps {
        let (p, wv) = (src.add(offset), _mm256_set1_ps(weight));
        for v in 0..NV {
            acc[v] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(p.add(v * L)), acc[v]);
        }
    }
    for v in 0..NV {
        let live: [i32; L] = std::array::from_fn(|j| if v * L + j < n { -1 } else { 0 });
        _mm256_maskstore_ps(dst.add(v * L), _mm256_loadu_si256(live.as_ptr() as *const __m256i), acc[v]);
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn row_chunk<const NV: usize>(_: *const f32, _: &[(usize, f32)], _: f32, _: *mut f32, _: usize) {
    unreachable!("applies() needs AVX-512 or AVX2")
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn row_chunk_avx2<const NV: usize>(_: *const f32, _: &[(usize, f32)], _: f32, _: *mut f32, _: usize) {
    unreachable!("applies() needs AVX-512 or AVX2")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, in float64, for `[batch, groups, h, w]` input.
    fn reference(c: &Conv2d, batch: usize, x: &[f32], w: &[f32], bias: &[f32]) -> Vec<f64> {
        let (planes, [ho, wo]) = (c.groups * c.out_channels, c.output);
        let mut out = vec![0f64; batch * planes * ho * wo];
        for n in 0..batch {
            for o in 0..planes {
                let src = &x[(n * c.groups + o / c.out_channels) * c.input[0] * c.input[1]..];
                for (y, xo) in (0..ho).flat_map(|y| (0..wo).map(move |xo| (y, xo))) {
                    let mut s = bias[o] as f64;
                    for (ky, kx) in (0..c.kernel[0]).flat_map(|ky| (0..c.kernel[1]).map(move |kx| (ky, kx))) {
                        let iy = (y * c.stride[0] + ky * c.dilation[0]) as isize - c.pad[0] as isize;
                        let ix = (xo * c.stride[1] + kx * c.dilation[1]) as isize - c.pad[1] as isize;
                        if iy >= 0 && ix >= 0 && (iy as usize) < c.input[0] && (ix as usize) < c.input[1] {
                            s += src[iy as usize * c.input[1] + ix as usize] as f64 * w[(o * c.kernel[0] + ky) * c.kernel[1] + kx] as f64;
                        }
                    }
                    out[((n * planes + o) * ho + y) * wo + xo] = s;
                }
            }
        }
        out
    }

    /// Odd sizes, rows wider than the registers hold, strides, asymmetric kernels, padding wider
    /// than the kernel reach, dilation and channel multipliers, against the definition.
    #[test]
    fn matches_the_definition() {
        if !(has_avx512() || has_avx2()) {
            return;
        }
        // (groups, multiplier, input, kernel, stride, pad, dilation)
        let cases = [
            (3, 1, [7, 9], [3, 3], [1, 1], [1, 1], [1, 1]),
            (5, 1, [13, 70], [5, 5], [2, 2], [2, 2], [1, 1]),
            (4, 2, [11, 17], [3, 5], [2, 1], [0, 3], [1, 1]),
            (2, 1, [9, 130], [3, 3], [1, 3], [2, 2], [2, 2]),
            (3, 3, [6, 6], [1, 1], [1, 1], [0, 0], [1, 1]),
            (2, 1, [1, 40], [1, 7], [1, 1], [0, 3], [1, 2]),
        ];
        for (groups, out_channels, input, kernel, stride, pad, dilation) in cases {
            let output = std::array::from_fn(|d| (input[d] + 2 * pad[d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1);
            let c = Conv2d { channels: 1, out_channels, groups, input, output, kernel, stride, pad, dilation };
            let batch = 2;
            let x: Vec<f32> = (0..batch * groups * input[0] * input[1]).map(|i| ((i * 7919) % 97) as f32 / 13.0 - 3.5).collect();
            let w: Vec<f32> = (0..groups * out_channels * kernel[0] * kernel[1]).map(|i| ((i * 104729) % 89) as f32 / 11.0 - 4.0).collect();
            let bias: Vec<f32> = (0..groups * out_channels).map(|i| i as f32 / 7.0 - 1.0).collect();
            let mut out = vec![f32::NAN; batch * groups * out_channels * output[0] * output[1]];
            unsafe { conv2d(&c, batch, x.as_ptr(), w.as_ptr(), Some(bias.as_ptr()), out.as_mut_ptr()) };
            for (i, (&got, want)) in out.iter().zip(reference(&c, batch, &x, &w, &bias)).enumerate() {
                assert!((got as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()), "{c:?} output {i}: {got} != {want}");
            }
            let zero = vec![0f32; bias.len()];
            unsafe { conv2d(&c, batch, x.as_ptr(), w.as_ptr(), None, out.as_mut_ptr()) };
            for (&got, want) in out.iter().zip(reference(&c, batch, &x, &w, &zero)) {
                assert!((got as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()), "{c:?} without bias: {got} != {want}");
            }
        }
    }
}
