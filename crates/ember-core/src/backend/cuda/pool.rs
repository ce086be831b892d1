//! Max and mean pooling and the max pool's gradient (`kernels/pool.cu`; `ops::pool` holds their
//! semantics and builds the windows).
//!
//! Every window the op builds is a run of input positions at one step (the dilation; 1 for
//! adaptive windows), so each axis goes to the device as a table of (first, step, count,
//! padded) per output position, all three in one upload. The input is read through its own
//! strides (a channels-last or sliced input needs no copy); the results are contiguous.
use super::device::{cuda_error, dtype_name, Cuda};
use super::strided::Strided;
use super::Family;
use crate::backend::unsupported;
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::pool::{Axis, Divisor};
use crate::tensor::Tensor;
use cudarc::driver::{DevicePtr, DeviceRepr, PushKernelArg};

pub const FAMILY: Family = Family { name: "pool", source: include_str!("kernels/pool.cu"), kernel_names };

const FLOATS: [DType; 4] = [DType::F16, DType::BF16, DType::F32, DType::F64];

fn kernel_names() -> Vec<String> {
    let kinds = ["max", "mean", "max_backward"];
    kinds.iter().flat_map(|k| FLOATS.iter().map(move |&d| format!("pool_{k}_{}", dtype_name(d).unwrap()))).collect()
}

/// The kernels' name for `dtype`, if pool.cu has it.
fn float_name(dtype: DType) -> Option<&'static str> {
    FLOATS.contains(&dtype).then(|| dtype_name(dtype)).flatten()
}

/// One output position's window (`Window` in pool.cu): input positions `first + k * step`,
/// `k < count`; `padded` is its size counting padding.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
struct Window {
    first: i64,
    step: i64,
    count: i64,
    padded: i64,
}

/// Output sizes, the input plane's sizes and its strides (`Geometry` in pool.cu).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Geometry {
    od: i64,
    oh: i64,
    ow: i64,
    ih: i64,
    iw: i64,
    sd: i64,
    sh: i64,
    sw: i64,
}

// Plain C structs, passed by value as the kernels declare them.
unsafe impl DeviceRepr for Window {}
unsafe impl DeviceRepr for Geometry {}

/// `axis`'s windows as runs; the op builds nothing else, so anything else is a bug to report.
fn windows_of(axis: &Axis) -> Result<Vec<Window>> {
    axis.taps
        .iter()
        .zip(&axis.padded)
        .map(|(taps, &padded)| {
            let step = if taps.len() > 1 { taps[1] as i64 - taps[0] as i64 } else { 1 };
            let first = taps.first().map_or(0, |&t| t as i64);
            if taps.iter().enumerate().any(|(k, &t)| t as i64 != first + k as i64 * step) {
                bail!(Runtime, "CUDA pooling takes windows of evenly spaced positions, but got {taps:?}");
            }
            Ok(Window { first, step, count: taps.len() as i64, padded: padded as i64 })
        })
        .collect()
}

/// The D, H, W windows on the device, and each axis's table's address in it.
struct Tables {
    /// Owns the tables; its free waits in stream order for the kernel that reads them.
    _memory: cudarc::driver::CudaSlice<i64>,
    axes: [u64; 3],
}

fn upload_tables(cuda: &Cuda, axes: &[Axis; 3]) -> Result<Tables> {
    const WORDS: usize = std::mem::size_of::<Window>() / std::mem::size_of::<i64>();
    let mut words = Vec::with_capacity(axes.iter().map(|a| a.len() * WORDS).sum());
    let mut starts = [0usize; 3];
    for (a, axis) in axes.iter().enumerate() {
        starts[a] = words.len();
        for w in windows_of(axis)? {
            words.extend([w.first, w.step, w.count, w.padded]);
        }
    }
    let memory = cuda.stream().clone_htod(&words).map_err(|e| cuda_error("cuMemcpyHtoDAsync", e))?;
    let base = memory.device_ptr(cuda.stream()).0;
    Ok(Tables { _memory: memory, axes: starts.map(|s| base + (s * std::mem::size_of::<i64>()) as u64) })
}

/// `x`'s planes (its leading dims, any strides) as a layout, and the pool's geometry.
fn planes_and_geometry(x: &Tensor, dims: usize, axes: &[Axis; 3]) -> Result<(Strided, Geometry)> {
    let split = x.ndim() - dims;
    let lead = Layout::new(x.shape()[..split].to_vec(), x.strides()[..split].to_vec(), x.layout().offset());
    // Three spatial dims, unit ones (stride 0: never stepped) in front for fewer.
    let three = |v: Vec<i64>, fill: i64| -> [i64; 3] {
        let mut out = [fill; 3];
        out[3 - v.len()..].copy_from_slice(&v);
        out
    };
    let size = three(x.shape()[split..].iter().map(|&s| s as i64).collect(), 1);
    let stride = three(x.strides()[split..].iter().map(|&s| s as i64).collect(), 0);
    let geometry = Geometry {
        od: axes[0].len() as i64,
        oh: axes[1].len() as i64,
        ow: axes[2].len() as i64,
        ih: size[1],
        iw: size[2],
        sd: stride[0],
        sh: stride[1],
        sw: stride[2],
    };
    Ok((Strided::of(&x.with_layout(lead))?, geometry))
}

/// `x`'s leading dims, then the window counts of its pooled dims.
fn output_shape(x: &Tensor, dims: usize, axes: &[Axis; 3]) -> Vec<usize> {
    let mut shape = x.shape()[..x.ndim() - dims].to_vec();
    shape.extend(axes[3 - dims..].iter().map(Axis::len));
    shape
}

pub fn max_pool(cuda: &Cuda, x: &Tensor, dims: usize, axes: &[Axis; 3]) -> Result<(Tensor, Tensor)> {
    let Some(name) = float_name(x.dtype()) else {
        return unsupported(&format!("max_pool{dims}d_with_indices"), "CUDA", x.dtype());
    };
    let shape = output_shape(x, dims, axes);
    let values = Tensor::empty_on(&shape, x.dtype(), x.device())?;
    let indices = Tensor::empty_on(&shape, DType::I64, x.device())?;
    let n = values.numel();
    if n == 0 {
        return Ok((values, indices));
    }
    let tables = upload_tables(cuda, axes)?;
    let (planes, geometry) = planes_and_geometry(x, dims, axes)?;
    let (px, pv, pi, count) = (cuda.base(x)?, cuda.address(&values)?, cuda.address(&indices)?, n as i64);
    let f = cuda.function(&FAMILY, &format!("pool_max_{name}"))?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&planes).arg(&geometry).arg(&tables.axes[0]).arg(&tables.axes[1]).arg(&tables.axes[2]);
    launch.arg(&pv).arg(&pi).arg(&count);
    unsafe { launch.launch(cuda.config(n)) }.map_err(|e| cuda_error("cuLaunchKernel(max_pool)", e))?;
    Ok((values, indices))
}

pub fn mean_pool(cuda: &Cuda, x: &Tensor, dims: usize, axes: &[Axis; 3], divisor: Divisor) -> Result<Tensor> {
    let Some(name) = float_name(x.dtype()) else {
        return unsupported(&format!("avg_pool{dims}d"), "CUDA", x.dtype());
    };
    let out = Tensor::empty_on(&output_shape(x, dims, axes), x.dtype(), x.device())?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    // `DIVIDE_BY_*` in pool.cu.
    let (divide_by, fixed): (i32, i64) = match divisor {
        Divisor::Taps => (0, 0),
        Divisor::Padded => (1, 0),
        Divisor::Fixed(by) => (2, by as i64),
    };
    let tables = upload_tables(cuda, axes)?;
    let (planes, geometry) = planes_and_geometry(x, dims, axes)?;
    let (px, po, count) = (cuda.base(x)?, cuda.address(&out)?, n as i64);
    let f = cuda.function(&FAMILY, &format!("pool_mean_{name}"))?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&planes).arg(&geometry).arg(&tables.axes[0]).arg(&tables.axes[1]).arg(&tables.axes[2]);
    launch.arg(&divide_by).arg(&fixed).arg(&po).arg(&count);
    unsafe { launch.launch(cuda.config(n)) }.map_err(|e| cuda_error("cuLaunchKernel(mean_pool)", e))?;
    Ok(out)
}

/// Atomic adds of `g` into a zeroed `[planes, inputs]` of the compute dtype (float32 for the
/// half types, which are converted after, as the CPU's gradient is).
pub fn max_pool_backward(cuda: &Cuda, g: &Tensor, indices: &Tensor, inputs: usize) -> Result<Tensor> {
    let Some(name) = float_name(g.dtype()) else {
        return unsupported("max_pool2d_with_indices_backward", "CUDA", g.dtype());
    };
    let (planes, outputs) = (g.shape()[0], g.shape()[1]);
    let compute = if g.dtype() == DType::F64 { DType::F64 } else { DType::F32 };
    let sums = Tensor::zeros_on(&[planes, inputs], compute, g.device())?;
    let n = g.numel();
    if n > 0 && inputs > 0 {
        let (pg, lg, pi, li) = (cuda.base(g)?, Strided::of(g)?, cuda.base(indices)?, Strided::of(indices)?);
        let (ps, outputs, inputs, count) = (cuda.address(&sums)?, outputs as i64, inputs as i64, n as i64);
        let f = cuda.function(&FAMILY, &format!("pool_max_backward_{name}"))?;
        let mut launch = cuda.stream().launch_builder(&f);
        launch.arg(&pg).arg(&lg).arg(&pi).arg(&li).arg(&ps).arg(&outputs).arg(&inputs).arg(&count);
        unsafe { launch.launch(cuda.config(n)) }.map_err(|e| cuda_error("cuLaunchKernel(max_pool_backward)", e))?;
    }
    sums.to_dtype(g.dtype())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_become_runs_and_other_taps_are_refused() {
        let axis = Axis { taps: vec![vec![0, 2, 4], vec![3], vec![]], padded: vec![5, 5, 1] };
        let runs = windows_of(&axis).unwrap();
        assert_eq!(runs[0], Window { first: 0, step: 2, count: 3, padded: 5 });
        assert_eq!(runs[1], Window { first: 3, step: 1, count: 1, padded: 5 });
        assert_eq!(runs[2].count, 0);
        let uneven = Axis { taps: vec![vec![0, 1, 3]], padded: vec![3] };
        assert!(windows_of(&uneven).is_err());
    }
}
