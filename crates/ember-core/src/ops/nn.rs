//! Softmax family and normalisation layers: argument checks, statistics bookkeeping (running
//! means, per-channel scale and shift) and autograd. The row kernels are the backend's.
use crate::backend;
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

fn check_float(x: &Tensor, kernel: &str) -> Result<()> {
    if !x.dtype().is_float() {
        bail!(Runtime, "\"{kernel}\" not implemented for '{}'", x.dtype().legacy_name());
    }
    Ok(())
}

// ---- softmax / log_softmax ----

/// `softmax` (or `log_softmax`) of `x` along `dim`, in `x`'s (float) dtype.
pub fn softmax(x: &Tensor, dim: i64, log: bool) -> Result<Tensor> {
    x.dtype().require_real("softmax_lastdim_kernel_impl")?;
    crate::autograd::track(&[x], || softmax_kernel(x, dim, log), |y| super::grad::nn::record_softmax(x, x.wrap_dim(dim)?, log, y))
}

fn softmax_kernel(x: &Tensor, dim: i64, log: bool) -> Result<Tensor> {
    check_float(x, if log { "log_softmax_lastdim_kernel_impl" } else { "softmax_lastdim_kernel_impl" })?;
    let d = x.wrap_dim(dim)?;
    let out = Tensor::empty_on(x.shape(), x.dtype(), x.device())?;
    backend::of(x.device())?.softmax(x, d, log, &out)?;
    Ok(out)
}

// ---- layer norm ----

fn shape_str(s: &[usize]) -> String {
    format!("[{}]", s.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", "))
}

/// `F.layer_norm`: normalises over the trailing `normalized_shape` dims, then scales by
/// `weight` and shifts by `bias` (shaped `normalized_shape`).
pub fn layer_norm(x: &Tensor, normalized_shape: &[usize], weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<Tensor> {
    x.dtype().require_real("LayerNormKernelImpl")?;
    let inputs = operands(x, weight, bias);
    crate::autograd::track(&inputs, || layer_norm_kernel(x, normalized_shape, weight, bias, eps), |y| {
        super::grad::nn::record_layer_norm(x, normalized_shape.len(), weight, bias, eps, y)
    })
}

/// The tensors a normalisation differentiates: input, weight, bias.
fn operands<'a>(x: &'a Tensor, weight: Option<&'a Tensor>, bias: Option<&'a Tensor>) -> Vec<&'a Tensor> {
    std::iter::once(x).chain(weight).chain(bias).collect()
}

fn layer_norm_kernel(x: &Tensor, normalized_shape: &[usize], weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<Tensor> {
    check_float(x, "LayerNormKernelImpl")?;
    let k = normalized_shape.len();
    if k == 0 {
        bail!(Runtime, "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = []");
    }
    for (p, what) in [(weight, "weight"), (bias, "bias")] {
        if let Some(p) = p.filter(|p| p.shape() != normalized_shape) {
            bail!(Runtime, "Expected {what} to be of same shape as normalized_shape, but got {what} of shape {} and normalized_shape = {}", shape_str(p.shape()), shape_str(normalized_shape));
        }
    }
    if x.ndim() < k || &x.shape()[x.ndim() - k..] != normalized_shape {
        let star = shape_str(normalized_shape).replacen('[', "[*, ", 1);
        bail!(Runtime, "Given normalized_shape={}, expected input with shape {star}, but got input of size{}", shape_str(normalized_shape), shape_str(x.shape()));
    }
    let backend = backend::serving(x, weight.into_iter().chain(bias))?;
    let out = Tensor::empty_on(x.shape(), x.dtype(), x.device())?;
    backend.layer_norm(x, normalized_shape.iter().product(), weight, bias, eps, &out)?;
    Ok(out)
}

// ---- group, batch and instance norm: per-row statistics, then a per-row affine map ----

/// (mean, biased variance) of each of the `rows` contiguous rows of `x`.
fn row_moments(x: &Tensor, rows: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    backend::of(x.device())?.row_moments(x, rows)
}

/// `x * scale[r] + shift[r]` for each contiguous row `r` of `x`.
fn affine(x: &Tensor, scale: &[f64], shift: &[f64]) -> Result<Tensor> {
    let out = Tensor::empty_on(x.shape(), x.dtype(), x.device())?;
    backend::of(x.device())?.affine_rows(x, scale, shift, &out)?;
    Ok(out)
}

/// (N, C, spatial size) of an input laid out as (N, C, *).
fn channels(x: &Tensor, op: &str) -> Result<(usize, usize, usize)> {
    if x.ndim() < 2 {
        bail!(Runtime, "{op}: expected input with at least 2 dimensions (N, C, *), but got input of size {}", shape_str(x.shape()));
    }
    let (n, c) = (x.shape()[0], x.shape()[1]);
    Ok((n, c, x.shape()[2..].iter().product()))
}

/// A per-channel parameter as f64 values, checked to hold `c` elements.
fn per_channel(p: Option<&Tensor>, c: usize, what: &str) -> Result<Option<Vec<f64>>> {
    let Some(p) = p else { return Ok(None) };
    if p.numel() != c {
        bail!(Runtime, "{what} should contain {c} elements not {}", p.numel());
    }
    Ok(Some(p.to_dtype(DType::F64)?.contiguous()?.to_vec::<f64>()?))
}

/// Per-row (scale, shift) that normalise rows of channel `ch(r)` with (mean, var) and then
/// apply the channel's weight and bias.
fn scale_shift(mean: &[f64], var: &[f64], eps: f64, w: &Option<Vec<f64>>, b: &Option<Vec<f64>>, ch: impl Fn(usize) -> usize) -> (Vec<f64>, Vec<f64>) {
    (0..mean.len())
        .map(|r| {
            let c = ch(r);
            let a = w.as_ref().map_or(1.0, |w| w[c]) / (var[r] + eps).sqrt();
            (a, b.as_ref().map_or(0.0, |b| b[c]) - mean[r] * a)
        })
        .unzip()
}

/// `F.group_norm`: normalises `[N, C, *]` over each of `groups` channel groups, then applies
/// the per-channel `weight` and `bias`; `C` must divide by `groups`.
pub fn group_norm(x: &Tensor, groups: usize, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<Tensor> {
    x.dtype().require_real("GroupNormKernelImpl")?;
    crate::autograd::track(&operands(x, weight, bias), || group_norm_kernel(x, groups, weight, bias, eps), |y| {
        super::grad::nn::record_group_norm(x, groups, weight, bias, eps, y)
    })
}

fn group_norm_kernel(x: &Tensor, groups: usize, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<Tensor> {
    check_float(x, "GroupNormKernelImpl")?;
    let (n, c, _) = channels(x, "group_norm")?;
    if groups == 0 || c % groups != 0 {
        bail!(Runtime, "Expected number of channels in input to be divisible by num_groups, but got input of shape {} and num_groups={groups}", shape_str(x.shape()));
    }
    let (w, b) = (per_channel(weight, c, "weight")?, per_channel(bias, c, "bias")?);
    if x.numel() == 0 {
        return Tensor::empty_on(x.shape(), x.dtype(), x.device());
    }
    let xc = x.contiguous()?;
    let (mean, var) = row_moments(&xc, n * groups)?;
    let per_group = c / groups;
    // Expand the group statistics to every (n, c) row.
    let row_stat = |v: &[f64]| (0..n * c).map(|r| v[r / per_group]).collect::<Vec<_>>();
    let (scale, shift) = scale_shift(&row_stat(&mean), &row_stat(&var), eps, &w, &b, |r| r % c);
    affine(&xc, &scale, &shift)
}

/// Running statistics that a training step blends its batch statistics into.
pub struct Running<'a> {
    /// `running_mean`, one float per channel.
    pub mean: &'a Tensor,
    /// `running_var`, one float per channel.
    pub var: &'a Tensor,
}

impl Running<'_> {
    fn check(&self, c: usize) -> Result<()> {
        for (t, what) in [(self.mean, "running_mean"), (self.var, "running_var")] {
            if t.numel() != c {
                bail!(Runtime, "{what} should contain {c} elements not {}", t.numel());
            }
            if !t.dtype().is_float() {
                bail!(Type, "{what} must be a floating point tensor, got {}", t.dtype());
            }
        }
        Ok(())
    }

    fn values(&self) -> Result<(Vec<f64>, Vec<f64>)> {
        let read = |t: &Tensor| t.to_dtype(DType::F64)?.contiguous()?.to_vec::<f64>();
        Ok((read(self.mean)?, read(self.var)?))
    }

    /// `running = (1 - momentum) * running + momentum * batch`, written in place; the variance
    /// blended in is the unbiased one over `count` values.
    fn update(&self, mean: &[f64], var: &[f64], count: usize, momentum: f64) -> Result<()> {
        let (old_mean, old_var) = self.values()?;
        let unbias = count as f64 / (count as f64 - 1.0).max(1.0);
        let blend = |old: &[f64], new: &[f64], k: f64| -> Vec<f64> { old.iter().zip(new).map(|(o, v)| (1.0 - momentum) * o + momentum * v * k).collect() };
        let write = |t: &Tensor, v: Vec<f64>| t.copy_(&Tensor::from_vec(v, &[t.numel()])?.reshape(&t.shape().iter().map(|&d| d as i64).collect::<Vec<_>>())?);
        write(self.mean, blend(&old_mean, mean, 1.0))?;
        write(self.var, blend(&old_var, var, unbias))
    }
}

/// Per-channel mean and biased variance of a contiguous `[N, C, *]` input.
fn batch_moments(x: &Tensor, n: usize, c: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let (m, v) = row_moments(x, n * c)?;
    Ok(combine_over_batch(&m, &v, n, c))
}

/// Per-channel mean and biased variance from per-(n, c) row statistics of equal counts.
fn combine_over_batch(mean: &[f64], var: &[f64], n: usize, c: usize) -> (Vec<f64>, Vec<f64>) {
    (0..c)
        .map(|ch| {
            let m = (0..n).map(|i| mean[i * c + ch]).sum::<f64>() / n as f64;
            let v = (0..n).map(|i| var[i * c + ch] + (mean[i * c + ch] - m).powi(2)).sum::<f64>() / n as f64;
            (m, v)
        })
        .unzip()
}

/// `F.batch_norm` over `[N, C, *]`: batch statistics when `training` (blended into `running`
/// with `momentum`), the running ones otherwise; then the per-channel `weight` and `bias`.
pub fn batch_norm(x: &Tensor, running: Option<Running>, weight: Option<&Tensor>, bias: Option<&Tensor>, training: bool, momentum: f64, eps: f64) -> Result<Tensor> {
    x.dtype().require_real("batch_norm_cpu")?;
    let stats = (!training).then(|| running.as_ref().map(|r| (r.mean.clone(), r.var.clone()))).flatten();
    crate::autograd::track(&operands(x, weight, bias), || batch_norm_kernel(x, running, weight, bias, training, momentum, eps), |y| {
        let stats = stats.map(|(m, v)| frozen_stats(&m, &v, eps)).transpose()?;
        super::grad::nn::record_batch_norm(x, weight, bias, eps, stats, y)
    })
}

/// Running statistics as used by an evaluation step: the mean and `1/sqrt(var + eps)`, copied
/// (later training steps update the running tensors in place).
fn frozen_stats(mean: &Tensor, var: &Tensor, eps: f64) -> Result<(Tensor, Tensor)> {
    let _untracked = crate::autograd::untracked();
    let v = super::binary::binary(super::binary::BinaryOp::Add, super::binary::Operand::Tensor(var), super::binary::Operand::Scalar(super::binary::Scalar::Float(eps)))?;
    Ok((mean.reshape(&[-1])?.deep_clone()?, super::unary::unary(super::unary::UnaryOp::Rsqrt, &v)?.reshape(&[-1])?))
}

#[allow(clippy::too_many_arguments)]
fn batch_norm_kernel(x: &Tensor, running: Option<Running>, weight: Option<&Tensor>, bias: Option<&Tensor>, training: bool, momentum: f64, eps: f64) -> Result<Tensor> {
    check_float(x, "batch_norm")?;
    let (n, c, s) = channels(x, "batch_norm")?;
    let (w, b) = (per_channel(weight, c, "weight")?, per_channel(bias, c, "bias")?);
    if let Some(r) = &running {
        r.check(c)?;
    }
    if training && n * s <= 1 {
        bail!(Value, "Expected more than 1 value per channel when training, got input size {}", shape_str(x.shape()));
    }
    if x.numel() == 0 {
        return Tensor::empty_on(x.shape(), x.dtype(), x.device());
    }
    // Channels-last CPU input keeps its layout (a CPU-only path; other backends get rows).
    let nhwc = x.device() == crate::Device::Cpu && crate::backend::cpu::nhwc::norm_applies(x);
    let xc = if nhwc { x.clone() } else { x.contiguous()? };
    let (mean, var) = match (&running, training) {
        (_, true) => {
            let (m, v) = if nhwc { crate::backend::cpu::nhwc::channel_moments(x) } else { batch_moments(&xc, n, c)? };
            if let Some(r) = &running {
                r.update(&m, &v, n * s, momentum)?;
            }
            (m, v)
        }
        (Some(r), false) => r.values()?,
        (None, false) => bail!(Runtime, "batch_norm: running_mean and running_var must be given when training=False"),
    };
    let (scale, shift) = scale_shift(&mean, &var, eps, &w, &b, |ch| ch);
    if nhwc {
        return crate::backend::cpu::nhwc::channel_affine(x, &scale, &shift);
    }
    let per_row = |v: &[f64]| (0..n * c).map(|r| v[r % c]).collect::<Vec<_>>();
    affine(&xc, &per_row(&scale), &per_row(&shift))
}

/// `F.instance_norm` over `[N, C, *]`: statistics per sample and channel when
/// `use_input_stats` (their batch mean blended into `running`), the running ones otherwise.
pub fn instance_norm(x: &Tensor, running: Option<Running>, weight: Option<&Tensor>, bias: Option<&Tensor>, use_input_stats: bool, momentum: f64, eps: f64) -> Result<Tensor> {
    x.dtype().require_real("instance_norm")?;
    let stats = (!use_input_stats).then(|| running.as_ref().map(|r| (r.mean.clone(), r.var.clone()))).flatten();
    crate::autograd::track(&operands(x, weight, bias), || instance_norm_kernel(x, running, weight, bias, use_input_stats, momentum, eps), |y| match stats {
        Some((m, v)) => super::grad::nn::record_batch_norm(x, weight, bias, eps, Some(frozen_stats(&m, &v, eps)?), y),
        None => super::grad::nn::record_instance_norm(x, weight, bias, eps, y),
    })
}

#[allow(clippy::too_many_arguments)]
fn instance_norm_kernel(x: &Tensor, running: Option<Running>, weight: Option<&Tensor>, bias: Option<&Tensor>, use_input_stats: bool, momentum: f64, eps: f64) -> Result<Tensor> {
    check_float(x, "instance_norm")?;
    let (n, c, s) = channels(x, "instance_norm")?;
    let (w, b) = (per_channel(weight, c, "weight")?, per_channel(bias, c, "bias")?);
    if let Some(r) = &running {
        r.check(c)?;
    }
    if use_input_stats && s <= 1 {
        bail!(Value, "Expected more than 1 spatial element when training, got input size {}", shape_str(x.shape()));
    }
    if x.numel() == 0 {
        return Tensor::empty_on(x.shape(), x.dtype(), x.device());
    }
    let xc = x.contiguous()?;
    let (mean, var) = match (&running, use_input_stats) {
        (_, true) => {
            let (m, v) = row_moments(&xc, n * c)?;
            if let Some(r) = &running {
                // PyTorch blends the batch average of the per-instance statistics.
                let avg = |v: &[f64]| (0..c).map(|ch| (0..n).map(|i| v[i * c + ch]).sum::<f64>() / n as f64).collect::<Vec<_>>();
                r.update(&avg(&m), &avg(&v), s, momentum)?;
            }
            (m, v)
        }
        (Some(r), false) => {
            let (m, v) = r.values()?;
            ((0..n * c).map(|i| m[i % c]).collect(), (0..n * c).map(|i| v[i % c]).collect())
        }
        (None, false) => bail!(Runtime, "Expected running_mean and running_var to be defined when use_input_stats is false"),
    };
    let (scale, shift) = scale_shift(&mean, &var, eps, &w, &b, |r| r % c);
    affine(&xc, &scale, &shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn softmax_rows_and_columns_agree() {
        let v: Vec<f32> = (0..6 * 70).map(|i| (i as f32 * 0.37).sin() * 5.0).collect();
        let x = Tensor::from_vec(v, &[6, 70]).unwrap();
        let rows = softmax(&x.t().unwrap(), 1, false).unwrap();
        let cols = softmax(&x, 0, false).unwrap().t().unwrap().contiguous().unwrap();
        let (a, b) = (rows.to_vec::<f32>().unwrap(), cols.to_vec::<f32>().unwrap());
        assert!(a.iter().zip(&b).all(|(p, q)| (p - q).abs() < 1e-6));
        let row0: f32 = a[..6].iter().sum();
        assert!((row0 - 1.0).abs() < 1e-6);
    }

    #[test]
    fn layer_norm_centres_and_scales() {
        let x = Tensor::from_vec((0..40).map(|i| i as f64).collect(), &[4, 10]).unwrap();
        let y = layer_norm(&x, &[10], None, None, 0.0).unwrap().to_vec::<f64>().unwrap();
        let row = &y[..10];
        assert!(row.iter().sum::<f64>().abs() < 1e-12);
        assert!((row.iter().map(|v| v * v).sum::<f64>() / 10.0 - 1.0).abs() < 1e-12);
    }
}
