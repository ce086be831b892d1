//! Elementwise kernels on complex host memory. complex32 computes in complex64 and rounds once
//! on the way out (as float16 computes in float32).
pub mod binary;
pub mod reduce;
pub mod unary;

use crate::dtype::{CFloat, CHalf};
use half::f16;

/// complex32 parts widened to float32 and back.
#[inline(always)]
fn widen(z: CHalf) -> CFloat {
    CFloat::new(z.re.to_f32(), z.im.to_f32())
}
#[inline(always)]
fn narrow(z: CFloat) -> CHalf {
    CHalf::new(f16::from_f32(z.re), f16::from_f32(z.im))
}
