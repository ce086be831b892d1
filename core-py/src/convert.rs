//! Python arguments to Rust values: dtypes, shapes, dims and scalar-or-tensor operands.
use crate::tensor::PyTensor;
use ember_core::ops::binary::Scalar;
use ember_core::DType;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt, PySequence};

/// `ember.float32` and friends.
#[pyclass(name = "dtype", module = "ember", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType(pub DType);

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> String {
        format!("ember.{}", self.0.name())
    }
    #[getter]
    fn name(&self) -> &'static str {
        self.0.name()
    }
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.0.is_float()
    }
    #[getter]
    fn is_complex(&self) -> bool {
        self.0.is_complex()
    }
    /// The dtype of a complex dtype's parts (real dtypes map to themselves).
    fn to_real(&self) -> PyDType {
        PyDType(self.0.to_real())
    }
    /// The complex dtype with these parts (PyTorch refuses non-float dtypes).
    fn to_complex(&self) -> PyResult<PyDType> {
        match self.0 {
            DType::F16 | DType::F32 | DType::F64 => Ok(PyDType(self.0.to_complex())),
            d if d.is_complex() => Ok(*self),
            d => Err(pyo3::exceptions::PyRuntimeError::new_err(format!("Unknown Complex ScalarType for {}", d.legacy_name()))),
        }
    }
    /// PyTorch's ScalarType name (`Float`, `ComplexDouble`), as its error messages spell it.
    #[getter]
    fn _legacy_name(&self) -> &'static str {
        self.0.legacy_name()
    }
    #[getter]
    fn is_signed(&self) -> bool {
        !matches!(self.0, DType::Bool | DType::U8)
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.0.size()
    }
    fn __reduce__(&self, py: Python<'_>) -> PyResult<(Py<PyAny>, (String,))> {
        Ok((py.import("ember")?.getattr("_dtype_by_name")?.unbind(), (self.0.name().to_string(),)))
    }
}

/// A Python number or an ember tensor, as an operand of an elementwise op.
pub enum Arg {
    Tensor(ember_core::Tensor),
    Scalar(Scalar),
}

impl Arg {
    pub fn operand(&self) -> ember_core::ops::binary::Operand<'_> {
        use ember_core::ops::binary::Operand;
        match self {
            Arg::Tensor(t) => Operand::Tensor(t),
            Arg::Scalar(s) => Operand::Scalar(*s),
        }
    }
}

pub fn scalar(obj: &Bound<'_, PyAny>) -> Option<Scalar> {
    if obj.is_instance_of::<PyBool>() {
        obj.extract::<bool>().ok().map(Scalar::Bool)
    } else if obj.is_instance_of::<PyInt>() {
        obj.extract::<i64>().ok().map(Scalar::Int)
    } else if obj.is_instance_of::<PyFloat>() {
        obj.extract::<f64>().ok().map(Scalar::Float)
    } else if let Ok(z) = obj.cast::<PyComplex>() {
        Some(Scalar::Complex(ember_core::dtype::CDouble::new(z.real(), z.imag())))
    } else if obj.getattr("dtype").and_then(|d| d.getattr("kind")).and_then(|k| k.extract::<String>()).is_ok_and(|k| k == "c") {
        // NumPy complex scalars.
        let z: (f64, f64) = (obj.getattr("real").ok()?.extract().ok()?, obj.getattr("imag").ok()?.extract().ok()?);
        Some(Scalar::Complex(ember_core::dtype::CDouble::new(z.0, z.1)))
    } else {
        // NumPy scalars and other numbers.
        let float = obj.extract::<f64>().ok()?;
        let as_int = obj.getattr("dtype").and_then(|d| d.getattr("kind")).and_then(|k| k.extract::<String>()).ok();
        match as_int.as_deref() {
            Some("i") | Some("u") => obj.extract::<i64>().ok().map(Scalar::Int),
            Some("b") => obj.extract::<bool>().ok().map(Scalar::Bool),
            _ => Some(Scalar::Float(float)),
        }
    }
}

pub fn arg(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Arg> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(Arg::Tensor(t.borrow().t.clone()));
    }
    scalar(obj).map(Arg::Scalar).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "{name}: expected a Tensor or a number, but got {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })
}

/// A shape given as ints or as one sequence: `(2, 3)`, `[2, 3]`, `ember.Size`.
pub fn shape_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<i64>> {
    if let Ok(n) = obj.extract::<i64>() {
        return Ok(vec![n]);
    }
    let seq = obj.cast::<PySequence>().map_err(|_| {
        PyTypeError::new_err(format!("{what}: expected a sequence of ints, got {}", obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()))
    })?;
    (0..seq.len()?)
        .map(|i| {
            let item = seq.get_item(i)?;
            if item.is_instance_of::<PyFloat>() {
                return Err(PyTypeError::new_err(format!("{what}: expected a sequence of ints, but element {i} is a float ({item})")));
            }
            item.extract::<i64>().map_err(|_| PyTypeError::new_err(format!("{what}: expected a sequence of ints, but element {i} is {item}")))
        })
        .collect()
}

/// Non-negative sizes for creation ops.
pub fn sizes(dims: &[i64]) -> PyResult<Vec<usize>> {
    dims.iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                pyo3::exceptions::PyRuntimeError::new_err(format!("Trying to create tensor with negative dimension {d}: {dims:?}"))
            })
        })
        .collect()
}
