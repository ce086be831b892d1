//! DLPack exchange (the v0.8 ABI, capsules named "dltensor").
//!
//! Export: `Tensor.__dlpack__` hands out a capsule whose `DLManagedTensor` owns a clone of the
//! tensor, so the storage lives until the consumer calls the deleter (or until the capsule is
//! collected unconsumed). Import: `from_dlpack` wraps the producer's memory as foreign storage,
//! renames the capsule "used_dltensor" and calls the producer's deleter exactly once, when the
//! last tensor on that storage dies.
use crate::errors::IntoPyResult;
use crate::tensor::PyTensor;
use ember_core::storage::{CpuStorage, Storage};
use ember_core::{DType, Layout, Tensor};
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::ffi::{c_void, CStr};
use std::sync::Arc;

const CAPSULE_NAME: &CStr = c"dltensor";
const USED_CAPSULE_NAME: &CStr = c"used_dltensor";
const KDL_CPU: i32 = 1;

const KDL_INT: u8 = 0;
const KDL_UINT: u8 = 1;
const KDL_FLOAT: u8 = 2;
const KDL_BFLOAT: u8 = 4;
const KDL_COMPLEX: u8 = 5;
const KDL_BOOL: u8 = 6;

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

fn dl_dtype(d: DType) -> DLDataType {
    let code = match d {
        DType::Bool => KDL_BOOL,
        DType::U8 => KDL_UINT,
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => KDL_INT,
        DType::F16 | DType::F32 | DType::F64 => KDL_FLOAT,
        DType::BF16 => KDL_BFLOAT,
        DType::C32 | DType::C64 | DType::C128 => KDL_COMPLEX,
    };
    DLDataType { code, bits: (d.size() * 8) as u8, lanes: 1 }
}

fn ember_dtype(d: DLDataType) -> Option<DType> {
    if d.lanes != 1 {
        return None;
    }
    Some(match (d.code, d.bits) {
        (KDL_BOOL, 8) => DType::Bool,
        (KDL_UINT, 8) => DType::U8,
        (KDL_INT, 8) => DType::I8,
        (KDL_INT, 16) => DType::I16,
        (KDL_INT, 32) => DType::I32,
        (KDL_INT, 64) => DType::I64,
        (KDL_FLOAT, 16) => DType::F16,
        (KDL_FLOAT, 32) => DType::F32,
        (KDL_FLOAT, 64) => DType::F64,
        (KDL_BFLOAT, 16) => DType::BF16,
        (KDL_COMPLEX, 32) => DType::C32,
        (KDL_COMPLEX, 64) => DType::C64,
        (KDL_COMPLEX, 128) => DType::C128,
        _ => return None,
    })
}

fn dtype_code_name(code: u8) -> &'static str {
    match code {
        KDL_INT => "int",
        KDL_UINT => "uint",
        KDL_FLOAT => "float",
        KDL_BFLOAT => "bfloat",
        KDL_COMPLEX => "complex",
        KDL_BOOL => "bool",
        _ => "unknown",
    }
}

fn device_type_name(device_type: i32) -> &'static str {
    match device_type {
        1 => "cpu",
        2 => "cuda",
        3 => "cuda_host",
        4 => "opencl",
        7 => "vulkan",
        8 => "metal",
        9 => "vpi",
        10 => "rocm",
        11 => "rocm_host",
        12 => "ext_dev",
        13 => "cuda_managed",
        14 => "oneapi",
        15 => "webgpu",
        16 => "hexagon",
        _ => "unknown",
    }
}

fn check_cpu(device: DLDevice) -> PyResult<()> {
    if device.device_type == KDL_CPU {
        return Ok(());
    }
    Err(PyRuntimeError::new_err(format!(
        "from_dlpack: Ember tensors live on the CPU (DLPack device type {KDL_CPU}), but the given tensor is on {} \
         (device type {}, id {}); copy it to the CPU first",
        device_type_name(device.device_type),
        device.device_type,
        device.device_id
    )))
}

// ---- export ----

/// What an exported capsule owns: the tensor (hence its storage) and the shape and strides arrays
/// its `DLTensor` points into.
struct Export {
    managed: DLManagedTensor,
    _tensor: Tensor,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

fn export(t: Tensor) -> *mut DLManagedTensor {
    let dl_tensor = DLTensor {
        data: t.byte_ptr() as *mut c_void,
        device: DLDevice { device_type: KDL_CPU, device_id: 0 },
        ndim: t.ndim() as i32,
        dtype: dl_dtype(t.dtype()),
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let managed = DLManagedTensor { dl_tensor, manager_ctx: std::ptr::null_mut(), deleter: Some(delete_export) };
    let shape = t.shape().iter().map(|&d| d as i64).collect();
    let strides = t.strides().iter().map(|&s| s as i64).collect();
    let raw = Box::into_raw(Box::new(Export { managed, _tensor: t, shape, strides }));
    unsafe {
        let e = &mut *raw;
        e.managed.dl_tensor.shape = e.shape.as_mut_ptr();
        e.managed.dl_tensor.strides = e.strides.as_mut_ptr();
        e.managed.manager_ctx = raw as *mut c_void;
        &mut e.managed
    }
}

/// Consumers may call this from any thread, with or without the GIL. The tensor may own a Python
/// object (a NumPy array under `from_numpy`), so it is dropped holding the GIL: the object is
/// released at once, not at pyo3's next call. After interpreter shutdown it is leaked.
unsafe extern "C" fn delete_export(managed: *mut DLManagedTensor) {
    let export = Box::from_raw((*managed).manager_ctx as *mut Export);
    if ffi::Py_IsInitialized() != 0 {
        Python::attach(|_| drop(export));
    } else {
        std::mem::forget(export);
    }
}

unsafe fn call_deleter(managed: *mut DLManagedTensor) {
    if let Some(deleter) = (*managed).deleter {
        deleter(managed)
    }
}

/// Frees a capsule that no consumer renamed: it still owns its tensor.
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    if ffi::PyCapsule_IsValid(capsule, CAPSULE_NAME.as_ptr()) == 1 {
        call_deleter(ffi::PyCapsule_GetPointer(capsule, CAPSULE_NAME.as_ptr()) as *mut DLManagedTensor);
    }
}

fn check_export_args(stream: Option<&Bound<'_, PyAny>>, dl_device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    if let Some(s) = stream {
        return Err(PyValueError::new_err(format!("__dlpack__: stream must be None for a CPU tensor, got {s}")));
    }
    if let Some(d) = dl_device {
        if d.extract::<(i32, i32)>().ok() != Some((KDL_CPU, 0)) {
            return Err(PyBufferError::new_err(format!(
                "__dlpack__: dl_device must be ({KDL_CPU}, 0) (the CPU), the only device an Ember tensor can be exported to; got {d}"
            )));
        }
    }
    Ok(())
}

#[pymethods]
impl PyTensor {
    /// A DLPack capsule ("dltensor", v0.8 ABI) sharing this tensor's memory; `copy=True` exports a
    /// fresh copy. A legacy capsule answers any `max_version`, as the protocol allows.
    #[pyo3(signature = (stream=None, *, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<&Bound<'py, PyAny>>,
        dl_device: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = max_version;
        check_export_args(stream, dl_device)?;
        if self.t.device() != ember_core::Device::Cpu {
            return Err(PyRuntimeError::new_err(format!(
                "__dlpack__: exporting a {} tensor is not supported yet; call .cpu() first",
                self.t.device()
            )));
        }
        let t = if copy == Some(true) { self.t.deep_clone().py()? } else { self.t.clone() };
        let managed = export(t);
        unsafe {
            let capsule = ffi::PyCapsule_New(managed as *mut c_void, CAPSULE_NAME.as_ptr(), Some(capsule_destructor));
            if capsule.is_null() {
                delete_export(managed);
            }
            Bound::from_owned_ptr_or_err(py, capsule)
        }
    }

    /// `(device_type, device_id)` as DLPack numbers them: `(1, 0)`, the CPU.
    fn __dlpack_device__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, [KDL_CPU, 0])
    }
}

// ---- import ----

/// Calls the producer's deleter when the storage wrapping its memory is dropped.
struct ProducerTensor(*mut DLManagedTensor);

// DLPack requires deleters to be callable from any thread.
unsafe impl Send for ProducerTensor {}
unsafe impl Sync for ProducerTensor {}

impl Drop for ProducerTensor {
    fn drop(&mut self) {
        unsafe { call_deleter(self.0) }
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
}

fn capsule_name(capsule: &Bound<'_, PyAny>) -> String {
    let name = unsafe { ffi::PyCapsule_GetName(capsule.as_ptr()) };
    if name.is_null() {
        return "<unnamed>".to_string();
    }
    unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
}

/// The managed tensor inside an unconsumed "dltensor" capsule.
fn managed_tensor(capsule: &Bound<'_, PyAny>) -> PyResult<*mut DLManagedTensor> {
    let ptr = capsule.as_ptr();
    if unsafe { ffi::PyCapsule_CheckExact(ptr) } == 0 {
        return Err(PyTypeError::new_err(format!(
            "from_dlpack: expected an object with __dlpack__ (NumPy array, PyTorch/JAX/CuPy tensor) or a DLPack capsule, got {}",
            type_name(capsule)
        )));
    }
    if unsafe { ffi::PyCapsule_IsValid(ptr, CAPSULE_NAME.as_ptr()) } == 1 {
        return Ok(unsafe { ffi::PyCapsule_GetPointer(ptr, CAPSULE_NAME.as_ptr()) } as *mut DLManagedTensor);
    }
    let name = capsule_name(capsule);
    if name == USED_CAPSULE_NAME.to_str().unwrap() {
        return Err(PyRuntimeError::new_err(
            "from_dlpack: this DLPack capsule was already consumed (it is named 'used_dltensor'); a capsule can be consumed only once",
        ));
    }
    Err(PyTypeError::new_err(format!("from_dlpack: expected a capsule named 'dltensor' (DLPack v0.8), got one named '{name}'")))
}

fn read_dims(ptr: *const i64, ndim: usize, what: &str) -> PyResult<Vec<i64>> {
    if ndim == 0 {
        return Ok(Vec::new());
    }
    if ptr.is_null() {
        return Err(PyValueError::new_err(format!("from_dlpack: the DLTensor's {what} pointer is NULL for a {ndim}-d tensor")));
    }
    Ok(unsafe { std::slice::from_raw_parts(ptr, ndim) }.to_vec())
}

/// Shape, strides (in elements) and dtype of a CPU `DLTensor`, refused when Ember cannot hold it.
fn describe(dl: &DLTensor) -> PyResult<(Vec<usize>, Vec<isize>, DType)> {
    check_cpu(dl.device)?;
    let dtype = ember_dtype(dl.dtype).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "from_dlpack: unsupported DLPack dtype (code {} ({}), bits {}, lanes {}); Ember supports bool, uint8, \
             int8, int16, int32, int64, float16, bfloat16, float32 and float64",
            dl.dtype.code,
            dtype_code_name(dl.dtype.code),
            dl.dtype.bits,
            dl.dtype.lanes
        ))
    })?;
    let ndim = usize::try_from(dl.ndim).map_err(|_| PyValueError::new_err(format!("from_dlpack: ndim must be >= 0, got {}", dl.ndim)))?;
    let shape = read_dims(dl.shape, ndim, "shape")?
        .into_iter()
        .map(|d| usize::try_from(d).map_err(|_| PyValueError::new_err(format!("from_dlpack: shape entries must be >= 0, got {d}"))))
        .collect::<PyResult<Vec<_>>>()?;
    let strides = if dl.strides.is_null() {
        ember_core::layout::contiguous_strides(&shape)
    } else {
        read_dims(dl.strides, ndim, "strides")?.into_iter().map(|s| s as isize).collect()
    };
    Ok((shape, strides, dtype))
}

/// A tensor on the producer's memory; the storage's owner calls the producer's deleter.
///
/// # Safety
/// `managed` must point to a live `DLManagedTensor` that nothing else will free.
unsafe fn wrap_managed(managed: *mut DLManagedTensor, shape: Vec<usize>, strides: Vec<isize>, dtype: DType) -> PyResult<Tensor> {
    let dl = &(*managed).dl_tensor;
    let item = dtype.size();
    let first = (dl.data as *mut u8).wrapping_add(dl.byte_offset as usize);
    let (low, high) = Layout::new(shape.clone(), strides.clone(), 0).span().map_err(crate::errors::to_py)?;
    let numel: usize = shape.iter().product();
    if numel > 0 && first.align_offset(item) != 0 {
        return Err(PyValueError::new_err(format!(
            "from_dlpack: the data pointer {first:p} is not aligned to the element size ({item} bytes) of {dtype}"
        )));
    }
    let base = first.wrapping_offset(low * item as isize);
    let nbytes = if numel == 0 { 0 } else { (high - low) as usize * item };
    let storage = CpuStorage::from_foreign(base, nbytes, Box::new(ProducerTensor(managed)));
    let layout = Layout::new(shape, strides, (-low) as usize);
    Ok(Tensor::from_parts(Arc::new(Storage::Cpu(storage)), layout, dtype))
}

fn from_capsule(capsule: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let managed = managed_tensor(capsule)?;
    let (shape, strides, dtype) = describe(unsafe { &(*managed).dl_tensor })?;
    if unsafe { ffi::PyCapsule_SetName(capsule.as_ptr(), USED_CAPSULE_NAME.as_ptr()) } != 0 {
        return Err(PyErr::fetch(capsule.py()));
    }
    unsafe { wrap_managed(managed, shape, strides, dtype) }
}

/// Refuses a producer that says it is not on the CPU before asking it for a capsule.
fn check_producer_device(obj: &Bound<'_, PyAny>) -> PyResult<()> {
    if !obj.hasattr("__dlpack_device__")? {
        return Ok(());
    }
    let device = obj.call_method0("__dlpack_device__")?;
    let (device_type, device_id) = device.extract::<(i32, i32)>().map_err(|_| {
        PyTypeError::new_err(format!("from_dlpack: __dlpack_device__() must return (device_type, device_id) ints, got {device}"))
    })?;
    check_cpu(DLDevice { device_type, device_id })
}

/// `ember.from_dlpack(ext_tensor)`: a tensor sharing the memory of any object with `__dlpack__`
/// (NumPy arrays, PyTorch/JAX/CuPy CPU tensors) or of a raw "dltensor" capsule. Zero-copy: writes
/// through either side are seen by both. Non-CPU tensors and dtypes Ember lacks are refused.
#[pyfunction]
fn from_dlpack(ext_tensor: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let tensor = if ext_tensor.hasattr("__dlpack__")? {
        check_producer_device(ext_tensor)?;
        from_capsule(&ext_tensor.call_method0("__dlpack__")?)?
    } else {
        from_capsule(ext_tensor)?
    };
    Ok(PyTensor::new(tensor))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)
}
