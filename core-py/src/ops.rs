//! Module-level entry points. Ops are dispatched by their PyTorch name; the `ember` package
//! builds the public functions and methods on these.
use crate::convert::{arg, shape_arg, sizes, Arg, PyDType};
use crate::errors::IntoPyResult;
use crate::tensor::{nogil, PyTensor};
use ember_core::ops::binary::{self, BinaryOp, Scalar};
use ember_core::ops::random::{self, Generator};
use ember_core::ops::reduce::{self, ReduceOp};
use ember_core::ops::unary::{self, UnaryOp};
use ember_core::ops::{creation, matmul as products};
use ember_core::dtype::CDouble;
use ember_core::{DType, Device, Tensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::sync::Mutex;

fn wrap(t: Tensor) -> PyTensor {
    PyTensor::new(t)
}

fn unknown(kind: &str, name: &str) -> PyErr {
    PyValueError::new_err(format!("unknown {kind} op '{name}'"))
}

fn tensor_of(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Tensor> {
    match arg(obj, what)? {
        Arg::Tensor(t) => Ok(t),
        Arg::Scalar(_) => Err(PyTypeError::new_err(format!("{what}: expected a Tensor, but got a number"))),
    }
}

/// Runs a unary op into a fresh tensor or into `out` (in-place ops pass `out=x`).
fn run_unary(py: Python<'_>, op: UnaryOp, x: &PyTensor, out: Option<&Bound<'_, PyTensor>>) -> PyResult<Option<PyTensor>> {
    let x = x.t.clone();
    match out {
        None => Ok(Some(wrap(nogil(py, x.numel(), || unary::unary(op, &x)).py()?))),
        Some(o) => {
            let o = o.borrow().t.clone();
            nogil(py, x.numel(), || unary::unary_out(op, &x, &o)).py()?;
            Ok(None)
        }
    }
}

#[pyfunction]
#[pyo3(name = "unary", signature = (name, x, out=None))]
fn unary_op(py: Python<'_>, name: &str, x: &PyTensor, out: Option<&Bound<'_, PyTensor>>) -> PyResult<Option<PyTensor>> {
    let op = UnaryOp::from_name(name).ok_or_else(|| unknown("unary", name))?;
    run_unary(py, op, x, out)
}

/// Unary ops with parameters: `leaky_relu(slope)`, `elu(alpha)`, `softplus(beta, threshold)`,
/// `logit(eps)`, `hardtanh(min, max)`, `clamp(min, max)`, `nan_to_num(nan, posinf, neginf)`.
#[pyfunction]
#[pyo3(signature = (name, x, a=None, b=None, c=None, out=None))]
fn unary_with(
    py: Python<'_>,
    name: &str,
    x: &PyTensor,
    a: Option<f64>,
    b: Option<f64>,
    c: Option<f64>,
    out: Option<&Bound<'_, PyTensor>>,
) -> PyResult<Option<PyTensor>> {
    let need = |v: Option<f64>, what: &str| v.ok_or_else(|| PyTypeError::new_err(format!("{name}(): missing {what}")));
    let op = match name {
        "leaky_relu" => UnaryOp::LeakyRelu(need(a, "negative_slope")?),
        "elu" => UnaryOp::Elu(need(a, "alpha")?),
        "softplus" => UnaryOp::Softplus(need(a, "beta")?, need(b, "threshold")?),
        "logit" => UnaryOp::Logit(a),
        "hardtanh" => UnaryOp::Hardtanh(need(a, "min_val")?, need(b, "max_val")?),
        "clamp" => {
            if a.is_none() && b.is_none() {
                return Err(PyRuntimeError::new_err("torch.clamp: At least one of 'min' or 'max' must not be None"));
            }
            UnaryOp::Clamp(a, b)
        }
        "nan_to_num" => UnaryOp::NanToNum(a.unwrap_or(0.0), b.unwrap_or(f64::MAX), c.unwrap_or(-f64::MAX)),
        _ => return Err(unknown("parametrised unary", name)),
    };
    run_unary(py, op, x, out)
}

#[pyfunction]
#[pyo3(name = "binary", signature = (name, a, b, out=None))]
fn binary_op(
    py: Python<'_>,
    name: &str,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    out: Option<&Bound<'_, PyTensor>>,
) -> PyResult<Option<PyTensor>> {
    let op = BinaryOp::from_name(name).ok_or_else(|| unknown("binary", name))?;
    let (a, b) = (arg(a, "input")?, arg(b, "other")?);
    if let (Arg::Scalar(_), Arg::Scalar(_)) = (&a, &b) {
        return Err(PyTypeError::new_err(format!("{name}(): expected at least one Tensor argument, got two numbers")));
    }
    match out {
        None => Ok(Some(wrap(py.detach(|| binary::binary(op, a.operand(), b.operand())).py()?))),
        Some(o) => {
            let o = o.borrow().t.clone();
            py.detach(|| binary::binary_out(op, a.operand(), b.operand(), &o)).py()?;
            Ok(None)
        }
    }
}

#[pyfunction]
#[pyo3(name = "where")]
fn where_(py: Python<'_>, cond: &PyTensor, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let (a, b) = (arg(a, "input")?, arg(b, "other")?);
    Ok(wrap(py.detach(|| binary::where_(&cond.t, a.operand(), b.operand())).py()?))
}

#[pyfunction]
fn lerp(py: Python<'_>, start: &PyTensor, end: &PyTensor, weight: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let w = arg(weight, "weight")?;
    Ok(wrap(py.detach(|| binary::lerp(&start.t, &end.t, w.operand())).py()?))
}

#[pyfunction]
fn result_type(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<PyDType> {
    let (a, b) = (arg(a, "tensor1")?, arg(b, "tensor2")?);
    Ok(PyDType(binary::result_type(&[a.operand(), b.operand()])))
}

#[pyfunction]
fn can_cast(from: PyDType, to: PyDType) -> bool {
    ember_core::ops::can_cast(from.0, to.0)
}

#[pyfunction]
fn promote_types(a: PyDType, b: PyDType) -> PyDType {
    PyDType(DType::promote(a.0, b.0))
}

fn dims_arg(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    dim.map(|d| shape_arg(d, "dim")).transpose()
}

#[pyfunction]
#[pyo3(name = "reduce", signature = (name, x, dim=None, keepdim=false, dtype=None))]
fn reduce_op(
    py: Python<'_>,
    name: &str,
    x: &PyTensor,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
    dtype: Option<PyDType>,
) -> PyResult<PyTensor> {
    let op = ReduceOp::from_name(name).ok_or_else(|| unknown("reduction", name))?;
    let dims = dims_arg(dim)?;
    Ok(wrap(nogil(py, x.t.numel(), || reduce::reduce(op, &x.t, dims.as_deref(), keepdim, dtype.map(|d| d.0))).py()?))
}

/// (values, indices) of the max (or min) along `dim`; flattened when `dim` is None.
#[pyfunction]
#[pyo3(signature = (x, dim, keepdim, is_max))]
fn arg_reduce(py: Python<'_>, x: &PyTensor, dim: Option<i64>, keepdim: bool, is_max: bool) -> PyResult<(PyTensor, PyTensor)> {
    let (v, i) = nogil(py, x.t.numel(), || reduce::arg_reduce(&x.t, dim, keepdim, is_max)).py()?;
    Ok((wrap(v), wrap(i)))
}

// ---- creation ----

/// `torch.full` on `device` (made there: a CUDA tensor is filled by its kernel, not uploaded).
#[pyfunction]
#[pyo3(signature = (shape, value, dtype, device="cpu"))]
fn full(py: Python<'_>, shape: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>, dtype: PyDType, device: &str) -> PyResult<PyTensor> {
    let shape = sizes(&shape_arg(shape, "size")?)?;
    let v = match arg(value, "fill_value")? {
        Arg::Scalar(s) => s,
        Arg::Tensor(t) if t.numel() == 1 => Scalar::Float(t.item_f64().py()?),
        Arg::Tensor(_) => return Err(PyRuntimeError::new_err("fill_value must be a number or a one-element tensor")),
    };
    v.to_tensor_checked(dtype.0).py()?; // the value must fit the dtype, as PyTorch's fill_ checks
    let n = shape.iter().product();
    let device = Device::parse(device).py()?;
    Ok(wrap(nogil(py, n, || creation::full_on(&shape, v, dtype.0, device)).py()?))
}

#[pyfunction]
#[pyo3(signature = (shape, dtype, device="cpu"))]
fn zeros(shape: &Bound<'_, PyAny>, dtype: PyDType, device: &str) -> PyResult<PyTensor> {
    Ok(wrap(Tensor::zeros_on(&sizes(&shape_arg(shape, "size")?)?, dtype.0, Device::parse(device).py()?).py()?))
}

#[pyfunction]
#[pyo3(signature = (shape, dtype, device="cpu"))]
fn empty(shape: &Bound<'_, PyAny>, dtype: PyDType, device: &str) -> PyResult<PyTensor> {
    Ok(wrap(Tensor::empty_on(&sizes(&shape_arg(shape, "size")?)?, dtype.0, Device::parse(device).py()?).py()?))
}

#[pyfunction]
fn arange(start: f64, end: f64, step: f64, dtype: PyDType) -> PyResult<PyTensor> {
    Ok(wrap(creation::arange(start, end, step, dtype.0).py()?))
}

#[pyfunction]
fn linspace(start: f64, end: f64, steps: i64, dtype: PyDType) -> PyResult<PyTensor> {
    Ok(wrap(creation::linspace(start, end, steps, dtype.0).py()?))
}

#[pyfunction]
fn logspace(start: f64, end: f64, steps: i64, base: f64, dtype: PyDType) -> PyResult<PyTensor> {
    Ok(wrap(creation::logspace(start, end, steps, base, dtype.0).py()?))
}

/// `linspace`/`logspace` with complex ends, each given as its (real, imaginary) parts.
#[pyfunction]
#[pyo3(signature = (start, end, steps, dtype, base=None))]
fn complex_space(start: (f64, f64), end: (f64, f64), steps: i64, dtype: PyDType, base: Option<f64>) -> PyResult<PyTensor> {
    let (s, e) = (CDouble::new(start.0, start.1), CDouble::new(end.0, end.1));
    Ok(wrap(match base {
        None => creation::linspace_complex(s, e, steps, dtype.0),
        Some(b) => creation::logspace_complex(s, e, steps, b, dtype.0),
    }.py()?))
}

#[pyfunction]
fn eye(n: i64, m: i64, dtype: PyDType) -> PyResult<PyTensor> {
    let s = sizes(&[n, m])?;
    Ok(wrap(creation::eye(s[0], s[1], dtype.0).py()?))
}

/// Wraps foreign CPU memory (from `__array_interface__` or DLPack) without copying; `owner`
/// is kept alive for as long as any view of the memory.
#[pyfunction]
fn from_buffer(ptr: usize, nbytes: usize, shape: Vec<usize>, strides: Vec<isize>, offset: usize, dtype: PyDType, owner: Py<PyAny>) -> PyResult<PyTensor> {
    let storage = unsafe { ember_core::storage::CpuStorage::from_foreign(ptr as *mut u8, nbytes, Box::new(owner)) };
    let layout = ember_core::Layout::new(shape, strides, offset);
    let t = Tensor::from_parts(std::sync::Arc::new(ember_core::storage::Storage::Cpu(storage)), layout, dtype.0);
    Ok(wrap(t))
}

// ---- matmul ----

#[pyfunction]
fn matmul(py: Python<'_>, a: &PyTensor, b: &PyTensor) -> PyResult<PyTensor> {
    Ok(wrap(py.detach(|| products::matmul(&a.t, &b.t)).py()?))
}
#[pyfunction]
fn mm(py: Python<'_>, a: &PyTensor, b: &PyTensor) -> PyResult<PyTensor> {
    Ok(wrap(py.detach(|| products::mm(&a.t, &b.t)).py()?))
}
#[pyfunction]
fn bmm(py: Python<'_>, a: &PyTensor, b: &PyTensor) -> PyResult<PyTensor> {
    Ok(wrap(py.detach(|| products::bmm(&a.t, &b.t)).py()?))
}
#[pyfunction]
fn addmm(py: Python<'_>, input: &PyTensor, a: &PyTensor, b: &PyTensor, beta: f64, alpha: f64) -> PyResult<PyTensor> {
    Ok(wrap(py.detach(|| products::addmm(&input.t, &a.t, &b.t, beta, alpha)).py()?))
}

// ---- threads ----

#[pyfunction]
fn set_num_threads(n: i64) -> PyResult<()> {
    if n <= 0 {
        return Err(PyRuntimeError::new_err(format!("Number of threads must be positive, got {n}")));
    }
    ember_core::parallel::set_num_threads(n as usize);
    Ok(())
}
#[pyfunction]
fn get_num_threads() -> usize {
    ember_core::parallel::num_threads()
}

// ---- half precision paths and float32 matmul precision ----

/// Forces the bfloat16/float16 conversion path ("scalar", "avx2", "avx512", "avx512bf16"), or
/// goes back to detection with `None` (for tests and benchmarks).
#[pyfunction]
#[pyo3(signature = (name=None))]
fn _set_half_path(name: Option<&str>) -> PyResult<()> {
    use ember_core::backend::cpu::half::{force_path, Path};
    let path = match name {
        None => None,
        Some(n) => Some(Path::from_name(n).ok_or_else(|| {
            PyValueError::new_err(format!("_set_half_path(): expected one of 'scalar', 'avx2', 'avx512', 'avx512bf16', got '{n}'"))
        })?),
    };
    force_path(path).py()
}
#[pyfunction]
fn _get_half_path() -> &'static str {
    ember_core::backend::cpu::half::path().name()
}
/// The paths this CPU can run, slowest first.
#[pyfunction]
fn _half_paths() -> Vec<&'static str> {
    use ember_core::backend::cpu::half::Path;
    Path::ALL.into_iter().filter(|p| p.is_supported()).map(|p| p.name()).collect()
}
/// Sets the precision; `False` when the name is not one of the three (the caller warns).
#[pyfunction]
fn _set_float32_matmul_precision(name: &str) -> bool {
    match products::Precision::from_name(name) {
        Some(p) => {
            products::set_float32_matmul_precision(p);
            true
        }
        None => false,
    }
}
#[pyfunction]
fn _get_float32_matmul_precision() -> &'static str {
    products::float32_matmul_precision().name()
}

// ---- random ----

/// `ember.Generator`: a seedable Philox stream; `None` in a sampling call means the default one.
#[pyclass(name = "Generator", module = "ember")]
pub struct PyGenerator(Mutex<Generator>);

#[pymethods]
impl PyGenerator {
    #[new]
    #[pyo3(signature = (device="cpu"))]
    fn new(device: &str) -> PyResult<Self> {
        if device != "cpu" {
            return Err(PyRuntimeError::new_err(format!("Generator: only 'cpu' is supported, got '{device}'")));
        }
        Ok(PyGenerator(Mutex::new(Generator::new(67280421310721))))
    }
    fn manual_seed(slf: Py<Self>, py: Python<'_>, seed: i128) -> Py<Self> {
        random::lock(&slf.borrow(py).0).manual_seed(seed as u64);
        slf
    }
    fn initial_seed(&self) -> u64 {
        random::lock(&self.0).seed()
    }
    fn seed(&self) -> u64 {
        let s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
        random::lock(&self.0).manual_seed(s);
        s
    }
    fn get_state(&self) -> (u64, u64) {
        random::lock(&self.0).state()
    }
    fn set_state(&self, state: (u64, u64)) {
        random::lock(&self.0).set_state(state)
    }
}

fn with_gen<T>(g: Option<&PyGenerator>, f: impl FnOnce(&mut Generator) -> T) -> T {
    match g {
        Some(g) => f(&mut random::lock(&g.0)),
        None => f(&mut random::lock(random::default_generator())),
    }
}

#[pyfunction]
fn manual_seed(seed: i128) {
    random::lock(random::default_generator()).manual_seed(seed as u64);
}
#[pyfunction]
fn initial_seed() -> u64 {
    random::lock(random::default_generator()).seed()
}
#[pyfunction]
fn get_rng_state() -> (u64, u64) {
    random::lock(random::default_generator()).state()
}
#[pyfunction]
fn set_rng_state(state: (u64, u64)) {
    random::lock(random::default_generator()).set_state(state)
}

/// `(type, index)` of a PyTorch device string (the index `None` when the string names none).
#[pyfunction]
fn _parse_device(device: &str) -> PyResult<(&'static str, Option<usize>)> {
    Device::parse_spec(device).py()
}

/// Refuses a device this build or machine has no backend for, with the reason.
#[pyfunction]
fn _check_device(device: &str) -> PyResult<()> {
    ember_core::backend::of(Device::parse(device).py()?).py().map(|_| ())
}

#[pyfunction]
#[pyo3(signature = (shape, low, high, dtype, generator=None, device="cpu"))]
fn uniform(shape: &Bound<'_, PyAny>, low: f64, high: f64, dtype: PyDType, generator: Option<&PyGenerator>, device: &str) -> PyResult<PyTensor> {
    let (shape, device) = (sizes(&shape_arg(shape, "size")?)?, Device::parse(device).py()?);
    Ok(wrap(with_gen(generator, |g| random::uniform(g, &shape, low, high, dtype.0, device)).py()?))
}
#[pyfunction]
#[pyo3(signature = (shape, mean, std, dtype, generator=None, device="cpu"))]
fn normal(shape: &Bound<'_, PyAny>, mean: f64, std: f64, dtype: PyDType, generator: Option<&PyGenerator>, device: &str) -> PyResult<PyTensor> {
    let (shape, device) = (sizes(&shape_arg(shape, "size")?)?, Device::parse(device).py()?);
    Ok(wrap(with_gen(generator, |g| random::normal(g, &shape, mean, std, dtype.0, device)).py()?))
}
#[pyfunction]
#[pyo3(signature = (shape, low, high, dtype, generator=None, device="cpu"))]
fn randint(shape: &Bound<'_, PyAny>, low: i64, high: i64, dtype: PyDType, generator: Option<&PyGenerator>, device: &str) -> PyResult<PyTensor> {
    let (shape, device) = (sizes(&shape_arg(shape, "size")?)?, Device::parse(device).py()?);
    Ok(wrap(with_gen(generator, |g| random::randint(g, &shape, low, high, dtype.0, device)).py()?))
}
#[pyfunction]
#[pyo3(signature = (n, dtype, generator=None))]
fn randperm(n: i64, dtype: PyDType, generator: Option<&PyGenerator>) -> PyResult<PyTensor> {
    let n = sizes(&[n])?[0];
    Ok(wrap(with_gen(generator, |g| random::randperm(g, n, dtype.0)).py()?))
}
#[pyfunction]
#[pyo3(signature = (p, dtype, generator=None))]
fn bernoulli(p: &PyTensor, dtype: PyDType, generator: Option<&PyGenerator>) -> PyResult<PyTensor> {
    Ok(wrap(with_gen(generator, |g| random::bernoulli(g, &p.t, dtype.0)).py()?))
}
#[pyfunction]
#[pyo3(signature = (probs, num_samples, replacement=false, generator=None))]
fn multinomial(probs: &Bound<'_, PyAny>, num_samples: i64, replacement: bool, generator: Option<&PyGenerator>) -> PyResult<PyTensor> {
    let probs = tensor_of(probs, "multinomial(): input")?;
    let n = sizes(&[num_samples])?[0];
    Ok(wrap(with_gen(generator, |g| random::multinomial(g, &probs, n, replacement)).py()?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGenerator>()?;
    m.add_function(wrap_pyfunction!(unary_op, m)?)?;
    m.add_function(wrap_pyfunction!(unary_with, m)?)?;
    m.add_function(wrap_pyfunction!(binary_op, m)?)?;
    m.add_function(wrap_pyfunction!(where_, m)?)?;
    m.add_function(wrap_pyfunction!(lerp, m)?)?;
    m.add_function(wrap_pyfunction!(result_type, m)?)?;
    m.add_function(wrap_pyfunction!(promote_types, m)?)?;
    m.add_function(wrap_pyfunction!(can_cast, m)?)?;
    m.add_function(wrap_pyfunction!(reduce_op, m)?)?;
    m.add_function(wrap_pyfunction!(arg_reduce, m)?)?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(linspace, m)?)?;
    m.add_function(wrap_pyfunction!(logspace, m)?)?;
    m.add_function(wrap_pyfunction!(complex_space, m)?)?;
    m.add_function(wrap_pyfunction!(eye, m)?)?;
    m.add_function(wrap_pyfunction!(from_buffer, m)?)?;
    m.add_function(wrap_pyfunction!(matmul, m)?)?;
    m.add_function(wrap_pyfunction!(mm, m)?)?;
    m.add_function(wrap_pyfunction!(bmm, m)?)?;
    m.add_function(wrap_pyfunction!(addmm, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_set_half_path, m)?)?;
    m.add_function(wrap_pyfunction!(_get_half_path, m)?)?;
    m.add_function(wrap_pyfunction!(_half_paths, m)?)?;
    m.add_function(wrap_pyfunction!(_set_float32_matmul_precision, m)?)?;
    m.add_function(wrap_pyfunction!(_get_float32_matmul_precision, m)?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(initial_seed, m)?)?;
    m.add_function(wrap_pyfunction!(get_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(set_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(_parse_device, m)?)?;
    m.add_function(wrap_pyfunction!(_check_device, m)?)?;
    m.add_function(wrap_pyfunction!(uniform, m)?)?;
    m.add_function(wrap_pyfunction!(normal, m)?)?;
    m.add_function(wrap_pyfunction!(randint, m)?)?;
    m.add_function(wrap_pyfunction!(randperm, m)?)?;
    m.add_function(wrap_pyfunction!(bernoulli, m)?)?;
    m.add_function(wrap_pyfunction!(multinomial, m)?)?;
    Ok(())
}
