//! `ember._C.rec`: the kernels of `ember-rec` for `emberrec`. Inputs arrive as NumPy arrays
//! (the buffer protocol: no copy), outputs are NumPy arrays the caller allocated (binary16 ones
//! viewed as uint16), and the kernels run on Ember's pool with the GIL released.
use ember_rec::{self as kernels, BoundsCheck, Hfp8, Indices, Output, Pooling, SparseType, Table, TableBatch};
use half::f16;
use crate::buffers::{items, items_mut};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;

mod train;
mod jagged;

fn to_py(e: kernels::Error) -> PyErr {
    match e {
        kernels::Error::Value(m) => PyValueError::new_err(m),
        kernels::Error::Index(m) => PyIndexError::new_err(m),
    }
}

/// Runs a kernel on Ember's pool, the GIL released.
fn run<T: Send>(py: Python<'_>, kernel: impl FnOnce() -> kernels::Result<T> + Send) -> PyResult<T> {
    py.detach(|| ember_core::parallel::pool().install(kernel)).map_err(to_py)
}

fn hfp8(exponent_bits: i64, exponent_bias: i64) -> PyResult<Hfp8> {
    Hfp8::new(exponent_bits, exponent_bias).map_err(to_py)
}

/// Rows of float32 into FBGEMM's fused 8-bit rows (values, float32 scale, float32 bias).
#[pyfunction]
fn quantize_fused8(py: Python<'_>, input: PyBuffer<f32>, rows: usize, cols: usize, out: PyBuffer<u8>) -> PyResult<()> {
    let (input, out) = (items(&input, "input")?, items_mut(&out, "out")?);
    run(py, || kernels::quantize_fused8(input, rows, cols, out))
}

#[pyfunction]
fn dequantize_fused8(py: Python<'_>, input: PyBuffer<u8>, rows: usize, cols: usize, out: PyBuffer<f32>) -> PyResult<()> {
    let (input, out) = (items(&input, "input")?, items_mut(&out, "out")?);
    run(py, || kernels::dequantize_fused8(input, rows, cols, out))
}

/// Rows of float32 into FBGEMM's fused n-bit rows (packed values, binary16 scale and bias).
#[pyfunction]
fn quantize_nbit(py: Python<'_>, input: PyBuffer<f32>, rows: usize, cols: usize, bits: u32, out: PyBuffer<u8>) -> PyResult<()> {
    let (input, out) = (items(&input, "input")?, items_mut(&out, "out")?);
    run(py, || kernels::quantize_nbit(input, rows, cols, bits, out))
}

#[pyfunction]
fn dequantize_nbit(py: Python<'_>, input: PyBuffer<u8>, rows: usize, cols: usize, bits: u32, out: PyBuffer<f32>) -> PyResult<()> {
    let (input, out) = (items(&input, "input")?, items_mut(&out, "out")?);
    run(py, || kernels::dequantize_nbit(input, rows, cols, bits, out))
}

/// float32 values into HFP8 bytes (`exponent_bits`, `exponent_bias`), saturating at `max_pos`.
#[pyfunction]
fn encode_hfp8(py: Python<'_>, input: PyBuffer<f32>, exponent_bits: i64, exponent_bias: i64, max_pos: f32, out: PyBuffer<u8>) -> PyResult<()> {
    let format = hfp8(exponent_bits, exponent_bias)?;
    let (input, out) = (items(&input, "input")?, items_mut(&out, "out")?);
    run(py, || kernels::encode_hfp8(format, input, max_pos, out))
}

#[pyfunction]
fn decode_hfp8(py: Python<'_>, input: PyBuffer<u8>, exponent_bits: i64, exponent_bias: i64, out: PyBuffer<f32>) -> PyResult<()> {
    let format = hfp8(exponent_bits, exponent_bias)?;
    let (input, out) = (items(&input, "input")?, items_mut(&out, "out")?);
    run(py, || kernels::decode_hfp8(format, input, out))
}

/// FBGEMM's default saturation value of an HFP8 format.
#[pyfunction]
fn hfp8_max_position(exponent_bits: i64, exponent_bias: i64) -> PyResult<f32> {
    Ok(hfp8(exponent_bits, exponent_bias)?.max_position())
}

/// Bytes of a table-batched embedding row of `dim` values of type `ty` (FBGEMM's code),
/// padded to a multiple of `alignment`.
#[pyfunction]
fn row_bytes(ty: i64, dim: usize, alignment: usize) -> PyResult<usize> {
    Ok(SparseType::from_int(ty).map_err(to_py)?.row_bytes(dim, alignment))
}

/// `rows` x `dim` float32 into table-batched embedding rows of type `ty`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn quantize_rows(py: Python<'_>, ty: i64, input: PyBuffer<f32>, rows: usize, dim: usize, alignment: usize, fp8: (i64, i64), fp8_max_pos: f32, out: PyBuffer<u8>) -> PyResult<()> {
    let (ty, format) = (SparseType::from_int(ty).map_err(to_py)?, hfp8(fp8.0, fp8.1)?);
    let (input, out) = (items(&input, "input")?, items_mut(&out, "out")?);
    run(py, || kernels::quantize_rows(ty, input, rows, dim, alignment, format, fp8_max_pos, out))
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn dequantize_rows(py: Python<'_>, ty: i64, input: PyBuffer<u8>, rows: usize, dim: usize, alignment: usize, fp8: (i64, i64), out: PyBuffer<f32>) -> PyResult<()> {
    let (ty, format) = (SparseType::from_int(ty).map_err(to_py)?, hfp8(fp8.0, fp8.1)?);
    let (input, out) = (items(&input, "input")?, items_mut(&out, "out")?);
    run(py, || kernels::dequantize_rows(ty, input, rows, dim, alignment, format, out))
}

/// Indices or offsets: an int32 or int64 buffer.
enum IndexBuffer {
    I32(PyBuffer<i32>),
    I64(PyBuffer<i64>),
}

impl IndexBuffer {
    fn get(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Self> {
        if let Ok(b) = PyBuffer::<i64>::get(obj) {
            return Ok(IndexBuffer::I64(b));
        }
        if let Ok(b) = PyBuffer::<i32>::get(obj) {
            return Ok(IndexBuffer::I32(b));
        }
        Err(PyTypeError::new_err(format!("embedding_bags: {name} must be int32 or int64")))
    }

    fn indices(&self, name: &str) -> PyResult<Indices<'_>> {
        Ok(match self {
            IndexBuffer::I32(b) => Indices::I32(items(b, name)?),
            IndexBuffer::I64(b) => Indices::I64(items(b, name)?),
        })
    }
}

fn pooling(mode: &str) -> PyResult<Pooling> {
    match mode {
        "sum" => Ok(Pooling::Sum),
        "mean" => Ok(Pooling::Mean),
        "none" => Ok(Pooling::None),
        _ => Err(PyValueError::new_err(format!("embedding_bags: pooling must be 'sum', 'mean' or 'none', got {mode:?}"))),
    }
}

fn bounds_check(mode: &str) -> PyResult<BoundsCheck> {
    match mode {
        "fatal" => Ok(BoundsCheck::Fatal),
        "warning" => Ok(BoundsCheck::Warning),
        "ignore" => Ok(BoundsCheck::Ignore),
        _ => Err(PyValueError::new_err(format!("embedding_bags: bounds_check must be 'fatal', 'warning' or 'ignore', got {mode:?}"))),
    }
}

/// The table-batched embedding bag over quantized rows. `tables`: per feature (type code, rows,
/// dim, byte offset in `weights`); `out`: float32, or float16 viewed as uint16 (`half_out`).
/// Returns how many indices fell outside their tables.
#[pyfunction]
#[pyo3(signature = (weights, tables, row_alignment, fp8, indices, offsets, per_sample_weights, pooling_mode, bounds_check_mode, out, half_out))]
#[allow(clippy::too_many_arguments)]
fn embedding_bags(
    py: Python<'_>,
    weights: PyBuffer<u8>,
    tables: Vec<(i64, usize, usize, usize)>,
    row_alignment: usize,
    fp8: (i64, i64),
    indices: &Bound<'_, PyAny>,
    offsets: &Bound<'_, PyAny>,
    per_sample_weights: Option<PyBuffer<f32>>,
    pooling_mode: &str,
    bounds_check_mode: &str,
    out: &Bound<'_, PyAny>,
    half_out: bool,
) -> PyResult<u64> {
    let tables = tables
        .into_iter()
        .map(|(ty, rows, dim, offset)| Ok(Table { ty: SparseType::from_int(ty).map_err(to_py)?, rows, dim, offset }))
        .collect::<PyResult<Vec<_>>>()?;
    let (pooling, check, fp8) = (pooling(pooling_mode)?, bounds_check(bounds_check_mode)?, hfp8(fp8.0, fp8.1)?);
    let (index_buffer, offset_buffer) = (IndexBuffer::get(indices, "indices")?, IndexBuffer::get(offsets, "offsets")?);
    let (indices, offsets) = (index_buffer.indices("indices")?, offset_buffer.indices("offsets")?);
    let per_sample_weights = per_sample_weights.as_ref().map(|w| items(w, "per_sample_weights")).transpose()?;
    let batch = TableBatch { weights: items(&weights, "weights")?, tables: &tables, row_alignment, fp8 };
    if half_out {
        let buffer = PyBuffer::<u16>::get(out)?;
        let bits = items_mut(&buffer, "out")?;
        // SAFETY: f16 is a transparent wrapper of u16.
        let halves = unsafe { std::slice::from_raw_parts_mut(bits.as_mut_ptr() as *mut f16, bits.len()) };
        run(py, || kernels::embedding_bags(&batch, indices, offsets, per_sample_weights, pooling, check, Output::F16(halves)))
    } else {
        let buffer = PyBuffer::<f32>::get(out)?;
        let floats = items_mut(&buffer, "out")?;
        run(py, || kernels::embedding_bags(&batch, indices, offsets, per_sample_weights, pooling, check, Output::F32(floats)))
    }
}

pub fn register(parent: &Bound<'_, PyModule>) -> PyResult<()> {
    let m = PyModule::new(parent.py(), "rec")?;
    m.add_function(wrap_pyfunction!(quantize_fused8, &m)?)?;
    m.add_function(wrap_pyfunction!(dequantize_fused8, &m)?)?;
    m.add_function(wrap_pyfunction!(quantize_nbit, &m)?)?;
    m.add_function(wrap_pyfunction!(dequantize_nbit, &m)?)?;
    m.add_function(wrap_pyfunction!(encode_hfp8, &m)?)?;
    m.add_function(wrap_pyfunction!(decode_hfp8, &m)?)?;
    m.add_function(wrap_pyfunction!(hfp8_max_position, &m)?)?;
    m.add_function(wrap_pyfunction!(row_bytes, &m)?)?;
    m.add_function(wrap_pyfunction!(quantize_rows, &m)?)?;
    m.add_function(wrap_pyfunction!(dequantize_rows, &m)?)?;
    m.add_function(wrap_pyfunction!(embedding_bags, &m)?)?;
    train::register(&m)?;
    jagged::register(&m)?;
    parent.add_submodule(&m)?;
    Ok(())
}
