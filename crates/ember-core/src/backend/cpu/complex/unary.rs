//! One-input ops on complex tensors (the op's dtypes were checked by `ops::complex_unary`).
use super::{narrow, widen};
use crate::backend::cpu::map::unary_into;
use crate::dtype::{CDouble, CFloat, CHalf, DType};
use crate::ops::unary::UnaryOp::{self, *};
use crate::tensor::Tensor;
use num_complex::Complex;
use half::f16;
use num_traits::{Float, FloatConst};

/// Complex to complex of the same dtype; `$z` is a `Complex<f32>` or `Complex<f64>`.
macro_rules! cmap {
    ($x:expr, $o:expr, |$z:ident| $body:expr) => {
        match $x.dtype() {
            DType::C64 => unary_into::<CFloat, CFloat>($x, $o, |$z: CFloat| $body),
            DType::C128 => unary_into::<CDouble, CDouble>($x, $o, |$z: CDouble| $body),
            DType::C32 => unary_into::<CHalf, CHalf>($x, $o, |h: CHalf| {
                let $z = widen(h);
                narrow($body)
            }),
            d => unreachable!("complex kernel on {d}"),
        }
    };
}

/// Complex to the real dtype of its parts.
macro_rules! rmap {
    ($x:expr, $o:expr, |$z:ident| $body:expr) => {
        match $x.dtype() {
            DType::C64 => unary_into::<CFloat, f32>($x, $o, |$z: CFloat| $body),
            DType::C128 => unary_into::<CDouble, f64>($x, $o, |$z: CDouble| $body),
            DType::C32 => unary_into::<CHalf, f16>($x, $o, |h: CHalf| {
                let $z = widen(h);
                f16::from_f32($body)
            }),
            d => unreachable!("complex kernel on {d}"),
        }
    };
}

/// Complex to bool.
macro_rules! cpred {
    ($x:expr, $o:expr, |$z:ident| $body:expr) => {
        match $x.dtype() {
            DType::C64 => unary_into::<CFloat, bool>($x, $o, |$z: CFloat| $body),
            DType::C128 => unary_into::<CDouble, bool>($x, $o, |$z: CDouble| $body),
            DType::C32 => unary_into::<CHalf, bool>($x, $o, |h: CHalf| {
                let $z = widen(h);
                $body
            }),
            d => unreachable!("complex kernel on {d}"),
        }
    };
}

/// Computes `op(x)` into `o`; `out_dtype` has accepted the pair.
pub fn run(op: UnaryOp, x: &Tensor, o: &Tensor) {
    match op {
        Neg => cmap!(x, o, |z| -z),
        Conj => cmap!(x, o, |z| z.conj()),
        Sgn => cmap!(x, o, |z| sgn(z)),
        Square => cmap!(x, o, |z| z * z),
        Exp => cmap!(x, o, |z| z.exp()),
        Exp2 => cmap!(x, o, |z| z.exp2()),
        Expm1 => cmap!(x, o, |z| expm1(z)),
        Log => cmap!(x, o, |z| z.ln()),
        Log2 => cmap!(x, o, |z| z.log2()),
        Log10 => cmap!(x, o, |z| z.log10()),
        Log1p => cmap!(x, o, |z| log1p(z)),
        Sqrt => cmap!(x, o, |z| z.sqrt()),
        Rsqrt => cmap!(x, o, |z| div(one(z), z.sqrt())),
        Reciprocal => cmap!(x, o, |z| div(one(z), z)),
        Sin => cmap!(x, o, |z| z.sin()),
        Cos => cmap!(x, o, |z| z.cos()),
        Tan => cmap!(x, o, |z| z.tan()),
        Asin => cmap!(x, o, |z| z.asin()),
        Acos => cmap!(x, o, |z| z.acos()),
        Atan => cmap!(x, o, |z| z.atan()),
        Sinh => cmap!(x, o, |z| z.sinh()),
        Cosh => cmap!(x, o, |z| z.cosh()),
        Tanh => cmap!(x, o, |z| z.tanh()),
        Sigmoid => cmap!(x, o, |z| div(one(z), one(z) + (-z).exp())),
        Abs => rmap!(x, o, |z| z.re.hypot(z.im)),
        Angle => rmap!(x, o, |z| z.im.atan2(z.re)),
        IsNan => cpred!(x, o, |z| z.re.is_nan() || z.im.is_nan()),
        IsInf => cpred!(x, o, |z| z.re.is_infinite() || z.im.is_infinite()),
        IsFinite => cpred!(x, o, |z| z.re.is_finite() && z.im.is_finite()),
        LogicalNot => cpred!(x, o, |z| z.re == 0.0 && z.im == 0.0),
        _ => unreachable!("out_dtype refuses {op:?} on complex"),
    }
}

#[inline(always)]
fn one<R: Float>(_like: Complex<R>) -> Complex<R> {
    Complex::new(R::one(), R::zero())
}

/// `z / |z|`, and 0 at 0 (PyTorch's `sgn`).
#[inline(always)]
fn sgn<R: Float>(z: Complex<R>) -> Complex<R> {
    let r = z.re.hypot(z.im);
    if r == R::zero() {
        Complex::new(R::zero(), R::zero())
    } else {
        Complex::new(z.re / r, z.im / r)
    }
}

/// `exp(z) - 1` without cancellation for small `z`: `expm1(a)·cos b - 2 sin²(b/2) + i·e^a sin b`.
#[inline(always)]
fn expm1<R: Float>(z: Complex<R>) -> Complex<R> {
    let half = (z.im / (R::one() + R::one())).sin();
    let re = z.re.exp_m1() * z.im.cos() - (R::one() + R::one()) * half * half;
    Complex::new(re, z.re.exp() * z.im.sin())
}

/// `log(1 + z)` without cancellation for small `z`.
#[inline(always)]
fn log1p<R: Float>(z: Complex<R>) -> Complex<R> {
    let (a, b) = (z.re, z.im);
    let two = R::one() + R::one();
    // |1+z|² - 1 = 2a + a² + b², then log|1+z| = log1p(that) / 2.
    let re = (two * a + a * a + b * b).ln_1p() / two;
    Complex::new(re, b.atan2(R::one() + a))
}

/// Smith's complex division: scales by the larger part of the divisor so that neither the
/// product nor `|b|²` overflows (the textbook formula does for parts beyond ~1e154 in f64).
#[inline(always)]
pub fn div<R: Float>(a: Complex<R>, b: Complex<R>) -> Complex<R> {
    if b.re.abs() >= b.im.abs() {
        if b.re == R::zero() && b.im == R::zero() {
            return Complex::new(a.re / b.re.abs(), a.im / b.re.abs());
        }
        let r = b.im / b.re;
        let d = b.re + b.im * r;
        Complex::new((a.re + a.im * r) / d, (a.im - a.re * r) / d)
    } else {
        let r = b.re / b.im;
        let d = b.im + b.re * r;
        Complex::new((a.re * r + a.im) / d, (a.im * r - a.re) / d)
    }
}

/// `a ** b`, with PyTorch's special cases: anything to the 0 is 1, 0 to a positive real power 0.
#[inline(always)]
pub fn pow<R: Float + FloatConst>(a: Complex<R>, b: Complex<R>) -> Complex<R> {
    if b.re == R::zero() && b.im == R::zero() {
        return Complex::new(R::one(), R::zero());
    }
    if a.re == R::zero() && a.im == R::zero() {
        return if b.im == R::zero() && b.re > R::zero() { Complex::new(R::zero(), R::zero()) } else { Complex::new(R::nan(), R::nan()) };
    }
    if b.im == R::zero() && b.re == R::one() {
        return a;
    }
    if b.im == R::zero() && b.re == R::one() + R::one() {
        return a * a;
    }
    (b * a.ln()).exp()
}
