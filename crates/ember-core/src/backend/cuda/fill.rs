//! Fill (`kernels/fill.cu`): every element set to one value, passed as the dtype's bytes.
use super::device::{cuda_error, dtype_name, Cuda, DTYPES};
use super::strided::Strided;
use super::Family;
use crate::backend::unsupported;
use crate::error::Result;
use crate::ops::binary::Scalar;
use crate::tensor::Tensor;
use cudarc::driver::PushKernelArg;

pub const FAMILY: Family = Family { name: "fill", source: include_str!("kernels/fill.cu"), kernel_names };

fn kernel_names() -> Vec<String> {
    DTYPES.iter().filter_map(|&d| dtype_name(d)).map(|n| format!("fill_{n}")).collect()
}

pub fn run(cuda: &Cuda, dst: &Tensor, value: Scalar) -> Result<()> {
    let Some(name) = dtype_name(dst.dtype()) else {
        return unsupported("fill_", "CUDA", dst.dtype());
    };
    let n = dst.numel();
    if n == 0 {
        return Ok(());
    }
    // The value converted as the CPU converts it, then its bytes in the low bytes of a word.
    let host = value.to_tensor(dst.dtype());
    let mut bytes = [0u8; 8];
    unsafe { std::ptr::copy_nonoverlapping(host.byte_ptr(), bytes.as_mut_ptr(), dst.dtype().size()) };
    let bits = u64::from_le_bytes(bytes);
    let f = cuda.function(&FAMILY, &format!("fill_{name}"))?;
    let (d, ld, count) = (cuda.base(dst)?, Strided::of(dst)?, n as i64);
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&d).arg(&ld).arg(&count).arg(&bits);
    unsafe { launch.launch(cuda.config(n)) }.map_err(|e| cuda_error("cuLaunchKernel(fill)", e))?;
    Ok(())
}
