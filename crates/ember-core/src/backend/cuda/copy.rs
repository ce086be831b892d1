//! Strided copy with a dtype cast (`kernels/copy.cu`): what `.to(dtype)`, `.contiguous()` and
//! `copy_` reduce to on the device once same-dtype dense copies have gone to `cuMemcpy`.
use super::device::{cuda_error, dtype_name, Cuda, DTYPES};
use super::strided::Strided;
use super::Family;
use crate::backend::unsupported;
use crate::error::Result;
use crate::tensor::Tensor;
use cudarc::driver::PushKernelArg;

pub const FAMILY: Family = Family { name: "copy", source: include_str!("kernels/copy.cu"), kernel_names };

fn kernel_name(from: &str, to: &str) -> String {
    format!("copy_{from}_{to}")
}

fn kernel_names() -> Vec<String> {
    let names: Vec<_> = DTYPES.iter().filter_map(|&d| dtype_name(d)).collect();
    names.iter().flat_map(|from| names.iter().map(move |to| kernel_name(from, to))).collect()
}

pub fn run(cuda: &Cuda, src: &Tensor, dst: &Tensor) -> Result<()> {
    let (Some(from), Some(to)) = (dtype_name(src.dtype()), dtype_name(dst.dtype())) else {
        return unsupported("copy_", "CUDA", if dtype_name(src.dtype()).is_none() { src.dtype() } else { dst.dtype() });
    };
    let n = dst.numel();
    if n == 0 {
        return Ok(());
    }
    let f = cuda.function(&FAMILY, &kernel_name(from, to))?;
    let (s, d) = (cuda.base(src)?, cuda.base(dst)?);
    let (ls, ld, count) = (Strided::of(src)?, Strided::of(dst)?, n as i64);
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&s).arg(&ls).arg(&d).arg(&ld).arg(&count);
    unsafe { launch.launch(cuda.config(n)) }.map_err(|e| cuda_error("cuLaunchKernel(copy)", e))?;
    Ok(())
}
