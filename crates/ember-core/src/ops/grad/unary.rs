//! Derivatives of the one-input elementwise ops (`g` is the output's gradient, `x` the input,
//! `y` the output). Ops with bool or integer results have none.
use super::{apply, cmp, div, keep, mul, neg, pick, scale, shift, zeros_like};
use crate::autograd::{record_with_jvp, JvpFn};
use crate::error::Result;
use crate::ops::binary::BinaryOp::{Ge, Gt, Le, Lt};
use crate::ops::unary::UnaryOp::{self, *};
use crate::tensor::Tensor;
use std::f64::consts::{LN_10, LN_2, PI};
use std::sync::Arc;

const SELU_ALPHA: f64 = 1.673_263_242_354_377_3;
const SELU_SCALE: f64 = 1.050_700_987_355_480_5;

type Formula = Arc<dyn Fn(&Tensor, &Tensor) -> Result<Tensor> + Send + Sync>;
type GradOnly = Arc<dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync>;

/// Which tensor a formula reads besides the gradient.
enum Uses {
    Nothing(GradOnly),
    Input(Formula),
    Output(Formula),
}

/// Records the node of `y = op(x)`. A real elementwise op's Jacobian is diagonal, so its
/// tangent is its backward formula applied to the input's tangent.
pub(crate) fn record_unary(op: UnaryOp, x: &Tensor, y: &Tensor) -> Result<()> {
    if x.dtype().is_complex() {
        return super::complex::record_unary(op, x, y);
    }
    if !y.dtype().is_float() {
        return Ok(());
    }
    let (name, uses) = formula(op);
    match uses {
        Uses::Nothing(f) => {
            let j = f.clone();
            let jvp = diagonal(move |t| j(t));
            record_with_jvp(name, &[x], &[y], &[], move |_, g| Ok(vec![Some(f(&g[0])?)]), jvp)
        }
        Uses::Input(f) => {
            let j = f.clone();
            record_with_jvp(name, &[x], &[y], &[x], move |ctx, g| Ok(vec![Some(f(&g[0], &ctx.saved(0)?)?)]), diagonal(move |t| j(t, x)))
        }
        Uses::Output(f) => {
            let j = f.clone();
            record_with_jvp(name, &[x], &[y], &[y], move |ctx, g| Ok(vec![Some(f(&g[0], &ctx.saved(0)?)?)]), diagonal(move |t| j(t, y)))
        }
    }
}

/// The forward rule of a one-input op whose Jacobian is diagonal: `formula` on the tangent.
fn diagonal<'a>(formula: impl Fn(&Tensor) -> Result<Tensor> + 'a) -> JvpFn<'a> {
    Box::new(move |t| Ok(vec![t[0].as_ref().map(&formula).transpose()?]))
}

fn nothing(f: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static) -> Uses {
    Uses::Nothing(Arc::new(f))
}
fn input(f: impl Fn(&Tensor, &Tensor) -> Result<Tensor> + Send + Sync + 'static) -> Uses {
    Uses::Input(Arc::new(f))
}
fn output(f: impl Fn(&Tensor, &Tensor) -> Result<Tensor> + Send + Sync + 'static) -> Uses {
    Uses::Output(Arc::new(f))
}

/// `g / sqrt(1 - x²)`.
fn over_sqrt_one_minus_sq(g: &Tensor, x: &Tensor) -> Result<Tensor> {
    div(g, &apply(Sqrt, &neg(&shift(&mul(x, x)?, -1.0)?)?)?)
}

fn formula(op: UnaryOp) -> (&'static str, Uses) {
    match op {
        Neg => ("NegBackward0", nothing(neg)),
        Abs => ("AbsBackward0", input(|g, x| mul(g, &apply(Sign, x)?))),
        Sign => ("SignBackward0", nothing(|g| zeros_like(g))),
        Floor => ("FloorBackward0", nothing(|g| zeros_like(g))),
        Ceil => ("CeilBackward0", nothing(|g| zeros_like(g))),
        Round => ("RoundBackward0", nothing(|g| zeros_like(g))),
        Trunc => ("TruncBackward0", nothing(|g| zeros_like(g))),
        Square => ("PowBackward0", input(|g, x| mul(g, &scale(x, 2.0)?))),
        Relu => ("ReluBackward0", output(|g, y| keep(&cmp(Gt, y, 0.0)?, g))),
        Hardtanh(lo, hi) => ("HardtanhBackward0", input(move |g, x| keep(&and(&cmp(Gt, x, lo)?, &cmp(Lt, x, hi)?)?, g))),
        Clamp(lo, hi) => ("ClampBackward1", input(move |g, x| {
            let mask = match (lo, hi) {
                (Some(lo), Some(hi)) => and(&cmp(Ge, x, lo)?, &cmp(Le, x, hi)?)?,
                (Some(lo), None) => cmp(Ge, x, lo)?,
                (None, Some(hi)) => cmp(Le, x, hi)?,
                (None, None) => return Ok(g.clone()),
            };
            keep(&mask, g)
        })),
        NanToNum(..) => ("NanToNumBackward0", input(|g, x| keep(&apply(IsFinite, x)?, g))),
        Exp => ("ExpBackward0", output(mul)),
        Exp2 => ("Exp2Backward0", output(|g, y| scale(&mul(g, y)?, LN_2))),
        Expm1 => ("Expm1Backward0", output(|g, y| mul(g, &shift(y, 1.0)?))),
        Log => ("LogBackward0", input(div)),
        Log2 => ("Log2Backward0", input(|g, x| div(g, &scale(x, LN_2)?))),
        Log10 => ("Log10Backward0", input(|g, x| div(g, &scale(x, LN_10)?))),
        Log1p => ("Log1pBackward0", input(|g, x| div(g, &shift(x, 1.0)?))),
        Sqrt => ("SqrtBackward0", output(|g, y| div(g, &scale(y, 2.0)?))),
        Rsqrt => ("RsqrtBackward0", output(|g, y| mul(g, &scale(&mul(y, &mul(y, y)?)?, -0.5)?))),
        Reciprocal => ("ReciprocalBackward0", output(|g, y| neg(&mul(g, &mul(y, y)?)?))),
        Sin => ("SinBackward0", input(|g, x| mul(g, &apply(Cos, x)?))),
        Cos => ("CosBackward0", input(|g, x| neg(&mul(g, &apply(Sin, x)?)?))),
        Tan => ("TanBackward0", output(|g, y| mul(g, &shift(&mul(y, y)?, 1.0)?))),
        Asin => ("AsinBackward0", input(over_sqrt_one_minus_sq)),
        Acos => ("AcosBackward0", input(|g, x| neg(&over_sqrt_one_minus_sq(g, x)?))),
        Atan => ("AtanBackward0", input(|g, x| div(g, &shift(&mul(x, x)?, 1.0)?))),
        Sinh => ("SinhBackward0", input(|g, x| mul(g, &apply(Cosh, x)?))),
        Cosh => ("CoshBackward0", input(|g, x| mul(g, &apply(Sinh, x)?))),
        Tanh => ("TanhBackward0", output(|g, y| mul(g, &neg(&shift(&mul(y, y)?, -1.0)?)?))),
        Sigmoid => ("SigmoidBackward0", output(|g, y| mul(g, &mul(y, &neg(&shift(y, -1.0)?)?)?))),
        Logit(eps) => ("LogitBackward0", input(move |g, x| {
            let d = div(g, &mul(x, &neg(&shift(x, -1.0)?)?)?)?;
            match eps {
                Some(e) => keep(&and(&cmp(Ge, x, e)?, &cmp(Le, x, 1.0 - e)?)?, &d),
                None => Ok(d),
            }
        })),
        Erf => ("ErfBackward0", input(|g, x| mul(g, &scale(&apply(Exp, &neg(&mul(x, x)?)?)?, 2.0 / PI.sqrt())?))),
        Erfc => ("ErfcBackward0", input(|g, x| mul(g, &scale(&apply(Exp, &neg(&mul(x, x)?)?)?, -2.0 / PI.sqrt())?))),
        Frac => ("FracBackward0", nothing(|g| Ok(g.clone()))),
        Gelu => ("GeluBackward0", input(|g, x| {
            // Φ(x) + x·φ(x)
            let cdf = scale(&shift(&apply(Erf, &scale(x, std::f64::consts::FRAC_1_SQRT_2)?)?, 1.0)?, 0.5)?;
            let pdf = scale(&apply(Exp, &scale(&mul(x, x)?, -0.5)?)?, 1.0 / (2.0 * PI).sqrt())?;
            mul(g, &super::add(&cdf, &mul(x, &pdf)?)?)
        })),
        GeluTanh => ("GeluBackward0", input(|g, x| {
            let k = (2.0 / PI).sqrt();
            let x2 = mul(x, x)?;
            let t = apply(Tanh, &scale(&super::add(x, &scale(&mul(&x2, x)?, 0.044715)?)?, k)?)?;
            let left = scale(&shift(&t, 1.0)?, 0.5)?;
            let dt = neg(&shift(&mul(&t, &t)?, -1.0)?)?;
            let right = mul(&scale(x, 0.5)?, &mul(&dt, &scale(&shift(&scale(&x2, 3.0 * 0.044715)?, 1.0)?, k)?)?)?;
            mul(g, &super::add(&left, &right)?)
        })),
        Silu => ("SiluBackward0", input(|g, x| {
            let s = apply(Sigmoid, x)?;
            mul(g, &mul(&s, &shift(&mul(x, &neg(&shift(&s, -1.0)?)?)?, 1.0)?)?)
        })),
        Mish => ("MishBackward0", input(|g, x| {
            let t = apply(Tanh, &crate::ops::unary::unary(Softplus(1.0, 20.0), x)?)?;
            let s = apply(Sigmoid, x)?;
            let inner = mul(x, &mul(&s, &neg(&shift(&mul(&t, &t)?, -1.0)?)?)?)?;
            mul(g, &super::add(&t, &inner)?)
        })),
        Selu => ("EluBackward0", input(|g, x| elu_grad(g, x, SELU_ALPHA, SELU_SCALE))),
        Elu(alpha) => ("EluBackward0", input(move |g, x| elu_grad(g, x, alpha, 1.0))),
        LeakyRelu(slope) => ("LeakyReluBackward0", input(move |g, x| {
            let pos = cmp(Gt, x, 0.0)?;
            pick(&pos, g, &scale(g, slope)?)
        })),
        Softplus(beta, threshold) => ("SoftplusBackward0", input(move |g, x| {
            let bx = scale(x, beta)?;
            let s = apply(Sigmoid, &bx)?;
            let linear = cmp(Gt, &bx, threshold)?;
            pick(&linear, g, &mul(g, &s)?)
        })),
        Hardswish => ("HardswishBackward0", input(|g, x| {
            let mid = mul(g, &shift(&scale(x, 1.0 / 3.0)?, 0.5)?)?;
            let inner = pick(&cmp(Le, x, 3.0)?, &mid, g)?;
            keep(&cmp(Ge, x, -3.0)?, &inner)
        })),
        Hardsigmoid => ("HardsigmoidBackward0", input(|g, x| keep(&and(&cmp(Gt, x, -3.0)?, &cmp(Lt, x, 3.0)?)?, &scale(g, 1.0 / 6.0)?))),
        Sgn => ("SgnBackward0", nothing(|g| zeros_like(g))),
        Conj => ("ConjPhysicalBackward0", nothing(|g| Ok(g.clone()))),
        Angle => ("AngleBackward0", nothing(|g| zeros_like(g))),
        LogicalNot | BitwiseNot | IsNan | IsInf | IsPosInf | IsNegInf | IsFinite | Signbit => unreachable!("{op:?} has a bool or integer result"),
    }
}

/// ELU's (and SELU's) derivative: `scale·g` for x > 0, `scale·alpha·exp(x)·g` otherwise.
fn elu_grad(g: &Tensor, x: &Tensor, alpha: f64, scale_: f64) -> Result<Tensor> {
    let neg_part = mul(g, &scale(&apply(Exp, x)?, alpha * scale_)?)?;
    pick(&cmp(Gt, x, 0.0)?, &scale(g, scale_)?, &neg_part)
}

fn and(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    super::bin(crate::ops::binary::BinaryOp::LogicalAnd, a, b)
}
