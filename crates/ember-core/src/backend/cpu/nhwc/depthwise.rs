//! Depthwise float32 convolution of channels-last memory on AVX-512 or AVX2 (one channel per
//! group, the channel multiplier 1), any stride, padding and dilation.
//!
//! Channels are contiguous, so a vector holds 16 (AVX2: 8) channels of one position. A task
//! computes whole output rows; up to 4 (AVX2: 2) vectors of channels × 4 consecutive positions
//! stay in registers while every tap accumulates into them, and each tap's weight vectors are
//! loaded once for the 4 positions.
//! Positions whose window crosses the left or right edge run one at a time with their in-bounds
//! taps only; rows whose window crosses the top or bottom simply skip those kernel rows.
use super::conv::Geom2;
use crate::backend::cpu::map::{has_avx2, has_avx512, lanes, Ptr};
use crate::parallel::for_range;

/// Lanes of an AVX-512 vector; AVX2 has half.
const LANES: usize = 16;
/// Most channel vectors per call with AVX-512 (32 registers); AVX2's 16 registers hold half.
const MAX_VECTORS: usize = 4;
/// Consecutive positions per call away from the left and right edges.
const BLOCK: usize = 4;

/// Whether this kernel runs a depthwise conv of geometry `g`: stride 1 on AVX-512 or AVX2 (with
/// stride 2 its four positions' loads measured slower than the generic per-position loop on an
/// AVX2 EPYC; that case keeps the generic loop until it is understood).
pub(super) fn applies(g: &Geom2) -> bool {
    g.stride == [1, 1] && (has_avx512() || has_avx2())
}

/// The operands of one call, with `c` channels.
struct Operands {
    x: Ptr<f32>,
    w: Ptr<f32>,
    bias: Option<Ptr<f32>>,
    out: Ptr<f32>,
    c: usize,
    avx512: bool,
}

/// `out [N, Ho, Wo, C] = bias + x [N, H, W, C] ⋆ w [kh·kw, C]` (one weight row per tap), all
/// contiguous.
///
/// # Safety
/// The pointers hold those shapes; only call when `applies`.
pub(super) unsafe fn conv2d(g: &Geom2, n: usize, c: usize, x: *const f32, w: *const f32, bias: Option<*const f32>, out: *mut f32) {
    let ops = Operands { x: Ptr(x as *mut f32), w: Ptr(w as *mut f32), bias: bias.map(|b| Ptr(b as *mut f32)), out: Ptr(out), c, avx512: has_avx512() };
    for_range(n * g.output[0], 1, |start, end| {
        let mut taps = Vec::with_capacity(g.kernel[0] * g.kernel[1]);
        for row in start..end {
            output_row(g, &ops, row, &mut taps);
        }
    });
}

/// The output columns whose every tap falls inside the image.
fn interior_columns(g: &Geom2) -> std::ops::Range<usize> {
    let lo = g.pad[1].div_ceil(g.stride[1]);
    let reach = g.dilation[1] * (g.kernel[1] - 1);
    let hi = if g.input[1] + g.pad[1] > reach { (g.input[1] + g.pad[1] - reach - 1) / g.stride[1] + 1 } else { 0 };
    lo..hi.min(g.output[1])
}

/// One output row `row` (of `N·Ho`): each position's (input offset, weight offset) per in-bounds
/// tap is listed in `taps`, then the channels run in chunks of up to `MAX_VECTORS` vectors.
unsafe fn output_row(g: &Geom2, ops: &Operands, row: usize, taps: &mut Vec<(usize, usize)>) {
    let (image, oy) = (row / g.output[0], row % g.output[0]);
    let (c, wo) = (ops.c, g.output[1]);
    let interior = interior_columns(g);
    let mut ox = 0;
    while ox < wo {
        let block = if interior.contains(&ox) && ox + BLOCK <= interior.end { BLOCK } else { 1 };
        taps.clear();
        for ky in 0..g.kernel[0] {
            let Some(iy) = g.source(0, oy, ky) else { continue };
            for kx in 0..g.kernel[1] {
                let Some(ix) = g.source(1, ox, kx) else { continue };
                taps.push((((image * g.input[0] + iy) * g.input[1] + ix) * c, (ky * g.kernel[1] + kx) * c));
            }
        }
        let step = g.stride[1] * c;
        let out = ops.out.at(((row * wo + ox) * c) as isize);
        let (lanes, vectors) = if ops.avx512 { (LANES, MAX_VECTORS) } else { (LANES / 2, MAX_VECTORS / 2) };
        for c0 in (0..c).step_by(vectors * lanes) {
            let n = (c - c0).min(vectors * lanes);
            let (x, w, out) = (ops.x.at(c0 as isize) as *const f32, ops.w.at(c0 as isize) as *const f32, out.add(c0));
            let bias = ops.bias.map(|b| b.at(c0 as isize) as *const f32);
            macro_rules! call {
                ($kernel:ident, $nv:literal $(, $full:literal)?) => {
                    if block == BLOCK {
                        $kernel::<$nv, BLOCK $(, $full)?>(x, step, taps, w, bias, out, c, n)
                    } else {
                        $kernel::<$nv, 1 $(, $full)?>(x, step, taps, w, bias, out, c, n)
                    }
                };
            }
            match (ops.avx512, n.div_ceil(lanes), n % lanes == 0) {
                (true, 1, _) => call!(chunk, 1),
                (true, 2, _) => call!(chunk, 2),
                (true, 3, _) => call!(chunk, 3),
                (true, _, _) => call!(chunk, 4),
                (false, 1, true) => call!(chunk_avx2, 1, true),
                (false, _, true) => call!(chunk_avx2, 2, true),
                (false, 1, false) => call!(chunk_avx2, 1, false),
                (false, _, false) => call!(chunk_avx2, 2, false),
            }
        }
        ox += block;
    }
}

/// `out[p·c + j] = bias[j] + Σ_taps x[xo + p·step + j] · w[wo + j]` for `P` positions and the
/// first `n` of `NV` vectors of channels `j`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
unsafe fn chunk<const NV: usize, const P: usize>(x: *const f32, step: usize, taps: &[(usize, usize)], w: *const f32, bias: Option<*const f32>, out: *mut f32, c: usize, n: usize) {
    use std::arch::x86_64::*;
    let mut masks = [0u16; NV];
    let mut init = [_mm512_setzero_ps(); NV];
    for v in 0..NV {
        masks[v] = lanes(n - v * LANES);
        if let Some(b) = bias {
            init[v] = _mm512_maskz_loadu_ps(masks[v], b.add(v * LANES));
        }
    }
    let mut acc = [init; P];
    for &(xo, wo) in taps {
        let mut wv = [_mm512_setzero_ps(); NV];
        for v in 0..NV {
            wv[v] = _mm512_maskz_loadu_ps(masks[v], w.add(wo + v * LANES));
        }
        for p in 0..P {
            let src = x.add(xo + p * step);
            for v in 0..NV {
                acc[p][v] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(masks[v], src.add(v * LANES)), wv[v], acc[p][v]);
            }
        }
    }
    for p in 0..P {
        for v in 0..NV {
            _mm512_mask_storeu_ps(out.add(p * c + v * LANES), masks[v], acc[p][v]);
        }
    }
}

/// `chunk` with AVX2 vectors of 8. A partial last vector takes masked loads and stores of whole
/// lanes; `FULL` chunks (every vector whole, the usual channel counts) plain ones, since AMD's
/// masked loads issue at half the rate and its masked stores are microcoded.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
unsafe fn chunk_avx2<const NV: usize, const P: usize, const FULL: bool>(x: *const f32, step: usize, taps: &[(usize, usize)], w: *const f32, bias: Option<*const f32>, out: *mut f32, c: usize, n: usize) {
    use std::arch::x86_64::*;
    const L: usize = LANES / 2;
    let mut masks = [_mm256_setzero_si256(); NV];
    for v in 0..NV {
        let live: [i32; L] = std::array::from_fn(|j| if v * L + j < n { -1 } else { 0 });
        masks[v] = _mm256_loadu_si256(live.as_ptr() as *const __m256i);
    }
    macro_rules! load {
        ($p:expr, $v:expr) => {
            if FULL { _mm256_loadu_ps($p) } else { _mm256_maskload_ps($p, masks[$v]) }
        };
    }
    let mut init = [_mm256_setzero_ps(); NV];
    if let Some(b) = bias {
        for v in 0..NV {
            init[v] = load!(b.add(v * L), v);
        }
    }
    let mut acc = [init; P];
    for &(xo, wo) in taps {
        let mut wv = [_mm256_setzero_ps(); NV];
        for v in 0..NV {
            wv[v] = load!(w.add(wo + v * L), v);
        }
        for p in 0..P {
            let src = x.add(xo + p * step);
            for v in 0..NV {
                acc[p][v] = _mm256_fmadd_ps(load!(src.add(v * L), v), wv[v], acc[p][v]);
            }
        }
    }
    for p in 0..P {
        for v in 0..NV {
            if FULL {
                _mm256_storeu_ps(out.add(p * c + v * L), acc[p][v]);
            } else {
                _mm256_maskstore_ps(out.add(p * c + v * L), masks[v], acc[p][v]);
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
unsafe fn chunk<const NV: usize, const P: usize>(_: *const f32, _: usize, _: &[(usize, usize)], _: *const f32, _: Option<*const f32>, _: *mut f32, _: usize, _: usize) {
    unreachable!("applies() needs AVX-512 or AVX2")
}

#[cfg(not(target_arch = "x86_64"))]
#[allow(clippy::too_many_arguments)]
unsafe fn chunk_avx2<const NV: usize, const P: usize, const FULL: bool>(_: *const f32, _: usize, _: &[(usize, usize)], _: *const f32, _: Option<*const f32>, _: *mut f32, _: usize, _: usize) {
    unreachable!("applies() needs AVX-512 or AVX2")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Odd channel counts (one to five vectors, partial ones), narrow and wide rows, strides,
    /// padding, dilation and asymmetric kernels, against the definition in float64.
    #[test]
    fn matches_the_definition() {
        if !(has_avx512() || has_avx2()) {
            return;
        }
        // (channels, input, kernel, stride, pad, dilation)
        let cases = [
            (5, [6, 9], [3, 3], [1, 1], [1, 1], [1, 1]),
            (72, [11, 14], [5, 5], [2, 2], [2, 2], [1, 1]),
            (33, [7, 7], [3, 3], [1, 1], [1, 1], [1, 1]),
            (80, [9, 13], [3, 5], [1, 2], [0, 2], [2, 1]),
            (16, [4, 4], [3, 3], [1, 1], [3, 3], [1, 1]),
        ];
        for (c, input, kernel, stride, pad, dilation) in cases {
            let output = std::array::from_fn(|d| (input[d] + 2 * pad[d] - dilation[d] * (kernel[d] - 1) - 1) / stride[d] + 1);
            let g = Geom2 { input, output, kernel, stride, pad, dilation };
            let n = 2;
            let x: Vec<f32> = (0..n * input[0] * input[1] * c).map(|i| ((i * 7919) % 97) as f32 / 13.0 - 3.5).collect();
            let w: Vec<f32> = (0..kernel[0] * kernel[1] * c).map(|i| ((i * 104729) % 89) as f32 / 11.0 - 4.0).collect();
            let bias: Vec<f32> = (0..c).map(|i| i as f32 / 7.0 - 1.0).collect();
            let mut out = vec![f32::NAN; n * output[0] * output[1] * c];
            unsafe { conv2d(&g, n, c, x.as_ptr(), w.as_ptr(), Some(bias.as_ptr()), out.as_mut_ptr()) };
            for (i, &got) in out.iter().enumerate() {
                let (ch, pos) = (i % c, i / c);
                let (img, oy, ox) = (pos / (output[0] * output[1]), pos / output[1] % output[0], pos % output[1]);
                let mut want = bias[ch] as f64;
                for (ky, kx) in (0..kernel[0]).flat_map(|ky| (0..kernel[1]).map(move |kx| (ky, kx))) {
                    if let (Some(iy), Some(ix)) = (g.source(0, oy, ky), g.source(1, ox, kx)) {
                        want += x[((img * input[0] + iy) * input[1] + ix) * c + ch] as f64 * w[(ky * kernel[1] + kx) * c + ch] as f64;
                    }
                }
                assert!((got as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()), "{g:?} c={c} output {i}: {got} != {want}");
            }
        }
    }
}
