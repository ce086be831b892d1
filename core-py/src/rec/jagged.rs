//! The jagged and sparse operators of `ember-rec` in `ember._C.rec`. Unlike the row-format
//! kernels (NumPy buffers), these take and return ember tensors: they run on every call of a
//! KeyedJaggedTensor's methods, where the conversions would cost more than the work. Inputs
//! are CPU tensors (made contiguous here); outputs are fresh tensors. `emberrec.ops` checks the
//! arguments' types and shapes and adds autograd; the kernels check the offsets and lengths.
use super::to_py;
use crate::errors::IntoPyResult;
use crate::tensor::PyTensor;
use ember_core::{DType, Device, Element, Tensor};
use ember_rec::{self as kernels, Bucketize, Combine, Cumsum, Dense, Indices, Jagged, Permutation, PARALLEL_MIN_ELEMENTS};
use half::{bf16, f16};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;

/// Runs `f` with `T` as the element type of `$dtype` (every real dtype: the copying kernels).
macro_rules! any_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::Bool => { type $T = bool; $body }
            DType::U8 => { type $T = u8; $body }
            DType::I8 => { type $T = i8; $body }
            DType::I16 => { type $T = i16; $body }
            DType::I32 => { type $T = i32; $body }
            DType::I64 => { type $T = i64; $body }
            DType::F16 => { type $T = f16; $body }
            DType::BF16 => { type $T = bf16; $body }
            DType::F32 => { type $T = f32; $body }
            DType::F64 => { type $T = f64; $body }
            other => return Err(PyTypeError::new_err(format!("jagged ops do not support {other} values"))),
        }
    };
}

/// The same over the floating-point dtypes (the kernels that compute).
macro_rules! float_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::F16 => { type $T = f16; $body }
            DType::BF16 => { type $T = bf16; $body }
            DType::F32 => { type $T = f32; $body }
            DType::F64 => { type $T = f64; $body }
            other => return Err(PyTypeError::new_err(format!("this jagged op needs floating-point values, got {other}"))),
        }
    };
}

/// The same over int32 and int64 (ids, lengths whose dtype the outputs keep).
macro_rules! int_dtype {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            DType::I32 => { type $T = i32; $body }
            DType::I64 => { type $T = i64; $body }
            other => return Err(PyTypeError::new_err(format!("expected int32 or int64, got {other}"))),
        }
    };
}

/// A contiguous CPU tensor from an ember tensor argument.
fn tensor(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Tensor> {
    let t = obj
        .cast::<PyTensor>()
        .map_err(|_| PyTypeError::new_err(format!("{name} must be an ember.Tensor")))?
        .borrow()
        .t
        .clone();
    if t.device() != Device::Cpu {
        return Err(PyRuntimeError::new_err(format!("{name} must be a CPU tensor, got one on {}", t.device())));
    }
    t.contiguous().py()
}

fn items<T: Element>(t: &Tensor) -> &[T] {
    if t.numel() == 0 {
        return &[]; // an empty tensor's data pointer may dangle
    }
    // SAFETY: a contiguous CPU tensor of T (checked by the callers' dispatch) that `t` keeps alive.
    unsafe { std::slice::from_raw_parts(t.data_ptr::<T>(), t.numel()) }
}

#[allow(clippy::mut_from_ref)]
fn items_mut<T: Element>(t: &Tensor) -> &mut [T] {
    if t.numel() == 0 {
        return &mut [];
    }
    // SAFETY: `t` is a fresh output that nothing else reads or writes during the call.
    unsafe { std::slice::from_raw_parts_mut(t.data_ptr::<T>(), t.numel()) }
}

fn fresh(shape: &[usize], dtype: DType) -> PyResult<Tensor> {
    Tensor::uninit(shape, dtype).py()
}

fn wrap(t: Tensor) -> PyTensor {
    PyTensor::new(t)
}

/// An int32 or int64 tensor (other integer dtypes widened to int64).
struct IndexTensor(Tensor);

impl IndexTensor {
    fn get(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Self> {
        let t = tensor(obj, name)?;
        match t.dtype() {
            DType::I32 | DType::I64 => Ok(IndexTensor(t)),
            d if d.is_int() => Ok(IndexTensor(t.to_dtype(DType::I64).py()?)),
            d => Err(PyTypeError::new_err(format!("{name} must be an integer tensor, got {d}"))),
        }
    }

    fn indices(&self) -> Indices<'_> {
        match self.0.dtype() {
            DType::I32 => Indices::I32(items(&self.0)),
            _ => Indices::I64(items(&self.0)),
        }
    }
}

/// Runs a kernel, on Ember's pool with the GIL released when it touches many elements.
fn run<T: Send>(py: Python<'_>, work: usize, kernel: impl FnOnce() -> kernels::Result<T> + Send) -> PyResult<T> {
    if work < PARALLEL_MIN_ELEMENTS {
        return kernel().map_err(to_py);
    }
    py.detach(|| ember_core::parallel::pool().install(kernel)).map_err(to_py)
}

/// Rows and elements per row of a tensor's first dimension.
fn rows_of(t: &Tensor) -> (usize, usize) {
    let rows = t.shape().first().copied().unwrap_or(1);
    (rows, t.shape().iter().skip(1).product())
}

fn jagged<'a, T: Element>(values: &'a Tensor, offsets: &'a IndexTensor) -> Jagged<'a, T> {
    let (rows, inner) = rows_of(values);
    Jagged { values: items(values), rows, inner, offsets: offsets.indices() }
}

/// (B, max_length, *inner) from jagged (rows, *inner) values, padded with `padding_value`.
#[pyfunction]
fn jagged_to_padded_dense(py: Python<'_>, values: &Bound<'_, PyAny>, offsets: &Bound<'_, PyAny>, max_length: usize, padding_value: f64) -> PyResult<PyTensor> {
    let (values, offsets) = (tensor(values, "values")?, IndexTensor::get(offsets, "offsets")?);
    let batch = offsets.0.numel().saturating_sub(1);
    let mut shape = vec![batch, max_length];
    shape.extend_from_slice(&values.shape()[1..]);
    let out = fresh(&shape, values.dtype())?;
    any_dtype!(values.dtype(), T => {
        let (x, dst) = (jagged::<T>(&values, &offsets), items_mut::<T>(&out));
        run(py, dst.len(), || kernels::jagged_to_padded_dense(x, max_length, T::from_f64(padding_value), dst))?
    });
    Ok(wrap(out))
}

/// The jagged (total_rows, *inner) rows of dense (B, N, *inner).
#[pyfunction]
fn dense_to_jagged(py: Python<'_>, dense: &Bound<'_, PyAny>, offsets: &Bound<'_, PyAny>, total_rows: usize) -> PyResult<PyTensor> {
    let (dense, offsets) = (tensor(dense, "dense")?, IndexTensor::get(offsets, "offsets")?);
    let &[batch, width, ..] = dense.shape() else {
        return Err(PyValueError::new_err(format!("dense must be (B, N, ...), got shape {:?}", dense.shape())));
    };
    let inner: usize = dense.shape()[2..].iter().product();
    let mut shape = vec![total_rows];
    shape.extend_from_slice(&dense.shape()[2..]);
    let out = fresh(&shape, dense.dtype())?;
    any_dtype!(dense.dtype(), T => {
        let (d, bounds, dst) = (Dense { data: items::<T>(&dense), batch, width, inner }, offsets.indices(), items_mut::<T>(&out));
        run(py, dst.len(), || kernels::dense_to_jagged(d, bounds, total_rows, T::zero(), dst))?
    });
    Ok(wrap(out))
}

fn dense_of<'a, T: Element>(t: &'a Tensor, name: &str) -> PyResult<Dense<'a, T>> {
    let &[batch, width, ..] = t.shape() else {
        return Err(PyValueError::new_err(format!("{name} must be (B, N, ...), got shape {:?}", t.shape())));
    };
    Ok(Dense { data: items(t), batch, width, inner: t.shape()[2..].iter().product() })
}

/// Jagged values (shaped as x_values): x + y (+ y2) or x * y at each value's place.
#[pyfunction]
fn jagged_dense_elementwise(py: Python<'_>, x_values: &Bound<'_, PyAny>, offsets: &Bound<'_, PyAny>, dense: Vec<Bound<'_, PyAny>>, op: &str) -> PyResult<PyTensor> {
    let combine = match op {
        "add" => Combine::Add,
        "mul" => Combine::Mul,
        _ => return Err(PyValueError::new_err(format!("jagged_dense_elementwise: op must be 'add' or 'mul', got {op:?}"))),
    };
    let (values, offsets) = (tensor(x_values, "x_values")?, IndexTensor::get(offsets, "offsets")?);
    let dense = dense.iter().map(|y| tensor(y, "y")).collect::<PyResult<Vec<_>>>()?;
    if let Some(y) = dense.iter().find(|y| y.dtype() != values.dtype()) {
        return Err(PyTypeError::new_err(format!("y must have x_values' dtype {}, got {}", values.dtype(), y.dtype())));
    }
    let out = fresh(values.shape(), values.dtype())?;
    float_dtype!(values.dtype(), T => {
        let ys = dense.iter().map(|y| dense_of::<T>(y, "y")).collect::<PyResult<Vec<_>>>()?;
        let (x, dst) = (jagged::<T>(&values, &offsets), items_mut::<T>(&out));
        run(py, dst.len(), || kernels::jagged_dense_jagged_output(x, &ys, combine, dst))?
    });
    Ok(wrap(out))
}

/// y + x_values padded with zeros, shaped as y.
#[pyfunction]
fn jagged_dense_add_dense(py: Python<'_>, x_values: &Bound<'_, PyAny>, offsets: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let (values, offsets, y) = (tensor(x_values, "x_values")?, IndexTensor::get(offsets, "offsets")?, tensor(y, "y")?);
    if y.dtype() != values.dtype() {
        return Err(PyTypeError::new_err(format!("y must have x_values' dtype {}, got {}", values.dtype(), y.dtype())));
    }
    let out = fresh(y.shape(), y.dtype())?;
    float_dtype!(values.dtype(), T => {
        let (x, d, dst) = (jagged::<T>(&values, &offsets), dense_of::<T>(&y, "y")?, items_mut::<T>(&out));
        run(py, dst.len(), || kernels::jagged_dense_add_dense_output(x, d, dst))?
    });
    Ok(wrap(out))
}

fn vec_rows(v: &Tensor) -> PyResult<usize> {
    match v.shape() {
        &[rows, _] => Ok(rows),
        shape => Err(PyValueError::new_err(format!("v must be 2-D (B * H, N), got shape {shape:?}"))),
    }
}

/// (B * H, D) from v (B * H, N) and jagged a_values (rows, H * D).
#[pyfunction]
fn batched_dense_vec_jagged_2d_mul(py: Python<'_>, v: &Bound<'_, PyAny>, a_values: &Bound<'_, PyAny>, a_offsets: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let (v, a, offsets) = (tensor(v, "v")?, tensor(a_values, "a_values")?, IndexTensor::get(a_offsets, "a_offsets")?);
    let (v_rows, batch) = (vec_rows(&v)?, offsets.0.numel().saturating_sub(1));
    let heads = if batch == 0 { 1 } else { (v_rows / batch).max(1) };
    let out = fresh(&[v_rows, a.shape().get(1).copied().unwrap_or(0) / heads], a.dtype())?;
    float_dtype!(a.dtype(), T => {
        let (x, v_items, dst) = (jagged::<T>(&a, &offsets), items::<T>(&v), items_mut::<T>(&out));
        run(py, a.numel() + dst.len(), || kernels::batched_dense_vec_jagged_2d_mul(v_items, v_rows, x, dst))?
    });
    Ok(wrap(out))
}

/// (grad_v, grad_a_values) of batched_dense_vec_jagged_2d_mul.
#[pyfunction]
fn batched_dense_vec_jagged_2d_mul_backward(py: Python<'_>, grad: &Bound<'_, PyAny>, v: &Bound<'_, PyAny>, a_values: &Bound<'_, PyAny>, a_offsets: &Bound<'_, PyAny>) -> PyResult<(PyTensor, PyTensor)> {
    let (grad, v, a) = (tensor(grad, "grad")?, tensor(v, "v")?, tensor(a_values, "a_values")?);
    let offsets = IndexTensor::get(a_offsets, "a_offsets")?;
    let v_rows = vec_rows(&v)?;
    let (grad_v, grad_a) = (fresh(v.shape(), v.dtype())?, fresh(a.shape(), a.dtype())?);
    float_dtype!(a.dtype(), T => {
        let (x, g, v_items) = (jagged::<T>(&a, &offsets), items::<T>(&grad), items::<T>(&v));
        let (gv, ga) = (items_mut::<T>(&grad_v), items_mut::<T>(&grad_a));
        run(py, ga.len() + gv.len(), || kernels::batched_dense_vec_jagged_2d_mul_backward(g, v_items, v_rows, x, gv, ga))?
    });
    Ok((wrap(grad_v), wrap(grad_a)))
}

/// The keys of a permutation: an integer tensor, or a list of ints (KeyedJaggedTensor.permute's
/// own, which then needs no tensor made per call).
enum Keys {
    Tensor(IndexTensor),
    List(Vec<i64>),
}

impl Keys {
    fn get(obj: &Bound<'_, PyAny>) -> PyResult<Self> {
        if obj.is_instance_of::<PyTensor>() {
            return Ok(Keys::Tensor(IndexTensor::get(obj, "permute")?));
        }
        obj.extract().map(Keys::List).map_err(|_| PyTypeError::new_err("permute must be an integer tensor or a list of ints"))
    }

    fn indices(&self) -> Indices<'_> {
        match self {
            Keys::Tensor(t) => t.indices(),
            Keys::List(v) => Indices::I64(v),
        }
    }
}

/// (lengths, values, weights) of key-major sparse features with their keys permuted: `lengths`
/// is (keys, batch), values and weights have one row per id.
#[pyfunction]
#[pyo3(signature = (permute, lengths, values, weights=None))]
fn permute_sparse_data(py: Python<'_>, permute: &Bound<'_, PyAny>, lengths: &Bound<'_, PyAny>, values: &Bound<'_, PyAny>, weights: Option<&Bound<'_, PyAny>>) -> PyResult<(PyTensor, PyTensor, Option<PyTensor>)> {
    let (permute, lengths) = (Keys::get(permute)?, IndexTensor::get(lengths, "lengths")?);
    let values = tensor(values, "values")?;
    let weights = weights.map(|w| tensor(w, "weights")).transpose()?;
    let &[keys, batch] = lengths.0.shape() else {
        return Err(PyValueError::new_err(format!("lengths must be 2-D (keys, batch), got shape {:?}", lengths.0.shape())));
    };
    let permute = permute.indices();
    let plan = Permutation::new(permute, lengths.indices(), keys, batch, rows_of(&values).0).map_err(to_py)?;
    let permuted_lengths = fresh(&[permute.len(), batch], lengths.0.dtype())?;
    int_dtype!(lengths.0.dtype(), L => plan.permute_lengths(items::<L>(&lengths.0), items_mut(&permuted_lengths)).map_err(to_py)?);
    let gather = |t: &Tensor| -> PyResult<Tensor> {
        let mut shape = vec![plan.total_rows()];
        shape.extend_from_slice(&t.shape()[1..]);
        let out = fresh(&shape, t.dtype())?;
        let inner = rows_of(t).1;
        any_dtype!(t.dtype(), T => {
            let (src, dst) = (items::<T>(t), items_mut::<T>(&out));
            run(py, dst.len(), || plan.gather(src, inner, dst))?
        });
        Ok(out)
    };
    let permuted_values = gather(&values)?;
    let permuted_weights = weights.as_ref().map(&gather).transpose()?;
    Ok((wrap(permuted_lengths), wrap(permuted_values), permuted_weights.map(wrap)))
}

/// asynchronous_{complete,exclusive,inclusive}_cumsum of a 1-D int32 / int64 tensor.
#[pyfunction]
fn cumsum(input: &Bound<'_, PyAny>, kind: &str) -> PyResult<PyTensor> {
    let kind = match kind {
        "complete" => Cumsum::Complete,
        "exclusive" => Cumsum::Exclusive,
        "inclusive" => Cumsum::Inclusive,
        _ => return Err(PyValueError::new_err(format!("cumsum: kind must be 'complete', 'exclusive' or 'inclusive', got {kind:?}"))),
    };
    let input = tensor(input, "t_in")?;
    let out = fresh(&[kind.output_len(input.numel())], input.dtype())?;
    int_dtype!(input.dtype(), L => kernels::cumsum(items::<L>(&input), kind, items_mut(&out)).map_err(to_py)?);
    Ok(wrap(out))
}

type Bucketized = (PyTensor, PyTensor, Option<PyTensor>, Option<PyTensor>, Option<PyTensor>);

/// block_bucketize_sparse_features: (lengths, indices, weights, positions, unbucketize_permute),
/// the last three None unless asked for.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn block_bucketize_sparse_features(py: Python<'_>, lengths: &Bound<'_, PyAny>, indices: &Bound<'_, PyAny>, bucketize_pos: bool, sequence: bool, block_sizes: &Bound<'_, PyAny>, my_size: usize, weights: Option<&Bound<'_, PyAny>>, keep_orig_idx: bool) -> PyResult<Bucketized> {
    let (lengths, block_sizes) = (IndexTensor::get(lengths, "lengths")?, IndexTensor::get(block_sizes, "block_sizes")?);
    let indices = tensor(indices, "indices")?;
    let weights = weights.map(|w| tensor(w, "weights")).transpose()?;
    let n = indices.numel();
    let new_indices = fresh(&[n], indices.dtype())?;
    let positions = bucketize_pos.then(|| fresh(&[n], indices.dtype())).transpose()?;
    let options = Bucketize { block_sizes: block_sizes.indices(), buckets: my_size, keep_orig_idx };
    let bucketed = int_dtype!(indices.dtype(), I => {
        let (ids, out, lengths) = (items::<I>(&indices), items_mut::<I>(&new_indices), lengths.indices());
        let positions = positions.as_ref().map(items_mut::<I>);
        run(py, n, || kernels::block_bucketize(lengths, ids, options, out, positions))?
    });
    let new_lengths = fresh(&[bucketed.lengths.len()], lengths.0.dtype())?;
    int_dtype!(lengths.0.dtype(), L => {
        for (o, &l) in items_mut::<L>(&new_lengths).iter_mut().zip(&bucketed.lengths) {
            *o = l as L;
        }
    });
    let new_weights = match &weights {
        Some(w) => {
            let out = fresh(w.shape(), w.dtype())?;
            let inner = rows_of(w).1;
            any_dtype!(w.dtype(), T => {
                let (src, dst, dest) = (items::<T>(w), items_mut::<T>(&out), &bucketed.dest);
                run(py, dst.len(), || kernels::scatter_rows(src, inner, dest, dst))?
            });
            Some(wrap(out))
        }
        None => None,
    };
    let unbucketize = if sequence {
        let out = fresh(&[n], indices.dtype())?;
        int_dtype!(indices.dtype(), I => {
            for (o, &d) in items_mut::<I>(&out).iter_mut().zip(&bucketed.dest) {
                *o = d as I;
            }
        });
        Some(wrap(out))
    } else {
        None
    };
    Ok((wrap(new_lengths), wrap(new_indices), new_weights, positions.map(wrap), unbucketize))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(jagged_to_padded_dense, m)?)?;
    m.add_function(wrap_pyfunction!(dense_to_jagged, m)?)?;
    m.add_function(wrap_pyfunction!(jagged_dense_elementwise, m)?)?;
    m.add_function(wrap_pyfunction!(jagged_dense_add_dense, m)?)?;
    m.add_function(wrap_pyfunction!(batched_dense_vec_jagged_2d_mul, m)?)?;
    m.add_function(wrap_pyfunction!(batched_dense_vec_jagged_2d_mul_backward, m)?)?;
    m.add_function(wrap_pyfunction!(permute_sparse_data, m)?)?;
    m.add_function(wrap_pyfunction!(cumsum, m)?)?;
    m.add_function(wrap_pyfunction!(block_bucketize_sparse_features, m)?)?;
    Ok(())
}
