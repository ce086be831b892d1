//! Two-input elementwise ops on complex operands (already promoted to one complex dtype and
//! broadcast): arithmetic, `pow`, equality and the logical ops. complex32 computes in
//! complex64. Ordering comparisons, min/max and the integer-style ops refuse as PyTorch does.
use super::binary::BinaryOp::{self, *};
use super::complex_unary::{div, pow};
use crate::backend::cpu::map::binary_into;
use crate::bail;
use crate::dtype::{CDouble, CFloat, CHalf, DType};
use crate::error::Result;
use crate::tensor::Tensor;
use half::f16;

/// (dtype the kernel computes in, dtype of the result) for complex `common`.
pub fn dtypes(op: BinaryOp, common: DType) -> Result<(DType, DType)> {
    let name = common.legacy_name();
    Ok(match op {
        Add | Sub | Mul | Div | Pow => (common, common),
        Eq | Ne | LogicalAnd | LogicalOr | LogicalXor => (common, DType::Bool),
        Maximum | Minimum | Fmax | Fmin => bail!(Type, "{} not implemented for complex tensors.", format!("{op:?}").to_lowercase()),
        Lt | Le | Gt | Ge => bail!(NotImplemented, "\"{}_cpu\" not implemented for '{name}'", format!("{op:?}").to_lowercase()),
        FloorDiv => bail!(NotImplemented, "\"div_floor_cpu\" not implemented for '{name}'"),
        TruncDiv => bail!(NotImplemented, "\"div_trunc_cpu\" not implemented for '{name}'"),
        BitwiseAnd | BitwiseOr | BitwiseXor | LeftShift | RightShift => {
            bail!(Type, "{op:?} is only supported for integer and bool tensors, got {common}")
        }
        Remainder | Fmod | Atan2 | Hypot => bail!(NotImplemented, "\"{}_cpu\" not implemented for '{name}'", format!("{op:?}").to_lowercase()),
    })
}

#[inline(always)]
fn widen(z: CHalf) -> CFloat {
    CFloat::new(z.re.to_f32(), z.im.to_f32())
}
#[inline(always)]
fn narrow(z: CFloat) -> CHalf {
    CHalf::new(f16::from_f32(z.re), f16::from_f32(z.im))
}

/// Same-dtype complex kernel with output `$O!` (the complex type, or bool).
macro_rules! cmap2 {
    ($a:expr, $b:expr, $o:expr, complex, |$x:ident, $y:ident| $body:expr) => {
        match $a.dtype() {
            DType::C64 => binary_into::<CFloat, CFloat, CFloat>($a, $b, $o, |$x: CFloat, $y: CFloat| $body),
            DType::C128 => binary_into::<CDouble, CDouble, CDouble>($a, $b, $o, |$x: CDouble, $y: CDouble| $body),
            DType::C32 => binary_into::<CHalf, CHalf, CHalf>($a, $b, $o, |p: CHalf, q: CHalf| {
                let ($x, $y) = (widen(p), widen(q));
                narrow($body)
            }),
            d => unreachable!("complex kernel on {d}"),
        }
    };
    ($a:expr, $b:expr, $o:expr, boolean, |$x:ident, $y:ident| $body:expr) => {
        match $a.dtype() {
            DType::C64 => binary_into::<CFloat, CFloat, bool>($a, $b, $o, |$x: CFloat, $y: CFloat| $body),
            DType::C128 => binary_into::<CDouble, CDouble, bool>($a, $b, $o, |$x: CDouble, $y: CDouble| $body),
            DType::C32 => binary_into::<CHalf, CHalf, bool>($a, $b, $o, |p: CHalf, q: CHalf| {
                let ($x, $y) = (widen(p), widen(q));
                $body
            }),
            d => unreachable!("complex kernel on {d}"),
        }
    };
}

fn nonzero<R: num_traits::Float>(z: num_complex::Complex<R>) -> bool {
    z.re != R::zero() || z.im != R::zero()
}

/// `op(a, b)` into `o`; `dtypes` has accepted the op.
pub fn run(op: BinaryOp, a: &Tensor, b: &Tensor, o: &Tensor) {
    match op {
        Add => cmap2!(a, b, o, complex, |x, y| x + y),
        Sub => cmap2!(a, b, o, complex, |x, y| x - y),
        Mul => cmap2!(a, b, o, complex, |x, y| x * y),
        Div => cmap2!(a, b, o, complex, |x, y| div(x, y)),
        Pow => cmap2!(a, b, o, complex, |x, y| pow(x, y)),
        Eq => cmap2!(a, b, o, boolean, |x, y| x == y),
        Ne => cmap2!(a, b, o, boolean, |x, y| x != y),
        LogicalAnd => cmap2!(a, b, o, boolean, |x, y| nonzero(x) && nonzero(y)),
        LogicalOr => cmap2!(a, b, o, boolean, |x, y| nonzero(x) || nonzero(y)),
        LogicalXor => cmap2!(a, b, o, boolean, |x, y| nonzero(x) != nonzero(y)),
        _ => unreachable!("dtypes refuses {op:?} on complex"),
    }
}
