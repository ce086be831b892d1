//! One separable pass of `interpolate` (`kernels/resample.cu`; `ops::resize` builds the taps
//! of every mode: nearest, linear, cubic, anti-aliased), float32 and float64 as on the CPU.
use super::device::{cuda_error, Cuda};
use super::Family;
use crate::backend::unsupported;
use crate::dtype::DType;
use crate::error::Result;
use crate::ops::resize::Taps;
use crate::tensor::Tensor;
use cudarc::driver::{DevicePtr, PushKernelArg};

pub const FAMILY: Family = Family { name: "resample", source: include_str!("kernels/resample.cu"), kernel_names };

fn kernel_names() -> Vec<String> {
    ["resample_f32", "resample_f64"].map(String::from).to_vec()
}

/// resample.cu's table: each output position's tap count, then the taps' rows, then their
/// weights as float64 bits.
fn table(taps: &Taps) -> Vec<i64> {
    let counts = taps.count.iter().map(|&c| c as i64);
    let rows = taps.index.iter().map(|&r| r as i64);
    let weights = taps.weight.iter().map(|w| w.to_bits() as i64);
    counts.chain(rows).chain(weights).collect()
}

pub fn run(cuda: &Cuda, x: &Tensor, taps: &Taps) -> Result<Tensor> {
    let name = match x.dtype() {
        DType::F32 => "f32",
        DType::F64 => "f64",
        other => return unsupported("upsample", "CUDA", other),
    };
    let [outer, n_in, inner] = [x.shape()[0], x.shape()[1], x.shape()[2]];
    let out = Tensor::empty_on(&[outer, taps.outputs(), inner], x.dtype(), x.device())?;
    let n = out.numel();
    if n == 0 {
        return Ok(out);
    }
    let x = x.contiguous()?;
    let words = cuda.stream().clone_htod(&table(taps)).map_err(|e| cuda_error("cuMemcpyHtoDAsync", e))?;
    let pt = words.device_ptr(cuda.stream()).0;
    let (px, po) = (cuda.address(&x)?, cuda.address(&out)?);
    let (n_in, n_out, inner, width, count) = (n_in as i64, taps.outputs() as i64, inner as i64, taps.width as i64, n as i64);
    let f = cuda.function(&FAMILY, &format!("resample_{name}"))?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&pt).arg(&n_in).arg(&n_out).arg(&inner).arg(&width).arg(&po).arg(&count);
    unsafe { launch.launch(cuda.config(n)) }.map_err(|e| cuda_error("cuLaunchKernel(resample)", e))?;
    // `words` is freed in stream order, after the kernel that reads it.
    Ok(out)
}
