//! The `linalg` primitives `ember.linalg` is built on: each releases the GIL around its kernel.
use crate::errors::IntoPyResult;
use crate::tensor::{nogil, PyTensor};
use ember_core::ops::linalg::ops as la;
use ember_core::Tensor;
use pyo3::prelude::*;

fn w(t: Tensor) -> PyTensor {
    PyTensor::new(t)
}

#[pyfunction]
fn linalg_solve_ex(py: Python<'_>, a: &PyTensor, b: &PyTensor, check_errors: bool) -> PyResult<(PyTensor, PyTensor)> {
    let (x, info) = nogil(py, a.t.numel(), || la::solve_ex(&a.t, &b.t, check_errors)).py()?;
    Ok((w(x), w(info)))
}

#[pyfunction]
fn linalg_inv_ex(py: Python<'_>, a: &PyTensor, check_errors: bool) -> PyResult<(PyTensor, PyTensor)> {
    let (x, info) = nogil(py, a.t.numel(), || la::inv_ex(&a.t, check_errors)).py()?;
    Ok((w(x), w(info)))
}

#[pyfunction]
fn linalg_det(py: Python<'_>, a: &PyTensor) -> PyResult<PyTensor> {
    nogil(py, a.t.numel(), || la::det(&a.t)).map(w).py()
}

#[pyfunction]
fn linalg_slogdet(py: Python<'_>, a: &PyTensor) -> PyResult<(PyTensor, PyTensor)> {
    let (s, l) = nogil(py, a.t.numel(), || la::slogdet(&a.t)).py()?;
    Ok((w(s), w(l)))
}

#[pyfunction]
fn linalg_eigh(py: Python<'_>, a: &PyTensor, uplo: &str) -> PyResult<(PyTensor, PyTensor)> {
    let (l, q) = nogil(py, a.t.numel(), || la::eigh(&a.t, uplo)).py()?;
    Ok((w(l), w(q)))
}

#[pyfunction]
fn linalg_eigvalsh(py: Python<'_>, a: &PyTensor, uplo: &str) -> PyResult<PyTensor> {
    nogil(py, a.t.numel(), || la::eigvalsh(&a.t, uplo)).map(w).py()
}

#[pyfunction]
fn linalg_cholesky_ex(py: Python<'_>, a: &PyTensor, upper: bool, check_errors: bool) -> PyResult<(PyTensor, PyTensor)> {
    let (l, info) = nogil(py, a.t.numel(), || la::cholesky_ex(&a.t, upper, check_errors)).py()?;
    Ok((w(l), w(info)))
}

#[pyfunction]
fn linalg_solve_triangular(py: Python<'_>, a: &PyTensor, b: &PyTensor, upper: bool, left: bool, unitriangular: bool) -> PyResult<PyTensor> {
    nogil(py, a.t.numel(), || la::solve_triangular(&a.t, &b.t, upper, left, unitriangular)).map(w).py()
}

#[pyfunction]
fn linalg_qr(py: Python<'_>, a: &PyTensor, mode: &str) -> PyResult<(PyTensor, PyTensor)> {
    let (q, r) = nogil(py, a.t.numel(), || la::qr(&a.t, mode)).py()?;
    Ok((w(q), w(r)))
}

#[pyfunction]
fn linalg_svd(py: Python<'_>, a: &PyTensor, full_matrices: bool) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let (u, s, vh) = nogil(py, a.t.numel(), || la::svd(&a.t, full_matrices)).py()?;
    Ok((w(u), w(s), w(vh)))
}

#[pyfunction]
fn linalg_svdvals(py: Python<'_>, a: &PyTensor) -> PyResult<PyTensor> {
    nogil(py, a.t.numel(), || la::svdvals(&a.t)).map(w).py()
}

#[pyfunction]
fn linalg_eig(py: Python<'_>, a: &PyTensor, vectors: bool) -> PyResult<(PyTensor, Option<PyTensor>)> {
    let (values, v) = nogil(py, a.t.numel(), || la::eig(&a.t, vectors)).py()?;
    Ok((w(values), v.map(w)))
}

#[pyfunction]
fn linalg_lu_factor_ex(py: Python<'_>, a: &PyTensor, check_errors: bool) -> PyResult<(PyTensor, PyTensor, PyTensor)> {
    let (lu, piv, info) = nogil(py, a.t.numel(), || la::lu_factor_ex(&a.t, check_errors)).py()?;
    Ok((w(lu), w(piv), w(info)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("LinAlgError", m.py().get_type::<crate::errors::LinAlgError>())?;
    m.add_function(wrap_pyfunction!(linalg_solve_ex, m)?)?;
    m.add_function(wrap_pyfunction!(linalg_inv_ex, m)?)?;
    m.add_function(wrap_pyfunction!(linalg_det, m)?)?;
    m.add_function(wrap_pyfunction!(linalg_slogdet, m)?)?;
    m.add_function(wrap_pyfunction!(linalg_eigh, m)?)?;
    m.add_function(wrap_pyfunction!(linalg_eigvalsh, m)?)?;
    m.add_function(wrap_pyfunction!(linalg_cholesky_ex, m)?)?;
    m.add_function(wrap_pyfunction!(linalg_solve_triangular, m)?)?;
    m.add_function(wrap_pyfunction!(linalg_qr, m)?)?;
    m.add_function(wrap_pyfunction!(linalg_svd, m)?)?;
    m.add_function(wrap_pyfunction!(linalg_svdvals, m)?)?;
    m.add_function(wrap_pyfunction!(linalg_eig, m)?)?;
    m.add_function(wrap_pyfunction!(linalg_lu_factor_ex, m)?)?;
    Ok(())
}
