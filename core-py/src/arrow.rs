//! `ember._C.arrow`: the kernels of `ember-arrow` for `emberarrow`. Arrow buffers arrive as NumPy
//! views of them (the buffer protocol: no copy), outputs are NumPy arrays the caller allocated,
//! or ember tensors over the vectors a kernel filled, and the kernels run on Ember's pool with
//! the GIL released.
use crate::buffers::{items, items_mut};
use crate::tensor::PyTensor;
use ember_arrow::{self as kernels, Bitmap, DenseOut, IdColumn, IdSteps, Numbers};
use ember_core::storage::{CpuStorage, Storage};
use ember_core::{Layout, Tensor};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::sync::Arc;

fn to_py(e: kernels::Error) -> PyErr {
    PyValueError::new_err(e.0)
}

/// Runs a kernel on Ember's pool, the GIL released.
fn run<T: Send>(py: Python<'_>, kernel: impl FnOnce() -> kernels::Result<T> + Send) -> PyResult<T> {
    py.detach(|| ember_core::parallel::pool().install(kernel)).map_err(to_py)
}

/// An Arrow validity bitmap (`None`: no nulls) of `len` items from bit `offset`.
fn bitmap<'a>(bits: &'a Option<PyBuffer<u8>>, offset: usize, len: usize) -> PyResult<Option<Bitmap<'a>>> {
    match bits {
        None => Ok(None),
        Some(b) => Ok(Some(Bitmap::new(items(b, "validity")?, offset, len).map_err(to_py)?)),
    }
}

/// `out[i]` = sigrid_hash(ids[i], salt, max_value).
#[pyfunction]
fn sigrid_hash(py: Python<'_>, ids: PyBuffer<i64>, salt: i64, max_value: i64, out: PyBuffer<i64>) -> PyResult<()> {
    let (ids, out) = (items(&ids, "ids")?, items_mut(&out, "out")?);
    run(py, || kernels::sigrid_hash(ids, salt, max_value, out))
}

/// `out[i]` = the bucket of values[i] among sorted borders (Velox's rule).
#[pyfunction]
fn bucketize(py: Python<'_>, values: PyBuffer<f64>, borders: PyBuffer<f64>, out: PyBuffer<i32>) -> PyResult<()> {
    let (values, borders, out) = (items(&values, "values")?, items(&borders, "borders")?, items_mut(&out, "out")?);
    run(py, || kernels::bucketize(values, borders, out))
}

/// The first `n` items of each list: fills `keep` (one flag per item) and `out_offsets`;
/// returns how many items stay.
#[pyfunction]
fn firstx(py: Python<'_>, offsets: PyBuffer<i32>, n: usize, keep: PyBuffer<u8>, out_offsets: PyBuffer<i32>) -> PyResult<usize> {
    let (offsets, keep, out_offsets) = (items(&offsets, "offsets")?, items_mut(&keep, "keep")?, items_mut(&out_offsets, "out_offsets")?);
    run(py, || kernels::firstx(offsets, n, keep, out_offsets))
}

/// A column's values for `dense_rows`, of one of the types the kernel reads.
enum NumberBuffer {
    I32(PyBuffer<i32>),
    I64(PyBuffer<i64>),
    F32(PyBuffer<f32>),
    F64(PyBuffer<f64>),
}

impl NumberBuffer {
    fn get(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(b) = PyBuffer::<f32>::get(obj) {
            return Ok(NumberBuffer::F32(b));
        }
        if let Ok(b) = PyBuffer::<f64>::get(obj) {
            return Ok(NumberBuffer::F64(b));
        }
        if let Ok(b) = PyBuffer::<i32>::get(obj) {
            return Ok(NumberBuffer::I32(b));
        }
        if let Ok(b) = PyBuffer::<i64>::get(obj) {
            return Ok(NumberBuffer::I64(b));
        }
        Err(PyTypeError::new_err("dense_rows: column values must be int32, int64, float32 or float64"))
    }

    fn numbers(&self) -> PyResult<Numbers<'_>> {
        Ok(match self {
            NumberBuffer::I32(b) => Numbers::I32(items(b, "values")?),
            NumberBuffer::I64(b) => Numbers::I64(items(b, "values")?),
            NumberBuffer::F32(b) => Numbers::F32(items(b, "values")?),
            NumberBuffer::F64(b) => Numbers::F64(items(b, "values")?),
        })
    }
}

/// Columns `(values, validity bits or None, bit offset)` into the row-major block `out`
/// (float32 or float64): null slots become `fill`, then `log(x + log_offset)` when given.
#[pyfunction]
#[pyo3(signature = (columns, fill, log_offset, out))]
fn dense_rows(py: Python<'_>, columns: Vec<(Bound<'_, PyAny>, Option<PyBuffer<u8>>, usize)>, fill: f64, log_offset: Option<f64>, out: &Bound<'_, PyAny>) -> PyResult<()> {
    let buffers = columns.iter().map(|(v, _, _)| NumberBuffer::get(v)).collect::<PyResult<Vec<_>>>()?;
    let mut cols = Vec::with_capacity(buffers.len());
    for (buffer, (_, bits, offset)) in buffers.iter().zip(&columns) {
        let numbers = buffer.numbers()?;
        cols.push((numbers, bitmap(bits, *offset, numbers.len())?));
    }
    if let Ok(b) = PyBuffer::<f32>::get(out) {
        let out = items_mut(&b, "out")?;
        return run(py, || kernels::dense_rows(&cols, fill, log_offset, DenseOut::F32(out)));
    }
    let b = PyBuffer::<f64>::get(out).map_err(|_| PyTypeError::new_err("dense_rows: out must be float32 or float64"))?;
    let out = items_mut(&b, "out")?;
    run(py, || kernels::dense_rows(&cols, fill, log_offset, DenseOut::F64(out)))
}

/// An id column for the key-major kernels: (offsets or None, ids, validity bits or None, bit offset).
type IdBuffers = (Option<PyBuffer<i32>>, PyBuffer<i64>, Option<PyBuffer<u8>>, usize);

fn id_columns(columns: &[IdBuffers]) -> PyResult<Vec<IdColumn<'_>>> {
    columns
        .iter()
        .map(|(offsets, ids, bits, offset)| {
            let offsets = offsets.as_ref().map(|o| items(o, "offsets")).transpose()?;
            let ids = items(ids, "ids")?;
            let rows = offsets.map_or(ids.len(), |o| o.len().saturating_sub(1));
            Ok(IdColumn { offsets, ids, validity: bitmap(bits, *offset, rows)? })
        })
        .collect()
}

/// A tensor over a vector the kernel filled, without copying it.
fn tensor_from_vec<T: ember_core::Element>(mut data: Vec<T>) -> PyTensor {
    let (ptr, n) = (data.as_mut_ptr() as *mut u8, data.len());
    // SAFETY: the vector's buffer stays where it is, owned by the storage, as long as the storage.
    let storage = unsafe { CpuStorage::from_foreign(ptr, n * std::mem::size_of::<T>(), Box::new(data)) };
    PyTensor::new(Tensor::from_parts(Arc::new(Storage::Cpu(storage)), Layout::contiguous(&[n]), T::DTYPE))
}

/// The id columns as a KeyedJaggedTensor's key-major (values, lengths) tensors, the steps
/// (fill null ids, sigrid_hash = (salt, max_value), firstx) applied while writing.
#[pyfunction]
#[pyo3(signature = (columns, fill_null=None, sigrid_hash=None, firstx=None))]
fn key_major(py: Python<'_>, columns: Vec<IdBuffers>, fill_null: Option<i64>, sigrid_hash: Option<(i64, i64)>, firstx: Option<usize>) -> PyResult<(PyTensor, PyTensor)> {
    let cols = id_columns(&columns)?;
    let steps = IdSteps { fill_null, sigrid_hash, firstx };
    let (values, lengths) = run(py, || kernels::key_major(&cols, &steps))?;
    Ok((tensor_from_vec(values), tensor_from_vec(lengths)))
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "arrow")?;
    m.add_function(wrap_pyfunction!(sigrid_hash, &m)?)?;
    m.add_function(wrap_pyfunction!(bucketize, &m)?)?;
    m.add_function(wrap_pyfunction!(firstx, &m)?)?;
    m.add_function(wrap_pyfunction!(dense_rows, &m)?)?;
    m.add_function(wrap_pyfunction!(key_major, &m)?)?;
    parent.add_submodule(&m)?;
    Ok(())
}
