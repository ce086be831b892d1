//! Two-input ops on complex operands, already promoted to one complex dtype and broadcast (the
//! op's dtypes were checked by `ops::complex_binary`).
use super::unary::{div, pow};
use super::{narrow, widen};
use crate::backend::cpu::map::binary_into;
use crate::dtype::{CDouble, CFloat, CHalf, DType};
use crate::ops::binary::BinaryOp::{self, *};
use crate::tensor::Tensor;

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
