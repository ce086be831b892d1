//! Discrete Fourier transforms: the three primitives PyTorch builds `torch.fft` on
//! (complex-to-complex, real-to-complex, complex-to-real over a set of dims), each with its
//! derivative; the transforms themselves are the backend's. `ember.fft` (Python) turns `n`/`s`,
//! `dim` and the hermitian variants into calls of these.
use crate::autograd;
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// The `norm` argument: which direction carries the `1/n` (or both `1/sqrt(n)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Norm {
    /// No scaling forward, `1/n` on the inverse (PyTorch's default).
    Backward,
    /// `1/sqrt(n)` both ways.
    Ortho,
    /// `1/n` forward, none on the inverse.
    Forward,
}

impl Norm {
    /// `None` is "backward", PyTorch's default.
    pub fn from_name(name: Option<&str>) -> Result<Norm> {
        Ok(match name {
            None | Some("backward") => Norm::Backward,
            Some("ortho") => Norm::Ortho,
            Some("forward") => Norm::Forward,
            Some(other) => bail!(Value, "Invalid normalization mode: \"{other}\""),
        })
    }

    /// The factor a transform of `n` points in `forward` direction multiplies by.
    fn scale(self, n: usize, forward: bool) -> f64 {
        match (self, forward) {
            (Norm::Ortho, _) => 1.0 / (n as f64).sqrt(),
            (Norm::Backward, false) | (Norm::Forward, true) => 1.0 / n as f64,
            _ => 1.0,
        }
    }

    /// The mode whose scale in the opposite direction equals this one's: the adjoint of a
    /// transform is the opposite transform with the same factor.
    pub fn swapped(self) -> Norm {
        match self {
            Norm::Backward => Norm::Forward,
            Norm::Forward => Norm::Backward,
            Norm::Ortho => Norm::Ortho,
        }
    }
}

fn check_dims(x: &Tensor, dims: &[usize]) -> Result<()> {
    if dims.is_empty() {
        bail!(Runtime, "fft: at least one dim must be transformed");
    }
    for (i, &d) in dims.iter().enumerate() {
        if d >= x.ndim() {
            bail!(Index, "Dimension out of range (expected to be in range of [{}, {}], but got {d})", -(x.ndim() as i64), x.ndim() as i64 - 1);
        }
        if dims[..i].contains(&d) {
            bail!(Runtime, "FFT dims must be unique");
        }
        if x.shape()[d] == 0 {
            bail!(Runtime, "Invalid number of data points (0) specified");
        }
    }
    Ok(())
}

fn points(x: &Tensor, dims: &[usize]) -> usize {
    dims.iter().map(|&d| x.shape()[d]).product()
}

/// Complex-to-complex transform over `dims` (forward: `e^{-2πi jk/n}`), `norm` as PyTorch's.
pub fn fft_c2c(x: &Tensor, dims: &[usize], norm: Norm, forward: bool) -> Result<Tensor> {
    let dims_owned = dims.to_vec();
    autograd::track(&[x], || c2c_kernel(x, dims, norm, forward), move |y| {
        let dims = dims_owned.clone();
        autograd::record("FftC2CBackward0", &[x], &[y], &[], move |_, g| Ok(vec![Some(fft_c2c(&g[0], &dims, norm.swapped(), !forward)?)]))
    })
}

/// Real-to-complex forward transform over `dims`; `onesided` keeps the last dim's first
/// `n/2 + 1` outputs (the rest are their conjugates).
pub fn fft_r2c(x: &Tensor, dims: &[usize], norm: Norm, onesided: bool) -> Result<Tensor> {
    let dims_owned = dims.to_vec();
    let full = dims.last().and_then(|&d| x.shape().get(d).copied()).unwrap_or(0);
    let in_dtype = x.dtype();
    autograd::track(&[x], || r2c_kernel(x, dims, norm, onesided), move |y| {
        let dims = dims_owned.clone();
        autograd::record("FftR2CBackward0", &[x], &[y], &[], move |_, g| Ok(vec![Some(r2c_backward(&g[0], &dims, norm, onesided, full, in_dtype)?)]))
    })
}

/// Complex-to-real inverse transform over `dims`: the last dim holds the first `n/2 + 1`
/// coefficients of a hermitian signal whose length is `last_size`.
pub fn fft_c2r(x: &Tensor, dims: &[usize], norm: Norm, last_size: usize) -> Result<Tensor> {
    let dims_owned = dims.to_vec();
    autograd::track(&[x], || c2r_kernel(x, dims, norm, last_size), move |y| {
        let dims = dims_owned.clone();
        autograd::record("FftC2RBackward0", &[x], &[y], &[], move |_, g| Ok(vec![Some(c2r_backward(&g[0], &dims, norm)?)]))
    })
}

/// The adjoint of the onesided r2c: the missing half of the spectrum is zero, then an inverse
/// c2c with the same factor, of which the real input keeps the real part.
fn r2c_backward(g: &Tensor, dims: &[usize], norm: Norm, onesided: bool, full: usize, in_dtype: DType) -> Result<Tensor> {
    let last = dims[dims.len() - 1];
    let g = if onesided && g.shape()[last] < full {
        let mut shape = g.shape().to_vec();
        shape[last] = full - g.shape()[last];
        super::join::cat(&[g.clone(), Tensor::zeros(&shape, g.dtype())?], last as i64)?
    } else {
        g.clone()
    };
    let back = fft_c2c(&g, dims, norm.swapped(), false)?;
    Ok(super::complex::real(&back)?.to_dtype(in_dtype)?)
}

/// The adjoint of c2r: a forward r2c of the gradient with the same factor, the coefficients
/// that stand for two (a value and its conjugate) doubled.
fn c2r_backward(g: &Tensor, dims: &[usize], norm: Norm) -> Result<Tensor> {
    let last = dims[dims.len() - 1];
    let n = g.shape()[last];
    let half = fft_r2c(g, dims, norm.swapped(), true)?;
    let doubled = n - half.shape()[last];
    if doubled == 0 {
        return Ok(half);
    }
    let m = half.shape()[last];
    let weights: Vec<f64> = (0..m).map(|k| if k >= 1 && k <= doubled { 2.0 } else { 1.0 }).collect();
    let mut wshape = vec![1usize; g.ndim()];
    wshape[last] = m;
    let w = Tensor::from_vec(weights, &wshape)?.to_dtype(half.dtype().to_real())?;
    super::grad::mul(&half, &w)
}

fn c2c_kernel(x: &Tensor, dims: &[usize], norm: Norm, forward: bool) -> Result<Tensor> {
    if !x.dtype().is_complex() {
        bail!(Runtime, "fft_c2c: expected a complex tensor, got {}", x.dtype());
    }
    check_dims(x, dims)?;
    let scale = norm.scale(points(x, dims), forward);
    crate::backend::of(x.device())?.fft_c2c(x, dims, forward, scale)
}

fn r2c_kernel(x: &Tensor, dims: &[usize], norm: Norm, onesided: bool) -> Result<Tensor> {
    if !matches!(x.dtype(), DType::F64 | DType::F32 | DType::F16) {
        bail!(Runtime, "Unsupported dtype {}", x.dtype().legacy_name());
    }
    check_dims(x, dims)?;
    let scale = norm.scale(points(x, dims), true);
    crate::backend::of(x.device())?.fft_r2c(x, dims, onesided, scale)
}

fn c2r_kernel(x: &Tensor, dims: &[usize], norm: Norm, last_size: usize) -> Result<Tensor> {
    if !x.dtype().is_complex() {
        bail!(Runtime, "fft_c2r: expected a complex tensor, got {}", x.dtype());
    }
    check_dims(x, dims)?;
    let (last, rest) = dims.split_last().expect("checked non-empty");
    if last_size == 0 || x.shape()[*last] != last_size / 2 + 1 {
        bail!(Runtime, "Invalid number of data points ({last_size}) specified");
    }
    let n: usize = rest.iter().map(|&d| x.shape()[d]).product::<usize>() * last_size;
    crate::backend::of(x.device())?.fft_c2r(x, dims, last_size, norm.scale(n, false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::CDouble;

    fn naive_dft(x: &[CDouble], forward: bool) -> Vec<CDouble> {
        let n = x.len();
        let sign = if forward { -1.0 } else { 1.0 };
        (0..n)
            .map(|k| {
                x.iter().enumerate().fold(CDouble::new(0.0, 0.0), |acc, (j, &v)| {
                    let a = sign * 2.0 * std::f64::consts::PI * (j * k) as f64 / n as f64;
                    acc + v * CDouble::new(a.cos(), a.sin())
                })
            })
            .collect()
    }

    fn close(a: &[CDouble], b: &[CDouble]) {
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).norm() < 1e-9, "{x} vs {y}");
        }
    }

    #[test]
    fn c2c_matches_the_definition_along_each_dim() {
        // 3 x 7 (a prime length), transformed along dim 0 (gathered columns) and dim 1 (rows).
        let data: Vec<CDouble> = (0..21).map(|i| CDouble::new((i as f64 * 0.37).sin(), (i as f64 * 0.11).cos())).collect();
        let x = Tensor::from_vec(data.clone(), &[3, 7]).unwrap();
        let rows = fft_c2c(&x, &[1], Norm::Backward, true).unwrap().to_vec::<CDouble>().unwrap();
        for r in 0..3 {
            close(&rows[r * 7..(r + 1) * 7], &naive_dft(&data[r * 7..(r + 1) * 7], true));
        }
        let cols = fft_c2c(&x, &[0], Norm::Forward, false).unwrap().to_vec::<CDouble>().unwrap();
        for c in 0..7 {
            let col: Vec<CDouble> = (0..3).map(|r| data[r * 7 + c]).collect();
            let want = naive_dft(&col, false);
            close(&(0..3).map(|r| cols[r * 7 + c]).collect::<Vec<_>>(), &want);
        }
        assert_eq!(x.to_vec::<CDouble>().unwrap(), data, "the input is never written");
    }

    #[test]
    fn r2c_then_c2r_round_trips_odd_and_even_lengths() {
        for n in [1usize, 6, 9] {
            let data: Vec<f64> = (0..2 * n).map(|i| (i as f64 * 0.7).cos()).collect();
            let x = Tensor::from_vec(data.clone(), &[2, n]).unwrap();
            let half = fft_r2c(&x, &[1], Norm::Ortho, true).unwrap();
            assert_eq!(half.shape(), &[2, n / 2 + 1]);
            let back = fft_c2r(&half, &[1], Norm::Ortho, n).unwrap().to_vec::<f64>().unwrap();
            for (a, b) in back.iter().zip(&data) {
                assert!((a - b).abs() < 1e-12);
            }
            let full = fft_r2c(&x, &[0, 1], Norm::Backward, false).unwrap();
            let direct = fft_c2c(&x.to_dtype(DType::C128).unwrap(), &[0, 1], Norm::Backward, true).unwrap();
            close(&full.to_vec::<CDouble>().unwrap(), &direct.to_vec::<CDouble>().unwrap());
        }
    }

    #[test]
    fn bad_arguments_are_errors() {
        let x = Tensor::zeros(&[4], DType::C64).unwrap();
        assert!(Norm::from_name(Some("sideways")).is_err());
        assert!(fft_c2c(&x, &[1], Norm::Backward, true).is_err());
        assert!(fft_c2c(&x, &[0, 0], Norm::Backward, true).is_err());
        assert!(fft_c2r(&x, &[0], Norm::Backward, 9).is_err());
        assert!(fft_r2c(&x, &[0], Norm::Backward, true).is_err());
    }
}
