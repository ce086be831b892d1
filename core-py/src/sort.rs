//! Bindings for sorting, order statistics, unique, searchsorted and the cumulative ops; the
//! `ember` package (`_sort_api.py`) builds the public functions on these.
use crate::convert::PyDType;
use crate::errors::IntoPyResult;
use crate::tensor::{nogil, PyTensor};
// Aliased: each #[pyfunction] defines a module of its own name (`sort`, `scan`).
use ember_core::ops::scan::{self as scans, ScanOp};
use ember_core::ops::sort::{self as sorting, Interpolation};
use ember_core::Tensor;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

fn wrap(t: Tensor) -> PyTensor {
    PyTensor::new(t)
}

fn pair((a, b): (Tensor, Tensor)) -> (PyTensor, PyTensor) {
    (wrap(a), wrap(b))
}

#[pyfunction]
fn sort(py: Python<'_>, x: &PyTensor, dim: i64, descending: bool) -> PyResult<(PyTensor, PyTensor)> {
    Ok(pair(nogil(py, x.t.numel(), || sorting::sort(&x.t, dim, descending)).py()?))
}

#[pyfunction]
fn topk(py: Python<'_>, x: &PyTensor, k: i64, dim: i64, largest: bool, sorted: bool) -> PyResult<(PyTensor, PyTensor)> {
    Ok(pair(nogil(py, x.t.numel(), || sorting::topk(&x.t, k, dim, largest, sorted)).py()?))
}

#[pyfunction]
fn kthvalue(py: Python<'_>, x: &PyTensor, k: i64, dim: i64, keepdim: bool) -> PyResult<(PyTensor, PyTensor)> {
    Ok(pair(nogil(py, x.t.numel(), || sorting::kthvalue(&x.t, k, dim, keepdim)).py()?))
}

#[pyfunction]
fn median(py: Python<'_>, x: &PyTensor, dim: i64, keepdim: bool, ignore_nan: bool) -> PyResult<(PyTensor, PyTensor)> {
    Ok(pair(nogil(py, x.t.numel(), || sorting::median(&x.t, dim, keepdim, ignore_nan)).py()?))
}

#[pyfunction]
fn mode(py: Python<'_>, x: &PyTensor, dim: i64, keepdim: bool) -> PyResult<(PyTensor, PyTensor)> {
    Ok(pair(nogil(py, x.t.numel(), || sorting::mode(&x.t, dim, keepdim)).py()?))
}

/// `q` arrives as a list of floats; `q_is_scalar` drops the leading q dim from the result.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn quantile(
    py: Python<'_>,
    x: &PyTensor,
    q: Vec<f64>,
    q_is_scalar: bool,
    dim: Option<i64>,
    keepdim: bool,
    interpolation: &str,
    ignore_nan: bool,
) -> PyResult<PyTensor> {
    let how = Interpolation::from_name(interpolation).py()?;
    Ok(wrap(nogil(py, x.t.numel(), || sorting::quantile(&x.t, &q, q_is_scalar, dim, keepdim, how, ignore_nan)).py()?))
}

/// (values, inverse or None, counts) of `unique` (sorted) or `unique_consecutive`.
#[pyfunction]
fn unique(py: Python<'_>, x: &PyTensor, dim: Option<i64>, consecutive: bool, with_inverse: bool) -> PyResult<(PyTensor, Option<PyTensor>, PyTensor)> {
    let (v, i, c) = nogil(py, x.t.numel(), || sorting::unique(&x.t, dim, consecutive, with_inverse)).py()?;
    Ok((wrap(v), i.map(wrap), wrap(c)))
}

#[pyfunction]
#[pyo3(signature = (sorted_sequence, x, right, sorter, out_int32))]
fn searchsorted(
    py: Python<'_>,
    sorted_sequence: &PyTensor,
    x: &PyTensor,
    right: bool,
    sorter: Option<&PyTensor>,
    out_int32: bool,
) -> PyResult<PyTensor> {
    let sorter = sorter.map(|s| s.t.clone());
    let r = nogil(py, x.t.numel(), || sorting::searchsorted(&sorted_sequence.t, &x.t, right, sorter.as_ref(), out_int32));
    Ok(wrap(r.py()?))
}

/// `cumsum`, `cumprod`, `logcumsumexp` by name.
#[pyfunction]
#[pyo3(signature = (name, x, dim, dtype=None))]
fn scan(py: Python<'_>, name: &str, x: &PyTensor, dim: i64, dtype: Option<PyDType>) -> PyResult<PyTensor> {
    let op = ScanOp::from_name(name).ok_or_else(|| PyValueError::new_err(format!("unknown scan op '{name}'")))?;
    Ok(wrap(nogil(py, x.t.numel(), || scans::scan(op, &x.t, dim, dtype.map(|d| d.0))).py()?))
}

/// `cummax` (is_max) or `cummin`: (values, indices).
#[pyfunction]
fn cum_extreme(py: Python<'_>, x: &PyTensor, dim: i64, is_max: bool) -> PyResult<(PyTensor, PyTensor)> {
    Ok(pair(nogil(py, x.t.numel(), || scans::cum_extreme(&x.t, dim, is_max)).py()?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sort, m)?)?;
    m.add_function(wrap_pyfunction!(topk, m)?)?;
    m.add_function(wrap_pyfunction!(kthvalue, m)?)?;
    m.add_function(wrap_pyfunction!(median, m)?)?;
    m.add_function(wrap_pyfunction!(mode, m)?)?;
    m.add_function(wrap_pyfunction!(quantile, m)?)?;
    m.add_function(wrap_pyfunction!(unique, m)?)?;
    m.add_function(wrap_pyfunction!(searchsorted, m)?)?;
    m.add_function(wrap_pyfunction!(scan, m)?)?;
    m.add_function(wrap_pyfunction!(cum_extreme, m)?)?;
    Ok(())
}
