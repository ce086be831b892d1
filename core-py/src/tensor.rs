//! `ember._C.Tensor`: the handle Python holds. Operators live here so `a + b` costs one call;
//! the rest of the PyTorch method surface is added by the `ember` package in Python.
use crate::convert::{arg, shape_arg, Arg, PyDType};
use crate::errors::IntoPyResult;
use ember_core::ops::binary::{binary, binary_out, BinaryOp, Operand};
use ember_core::ops::unary::{unary, UnaryOp};
use ember_core::{DType, Tensor};
use pyo3::basic::CompareOp;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

#[pyclass(name = "Tensor", module = "ember", subclass, weakref, dict)]
pub struct PyTensor {
    pub t: Tensor,
}

impl PyTensor {
    pub fn new(t: Tensor) -> Self {
        PyTensor { t }
    }
}

/// Runs `f` without the GIL when the work is big enough to be worth the hand-off.
pub fn nogil<T: Send>(py: Python<'_>, numel: usize, f: impl FnOnce() -> T + Send) -> T {
    if numel >= 16 * 1024 {
        py.detach(f)
    } else {
        f()
    }
}

fn bin(py: Python<'_>, op: BinaryOp, a: &Tensor, other: &Bound<'_, PyAny>, reflected: bool) -> PyResult<Py<PyAny>> {
    let other = match arg(other, "other") {
        Ok(o) => o,
        Err(_) => return Ok(py.NotImplemented()),
    };
    let n = a.numel();
    let r = nogil(py, n, || match (&other, reflected) {
        (o, false) => binary(op, Operand::Tensor(a), o.operand()),
        (o, true) => binary(op, o.operand(), Operand::Tensor(a)),
    })
    .py()?;
    Ok(Py::new(py, PyTensor::new(r))?.into_any())
}

fn ibin(py: Python<'_>, op: BinaryOp, slf: &Bound<'_, PyTensor>, other: &Bound<'_, PyAny>) -> PyResult<()> {
    let a = slf.borrow().t.clone();
    let other = arg(other, "other")?;
    nogil(py, a.numel(), || binary_out(op, Operand::Tensor(&a), other.operand(), &a)).py()
}

macro_rules! binops {
    ($($name:ident, $rname:ident, $iname:ident => $op:ident;)*) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                    bin(py, BinaryOp::$op, &self.t, other, false)
                }
                fn $rname(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
                    bin(py, BinaryOp::$op, &self.t, other, true)
                }
                fn $iname(slf: &Bound<'_, Self>, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
                    ibin(py, BinaryOp::$op, slf, other)
                }
            )*
        }
    };
}

binops! {
    __add__, __radd__, __iadd__ => Add;
    __sub__, __rsub__, __isub__ => Sub;
    __mul__, __rmul__, __imul__ => Mul;
    __truediv__, __rtruediv__, __itruediv__ => Div;
    __floordiv__, __rfloordiv__, __ifloordiv__ => FloorDiv;
    __mod__, __rmod__, __imod__ => Remainder;
    __and__, __rand__, __iand__ => BitwiseAnd;
    __or__, __ror__, __ior__ => BitwiseOr;
    __xor__, __rxor__, __ixor__ => BitwiseXor;
    __lshift__, __rlshift__, __ilshift__ => LeftShift;
    __rshift__, __rrshift__, __irshift__ => RightShift;
}

#[pymethods]
impl PyTensor {
    /// `Tensor(data, requires_grad=False)`: an alias of `data` (same storage and version
    /// counter, no history) as an instance of the class called, so Python subclasses such as
    /// `nn.Parameter` wrap an existing tensor (PyTorch's `Tensor._make_subclass`).
    #[new]
    #[pyo3(signature = (data, requires_grad=false))]
    fn py_new(data: PyRef<'_, PyTensor>, requires_grad: bool) -> PyResult<Self> {
        let t = data.t.detach();
        t.set_requires_grad(requires_grad).py()?;
        Ok(PyTensor::new(t))
    }
    fn __pow__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, _modulo: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        bin(py, BinaryOp::Pow, &self.t, other, false)
    }
    fn __rpow__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, _modulo: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        bin(py, BinaryOp::Pow, &self.t, other, true)
    }
    fn __ipow__(slf: &Bound<'_, Self>, py: Python<'_>, other: &Bound<'_, PyAny>, _modulo: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        ibin(py, BinaryOp::Pow, slf, other)
    }

    fn __richcmp__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let op = match op {
            CompareOp::Lt => BinaryOp::Lt,
            CompareOp::Le => BinaryOp::Le,
            CompareOp::Eq => BinaryOp::Eq,
            CompareOp::Ne => BinaryOp::Ne,
            CompareOp::Gt => BinaryOp::Gt,
            CompareOp::Ge => BinaryOp::Ge,
        };
        bin(py, op, &self.t, other, false)
    }

    fn __neg__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        Ok(PyTensor::new(nogil(py, self.t.numel(), || unary(UnaryOp::Neg, &self.t)).py()?))
    }
    fn __pos__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __abs__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        Ok(PyTensor::new(nogil(py, self.t.numel(), || unary(UnaryOp::Abs, &self.t)).py()?))
    }
    fn __invert__(&self) -> PyResult<PyTensor> {
        let op = if self.t.dtype() == DType::Bool { UnaryOp::LogicalNot } else { UnaryOp::BitwiseNot };
        Ok(PyTensor::new(unary(op, &self.t).py()?))
    }

    fn __matmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(o) = other.cast::<PyTensor>() else { return Ok(py.NotImplemented()) };
        let b = o.borrow().t.clone();
        let r = py.detach(|| ember_core::ops::matmul::matmul(&self.t, &b)).py()?;
        Ok(Py::new(py, PyTensor::new(r))?.into_any())
    }
    fn __rmatmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(o) = other.cast::<PyTensor>() else { return Ok(py.NotImplemented()) };
        let a = o.borrow().t.clone();
        let r = py.detach(|| ember_core::ops::matmul::matmul(&a, &self.t)).py()?;
        Ok(Py::new(py, PyTensor::new(r))?.into_any())
    }

    fn __len__(&self) -> PyResult<usize> {
        self.t.shape().first().copied().ok_or_else(|| PyTypeError::new_err("len() of a 0-d tensor"))
    }

    fn __bool__(&self) -> PyResult<bool> {
        match self.t.numel() {
            1 => Ok(self.t.item_f64().py()? != 0.0),
            0 => Err(PyRuntimeError::new_err("Boolean value of Tensor with no values is ambiguous")),
            _ => Err(PyRuntimeError::new_err("Boolean value of Tensor with more than one value is ambiguous")),
        }
    }

    // ---- metadata ----

    #[getter]
    fn dtype(&self) -> PyDType {
        PyDType(self.t.dtype())
    }
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let dims = PyTuple::new(py, self.t.shape())?;
        py.import("ember")?.getattr("Size")?.call1((dims,))
    }
    #[getter]
    fn ndim(&self) -> usize {
        self.t.ndim()
    }
    #[getter]
    fn device<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("ember")?.getattr("device")?.call1((self.t.device().to_string(),))
    }
    #[getter]
    fn is_cuda(&self) -> bool {
        matches!(self.t.device(), ember_core::Device::Cuda(_))
    }
    fn dim(&self) -> usize {
        self.t.ndim()
    }
    fn numel(&self) -> usize {
        self.t.numel()
    }
    fn element_size(&self) -> usize {
        self.t.dtype().size()
    }
    fn is_contiguous(&self) -> bool {
        self.t.is_contiguous()
    }
    fn is_floating_point(&self) -> bool {
        self.t.dtype().is_float()
    }
    fn storage_offset(&self) -> usize {
        self.t.layout().offset()
    }
    #[pyo3(signature = (dim=None))]
    fn stride<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<Bound<'py, PyAny>> {
        match dim {
            Some(d) => Ok(self.t.strides()[self.t.wrap_dim(d).py()?].into_pyobject(py)?.into_any()),
            None => Ok(PyTuple::new(py, self.t.strides())?.into_any()),
        }
    }
    fn data_ptr(&self) -> usize {
        self.t.byte_ptr() as usize
    }
    #[getter]
    fn _version(&self) -> u64 {
        self.t.version()
    }

    /// The value of a one-element tensor as a Python number.
    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.t.dtype().is_complex() {
            let z = self.t.item_c128().py()?;
            return Ok(pyo3::types::PyComplex::from_doubles(py, z.re, z.im).into_any().unbind());
        }
        let v = self.t.item_f64().py()?;
        Ok(match self.t.dtype() {
            DType::Bool => (v != 0.0).into_pyobject(py)?.to_owned().into_any().unbind(),
            d if d.is_float() => v.into_pyobject(py)?.into_any().unbind(),
            _ => {
                let host = self.t.to_device(ember_core::Device::Cpu).py()?;
                let i: i64 = ember_core::with_dtype!(host.dtype(), T, unsafe { ember_core::Element::to_i64(*host.data_ptr::<T>()) });
                i.into_pyobject(py)?.into_any().unbind()
            }
        })
    }

    /// NumPy's array interface: `numpy.asarray(t)` shares this tensor's memory.
    #[getter]
    fn __array_interface__<'py>(slf: &Bound<'py, Self>, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = slf.borrow().t.clone();
        if t.device() != ember_core::Device::Cpu {
            return Err(PyTypeError::new_err(format!(
                "can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
                t.device()
            )));
        }
        let typestr = match t.dtype() {
            DType::Bool => "|b1",
            DType::U8 => "|u1",
            DType::I8 => "|i1",
            DType::I16 => "<i2",
            DType::I32 => "<i4",
            DType::I64 => "<i8",
            DType::F16 => "<f2",
            DType::F32 => "<f4",
            DType::F64 => "<f8",
            DType::BF16 => return Err(PyTypeError::new_err("Got unsupported ScalarType BFloat16: NumPy has no bfloat16; convert with .float() first")),
            DType::C64 => "<c8",
            DType::C128 => "<c16",
            DType::C32 => return Err(PyTypeError::new_err("Got unsupported ScalarType ComplexHalf")),
        };
        let d = PyDict::new(py);
        let itemsize = t.dtype().size() as isize;
        d.set_item("version", 3)?;
        d.set_item("shape", PyTuple::new(py, t.shape())?)?;
        d.set_item("strides", PyTuple::new(py, t.strides().iter().map(|s| s * itemsize))?)?;
        d.set_item("typestr", typestr)?;
        d.set_item("data", (t.byte_ptr() as usize, false))?;
        Ok(d)
    }

    // ---- views (no copies) ----

    /// `view(*shape)`, or `view(dtype)`: the same bytes read as another dtype.
    #[pyo3(signature = (*shape, dtype=None))]
    fn view(&self, shape: &Bound<'_, PyTuple>, dtype: Option<PyDType>) -> PyResult<PyTensor> {
        let positional_dtype = match shape.len() {
            1 => shape.get_item(0)?.cast::<PyDType>().ok().map(|d| d.get().0),
            _ => None,
        };
        match (positional_dtype, dtype) {
            (Some(d), None) => Ok(PyTensor::new(self.t.view_dtype(d).py()?)),
            (None, Some(d)) if shape.is_empty() => Ok(PyTensor::new(self.t.view_dtype(d.0).py()?)),
            (None, None) => Ok(PyTensor::new(self.t.view(&varargs_shape(shape)?).py()?)),
            _ => Err(PyTypeError::new_err("view() takes either a shape or a dtype, not both")),
        }
    }
    #[pyo3(signature = (*shape))]
    fn reshape(&self, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(PyTensor::new(self.t.reshape(&varargs_shape(shape)?).py()?))
    }
    #[pyo3(signature = (*dims))]
    fn permute(&self, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(PyTensor::new(self.t.permute(&varargs_shape(dims)?).py()?))
    }
    #[pyo3(signature = (*sizes))]
    fn expand(&self, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        Ok(PyTensor::new(self.t.expand(&varargs_shape(sizes)?).py()?))
    }
    fn transpose(&self, dim0: i64, dim1: i64) -> PyResult<PyTensor> {
        Ok(PyTensor::new(self.t.transpose(dim0, dim1).py()?))
    }
    fn t(&self) -> PyResult<PyTensor> {
        Ok(PyTensor::new(self.t.t().py()?))
    }
    fn narrow(&self, dim: i64, start: i64, length: i64) -> PyResult<PyTensor> {
        Ok(PyTensor::new(self.t.narrow(dim, start, length).py()?))
    }
    fn select(&self, dim: i64, index: i64) -> PyResult<PyTensor> {
        Ok(PyTensor::new(self.t.select(dim, index).py()?))
    }
    #[pyo3(signature = (dim, start=None, stop=None, step=1))]
    fn _slice(&self, dim: i64, start: Option<i64>, stop: Option<i64>, step: i64) -> PyResult<PyTensor> {
        Ok(PyTensor::new(self.t.slice(dim, start, stop, step).py()?))
    }
    fn unsqueeze(&self, dim: i64) -> PyResult<PyTensor> {
        Ok(PyTensor::new(self.t.unsqueeze(dim).py()?))
    }
    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        let dims = dim.map(|d| shape_arg(d, "squeeze(): dim")).transpose()?;
        Ok(PyTensor::new(self.t.squeeze(dims.as_deref()).py()?))
    }
    fn flip(&self, dims: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(PyTensor::new(self.t.flip(&shape_arg(dims, "flip(): dims")?).py()?))
    }
    #[pyo3(signature = (offset=0, dim1=0, dim2=1))]
    fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> PyResult<PyTensor> {
        Ok(PyTensor::new(self.t.diagonal(offset, dim1, dim2).py()?))
    }
    fn unfold(&self, dimension: i64, size: i64, step: i64) -> PyResult<PyTensor> {
        if size < 0 || step <= 0 {
            return Err(PyRuntimeError::new_err(format!("unfold: size must be >= 0 and step > 0, got size={size}, step={step}")));
        }
        Ok(PyTensor::new(self.t.unfold(dimension, size as usize, step as usize).py()?))
    }
    #[pyo3(signature = (size, stride, storage_offset=None))]
    fn as_strided(&self, size: &Bound<'_, PyAny>, stride: &Bound<'_, PyAny>, storage_offset: Option<i64>) -> PyResult<PyTensor> {
        let size = crate::convert::sizes(&shape_arg(size, "as_strided(): size")?)?;
        let stride: Vec<isize> = shape_arg(stride, "as_strided(): stride")?.iter().map(|&s| s as isize).collect();
        let offset = storage_offset.map(|o| usize::try_from(o).map_err(|_| PyRuntimeError::new_err(format!("Tensor: invalid storage offset {o}")))).transpose()?;
        Ok(PyTensor::new(self.t.as_strided(&size, &stride, offset).py()?))
    }
    fn broadcast_to(&self, shape: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        Ok(PyTensor::new(self.t.expand(&shape_arg(shape, "broadcast_to(): shape")?).py()?))
    }
    fn contiguous(&self, py: Python<'_>) -> PyResult<PyTensor> {
        Ok(PyTensor::new(nogil(py, self.t.numel(), || self.t.contiguous()).py()?))
    }
    fn clone(&self, py: Python<'_>) -> PyResult<PyTensor> {
        Ok(PyTensor::new(nogil(py, self.t.numel(), || self.t.deep_clone()).py()?))
    }
    /// This tensor on `device` (a device string): itself when it is there, else a copy.
    fn _to_device(&self, py: Python<'_>, device: &str) -> PyResult<PyTensor> {
        let device = ember_core::Device::parse(device).py()?;
        Ok(PyTensor::new(nogil(py, self.t.numel(), || self.t.to_device(device)).py()?))
    }
    fn _to_dtype(&self, py: Python<'_>, dtype: PyDType) -> PyResult<PyTensor> {
        Ok(PyTensor::new(nogil(py, self.t.numel(), || self.t.to_dtype(dtype.0)).py()?))
    }
    /// Copies `src` (broadcast and cast) into this tensor, in place.
    fn copy_(slf: Py<Self>, py: Python<'_>, src: &Bound<'_, PyAny>) -> PyResult<Py<Self>> {
        let dst = slf.borrow(py).t.clone();
        let src = match arg(src, "copy_(): src")? {
            Arg::Tensor(t) => t,
            Arg::Scalar(s) => s.to_tensor_checked(dst.dtype()).py()?,
        };
        nogil(py, dst.numel(), || dst.copy_(&src)).py()?;
        Ok(slf)
    }
    fn _same_storage(&self, other: &PyTensor) -> bool {
        self.t.same_storage(&other.t)
    }
}

/// `view(2, 3)` and `view((2, 3))` both mean shape (2, 3).
pub fn varargs_shape(args: &Bound<'_, PyTuple>) -> PyResult<Vec<i64>> {
    if args.len() == 1 {
        let first = args.get_item(0)?;
        if first.extract::<i64>().is_err() {
            return shape_arg(&first, "shape");
        }
    }
    shape_arg(args.as_any(), "shape")
}
