//! Ember errors become the Python exception PyTorch would raise.
use ember_core::{Error, ErrorKind};
use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::PyErr;

// `torch.linalg.LinAlgError`: singular or non-positive-definite input; a `RuntimeError`.
pyo3::create_exception!(ember, LinAlgError, PyRuntimeError);

pub fn to_py(e: Error) -> PyErr {
    match e.kind {
        ErrorKind::Type => PyTypeError::new_err(e.message),
        ErrorKind::Value => PyValueError::new_err(e.message),
        ErrorKind::Runtime => PyRuntimeError::new_err(e.message),
        ErrorKind::Index => PyIndexError::new_err(e.message),
        ErrorKind::NotImplemented => PyNotImplementedError::new_err(e.message),
        ErrorKind::LinAlg => LinAlgError::new_err(e.message),
    }
}

pub trait IntoPyResult<T> {
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPyResult<T> for ember_core::Result<T> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
