//! Direct float32 convolution of channels-last memory on AVX-512: an implicit GEMM that never
//! gathers windows (the im2col path writes and reads `kh·kw` times the input).
//!
//! The input is copied once into a zero-padded `[N, Hp, Wp, C]` buffer (skipped when nothing
//! is padded), so each tap of each output position reads `C` contiguous channels in bounds. The
//! micro-kernel holds up to `MR` consecutive positions of one output row × `NR` output channels
//! in registers and, per tap and input channel, broadcasts each position's input value against
//! `NR` weights packed `[panel][tap][C][NR]`. A task owns a group of panels whose weights fit
//! in L2 × a run of output rows (see `blocking`).
use super::conv::Geom2;
use crate::backend::cpu::map::{has_avx512, Ptr};
use crate::parallel::{for_each_with, for_range, num_threads};

/// Positions of one output row per micro-kernel call.
const MR: usize = 14;
/// Output channels per panel (two zmm of float32).
const NR: usize = 32;
/// Bytes of packed weights and of input rows a task keeps in L2 (1 MiB a core on Zen 4 and 5).
const WEIGHTS_IN_L2: usize = 640 << 10;
const INPUTS_IN_L2: usize = 256 << 10;

/// Whether the direct kernel runs this conv: float32 on AVX-512 without groups, with enough
/// channels that a tap's loop is worth its setup (a 1x1 stride-1 conv is a plain GEMM already)
/// and output rows at least a tile wide: a narrower row leaves accumulators idle. `conv::small`,
/// the same micro-kernel over NCHW-ordered padded planes, takes the narrow-image convs it
/// prefers before the NHWC path is asked (it pairs rows up to 7 wide); copying a large NHWC
/// image into its planes is a transpose, which is why wide rows come here.
pub(super) fn applies(g: &Geom2, channels: usize, out_channels: usize, groups: usize) -> bool {
    let pointwise = g.kernel == [1, 1] && g.stride == [1, 1] && g.pad == [0, 0];
    groups == 1 && !pointwise && channels >= 16 && out_channels >= 16 && g.output[1] >= MR && has_avx512()
}

/// `out [N, Ho, Wo, K] = bias + x [N, H, W, C] ⋆ w [K, kh, kw, C]`, all contiguous.
///
/// # Safety
/// The pointers hold those shapes; only call when `applies`.
pub(super) unsafe fn conv2d(g: &Geom2, [n, c, k]: [usize; 3], x: *const f32, w: *const f32, bias: Option<*const f32>, out: *mut f32) {
    let input = Padded::new(g, n, c, x);
    let panels = k.div_ceil(NR);
    let weights = pack_weights(w, k, g.kernel[0] * g.kernel[1], c);
    let biases: Vec<f32> = (0..panels * NR).map(|j| bias.filter(|_| j < k).map_or(0.0, |b| *b.add(j))).collect();
    let taps: Vec<usize> = (0..g.kernel[0] * g.kernel[1])
        .map(|t| ((t / g.kernel[1]) * g.dilation[0] * input.width + (t % g.kernel[1]) * g.dilation[1]) * c)
        .collect();
    let rows = n * g.output[0];
    let (per_group, per_chunk) = blocking(g, &input, rows, panels);
    let (groups, chunks) = (panels.div_ceil(per_group), rows.div_ceil(per_chunk));
    let (wp, bp, op) = (Ptr(weights.as_ptr() as *mut f32), Ptr(biases.as_ptr() as *mut f32), Ptr(out));
    for_each_with(groups * chunks, || (), |_, t| {
        let (group, chunk) = (t / chunks, t % chunks);
        for panel in group * per_group..panels.min((group + 1) * per_group) {
            let panel_w = wp.at((panel * taps.len() * c * NR) as isize);
            let lanes = NR.min(k - panel * NR);
            for row in chunk * per_chunk..rows.min((chunk + 1) * per_chunk) {
                let (image, y) = (row / g.output[0], row % g.output[0]);
                let line = input.row(image, y * g.stride[0]);
                let dst = op.at(((row * g.output[1]) * k + panel * NR) as isize);
                for x0 in (0..g.output[1]).step_by(MR) {
                    let tile = Tile {
                        a: line.add(x0 * g.stride[1] * c),
                        step: g.stride[1] * c,
                        taps: &taps,
                        channels: c,
                        b: panel_w,
                        bias: bp.at((panel * NR) as isize),
                        out: dst.add(x0 * k),
                        out_step: k,
                        lanes,
                    };
                    tile.run(MR.min(g.output[1] - x0));
                }
            }
        }
    });
}

/// (panels per task, output rows per task). A task sweeps its rows once per panel, so its
/// panels' weights and its rows' inputs should share L2: then each input row comes from memory
/// once per group of panels, not once per panel (a 3x3/2 conv at 56 wide streamed its 14 MB
/// input four times). Rows are then cut for at least 8 tasks per thread.
fn blocking(g: &Geom2, input: &Padded, rows: usize, panels: usize) -> (usize, usize) {
    let panel_bytes = 4 * g.kernel[0] * g.kernel[1] * input.channels * NR;
    let per_group = (WEIGHTS_IN_L2 / panel_bytes).clamp(1, panels);
    let row_bytes = 4 * input.width * input.channels;
    let reach = (g.kernel[0] - 1) * g.dilation[0] + 1;
    let fitting = (INPUTS_IN_L2 / row_bytes).saturating_sub(reach) / g.stride[0] + 1;
    let wanted = (8 * num_threads()).div_ceil(panels.div_ceil(per_group));
    (per_group, fitting.min(rows.div_ceil(wanted)).max(1))
}

/// The input as the kernel reads it: zero-padded so every tap is in bounds, or the caller's
/// own memory when nothing needs padding.
struct Padded {
    /// Owns the padded copy `base` points into, if there is one.
    _copy: Vec<f32>,
    base: Ptr<f32>,
    /// Padded rows and columns per image, and channels.
    height: usize,
    width: usize,
    channels: usize,
}

impl Padded {
    unsafe fn new(g: &Geom2, n: usize, c: usize, x: *const f32) -> Padded {
        let needed = |d: usize| (g.output[d] - 1) * g.stride[d] + (g.kernel[d] - 1) * g.dilation[d] + 1;
        let [height, width] = [needed(0), needed(1)];
        if g.pad == [0, 0] && height <= g.input[0] && width <= g.input[1] {
            return Padded { _copy: Vec::new(), base: Ptr(x as *mut f32), height: g.input[0], width: g.input[1], channels: c };
        }
        // Every element is written once below, by the thread that reads it first: zeroing the
        // whole buffer up front cost as much as the copy.
        let mut copy = Vec::with_capacity(n * height * width * c);
        let dst = Ptr(copy.as_mut_ptr());
        let src = Ptr(x as *mut f32);
        let [ph, pw] = g.pad;
        // Columns of a padded row that come from the input.
        let (x_lo, x_hi) = (pw.min(width), (pw + g.input[1]).min(width));
        for_range(n * height, 1, |s, e| {
            for r in s..e {
                let row = std::slice::from_raw_parts_mut(dst.at((r * width * c) as isize), width * c);
                let (image, yp) = (r / height, r % height);
                let Some(iy) = yp.checked_sub(ph).filter(|&iy| iy < g.input[0]) else {
                    row.fill(0.0);
                    continue;
                };
                let from = src.at((((image * g.input[0] + iy) * g.input[1]) * c) as isize);
                row[..x_lo * c].fill(0.0);
                row[x_lo * c..x_hi * c].copy_from_slice(std::slice::from_raw_parts(from, (x_hi - x_lo) * c));
                row[x_hi * c..].fill(0.0);
            }
        });
        copy.set_len(n * height * width * c);
        let base = Ptr(copy.as_mut_ptr());
        Padded { _copy: copy, base, height, width, channels: c }
    }

    /// The first element of padded row `y` of `image`.
    fn row(&self, image: usize, y: usize) -> *const f32 {
        self.base.at((((image * self.height + y) * self.width) * self.channels) as isize)
    }
}

/// `w [K, taps, C]` as panels `[K/NR][taps][C][NR]`, zero past the last output channel.
unsafe fn pack_weights(w: *const f32, k: usize, taps: usize, c: usize) -> Vec<f32> {
    let panels = k.div_ceil(NR);
    let mut packed = vec![0f32; panels * taps * c * NR];
    let (src, dst) = (Ptr(w as *mut f32), Ptr(packed.as_mut_ptr()));
    for_range(panels, 1, |s, e| {
        for p in s..e {
            for j in 0..NR.min(k - p * NR) {
                let from = src.at(((p * NR + j) * taps * c) as isize);
                let to = dst.at((p * taps * c * NR + j) as isize);
                for i in 0..taps * c {
                    *to.add(i * NR) = *from.add(i);
                }
            }
        }
    });
    packed
}

/// One micro-kernel call: `rows` consecutive positions of an output row × one panel.
struct Tile<'a> {
    /// Tap 0's input for the first position; position `r` reads `step·r` further.
    a: *const f32,
    step: usize,
    /// Each tap's offset from `a`.
    taps: &'a [usize],
    channels: usize,
    /// The panel's packed weights `[tap][C][NR]`, and its `NR` biases.
    b: *const f32,
    bias: *const f32,
    /// The first position's output for the panel's first channel; positions `out_step` apart.
    out: *mut f32,
    out_step: usize,
    /// The panel's real output channels (`NR` but in a last, narrower panel).
    lanes: usize,
}

impl Tile<'_> {
    unsafe fn run(&self, rows: usize) {
        macro_rules! rows {
            ($($r:literal)*) => {
                match rows {
                    $($r => self.kernel::<$r>(),)*
                    _ => unreachable!("a tile has 1 to {MR} positions"),
                }
            };
        }
        rows!(1 2 3 4 5 6 7 8 9 10 11 12 13 14)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn kernel<const R: usize>(&self) {
        use std::arch::x86_64::*;
        let bias = [_mm512_loadu_ps(self.bias), _mm512_loadu_ps(self.bias.add(16))];
        let mut acc = [bias; R];
        for (t, &offset) in self.taps.iter().enumerate() {
            let a = self.a.add(offset);
            let b = self.b.add(t * self.channels * NR);
            for ci in 0..self.channels {
                let b0 = _mm512_loadu_ps(b.add(ci * NR));
                let b1 = _mm512_loadu_ps(b.add(ci * NR + 16));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let v = _mm512_set1_ps(*a.add(r * self.step + ci));
                    acc[0] = _mm512_fmadd_ps(v, b0, acc[0]);
                    acc[1] = _mm512_fmadd_ps(v, b1, acc[1]);
                }
            }
        }
        let mask = if self.lanes >= NR { u32::MAX } else { (1u32 << self.lanes) - 1 };
        for (r, acc) in acc.iter().enumerate() {
            let out = self.out.add(r * self.out_step);
            _mm512_mask_storeu_ps(out, mask as u16, acc[0]);
            _mm512_mask_storeu_ps(out.add(16), (mask >> 16) as u16, acc[1]);
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    unsafe fn kernel<const R: usize>(&self) {
        unreachable!("the direct NHWC kernel runs only where `applies`")
    }
}
