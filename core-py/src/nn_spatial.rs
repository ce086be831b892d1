//! The spatial kernels of `ember.nn.functional`: convolution, pooling, interpolation, padding.
//! Arguments arrive normalised by `ember.nn._spatial` (tuples of ints, mode names); the checks
//! and the work happen in `ember_core` with the GIL released.
use crate::convert::scalar;
use crate::errors::IntoPyResult;
use crate::tensor::PyTensor;
use ember_core::ops::binary::Scalar;
use ember_core::ops::conv::{self as conv_ops, ConvPadding};
use ember_core::ops::pad::{self as pad_ops, PadMode};
use ember_core::ops::pool::{self, WindowArgs};
use ember_core::ops::resize::{self, Mode};
use ember_core::Tensor;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;

fn wrap(t: Tensor) -> PyTensor {
    PyTensor::new(t)
}

fn pair((a, b): (Tensor, Tensor)) -> (PyTensor, PyTensor) {
    (wrap(a), wrap(b))
}

/// `padding` as a list of ints or one of the strings 'same' / 'valid'.
enum PaddingArg {
    Explicit(Vec<i64>),
    Same,
    Valid,
}

fn padding_arg(obj: &Bound<'_, PyAny>) -> PyResult<PaddingArg> {
    if let Ok(s) = obj.extract::<String>() {
        return match s.as_str() {
            "same" => Ok(PaddingArg::Same),
            "valid" => Ok(PaddingArg::Valid),
            _ => Err(PyRuntimeError::new_err(format!("Invalid padding string: '{s}'"))),
        };
    }
    obj.extract::<Vec<i64>>()
        .map(PaddingArg::Explicit)
        .map_err(|_| PyTypeError::new_err(format!("padding: expected an int, a tuple of ints or one of 'same', 'valid', but got {obj}")))
}

#[pyfunction]
#[pyo3(signature = (input, weight, bias, stride, padding, dilation, groups, dims))]
#[allow(clippy::too_many_arguments)]
fn conv(
    py: Python<'_>, input: &PyTensor, weight: &PyTensor, bias: Option<&PyTensor>, stride: Vec<i64>,
    padding: &Bound<'_, PyAny>, dilation: Vec<i64>, groups: i64, dims: usize,
) -> PyResult<PyTensor> {
    let padding = padding_arg(padding)?;
    let (x, w, b) = (input.t.clone(), weight.t.clone(), bias.map(|b| b.t.clone()));
    let pad = match &padding {
        PaddingArg::Explicit(p) => ConvPadding::Explicit(p),
        PaddingArg::Same => ConvPadding::Same,
        PaddingArg::Valid => ConvPadding::Valid,
    };
    Ok(wrap(py.detach(|| conv_ops::conv(&x, &w, b.as_ref(), &stride, pad, &dilation, groups, dims)).py()?))
}

#[pyfunction]
#[pyo3(signature = (input, weight, bias, stride, padding, output_padding, groups, dilation, dims))]
#[allow(clippy::too_many_arguments)]
fn conv_transpose(
    py: Python<'_>, input: &PyTensor, weight: &PyTensor, bias: Option<&PyTensor>, stride: Vec<i64>,
    padding: Vec<i64>, output_padding: Vec<i64>, groups: i64, dilation: Vec<i64>, dims: usize,
) -> PyResult<PyTensor> {
    let (x, w, b) = (input.t.clone(), weight.t.clone(), bias.map(|b| b.t.clone()));
    Ok(wrap(py.detach(|| conv_ops::conv_transpose(&x, &w, b.as_ref(), &stride, &padding, &output_padding, groups, &dilation, dims)).py()?))
}

/// (values, indices) of `max_pool{dims}d`.
#[pyfunction]
#[pyo3(signature = (input, dims, kernel_size, stride, padding, dilation, ceil_mode))]
#[allow(clippy::too_many_arguments)]
fn max_pool(
    py: Python<'_>, input: &PyTensor, dims: usize, kernel_size: Vec<i64>, stride: Vec<i64>,
    padding: Vec<i64>, dilation: Vec<i64>, ceil_mode: bool,
) -> PyResult<(PyTensor, PyTensor)> {
    let x = input.t.clone();
    let args = WindowArgs { kernel_size: &kernel_size, stride: &stride, padding: &padding, dilation: &dilation, ceil_mode };
    Ok(pair(py.detach(|| pool::max_pool(&x, dims, &args)).py()?))
}

#[pyfunction]
#[pyo3(signature = (input, dims, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override))]
#[allow(clippy::too_many_arguments)]
fn avg_pool(
    py: Python<'_>, input: &PyTensor, dims: usize, kernel_size: Vec<i64>, stride: Vec<i64>,
    padding: Vec<i64>, ceil_mode: bool, count_include_pad: bool, divisor_override: Option<i64>,
) -> PyResult<PyTensor> {
    let x = input.t.clone();
    let args = WindowArgs { kernel_size: &kernel_size, stride: &stride, padding: &padding, dilation: &[1], ceil_mode };
    Ok(wrap(py.detach(|| pool::avg_pool(&x, dims, &args, count_include_pad, divisor_override)).py()?))
}

#[pyfunction]
fn adaptive_avg_pool(py: Python<'_>, input: &PyTensor, dims: usize, output_size: Vec<Option<i64>>) -> PyResult<PyTensor> {
    let x = input.t.clone();
    Ok(wrap(py.detach(|| pool::adaptive_avg_pool(&x, dims, &output_size)).py()?))
}

#[pyfunction]
fn adaptive_max_pool(py: Python<'_>, input: &PyTensor, dims: usize, output_size: Vec<Option<i64>>) -> PyResult<(PyTensor, PyTensor)> {
    let x = input.t.clone();
    Ok(pair(py.detach(|| pool::adaptive_max_pool(&x, dims, &output_size)).py()?))
}

#[pyfunction]
#[pyo3(signature = (input, size, scales, mode, align_corners, antialias))]
fn interpolate(
    py: Python<'_>, input: &PyTensor, size: Vec<usize>, scales: Vec<Option<f64>>, mode: &str,
    align_corners: bool, antialias: bool,
) -> PyResult<PyTensor> {
    let mode = match mode {
        "nearest" => Mode::Nearest,
        "nearest-exact" => Mode::NearestExact,
        "linear" | "bilinear" | "trilinear" => Mode::Linear,
        "bicubic" => Mode::Cubic,
        _ => return Err(PyRuntimeError::new_err(format!("interpolate: unknown mode '{mode}'"))),
    };
    let x = input.t.clone();
    Ok(wrap(py.detach(|| resize::interpolate(&x, &size, &scales, mode, align_corners, antialias)).py()?))
}

#[pyfunction]
#[pyo3(signature = (input, pad, mode, value))]
fn pad(py: Python<'_>, input: &PyTensor, pad: Vec<i64>, mode: &str, value: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let mode = match mode {
        "constant" => PadMode::Constant(scalar(value).unwrap_or(Scalar::Int(0))),
        "reflect" => PadMode::Reflect,
        "replicate" => PadMode::Replicate,
        "circular" => PadMode::Circular,
        _ => return Err(PyRuntimeError::new_err(format!("Unrecognised padding mode {mode}"))),
    };
    let x = input.t.clone();
    Ok(wrap(py.detach(|| pad_ops::pad(&x, &pad, mode)).py()?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(conv, m)?)?;
    m.add_function(wrap_pyfunction!(conv_transpose, m)?)?;
    m.add_function(wrap_pyfunction!(max_pool, m)?)?;
    m.add_function(wrap_pyfunction!(avg_pool, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_avg_pool, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_max_pool, m)?)?;
    m.add_function(wrap_pyfunction!(interpolate, m)?)?;
    m.add_function(wrap_pyfunction!(pad, m)?)?;
    Ok(())
}
