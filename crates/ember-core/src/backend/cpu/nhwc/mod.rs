//! Channels-last (NHWC) kernels: a 4-d `[N, C, H, W]` tensor whose memory is `[N, H, W, C]`
//! (PyTorch's `torch.channels_last`). The ops that have them (conv2d, batch_norm, 2-d pooling,
//! 2-d interpolate) call in here when their input is laid out so, and give channels-last results;
//! every other layout keeps its NCHW kernel. Channels are the innermost dim, so each kernel's
//! inner loop runs over a contiguous run of channels.
mod conv;
mod depthwise;
mod direct;
mod norm;
mod pool;

pub use conv::{conv2d, Geom2};
pub use norm::{channel_affine, channel_moments};
pub(crate) use pool::{max_pool2d, mean_pool2d};

use crate::dtype::DType;
use crate::error::Result;
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
pub fn to_channels_last(t: &Tensor) -> Result<Tensor> {
    if is_channels_last_contiguous(t) {
        return Ok(t.clone());
    }
    t.permute(&[0, 2, 3, 1])?.contiguous()?.permute(&[0, 3, 1, 2])
}

/// The `[N, H, W, C]` memory of a channels-last tensor, as a contiguous tensor (a view).
fn nhwc_view(t: &Tensor) -> Tensor {
    let v = t.permute(&[0, 2, 3, 1]).expect("a 4-d tensor");
    debug_assert!(v.is_contiguous());
    v
}

/// A fresh `[N, C, H, W]` tensor with channels-last memory.
fn uninit_channels_last([n, c, h, w]: [usize; 4], dtype: DType) -> Result<Tensor> {
    Ok(Tensor::uninit(&[n, h, w, c], dtype)?.permute(&[0, 3, 1, 2]).expect("a 4-d tensor"))
}

/// Whether batch_norm on `x` runs on the channels-last kernels (every float dtype: half types
/// compute in float32 there, so a bf16 activation never leaves channels-last memory).
pub fn norm_applies(x: &Tensor) -> bool {
    is_channels_last(x) && is_channels_last_contiguous(x) && x.dtype().is_float()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::conv::{conv, ConvPadding};

    fn nhwc(shape: [usize; 4]) -> Tensor {
        let [n, c, h, w] = shape;
        let t = Tensor::from_vec((0..n * c * h * w).map(|v| (v % 7) as f32 - 3.0).collect(), &[n, h, w, c]).unwrap();
        t.permute(&[0, 3, 1, 2]).unwrap()
    }

    #[test]
    fn channels_last_is_decided_by_stride_order() {
        assert!(is_channels_last(&nhwc([2, 3, 4, 5])));
        assert!(is_channels_last(&nhwc([2, 1, 4, 5]))); // also contiguous, as PyTorch
        assert!(!is_channels_last(&Tensor::zeros(&[2, 3, 4, 5], DType::F32).unwrap()));
        assert!(!is_channels_last(&Tensor::zeros(&[2, 3, 1, 1], DType::F32).unwrap()));
        assert!(is_channels_last_contiguous(&Tensor::zeros(&[2, 3, 1, 1], DType::F32).unwrap()));
    }

    #[test]
    fn nhwc_conv_matches_the_nchw_kernel() {
        let x = nhwc([2, 4, 5, 6]);
        let w = Tensor::from_vec((0..4 * 2 * 9).map(|v| (v % 5) as f32 - 2.0).collect(), &[4, 2, 3, 3]).unwrap();
        let got = conv(&x, &w, None, &[2], ConvPadding::Explicit(&[1]), &[1], 2, 2).unwrap();
        let want = conv(&x.contiguous().unwrap(), &w, None, &[2], ConvPadding::Explicit(&[1]), &[1], 2, 2).unwrap();
        assert!(is_channels_last(&got) && !is_channels_last(&want));
        assert_eq!(got.contiguous().unwrap().to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
    }

    /// The direct AVX-512 kernel's shapes (16+ channels, no groups, output rows 14+ wide):
    /// tails of a row tile and of an output-channel panel, strides, dilation, no padding, 'same'
    /// with an even kernel, weights in several panel groups.
    #[test]
    fn direct_nhwc_conv_matches_the_nchw_kernel() {
        let cases: [([usize; 4], [usize; 4], &[i64], ConvPadding, &[i64]); 7] = [
            ([2, 16, 9, 31], [40, 16, 3, 3], &[1], ConvPadding::Explicit(&[1]), &[1]),
            ([1, 17, 12, 30], [32, 17, 3, 3], &[2], ConvPadding::Explicit(&[1]), &[1]),
            ([1, 16, 10, 20], [16, 16, 3, 3], &[1], ConvPadding::Explicit(&[2]), &[2]),
            ([2, 24, 7, 20], [64, 24, 3, 3], &[1], ConvPadding::Explicit(&[0]), &[1]),
            ([1, 16, 8, 17], [33, 16, 2, 4], &[1], ConvPadding::Same, &[1]),
            ([1, 32, 11, 45], [48, 32, 5, 1], &[3], ConvPadding::Explicit(&[2]), &[1]),
            // Panels too large to share L2: one task per panel.
            ([1, 300, 3, 16], [70, 300, 3, 3], &[1], ConvPadding::Explicit(&[1]), &[1]),
        ];
        for (xs, ws, stride, padding, dilation) in cases {
            let x = nhwc(xs);
            let w = nhwc(ws).contiguous().unwrap();
            let bias = Tensor::from_vec((0..ws[0]).map(|v| v as f32 * 0.25).collect(), &[ws[0]]).unwrap();
            let got = conv(&x, &w, Some(&bias), stride, padding, dilation, 1, 2).unwrap();
            let want = conv(&x.contiguous().unwrap(), &w, Some(&bias), stride, padding, dilation, 1, 2).unwrap();
            assert!(is_channels_last(&got), "{xs:?} {ws:?}");
            let (got, want) = (got.contiguous().unwrap().to_vec::<f32>().unwrap(), want.to_vec::<f32>().unwrap());
            assert_eq!(got.len(), want.len());
            for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                assert!((a - b).abs() <= 1e-3 * b.abs().max(1.0), "{xs:?} {ws:?} [{i}]: {a} vs {b}");
            }
        }
    }
}
