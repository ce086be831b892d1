//! Derivatives of the `linalg` ops, in PyTorch's convention for complex inputs (the gradient of
//! a real loss is `∂L/∂Re + i·∂L/∂Im`), so for a holomorphic map the adjoint is the conjugate
//! transpose. Each formula is made of differentiable ops (matmul, solve, triangular solves), so
//! `create_graph` gives higher derivatives.
use super::{add, mul, scale, sub};
use crate::autograd::record;
use crate::error::Result;
use crate::ops::complex::conj;
use crate::ops::index::tri;
use crate::ops::linalg::ops::{inv, solve, solve_triangular};
use crate::ops::matmul::matmul;
use crate::tensor::Tensor;

/// The conjugate transpose of a batch of matrices.
fn mh(x: &Tensor) -> Result<Tensor> {
    conj(x)?.transpose(-2, -1)
}

fn eye_like(n: usize, like: &Tensor) -> Result<Tensor> {
    crate::ops::creation::eye(n, n, like.dtype())
}

fn last(x: &Tensor) -> usize {
    x.shape()[x.ndim() - 1]
}

/// `x` as a `[..., 1, 1]` tensor, to scale matrices.
fn as_scalar_per_matrix(x: &Tensor) -> Result<Tensor> {
    x.unsqueeze(-1)?.unsqueeze(-1)
}

/// `i·Im(z)`, computed as `(z - conj z)/2`.
fn i_imag(z: &Tensor) -> Result<Tensor> {
    scale(&sub(z, &conj(z)?)?, 0.5)
}

/// `X = A⁻¹B`: `gB = A⁻ᴴG`, `gA = -gB Xᴴ`.
pub(crate) fn record_solve(a: &Tensor, b: &Tensor, x: &Tensor) -> Result<()> {
    record("LinalgSolveExBackward0", &[a, b], &[x], &[a, x], |ctx, g| {
        let (a, x) = (ctx.saved(0)?, ctx.saved(1)?);
        let gb = solve(&mh(&a)?, &g[0])?;
        let ga = if ctx.needs_input_grad(0) { Some(scale(&matmul(&gb, &mh(&x)?)?, -1.0)?) } else { None };
        Ok(vec![ga, ctx.needs_input_grad(1).then_some(gb)])
    })
}

/// `Y = A⁻¹`: `gA = -Yᴴ G Yᴴ`.
pub(crate) fn record_inv(a: &Tensor, y: &Tensor) -> Result<()> {
    record("LinalgInvExBackward0", &[a], &[y], &[y], |ctx, g| {
        let yh = mh(&ctx.saved(0)?)?;
        Ok(vec![Some(scale(&matmul(&matmul(&yh, &g[0])?, &yh)?, -1.0)?)])
    })
}

/// `d = det A`: `gA = g·conj(d)·A⁻ᴴ` (invertible `A`).
pub(crate) fn record_det(a: &Tensor, d: &Tensor) -> Result<()> {
    record("LinalgDetBackward0", &[a], &[d], &[a, d], |ctx, g| {
        let (a, d) = (ctx.saved(0)?, ctx.saved(1)?);
        let w = as_scalar_per_matrix(&mul(&g[0], &conj(&d)?)?)?;
        Ok(vec![Some(mul(&w, &mh(&inv(&a)?)?)?)])
    })
}

/// `(sign, log|det A|)`: the complex log-determinant `w = log|det| + i·θ` is holomorphic in `A`
/// with gradient `A⁻ᴴ`; its incoming gradient is `g_log + i·Im(conj(sign)·g_sign)` (the sign
/// `e^{iθ}` only moves with `θ`; for real input it is locally constant).
pub(crate) fn record_slogdet(a: &Tensor, sign: &Tensor, logabs: &Tensor) -> Result<()> {
    let complex = a.dtype().is_complex();
    record("LinalgSlogdetBackward0", &[a], &[sign, logabs], &[a, sign], move |ctx, g| {
        let (a, sign) = (ctx.saved(0)?, ctx.saved(1)?);
        let mut w = g[1].clone();
        if complex {
            w = add(&w, &i_imag(&mul(&conj(&sign)?, &g[0])?)?)?;
        }
        Ok(vec![Some(mul(&as_scalar_per_matrix(&w)?, &mh(&inv(&a)?)?)?)])
    })
}

/// `A = QΛQᴴ`: `gA = Q (diag(gΛ) + skew(QᴴgQ)/E) Qᴴ` with `Eᵢⱼ = λⱼ - λᵢ` off the diagonal and
/// `skew(X) = (X - Xᴴ)/2` (the projection onto the tangent space, which keeps `gA` Hermitian).
pub(crate) fn record_eigh(a: &Tensor, l: &Tensor, q: &Tensor) -> Result<()> {
    record("LinalgEighBackward0", &[a], &[l, q], &[l, q], |ctx, g| {
        let (l, q) = (ctx.saved(0)?, ctx.saved(1)?);
        let eye = eye_like(last(&l), &l)?;
        let e = add(&sub(&l.unsqueeze(-2)?, &l.unsqueeze(-1)?)?, &eye)?;
        let qhgq = matmul(&mh(&q)?, &g[1])?;
        let skew = scale(&sub(&qhgq, &mh(&qhgq)?)?, 0.5)?;
        let off = mul(&super::div(&skew, &e)?, &super::shift(&scale(&eye, -1.0)?, 1.0)?)?;
        let inner = add(&off, &mul(&eye, &g[0].unsqueeze(-2)?)?)?;
        Ok(vec![Some(matmul(&matmul(&q, &inner)?, &mh(&q)?)?)])
    })
}

/// `A = LLᴴ`: `gA = L⁻ᴴ Φ(LᴴgL) L⁻¹` with `Φ(X) = (tril X + (tril₋₁ X)ᴴ)/2` (the lower
/// triangle, halved, made Hermitian).
pub(crate) fn record_cholesky(a: &Tensor, l: &Tensor) -> Result<()> {
    record("LinalgCholeskyExBackward0", &[a], &[l], &[l], |ctx, g| {
        let l = ctx.saved(0)?;
        let x = tri(&matmul(&mh(&l)?, &g[0])?, 0, false)?;
        let phi = scale(&add(&x, &mh(&tri(&x, -1, false)?)?)?, 0.5)?;
        let left = solve_triangular(&mh(&l)?, &phi, true, true, false)?;
        Ok(vec![Some(solve_triangular(&l, &left, false, false, false)?)])
    })
}

/// `X = A⁻¹B` for triangular `A`: `gB = A⁻ᴴG`, `gA = -gB Xᴴ` kept to `A`'s triangle (strictly,
/// for a unit diagonal, which is not read).
pub(crate) fn record_solve_triangular(a: &Tensor, b: &Tensor, x: &Tensor, upper: bool, unit: bool) -> Result<()> {
    record("LinalgSolveTriangularBackward0", &[a, b], &[x], &[a, x], move |ctx, g| {
        let (a, x) = (ctx.saved(0)?, ctx.saved(1)?);
        let gb = solve_triangular(&mh(&a)?, &g[0], !upper, true, unit)?;
        let ga = if ctx.needs_input_grad(0) {
            let full = scale(&matmul(&gb, &mh(&x)?)?, -1.0)?;
            let diagonal = match (upper, unit) { (true, true) => 1, (false, true) => -1, _ => 0 };
            Some(tri(&full, diagonal, upper)?)
        } else {
            None
        };
        Ok(vec![ga, ctx.needs_input_grad(1).then_some(gb)])
    })
}

/// Reduced QR of a tall (or square) `A`: with `M = QᴴgQ - gR Rᴴ` and `Φ(M)` the lower triangle
/// of `M - Mᴴ` with its diagonal halved, `gA = (gQ + Q(Φ(M) - M)) R⁻ᴴ`.
pub(crate) fn record_qr(a: &Tensor, q: &Tensor, r: &Tensor) -> Result<()> {
    record("LinalgQrBackward0", &[a], &[q, r], &[q, r], |ctx, g| {
        let (q, r) = (ctx.saved(0)?, ctx.saved(1)?);
        let m = sub(&matmul(&mh(&q)?, &g[0])?, &matmul(&g[1], &mh(&r)?)?)?;
        let k = sub(&m, &mh(&m)?)?;
        let eye = eye_like(last(&k), &k)?;
        let phi = add(&tri(&k, -1, false)?, &scale(&mul(&k, &eye)?, 0.5)?)?;
        let y = add(&g[0], &matmul(&q, &sub(&phi, &m)?)?)?;
        Ok(vec![Some(solve_triangular(&mh(&r)?, &y, false, false, false)?)])
    })
}

/// Thin SVD `A = U S Vh` (`k = min(m, n)`): the inner `k × k` term is
/// `(skew(UᴴgU)·S + S·skew(VᴴgV)) / E` off the diagonal (`Eᵢⱼ = sⱼ² - sᵢ²`, `skew(X) = X - Xᴴ`)
/// and `gS + i·Im(diag UᴴgU)/S` on it (the phase gauge fixed on `V`'s side); the parts of `gU`/`gV` outside the spans of `U`/`V`
/// add `(I - UUᴴ) gU S⁻¹ Vh` and `U S⁻¹ gVᴴ (I - VVᴴ)`.
pub(crate) fn record_svd(a: &Tensor, u: &Tensor, s: &Tensor, vh: &Tensor) -> Result<()> {
    let complex = a.dtype().is_complex();
    record("LinalgSvdBackward0", &[a], &[u, s, vh], &[u, s, vh], move |ctx, g| {
        let (u, s, vh) = (ctx.saved(0)?, ctx.saved(1)?, ctx.saved(2)?);
        let k = last(&s);
        // Full matrices on square input: U and Vh are k × k, as in the thin case.
        let (u, vh) = (u.narrow(-1, 0, k as i64)?, vh.narrow(-2, 0, k as i64)?);
        let (gu, gvh) = (g[0].narrow(-1, 0, k as i64)?, g[2].narrow(-2, 0, k as i64)?);
        let v = mh(&vh)?;
        let gv = mh(&gvh)?;
        let eye = eye_like(k, &s)?;
        let s2 = mul(&s, &s)?;
        let e = add(&sub(&s2.unsqueeze(-2)?, &s2.unsqueeze(-1)?)?, &eye)?;
        let uhgu = matmul(&mh(&u)?, &gu)?;
        let vhgv = matmul(&vh, &gv)?;
        let off_u = mul(&sub(&uhgu, &mh(&uhgu)?)?, &s.unsqueeze(-2)?)?;
        let off_v = mul(&s.unsqueeze(-1)?, &sub(&vhgv, &mh(&vhgv)?)?)?;
        let off = mul(&super::div(&add(&off_u, &off_v)?, &e)?, &super::shift(&scale(&eye, -1.0)?, 1.0)?)?;
        let mut diag = g[1].clone();
        if complex {
            let d = uhgu.diagonal(0, -2, -1)?;
            diag = add(&diag, &super::div(&i_imag(&d)?, &s)?)?;
        }
        let inner = add(&off, &mul(&eye, &diag.unsqueeze(-2)?)?)?;
        let mut ga = matmul(&matmul(&u, &inner)?, &vh)?;
        let (m, n) = (u.shape()[u.ndim() - 2], v.shape()[v.ndim() - 2]);
        if m > k {
            let gus = super::div(&gu, &s.unsqueeze(-2)?)?;
            let outside = sub(&gus, &matmul(&u, &matmul(&mh(&u)?, &gus)?)?)?;
            ga = add(&ga, &matmul(&outside, &vh)?)?;
        }
        if n > k {
            let gvs = super::div(&gv, &s.unsqueeze(-2)?)?;
            let outside = sub(&gvs, &matmul(&v, &matmul(&vh, &gvs)?)?)?;
            ga = add(&ga, &matmul(&u, &mh(&outside)?)?)?;
        }
        Ok(vec![Some(ga)])
    })
}

/// The largest `|Im z|` over `z`, as a number.
fn max_abs_imag(z: &Tensor) -> Result<f64> {
    use crate::ops::reduce::{reduce, ReduceOp};
    let im = crate::ops::unary::unary(crate::ops::unary::UnaryOp::Abs, &crate::ops::complex::imag(z)?)?;
    if im.numel() == 0 {
        return Ok(0.0);
    }
    reduce(ReduceOp::Amax, &im, None, false, None)?.item_f64()
}

/// `A = V diag(w) V⁻¹` with unit-norm columns of `V` (`eig`): with `X = Vᴴ gV`, the term
/// `Vᴴ V·Re(diag X)` removes the part of `gV` that only rescales the columns (they are normalised),
/// and `gA = V⁻ᴴ (diag(gw) + offdiag((X - VᴴV·Re diag X) / conj(E))) Vᴴ` with `Eᵢⱼ = wⱼ - wᵢ`.
/// The phases of the columns are arbitrary, so a loss that depends on them (`Im diag X` not
/// about zero) has no gradient, and is refused as PyTorch does.
pub(crate) fn record_eig(a: &Tensor, w: &Tensor, v: &Tensor) -> Result<()> {
    record("LinalgEigBackward0", &[a], &[w, v], &[w, v], |ctx, g| {
        let (w, v) = (ctx.saved(0)?, ctx.saved(1)?);
        let vh = mh(&v)?;
        let x = matmul(&vh, &g[1])?;
        let diag = x.diagonal(0, -2, -1)?;
        if max_abs_imag(&diag)? > 1e-2 {
            crate::bail!(Runtime, "linalg_eig_backward: the eigenvectors of a complex eigendecomposition are only defined up to a phase e^(i·φ) per column, and this loss depends on those phases, so its gradient is not defined");
        }
        let re_diag = scale(&add(&diag, &conj(&diag)?)?, 0.5)?;
        let x = sub(&x, &matmul(&vh, &mul(&v, &re_diag.unsqueeze(-2)?)?)?)?;
        let eye = eye_like(last(&w), &w)?;
        let wc = conj(&w)?;
        let e = add(&sub(&wc.unsqueeze(-2)?, &wc.unsqueeze(-1)?)?, &eye)?;
        let off = mul(&super::div(&x, &e)?, &super::shift(&scale(&eye, -1.0)?, 1.0)?)?;
        let inner = add(&off, &mul(&eye, &g[0].unsqueeze(-2)?)?)?;
        Ok(vec![Some(solve(&vh, &matmul(&inner, &vh)?)?)])
    })
}

/// For each row `r` of `A`, the row of the packed LU factor that holds it (the inverse of the
/// row order LAPACK's 1-based successive swaps `pivots` produce), as `[*, n, n]` gather indices.
fn rows_in_lu(pivots: &Tensor, n: usize) -> Result<Tensor> {
    let swaps = pivots.contiguous()?.to_dtype(crate::DType::I64)?.to_vec::<i64>()?;
    let k = pivots.shape().last().copied().unwrap_or(0);
    let count = swaps.len().checked_div(k).unwrap_or(0); // no pivots: no matrices to permute
    let mut inverse = Vec::with_capacity(count * n * n);
    for m in 0..count {
        let mut order: Vec<usize> = (0..n).collect();
        for (j, &p) in swaps[m * k..(m + 1) * k].iter().enumerate() {
            order.swap(j, p as usize - 1);
        }
        let mut inv = vec![0i64; n];
        for (i, &r) in order.iter().enumerate() {
            inv[r] = i as i64;
        }
        inverse.extend(inv.iter().flat_map(|&i| std::iter::repeat_n(i, n)));
    }
    let mut shape = pivots.shape()[..pivots.ndim() - 1].to_vec();
    shape.extend([n, n]);
    Tensor::from_vec(inverse, &shape)
}

/// Square `A = P L U` packed into `LU` (`lu_factor`): with `gL = tril₋₁(gLU)`, `gU = triu(gLU)`,
/// `gA = P L⁻ᴴ (tril₋₁(Lᴴ gL) + triu(gU Uᴴ)) U⁻ᴴ`.
pub(crate) fn record_lu_factor(a: &Tensor, lu: &Tensor, pivots: &Tensor) -> Result<()> {
    let n = last(lu);
    record("LinalgLuFactorExBackward0", &[a], &[lu], &[lu, pivots], move |ctx, g| {
        let (lu, pivots) = (ctx.saved(0)?, ctx.saved(1)?);
        let l = add(&tri(&lu, -1, false)?, &eye_like(n, &lu)?)?;
        let u = tri(&lu, 0, true)?;
        let phi_l = tri(&matmul(&mh(&l)?, &tri(&g[0], -1, false)?)?, -1, false)?;
        let phi_u = tri(&matmul(&tri(&g[0], 0, true)?, &mh(&u)?)?, 0, true)?;
        let right = solve_triangular(&mh(&u)?, &add(&phi_l, &phi_u)?, false, false, false)?;
        let m = solve_triangular(&mh(&l)?, &right, true, true, true)?;
        Ok(vec![Some(crate::ops::index::gather(&m, -2, &rows_in_lu(&pivots, n)?)?)])
    })
}
