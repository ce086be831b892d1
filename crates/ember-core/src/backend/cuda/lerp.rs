//! `lerp` (`kernels/lerp.cu`): a three-input elementwise op of float dtypes.
use super::device::{cuda_error, dtype_name, Cuda, DTYPES};
use super::strided::Strided;
use super::Family;
use crate::backend::unsupported;
use crate::error::Result;
use crate::tensor::Tensor;
use cudarc::driver::PushKernelArg;

pub const FAMILY: Family = Family { name: "lerp", source: include_str!("kernels/lerp.cu"), kernel_names };

fn kernel_names() -> Vec<String> {
    DTYPES.iter().filter(|d| d.is_float()).filter_map(|&d| dtype_name(d)).map(|n| format!("lerp_{n}")).collect()
}

/// `out = start + weight * (end - start)` (see `Backend::lerp`).
pub fn run(cuda: &Cuda, start: &Tensor, end: &Tensor, weight: &Tensor, out: &Tensor) -> Result<()> {
    let Some(name) = dtype_name(out.dtype()).filter(|_| out.dtype().is_float()) else {
        return unsupported("lerp", "CUDA", out.dtype());
    };
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let f = cuda.function(&FAMILY, &format!("lerp_{name}"))?;
    let (ps, pe, pw, po) = (cuda.base(start)?, cuda.base(end)?, cuda.base(weight)?, cuda.base(out)?);
    let (ls, le, lw, lo) = (Strided::of(start)?, Strided::of(end)?, Strided::of(weight)?, Strided::of(out)?);
    let count = n as i64;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&ps).arg(&ls).arg(&pe).arg(&le).arg(&pw).arg(&lw).arg(&po).arg(&lo).arg(&count);
    unsafe { launch.launch(cuda.config(n)) }.map_err(|e| cuda_error("cuLaunchKernel(lerp)", e))?;
    Ok(())
}
