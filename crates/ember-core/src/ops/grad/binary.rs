//! Derivatives of the two-input elementwise ops, `where` and `lerp`. A number operand arrives
//! as a 0-d tensor that needs no gradient; gradients of broadcast operands are summed down to
//! their shapes by the engine.
use super::{add, apply, cmp, bin, div, keep, mul, neg, pick, scale, shift, sub, zeros_like};
use crate::autograd::{record, record_with_jvp, Ctx};
use crate::error::Result;
use crate::ops::binary::BinaryOp::{self, *};
use crate::ops::unary::UnaryOp;
use crate::tensor::Tensor;

/// `f()` when input `i` takes a gradient.
fn want(ctx: &Ctx, i: usize, f: impl FnOnce() -> Result<Tensor>) -> Result<Option<Tensor>> {
    if ctx.needs_input_grad(i) {
        f().map(Some)
    } else {
        Ok(None)
    }
}

/// The tangent `Σ terms` (absent terms are zero) at `y`'s shape.
fn tangent_sum(y: &Tensor, terms: [Option<Tensor>; 2]) -> Result<Vec<Option<Tensor>>> {
    let sum = match terms {
        [Some(p), Some(q)] => add(&p, &q)?,
        [Some(p), None] | [None, Some(p)] => p,
        [None, None] => return Ok(vec![None]),
    };
    Ok(vec![Some(if sum.shape() == y.shape() { sum } else { sum.broadcast_to(y.shape())? })])
}

/// Records the node of `y = op(a, b)`.
pub(crate) fn record_binary(op: BinaryOp, a: &Tensor, b: &Tensor, y: &Tensor) -> Result<()> {
    if y.dtype().is_complex() {
        return super::complex::record_binary(op, a, b, y);
    }
    if !y.dtype().is_float() {
        return Ok(());
    }
    let ab = [a, b];
    match op {
        Add => record_with_jvp(
            "AddBackward0",
            &ab,
            &[y],
            &[],
            |ctx, g| Ok(vec![want(ctx, 0, || Ok(g[0].clone()))?, want(ctx, 1, || Ok(g[0].clone()))?]),
            Box::new(|t| tangent_sum(y, [t[0].clone(), t[1].clone()])),
        ),
        Sub => record_with_jvp(
            "SubBackward0",
            &ab,
            &[y],
            &[],
            |ctx, g| Ok(vec![want(ctx, 0, || Ok(g[0].clone()))?, want(ctx, 1, || neg(&g[0]))?]),
            Box::new(|t| tangent_sum(y, [t[0].clone(), t[1].as_ref().map(neg).transpose()?])),
        ),
        Mul => record_with_jvp(
            "MulBackward0",
            &ab,
            &[y],
            &ab,
            |ctx, g| {
                let g = &g[0];
                Ok(vec![want(ctx, 0, || mul(g, &ctx.saved(1)?))?, want(ctx, 1, || mul(g, &ctx.saved(0)?))?])
            },
            // (a·b)' = a'·b + a·b'
            Box::new(|t| tangent_sum(y, [t[0].as_ref().map(|ta| mul(ta, b)).transpose()?, t[1].as_ref().map(|tb| mul(a, tb)).transpose()?])),
        ),
        Div => record_with_jvp(
            "DivBackward0",
            &ab,
            &[y],
            &ab,
            |ctx, g| {
                let (g, b) = (&g[0], ctx.saved(1)?);
                Ok(vec![want(ctx, 0, || div(g, &b))?, want(ctx, 1, || neg(&div(&mul(g, &ctx.saved(0)?)?, &mul(&b, &b)?)?))?])
            },
            // (a/b)' = (a' - b'·y) / b
            Box::new(|t| {
                let num = tangent_sum(y, [t[0].clone(), t[1].as_ref().map(|tb| neg(&mul(tb, y)?)).transpose()?])?.remove(0);
                Ok(vec![num.map(|n| div(&n, b)).transpose()?])
            }),
        ),
        Pow => record("PowBackward1", &ab, &[y], &[a, b, y], |ctx, g| {
            let (g, a, b) = (&g[0], ctx.saved(0)?, ctx.saved(1)?);
            let ga = want(ctx, 0, || {
                // b·a^(b-1), and 0 where b = 0 (even at a = 0)
                let d = mul(&b, &bin(Pow, &a, &shift(&b, -1.0)?)?)?;
                keep(&cmp(Ne, &b, 0.0)?, &mul(g, &d)?)
            })?;
            let gb = want(ctx, 1, || {
                // y·ln(a), and 0 where a = 0 and b >= 0
                let d = mul(&ctx.saved(2)?, &apply(UnaryOp::Log, &a)?)?;
                let zero = bin(LogicalAnd, &cmp(Eq, &a, 0.0)?, &cmp(Ge, &b, 0.0)?)?;
                pick(&zero, &zeros_like(g)?, &mul(g, &d)?)
            })?;
            Ok(vec![ga, gb])
        }),
        Atan2 => record("Atan2Backward0", &ab, &[y], &ab, |ctx, g| {
            let (g, a, b) = (&g[0], ctx.saved(0)?, ctx.saved(1)?);
            let r2 = add(&mul(&a, &a)?, &mul(&b, &b)?)?;
            Ok(vec![want(ctx, 0, || div(&mul(g, &b)?, &r2))?, want(ctx, 1, || neg(&div(&mul(g, &a)?, &r2)?))?])
        }),
        Hypot => record("HypotBackward0", &ab, &[y], &[a, b, y], |ctx, g| {
            let (g, y) = (&g[0], ctx.saved(2)?);
            Ok(vec![want(ctx, 0, || div(&mul(g, &ctx.saved(0)?)?, &y))?, want(ctx, 1, || div(&mul(g, &ctx.saved(1)?)?, &y))?])
        }),
        Maximum | Minimum => record(if op == Maximum { "MaximumBackward0" } else { "MinimumBackward0" }, &ab, &[y], &ab, move |ctx, g| {
            // Ties share the gradient equally.
            let (g, a, b) = (&g[0], ctx.saved(0)?, ctx.saved(1)?);
            let shared = pick(&bin(Eq, &a, &b)?, &scale(g, 0.5)?, g)?;
            let wins = if op == Maximum { Ge } else { Le };
            Ok(vec![want(ctx, 0, || keep(&bin(wins, &a, &b)?, &shared))?, want(ctx, 1, || keep(&bin(wins, &b, &a)?, &shared))?])
        }),
        Fmax | Fmin => record(if op == Fmax { "FmaxBackward0" } else { "FminBackward0" }, &ab, &[y], &ab, move |ctx, g| {
            // The other operand's NaN makes this one win.
            let (g, a, b) = (&g[0], ctx.saved(0)?, ctx.saved(1)?);
            let a_wins = bin(LogicalOr, &bin(if op == Fmax { Ge } else { Le }, &a, &b)?, &apply(UnaryOp::IsNan, &b)?)?;
            Ok(vec![want(ctx, 0, || keep(&a_wins, g))?, want(ctx, 1, || keep(&apply(UnaryOp::LogicalNot, &a_wins)?, g))?])
        }),
        Remainder | Fmod => record(if op == Remainder { "RemainderBackward0" } else { "FmodBackward0" }, &ab, &[y], &ab, move |ctx, g| {
            let g = &g[0];
            Ok(vec![want(ctx, 0, || Ok(g.clone()))?, want(ctx, 1, || {
                let (a, b) = (ctx.saved(0)?, ctx.saved(1)?);
                let q = if op == Remainder {
                    bin(FloorDiv, &a, &b)?
                } else {
                    apply(UnaryOp::Trunc, &div(&a, &b)?)?
                };
                neg(&mul(g, &q)?)
            })?])
        }),
        FloorDiv | TruncDiv => record(if op == FloorDiv { "FloorDivideBackward0" } else { "DivBackward0" }, &ab, &[y], &[], |ctx, g| {
            Ok(vec![want(ctx, 0, || zeros_like(&g[0]))?, want(ctx, 1, || zeros_like(&g[0]))?])
        }),
        Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor | BitwiseAnd | BitwiseOr | BitwiseXor | LeftShift | RightShift => Ok(()),
    }
}

/// `y = where(cond, a, b)`: the gradient goes to the picked side.
pub(crate) fn record_where(cond: &Tensor, a: &Tensor, b: &Tensor, y: &Tensor) -> Result<()> {
    record("WhereBackward0", &[a, b], &[y], &[cond], |ctx, g| {
        let (g, c) = (&g[0], ctx.saved(0)?);
        Ok(vec![want(ctx, 0, || keep(&c, g))?, want(ctx, 1, || pick(&c, &zeros_like(g)?, g))?])
    })
}

/// `y = start + w·(end - start)`.
pub(crate) fn record_lerp(start: &Tensor, end: &Tensor, weight: &Tensor, y: &Tensor) -> Result<()> {
    record("LerpBackward1", &[start, end, weight], &[y], &[start, end, weight], |ctx, g| {
        let (g, w) = (&g[0], ctx.saved(2)?);
        Ok(vec![
            want(ctx, 0, || mul(g, &neg(&shift(&w, -1.0)?)?))?,
            want(ctx, 1, || mul(g, &w))?,
            want(ctx, 2, || mul(g, &sub(&ctx.saved(1)?, &ctx.saved(0)?)?))?,
        ])
    })
}
