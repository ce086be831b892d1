//! `ember._C.rec.train_*`: the training table-batched embedding bag of `ember_rec::train`.
//! Each table is its own NumPy array (float32, or binary16 viewed as uint16 with
//! `half_weights`), a view of the module's parameter, so the backward pass updates the
//! parameters in place; optimizer states are float32 arrays beside them.
use super::{bounds_check, pooling, run, IndexBuffer};
use crate::buffers::{items, items_mut};
use ember_rec::train::{self, EmbeddingTable, Lookup, Moments, Optimizer, Rows, RowsMut, TableUpdate, WeightDecay};
use ember_rec::Output;
use half::f16;
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// One table's weights: float32, or binary16 bits.
enum WeightBuffer {
    F32(PyBuffer<f32>),
    F16(PyBuffer<u16>),
}

impl WeightBuffer {
    fn all(arrays: &[Bound<'_, PyAny>], half: bool) -> PyResult<Vec<Self>> {
        arrays.iter().map(|a| Ok(if half { WeightBuffer::F16(PyBuffer::get(a)?) } else { WeightBuffer::F32(PyBuffer::get(a)?) })).collect()
    }

    fn rows(&self) -> PyResult<Rows<'_>> {
        Ok(match self {
            WeightBuffer::F32(b) => Rows::F32(items(b, "weights")?),
            // SAFETY: f16 is a transparent wrapper of u16.
            WeightBuffer::F16(b) => Rows::F16(unsafe { std::mem::transmute::<&[u16], &[f16]>(items(b, "weights")?) }),
        })
    }

    fn rows_mut(&self) -> PyResult<RowsMut<'_>> {
        Ok(match self {
            WeightBuffer::F32(b) => RowsMut::F32(items_mut(b, "weights")?),
            // SAFETY: f16 is a transparent wrapper of u16.
            WeightBuffer::F16(b) => RowsMut::F16(unsafe { std::mem::transmute::<&mut [u16], &mut [f16]>(items_mut(b, "weights")?) }),
        })
    }
}

/// The borrowed inputs every entry point shares.
struct Inputs {
    weights: Vec<WeightBuffer>,
    indices: IndexBuffer,
    offsets: IndexBuffer,
    per_sample_weights: Option<PyBuffer<f32>>,
}

impl Inputs {
    fn get(weights: &[Bound<'_, PyAny>], half_weights: bool, indices: &Bound<'_, PyAny>, offsets: &Bound<'_, PyAny>, per_sample_weights: Option<PyBuffer<f32>>) -> PyResult<Self> {
        Ok(Inputs {
            weights: WeightBuffer::all(weights, half_weights)?,
            indices: IndexBuffer::get(indices, "indices")?,
            offsets: IndexBuffer::get(offsets, "offsets")?,
            per_sample_weights,
        })
    }

    fn tables(&self, dims: &[usize]) -> PyResult<Vec<EmbeddingTable<'_>>> {
        check_dims(self.weights.len(), dims)?;
        self.weights.iter().zip(dims).map(|(w, &dim)| Ok(EmbeddingTable { weights: w.rows()?, dim })).collect()
    }

    fn lookup<'a>(&'a self, feature_table: &'a [usize], pooling_mode: &str) -> PyResult<Lookup<'a>> {
        Ok(Lookup {
            feature_table,
            indices: self.indices.indices("indices")?,
            offsets: self.offsets.indices("offsets")?,
            per_sample_weights: self.per_sample_weights.as_ref().map(|w| items(w, "per_sample_weights")).transpose()?,
            pooling: pooling(pooling_mode)?,
        })
    }
}

fn check_dims(tables: usize, dims: &[usize]) -> PyResult<()> {
    if tables != dims.len() {
        return Err(PyValueError::new_err(format!("embedding_bags: {tables} tables but {} dims", dims.len())));
    }
    Ok(())
}

/// Pools the bags into `out` (float32, or float16 viewed as uint16 with `half_out`). Returns
/// how many indices fell outside their tables.
#[pyfunction]
#[pyo3(signature = (weights, dims, half_weights, feature_table, indices, offsets, per_sample_weights, pooling_mode, bounds_check_mode, out, half_out))]
#[allow(clippy::too_many_arguments)]
fn train_forward(
    py: Python<'_>,
    weights: Vec<Bound<'_, PyAny>>,
    dims: Vec<usize>,
    half_weights: bool,
    feature_table: Vec<usize>,
    indices: &Bound<'_, PyAny>,
    offsets: &Bound<'_, PyAny>,
    per_sample_weights: Option<PyBuffer<f32>>,
    pooling_mode: &str,
    bounds_check_mode: &str,
    out: &Bound<'_, PyAny>,
    half_out: bool,
) -> PyResult<u64> {
    let inputs = Inputs::get(&weights, half_weights, indices, offsets, per_sample_weights)?;
    let (tables, lookup, check) = (inputs.tables(&dims)?, inputs.lookup(&feature_table, pooling_mode)?, bounds_check(bounds_check_mode)?);
    if half_out {
        let buffer = PyBuffer::<u16>::get(out)?;
        // SAFETY: f16 is a transparent wrapper of u16.
        let halves = unsafe { std::mem::transmute::<&mut [u16], &mut [f16]>(items_mut(&buffer, "out")?) };
        run(py, || train::forward(&tables, &lookup, check, Output::F16(halves)))
    } else {
        let buffer = PyBuffer::<f32>::get(out)?;
        let floats = items_mut(&buffer, "out")?;
        run(py, || train::forward(&tables, &lookup, check, Output::F32(floats)))
    }
}

/// The gradient w.r.t. each per-sample weight, into `out` (one float32 per index).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn train_per_sample_weight_grads(
    py: Python<'_>,
    weights: Vec<Bound<'_, PyAny>>,
    dims: Vec<usize>,
    half_weights: bool,
    feature_table: Vec<usize>,
    indices: &Bound<'_, PyAny>,
    offsets: &Bound<'_, PyAny>,
    per_sample_weights: PyBuffer<f32>,
    pooling_mode: &str,
    grad_output: PyBuffer<f32>,
    out: PyBuffer<f32>,
) -> PyResult<()> {
    let inputs = Inputs::get(&weights, half_weights, indices, offsets, Some(per_sample_weights))?;
    let (tables, lookup) = (inputs.tables(&dims)?, inputs.lookup(&feature_table, pooling_mode)?);
    let (grad_output, out) = (items(&grad_output, "grad_output")?, items_mut(&out, "out")?);
    run(py, || train::per_sample_weight_grads(&tables, &lookup, grad_output, out))
}

/// FBGEMM's optimizer names (`EmbOptimType` values), and "accumulate" for a dense gradient.
fn optimizer(name: &str, lr: f32, eps: f32, beta1: f32, beta2: f32, weight_decay: f32, weight_decay_mode: i64, iter: u64) -> PyResult<Optimizer> {
    let moments = Moments { lr, eps, beta1, beta2, weight_decay, iter };
    let mode = match weight_decay_mode {
        0 => WeightDecay::None,
        1 => WeightDecay::L2,
        2 => WeightDecay::Decoupled,
        _ => return Err(PyValueError::new_err(format!("weight_decay_mode must be 0 (NONE), 1 (L2) or 2 (DECOUPLE), got {weight_decay_mode}"))),
    };
    Ok(match name {
        "accumulate" => Optimizer::Accumulate,
        "exact_sgd" => Optimizer::Sgd { lr },
        "exact_adagrad" => Optimizer::Adagrad { lr, eps },
        "exact_row_wise_adagrad" => Optimizer::RowwiseAdagrad { lr, eps, weight_decay, mode },
        "adam" => Optimizer::Adam(moments),
        "partial_row_wise_adam" => Optimizer::PartialRowwiseAdam(moments),
        "lamb" => Optimizer::Lamb(moments),
        "partial_row_wise_lamb" => Optimizer::PartialRowwiseLamb(moments),
        _ => return Err(PyValueError::new_err(format!("embedding_bags: unknown optimizer {name:?}"))),
    })
}

/// The backward pass: each touched row's summed gradient, and `optimizer` applied to those
/// rows of `weights` (in place) and of `momentum1` / `momentum2` (float32 arrays per table,
/// empty where the optimizer keeps none). With "accumulate", `weights` are dense gradient
/// buffers the gradient is added to.
#[pyfunction]
#[pyo3(signature = (weights, dims, half_weights, feature_table, indices, offsets, per_sample_weights, pooling_mode, grad_output, optimizer_name, hyperparameters, momentum1, momentum2))]
#[allow(clippy::too_many_arguments)]
fn train_backward(
    py: Python<'_>,
    weights: Vec<Bound<'_, PyAny>>,
    dims: Vec<usize>,
    half_weights: bool,
    feature_table: Vec<usize>,
    indices: &Bound<'_, PyAny>,
    offsets: &Bound<'_, PyAny>,
    per_sample_weights: Option<PyBuffer<f32>>,
    pooling_mode: &str,
    grad_output: PyBuffer<f32>,
    optimizer_name: &str,
    hyperparameters: (f32, f32, f32, f32, f32, i64, u64),
    momentum1: Vec<PyBuffer<f32>>,
    momentum2: Vec<PyBuffer<f32>>,
) -> PyResult<()> {
    let (lr, eps, beta1, beta2, weight_decay, mode, iter) = hyperparameters;
    let optimizer = optimizer(optimizer_name, lr, eps, beta1, beta2, weight_decay, mode, iter)?;
    let inputs = Inputs::get(&weights, half_weights, indices, offsets, per_sample_weights)?;
    check_dims(inputs.weights.len(), &dims)?;
    if momentum1.len() != dims.len() || momentum2.len() != dims.len() {
        return Err(PyValueError::new_err("embedding_bags: one momentum1 and one momentum2 array per table"));
    }
    let lookup = inputs.lookup(&feature_table, pooling_mode)?;
    let grad_output = items(&grad_output, "grad_output")?;
    let mut tables = Vec::with_capacity(dims.len());
    for (((w, &dim), m1), m2) in inputs.weights.iter().zip(&dims).zip(&momentum1).zip(&momentum2) {
        tables.push(TableUpdate { weights: w.rows_mut()?, dim, momentum1: items_mut(m1, "momentum1")?, momentum2: items_mut(m2, "momentum2")? });
    }
    run(py, || train::backward(&mut tables, &lookup, grad_output, optimizer))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(train_forward, m)?)?;
    m.add_function(wrap_pyfunction!(train_per_sample_weight_grads, m)?)?;
    m.add_function(wrap_pyfunction!(train_backward, m)?)?;
    Ok(())
}
