//! Convolutions on cuDNN's convolution API: the forward pass, the transposed convolution as its
//! backward-data pass, and the weight gradient as its backward-filter pass, on contiguous NCHW
//! (NCDHW) tensors. 1-d and 2-d convolutions take 4-d descriptors, 3-d ones 5-d.
//!
//! The algorithm is cuDNN's heuristic first choice, its workspace taken from the device's pool.
//! Float32 convolutions may use TF32 tensor cores unless `ember.backends.cudnn.allow_tf32` is
//! False (PyTorch's default: allowed); half types accumulate in float32.
use super::device::Cuda;
use super::libs::{self, Lib};
use crate::bail;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::ops::conv::Geom;
use crate::tensor::Tensor;
use cudarc::cudnn::{result as dnn, sys};
use std::ffi::{c_int, c_void};
use std::collections::HashMap;
use std::sync::Mutex;

/// cuDNN's version (`90800` for 9.8.0), or None where the library cannot be loaded.
pub fn version() -> Option<usize> {
    libs::require(Lib::Cudnn).ok().map(|_| dnn::get_version())
}

fn dnn_error(call: &str, e: dnn::CudnnError) -> Error {
    Error::new(ErrorKind::Runtime, format!("cuDNN error: {call} failed: {:?}", e.0))
}

/// A device's cuDNN handle (one thread at a time may use it, as cuDNN requires), and the
/// algorithm chosen for each geometry of each pass: asking cuDNN's heuristics costs more than a
/// small convolution.
pub struct Handle {
    raw: Mutex<sys::cudnnHandle_t>,
    forward: Mutex<HashMap<String, sys::cudnnConvolutionFwdAlgoPerf_t>>,
    backward_data: Mutex<HashMap<String, sys::cudnnConvolutionBwdDataAlgoPerf_t>>,
    backward_filter: Mutex<HashMap<String, sys::cudnnConvolutionBwdFilterAlgoPerf_t>>,
}

// The handle is only used under its mutex.
unsafe impl Send for Handle {}
unsafe impl Sync for Handle {}

/// The device's cuDNN handle on its stream, created on first use.
fn handle(cuda: &Cuda) -> Result<&Handle> {
    let made = cuda.dnn.get_or_init(|| {
        libs::require(Lib::Cudnn)?;
        cuda.enter()?;
        let h = dnn::create_handle().map_err(|e| dnn_error("cudnnCreate", e))?;
        unsafe { dnn::set_stream(h, cuda.stream().cu_stream() as _) }.map_err(|e| dnn_error("cudnnSetStream", e))?;
        Ok(Handle { raw: Mutex::new(h), forward: Mutex::default(), backward_data: Mutex::default(), backward_filter: Mutex::default() })
    });
    made.as_ref().map_err(Error::clone)
}

/// cuDNN's data type for `dtype`, and the type it accumulates in.
fn types(dtype: DType) -> Result<(sys::cudnnDataType_t, sys::cudnnDataType_t)> {
    use sys::cudnnDataType_t::*;
    Ok(match dtype {
        DType::F32 => (CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT),
        DType::F64 => (CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE),
        DType::F16 => (CUDNN_DATA_HALF, CUDNN_DATA_FLOAT),
        DType::BF16 => (CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT),
        _ => bail!(Runtime, "\"cudnn_convolution\" not implemented for '{}'", dtype.legacy_name()),
    })
}

/// The descriptors of one convolution: input `x`, filter `w`, output `y` (the forward pass's
/// names, whichever pass runs), and the convolution itself.
struct Descriptors {
    x: sys::cudnnTensorDescriptor_t,
    w: sys::cudnnFilterDescriptor_t,
    y: sys::cudnnTensorDescriptor_t,
    conv: sys::cudnnConvolutionDescriptor_t,
    data: sys::cudnnDataType_t,
    /// The tensor descriptors' rank (4 or 5).
    rank: usize,
}

impl Drop for Descriptors {
    fn drop(&mut self) {
        unsafe {
            let _ = dnn::destroy_tensor_descriptor(self.x);
            let _ = dnn::destroy_filter_descriptor(self.w);
            let _ = dnn::destroy_tensor_descriptor(self.y);
            let _ = dnn::destroy_convolution_descriptor(self.conv);
        }
    }
}

/// The spatial dims cuDNN is given: the last two for 1-d and 2-d convolutions (the unit ones in
/// front dropped), all three otherwise.
fn spatial(geom: &Geom) -> std::ops::Range<usize> {
    let unit_depth = geom.input[0] == 1 && geom.output[0] == 1 && geom.kernel[0] == 1 && geom.pad[0] == 0;
    if unit_depth {
        1..3
    } else {
        0..3
    }
}

fn dims(v: &[usize]) -> Result<Vec<c_int>> {
    v.iter().map(|&d| c_int::try_from(d).map_err(|_| Error::new(ErrorKind::NotImplemented, format!("convolution on CUDA: size {d} past 2^31")))).collect()
}

/// A fully packed NC(D)HW tensor descriptor.
fn tensor_descriptor(data: sys::cudnnDataType_t, shape: &[usize]) -> Result<sys::cudnnTensorDescriptor_t> {
    let shape = dims(shape)?;
    let mut strides = vec![1 as c_int; shape.len()];
    for d in (0..shape.len() - 1).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    let desc = dnn::create_tensor_descriptor().map_err(|e| dnn_error("cudnnCreateTensorDescriptor", e))?;
    unsafe { dnn::set_tensornd_descriptor(desc, data, shape.len() as c_int, shape.as_ptr(), strides.as_ptr()) }
        .map_err(|e| dnn_error("cudnnSetTensorNdDescriptor", e))?;
    Ok(desc)
}

/// The descriptors of `geom` for `[n, c_in, *input] * [c_out, c_in/groups, *kernel]`.
fn describe(dtype: DType, n: usize, c_in: usize, c_out: usize, groups: usize, geom: &Geom) -> Result<Descriptors> {
    let (data, compute) = types(dtype)?;
    let s = spatial(geom);
    // cuDNN pads both sides alike: a geometry whose output needs more (an asymmetric pad) is
    // not one it can run.
    for d in s.clone() {
        let reach = geom.dilation[d] * (geom.kernel[d] - 1) + 1;
        let cudnn_output = (geom.input[d] + 2 * geom.pad[d]).saturating_sub(reach) / geom.stride[d] + 1;
        if geom.input[d] + 2 * geom.pad[d] < reach || cudnn_output != geom.output[d] {
            bail!(NotImplemented, "convolution on CUDA: padding that differs between the two sides of a dim is not supported yet");
        }
    }
    let shape = |c: usize, spatial_sizes: &[usize; 3]| [&[n, c][..], &spatial_sizes[s.clone()]].concat();
    let x = tensor_descriptor(data, &shape(c_in, &geom.input))?;
    let y = tensor_descriptor(data, &shape(c_out, &geom.output))?;
    let filter = dims(&[&[c_out, c_in / groups][..], &geom.kernel[s.clone()]].concat())?;
    let w = dnn::create_filter_descriptor().map_err(|e| dnn_error("cudnnCreateFilterDescriptor", e))?;
    unsafe { dnn::set_filternd_descriptor(w, data, sys::cudnnTensorFormat_t::CUDNN_TENSOR_NCHW, filter.len() as c_int, filter.as_ptr()) }
        .map_err(|e| dnn_error("cudnnSetFilterNdDescriptor", e))?;
    let conv = dnn::create_convolution_descriptor().map_err(|e| dnn_error("cudnnCreateConvolutionDescriptor", e))?;
    let descriptors = Descriptors { x, w, y, conv, data, rank: 2 + s.len() };
    let (pad, stride, dilation) = (dims(&geom.pad[s.clone()])?, dims(&geom.stride[s.clone()])?, dims(&geom.dilation[s.clone()])?);
    let math = if dtype == DType::F32 && !super::cudnn_allow_tf32() { sys::cudnnMathType_t::CUDNN_FMA_MATH } else { sys::cudnnMathType_t::CUDNN_DEFAULT_MATH };
    unsafe {
        dnn::set_convolutionnd_descriptor(
            conv,
            pad.len() as c_int,
            pad.as_ptr(),
            stride.as_ptr(),
            dilation.as_ptr(),
            sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
            compute,
        )
        .map_err(|e| dnn_error("cudnnSetConvolutionNdDescriptor", e))?;
        dnn::set_convolution_group_count(conv, groups as i32).map_err(|e| dnn_error("cudnnSetConvolutionGroupCount", e))?;
        dnn::set_convolution_math_type(conv, math).map_err(|e| dnn_error("cudnnSetConvolutionMathType", e))?;
    }
    Ok(descriptors)
}

/// What decides a convolution's algorithm: its dtype, sizes, geometry and math mode.
fn key(dtype: DType, n: usize, c_in: usize, c_out: usize, groups: usize, geom: &Geom) -> String {
    format!("{dtype:?} {n} {c_in} {c_out} {groups} {geom:?} {}", super::cudnn_allow_tf32())
}

/// The algorithm cached under `key`, else cuDNN's heuristic first choice that runs (`ask` fills
/// up to 8 candidates and says how many), cached.
fn choose<P: Copy>(cache: &Mutex<HashMap<String, P>>, key: String, call: &str, ask: impl FnOnce(&mut [P; 8], &mut c_int) -> std::result::Result<(), dnn::CudnnError>, works: impl Fn(&P) -> bool) -> Result<P> {
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = cache.get(&key) {
        return Ok(*p);
    }
    let mut perf = [unsafe { std::mem::zeroed::<P>() }; 8];
    let mut found = 0;
    ask(&mut perf, &mut found).map_err(|e| dnn_error(call, e))?;
    let Some(best) = perf[..found.max(0) as usize].iter().find(|p| works(p)).copied() else {
        bail!(Runtime, "cuDNN error: {call} found no algorithm for this convolution");
    };
    cache.insert(key, best);
    Ok(best)
}

/// Scaling factors as cuDNN reads them: double for double data, float otherwise.
struct Scale {
    one: [u8; 8],
    zero: [u8; 8],
}

impl Scale {
    fn of(data: sys::cudnnDataType_t) -> Scale {
        if data == sys::cudnnDataType_t::CUDNN_DATA_DOUBLE {
            Scale { one: 1f64.to_ne_bytes(), zero: 0f64.to_ne_bytes() }
        } else {
            let mut one = [0; 8];
            one[..4].copy_from_slice(&1f32.to_ne_bytes());
            Scale { one, zero: [0; 8] }
        }
    }
    fn one(&self) -> *const c_void {
        self.one.as_ptr() as *const c_void
    }
    fn zero(&self) -> *const c_void {
        self.zero.as_ptr() as *const c_void
    }
}

/// `bytes` of scratch memory from the device's pool, or none.
fn workspace(cuda: &Cuda, bytes: usize) -> Result<(Option<Tensor>, *mut c_void)> {
    if bytes == 0 {
        return Ok((None, std::ptr::null_mut()));
    }
    let t = Tensor::empty_on(&[bytes], DType::U8, crate::device::Device::Cuda(cuda.index))?;
    let ptr = cuda.address(&t)? as *mut c_void;
    Ok((Some(t), ptr))
}

fn ptr(cuda: &Cuda, t: &Tensor) -> Result<*mut c_void> {
    Ok(cuda.address(t)? as *mut c_void)
}

/// Adds `bias` (`[c]`) to every channel of the contiguous `y` (`[n, c, ...]`, described by
/// `y_desc`, one of `d`'s).
fn add_bias(handle: sys::cudnnHandle_t, cuda: &Cuda, d: &Descriptors, bias: &Tensor, y_desc: sys::cudnnTensorDescriptor_t, y: &Tensor) -> Result<()> {
    let mut shape = vec![1; d.rank];
    shape[1] = y.shape()[1];
    let bias = bias.contiguous()?;
    let bias_desc = tensor_descriptor(d.data, &shape)?;
    let scale = Scale::of(d.data);
    let r = unsafe { sys::cudnnAddTensor(handle, scale.one(), bias_desc, ptr(cuda, &bias)?, scale.one(), y_desc, ptr(cuda, y)?) }.result();
    unsafe {
        let _ = dnn::destroy_tensor_descriptor(bias_desc);
    }
    r.map_err(|e| dnn_error("cudnnAddTensor", e))
}

fn output(shape: Vec<usize>, like: &Tensor) -> Result<Tensor> {
    Tensor::empty_on(&shape, like.dtype(), like.device())
}

/// `[N, out, *geom.output]` = `x` convolved with `weight`, plus `bias`.
pub fn conv(cuda: &Cuda, x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: usize, geom: &Geom) -> Result<Tensor> {
    let (x, weight) = (x.contiguous()?, weight.contiguous()?);
    let (n, c_in, c_out) = (x.shape()[0], x.shape()[1], weight.shape()[0]);
    let y = output([&[n, c_out][..], &geom.output[3 - (x.ndim() - 2)..]].concat(), &x)?;
    if y.numel() == 0 {
        return Ok(y);
    }
    let d = describe(x.dtype(), n, c_in, c_out, groups, geom)?;
    let handle = handle(cuda)?;
    let lock = handle.raw.lock().unwrap_or_else(|e| e.into_inner());
    let h = *lock;
    cuda.enter()?;
    let best = choose(&handle.forward, key(x.dtype(), n, c_in, c_out, groups, geom), "cudnnGetConvolutionForwardAlgorithm_v7", |perf, found| unsafe {
        dnn::get_convolution_forward_algorithm(h, d.x, d.w, d.conv, d.y, perf.len() as c_int, found, perf.as_mut_ptr())
    }, |p| p.status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS)?;
    let (_keep, space) = workspace(cuda, best.memory)?;
    let scale = Scale::of(d.data);
    unsafe {
        dnn::convolution_forward(h, scale.one(), d.x, ptr(cuda, &x)?, d.w, ptr(cuda, &weight)?, d.conv, best.algo, space, best.memory, scale.zero(), d.y, ptr(cuda, &y)?)
    }
    .map_err(|e| dnn_error("cudnnConvolutionForward", e))?;
    if let Some(b) = bias {
        add_bias(h, cuda, &d, b, d.y, &y)?;
    }
    Ok(y)
}

/// The transposed convolution `[N, out, *geom.input]` of `x` (`[N, C, *geom.output]`) with
/// `weight` (`[C, out/groups, *kernel]`): cuDNN's backward-data pass of the forward conv whose
/// input has `out` channels.
pub fn conv_transpose(cuda: &Cuda, x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: usize, geom: &Geom) -> Result<Tensor> {
    let (x, weight) = (x.contiguous()?, weight.contiguous()?);
    let (n, c, out) = (x.shape()[0], x.shape()[1], weight.shape()[1] * groups);
    let y = output([&[n, out][..], &geom.input[3 - (x.ndim() - 2)..]].concat(), &x)?;
    if y.numel() == 0 {
        return Ok(y);
    }
    // The forward conv: input y (`out` channels), output x (`c` channels).
    let d = describe(x.dtype(), n, out, c, groups, geom)?;
    let handle = handle(cuda)?;
    let lock = handle.raw.lock().unwrap_or_else(|e| e.into_inner());
    let h = *lock;
    cuda.enter()?;
    let best = choose(&handle.backward_data, key(x.dtype(), n, out, c, groups, geom), "cudnnGetConvolutionBackwardDataAlgorithm_v7", |perf, found| unsafe {
        dnn::get_convolution_backward_data_algorithm(h, d.w, d.y, d.conv, d.x, perf.len() as c_int, found, perf.as_mut_ptr())
    }, |p| p.status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS)?;
    let (_keep, space) = workspace(cuda, best.memory)?;
    let scale = Scale::of(d.data);
    unsafe {
        dnn::convolution_backward_data(h, scale.one(), d.w, ptr(cuda, &weight)?, d.y, ptr(cuda, &x)?, d.conv, best.algo, space, best.memory, scale.zero(), d.x, ptr(cuda, &y)?)
    }
    .map_err(|e| dnn_error("cudnnConvolutionBackwardData", e))?;
    if let Some(b) = bias {
        // The result is the forward conv's input.
        add_bias(h, cuda, &d, b, d.x, &y)?;
    }
    Ok(y)
}

/// The weight gradient `[out, C/groups, *kernel]` of `conv(x, w)` for the output gradient `g`.
pub fn conv_weight_grad(cuda: &Cuda, x: &Tensor, g: &Tensor, groups: usize, geom: &Geom) -> Result<Tensor> {
    let (x, g) = (x.contiguous()?, g.contiguous()?);
    let (n, c_in, c_out) = (x.shape()[0], x.shape()[1], g.shape()[1]);
    let dw = output([&[c_out, c_in / groups][..], &geom.kernel[3 - (x.ndim() - 2)..]].concat(), &x)?;
    if dw.numel() == 0 {
        return Ok(dw);
    }
    if x.numel() == 0 || g.numel() == 0 {
        super::fill::run(cuda, &dw, crate::ops::binary::Scalar::Int(0))?;
        return Ok(dw);
    }
    let d = describe(x.dtype(), n, c_in, c_out, groups, geom)?;
    let handle = handle(cuda)?;
    let lock = handle.raw.lock().unwrap_or_else(|e| e.into_inner());
    let h = *lock;
    cuda.enter()?;
    let best = choose(&handle.backward_filter, key(x.dtype(), n, c_in, c_out, groups, geom), "cudnnGetConvolutionBackwardFilterAlgorithm_v7", |perf, found| unsafe {
        dnn::get_convolution_backward_filter_algorithm(h, d.x, d.y, d.conv, d.w, perf.len() as c_int, found, perf.as_mut_ptr())
    }, |p| p.status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS)?;
    let (_keep, space) = workspace(cuda, best.memory)?;
    let scale = Scale::of(d.data);
    unsafe {
        dnn::convolution_backward_filter(h, scale.one(), d.x, ptr(cuda, &x)?, d.y, ptr(cuda, &g)?, d.conv, best.algo, space, best.memory, scale.zero(), d.w, ptr(cuda, &dw)?)
    }
    .map_err(|e| dnn_error("cudnnConvolutionBackwardFilter", e))?;
    Ok(dw)
}
