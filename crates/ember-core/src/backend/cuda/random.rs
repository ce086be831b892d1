//! Random draws (`kernels/random.cu`): the Philox stream of `ops::random`, element for element,
//! so a seed gives the same numbers on the GPU as on the CPU.
use super::device::{cuda_error, Cuda};
use super::Family;
use crate::backend::unsupported;
use crate::error::Result;
use crate::ops::random::Distribution;
use crate::tensor::Tensor;
use cudarc::driver::PushKernelArg;

pub const FAMILY: Family = Family { name: "random", source: include_str!("kernels/random.cu"), kernel_names };

fn kernel_names() -> Vec<String> {
    ["random_uniform_f64", "random_normal_f64", "random_integers_i64"].map(String::from).to_vec()
}

/// Element `i` of the contiguous `out` = `dist.sample(key, base, i)` (see `Backend::random`).
pub fn run(cuda: &Cuda, dist: Distribution, key: u64, base: u64, out: &Tensor) -> Result<()> {
    if out.dtype() != dist.dtype() || !out.is_contiguous() {
        return unsupported("random_", "CUDA", out.dtype());
    }
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let (po, count) = (cuda.address(out)?, n as i64);
    // Uniform and integer draws take one Philox block per two elements; normal ones one each.
    let (name, threads, floats, ints) = match dist {
        Distribution::Uniform { low, high } => ("random_uniform_f64", n.div_ceil(2), [low, high], [0; 2]),
        Distribution::Normal { mean, std } => ("random_normal_f64", n, [mean, std], [0; 2]),
        Distribution::Integers { low, high } => ("random_integers_i64", n.div_ceil(2), [0.0; 2], [low, high]),
    };
    let f = cuda.function(&FAMILY, name)?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&po).arg(&count).arg(&key).arg(&base);
    launch.arg(&floats[0]).arg(&floats[1]).arg(&ints[0]).arg(&ints[1]);
    unsafe { launch.launch(cuda.config(threads)) }.map_err(|e| cuda_error("cuLaunchKernel(random)", e))?;
    Ok(())
}
