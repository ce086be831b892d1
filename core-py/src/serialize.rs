//! Bindings for `ember.serialization` (the storages of PyTorch checkpoints) and
//! `ember.safetensors` (the format itself lives in `ember_core::serialize`).
use crate::convert::PyDType;
use crate::errors::IntoPyResult;
use crate::tensor::PyTensor;
use ember_core::serialize::{self, safetensors};
use ember_core::{DType, Tensor};
use pyo3::exceptions::{PyException, PyNotImplementedError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

pyo3::create_exception!(ember, SafetensorError, PyException, "A malformed safetensors file or buffer.");

type Named = Vec<(String, PyTensor)>;
type Metadata = Option<HashMap<String, String>>;

/// The identity of `t`'s storage and a uint8 tensor over all of its bytes (sharing them).
#[pyfunction]
fn _storage_bytes(t: &PyTensor) -> (usize, PyTensor) {
    (Arc::as_ptr(t.t.storage()) as usize, PyTensor::new(serialize::reinterpret_storage(&t.t, DType::U8)))
}

/// A 1-d tensor of `dtype` over all of `t`'s storage: the root of a checkpoint storage's tensors.
#[pyfunction]
fn _storage_as(t: &PyTensor, dtype: PyDType) -> PyTensor {
    PyTensor::new(serialize::reinterpret_storage(&t.t, dtype.0))
}

/// PyTorch's `set_(storage, offset, size, stride)`: a tensor on `storage`'s memory, not a view.
#[pyfunction]
fn _on_storage(storage: &PyTensor, size: Vec<usize>, stride: Vec<isize>, offset: usize) -> PyResult<PyTensor> {
    Ok(PyTensor::new(serialize::on_storage(&storage.t, &size, &stride, offset).py()?))
}

fn tensors_of(tensors: Vec<(String, PyRef<'_, PyTensor>)>) -> Vec<(String, Tensor)> {
    tensors.into_iter().map(|(name, t)| (name, t.t.clone())).collect()
}

fn named(loaded: safetensors::Loaded) -> (Named, Metadata) {
    (loaded.tensors.into_iter().map(|(n, t)| (n, PyTensor::new(t))).collect(), loaded.metadata)
}

/// Format errors become `SafetensorError`, missing dtypes `NotImplementedError`, bad arguments
/// `ValueError`, a failed allocation `RuntimeError` (as any op's), and file-system errors the matching `OSError` subclass naming the file.
fn st_err(e: io::Error, path: Option<&PathBuf>) -> PyErr {
    match e.kind() {
        io::ErrorKind::InvalidData => SafetensorError::new_err(e.to_string()),
        io::ErrorKind::Unsupported => PyNotImplementedError::new_err(e.to_string()),
        io::ErrorKind::InvalidInput => PyValueError::new_err(e.to_string()),
        io::ErrorKind::OutOfMemory => PyRuntimeError::new_err(e.to_string()),
        _ => match (e.raw_os_error(), path) {
            (Some(code), Some(p)) => PyOSError::new_err((code, e.to_string(), p.clone())),
            _ => PyErr::from(e),
        },
    }
}

#[pyfunction]
#[pyo3(signature = (tensors, metadata=None))]
fn safetensors_serialize<'py>(py: Python<'py>, tensors: Vec<(String, PyRef<'py, PyTensor>)>, metadata: Metadata) -> PyResult<Bound<'py, PyBytes>> {
    let tensors = tensors_of(tensors);
    let bytes = py.detach(|| safetensors::serialize(&tensors, metadata)).map_err(|e| st_err(e, None))?;
    Ok(PyBytes::new(py, &bytes))
}

#[pyfunction]
#[pyo3(signature = (tensors, path, metadata=None))]
fn safetensors_save_file(py: Python<'_>, tensors: Vec<(String, PyRef<'_, PyTensor>)>, path: PathBuf, metadata: Metadata) -> PyResult<()> {
    let tensors = tensors_of(tensors);
    py.detach(|| safetensors::save_file(&tensors, metadata, &path)).map_err(|e| st_err(e, Some(&path)))
}

#[pyfunction]
fn safetensors_deserialize(py: Python<'_>, data: &[u8]) -> PyResult<(Named, Metadata)> {
    Ok(named(py.detach(|| safetensors::deserialize(data)).map_err(|e| st_err(e, None))?))
}

#[pyfunction]
fn safetensors_load_file(py: Python<'_>, path: PathBuf) -> PyResult<(Named, Metadata)> {
    Ok(named(py.detach(|| safetensors::load_file(&path)).map_err(|e| st_err(e, Some(&path)))?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SafetensorError", m.py().get_type::<SafetensorError>())?;
    m.add_function(wrap_pyfunction!(_storage_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(_storage_as, m)?)?;
    m.add_function(wrap_pyfunction!(_on_storage, m)?)?;
    m.add_function(wrap_pyfunction!(safetensors_serialize, m)?)?;
    m.add_function(wrap_pyfunction!(safetensors_save_file, m)?)?;
    m.add_function(wrap_pyfunction!(safetensors_deserialize, m)?)?;
    m.add_function(wrap_pyfunction!(safetensors_load_file, m)?)?;
    Ok(())
}
