//! Derivatives of the matrix products: for `y = a @ b`, `da = g @ bᴴ` and `db = aᴴ @ g` (the
//! conjugate transposes, which are the transposes for real operands), with
//! vector operands seen as matrices and broadcast batch dims summed back down.
use crate::autograd::record_with_jvp;
use crate::error::Result;
use crate::ops::matmul::{bmm, matmul, mm};
use crate::ops::complex::conj;
use crate::ops::reduce::sum_to;
use crate::tensor::Tensor;

/// The tangent of a bilinear product `y = p(a, b)`: `p(a', b) + p(a, b')`.
fn product_rule(p: impl Fn(&Tensor, &Tensor) -> Result<Tensor>, a: &Tensor, b: &Tensor, t: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
    let left = t[0].as_ref().map(|ta| p(ta, b)).transpose()?;
    let right = t[1].as_ref().map(|tb| p(a, tb)).transpose()?;
    Ok(vec![match (left, right) {
        (Some(l), Some(r)) => Some(crate::ops::grad::add(&l, &r)?),
        (l, r) => l.or(r),
    }])
}

pub(crate) fn record_mm(a: &Tensor, b: &Tensor, y: &Tensor) -> Result<()> {
    record_with_jvp(
        "MmBackward0",
        &[a, b],
        &[y],
        &[a, b],
        |ctx, g| {
            let g = &g[0];
            let ga = if ctx.needs_input_grad(0) { Some(mm(g, &conj(&ctx.saved(1)?)?.t()?)?) } else { None };
            let gb = if ctx.needs_input_grad(1) { Some(mm(&conj(&ctx.saved(0)?)?.t()?, g)?) } else { None };
            Ok(vec![ga, gb])
        },
        Box::new(|t| product_rule(mm, a, b, t)),
    )
}

pub(crate) fn record_bmm(a: &Tensor, b: &Tensor, y: &Tensor) -> Result<()> {
    record_with_jvp(
        "BmmBackward0",
        &[a, b],
        &[y],
        &[a, b],
        |ctx, g| {
            let g = &g[0];
            let ga = if ctx.needs_input_grad(0) { Some(bmm(g, &conj(&ctx.saved(1)?)?.transpose(1, 2)?)?) } else { None };
            let gb = if ctx.needs_input_grad(1) { Some(bmm(&conj(&ctx.saved(0)?)?.transpose(1, 2)?, g)?) } else { None };
            Ok(vec![ga, gb])
        },
        Box::new(|t| product_rule(bmm, a, b, t)),
    )
}

pub(crate) fn record_matmul(a: &Tensor, b: &Tensor, y: &Tensor) -> Result<()> {
    let (da, db) = (a.ndim(), b.ndim());
    let name = match (da, db) {
        (1, 1) => "DotBackward0",
        (2, 1) => "MvBackward0",
        (2, 2) => "MmBackward0",
        _ => "MatmulBackward0",
    };
    let (a_shape, b_shape) = (a.shape().to_vec(), b.shape().to_vec());
    let backward = move |ctx: &crate::autograd::Ctx, g: &[Tensor]| {
        let (a, b) = (conj(&ctx.saved(0)?)?, conj(&ctx.saved(1)?)?);
        // Vectors as [1, k] and [k, 1] matrices, and the gradient with their dims back.
        let a2 = if da == 1 { a.unsqueeze(0)? } else { a };
        let b2 = if db == 1 { b.unsqueeze(1)? } else { b };
        let mut g2 = g[0].clone();
        if da == 1 {
            g2 = g2.unsqueeze(if db == 1 { 0 } else { -2 })?;
        }
        if db == 1 {
            g2 = g2.unsqueeze(-1)?;
        }
        let back = |grad: Tensor, t2: &Tensor, shape: &[usize]| -> Result<Tensor> {
            sum_to(&grad, t2.shape())?.reshape(&shape.iter().map(|&d| d as i64).collect::<Vec<_>>())
        };
        let ga = if ctx.needs_input_grad(0) { Some(back(matmul(&g2, &b2.transpose(-1, -2)?)?, &a2, &a_shape)?) } else { None };
        let gb = if ctx.needs_input_grad(1) { Some(back(matmul(&a2.transpose(-1, -2)?, &g2)?, &b2, &b_shape)?) } else { None };
        Ok(vec![ga, gb])
    };
    record_with_jvp(name, &[a, b], &[y], &[a, b], backward, Box::new(|t| product_rule(matmul, a, b, t)))
}
