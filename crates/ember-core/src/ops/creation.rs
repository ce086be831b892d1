//! Tensors made from sizes and ranges.
use super::binary::Scalar;
use crate::backend::cpu::map::{unary_into, Ptr};
use crate::bail;
use crate::device::Device;
use crate::dtype::{CDouble, DType, Element};
use crate::error::Result;
use crate::parallel::{for_range, GRAIN};
use crate::tensor::Tensor;
use crate::with_dtype;

/// `torch.full` on the CPU: a tensor of `shape` with every element `value`, cast to `dtype`.
pub fn full(shape: &[usize], value: Scalar, dtype: DType) -> Result<Tensor> {
    full_on(shape, value, dtype, Device::Cpu)
}

/// `torch.full(..., device=device)`.
pub fn full_on(shape: &[usize], value: Scalar, dtype: DType, device: Device) -> Result<Tensor> {
    let out = Tensor::empty_on(shape, dtype, device)?;
    crate::backend::of(device)?.fill(&out, value)?;
    Ok(out)
}

/// Fills a fresh tensor with `f(i)` for flat index `i`, in parallel.
pub fn from_index_fn<T: Element>(n: usize, f: impl Fn(usize) -> T + Sync) -> Result<Tensor> {
    let out = Tensor::uninit(&[n], T::DTYPE)?;
    let p = Ptr(out.data_ptr::<T>());
    for_range(n, GRAIN, |s, e| {
        for i in s..e {
            unsafe { *p.at(i as isize) = f(i) };
        }
    });
    Ok(out)
}

/// `torch.arange(start, end, step)`: `ceil((end - start) / step)` values from `start`, `end`
/// excluded. Errors on a zero or wrongly signed step, a non-finite bound, or a complex dtype.
pub fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<Tensor> {
    if step == 0.0 {
        bail!(Runtime, "step must be nonzero");
    }
    if !start.is_finite() || !end.is_finite() {
        bail!(Runtime, "unsupported range: {start} -> {end}");
    }
    if (step > 0.0 && end < start) || (step < 0.0 && end > start) {
        bail!(Runtime, "upper bound and larger bound inconsistent with step sign");
    }
    dtype.require_real("arange_cpu")?;
    let n = ((end - start) / step).ceil().max(0.0) as usize;
    Ok(with_dtype!(dtype, T, if dtype.is_float() {
        from_index_fn::<T>(n, |i| T::from_f64(start + i as f64 * step))?
    } else {
        from_index_fn::<T>(n, |i| T::from_i64((start + i as f64 * step) as i64))?
    }))
}

/// The `i`-th of `n` evenly spaced points from `start` to `end`, filled from both ends so the
/// last element is exactly `end`, as PyTorch does.
fn linspace_point(start: f64, end: f64, n: usize) -> impl Fn(usize) -> f64 + Sync {
    let step = if n > 1 { (end - start) / (n - 1) as f64 } else { 0.0 };
    let half = n.div_ceil(2);
    move |i| if i < half { start + step * i as f64 } else { end - step * (n - 1 - i) as f64 }
}

fn check_steps(steps: i64) -> Result<usize> {
    if steps < 0 {
        bail!(Runtime, "number of steps must be non-negative, got {steps}");
    }
    Ok(steps as usize)
}

/// `torch.linspace`: `steps` evenly spaced values from `start` to `end`, both included (the
/// last is exactly `end`). Errors on negative `steps`.
pub fn linspace(start: f64, end: f64, steps: i64, dtype: DType) -> Result<Tensor> {
    if dtype.is_complex() {
        return linspace_complex(CDouble::new(start, 0.0), CDouble::new(end, 0.0), steps, dtype);
    }
    let n = check_steps(steps)?;
    let point = linspace_point(start, end, n);
    Ok(with_dtype!(dtype, T, from_index_fn::<T>(n, |i| {
        let v = point(i);
        if dtype.is_float() { T::from_f64(v) } else { T::from_i64(v as i64) }
    })?))
}

/// `linspace` into a complex dtype: the real and imaginary parts are each spaced evenly.
pub fn linspace_complex(start: CDouble, end: CDouble, steps: i64, dtype: DType) -> Result<Tensor> {
    let n = check_steps(steps)?;
    if dtype == DType::C32 || !dtype.is_complex() {
        bail!(NotImplemented, "\"linspace_cpu\" not implemented for '{}'", dtype.legacy_name());
    }
    let (re, im) = (linspace_point(start.re, end.re, n), linspace_point(start.im, end.im, n));
    Ok(crate::with_complex!(dtype, T, from_index_fn::<T>(n, |i| T::from_c128(CDouble::new(re(i), im(i))))?))
}

/// `torch.logspace`: `base` raised to each of `linspace(start, end, steps)`.
pub fn logspace(start: f64, end: f64, steps: i64, base: f64, dtype: DType) -> Result<Tensor> {
    if dtype.is_complex() {
        return logspace_complex(CDouble::new(start, 0.0), CDouble::new(end, 0.0), steps, base, dtype);
    }
    let exps = linspace(start, end, steps, DType::F64)?;
    let out = Tensor::uninit(exps.shape(), dtype)?;
    with_dtype!(dtype, T, unary_into::<f64, T>(&exps, &out, |e| T::from_f64(base.powf(e))));
    Ok(out)
}

/// `base` raised to complex exponents spaced as `linspace_complex`'s points: `exp(e·ln base)`,
/// the logarithm of a negative base taken on the principal branch (`ln|base| + iπ`).
pub fn logspace_complex(start: CDouble, end: CDouble, steps: i64, base: f64, dtype: DType) -> Result<Tensor> {
    if dtype == DType::C32 || !dtype.is_complex() {
        bail!(NotImplemented, "\"logspace_cpu\" not implemented for '{}'", dtype.legacy_name());
    }
    let exps = linspace_complex(start, end, steps, DType::C128)?;
    let ln_base = CDouble::new(base, 0.0).ln();
    let out = Tensor::uninit(exps.shape(), dtype)?;
    crate::with_complex!(dtype, T, unary_into::<CDouble, T>(&exps, &out, |e| T::from_c128((e * ln_base).exp())));
    Ok(out)
}

/// `torch.eye(n, m)`: an `n × m` matrix with ones on the main diagonal.
pub fn eye(n: usize, m: usize, dtype: DType) -> Result<Tensor> {
    let out = Tensor::zeros(&[n, m], dtype)?;
    crate::with_any_dtype!(dtype, T, {
        let p = out.data_ptr::<T>();
        for i in 0..n.min(m) {
            unsafe { *p.add(i * m + i) = T::one() };
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complex_linspace_spaces_both_parts_and_ends_exactly() {
        let t = linspace_complex(CDouble::new(0.0, 1.0), CDouble::new(1.0, -1.0), 3, DType::C128).unwrap();
        assert_eq!(t.to_vec::<CDouble>().unwrap(), vec![CDouble::new(0.0, 1.0), CDouble::new(0.5, 0.0), CDouble::new(1.0, -1.0)]);
        assert!(linspace_complex(CDouble::new(0.0, 0.0), CDouble::new(1.0, 0.0), 3, DType::C32).is_err());
        let p = logspace(0.0, 1.0, 2, -4.0, DType::C128).unwrap().to_vec::<CDouble>().unwrap();
        assert!((p[1] - CDouble::new(-4.0, 0.0)).norm() < 1e-12, "{p:?}");
    }
}
