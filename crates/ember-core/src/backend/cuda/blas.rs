//! Matrix products on cuBLAS: `bmm` as one strided-batched GEMM, in the operands' own layouts.
//!
//! Ember's matrices are row-major and cuBLAS's column-major, and a row-major `[m, n]` matrix
//! is the column-major `[n, m]` one: so `out = a @ b` runs as `outᵀ = bᵀ @ aᵀ`, each operand
//! passed as it lies in memory with a transpose flag where its rows are the contiguous side.
//! Float32 products use TF32 tensor cores unless the float32 matmul precision is "highest"
//! (PyTorch's `allow_tf32`); half types accumulate in float32.
use super::device::Cuda;
use super::libs::{self, Lib};
use crate::bail;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::ops::binary::Scalar;
use crate::ops::matmul::{float32_matmul_precision, Precision};
use crate::tensor::Tensor;
use cudarc::cublas::{result as blas, sys, CudaBlas};
use std::ffi::c_void;

/// A cuBLAS error as a RuntimeError naming the call, as PyTorch's "CUDA error: CUBLAS_STATUS_...".
fn blas_error(call: &str, e: blas::CublasError) -> Error {
    Error::new(ErrorKind::Runtime, format!("CUDA error: {call} failed: {:?}", e.0))
}

/// The device's cuBLAS handle on its stream, created on first use.
pub fn handle(cuda: &Cuda) -> Result<&CudaBlas> {
    let made = cuda.blas.get_or_init(|| {
        libs::require(Lib::Cublas)?;
        CudaBlas::new(cuda.stream().clone()).map_err(|e| blas_error("cublasCreate", e))
    });
    made.as_ref().map_err(Error::clone)
}

/// One operand as cuBLAS takes it: a column-major matrix (`ld` apart), transposed or not, and
/// the distance between batch members.
struct Operand {
    ptr: u64,
    transpose: bool,
    ld: i64,
    batch_stride: i64,
}

/// The row-major `[rows, cols]` matrices of `t` (`[B, rows, cols]`) as the column-major
/// `[cols, rows]` ones cuBLAS reads, or None where neither dim is contiguous.
fn operand(cuda: &Cuda, t: &Tensor) -> Result<Option<Operand>> {
    let (rows, cols) = (t.shape()[1] as i64, t.shape()[2] as i64);
    // A dim of size 1 may have any stride: give it the one that makes the layout legal.
    let row_stride = if rows == 1 { cols.max(1) } else { t.strides()[1] as i64 };
    let col_stride = if cols == 1 { 1 } else { t.strides()[2] as i64 };
    let batch_stride = if t.shape()[0] == 1 { 0 } else { t.strides()[0] as i64 };
    let ptr = cuda.address(t)?;
    Ok(if col_stride == 1 && row_stride >= cols.max(1) {
        Some(Operand { ptr, transpose: false, ld: row_stride, batch_stride })
    } else if row_stride == 1 && col_stride >= rows.max(1) {
        Some(Operand { ptr, transpose: true, ld: col_stride, batch_stride })
    } else {
        None
    })
}

/// cuBLAS's names for a dtype, and the compute type it multiplies in.
fn types(dtype: DType) -> Option<(sys::cudaDataType, sys::cublasComputeType_t)> {
    use sys::cublasComputeType_t::*;
    use sys::cudaDataType::*;
    Some(match dtype {
        DType::F32 if float32_matmul_precision() == Precision::Highest => (CUDA_R_32F, CUBLAS_COMPUTE_32F),
        DType::F32 => (CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32),
        DType::F64 => (CUDA_R_64F, CUBLAS_COMPUTE_64F),
        DType::F16 => (CUDA_R_16F, CUBLAS_COMPUTE_32F),
        DType::BF16 => (CUDA_R_16BF, CUBLAS_COMPUTE_32F),
        _ => return None,
    })
}

/// `out (+)= a @ b` for `[B, m, k] @ [B, k, n]`.
pub fn bmm(cuda: &Cuda, a: &Tensor, b: &Tensor, out: &Tensor, accumulate: bool) -> Result<()> {
    let Some((data_type, compute)) = types(a.dtype()) else {
        bail!(Runtime, "\"addmm_cuda\" not implemented for '{}'", a.dtype().legacy_name());
    };
    let (batch, m, k, n) = (a.shape()[0], a.shape()[1], a.shape()[2], b.shape()[2]);
    if batch * m * n == 0 {
        return Ok(());
    }
    if k == 0 {
        return if accumulate { Ok(()) } else { super::fill::run(cuda, out, Scalar::Int(0)) };
    }
    // A row-major out is `outᵀ` column-major; a column-major one (a transposed view) takes
    // the product the other way round.
    if out.strides()[2] != 1 && out.strides()[1] == 1 && n > 1 {
        return bmm(cuda, &b.transpose(1, 2)?, &a.transpose(1, 2)?, &out.transpose(1, 2)?, accumulate);
    }
    let fits = |v: usize| i32::try_from(v).is_ok();
    if ![batch, m, k, n].into_iter().all(fits) {
        bail!(NotImplemented, "bmm on CUDA: sizes past 2^31 ({batch}x{m}x{k} @ {batch}x{k}x{n}) are not supported yet");
    }
    let (Some(oa), Some(ob)) = (operand(cuda, a)?, operand(cuda, b)?) else {
        return bmm(cuda, &a.contiguous()?, &b.contiguous()?, out, accumulate);
    };
    let Some(oc) = operand(cuda, out)?.filter(|o| !o.transpose) else {
        // An out in neither layout: the product goes to a fresh matrix first.
        let fresh = Tensor::empty_on(out.shape(), out.dtype(), out.device())?;
        if accumulate {
            fresh.copy_(out)?;
        }
        bmm(cuda, a, b, &fresh, accumulate)?;
        return out.copy_(&fresh);
    };
    let blas = handle(cuda)?;
    let op = |t: bool| if t { sys::cublasOperation_t::CUBLAS_OP_T } else { sys::cublasOperation_t::CUBLAS_OP_N };
    let (one32, beta32) = (1.0f32, if accumulate { 1.0f32 } else { 0.0 });
    let (one64, beta64) = (1.0f64, if accumulate { 1.0f64 } else { 0.0 });
    let (alpha, beta): (*const c_void, *const c_void) = if a.dtype() == DType::F64 {
        (&one64 as *const f64 as _, &beta64 as *const f64 as _)
    } else {
        (&one32 as *const f32 as _, &beta32 as *const f32 as _)
    };
    cuda.enter()?;
    // outᵀ [n, m] = bᵀ [n, k] @ aᵀ [k, m], column-major.
    unsafe {
        blas::gemm_strided_batched_ex(
            *blas.handle(),
            op(ob.transpose),
            op(oa.transpose),
            n as i32,
            m as i32,
            k as i32,
            alpha,
            ob.ptr as *const c_void,
            data_type,
            ob.ld as i32,
            ob.batch_stride,
            oa.ptr as *const c_void,
            data_type,
            oa.ld as i32,
            oa.batch_stride,
            beta,
            oc.ptr as *mut c_void,
            data_type,
            oc.ld as i32,
            oc.batch_stride,
            batch as i32,
            compute,
            sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    }
    .map_err(|e| blas_error("cublasGemmStridedBatchedEx", e))
}
