//! The CPU kernels of the one-input elementwise ops (`ops::unary` holds their semantics).
use crate::dtype::{DType, Element};
use crate::backend::cpu::map::{unary_into, unary_into_with_slow_lanes};
use crate::backend::cpu::math::{cos_f32, sin_cos_reduce_exactly, sin_f32, Real};
use crate::ops::unary::UnaryOp::{self, *};
use crate::tensor::Tensor;
use half::{bf16, f16};

macro_rules! fmap {
    ($x:expr, $o:expr, |$v:ident| $body:expr) => {
        match $x.dtype() {
            DType::F32 => unary_into::<f32, f32>($x, $o, |$v: f32| $body),
            DType::F64 => unary_into::<f64, f64>($x, $o, |$v: f64| $body),
            DType::F16 => crate::backend::cpu::half::map::unary_into::<f16>($x, $o, |$v: f32| $body),
            DType::BF16 => crate::backend::cpu::half::map::unary_into::<bf16>($x, $o, |$v: f32| $body),
            d => unreachable!("float kernel on {d}"),
        }
    };
}

/// Same-dtype op on integers, written once over i64.
macro_rules! imap {
    ($x:expr, $o:expr, |$v:ident| $body:expr) => {
        $crate::with_dtype!($x.dtype(), T, unary_into::<T, T>($x, $o, |h: T| {
            let $v = h.to_i64();
            T::from_i64($body)
        }))
    };
}

/// Predicate on floats; integers answer from `int_answer`.
macro_rules! fpred {
    ($x:expr, $o:expr, $int_answer:expr, |$v:ident| $body:expr) => {
        match $x.dtype() {
            DType::F32 => unary_into::<f32, bool>($x, $o, |$v: f32| $body),
            DType::F64 => unary_into::<f64, bool>($x, $o, |$v: f64| $body),
            DType::F16 => unary_into::<f16, bool>($x, $o, |h: f16| {
                let $v = h.to_f32();
                $body
            }),
            DType::BF16 => unary_into::<bf16, bool>($x, $o, |h: bf16| {
                let $v = h.to_f32();
                $body
            }),
            _ => $crate::with_dtype!($x.dtype(), T, unary_into::<T, bool>($x, $o, |h: T| {
                let $v = h.to_i64();
                $int_answer($v)
            })),
        }
    };
}

/// float32 sin and cos on the vectorisable `math` kernels, with libm for the lanes beyond their
/// exact range reduction (and for inf and NaN); other dtypes on libm.
fn sin_or_cos(x: &Tensor, o: &Tensor, cos: bool) {
    match x.dtype() {
        DType::F32 if cos => unary_into_with_slow_lanes::<f32>(x, o, cos_f32, sin_cos_reduce_exactly, f32::cos),
        DType::F32 => unary_into_with_slow_lanes::<f32>(x, o, sin_f32, sin_cos_reduce_exactly, f32::sin),
        _ if cos => fmap!(x, o, |v| v.cos()),
        _ => fmap!(x, o, |v| v.sin()),
    }
}

pub fn run(op: UnaryOp, x: &Tensor, o: &Tensor) {
    if x.dtype().is_complex() {
        return super::complex::unary::run(op, x, o);
    }
    let is_float = x.dtype().is_float();
    match op {
        Sgn => run(Sign, x, o),
        Conj if is_float => fmap!(x, o, |v| v),
        Conj => imap!(x, o, |v| v),
        Angle => fmap!(x, o, |v| if v < 0.0 { k(v, std::f64::consts::PI) } else if v.is_nan() { v } else { 0.0 }),
        Neg if is_float => fmap!(x, o, |v| -v),
        Neg => imap!(x, o, |v| v.wrapping_neg()),
        Abs if is_float => fmap!(x, o, |v| v.abs()),
        Abs => imap!(x, o, |v| v.wrapping_abs()),
        Sign if is_float => fmap!(x, o, |v| if v > 0.0 { 1.0 } else if v < 0.0 { -1.0 } else { v * 0.0 }),
        Sign => imap!(x, o, |v| v.signum()),
        Square if is_float => fmap!(x, o, |v| v * v),
        Square => imap!(x, o, |v| v.wrapping_mul(v)),
        Floor if is_float => fmap!(x, o, |v| v.floor()),
        Ceil if is_float => fmap!(x, o, |v| v.ceil()),
        Round if is_float => fmap!(x, o, |v| v.round_ties_even()),
        Trunc if is_float => fmap!(x, o, |v| v.trunc()),
        Floor | Ceil | Round | Trunc => imap!(x, o, |v| v),
        Relu if is_float => fmap!(x, o, |v| if v > 0.0 { v } else if v.is_nan() { v } else { 0.0 }),
        Relu => imap!(x, o, |v| v.max(0)),
        Hardtanh(lo, hi) if is_float => fmap!(x, o, |v| if v.is_nan() { v } else { v.max(k(v, lo)).min(k(v, hi)) }),
        Hardtanh(lo, hi) => imap!(x, o, |v| v.max(lo as i64).min(hi as i64)),
        Clamp(lo, hi) if is_float || o.dtype().is_float() => {
            let (lo, hi) = (lo.unwrap_or(f64::NEG_INFINITY), hi.unwrap_or(f64::INFINITY));
            // A NaN bound propagates as PyTorch's (`f64::max` would drop it).
            let nan_bound = lo.is_nan() || hi.is_nan();
            fmap!(x, o, |v| if v.is_nan() { v } else if nan_bound { k(v, f64::NAN) } else { v.max(k(v, lo)).min(k(v, hi)) })
        }
        Clamp(lo, hi) => {
            let (lo, hi) = (lo.map_or(i64::MIN, |v| v as i64), hi.map_or(i64::MAX, |v| v as i64));
            imap!(x, o, |v| v.max(lo).min(hi))
        }
        NanToNum(nan, pos, neg) if is_float => {
            let finite = |v: f64, max: f64| v.clamp(-max, max);
            match x.dtype() {
                DType::F64 => unary_into::<f64, f64>(x, o, |v| {
                    if v.is_nan() { nan } else if v == f64::INFINITY { pos } else if v == f64::NEG_INFINITY { neg } else { v }
                }),
                d => {
                    let max = match d { DType::F16 => 65504.0, DType::BF16 => 3.389_531_4e38, _ => f32::MAX as f64 };
                    let (nan, pos, neg) = (finite(nan, max) as f32, finite(pos, max) as f32, finite(neg, max) as f32);
                    fmap!(x, o, |v| if v.is_nan() { k(v, nan as f64) } else if v.is_infinite() { if v > 0.0 { k(v, pos as f64) } else { k(v, neg as f64) } } else { v })
                }
            }
        }
        NanToNum(..) => imap!(x, o, |v| v),
        Exp => fmap!(x, o, |v| v.vexp()),
        Exp2 => fmap!(x, o, |v| v.exp2()),
        Expm1 => fmap!(x, o, |v| v.exp_m1()),
        Log => fmap!(x, o, |v| v.vln()),
        Log2 => fmap!(x, o, |v| v.log2()),
        Log10 => fmap!(x, o, |v| v.log10()),
        Log1p => fmap!(x, o, |v| v.vln_1p()),
        Sqrt => fmap!(x, o, |v| v.sqrt()),
        Rsqrt => fmap!(x, o, |v| 1.0 / v.sqrt()),
        Reciprocal => fmap!(x, o, |v| 1.0 / v),
        Sin => sin_or_cos(x, o, false),
        Cos => sin_or_cos(x, o, true),
        Tan => fmap!(x, o, |v| v.tan()),
        Asin => fmap!(x, o, |v| v.asin()),
        Acos => fmap!(x, o, |v| v.acos()),
        Atan => fmap!(x, o, |v| v.atan()),
        Sinh => fmap!(x, o, |v| v.sinh()),
        Cosh => fmap!(x, o, |v| v.cosh()),
        Tanh => fmap!(x, o, |v| v.vtanh()),
        Sigmoid => fmap!(x, o, |v| 1.0 / (1.0 + (-v).vexp())),
        Logit(eps) => match eps {
            Some(e) => fmap!(x, o, |v| {
                let lo = k(v, e);
                let z = v.max(lo).min(1.0 - lo);
                (z / (1.0 - z)).ln()
            }),
            None => fmap!(x, o, |v| (v / (1.0 - v)).ln()),
        },
        Erf => fmap!(x, o, |v| Real::erf(v)),
        Erfc => fmap!(x, o, |v| Real::erfc(v)),
        Frac => fmap!(x, o, |v| v - v.trunc()),
        Gelu => fmap!(x, o, |v| 0.5 * v * (1.0 + Real::gelu_erf(v * 0.707_106_781_186_547_6))),
        GeluTanh => fmap!(x, o, |v| {
            let inner = 0.797_884_560_802_865_4 * (v + 0.044715 * v * v * v);
            0.5 * v * (1.0 + inner.vtanh())
        }),
        Silu => fmap!(x, o, |v| v / (1.0 + (-v).vexp())),
        Mish => fmap!(x, o, |v| v * softplus(v, 1.0, 20.0).vtanh()),
        Selu => {
            const ALPHA: f64 = 1.673_263_242_354_377_3;
            const SCALE: f64 = 1.050_700_987_355_480_5;
            fmap!(x, o, |v| if v > 0.0 { v * k(v, SCALE) } else { (v.vexp() - 1.0) * k(v, SCALE * ALPHA) })
        }
        Elu(alpha) => fmap!(x, o, |v| if v > 0.0 { v } else { (v.vexp() - 1.0) * k(v, alpha) }),
        LeakyRelu(slope) => fmap!(x, o, |v| if v > 0.0 { v } else { v * k(v, slope) }),
        Softplus(beta, threshold) => fmap!(x, o, |v| softplus(v, k(v, beta), k(v, threshold))),
        Hardswish => fmap!(x, o, |v| v * (v + 3.0).max(0.0).min(6.0) / 6.0),
        Hardsigmoid => fmap!(x, o, |v| (v + 3.0).max(0.0).min(6.0) / 6.0),
        LogicalNot => crate::with_dtype!(x.dtype(), T, unary_into::<T, bool>(x, o, |v: T| !v.is_nonzero())),
        BitwiseNot if x.dtype() == DType::Bool => unary_into::<bool, bool>(x, o, |v| !v),
        BitwiseNot => imap!(x, o, |v| !v),
        IsNan => fpred!(x, o, |_| false, |v| v.is_nan()),
        IsInf => fpred!(x, o, |_| false, |v| v.is_infinite()),
        IsPosInf => fpred!(x, o, |_| false, |v| v.is_infinite() && v > 0.0),
        IsNegInf => fpred!(x, o, |_| false, |v| v.is_infinite() && v < 0.0),
        IsFinite => fpred!(x, o, |_| true, |v| v.is_finite()),
        Signbit => fpred!(x, o, |v: i64| v < 0, |v| v.is_sign_negative()),
    }
}

/// `c` as a constant of `like`'s float type, so one kernel body serves f32 and f64.
#[inline(always)]
fn k<R: num_traits::Float>(_like: R, c: f64) -> R {
    R::from(c).unwrap()
}

#[inline(always)]
fn softplus<R: Real>(v: R, beta: R, threshold: R) -> R {
    let bv = v * beta;
    if bv > threshold {
        v
    } else {
        bv.vexp().vln_1p() / beta
    }
}
