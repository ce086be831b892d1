//! Channels-last (NHWC) kernels: a 4-d `[N, C, H, W]` tensor whose memory is `[N, H, W, C]`
//! (PyTorch's `torch.channels_last`). The ops that have them (conv2d, batch_norm, 2-d pooling,
//! 2-d interpolate) call in here when their input is laid out so, and give channels-last results;
//! every other layout keeps its NCHW kernel. Channels are the innermost dim, so each kernel's
//! inner loop runs over a contiguous run of channels.
mod conv;
mod norm;
mod pool;

pub use conv::{conv2d, Geom2};
pub use norm::{channel_affine, channel_moments};
pub(crate) use pool::{max_pool2d, mean_pool2d};

use crate::dtype::DType;
use crate::tensor::Tensor;

/// PyTorch's `is_contiguous(memory_format=torch.channels_last)`: a 4-d layout whose dims, in the
/// order C, W, H, N, have dense strides (size-1 dims do not count).
pub fn is_channels_last_contiguous(t: &Tensor) -> bool {
    if t.ndim() != 4 {
        return false;
    }
    let (shape, strides) = (t.shape(), t.layout().strides());
    let mut expected = 1isize;
    for d in [1, 3, 2, 0] {
        if shape[d] != 1 {
            if strides[d] != expected {
                return false;
            }
            expected *= shape[d] as isize;
        }
    }
    true
}

/// A tensor the channels-last kernels should take: PyTorch's `suggest_memory_format() ==
/// channels_last`, decided from the order of the strides. Walking C, W, H, N, each stride must
/// be at least the extent of the dims before it; where size-1 dims make a layout ambiguous
/// (`[N, 1, 1, 1]` with equal strides) it counts as NCHW.
pub fn is_channels_last(t: &Tensor) -> bool {
    if t.ndim() != 4 || t.numel() == 0 {
        return false;
    }
    let (shape, strides) = (t.shape(), t.layout().strides());
    if strides[1] == 0 {
        return false;
    }
    let mut min = 0isize;
    for d in [1, 3, 2, 0] {
        if strides[d] < min || (d == 0 && min == strides[1]) {
            return false;
        }
        min = strides[d] * shape[d].max(1) as isize;
    }
    true
}

/// A copy of a 4-d tensor in channels-last memory, or the tensor itself when it already is.
pub fn to_channels_last(t: &Tensor) -> Tensor {
    if is_channels_last_contiguous(t) {
        return t.clone();
    }
    let nhwc = t.permute(&[0, 2, 3, 1]).expect("a 4-d tensor").contiguous();
    nhwc.permute(&[0, 3, 1, 2]).expect("a 4-d tensor")
}

/// The `[N, H, W, C]` memory of a channels-last tensor, as a contiguous tensor (a view).
fn nhwc_view(t: &Tensor) -> Tensor {
    let v = t.permute(&[0, 2, 3, 1]).expect("a 4-d tensor");
    debug_assert!(v.is_contiguous());
    v
}

/// A fresh `[N, C, H, W]` tensor with channels-last memory.
fn uninit_channels_last([n, c, h, w]: [usize; 4], dtype: DType) -> Tensor {
    Tensor::uninit(&[n, h, w, c], dtype).permute(&[0, 3, 1, 2]).expect("a 4-d tensor")
}

/// Float dtypes the NHWC kernels compute in directly.
fn is_native(dtype: DType) -> bool {
    matches!(dtype, DType::F32 | DType::F64)
}

/// Whether batch_norm on `x` runs on the channels-last kernels.
pub fn norm_applies(x: &Tensor) -> bool {
    is_channels_last(x) && is_channels_last_contiguous(x) && is_native(x.dtype())
}
