//! The weight gradient of a convolution in one pass: per image, the input's sliding windows
//! (im2col, a tile of output rows at a time, in a reused buffer) are multiplied by the output
//! gradient and accumulated over the batch. Threads take whole images into private partial sums,
//! added up in a fixed order so the result does not depend on scheduling.
use std::ops::{AddAssign, Range};
use std::sync::Mutex;

use super::{compute_dtype, gemm, im2col_split, COLUMN_BUDGET};
use crate::ops::conv::Geom;
use crate::backend::cpu::map::Ptr;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::parallel::{for_range, pool};
use crate::tensor::Tensor;

/// `Backend::conv_weight_grad` on host memory.
pub fn weight_grad(x: &Tensor, g: &Tensor, groups: usize, geom: &Geom) -> Result<Tensor> {
    let c = compute_dtype(x.dtype());
    let (xc, gc) = (x.to_dtype(c)?.contiguous()?, g.to_dtype(c)?.contiguous()?);
    let mut shape = vec![g.shape()[1], x.shape()[1] / groups];
    shape.extend(&geom.kernel[3 - (x.ndim() - 2)..]);
    let out = Tensor::zeros(&shape, c)?;
    if c == DType::F64 {
        accumulate::<f64>(&xc, &gc, geom, groups, &out);
    } else {
        accumulate::<f32>(&xc, &gc, geom, groups, &out);
    }
    Ok(out.to_dtype(x.dtype())?)
}

/// The operands of one weight gradient, as raw pointers shared by the threads.
struct Job<'a, T> {
    x: Ptr<T>,
    g: Ptr<T>,
    geom: &'a Geom,
    groups: usize,
    /// Input channels per group.
    cig: usize,
    /// Output channels per group.
    cog: usize,
    /// Output rows per im2col tile.
    rows_per_tile: usize,
}

fn accumulate<T: Element + AddAssign>(x: &Tensor, g: &Tensor, geom: &Geom, groups: usize, out: &Tensor) {
    let (batch, cig, cog) = (x.shape()[0], x.shape()[1] / groups, g.shape()[1] / groups);
    let k = cig * geom.kernel_volume();
    let rows_per_tile = (COLUMN_BUDGET / (k * geom.output[2]).max(1)).clamp(1, geom.output_rows().max(1));
    let job = Job { x: Ptr(x.data_ptr::<T>()), g: Ptr(g.data_ptr::<T>()), geom, groups, cig, cog, rows_per_tile };
    let threads = pool().current_num_threads();
    if batch < 2 || threads == 1 {
        return unsafe { job.images(0..batch, out.data_ptr::<T>(), threads) };
    }
    let partials = Mutex::new(Vec::new());
    for_range(batch, batch.div_ceil(threads), |s, e| {
        let mut partial = vec![T::zero(); out.numel()];
        unsafe { job.images(s..e, partial.as_mut_ptr(), 1) };
        partials.lock().unwrap().push((s, partial));
    });
    let mut partials = partials.into_inner().unwrap();
    partials.sort_by_key(|&(s, _)| s);
    let dst = unsafe { std::slice::from_raw_parts_mut(out.data_ptr::<T>(), out.numel()) };
    for (_, partial) in partials {
        dst.iter_mut().zip(partial).for_each(|(d, p)| *d += p);
    }
}

impl<T: Element> Job<'_, T> {
    /// Adds the gradient contributions of `images` onto `dst` (`[Cout, Cin/groups·kernel]`).
    unsafe fn images(&self, images: Range<usize>, dst: *mut T, threads: usize) {
        let g = self.geom;
        let (k, l) = (self.cig * g.kernel_volume(), g.output_volume());
        let mut cols = Vec::new();
        for n in images {
            for grp in 0..self.groups {
                let ng = n * self.groups + grp;
                let src = self.x.at((ng * self.cig * g.input_volume()) as isize);
                let grad = self.g.at((ng * self.cog * l) as isize);
                for start in (0..g.output_rows()).step_by(self.rows_per_tile) {
                    let rows = start..(start + self.rows_per_tile).min(g.output_rows());
                    let (col0, ncols) = (rows.start * g.output[2], rows.len() * g.output[2]);
                    cols.resize(k * ncols, T::zero());
                    im2col_split(src, g, self.cig, rows, (cols.as_mut_ptr(), ncols), threads);
                    // dst[grp]ᵀ (k × cog) += cols (k × ncols) · gradᵀ (ncols × cog): the long side
                    // (k) as GEMM rows, which the micro-kernel tiles best.
                    let d = dst.add(grp * self.cog * k);
                    gemm((k, self.cog, ncols), d, (1, k as isize), cols.as_ptr(), (ncols as isize, 1), grad.add(col0), (1, l as isize), true, threads);
                }
            }
        }
    }
}
