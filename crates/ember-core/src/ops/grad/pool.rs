//! Derivatives of pooling, interpolation and padding. Max pooling sends each gradient back to
//! the input position its maximum came from. Average pooling, adaptive average pooling and
//! interpolation are separable linear maps: one matrix per spatial dim, found by running the
//! same op in 1-d on an identity, and their gradient applies the transposed matrices (matrix
//! products, so it is differentiable too). Padding is a gather through an index map.
use super::{keep, scale};
use crate::autograd::{needs_grad, record, untracked};
use crate::error::Result;
use crate::ops::binary::{BinaryOp, Scalar};
use crate::ops::creation::{arange, eye};
use crate::ops::index::gather_adjoint;
use crate::ops::matmul::matmul;
use crate::ops::pad::{pad, PadMode};
use crate::tensor::Tensor;

/// `(values, indices) = max_pool(x)` (or adaptive): indices are flat within each plane of the
/// last `dims` dims.
pub(crate) fn record_max_pool(name: &'static str, x: &Tensor, dims: usize, values: &Tensor, indices: &Tensor) -> Result<()> {
    let shape = x.shape().to_vec();
    let plane: usize = shape[shape.len() - dims..].iter().product();
    let planes = (x.numel() / plane.max(1)) as i64;
    let dims_i: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    record(name, &[x], &[values], &[indices], move |ctx, g| {
        let (idx, g) = (ctx.saved(0)?.reshape(&[planes, -1])?, g[0].reshape(&[planes, -1])?);
        // A recorded gradient (create_graph) needs the differentiable scatter.
        let flat = if needs_grad(&[&g]) { gather_adjoint(&g, 1, &idx, &[planes as usize, plane])? } else { crate::backend::serving(&g, [&idx])?.max_pool_backward(&g, &idx, plane)? };
        Ok(vec![Some(flat.reshape(&dims_i)?)])
    })
}

/// The matrix `[n_out, n_in]` of a 1-d linear map `op` (applied to `[N, 1, n_in]`).
pub(crate) fn matrix_of(n_in: usize, dtype: crate::DType, op: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Tensor> {
    let _untracked = untracked();
    let basis = eye(n_in, n_in, dtype)?.reshape(&[n_in as i64, 1, n_in as i64])?;
    let out = op(&basis)?;
    let n_out = out.shape()[2] as i64;
    out.reshape(&[n_in as i64, n_out])?.t()?.contiguous()?.reshape(&[n_out, n_in as i64])
}

/// Records `y = (M_1 ⊗ ... ⊗ M_k) x · factor` over the last `k = matrices.len()` dims.
pub(crate) fn record_separable(name: &'static str, x: &Tensor, matrices: Vec<Tensor>, factor: f64, y: &Tensor) -> Result<()> {
    let first = x.ndim() - matrices.len();
    // `matrix_of` builds the (small) matrices on the host; the gradient meets them on x's device.
    let matrices = matrices.iter().map(|m| m.to_device(x.device())).collect::<Result<Vec<_>>>()?;
    record(name, &[x], &[y], &[], move |_, g| {
        let mut g = g[0].clone();
        for (i, m) in matrices.iter().enumerate() {
            let d = (first + i) as i64;
            g = matmul(&g.transpose(d, -1)?, m)?.transpose(d, -1)?;
        }
        Ok(vec![Some(if factor != 1.0 { scale(&g, factor)? } else { g })])
    })
}

/// `y = pad(x, pads, mode)`: every output element reads one input element (or none, for the
/// constant border); the map comes from padding the positions `0..n` of the padded dims.
pub(crate) fn record_pad(x: &Tensor, pads: &[i64], mode: PadMode, y: &Tensor) -> Result<()> {
    let k = pads.len() / 2;
    let ndim = x.ndim();
    let lead: usize = x.shape()[..ndim - k].iter().product();
    let block: Vec<i64> = x.shape()[ndim - k..].iter().map(|&d| d as i64).collect();
    let inner: usize = x.shape()[ndim - k..].iter().product();
    let (map, valid) = {
        let _untracked = untracked();
        // A leading dim of one: the non-constant modes want a batch or channel dim.
        let lead_one: Vec<i64> = std::iter::once(1).chain(block.iter().copied()).collect();
        let positions = arange(0.0, inner as f64, 1.0, crate::DType::I64)?.reshape(&lead_one)?;
        let m = pad(&positions, pads, match mode {
            PadMode::Constant(_) => PadMode::Constant(Scalar::Int(-1)),
            other => other,
        })?
        .reshape(&[1, -1])?;
        let valid = super::cmp(BinaryOp::Ge, &m, 0.0)?;
        let safe = crate::ops::binary::where_(&valid, crate::ops::binary::Operand::Tensor(&m), crate::ops::binary::Operand::Scalar(Scalar::Int(0)))?;
        // Built on the host; the gradient meets them on x's device.
        (safe.to_device(x.device())?, valid.to_device(x.device())?)
    };
    let shape = x.shape().to_vec();
    let dims_i: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let name = match mode {
        PadMode::Constant(_) => "ConstantPadNdBackward0",
        PadMode::Reflect => "ReflectionPadBackward0",
        PadMode::Replicate => "ReplicationPadBackward0",
        PadMode::Circular => "CircularPadBackward0",
    };
    record(name, &[x], &[y], &[&map, &valid], move |ctx, g| {
        let g2 = keep(&ctx.saved(1)?, &g[0].reshape(&[lead as i64, -1])?)?;
        let idx = ctx.saved(0)?.expand(&[lead as i64, -1])?;
        Ok(vec![Some(gather_adjoint(&g2, 1, &idx, &[lead, inner])?.reshape(&dims_i)?)])
    })
}
