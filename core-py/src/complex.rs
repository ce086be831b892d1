//! Complex views and constructors, and the three FFT primitives `ember.fft` is built on.
use crate::errors::IntoPyResult;
use crate::tensor::{nogil, PyTensor};
use ember_core::ops::complex;
use ember_core::ops::fft::{self, Norm};
use pyo3::prelude::*;

fn wrap(r: ember_core::Result<ember_core::Tensor>) -> PyResult<PyTensor> {
    r.map(PyTensor::new).py()
}

#[pyfunction]
fn view_as_real(x: &PyTensor) -> PyResult<PyTensor> {
    wrap(complex::view_as_real(&x.t))
}

#[pyfunction]
fn view_as_complex(x: &PyTensor) -> PyResult<PyTensor> {
    wrap(complex::view_as_complex(&x.t))
}

#[pyfunction]
fn real(x: &PyTensor) -> PyResult<PyTensor> {
    wrap(complex::real(&x.t))
}

#[pyfunction]
fn imag(x: &PyTensor) -> PyResult<PyTensor> {
    wrap(complex::imag(&x.t))
}

#[pyfunction]
fn conj(x: &PyTensor) -> PyResult<PyTensor> {
    wrap(complex::conj(&x.t))
}

#[pyfunction]
#[pyo3(name = "complex")]
fn complex_(py: Python<'_>, real: &PyTensor, imag: &PyTensor) -> PyResult<PyTensor> {
    wrap(nogil(py, real.t.numel(), || complex::complex(&real.t, &imag.t)))
}

#[pyfunction]
fn polar(py: Python<'_>, abs: &PyTensor, angle: &PyTensor) -> PyResult<PyTensor> {
    wrap(nogil(py, abs.t.numel(), || complex::polar(&abs.t, &angle.t)))
}

/// `dims` are non-negative (the Python layer wraps them).
#[pyfunction]
#[pyo3(signature = (x, dims, norm, forward))]
fn fft_c2c(py: Python<'_>, x: &PyTensor, dims: Vec<usize>, norm: Option<&str>, forward: bool) -> PyResult<PyTensor> {
    let norm = Norm::from_name(norm).py()?;
    wrap(nogil(py, x.t.numel(), || fft::fft_c2c(&x.t, &dims, norm, forward)))
}

#[pyfunction]
#[pyo3(signature = (x, dims, norm, onesided))]
fn fft_r2c(py: Python<'_>, x: &PyTensor, dims: Vec<usize>, norm: Option<&str>, onesided: bool) -> PyResult<PyTensor> {
    let norm = Norm::from_name(norm).py()?;
    wrap(nogil(py, x.t.numel(), || fft::fft_r2c(&x.t, &dims, norm, onesided)))
}

#[pyfunction]
#[pyo3(signature = (x, dims, norm, last_size))]
fn fft_c2r(py: Python<'_>, x: &PyTensor, dims: Vec<usize>, norm: Option<&str>, last_size: usize) -> PyResult<PyTensor> {
    let norm = Norm::from_name(norm).py()?;
    wrap(nogil(py, x.t.numel(), || fft::fft_c2r(&x.t, &dims, norm, last_size)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(view_as_real, m)?)?;
    m.add_function(wrap_pyfunction!(view_as_complex, m)?)?;
    m.add_function(wrap_pyfunction!(real, m)?)?;
    m.add_function(wrap_pyfunction!(imag, m)?)?;
    m.add_function(wrap_pyfunction!(conj, m)?)?;
    m.add_function(wrap_pyfunction!(complex_, m)?)?;
    m.add_function(wrap_pyfunction!(polar, m)?)?;
    m.add_function(wrap_pyfunction!(fft_c2c, m)?)?;
    m.add_function(wrap_pyfunction!(fft_r2c, m)?)?;
    m.add_function(wrap_pyfunction!(fft_c2r, m)?)?;
    Ok(())
}
