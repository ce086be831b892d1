//! The CPU kernels of the two-input elementwise ops (`ops::binary` holds their semantics).
use crate::dtype::{DType, Element};
use crate::ops::binary::BinaryOp::{self, *};
use crate::backend::cpu::map::binary_into;
use crate::backend::cpu::math::Real;
use crate::tensor::Tensor;
use half::{bf16, f16};

macro_rules! fmap2 {
    ($a:expr, $b:expr, $o:expr, $O:ident, |$x:ident, $y:ident| $body:expr) => {
        match $a.dtype() {
            DType::F32 => binary_into::<f32, f32, $O!(f32)>($a, $b, $o, |$x: f32, $y: f32| $body),
            DType::F64 => binary_into::<f64, f64, $O!(f64)>($a, $b, $o, |$x: f64, $y: f64| $body),
            DType::F16 => $O!(@half f16, $a, $b, $o, |$x, $y| $body),
            DType::BF16 => $O!(@half bf16, $a, $b, $o, |$x, $y| $body),
            d => unreachable!("float kernel on {d}"),
        }
    };
}

macro_rules! imap2 {
    ($a:expr, $b:expr, $o:expr, $O:ident, |$x:ident, $y:ident| $body:expr) => {
        $crate::with_dtype!($a.dtype(), T, binary_into::<T, T, $O!(T)>($a, $b, $o, |p: T, q: T| {
            let ($x, $y) = (p.to_i64(), q.to_i64());
            $O!(@int T, $body)
        }))
    };
}

// Output type selectors for the kernel macros: the same type, or bool.
// `@half`: the half-precision kernel, float32 blocks for arithmetic, per element for predicates.
macro_rules! same {
    ($t:ty) => { $t };
    (@half $t:ty, $a:expr, $b:expr, $o:expr, |$x:ident, $y:ident| $body:expr) => {
        crate::backend::cpu::half::map::binary_into::<$t>($a, $b, $o, |$x: f32, $y: f32| $body)
    };
    (@int $t:ty, $v:expr) => { <$t>::from_i64($v) };
}
macro_rules! boolean {
    ($t:ty) => { bool };
    (@half $t:ty, $a:expr, $b:expr, $o:expr, |$x:ident, $y:ident| $body:expr) => {
        binary_into::<$t, $t, bool>($a, $b, $o, |p: $t, q: $t| {
            let ($x, $y) = (p.to_f32(), q.to_f32());
            $body
        })
    };
    (@int $t:ty, $v:expr) => { $v };
}

pub fn run(op: BinaryOp, a: &Tensor, b: &Tensor, o: &Tensor) {
    if a.dtype().is_complex() {
        return super::complex::binary::run(op, a, b, o);
    }
    let float = a.dtype().is_float();
    match op {
        Add if float => fmap2!(a, b, o, same, |x, y| x + y),
        Sub if float => fmap2!(a, b, o, same, |x, y| x - y),
        Mul if float => fmap2!(a, b, o, same, |x, y| x * y),
        Div if float => fmap2!(a, b, o, same, |x, y| x / y),
        FloorDiv if float => fmap2!(a, b, o, same, |x, y| floor_div(x, y)),
        TruncDiv if float => fmap2!(a, b, o, same, |x, y| (x / y).trunc()),
        Remainder if float => fmap2!(a, b, o, same, |x, y| {
            let r = x % y;
            if r != 0.0 && ((r < 0.0) != (y < 0.0)) { r + y } else { r }
        }),
        Fmod if float => fmap2!(a, b, o, same, |x, y| x % y),
        Pow if float => fmap2!(a, b, o, same, |x, y| x.powf(y)),
        Atan2 => fmap2!(a, b, o, same, |x, y| x.atan2(y)),
        Hypot => fmap2!(a, b, o, same, |x, y| x.hypot(y)),
        Maximum if float => fmap2!(a, b, o, same, |x, y| if x.is_nan() || y.is_nan() { x + y } else { x.max(y) }),
        Minimum if float => fmap2!(a, b, o, same, |x, y| if x.is_nan() || y.is_nan() { x + y } else { x.min(y) }),
        Fmax if float => fmap2!(a, b, o, same, |x, y| x.max(y)),
        Fmin if float => fmap2!(a, b, o, same, |x, y| x.min(y)),
        Eq if float => fmap2!(a, b, o, boolean, |x, y| x == y),
        Ne if float => fmap2!(a, b, o, boolean, |x, y| x != y),
        Lt if float => fmap2!(a, b, o, boolean, |x, y| x < y),
        Le if float => fmap2!(a, b, o, boolean, |x, y| x <= y),
        Gt if float => fmap2!(a, b, o, boolean, |x, y| x > y),
        Ge if float => fmap2!(a, b, o, boolean, |x, y| x >= y),
        LogicalAnd if float => fmap2!(a, b, o, boolean, |x, y| x != 0.0 && y != 0.0),
        LogicalOr if float => fmap2!(a, b, o, boolean, |x, y| x != 0.0 || y != 0.0),
        LogicalXor if float => fmap2!(a, b, o, boolean, |x, y| (x != 0.0) != (y != 0.0)),
        Add if a.dtype() == DType::Bool => binary_into::<bool, bool, bool>(a, b, o, |x, y| x | y),
        Mul if a.dtype() == DType::Bool => binary_into::<bool, bool, bool>(a, b, o, |x, y| x & y),
        Maximum | Fmax if a.dtype() == DType::Bool => binary_into::<bool, bool, bool>(a, b, o, |x, y| x | y),
        Minimum | Fmin if a.dtype() == DType::Bool => binary_into::<bool, bool, bool>(a, b, o, |x, y| x & y),
        Add => imap2!(a, b, o, same, |x, y| x.wrapping_add(y)),
        Sub => imap2!(a, b, o, same, |x, y| x.wrapping_sub(y)),
        Mul => imap2!(a, b, o, same, |x, y| x.wrapping_mul(y)),
        // Wrapping, as PyTorch's: `i64::MIN // -1` is `i64::MIN` (the divisor is checked non-zero).
        FloorDiv => imap2!(a, b, o, same, |x, y| {
            let q = x.wrapping_div(y);
            if x.wrapping_rem(y) != 0 && ((x < 0) != (y < 0)) { q - 1 } else { q }
        }),
        TruncDiv => imap2!(a, b, o, same, |x, y| x.wrapping_div(y)),
        Remainder => imap2!(a, b, o, same, |x, y| {
            let r = x.wrapping_rem(y);
            if r != 0 && ((r < 0) != (y < 0)) { r + y } else { r }
        }),
        Fmod => imap2!(a, b, o, same, |x, y| x.wrapping_rem(y)),
        Pow => imap2!(a, b, o, same, |x, y| int_pow(x, y)),
        Maximum | Fmax => imap2!(a, b, o, same, |x, y| x.max(y)),
        Minimum | Fmin => imap2!(a, b, o, same, |x, y| x.min(y)),
        BitwiseAnd => imap2!(a, b, o, same, |x, y| x & y),
        BitwiseOr => imap2!(a, b, o, same, |x, y| x | y),
        BitwiseXor => imap2!(a, b, o, same, |x, y| x ^ y),
        LeftShift => imap2!(a, b, o, same, |x, y| if (0..64).contains(&y) { x << y } else { 0 }),
        RightShift => imap2!(a, b, o, same, |x, y| if (0..64).contains(&y) { x >> y } else if x < 0 { -1 } else { 0 }),
        Eq => imap2!(a, b, o, boolean, |x, y| x == y),
        Ne => imap2!(a, b, o, boolean, |x, y| x != y),
        Lt => imap2!(a, b, o, boolean, |x, y| x < y),
        Le => imap2!(a, b, o, boolean, |x, y| x <= y),
        Gt => imap2!(a, b, o, boolean, |x, y| x > y),
        Ge => imap2!(a, b, o, boolean, |x, y| x >= y),
        LogicalAnd => imap2!(a, b, o, boolean, |x, y| x != 0 && y != 0),
        LogicalOr => imap2!(a, b, o, boolean, |x, y| x != 0 || y != 0),
        LogicalXor => imap2!(a, b, o, boolean, |x, y| (x != 0) != (y != 0)),
        Div => unreachable!("true division always computes in a float type"),
    }
}

#[inline(always)]
fn floor_div<R: Real>(x: R, y: R) -> R {
    let (zero, one) = (<R as num_traits::Zero>::zero(), <R as num_traits::One>::one());
    // Python's floor division: floor of the exact quotient, via fmod to avoid double rounding.
    if y == zero {
        return x / y;
    }
    let m = x % y;
    let mut d = (x - m) / y;
    if m != zero && ((y < zero) != (m < zero)) {
        d = d - one;
    }
    if d == zero {
        return (x / y) * zero;
    }
    let f = d.floor();
    if d - f > R::from(0.5).unwrap() { f + one } else { f }
}

fn int_pow(base: i64, exp: i64) -> i64 {
    match exp {
        e if e < 0 => match base {
            1 => 1,
            -1 => if e % 2 == 0 { 1 } else { -1 },
            _ => 0,
        },
        e => base.wrapping_pow(e.min(u32::MAX as i64) as u32),
    }
}

