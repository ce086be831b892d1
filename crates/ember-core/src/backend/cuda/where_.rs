//! `where(cond, a, b)` (`kernels/where.cu`).
use super::device::{cuda_error, dtype_name, Cuda, DTYPES};
use super::strided::Strided;
use super::Family;
use crate::backend::unsupported;
use crate::error::Result;
use crate::tensor::Tensor;
use cudarc::driver::PushKernelArg;

pub const FAMILY: Family = Family { name: "where", source: include_str!("kernels/where.cu"), kernel_names };

fn kernel_names() -> Vec<String> {
    DTYPES.iter().filter_map(|&d| dtype_name(d)).map(|n| format!("where_{n}")).collect()
}

pub fn run(cuda: &Cuda, cond: &Tensor, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
    let Some(name) = dtype_name(out.dtype()) else {
        return unsupported("where", "CUDA", out.dtype());
    };
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let f = cuda.function(&FAMILY, &format!("where_{name}"))?;
    let (pc, pa, pb, po) = (cuda.base(cond)?, cuda.base(a)?, cuda.base(b)?, cuda.base(out)?);
    let (lc, la, lb, lo) = (Strided::of(cond)?, Strided::of(a)?, Strided::of(b)?, Strided::of(out)?);
    let count = n as i64;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&pc).arg(&lc).arg(&pa).arg(&la).arg(&pb).arg(&lb).arg(&po).arg(&lo).arg(&count);
    unsafe { launch.launch(cuda.config(n)) }.map_err(|e| cuda_error("cuLaunchKernel(where)", e))?;
    Ok(())
}
