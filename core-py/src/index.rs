//! Bindings for the indexing and joining families (`ember_core::ops::{index, join}`): argument
//! conversion and the GIL released around every kernel; the `ember` package builds the public
//! functions on these.
use crate::convert::{arg, Arg};
use crate::errors::IntoPyResult;
use crate::tensor::{nogil, PyTensor};
use ember_core::ops::index::{self, Reduce};
use ember_core::ops::join;
use ember_core::{DType, Tensor};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

fn wrap(t: Tensor) -> PyTensor {
    PyTensor::new(t)
}

fn wrap_all(ts: Vec<Tensor>) -> Vec<PyTensor> {
    ts.into_iter().map(PyTensor::new).collect()
}

fn tensors(list: Vec<PyRef<'_, PyTensor>>) -> Vec<Tensor> {
    list.iter().map(|t| t.t.clone()).collect()
}

/// A tensor argument, or a Python number as a 0-d tensor of `dtype`.
fn value_of(obj: &Bound<'_, PyAny>, what: &str, dtype: DType) -> PyResult<Tensor> {
    Ok(match arg(obj, what)? {
        Arg::Tensor(t) => t,
        Arg::Scalar(s) => s.to_tensor_checked(dtype).py()?,
    })
}

fn pairs(dims: Vec<usize>, indices: Vec<PyRef<'_, PyTensor>>) -> Vec<(usize, Tensor)> {
    dims.into_iter().zip(tensors(indices)).collect()
}

/// `x[indices]` for advanced `(dim, integer index)` pairs.
#[pyfunction]
fn index_get(py: Python<'_>, x: &PyTensor, dims: Vec<usize>, indices: Vec<PyRef<'_, PyTensor>>) -> PyResult<PyTensor> {
    let idx = pairs(dims, indices);
    Ok(wrap(py.detach(|| index::index(&x.t, &idx)).py()?))
}

/// `x[indices] = values` (or `+=` with `accumulate`), in place.
#[pyfunction]
fn index_put_(py: Python<'_>, x: &PyTensor, dims: Vec<usize>, indices: Vec<PyRef<'_, PyTensor>>, values: &Bound<'_, PyAny>, accumulate: bool) -> PyResult<()> {
    let idx = pairs(dims, indices);
    let v = value_of(values, "index_put_(): values", x.t.dtype())?;
    py.detach(|| index::index_put(&x.t, &idx, &v, accumulate)).py()
}

#[pyfunction]
fn gather(py: Python<'_>, x: &PyTensor, dim: i64, index: &PyTensor) -> PyResult<PyTensor> {
    Ok(wrap(py.detach(|| index::gather(&x.t, dim, &index.t)).py()?))
}

/// `scatter_`/`scatter_reduce_` in place; a number `src` is spread over `index`'s shape.
#[pyfunction]
#[pyo3(signature = (x, dim, index, src, reduce=None, include_self=true))]
fn scatter_(py: Python<'_>, x: &PyTensor, dim: i64, index: &PyTensor, src: &Bound<'_, PyAny>, reduce: Option<&str>, include_self: bool) -> PyResult<()> {
    let op = match reduce {
        None => Reduce::Assign,
        Some(name) => Reduce::from_name(name).ok_or_else(|| {
            PyValueError::new_err(format!("reduce argument must be either sum, prod, mean, amax or amin (or add, multiply for scatter), got {name}"))
        })?,
    };
    let src = match arg(src, "scatter(): src")? {
        Arg::Tensor(t) => t,
        Arg::Scalar(s) => s.to_tensor_checked(x.t.dtype()).py()?.to_device(x.t.device()).py()?.broadcast_to(index.t.shape()).py()?,
    };
    py.detach(|| index::scatter_(&x.t, dim, &index.t, &src, op, include_self)).py()
}

#[pyfunction]
fn index_select(py: Python<'_>, x: &PyTensor, dim: i64, index: &PyTensor) -> PyResult<PyTensor> {
    Ok(wrap(py.detach(|| index::index_select(&x.t, dim, &index.t)).py()?))
}

/// `index_add_` (source already scaled by alpha) or, without `accumulate`, `index_copy_`.
#[pyfunction]
fn index_add_or_copy_(py: Python<'_>, x: &PyTensor, dim: i64, index: &PyTensor, source: &PyTensor, accumulate: bool) -> PyResult<()> {
    py.detach(|| index::index_add_or_copy_(&x.t, dim, &index.t, &source.t, accumulate)).py()
}

#[pyfunction]
fn index_fill_(py: Python<'_>, x: &PyTensor, dim: i64, index: &PyTensor, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let v = value_of(value, "index_fill_(): value", x.t.dtype())?;
    py.detach(|| index::index_fill_(&x.t, dim, &index.t, &v)).py()
}

#[pyfunction]
fn take(py: Python<'_>, x: &PyTensor, index: &PyTensor) -> PyResult<PyTensor> {
    Ok(wrap(py.detach(|| index::take(&x.t, &index.t)).py()?))
}

/// `masked_fill` into a fresh tensor, or into `x` itself with `inplace`.
#[pyfunction]
fn masked_fill(py: Python<'_>, x: &PyTensor, mask: &PyTensor, value: &Bound<'_, PyAny>, inplace: bool) -> PyResult<Option<PyTensor>> {
    let v = value_of(value, "masked_fill(): value", x.t.dtype())?;
    if inplace {
        nogil(py, x.t.numel(), || index::masked_fill_into(&x.t, &mask.t, &v, &x.t)).py()?;
        return Ok(None);
    }
    Ok(Some(wrap(nogil(py, x.t.numel(), || index::masked_fill(&x.t, &mask.t, &v)).py()?)))
}

#[pyfunction]
fn masked_select(py: Python<'_>, x: &PyTensor, mask: &PyTensor) -> PyResult<PyTensor> {
    Ok(wrap(py.detach(|| index::masked_select(&x.t, &mask.t)).py()?))
}

#[pyfunction]
fn masked_scatter_(py: Python<'_>, x: &PyTensor, mask: &PyTensor, source: &PyTensor) -> PyResult<()> {
    py.detach(|| index::masked_scatter_(&x.t, &mask.t, &source.t)).py()
}

#[pyfunction]
fn nonzero(py: Python<'_>, x: &PyTensor) -> PyResult<PyTensor> {
    Ok(wrap(py.detach(|| index::nonzero(&x.t)).py()?))
}

/// `tril`/`triu` (`upper`) into a fresh tensor, or into `x` itself with `inplace`.
#[pyfunction]
fn tri(py: Python<'_>, x: &PyTensor, diagonal: i64, upper: bool, inplace: bool) -> PyResult<Option<PyTensor>> {
    if inplace {
        nogil(py, x.t.numel(), || index::tri_into(&x.t, diagonal, upper, &x.t)).py()?;
        return Ok(None);
    }
    Ok(Some(wrap(nogil(py, x.t.numel(), || index::tri(&x.t, diagonal, upper)).py()?)))
}

// ---- joining and splitting ----

#[pyfunction]
#[pyo3(signature = (tensors, dim, out=None))]
fn cat(py: Python<'_>, tensors: Vec<PyRef<'_, PyTensor>>, dim: i64, out: Option<&PyTensor>) -> PyResult<Option<PyTensor>> {
    let ts = self::tensors(tensors);
    match out {
        None => Ok(Some(wrap(py.detach(|| join::cat(&ts, dim)).py()?))),
        Some(o) => {
            py.detach(|| join::cat_into(&ts, dim, &o.t)).py()?;
            Ok(None)
        }
    }
}

#[pyfunction]
fn stack(py: Python<'_>, tensors: Vec<PyRef<'_, PyTensor>>, dim: i64) -> PyResult<PyTensor> {
    let ts = self::tensors(tensors);
    Ok(wrap(py.detach(|| join::stack(&ts, dim)).py()?))
}

#[pyfunction]
fn split(x: &PyTensor, size: i64, dim: i64) -> PyResult<Vec<PyTensor>> {
    Ok(wrap_all(join::split(&x.t, size, dim).py()?))
}

#[pyfunction]
fn split_with_sizes(x: &PyTensor, sizes: Vec<i64>, dim: i64) -> PyResult<Vec<PyTensor>> {
    Ok(wrap_all(join::split_with_sizes(&x.t, &sizes, dim).py()?))
}

#[pyfunction]
fn chunk(x: &PyTensor, chunks: i64, dim: i64) -> PyResult<Vec<PyTensor>> {
    Ok(wrap_all(join::chunk(&x.t, chunks, dim).py()?))
}

#[pyfunction]
fn tensor_split_sections(x: &PyTensor, sections: i64, dim: i64) -> PyResult<Vec<PyTensor>> {
    Ok(wrap_all(join::tensor_split_sections(&x.t, sections, dim).py()?))
}

#[pyfunction]
fn tensor_split_indices(x: &PyTensor, indices: Vec<i64>, dim: i64) -> PyResult<Vec<PyTensor>> {
    Ok(wrap_all(join::tensor_split_indices(&x.t, &indices, dim).py()?))
}

#[pyfunction]
fn unbind(x: &PyTensor, dim: i64) -> PyResult<Vec<PyTensor>> {
    Ok(wrap_all(join::unbind(&x.t, dim).py()?))
}

#[pyfunction]
fn roll(py: Python<'_>, x: &PyTensor, shifts: Vec<i64>, dims: Vec<i64>) -> PyResult<PyTensor> {
    Ok(wrap(py.detach(|| join::roll(&x.t, &shifts, &dims)).py()?))
}

#[pyfunction]
fn repeat(py: Python<'_>, x: &PyTensor, repeats: Vec<i64>) -> PyResult<PyTensor> {
    Ok(wrap(py.detach(|| join::repeat(&x.t, &repeats)).py()?))
}

#[pyfunction]
fn repeat_interleave(py: Python<'_>, x: &PyTensor, counts: Vec<i64>, dim: i64) -> PyResult<PyTensor> {
    Ok(wrap(py.detach(|| join::repeat_interleave(&x.t, &counts, dim)).py()?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(index_get, m)?)?;
    m.add_function(wrap_pyfunction!(index_put_, m)?)?;
    m.add_function(wrap_pyfunction!(gather, m)?)?;
    m.add_function(wrap_pyfunction!(scatter_, m)?)?;
    m.add_function(wrap_pyfunction!(index_select, m)?)?;
    m.add_function(wrap_pyfunction!(index_add_or_copy_, m)?)?;
    m.add_function(wrap_pyfunction!(index_fill_, m)?)?;
    m.add_function(wrap_pyfunction!(take, m)?)?;
    m.add_function(wrap_pyfunction!(masked_fill, m)?)?;
    m.add_function(wrap_pyfunction!(masked_select, m)?)?;
    m.add_function(wrap_pyfunction!(masked_scatter_, m)?)?;
    m.add_function(wrap_pyfunction!(nonzero, m)?)?;
    m.add_function(wrap_pyfunction!(tri, m)?)?;
    m.add_function(wrap_pyfunction!(cat, m)?)?;
    m.add_function(wrap_pyfunction!(stack, m)?)?;
    m.add_function(wrap_pyfunction!(split, m)?)?;
    m.add_function(wrap_pyfunction!(split_with_sizes, m)?)?;
    m.add_function(wrap_pyfunction!(chunk, m)?)?;
    m.add_function(wrap_pyfunction!(tensor_split_sections, m)?)?;
    m.add_function(wrap_pyfunction!(tensor_split_indices, m)?)?;
    m.add_function(wrap_pyfunction!(unbind, m)?)?;
    m.add_function(wrap_pyfunction!(roll, m)?)?;
    m.add_function(wrap_pyfunction!(repeat, m)?)?;
    m.add_function(wrap_pyfunction!(repeat_interleave, m)?)?;
    Ok(())
}
