//! Softmax, layer norm, and the per-row statistics and affine map that group, batch and
//! instance norm are made of (`kernels/norm.cu`; `ops::nn` holds their semantics), on the float
//! dtypes. Rows go a warp each when short, a block each when long, cached in shared memory
//! where they fit so that global memory is read once.
use super::device::{cuda_error, dtype_name, Cuda, DTYPES};
use super::Family;
use crate::backend::unsupported;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use cudarc::driver::{DevicePtr, LaunchConfig, PushKernelArg};

pub const FAMILY: Family = Family { name: "norm", source: include_str!("kernels/norm.cu"), kernel_names };

const KERNELS: [&str; 5] = ["softmax_rows", "softmax_cols", "layer_norm", "row_moments", "affine_rows"];

fn kernel_names() -> Vec<String> {
    DTYPES.iter().filter_map(|&d| float_name(d)).flat_map(|d| KERNELS.map(|k| format!("{k}_{d}"))).collect()
}

/// The name of a float dtype the kernels take.
fn float_name(dtype: DType) -> Option<&'static str> {
    dtype_name(dtype).filter(|_| dtype.is_float())
}

/// The dtype the kernels compute in: float32 for the half types, as the CPU's.
fn compute_dtype(dtype: DType) -> DType {
    if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// Threads per block of every row kernel.
const THREADS: usize = 256;
/// Rows of at most this many bytes (in the compute dtype) go a warp each, 8 to a block.
const WARP_ROW_BYTES: usize = 4096;
/// The shared memory a block may cache its rows in without opting in to more: 48 KiB, less
/// room for the kernels' own 32-value scratch.
const CACHE_BYTES: usize = 47 * 1024;

/// How a row kernel covers its rows: its launch, the threads per row, and whether the rows are
/// cached in the launch's shared memory.
struct RowPlan {
    config: LaunchConfig,
    group: i32,
    cached: i32,
}

fn row_plan(cuda: &Cuda, rows: usize, n: usize, dtype: DType) -> RowPlan {
    let row_bytes = n * compute_dtype(dtype).size();
    // Long rows take a block of 256 threads: blocks that small keep several rows in flight on an
    // SM, in different phases, and launch whatever registers the kernels use (at most 255).
    let group = if row_bytes <= WARP_ROW_BYTES { 32 } else { THREADS };
    let per_block = THREADS / group;
    let cache = per_block * row_bytes;
    let cached = cache <= CACHE_BYTES;
    let blocks = rows.div_ceil(per_block).min(cuda.max_blocks()) as u32;
    let config = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (THREADS as u32, 1, 1), shared_mem_bytes: if cached { cache as u32 } else { 0 } };
    RowPlan { config, group: group as i32, cached: cached as i32 }
}

pub fn softmax(cuda: &Cuda, x: &Tensor, dim: usize, log: bool, out: &Tensor) -> Result<()> {
    let Some(name) = float_name(x.dtype()) else {
        return unsupported(if log { "_log_softmax" } else { "_softmax" }, "CUDA", x.dtype());
    };
    if x.numel() == 0 {
        return Ok(());
    }
    let xc = x.contiguous()?;
    let n = if x.ndim() == 0 { 1 } else { x.shape()[dim] };
    let inner: usize = x.shape().get(dim + 1..).unwrap_or(&[]).iter().product();
    let outer = x.numel() / (n * inner);
    let (px, py, take_log) = (cuda.address(&xc)?, cuda.address(out)?, log as i32);
    let (n_outer, n_dim, n_inner) = (outer as i64, n as i64, inner as i64);
    if inner == 1 {
        let plan = row_plan(cuda, outer, n, x.dtype());
        let f = cuda.function(&FAMILY, &format!("softmax_rows_{name}"))?;
        let mut launch = cuda.stream().launch_builder(&f);
        launch.arg(&px).arg(&py).arg(&n_outer).arg(&n_dim).arg(&plan.group).arg(&plan.cached).arg(&take_log);
        unsafe { launch.launch(plan.config) }.map_err(|e| cuda_error("cuLaunchKernel(softmax)", e))?;
    } else {
        let f = cuda.function(&FAMILY, &format!("softmax_cols_{name}"))?;
        let mut launch = cuda.stream().launch_builder(&f);
        launch.arg(&px).arg(&py).arg(&n_outer).arg(&n_dim).arg(&n_inner).arg(&take_log);
        unsafe { launch.launch(cuda.config(outer * inner)) }.map_err(|e| cuda_error("cuLaunchKernel(softmax)", e))?;
    }
    Ok(())
}

pub fn layer_norm(cuda: &Cuda, x: &Tensor, n: usize, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64, out: &Tensor) -> Result<()> {
    let Some(name) = float_name(x.dtype()) else {
        return unsupported("native_layer_norm", "CUDA", x.dtype());
    };
    if x.numel() == 0 {
        return Ok(());
    }
    let xc = x.contiguous()?;
    // The parameters in the compute dtype, contiguous (they are [n], so this costs little).
    let param = |p: Option<&Tensor>| p.map(|t| t.to_dtype(compute_dtype(x.dtype()))?.contiguous()).transpose();
    let (w, b) = (param(weight)?, param(bias)?);
    let address = |p: &Option<Tensor>| p.as_ref().map_or(Ok(0), |t| cuda.address(t));
    let (pw, pb) = (address(&w)?, address(&b)?);
    let rows = x.numel() / n;
    let plan = row_plan(cuda, rows, n, x.dtype());
    let (px, py, n_rows, n_row) = (cuda.address(&xc)?, cuda.address(out)?, rows as i64, n as i64);
    let f = cuda.function(&FAMILY, &format!("layer_norm_{name}"))?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&py).arg(&n_rows).arg(&n_row).arg(&plan.group).arg(&plan.cached).arg(&pw).arg(&pb).arg(&eps);
    unsafe { launch.launch(plan.config) }.map_err(|e| cuda_error("cuLaunchKernel(layer_norm)", e))?;
    Ok(())
}

pub fn row_moments(cuda: &Cuda, x: &Tensor, rows: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let Some(name) = float_name(x.dtype()) else {
        return unsupported("native_batch_norm", "CUDA", x.dtype());
    };
    if rows == 0 {
        return Ok((vec![], vec![]));
    }
    let xc = x.contiguous()?;
    let n = x.numel() / rows;
    let stats = cuda.stream().alloc_zeros::<f64>(2 * rows).map_err(|e| cuda_error("cuMemAllocAsync", e))?;
    let mean = stats.device_ptr(cuda.stream()).0;
    let var = mean + (rows * std::mem::size_of::<f64>()) as u64;
    let plan = row_plan(cuda, rows, n, x.dtype());
    let (px, n_rows, n_row) = (cuda.address(&xc)?, rows as i64, n as i64);
    let f = cuda.function(&FAMILY, &format!("row_moments_{name}"))?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&n_rows).arg(&n_row).arg(&plan.group).arg(&plan.cached).arg(&mean).arg(&var);
    unsafe { launch.launch(plan.config) }.map_err(|e| cuda_error("cuLaunchKernel(row_moments)", e))?;
    let mut both = cuda.stream().clone_dtoh(&stats).map_err(|e| cuda_error("cuMemcpyDtoHAsync", e))?;
    cuda.stream().synchronize().map_err(|e| cuda_error("cuStreamSynchronize", e))?;
    let var = both.split_off(rows);
    Ok((both, var))
}

pub fn affine_rows(cuda: &Cuda, x: &Tensor, scale: &[f64], shift: &[f64], out: &Tensor) -> Result<()> {
    let Some(name) = float_name(x.dtype()) else {
        return unsupported("native_batch_norm", "CUDA", x.dtype());
    };
    let total = x.numel();
    if total == 0 || scale.is_empty() {
        return Ok(());
    }
    let xc = x.contiguous()?;
    let (n_row, n_total) = ((total / scale.len()) as i64, total as i64);
    let upload = |v: &[f64]| cuda.stream().clone_htod(v).map_err(|e| cuda_error("cuMemcpyHtoDAsync", e));
    let (scale, shift) = (upload(scale)?, upload(shift)?);
    let (ps, pt) = (scale.device_ptr(cuda.stream()).0, shift.device_ptr(cuda.stream()).0);
    let (px, py) = (cuda.address(&xc)?, cuda.address(out)?);
    let f = cuda.function(&FAMILY, &format!("affine_rows_{name}"))?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&py).arg(&n_row).arg(&n_total).arg(&ps).arg(&pt);
    unsafe { launch.launch(cuda.config(total)) }.map_err(|e| cuda_error("cuLaunchKernel(affine_rows)", e))?;
    Ok(())
}
