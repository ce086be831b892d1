//! Padding on host memory: every output row gathered through the op's position maps, reading
//! any input strides in place, so nothing is copied before the gather.
use crate::backend::cpu::map::Ptr;
use crate::dtype::Element;
use crate::parallel::{for_range, GRAIN};
use crate::tensor::Tensor;

/// Fills every row of `out` (all dims but the last) from the input through the position maps.
pub fn gather<T: Element>(input: &Tensor, maps: &[Vec<Option<usize>>], fill: T, out: &Tensor) {
    let ndim = maps.len();
    let (last, outer) = maps.split_last().expect("pad works on at least one dim");
    let width = last.len();
    let rows: usize = outer.iter().map(|m| m.len()).product();
    let strides = input.strides();
    let inner_stride = strides[ndim - 1];
    let (src, dst) = (Ptr(input.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
    let outer_shape: Vec<usize> = outer.iter().map(|m| m.len()).collect();
    for_range(rows, (GRAIN / width).max(1), |s, e| unsafe {
        for row in s..e {
            let line = std::slice::from_raw_parts_mut(dst.at((row * width) as isize), width);
            let idx = crate::strided::unravel(row, &outer_shape);
            let offset: Option<isize> = idx.iter().enumerate().map(|(d, &i)| outer[d][i].map(|p| p as isize * strides[d])).sum();
            match offset {
                None => line.fill(fill),
                Some(off) => {
                    for (v, m) in line.iter_mut().zip(last) {
                        *v = m.map_or(fill, |p| *src.at(off + p as isize * inner_stride));
                    }
                }
            }
        }
    });
}

