//! Cumulative ops along one dim: cumsum, cumprod, logcumsumexp, cummax and cummin: dtypes,
//! shapes and autograd; the running kernels are the backend's.
use super::sort::along;
use crate::backend;
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// A cumulative op along one dim.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScanOp {
    /// `cumsum`.
    Sum,
    /// `cumprod`.
    Prod,
    /// `logcumsumexp`.
    LogSumExp,
}

impl ScanOp {
    const NAMES: [(ScanOp, &'static str); 3] = [(ScanOp::Sum, "cumsum"), (ScanOp::Prod, "cumprod"), (ScanOp::LogSumExp, "logcumsumexp")];

    /// The op of PyTorch's function name (`"cumsum"`, `"cumprod"`, `"logcumsumexp"`).
    pub fn from_name(name: &str) -> Option<ScanOp> {
        Self::NAMES.iter().find(|(_, n)| *n == name).map(|(op, _)| *op)
    }

    /// PyTorch's name of the op.
    pub fn name(self) -> &'static str {
        Self::NAMES.iter().find(|(op, _)| *op == self).map(|(_, n)| *n).expect("every op is named")
    }
}

/// `cumsum`/`cumprod` (booleans and integers accumulate in int64, floats in f64, complex
/// numbers in complex128, as PyTorch's CPU kernels do) and `logcumsumexp` (floating and
/// complex input). `dtype` casts the input first.
pub fn scan(op: ScanOp, x: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    if dtype.unwrap_or(x.dtype()) == DType::C32 {
        let name = match op {
            ScanOp::Sum => "cumsum_out_cpu",
            ScanOp::Prod => "cumprod_out_cpu",
            ScanOp::LogSumExp => "logcumsumexp_out_cpu",
        };
        DType::C32.require_real(name)?;
    }
    crate::autograd::track(&[x], || scan_kernel(op, x, dim, dtype), |y| {
        super::grad::reduce::record_scan(op, x, along(x, dim)?.1, y)
    })
}

fn scan_kernel(op: ScanOp, x: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    let (xs, d) = along(x, dim)?;
    let xs = dtype.map_or(Ok(xs.clone()), |t| xs.to_dtype(t))?;
    let in_dtype = xs.dtype();
    if op == ScanOp::LogSumExp && !in_dtype.is_inexact() {
        bail!(Runtime, "logcumsumexp(): expected a floating point input, but got {in_dtype}");
    }
    let out_dtype = if in_dtype.is_inexact() { in_dtype } else { DType::I64 };
    let out = Tensor::empty_on(xs.shape(), out_dtype, xs.device())?;
    backend::of(xs.device())?.scan(op, &xs, d, &out)?;
    out.reshape(&x.shape().iter().map(|&s| s as i64).collect::<Vec<_>>())
}

/// `cummax`/`cummin`: the running extreme and the index where it was taken. A tie moves the
/// index to the later element, and a NaN, once seen, stays (both as PyTorch does).
pub fn cum_extreme(x: &Tensor, dim: i64, max: bool) -> Result<(Tensor, Tensor)> {
    x.dtype().require_real("cummax_cpu")?;
    crate::autograd::track(&[x], || cum_extreme_kernel(x, dim, max), |(v, i)| {
        super::grad::reduce::record_cum_extreme(x, along(x, dim)?.1, v, i, max)
    })
}

fn cum_extreme_kernel(x: &Tensor, dim: i64, max: bool) -> Result<(Tensor, Tensor)> {
    let (xs, d) = along(x, dim)?;
    let values = Tensor::empty_on(xs.shape(), xs.dtype(), xs.device())?;
    let indices = Tensor::empty_on(xs.shape(), DType::I64, xs.device())?;
    backend::of(xs.device())?.cum_extreme(&xs, d, max, &values, &indices)?;
    let shape: Vec<i64> = x.shape().iter().map(|&s| s as i64).collect();
    Ok((values.reshape(&shape)?, indices.reshape(&shape)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::CDouble;

    #[test]
    fn cummax_ties_take_the_later_index_and_nan_sticks() {
        let x = Tensor::from_vec(vec![1.0f32, 1.0, f32::NAN, 5.0], &[4]).unwrap();
        let (v, i) = cum_extreme(&x, 0, true).unwrap();
        let v = v.to_vec::<f32>().unwrap();
        assert_eq!(&v[..2], &[1.0, 1.0]);
        assert!(v[2].is_nan() && v[3].is_nan());
        assert_eq!(i.to_vec::<i64>().unwrap(), vec![0, 1, 2, 2]);
    }

    #[test]
    fn complex_cumprod_multiplies_in_complex_arithmetic() {
        let x = Tensor::from_vec(vec![CDouble::new(0.0, 1.0), CDouble::new(0.0, 1.0), CDouble::new(2.0, 0.0)], &[3]).unwrap();
        let c = scan(ScanOp::Prod, &x, 0, None).unwrap();
        assert_eq!(c.dtype(), DType::C128);
        assert_eq!(c.to_vec::<CDouble>().unwrap(), vec![CDouble::new(0.0, 1.0), CDouble::new(-1.0, 0.0), CDouble::new(-2.0, 0.0)]);
        assert!(scan(ScanOp::Sum, &x.to_dtype(DType::C32).unwrap(), 0, None).is_err());
    }

    #[test]
    fn integer_cumsum_is_int64_along_any_dim() {
        let x = Tensor::from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
        let c = scan(ScanOp::Sum, &x, 0, None).unwrap();
        assert_eq!(c.dtype(), DType::I64);
        assert_eq!(c.to_vec::<i64>().unwrap(), vec![1, 2, 3, 5, 7, 9]);
    }
}
