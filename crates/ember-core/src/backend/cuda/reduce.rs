//! Reductions over any dims, and max/min along a dim with the index of the first extreme
//! (`kernels/reduce.cu`; `ops::reduce` holds their semantics). The input is seen as
//! `[outputs, count]`, its kept dims by its reduced ones, each a view the kernels index through
//! `Strided`. A contiguous run of reduced elements goes to `rows` (a warp or a block per output,
//! reading along the run); anything else to `cols` (a thread per output, neighbouring outputs
//! read together). Too few outputs to fill the device split their runs over more blocks, whose
//! partial results a second kernel folds in order: deterministic, no atomics.
use super::device::{cuda_error, dtype_name, Cuda, DTYPES};
use super::strided::Strided;
use super::Family;
use crate::backend::unsupported;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::reduce::ReduceOp::{self, *};
use crate::tensor::Tensor;
use cudarc::driver::{sys, DevicePtr, LaunchConfig, PushKernelArg};

pub const FAMILY: Family = Family { name: "reduce", source: include_str!("kernels/reduce.cu"), kernel_names };

/// reduce.cu's name for `op` on `dtype`, if it has the kernels.
fn op_name(op: ReduceOp, dtype: DType) -> Option<&'static str> {
    Some(match op {
        Sum => "sum",
        Prod => "prod",
        Mean if dtype.is_float() => "mean",
        Mean => return None,
        Amax => "amax",
        Amin => "amin",
        All => "all",
        Any => "any",
        CountNonzero => "count_nonzero",
    })
}

/// The dtype of `op`'s result on `dtype`, as `ops::reduce` allocates it.
fn result_dtype(op: ReduceOp, dtype: DType) -> DType {
    match op {
        Sum | Prod if !dtype.is_float() => DType::I64,
        All | Any if dtype == DType::U8 => DType::U8,
        All | Any => DType::Bool,
        CountNonzero => DType::I64,
        _ => dtype,
    }
}

const OPS: [ReduceOp; 8] = [Sum, Prod, Mean, Amax, Amin, All, Any, CountNonzero];

fn kernel_names() -> Vec<String> {
    let folds = OPS.iter().flat_map(|&op| DTYPES.iter().filter_map(move |&d| Some(format!("{}_{}", op_name(op, d)?, dtype_name(d)?))));
    let args = DTYPES.iter().flat_map(|&d| ["argmax", "argmin"].map(|a| format!("{a}_{}", dtype_name(d).unwrap())));
    folds.chain(args).flat_map(|k| ["rows", "cols", "final"].map(|shape| format!("reduce_{shape}_{k}"))).collect()
}

pub fn reduce(cuda: &Cuda, op: ReduceOp, x: &Tensor, mask: &[bool], out: &Tensor) -> Result<()> {
    let dtype = x.dtype();
    let found = dtype_name(dtype).and_then(|d| Some((op_name(op, dtype)?, d)));
    let Some((name, d)) = found else {
        return unsupported(&format!("{op:?}"), "CUDA", dtype);
    };
    if out.dtype() != result_dtype(op, dtype) {
        return unsupported(&format!("{op:?}"), "CUDA", out.dtype());
    }
    Reduction::new(x, mask).run(cuda, &format!("{name}_{d}"), out, None)
}

pub fn arg_reduce(cuda: &Cuda, x: &Tensor, dim: usize, max: bool, values: &Tensor, indices: &Tensor) -> Result<()> {
    let Some(d) = dtype_name(x.dtype()) else {
        return unsupported(if max { "max.dim" } else { "min.dim" }, "CUDA", x.dtype());
    };
    let mask: Vec<bool> = (0..x.ndim()).map(|i| i == dim).collect();
    Reduction::new(x, &mask).run(cuda, &format!("{}_{d}", if max { "argmax" } else { "argmin" }), values, Some(indices))
}

/// Threads per block of every reduction kernel.
const THREADS: usize = 256;
/// The most chunks an output's run is split into (the final kernel's warp folds them).
const MAX_SPLITS: usize = 1024;
/// The fewest elements each thread folds in a split: fewer would cost more in partials.
const PER_THREAD: usize = 16;
/// The bytes of the largest accumulator (a value and an index).
const MAX_ACCUMULATOR: usize = 16;

/// `x` as `[outputs, count]`: views of its kept dims (at its offset) and of its reduced ones
/// (at offset 0), whose element addresses add up to the element's.
struct Reduction<'a> {
    x: &'a Tensor,
    kept: Tensor,
    red: Tensor,
}

impl<'a> Reduction<'a> {
    fn new(x: &'a Tensor, mask: &[bool]) -> Reduction<'a> {
        let dims = |reduced: bool| -> (Vec<usize>, Vec<isize>) {
            (0..x.ndim()).filter(|&d| mask[d] == reduced).map(|d| (x.shape()[d], x.strides()[d])).unzip()
        };
        let ((kept_shape, kept_strides), (red_shape, red_strides)) = (dims(false), dims(true));
        Reduction {
            x,
            kept: x.with_layout(Layout::new(kept_shape, kept_strides, x.layout().offset())),
            red: x.with_layout(Layout::new(red_shape, red_strides, 0)),
        }
    }

    /// Runs the kernels `reduce_<shape>_<kernel>` into `out` (and `indices`, for arg reductions).
    fn run(&self, cuda: &Cuda, kernel: &str, out: &Tensor, indices: Option<&Tensor>) -> Result<()> {
        let (outputs, count) = (self.kept.numel(), self.red.numel());
        if outputs == 0 {
            return Ok(());
        }
        // A warp per output needs runs of a warp's width at least to keep its lanes busy.
        let along_runs = self.red.is_contiguous() && count >= 32;
        let plan = if along_runs { Plan::rows(cuda, outputs, count) } else { Plan::cols(cuda, outputs, count) };
        let partial = match plan.splits {
            1 => None,
            s => Some(unsafe { cuda.stream().alloc::<u8>(outputs * s * MAX_ACCUMULATOR) }.map_err(|e| cuda_error("cuMemAllocAsync", e))?),
        };
        let partial_ptr: sys::CUdeviceptr = partial.as_ref().map_or(0, |p| p.device_ptr(cuda.stream()).0);
        let (px, kept, red) = (cuda.base(self.x)?, Strided::of(&self.kept)?, Strided::of(&self.red)?);
        let (po, lo) = (cuda.base(out)?, Strided::of(out)?);
        let (pi, li) = match indices {
            Some(i) => (cuda.base(i)?, Strided::of(i)?),
            None => (0, lo),
        };
        let (n_out, n_red, splits, chunk) = (outputs as i64, count as i64, plan.splits as i64, plan.chunk as i64);
        let shape = if along_runs { "rows" } else { "cols" };
        let f = cuda.function(&FAMILY, &format!("reduce_{shape}_{kernel}"))?;
        let mut launch = cuda.stream().launch_builder(&f);
        launch.arg(&px).arg(&kept).arg(&red).arg(&n_out).arg(&n_red).arg(&splits).arg(&chunk).arg(&plan.group);
        launch.arg(&partial_ptr).arg(&po).arg(&lo).arg(&pi).arg(&li);
        unsafe { launch.launch(plan.config) }.map_err(|e| cuda_error("cuLaunchKernel(reduce)", e))?;
        if partial.is_none() {
            return Ok(());
        }
        let f = cuda.function(&FAMILY, &format!("reduce_final_{kernel}"))?;
        let mut launch = cuda.stream().launch_builder(&f);
        launch.arg(&partial_ptr).arg(&n_out).arg(&splits).arg(&n_red).arg(&po).arg(&lo).arg(&pi).arg(&li);
        let warps_per_block = THREADS / 32;
        let blocks = outputs.div_ceil(warps_per_block).min(cuda.max_blocks()) as u32;
        let config = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (THREADS as u32, 1, 1), shared_mem_bytes: 0 };
        // `partial` is freed in stream order, after the kernel that reads it.
        unsafe { launch.launch(config) }.map_err(|e| cuda_error("cuLaunchKernel(reduce_final)", e))?;
        Ok(())
    }
}

/// How the first kernel covers the outputs: its launch, the threads per output of `rows`, and
/// each output's run cut into `splits` chunks of `chunk` elements.
struct Plan {
    config: LaunchConfig,
    group: i32,
    splits: usize,
    chunk: usize,
}

impl Plan {
    /// A warp per output for runs up to 2048 elements, a block per output beyond.
    fn rows(cuda: &Cuda, outputs: usize, count: usize) -> Plan {
        let group = if count <= 2048 { 32 } else { THREADS };
        let (splits, chunk) = split(cuda.resident_threads(), count, outputs * group, group);
        let items = outputs * splits;
        let blocks = items.div_ceil(THREADS / group).min(cuda.max_blocks()) as u32;
        let config = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (THREADS as u32, 1, 1), shared_mem_bytes: 0 };
        Plan { config, group: group as i32, splits, chunk }
    }

    /// A thread per output along x (a warp's width at least), the rest of the block's threads
    /// along y sharing each output's run.
    fn cols(cuda: &Cuda, outputs: usize, count: usize) -> Plan {
        let width = outputs.next_multiple_of(32).min(THREADS);
        let depth = THREADS / width;
        let (splits, chunk) = split(cuda.resident_threads(), count, outputs * depth, depth);
        let blocks = outputs.div_ceil(width).min(cuda.max_blocks()) as u32;
        let config = LaunchConfig { grid_dim: (blocks, splits as u32, 1), block_dim: (width as u32, depth as u32, 1), shared_mem_bytes: 0 };
        Plan { config, group: 0, splits, chunk }
    }
}

/// (splits, chunk) for runs of `count` elements that `busy` threads fold, `lanes` threads per
/// output: enough splits to give the device's `resident` threads work, each lane still folding
/// `PER_THREAD` elements or more. An empty run is one split of nothing.
fn split(resident: usize, count: usize, busy: usize, lanes: usize) -> (usize, usize) {
    let wanted = resident.div_ceil(busy.max(1));
    let most = count / (lanes * PER_THREAD);
    let splits = wanted.min(most).clamp(1, MAX_SPLITS);
    let chunk = count.div_ceil(splits);
    if chunk == 0 {
        return (1, 0);
    }
    (count.div_ceil(chunk), chunk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_cover_every_run_in_non_empty_chunks() {
        let resident = 132 * 2048;
        for (count, busy, lanes) in [(0, 32, 32), (31, 8, 8), (3_000_001, 256, 256), (1 << 31, 512, 256), (1_000_003, 24, 8), (100, 32, 32)] {
            let (splits, chunk) = split(resident, count, busy, lanes);
            assert!((1..=MAX_SPLITS).contains(&splits), "{count}: {splits}");
            assert!(splits * chunk >= count && (splits - 1) * chunk < count.max(1), "{count}: {splits} x {chunk}");
        }
        // Enough outputs to fill the device: no split.
        assert_eq!(split(resident, 8192, 8192 * 256, 256).0, 1);
        // One output of 3M elements: many splits of 4096 elements at least (16 per thread).
        let (splits, chunk) = split(resident, 3_000_001, 256, 256);
        assert!(splits > 100 && chunk >= 256 * PER_THREAD);
    }

    #[test]
    fn result_dtypes_follow_the_ops() {
        assert_eq!(result_dtype(Sum, DType::Bool), DType::I64);
        assert_eq!(result_dtype(Sum, DType::F16), DType::F16);
        assert_eq!(result_dtype(Any, DType::U8), DType::U8);
        assert_eq!(result_dtype(All, DType::F32), DType::Bool);
        assert_eq!(result_dtype(Amax, DType::I8), DType::I8);
        assert_eq!(op_name(Mean, DType::I32), None);
    }
}
