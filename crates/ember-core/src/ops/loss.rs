//! Losses that pick one class per target (`nll_loss`, the core of `cross_entropy`). The
//! pointwise losses are compositions of elementwise ops and reductions in `ember.nn.functional`.
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// How a loss combines its per-element values (PyTorch's `reduction=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// One loss per element (`"none"`).
    None,
    /// Their (weighted) mean (`"mean"`).
    Mean,
    /// Their sum (`"sum"`).
    Sum,
}

impl Reduction {
    /// From PyTorch's string; a `Value` error for others.
    pub fn from_name(name: &str) -> Result<Reduction> {
        Ok(match name {
            "none" => Reduction::None,
            "mean" => Reduction::Mean,
            "sum" => Reduction::Sum,
            _ => bail!(Value, "{name} is not a valid value for reduction"),
        })
    }
}

/// Input as (N, C, S) and target as (N, S): the batch, class and flattened spatial sizes.
fn nll_shapes(input: &Tensor, target: &Tensor) -> Result<(usize, usize, usize)> {
    let (ish, tsh) = (input.shape(), target.shape());
    match (ish.len(), tsh.len()) {
        (0, _) => bail!(Value, "Expected 1 or more dimensions (got 0)"),
        (1, 0) => Ok((1, ish[0], 1)),
        (1, _) => bail!(Runtime, "0D or 1D target tensor expected, multi-target not supported"),
        (d, t) if t + 1 != d => bail!(Runtime, "Expected target size {}, got {:?}", expected_target(ish), tsh),
        _ if ish[0] != tsh[0] => bail!(Value, "Expected input batch_size ({}) to match target batch_size ({}).", ish[0], tsh[0]),
        _ if ish[2..] != tsh[1..] => bail!(Runtime, "Expected target size {}, got {:?}", expected_target(ish), tsh),
        _ => Ok((ish[0], ish[1], ish[2..].iter().product())),
    }
}

fn expected_target(ish: &[usize]) -> String {
    let mut s = vec![ish[0]];
    s.extend(&ish[2..]);
    format!("{s:?}")
}

/// `nll_loss` and the total weight of the targets that counted (PyTorch returns both; the
/// mean reduction divides by it, and label smoothing needs it too).
pub fn nll_loss(input: &Tensor, target: &Tensor, weight: Option<&Tensor>, reduction: Reduction, ignore_index: i64) -> Result<(Tensor, Tensor)> {
    input.dtype().require_real("nll_loss")?;
    crate::autograd::track(&[input], || nll_loss_kernel(input, target, weight, reduction, ignore_index), |(loss, total)| {
        let (coef, safe) = coefficients(target, weight, reduction, ignore_index, total.item_f64()?)?;
        super::grad::nn::record_nll_loss(input, coef.to_dtype(input.dtype())?, safe, loss)
    })
}

/// For the derivative: each target's `-weight[target]` (0 when ignored; over the total weight
/// for the mean), and the targets with ignored ones replaced by class 0.
fn coefficients(target: &Tensor, weight: Option<&Tensor>, reduction: Reduction, ignore_index: i64, total: f64) -> Result<(Tensor, Tensor)> {
    let w = weight.map(|w| w.to_dtype(DType::F64)?.contiguous()?.to_vec::<f64>()).transpose()?;
    let t = target.contiguous()?.to_vec::<i64>()?;
    let scale = if reduction == Reduction::Mean { 1.0 / total } else { 1.0 };
    let coef: Vec<f64> = t.iter().map(|&c| if c == ignore_index { 0.0 } else { -w.as_ref().map_or(1.0, |w| w[c as usize]) * scale }).collect();
    let safe: Vec<i64> = t.iter().map(|&c| if c == ignore_index { 0 } else { c }).collect();
    let device = target.device();
    Ok((Tensor::from_vec(coef, target.shape())?.to_device(device)?, Tensor::from_vec(safe, target.shape())?.to_device(device)?))
}

fn nll_loss_kernel(input: &Tensor, target: &Tensor, weight: Option<&Tensor>, reduction: Reduction, ignore_index: i64) -> Result<(Tensor, Tensor)> {
    if !input.dtype().is_float() {
        bail!(Runtime, "\"nll_loss\" not implemented for '{}'", input.dtype().legacy_name());
    }
    if target.dtype() != DType::I64 {
        bail!(Runtime, "expected scalar type Long but found {}", target.dtype().legacy_name());
    }
    let (n, c, s) = nll_shapes(input, target)?;
    let w = match weight {
        Some(w) if w.numel() != c => bail!(Runtime, "weight tensor should be defined either for all {c} classes or no classes but got weight tensor of shape: {:?}", w.shape()),
        Some(w) => w.to_dtype(DType::F64)?.contiguous()?.to_vec::<f64>()?,
        None => vec![1.0; c],
    };
    let x = input.to_dtype(DType::F64)?.contiguous()?.to_vec::<f64>()?;
    let t = target.contiguous()?.to_vec::<i64>()?;
    let mut losses = vec![0.0; n * s];
    let mut total_weight = 0.0;
    for (i, &class) in t.iter().enumerate() {
        if class == ignore_index {
            continue;
        }
        if class < 0 || class >= c as i64 {
            bail!(Index, "Target {class} is out of bounds.");
        }
        let (b, sp) = (i / s, i % s);
        let wc = w[class as usize];
        losses[i] = -x[(b * c + class as usize) * s + sp] * wc;
        total_weight += wc;
    }
    // Computed on the host (the input came back whole); the results live on the input's device.
    let (dtype, device) = (input.dtype(), input.device());
    let scalar = |v: f64| Tensor::scalar(v).to_dtype(dtype)?.to_device(device);
    let loss = match reduction {
        Reduction::None => Tensor::from_vec(losses, target.shape())?.to_dtype(dtype)?.to_device(device)?,
        Reduction::Sum => scalar(losses.iter().sum())?,
        Reduction::Mean => scalar(losses.iter().sum::<f64>() / total_weight)?,
    };
    Ok((loss, scalar(total_weight)?))
}
