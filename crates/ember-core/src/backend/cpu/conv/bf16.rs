//! bfloat16 convolution on the `vdpbf16ps` GEMM (`half::gemm`): the operands stay bfloat16 (the
//! im2col columns are half the bytes of float32 ones), products are summed in float32, the bias
//! is added to the float32 sums and each output is rounded once, as PyTorch's oneDNN kernels do.
//! Channels-first: `out[n, group] = W[group] · columns`, several small images side by side in one
//! GEMM so it is wide enough for the micro-kernel; a 1x1 stride-1 conv of one image multiplies
//! the input itself. The channels-last twin is in `nhwc/conv.rs`. Only where
//! `half::gemm::available()`; elsewhere bf16 convs compute in float32.
use super::im2col_split;
use crate::ops::conv::Geom;
use crate::backend::cpu::half::gemm::{self as bgemm, Mat, MatMut};
use crate::backend::cpu::half::Half;
use crate::backend::cpu::map::Ptr;
use crate::dtype::DType;
use crate::parallel::{for_range, pool, GRAIN};
use crate::tensor::Tensor;
use half::bf16;

/// Elements of bf16 columns per GEMM: big enough to amortise packing the weight, small enough
/// that columns and float32 sums stay within the outer caches.
const COLUMN_BUDGET: usize = 1 << 21;

/// Columns per GEMM worth gathering images for: narrower products waste micro-kernel panels.
const WIDE: usize = 1024;

/// Whether a (non-transposed) conv of `dtype` with `per_group` input channels per group runs on
/// the bf16 GEMM: bfloat16 operands on a CPU with AVX512-BF16, except depthwise-like convs (one
/// input channel per group), which have no reduction worth a GEMM.
pub(crate) fn applies(dtype: DType, per_group: usize) -> bool {
    dtype == DType::BF16 && per_group > 1 && bgemm::available()
}

/// One GEMM's share of the output: output rows `rows` of each image in `images`.
struct Block {
    images: std::ops::Range<usize>,
    rows: std::ops::Range<usize>,
}

/// conv of a contiguous bf16 `x [N, C, *spatial]` with a contiguous `w [K, C/groups, *kernel]`
/// and an optional bf16 `bias [K]` into the contiguous bf16 `out [N, K, *output]`.
pub(crate) fn conv(x: &Tensor, w: &Tensor, bias: Option<&Tensor>, groups: usize, g: &Geom, out: &Tensor) {
    let (batch, cin) = (x.shape()[0], x.shape()[1] / groups);
    let cout = w.shape()[0] / groups;
    let k = cin * g.kernel_volume();
    let bias: Option<Vec<f32>> = bias.map(|b| b.to_vec::<bf16>().expect("a contiguous bias").into_iter().map(f32::from).collect());
    let (px, pw, po) = (Ptr(x.data_ptr::<bf16>()), Ptr(w.data_ptr::<bf16>()), Ptr(out.data_ptr::<bf16>()));
    let mut cols: Vec<bf16> = Vec::new();
    let mut sums: Vec<f32> = Vec::new();
    for block in blocks(g, k, batch) {
        let width = block.images.len() * block.rows.len() * g.output[2];
        for grp in 0..groups {
            let a = Mat { ptr: Ptr(pw.at((grp * cout * k) as isize)), rs: k as isize, cs: 1 };
            let b = unsafe { columns(px, g, cin, (grp, groups), &block, &mut cols) };
            let bias = bias.as_ref().map(|b| &b[grp * cout..(grp + 1) * cout]);
            if block.images.len() == 1 {
                // One image: the GEMM writes its rows of the output, on top of the bias.
                let l = g.output_volume();
                let dst = po.at(((block.images.start * groups + grp) * cout * l + block.rows.start * g.output[2]) as isize);
                let c = MatMut { ptr: Ptr(dst), rs: l as isize, cs: 1 };
                unsafe {
                    if let Some(b) = bias {
                        fill_rows(c, width, b);
                    }
                    bgemm::gemm(cout, width, k, a, b, c, bias.is_some());
                }
            } else {
                // Images side by side: their outputs are not one strided matrix, so the sums go
                // through a float32 buffer.
                sums.resize(cout * width, 0.0);
                let c = MatMut { ptr: Ptr(sums.as_mut_ptr()), rs: width as isize, cs: 1 };
                unsafe {
                    bgemm::gemm(cout, width, k, a, b, c, false);
                    store(&mut sums, (po, cout * groups), g, grp * cout, &block, bias);
                }
            }
        }
    }
}

/// Sets row `r` of the `bias.len()` rows of `c` (each `width` long) to `bias[r]`.
unsafe fn fill_rows(c: MatMut<bf16>, width: usize, bias: &[f32]) {
    for_range(bias.len(), (GRAIN / width).max(1), |r0, r1| {
        for (r, &b) in bias.iter().enumerate().take(r1).skip(r0) {
            std::slice::from_raw_parts_mut(c.ptr.at(r as isize * c.rs), width).fill(bf16::from_f32(b));
        }
    });
}

/// Splits the output into GEMMs: tiles of output rows of one image when an image's columns
/// exceed the budget, otherwise runs of whole images (as many as make the product `WIDE`).
fn blocks(g: &Geom, k: usize, batch: usize) -> Vec<Block> {
    let (rows, l) = (g.output_rows(), g.output_volume());
    let rows_per = (COLUMN_BUDGET / (k * g.output[2]).max(1)).clamp(1, rows);
    if rows_per < rows {
        let tiles = rows.div_ceil(rows_per);
        let per = rows.div_ceil(tiles);
        return (0..batch).flat_map(|n| (0..tiles).map(move |t| Block { images: n..n + 1, rows: t * per..((t + 1) * per).min(rows) })).collect();
    }
    let per = WIDE.div_ceil(l).min((COLUMN_BUDGET / (k * l).max(1)).max(1)).min(batch);
    (0..batch.div_ceil(per)).map(|i| Block { images: i * per..((i + 1) * per).min(batch), rows: 0..rows }).collect()
}

/// The GEMM's right operand for group `grp` of `block`: the input itself for a 1x1 stride-1
/// conv of one whole image, otherwise each image's im2col columns side by side in `cols`.
unsafe fn columns(x: Ptr<bf16>, g: &Geom, cin: usize, (grp, groups): (usize, usize), block: &Block, cols: &mut Vec<bf16>) -> Mat<bf16> {
    let plane = g.input_volume();
    let image = |n: usize| x.at(((n * groups + grp) * cin * plane) as isize) as *const bf16;
    if g.is_pointwise() && block.images.len() == 1 {
        return Mat { ptr: Ptr(image(block.images.start) as *mut bf16), rs: plane as isize, cs: 1 };
    }
    let per_image = block.rows.len() * g.output[2];
    let ld = per_image * block.images.len();
    cols.resize(cin * g.kernel_volume() * ld, bf16::ZERO);
    let threads = pool().current_num_threads();
    for (i, n) in block.images.clone().enumerate() {
        im2col_split(image(n), g, cin, block.rows.clone(), (cols.as_mut_ptr().add(i * per_image), ld), threads);
    }
    Mat { ptr: Ptr(cols.as_mut_ptr()), rs: ld as isize, cs: 1 }
}

/// Adds the bias to the float32 sums (`channels × columns` of `block`) and rounds them once into
/// the output channels `first..` of each image (`out` has `total` channels per image), a range
/// of channels per thread.
unsafe fn store(sums: &mut [f32], (out, total): (Ptr<bf16>, usize), g: &Geom, first: usize, block: &Block, bias: Option<&[f32]>) {
    let l = g.output_volume();
    let per_image = block.rows.len() * g.output[2];
    let width = per_image * block.images.len();
    let col0 = block.rows.start * g.output[2];
    let ps = Ptr(sums.as_mut_ptr());
    for_range(sums.len() / width, (GRAIN / width).max(1), |r0, r1| {
        for r in r0..r1 {
            let row = std::slice::from_raw_parts_mut(ps.at((r * width) as isize), width);
            if let Some(b) = bias {
                row.iter_mut().for_each(|v| *v += b[r]);
            }
            for (i, n) in block.images.clone().enumerate() {
                let dst = out.at(((n * total + first + r) * l + col0) as isize);
                <bf16 as Half>::narrow(row.as_ptr().add(i * per_image), dst, per_image);
            }
        }
    });
}
