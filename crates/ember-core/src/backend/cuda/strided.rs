//! An operand's layout as a kernel argument (`Strided` in kernels/common.cuh).
use crate::bail;
use crate::error::Result;
use crate::tensor::Tensor;
use cudarc::driver::DeviceRepr;

/// The most dims a kernel indexes after merging (PyTorch's CUDA kernels take 25; 8 covers
/// every layout that merging leaves in practice).
pub const MAX_DIMS: usize = 8;

/// Where element `i` (row-major over the op's shape) of one operand lies, in elements from the
/// memory's start. `ndim == 0`: contiguous, at `offset + i`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Strided {
    offset: i64,
    ndim: i64,
    shape: [i64; MAX_DIMS],
    strides: [i64; MAX_DIMS],
}

// A plain C struct, passed by value as the kernels declare it.
unsafe impl DeviceRepr for Strided {}

impl Strided {
    /// `t`'s layout, with size-1 dims dropped and dims that step through memory as one merged
    /// (each operand's row-major walk stays the same, so operands merge independently).
    pub fn of(t: &Tensor) -> Result<Strided> {
        let mut dims: Vec<(i64, i64)> = Vec::with_capacity(t.ndim());
        for (&size, &stride) in t.shape().iter().zip(t.strides()) {
            if size == 1 {
                continue;
            }
            match dims.last_mut() {
                Some((outer, outer_stride)) if *outer_stride == stride as i64 * size as i64 => {
                    *outer *= size as i64;
                    *outer_stride = stride as i64;
                }
                _ => dims.push((size as i64, stride as i64)),
            }
        }
        let mut s = Strided { offset: t.layout().offset() as i64, ndim: 0, shape: [1; MAX_DIMS], strides: [0; MAX_DIMS] };
        if matches!(dims.as_slice(), [] | [(_, 1)]) {
            return Ok(s);
        }
        if dims.len() > MAX_DIMS {
            bail!(NotImplemented, "CUDA kernels take at most {MAX_DIMS} non-mergeable dims; this tensor's layout has {}", dims.len());
        }
        s.ndim = dims.len() as i64;
        for (d, (size, stride)) in dims.into_iter().enumerate() {
            s.shape[d] = size;
            s.strides[d] = stride;
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_and_merged_layouts() {
        let t = Tensor::from_vec((0..24).map(|v| v as f32).collect(), &[6, 4]).unwrap();
        assert_eq!(Strided::of(&t).unwrap().ndim, 0);
        // A broadcast row: stride 0 stays a dim of its own.
        let b = Tensor::from_vec(vec![1.0f32; 4], &[1, 4]).unwrap().broadcast_to(&[3, 4]).unwrap();
        let s = Strided::of(&b).unwrap();
        assert_eq!((s.ndim, &s.shape[..2], &s.strides[..2]), (2, &[3i64, 4][..], &[0i64, 1][..]));
        let tt = t.t().unwrap();
        let s = Strided::of(&tt).unwrap();
        assert_eq!((s.ndim, &s.shape[..2], &s.strides[..2]), (2, &[4i64, 6][..], &[1i64, 4][..]));
    }
}
