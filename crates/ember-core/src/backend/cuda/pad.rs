//! Padding (`kernels/pad.cu`): a gather through the position maps `ops::pad` built (constant,
//! reflect, replicate and circular padding alike), reading the input through its own strides.
use super::device::{cuda_error, dtype_name, Cuda, DTYPES};
use super::Family;
use crate::backend::unsupported;
use crate::dtype::Element;
use crate::error::Result;
use crate::ops::binary::Scalar;
use crate::tensor::Tensor;
use cudarc::driver::{DevicePtr, PushKernelArg};

pub const FAMILY: Family = Family { name: "pad", source: include_str!("kernels/pad.cu"), kernel_names };

fn kernel_names() -> Vec<String> {
    DTYPES.iter().filter_map(|&d| dtype_name(d)).map(|n| format!("pad_{n}")).collect()
}

/// pad.cu's table: (output size, input stride, map start) per dim, then the maps (-1: fill).
fn table(x: &Tensor, maps: &[Vec<Option<usize>>]) -> Vec<i64> {
    let header = 3 * maps.len();
    let mut words = Vec::with_capacity(header + maps.iter().map(Vec::len).sum::<usize>());
    let mut start = header;
    for (map, &stride) in maps.iter().zip(x.strides()) {
        words.extend([map.len() as i64, stride as i64, start as i64]);
        start += map.len();
    }
    words.extend(maps.iter().flatten().map(|p| p.map_or(-1, |p| p as i64)));
    words
}

/// `fill` as the CPU converts it for `x`'s dtype, its bytes in the low bytes of a word.
fn fill_bits(x: &Tensor, fill: Scalar) -> u64 {
    let mut bytes = [0u8; 8];
    crate::with_dtype!(x.dtype(), T, {
        let value = T::from_f64(fill.to_f64());
        let size = std::mem::size_of::<T>();
        unsafe { std::ptr::copy_nonoverlapping(&value as *const T as *const u8, bytes.as_mut_ptr(), size) };
    });
    u64::from_le_bytes(bytes)
}

pub fn run(cuda: &Cuda, x: &Tensor, maps: &[Vec<Option<usize>>], fill: Scalar, out: &Tensor) -> Result<()> {
    let Some(name) = dtype_name(x.dtype()) else {
        return unsupported("constant_pad_nd", "CUDA", x.dtype());
    };
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let words = cuda.stream().clone_htod(&table(x, maps)).map_err(|e| cuda_error("cuMemcpyHtoDAsync", e))?;
    let pt = words.device_ptr(cuda.stream()).0;
    let (px, offset, po) = (cuda.base(x)?, x.layout().offset() as i64, cuda.address(out)?);
    let (ndim, count, bits) = (maps.len() as i32, n as i64, fill_bits(x, fill));
    let f = cuda.function(&FAMILY, &format!("pad_{name}"))?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&offset).arg(&pt).arg(&ndim).arg(&po).arg(&count).arg(&bits);
    unsafe { launch.launch(cuda.config(n)) }.map_err(|e| cuda_error("cuLaunchKernel(pad)", e))?;
    // `words` is freed in stream order, after the kernel that reads it.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_lists_each_dim_then_the_maps() {
        let x = Tensor::from_vec(vec![0f32; 6], &[2, 3]).unwrap();
        let maps = vec![vec![Some(0), Some(1)], vec![None, Some(0), Some(1), Some(2)]];
        assert_eq!(table(&x, &maps), vec![2, 3, 6, 4, 1, 8, 0, 1, -1, 0, 1, 2]);
        assert_eq!(fill_bits(&x, Scalar::Float(1.5)), 1.5f32.to_bits() as u64);
    }
}
