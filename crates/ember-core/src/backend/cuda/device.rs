//! One CUDA device: its context, its stream, its memory, its compiled kernels, and the
//! `Backend` impl that the op families' files (copy.rs, fill.rs, ...) serve.
//!
//! Every op runs on the device's default stream, in order, as PyTorch's do unless a script
//! picks another stream; so cudarc's per-buffer event tracking (for several streams) is off and
//! kernels take raw device pointers.
use super::libs::{self, Lib};
use super::nvrtc;
use super::Family;
use crate::backend::Backend;
use crate::bail;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::ops::binary::{BinaryOp, Operand, Scalar};
use crate::ops::conv::Geom;
use crate::ops::reduce::ReduceOp;
use crate::ops::embedding::BagMode;
use crate::ops::index::{IndexShape, Reduce};
use crate::ops::random::Distribution;
use crate::ops::pool::{Axis, Divisor};
use crate::ops::resize::Taps;
use crate::ops::unary::UnaryOp;
use crate::storage::Storage;
use crate::tensor::Tensor;
use cudarc::driver::{result, sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DriverError, LaunchConfig};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// CUDA device memory, freed in stream order when the last tensor using it goes.
pub struct CudaStorage {
    /// Owns the allocation, which its Drop frees (stream-ordered: `cuMemAllocAsync` /
    /// `cuMemFreeAsync` where the device has memory pools, which every CUDA 12 device does).
    memory: CudaSlice<u8>,
    /// `memory`'s address, which kernels take.
    ptr: sys::CUdeviceptr,
    bytes: usize,
    index: usize,
    /// The device's counters, which the free counts down.
    stats: Arc<MemoryStats>,
}

impl Drop for CudaStorage {
    /// The last tensor may go on any thread: the free needs the device's context there.
    fn drop(&mut self) {
        let _ = self.memory.context().bind_to_thread();
        self.stats.allocated.fetch_sub(self.memory.len(), Ordering::Relaxed);
    }
}

/// Bytes the device's tensors hold now, and the most they have held since the last reset
/// (`ember.cuda.memory_allocated` / `max_memory_allocated`).
#[derive(Default)]
pub struct MemoryStats {
    pub(super) allocated: AtomicUsize,
    pub(super) peak: AtomicUsize,
}

impl CudaStorage {
    /// The device the memory lives on.
    pub fn device(&self) -> Device {
        Device::Cuda(self.index)
    }
    /// The allocation's size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

pub struct Cuda {
    pub(super) index: usize,
    pub(super) ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    pub(super) stats: Arc<MemoryStats>,
    /// Compute capability as NVRTC names it: 90 for `sm_90`.
    arch: u32,
    sm_count: u32,
    /// Loaded modules by family name, and functions by kernel name.
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    functions: Mutex<HashMap<String, CudaFunction>>,
    /// The cuBLAS handle, made on the first matrix product.
    pub(super) blas: OnceLock<Result<cudarc::cublas::CudaBlas>>,
    /// The cuDNN handle, made on the first convolution.
    pub(super) dnn: OnceLock<Result<super::dnn::Handle>>,
}

/// A CUDA error as a RuntimeError naming the call and CUDA's own name and message for it.
pub fn cuda_error(call: &str, e: DriverError) -> Error {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", e.0));
    let text = e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    Error::new(ErrorKind::Runtime, format!("CUDA error: {call} failed: {name} ({text})"))
}

/// Runs a first call into the driver, turning a panic of cudarc's loader (a symbol this driver
/// lacks) into an error.
fn guarded<T>(call: &str, f: impl FnOnce() -> std::result::Result<T, DriverError>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(|e| cuda_error(call, e)),
        Err(panic) => {
            let why = panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
            bail!(Runtime, "CUDA error: {call} failed: {}", why.unwrap_or_else(|| "the driver library could not be used".into()))
        }
    }
}

/// How many devices the driver reports, or why CUDA cannot be used here.
fn probe_devices() -> &'static Result<usize> {
    static COUNT: OnceLock<Result<usize>> = OnceLock::new();
    COUNT.get_or_init(|| {
        libs::require(Lib::Driver)?;
        match guarded("cuInit", result::init) {
            Err(e) if e.message.contains("CUDA_ERROR_NO_DEVICE") => return Ok(0),
            other => other?,
        }
        Ok(guarded("cuDeviceGetCount", result::device::get_count)? as usize)
    })
}

/// `ember.cuda.device_count()`: 0 where CUDA cannot be used, never an error.
pub fn device_count() -> usize {
    probe_devices().as_ref().map_or(0, |&n| n)
}

/// The backend of `cuda:<index>`, created on first use.
pub fn backend(index: usize) -> Result<&'static dyn Backend> {
    Ok(device(index)?)
}

/// The device `cuda:<index>`, set up on first use.
pub(super) fn device(index: usize) -> Result<&'static Cuda> {
    static DEVICES: OnceLock<Vec<OnceLock<Result<Cuda>>>> = OnceLock::new();
    let count = match probe_devices() {
        Ok(0) => bail!(Runtime, "device cuda:{index} is not available: No CUDA GPUs are available"),
        Ok(n) => *n,
        Err(e) => bail!(Runtime, "device cuda:{index} is not available: {}", e.message),
    };
    let Some(slot) = DEVICES.get_or_init(|| (0..count).map(|_| OnceLock::new()).collect()).get(index) else {
        bail!(Runtime, "CUDA error: invalid device ordinal (cuda:{index} requested, {count} device(s) available)");
    };
    match slot.get_or_init(|| Cuda::new(index)) {
        Ok(cuda) => Ok(cuda),
        Err(e) => Err(e.clone()),
    }
}

impl Cuda {
    fn new(index: usize) -> Result<Cuda> {
        let ctx = guarded("cuDevicePrimaryCtxRetain", || CudaContext::new(index))?;
        // One stream per device (see the module's doc): no events to record per buffer.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let (major, minor) = ctx.compute_capability().map_err(|e| cuda_error("cuDeviceGetAttribute", e))?;
        let sm_count = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| cuda_error("cuDeviceGetAttribute", e))?;
        let cuda = Cuda {
            index,
            ctx,
            stream,
            stats: Arc::default(),
            arch: (major * 10 + minor) as u32,
            sm_count: sm_count.max(1) as u32,
            modules: Mutex::new(HashMap::new()),
            functions: Mutex::new(HashMap::new()),
            blas: OnceLock::new(),
            dnn: OnceLock::new(),
        };
        super::runtime::keep_freed_memory(&cuda)?;
        Ok(cuda)
    }

    /// Makes the device's context current on the calling thread (ops run on any thread).
    pub(super) fn enter(&self) -> Result<()> {
        self.ctx.bind_to_thread().map_err(|e| cuda_error("cuCtxSetCurrent", e))
    }

    /// The kernel `name` of `family`, compiled and loaded on first use.
    pub(super) fn function(&self, family: &Family, name: &str) -> Result<CudaFunction> {
        let mut functions = self.functions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = functions.get(name) {
            return Ok(f.clone());
        }
        let module = self.module(family)?;
        let f = module.load_function(name).map_err(|e| cuda_error(&format!("cuModuleGetFunction({name})"), e))?;
        functions.insert(name.to_string(), f.clone());
        Ok(f)
    }

    fn module(&self, family: &Family) -> Result<Arc<CudaModule>> {
        let mut modules = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = modules.get(family.name) {
            return Ok(m.clone());
        }
        let cubin = nvrtc::cubin_cached(family, self.arch)?;
        let module = self.ctx.load_module(Ptx::from_binary(cubin)).map_err(|e| cuda_error("cuModuleLoadData", e))?;
        modules.insert(family.name, module.clone());
        Ok(module)
    }

    /// Streaming multiprocessors.
    pub(super) fn sm_count(&self) -> u32 {
        self.sm_count
    }

    pub(super) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// A grid for `n` elements, one per thread; the kernels' loops cover any n, so the grid
    /// stops at enough blocks to fill the device many times over.
    pub(super) fn config(&self, n: usize) -> LaunchConfig {
        const THREADS: u32 = 256;
        let blocks = n.div_ceil(THREADS as usize).min(self.max_blocks()) as u32;
        LaunchConfig { grid_dim: (blocks.max(1), 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 }
    }

    /// The most blocks a grid-stride kernel needs: enough to fill the device many times over.
    pub(super) fn max_blocks(&self) -> usize {
        self.sm_count as usize * 32
    }

    /// How many threads the device runs at once (2048 per SM since Volta, 1536 on some).
    pub(super) fn resident_threads(&self) -> usize {
        self.sm_count as usize * 2048
    }

    /// The address of `t`'s first element on this device.
    pub(super) fn address(&self, t: &Tensor) -> Result<sys::CUdeviceptr> {
        Ok(self.base(t)? + (t.layout().offset() * t.dtype().size()) as u64)
    }

    /// The address of `t`'s memory (kernels add the element offset from `Strided`).
    pub(super) fn base(&self, t: &Tensor) -> Result<sys::CUdeviceptr> {
        match t.storage().as_ref() {
            Storage::Cuda(s) if s.index == self.index => Ok(s.ptr),
            _ => bail!(Runtime, "Expected all tensors to be on the same device, but found at least two devices, cuda:{} and {}!", self.index, t.device()),
        }
    }
}

/// Ember's name for a dtype the kernels take (the suffix of kernel names); complex: none yet.
pub(super) fn dtype_name(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::Bool => "bool",
        DType::U8 => "u8",
        DType::I8 => "i8",
        DType::I16 => "i16",
        DType::I32 => "i32",
        DType::I64 => "i64",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::C32 | DType::C64 | DType::C128 => return None,
    })
}

/// Every dtype the kernels take.
pub(super) const DTYPES: [DType; 10] =
    [DType::Bool, DType::U8, DType::I8, DType::I16, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64];

impl Backend for Cuda {
    fn name(&self) -> &'static str {
        "CUDA"
    }

    fn alloc(&self, _: Device, bytes: usize, zeroed: bool) -> Result<Storage> {
        // One byte at least: a zero-byte request has no address to hand out.
        let len = bytes.max(1);
        let memory = if zeroed { self.stream.alloc_zeros::<u8>(len) } else { unsafe { self.stream.alloc::<u8>(len) } };
        let memory = memory.map_err(|e| match e.0 {
            sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY => Error::new(
                ErrorKind::Runtime,
                format!("CUDA out of memory. Tried to allocate {bytes} bytes on cuda:{} (cuMemAllocAsync)", self.index),
            ),
            _ => cuda_error("cuMemAllocAsync", e),
        })?;
        let ptr = memory.device_ptr(&self.stream).0;
        let held = self.stats.allocated.fetch_add(len, Ordering::Relaxed) + len;
        self.stats.peak.fetch_max(held, Ordering::Relaxed);
        Ok(Storage::Cuda(CudaStorage { memory, ptr, bytes, index: self.index, stats: self.stats.clone() }))
    }

    fn upload(&self, host: &Tensor, dst: &Tensor) -> Result<()> {
        let bytes = dst.numel() * dst.dtype().size();
        let src = unsafe { std::slice::from_raw_parts(host.byte_ptr(), bytes) };
        self.enter()?;
        // From pageable memory the call returns once `src` is staged: it may be freed after.
        unsafe { result::memcpy_htod_async(self.address(dst)?, src, self.stream.cu_stream()) }.map_err(|e| cuda_error("cuMemcpyHtoDAsync", e))
    }

    fn download(&self, src: &Tensor, host: &Tensor) -> Result<()> {
        let bytes = src.numel() * src.dtype().size();
        let dst = unsafe { std::slice::from_raw_parts_mut(host.byte_ptr(), bytes) };
        self.enter()?;
        unsafe { result::memcpy_dtoh_async(dst, self.address(src)?, self.stream.cu_stream()) }.map_err(|e| cuda_error("cuMemcpyDtoHAsync", e))?;
        self.stream.synchronize().map_err(|e| cuda_error("cuStreamSynchronize", e))
    }

    fn copy(&self, src: &Tensor, dst: &Tensor) -> Result<()> {
        if src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous() {
            self.enter()?;
            let bytes = dst.numel() * dst.dtype().size();
            return unsafe { result::memcpy_dtod_async(self.address(dst)?, self.address(src)?, bytes, self.stream.cu_stream()) }
                .map_err(|e| cuda_error("cuMemcpyDtoDAsync", e));
        }
        super::copy::run(self, src, dst)
    }

    fn fill(&self, dst: &Tensor, value: Scalar) -> Result<()> {
        super::fill::run(self, dst, value)
    }

    fn unary(&self, op: UnaryOp, x: &Tensor, out: &Tensor) -> Result<()> {
        super::unary::run(self, op, x, out)
    }

    fn binary(&self, op: BinaryOp, a: Operand, b: Operand, compute: DType, out: &Tensor) -> Result<()> {
        super::binary::run(self, op, a, b, compute, out)
    }

    fn where_(&self, cond: &Tensor, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
        super::where_::run(self, cond, a, b, out)
    }

    fn bmm(&self, a: &Tensor, b: &Tensor, out: &Tensor, accumulate: bool) -> Result<()> {
        super::blas::bmm(self, a, b, out, accumulate)
    }

    fn conv(&self, x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: usize, geom: &Geom) -> Result<Tensor> {
        super::dnn::conv(self, x, weight, bias, groups, geom)
    }

    fn conv_transpose(&self, x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: usize, geom: &Geom) -> Result<Tensor> {
        super::dnn::conv_transpose(self, x, weight, bias, groups, geom)
    }

    fn conv_weight_grad(&self, x: &Tensor, g: &Tensor, groups: usize, geom: &Geom) -> Result<Tensor> {
        super::dnn::conv_weight_grad(self, x, g, groups, geom)
    }

    fn reduce(&self, op: ReduceOp, x: &Tensor, mask: &[bool], out: &Tensor) -> Result<()> {
        super::reduce::reduce(self, op, x, mask, out)
    }

    fn arg_reduce(&self, x: &Tensor, dim: usize, max: bool, values: &Tensor, indices: &Tensor) -> Result<()> {
        super::reduce::arg_reduce(self, x, dim, max, values, indices)
    }

    fn softmax(&self, x: &Tensor, dim: usize, log: bool, out: &Tensor) -> Result<()> {
        super::norm::softmax(self, x, dim, log, out)
    }

    fn layer_norm(&self, x: &Tensor, n: usize, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64, out: &Tensor) -> Result<()> {
        super::norm::layer_norm(self, x, n, weight, bias, eps, out)
    }

    fn row_moments(&self, x: &Tensor, rows: usize) -> Result<(Vec<f64>, Vec<f64>)> {
        super::norm::row_moments(self, x, rows)
    }

    fn affine_rows(&self, x: &Tensor, scale: &[f64], shift: &[f64], out: &Tensor) -> Result<()> {
        super::norm::affine_rows(self, x, scale, shift, out)
    }

    fn lerp(&self, start: &Tensor, end: &Tensor, weight: &Tensor, out: &Tensor) -> Result<()> {
        super::lerp::run(self, start, end, weight, out)
    }

    fn random(&self, dist: Distribution, key: u64, base: u64, out: &Tensor) -> Result<()> {
        super::random::run(self, dist, key, base, out)
    }

    fn index(&self, x: &Tensor, indices: &[(usize, Tensor)], shape: &IndexShape, wrap: bool, out: &Tensor) -> Result<()> {
        super::index::index(self, x, indices, shape, wrap, out)
    }

    fn index_put(&self, x: &Tensor, indices: &[(usize, Tensor)], shape: &IndexShape, values: &Tensor, accumulate: bool, wrap: bool) -> Result<()> {
        super::index::index_put(self, x, indices, shape, values, accumulate, wrap)
    }

    fn gather(&self, x: &Tensor, dim: usize, index: &Tensor, out: &Tensor) -> Result<()> {
        super::index::gather(self, x, dim, index, out)
    }

    fn scatter(&self, x: &Tensor, dim: usize, index: &Tensor, src: &Tensor, op: Reduce, include_self: bool) -> Result<()> {
        super::index::scatter(self, x, dim, index, src, op, include_self)
    }

    fn nonzero(&self, x: &Tensor) -> Result<Tensor> {
        super::index::nonzero(self, x)
    }

    fn masked_select(&self, x: &Tensor, mask: &Tensor) -> Result<Tensor> {
        super::index::masked_select(self, x, mask)
    }

    fn tri(&self, x: &Tensor, diagonal: i64, upper: bool, out: &Tensor) -> Result<()> {
        super::index::tri(self, x, diagonal, upper, out)
    }

    fn embedding_bag(&self, weight: &Tensor, idx: &[i64], bags: &[(usize, usize)], mode: BagMode, per_sample_weights: &[f64], padding_idx: Option<i64>, out: &Tensor) -> Result<()> {
        super::index::embedding_bag(self, weight, idx, bags, mode, per_sample_weights, padding_idx, out)
    }

    fn embedding_renorm(&self, weight: &Tensor, rows: &[i64], max_norm: f64, norm_type: f64) -> Result<()> {
        super::index::embedding_renorm(self, weight, rows, max_norm, norm_type)
    }

    fn pad(&self, x: &Tensor, maps: &[Vec<Option<usize>>], fill: Scalar, out: &Tensor) -> Result<()> {
        super::pad::run(self, x, maps, fill, out)
    }

    fn resample(&self, x: &Tensor, taps: &Taps) -> Result<Tensor> {
        super::resample::run(self, x, taps)
    }

    fn max_pool(&self, x: &Tensor, dims: usize, windows: &[Axis; 3]) -> Result<(Tensor, Tensor)> {
        super::pool::max_pool(self, x, dims, windows)
    }

    fn mean_pool(&self, x: &Tensor, dims: usize, windows: &[Axis; 3], divisor: Divisor) -> Result<Tensor> {
        super::pool::mean_pool(self, x, dims, windows, divisor)
    }

    fn max_pool_backward(&self, g: &Tensor, indices: &Tensor, inputs: usize) -> Result<Tensor> {
        super::pool::max_pool_backward(self, g, indices, inputs)
    }
}
