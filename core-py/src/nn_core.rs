//! `ember.nn.functional` kernels: softmax, normalisation layers, `nll_loss` and embeddings.
//! Argument conversion only; the GIL is released around every kernel.
use crate::errors::IntoPyResult;
use crate::tensor::{nogil, PyTensor};
use ember_core::ops::embedding::{self as emb, BagMode};
use ember_core::ops::loss::{self, Reduction};
use ember_core::ops::nn::{self, Running};
use ember_core::Tensor;
use pyo3::prelude::*;

fn wrap(t: Tensor) -> PyTensor {
    PyTensor::new(t)
}

fn opt(t: Option<&PyTensor>) -> Option<&Tensor> {
    t.map(|p| &p.t)
}

fn running<'a>(mean: Option<&'a PyTensor>, var: Option<&'a PyTensor>) -> Option<Running<'a>> {
    Some(Running { mean: &mean?.t, var: &var?.t })
}

/// `softmax(x, dim)`, or `log_softmax` with `log=True`, in `x`'s dtype.
#[pyfunction]
fn softmax(py: Python<'_>, x: &PyTensor, dim: i64, log: bool) -> PyResult<PyTensor> {
    Ok(wrap(nogil(py, x.t.numel(), || nn::softmax(&x.t, dim, log)).py()?))
}

#[pyfunction]
#[pyo3(signature = (x, normalized_shape, weight, bias, eps))]
fn layer_norm(py: Python<'_>, x: &PyTensor, normalized_shape: Vec<usize>, weight: Option<&PyTensor>, bias: Option<&PyTensor>, eps: f64) -> PyResult<PyTensor> {
    let (w, b) = (opt(weight), opt(bias));
    Ok(wrap(nogil(py, x.t.numel(), || nn::layer_norm(&x.t, &normalized_shape, w, b, eps)).py()?))
}

#[pyfunction]
#[pyo3(signature = (x, num_groups, weight, bias, eps))]
fn group_norm(py: Python<'_>, x: &PyTensor, num_groups: usize, weight: Option<&PyTensor>, bias: Option<&PyTensor>, eps: f64) -> PyResult<PyTensor> {
    let (w, b) = (opt(weight), opt(bias));
    Ok(wrap(nogil(py, x.t.numel(), || nn::group_norm(&x.t, num_groups, w, b, eps)).py()?))
}

#[pyfunction]
#[pyo3(signature = (x, running_mean, running_var, weight, bias, training, momentum, eps))]
#[allow(clippy::too_many_arguments)]
fn batch_norm(
    py: Python<'_>,
    x: &PyTensor,
    running_mean: Option<&PyTensor>,
    running_var: Option<&PyTensor>,
    weight: Option<&PyTensor>,
    bias: Option<&PyTensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> PyResult<PyTensor> {
    let (r, w, b) = (running(running_mean, running_var), opt(weight), opt(bias));
    Ok(wrap(nogil(py, x.t.numel(), || nn::batch_norm(&x.t, r, w, b, training, momentum, eps)).py()?))
}

#[pyfunction]
#[pyo3(signature = (x, running_mean, running_var, weight, bias, use_input_stats, momentum, eps))]
#[allow(clippy::too_many_arguments)]
fn instance_norm(
    py: Python<'_>,
    x: &PyTensor,
    running_mean: Option<&PyTensor>,
    running_var: Option<&PyTensor>,
    weight: Option<&PyTensor>,
    bias: Option<&PyTensor>,
    use_input_stats: bool,
    momentum: f64,
    eps: f64,
) -> PyResult<PyTensor> {
    let (r, w, b) = (running(running_mean, running_var), opt(weight), opt(bias));
    Ok(wrap(nogil(py, x.t.numel(), || nn::instance_norm(&x.t, r, w, b, use_input_stats, momentum, eps)).py()?))
}

/// (loss, total weight of the counted targets).
#[pyfunction]
#[pyo3(signature = (input, target, weight, reduction, ignore_index))]
fn nll_loss(py: Python<'_>, input: &PyTensor, target: &PyTensor, weight: Option<&PyTensor>, reduction: &str, ignore_index: i64) -> PyResult<(PyTensor, PyTensor)> {
    let reduction = Reduction::from_name(reduction).py()?;
    let w = opt(weight);
    let (l, total) = nogil(py, input.t.numel(), || loss::nll_loss(&input.t, &target.t, w, reduction, ignore_index)).py()?;
    Ok((wrap(l), wrap(total)))
}

/// `weight[indices]`; under autograd the `padding_idx` row gets no gradient.
#[pyfunction]
#[pyo3(signature = (weight, indices, padding_idx=None))]
fn embedding(py: Python<'_>, weight: &PyTensor, indices: &PyTensor, padding_idx: Option<i64>) -> PyResult<PyTensor> {
    Ok(wrap(nogil(py, indices.t.numel(), || emb::embedding(&weight.t, &indices.t, padding_idx)).py()?))
}

#[pyfunction]
fn embedding_renorm_(py: Python<'_>, weight: &PyTensor, indices: &PyTensor, max_norm: f64, norm_type: f64) -> PyResult<()> {
    nogil(py, indices.t.numel(), || emb::embedding_renorm_(&weight.t, &indices.t, max_norm, norm_type)).py()
}

#[pyfunction]
#[pyo3(signature = (weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx))]
#[allow(clippy::too_many_arguments)]
fn embedding_bag(
    py: Python<'_>,
    weight: &PyTensor,
    indices: &PyTensor,
    offsets: &PyTensor,
    mode: &str,
    per_sample_weights: Option<&PyTensor>,
    include_last_offset: bool,
    padding_idx: Option<i64>,
) -> PyResult<PyTensor> {
    let mode = BagMode::from_name(mode).py()?;
    let psw = opt(per_sample_weights);
    let f = || emb::embedding_bag(&weight.t, &indices.t, &offsets.t, mode, psw, include_last_offset, padding_idx);
    Ok(wrap(nogil(py, indices.t.numel(), f).py()?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(softmax, m)?)?;
    m.add_function(wrap_pyfunction!(layer_norm, m)?)?;
    m.add_function(wrap_pyfunction!(group_norm, m)?)?;
    m.add_function(wrap_pyfunction!(batch_norm, m)?)?;
    m.add_function(wrap_pyfunction!(instance_norm, m)?)?;
    m.add_function(wrap_pyfunction!(nll_loss, m)?)?;
    m.add_function(wrap_pyfunction!(embedding, m)?)?;
    m.add_function(wrap_pyfunction!(embedding_renorm_, m)?)?;
    m.add_function(wrap_pyfunction!(embedding_bag, m)?)?;
    Ok(())
}
