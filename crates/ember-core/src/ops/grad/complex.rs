//! Derivatives of elementwise ops on complex inputs, in PyTorch's convention: the gradient of a
//! real loss `L` with respect to `z` is `∂L/∂x + i·∂L/∂y` (twice the conjugate Wirtinger
//! derivative), so for `s = f(z)` with incoming gradient `g` the chain rule reads
//! `conj(∂s/∂z)·g + (∂s/∂z̄)·conj(g)`. A holomorphic `f` leaves `g·conj(f'(z))`.
use super::{apply, div, mul, neg, scale, shift, sub, zeros_like};
use crate::autograd::{record, Ctx};
use crate::bail;
use crate::error::Result;
use crate::ops::binary::BinaryOp::{self, *};
use crate::ops::unary::UnaryOp::{self, *};
use crate::tensor::Tensor;
use std::f64::consts::{LN_10, LN_2};

fn conj(t: &Tensor) -> Result<Tensor> {
    crate::ops::complex::conj(t)
}

/// `g·conj(d)`: the gradient through a holomorphic op whose derivative is `d`.
fn through(g: &Tensor, d: &Tensor) -> Result<Tensor> {
    mul(g, &conj(d)?)
}

/// `g·i·z/|z|²` and 0 at 0: the gradient of `angle`.
fn angle_grad(g: &Tensor, z: &Tensor) -> Result<Tensor> {
    let r2 = mul(&apply(Abs, z)?, &apply(Abs, z)?)?;
    let iz = mul(z, &crate::ops::binary::Scalar::Complex(crate::dtype::CDouble::new(0.0, 1.0)).to_tensor(z.dtype()))?;
    let q = div(&mul(g, &iz)?, &r2)?;
    zero_where_zero(&q, z)
}

/// `q`, with 0 where `z` is 0 (the one-sided derivatives there are taken as 0, as PyTorch does).
fn zero_where_zero(q: &Tensor, z: &Tensor) -> Result<Tensor> {
    let nz = crate::ops::binary::binary(Ne, crate::ops::binary::Operand::Tensor(z), crate::ops::binary::Operand::Scalar(crate::ops::binary::Scalar::Float(0.0)))?;
    super::pick(&nz, q, &zeros_like(q)?)
}

/// `(g - sgn²·conj(g)) / (2|z|)`, 0 at 0: the gradient of `sgn`.
fn sgn_grad(g: &Tensor, z: &Tensor, s: &Tensor) -> Result<Tensor> {
    let num = sub(g, &mul(&mul(s, s)?, &conj(g)?)?)?;
    let q = div(&num, &scale(&apply(Abs, z)?, 2.0)?)?;
    zero_where_zero(&q, z)
}

/// `(gradient, input, output) -> input gradient`.
type Formula = fn(&Tensor, &Tensor, &Tensor) -> Result<Tensor>;

/// Records `y = op(x)` for complex `x`.
pub(crate) fn record_unary(op: UnaryOp, x: &Tensor, y: &Tensor) -> Result<()> {
    if !y.dtype().is_inexact() {
        return Ok(());
    }
    let (name, f): (&'static str, Formula) = match op {
        Neg => ("NegBackward0", |g, _, _| neg(g)),
        Conj => ("ConjPhysicalBackward0", |g, _, _| conj(g)),
        Abs => ("AbsBackward0", |g, x, _| mul(g, &apply(Sgn, x)?)),
        Angle => ("AngleBackward0", |g, x, _| angle_grad(g, x)),
        Sgn => ("SgnBackward0", |g, x, y| sgn_grad(g, x, y)),
        Square => ("SquareBackward0", |g, x, _| through(g, &scale(x, 2.0)?)),
        Exp => ("ExpBackward0", |g, _, y| through(g, y)),
        Exp2 => ("Exp2Backward0", |g, _, y| through(g, &scale(y, LN_2)?)),
        Expm1 => ("Expm1Backward0", |g, _, y| through(g, &shift(y, 1.0)?)),
        Log => ("LogBackward0", |g, x, _| div(g, &conj(x)?)),
        Log2 => ("Log2Backward0", |g, x, _| div(g, &scale(&conj(x)?, LN_2)?)),
        Log10 => ("Log10Backward0", |g, x, _| div(g, &scale(&conj(x)?, LN_10)?)),
        Log1p => ("Log1pBackward0", |g, x, _| div(g, &shift(&conj(x)?, 1.0)?)),
        Sqrt => ("SqrtBackward0", |g, _, y| div(g, &scale(&conj(y)?, 2.0)?)),
        Rsqrt => ("RsqrtBackward0", |g, _, y| through(g, &scale(&mul(&mul(y, y)?, y)?, -0.5)?)),
        Reciprocal => ("ReciprocalBackward0", |g, _, y| through(g, &neg(&mul(y, y)?)?)),
        Sin => ("SinBackward0", |g, x, _| through(g, &apply(Cos, x)?)),
        Cos => ("CosBackward0", |g, x, _| through(g, &neg(&apply(Sin, x)?)?)),
        Tan => ("TanBackward0", |g, _, y| through(g, &shift(&mul(y, y)?, 1.0)?)),
        Sinh => ("SinhBackward0", |g, x, _| through(g, &apply(Cosh, x)?)),
        Cosh => ("CoshBackward0", |g, x, _| through(g, &apply(Sinh, x)?)),
        Tanh => ("TanhBackward0", |g, _, y| through(g, &neg(&shift(&mul(y, y)?, -1.0)?)?)),
        Sigmoid => ("SigmoidBackward0", |g, _, y| through(g, &mul(y, &neg(&shift(y, -1.0)?)?)?)),
        // asin' = 1/sqrt(1 - z²), acos' = -asin', atan' = 1/(1 + z²)
        Asin => ("AsinBackward0", |g, x, _| div(g, &conj(&apply(Sqrt, &neg(&shift(&mul(x, x)?, -1.0)?)?)?)?)),
        Acos => ("AcosBackward0", |g, x, _| neg(&div(g, &conj(&apply(Sqrt, &neg(&shift(&mul(x, x)?, -1.0)?)?)?)?)?)),
        Atan => ("AtanBackward0", |g, x, _| div(g, &conj(&shift(&mul(x, x)?, 1.0)?)?)),
        _ => bail!(NotImplemented, "the derivative of {op:?} on complex input is not implemented"),
    };
    record(name, &[x], &[y], &[x, y], move |ctx, g| Ok(vec![Some(f(&g[0], &ctx.saved(0)?, &ctx.saved(1)?)?)]))
}

fn want(ctx: &Ctx, i: usize, f: impl FnOnce() -> Result<Tensor>) -> Result<Option<Tensor>> {
    if ctx.needs_input_grad(i) {
        f().map(Some)
    } else {
        Ok(None)
    }
}

/// Records `y = op(a, b)` for complex operands (both already of `y`'s dtype).
pub(crate) fn record_binary(op: BinaryOp, a: &Tensor, b: &Tensor, y: &Tensor) -> Result<()> {
    if !y.dtype().is_complex() {
        return Ok(());
    }
    let ab = [a, b];
    match op {
        Add => record("AddBackward0", &ab, &[y], &[], |ctx, g| Ok(vec![want(ctx, 0, || Ok(g[0].clone()))?, want(ctx, 1, || Ok(g[0].clone()))?])),
        Sub => record("SubBackward0", &ab, &[y], &[], |ctx, g| Ok(vec![want(ctx, 0, || Ok(g[0].clone()))?, want(ctx, 1, || neg(&g[0]))?])),
        Mul => record("MulBackward0", &ab, &[y], &ab, |ctx, g| {
            let g = &g[0];
            Ok(vec![want(ctx, 0, || through(g, &ctx.saved(1)?))?, want(ctx, 1, || through(g, &ctx.saved(0)?))?])
        }),
        Div => record("DivBackward0", &ab, &[y], &[b, y], |ctx, g| {
            let (g, b) = (&g[0], ctx.saved(0)?);
            Ok(vec![want(ctx, 0, || div(g, &conj(&b)?))?, want(ctx, 1, || neg(&through(g, &div(&ctx.saved(1)?, &b)?)?))?])
        }),
        Pow => record("PowBackward1", &ab, &[y], &[a, b, y], |ctx, g| {
            let (g, a, b, y) = (&g[0], ctx.saved(0)?, ctx.saved(1)?, ctx.saved(2)?);
            // d/da = b·a^(b-1) = b·y/a; d/db = y·ln a
            let ga = want(ctx, 0, || through(g, &mul(&b, &crate::ops::grad::bin(Pow, &a, &shift(&b, -1.0)?)?)?))?;
            let gb = want(ctx, 1, || through(g, &mul(&y, &apply(Log, &a)?)?))?;
            Ok(vec![ga, gb])
        }),
        _ => Ok(()),
    }
}
