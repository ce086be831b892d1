//! `interpolate`: nearest, nearest-exact, (bi/tri)linear and bicubic resizing, with PIL-style
//! antialiasing for (bi)linear and bicubic.
//!
//! Every mode is separable, so a resize is one pass per spatial dim (last dim first, as PIL and
//! PyTorch's antialiased kernel do). A pass maps `[outer, n_in, inner]` to `[outer, n_out, inner]`
//! through a table of taps: for each output position, the input positions it reads and their
//! weights. Inner runs are contiguous, so the passes over leading dims vectorise.
use super::conv::check_float;
use crate::backend::cpu::conv::compute_dtype;
use crate::bail;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::tensor::Tensor;
use crate::storage::try_vec;
use num_traits::Float;

/// `F.interpolate`'s `mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `"nearest"`: the source index `floor(i * scale)` (PyTorch's legacy rounding).
    Nearest,
    /// `"nearest-exact"`: the nearest source pixel centre, `floor((i + 0.5) * scale)`.
    NearestExact,
    /// Linear, bilinear or trilinear by the number of spatial dims.
    Linear,
    /// `"bicubic"`: Keys' cubic convolution with `a = -0.75`, as PyTorch.
    Cubic,
}

/// The taps of one resampling pass: what a backend resamples through.
pub struct Taps {
    /// Most taps any output position reads.
    pub width: usize,
    /// `index[j·width + t]`, `weight[j·width + t]` for `t < count[j]`: the input positions
    /// output `j` reads and their weights.
    pub index: Vec<usize>,
    /// See `index`.
    pub weight: Vec<f64>,
    /// The number of taps of each output position.
    pub count: Vec<usize>,
}

impl Taps {
    /// Room for `outputs` positions, reserved up front: the output size comes from the caller
    /// (`scale_factor=1e10`), so a size no memory can hold is an error before any work.
    fn new(width: usize, outputs: usize) -> Result<Taps> {
        let slots = outputs.checked_mul(width).unwrap_or(usize::MAX);
        Ok(Taps { width, index: try_vec(slots)?, weight: try_vec(slots)?, count: try_vec(outputs)? })
    }

    fn push(&mut self, taps: &[(usize, f64)]) {
        debug_assert!(taps.len() <= self.width);
        self.count.push(taps.len());
        for t in 0..self.width {
            let (i, w) = taps.get(t).copied().unwrap_or((0, 0.0));
            self.index.push(i);
            self.weight.push(w);
        }
    }

    /// The number of output positions.
    pub fn outputs(&self) -> usize {
        self.count.len()
    }

    fn is_identity(&self, n_in: usize) -> bool {
        self.outputs() == n_in && (0..n_in).all(|j| self.count[j] == 1 && self.index[j * self.width] == j && self.weight[j * self.width] == 1.0)
    }
}

/// PyTorch's ratio from output to input coordinates (`area_pixel_compute_scale`), in `F`.
fn pixel_scale<F: Float>(n_in: usize, n_out: usize, align_corners: bool, scale: Option<f64>) -> F {
    let f = |v: usize| F::from(v).unwrap();
    if align_corners {
        if n_out > 1 {
            f(n_in - 1) / f(n_out - 1)
        } else {
            F::zero()
        }
    } else {
        match scale {
            Some(s) if s > 0.0 => F::from(1.0 / s).unwrap(),
            _ => f(n_in) / f(n_out),
        }
    }
}

/// The input coordinate of output `j` (`area_pixel_compute_source_index`); linear clamps at 0.
fn source_coord<F: Float>(scale: F, j: usize, align_corners: bool, cubic: bool) -> F {
    let j = F::from(j).unwrap();
    if align_corners {
        return scale * j;
    }
    let half = F::from(0.5).unwrap();
    let x = scale * (j + half) - half;
    if !cubic && x < F::zero() {
        F::zero()
    } else {
        x
    }
}

/// Nearest: `floor(j·scale)`; nearest-exact: `floor((j + 0.5)·scale)`; in float32 like PyTorch.
/// Nearest keeps PyTorch's exact shortcuts for equal and doubled sizes, whatever the scale.
fn nearest_taps(n_in: usize, n_out: usize, scale: Option<f64>, exact: bool) -> Result<Taps> {
    let s: f32 = pixel_scale(n_in, n_out, false, scale);
    let mut taps = Taps::new(1, n_out)?;
    for j in 0..n_out {
        let i = if !exact && n_out == n_in {
            j
        } else if !exact && n_out == 2 * n_in {
            j / 2
        } else if exact {
            ((j as f32 + 0.5) * s).floor() as usize
        } else {
            ((j as f32) * s).floor() as usize
        };
        taps.push(&[(i.min(n_in - 1), 1.0)]);
    }
    Ok(taps)
}

/// Floor of `x` and the fraction past it, kept in `[0, 1]` (`guard_index_and_lambda`).
fn split_coord<F: Float>(x: F, n_in: usize) -> (isize, f64) {
    let i = x.floor().to_isize().unwrap().min(n_in as isize - 1);
    let frac = (x - F::from(i).unwrap()).max(F::zero()).min(F::one());
    (i, frac.to_f64().unwrap())
}

fn linear_taps<F: Float>(n_in: usize, n_out: usize, scale: Option<f64>, align_corners: bool) -> Result<Taps> {
    let s: F = pixel_scale(n_in, n_out, align_corners, scale);
    let mut taps = Taps::new(2, n_out)?;
    for j in 0..n_out {
        if n_in == n_out {
            taps.push(&[(j, 1.0)]);
            continue;
        }
        let (i0, l1) = split_coord(source_coord(s, j, align_corners, false), n_in);
        let i0 = i0 as usize;
        let i1 = if i0 < n_in - 1 { i0 + 1 } else { i0 };
        taps.push(&[(i0, 1.0 - l1), (i1, l1)]);
    }
    Ok(taps)
}

/// Keys' cubic convolution kernel with parameter `a` (-0.75 for PyTorch's bicubic, -0.5 for PIL's).
fn cubic_weight(x: f64, a: f64) -> f64 {
    let x = x.abs();
    if x <= 1.0 {
        ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    } else if x < 2.0 {
        ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
    } else {
        0.0
    }
}

fn cubic_taps<F: Float>(n_in: usize, n_out: usize, scale: Option<f64>, align_corners: bool) -> Result<Taps> {
    let s: F = pixel_scale(n_in, n_out, align_corners, scale);
    let mut taps = Taps::new(4, n_out)?;
    for j in 0..n_out {
        let (i, t) = split_coord(source_coord(s, j, align_corners, true), n_in);
        let tap = |k: isize| ((i - 1 + k).clamp(0, n_in as isize - 1) as usize, cubic_weight(t - (k - 1) as f64, -0.75));
        taps.push(&[tap(0), tap(1), tap(2), tap(3)]);
    }
    Ok(taps)
}

fn triangle(x: f64) -> f64 {
    (1.0 - x.abs()).max(0.0)
}

fn pil_cubic(x: f64) -> f64 {
    cubic_weight(x, -0.5)
}

/// PIL's antialiased resampling: the filter is stretched by the downscale factor so every input
/// pixel contributes, and each output's weights are normalised to sum to one.
fn antialias_taps<F: Float>(n_in: usize, n_out: usize, scale: Option<f64>, align_corners: bool, cubic: bool) -> Result<Taps> {
    let (support, filter): (f64, fn(f64) -> f64) = if cubic { (2.0, pil_cubic) } else { (1.0, triangle) };
    let s = pixel_scale::<F>(n_in, n_out, align_corners, scale).to_f64().unwrap();
    let stretch = s.max(1.0);
    let support = support * stretch;
    // A window spans at most 2·support + 1 input positions.
    let width = (2.0 * support).ceil() as usize + 2;
    let mut taps = Taps::new(width, n_out)?;
    for j in 0..n_out {
        let center = s * (j as f64 + 0.5);
        let lo = ((center - support + 0.5) as isize).max(0) as usize;
        let hi = ((center + support + 0.5) as isize).clamp(0, n_in as isize) as usize;
        let mut row: Vec<(usize, f64)> = (lo..hi).map(|i| (i, filter((i as f64 - center + 0.5) / stretch))).collect();
        let total: f64 = row.iter().map(|t| t.1).sum();
        if total != 0.0 {
            row.iter_mut().for_each(|t| t.1 /= total);
        }
        taps.push(&row);
    }
    Ok(taps)
}

/// `interpolate` of `input [N, C, *spatial]` to `size`; `scales` are the user's scale factors
/// (used for the coordinate mapping when given, as PyTorch does without `recompute_scale_factor`).
///
/// Every mode is separable and linear, so the gradient applies each dim's 1-d resampling
/// matrix, transposed.
pub fn interpolate(input: &Tensor, size: &[usize], scales: &[Option<f64>], mode: Mode, align_corners: bool, antialias: bool) -> Result<Tensor> {
    input.dtype().require_real("interpolate")?;
    crate::autograd::track(&[input], || interpolate_kernel(input, size, scales, mode, align_corners, antialias), |y| {
        let first = input.ndim() - size.len();
        let matrices = (0..size.len())
            .map(|i| super::grad::pool::matrix_of(input.shape()[first + i], input.dtype(), |b| interpolate_kernel(b, &size[i..=i], &scales[i..=i], mode, align_corners, antialias)))
            .collect::<Result<Vec<_>>>()?;
        let name = match mode {
            Mode::Nearest => "UpsampleNearestBackward0",
            Mode::NearestExact => "UpsampleNearestExactBackward0",
            Mode::Linear => "UpsampleLinearBackward0",
            Mode::Cubic => "UpsampleBicubicBackward0",
        };
        super::grad::pool::record_separable(name, input, matrices, 1.0, y)
    })
}

fn interpolate_kernel(input: &Tensor, size: &[usize], scales: &[Option<f64>], mode: Mode, align_corners: bool, antialias: bool) -> Result<Tensor> {
    check_float("interpolate", input)?;
    let dims = size.len();
    if !(1..=3).contains(&dims) || input.ndim() != dims + 2 || scales.len() != dims {
        bail!(Runtime, "interpolate: expected a {}D input for {dims} output sizes, but got input of size {:?}", dims + 2, input.shape());
    }
    let spatial = &input.shape()[2..];
    if spatial.contains(&0) || size.contains(&0) {
        bail!(Runtime, "Input and output sizes should be greater than 0, but got input {spatial:?} and output {size:?}");
    }
    if antialias && !matches!(mode, Mode::Linear | Mode::Cubic) {
        bail!(Value, "Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor as input");
    }
    // Channels-last input: the passes run over its [N, H, W, C] memory (spatial dims 1 and 2),
    // and the result is channels-last too.
    let nhwc = dims == 2 && crate::backend::cpu::nhwc::is_channels_last(input);
    let x = input.to_dtype(compute_dtype(input.dtype()))?;
    let (x, first) = if nhwc { (x.permute(&[0, 2, 3, 1])?.contiguous()?, 1) } else { (x.contiguous()?, 2) };
    let out = if x.dtype() == DType::F64 {
        resize_all::<f64>(&x, first, size, scales, mode, align_corners, antialias)?
    } else {
        resize_all::<f32>(&x, first, size, scales, mode, align_corners, antialias)?
    };
    let out = if nhwc { out.permute(&[0, 3, 1, 2])? } else { out };
    Ok(out.to_dtype(input.dtype())?)
}

/// Resizes the spatial dims `first..first + size.len()` of a contiguous `x`.
#[allow(clippy::too_many_arguments)]
fn resize_all<T: Element + Float>(x: &Tensor, first: usize, size: &[usize], scales: &[Option<f64>], mode: Mode, align_corners: bool, antialias: bool) -> Result<Tensor> {
    let mut shape = x.shape().to_vec();
    let mut cur = x.clone();
    for d in (first..first + size.len()).rev() {
        let (n_in, n_out, scale) = (shape[d], size[d - first], scales[d - first]);
        let taps = match mode {
            Mode::Nearest => nearest_taps(n_in, n_out, scale, false),
            Mode::NearestExact => nearest_taps(n_in, n_out, scale, true),
            Mode::Linear if antialias => antialias_taps::<T>(n_in, n_out, scale, align_corners, false),
            Mode::Cubic if antialias => antialias_taps::<T>(n_in, n_out, scale, align_corners, true),
            Mode::Linear => linear_taps::<T>(n_in, n_out, scale, align_corners),
            Mode::Cubic => cubic_taps::<T>(n_in, n_out, scale, align_corners),
        }?;
        if taps.is_identity(n_in) {
            continue;
        }
        let (outer, inner): (usize, usize) = (shape[..d].iter().product(), shape[d + 1..].iter().product());
        cur = crate::backend::of(cur.device())?.resample(&cur.reshape(&[outer as i64, n_in as i64, inner as i64])?, &taps)?;
        shape[d] = n_out;
    }
    let shape: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
    Ok(cur.reshape(&shape).expect("a resize keeps its element count"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_doubles_by_repeating() {
        let t = nearest_taps(3, 6, None, false).unwrap();
        assert_eq!(t.index, vec![0, 0, 1, 1, 2, 2]);
    }

    #[test]
    fn linear_half_pixel_weights() {
        let t = linear_taps::<f64>(2, 4, None, false).unwrap();
        assert_eq!(t.index[2..4], [0, 1]);
        assert!((t.weight[2] - 0.75).abs() < 1e-12);
    }

    #[test]
    fn antialias_weights_sum_to_one() {
        let t = antialias_taps::<f64>(10, 3, None, false, true).unwrap();
        for j in 0..3 {
            let s: f64 = (0..t.count[j]).map(|k| t.weight[j * t.width + k]).sum();
            assert!((s - 1.0).abs() < 1e-12);
        }
    }
}
