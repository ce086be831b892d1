//! The backend contract: what a device provides to the ops above it.
//!
//! An op family keeps its semantics in `ops/` (argument checks, dtype promotion, broadcasting,
//! memory format, `out=` and in-place rules, autograd); it allocates its result on its inputs'
//! device and hands the arithmetic to that device's backend, reached through one dispatch
//! point, [`of`]. Backends get operands already checked, broadcast to the output's shape and
//! cast to the compute dtype; outputs are allocated by the caller, so every method writes into
//! `out`. A family a backend does not implement keeps the default method, which refuses with
//! PyTorch's "Could not run 'aten::X' with arguments from the 'B' backend" as a
//! NotImplementedError.
//!
//! In the contract so far: memory (allocation, upload/download, strided copy with cast, fill),
//! elementwise ops, reductions, matrix products and random draws. The other families (index,
//! norms and softmax, conv/pool, sort/scan, fft, linalg) still call the CPU kernels from
//! `ops/` and run on CPU tensors only.
pub mod cpu;
pub mod cuda;

use crate::bail;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::ops::binary::{BinaryOp, Operand, Scalar};
use crate::ops::random::Distribution;
use crate::ops::reduce::ReduceOp;
use crate::ops::unary::UnaryOp;
use crate::storage::Storage;
use crate::tensor::Tensor;
use std::sync::OnceLock;

/// Default methods name every argument, so the contract reads as documentation.
#[allow(unused_variables)]
pub trait Backend: Send + Sync {
    /// PyTorch's name for the backend's dispatch key: "CPU", "CUDA", "MPS", "PrivateUse1".
    fn name(&self) -> &'static str;

    // ---- memory ----
    /// `bytes` of memory on `device`, zeroed or not (for outputs a kernel overwrites entirely).
    fn alloc(&self, device: Device, bytes: usize, zeroed: bool) -> Result<Storage>;
    /// Copies a contiguous CPU tensor into `dst`, a contiguous tensor of this backend of the
    /// same dtype and shape.
    fn upload(&self, host: &Tensor, dst: &Tensor) -> Result<()>;
    /// Copies a contiguous tensor of this backend into `host`, a contiguous CPU tensor.
    fn download(&self, src: &Tensor, host: &Tensor) -> Result<()>;
    /// `dst[i] = src[i]` cast to `dst`'s dtype (as `.to(dtype)`), over any strides; same shape.
    fn copy(&self, src: &Tensor, dst: &Tensor) -> Result<()> {
        unsupported("copy_", self.name(), src.dtype())
    }
    /// Every element of `dst` set to `value` (already checked to fit `dst`'s dtype).
    fn fill(&self, dst: &Tensor, value: Scalar) -> Result<()> {
        unsupported("fill_", self.name(), dst.dtype())
    }

    // ---- elementwise ----
    /// `out = op(x)`; `x` is of the op's compute dtype.
    fn unary(&self, op: UnaryOp, x: &Tensor, out: &Tensor) -> Result<()> {
        unsupported(&format!("{op:?}"), self.name(), x.dtype())
    }
    /// `out = op(a, b)`. Tensor operands are of `compute`'s dtype and `out`'s shape; a Python
    /// number stays a kernel argument, to be taken as `compute`. Integer division by zero is an
    /// error the backend reports (PyTorch's "ZeroDivisionError").
    fn binary(&self, op: BinaryOp, a: Operand, b: Operand, compute: DType, out: &Tensor) -> Result<()> {
        unsupported(&format!("{op:?}"), self.name(), compute)
    }
    /// `out = cond ? a : b`: `cond` bool, `a` and `b` of `out`'s dtype, all of `out`'s shape.
    fn where_(&self, cond: &Tensor, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
        unsupported("where", self.name(), a.dtype())
    }

    // ---- reductions ----
    /// `out = op(x)` over the dims `mask` marks; `out` has `x`'s kept dims (reduced ones as 1
    /// or dropped) and the op's result dtype.
    fn reduce(&self, op: ReduceOp, x: &Tensor, mask: &[bool], out: &Tensor) -> Result<()> {
        unsupported(&format!("{op:?}"), self.name(), x.dtype())
    }
    /// The extremes along `dim` (maxima if `max`) and the index of the first one (NaN counts
    /// as the extreme); `values` and `indices` (int64) have `x`'s shape without `dim`.
    fn arg_reduce(&self, x: &Tensor, dim: usize, max: bool, values: &Tensor, indices: &Tensor) -> Result<()> {
        unsupported(if max { "max.dim" } else { "min.dim" }, self.name(), x.dtype())
    }

    // ---- matrix products ----
    /// `out (+)= a @ b` for `[B, m, k] @ [B, k, n]` of one dtype, any strides (`out` may be a
    /// transposed view); `accumulate` adds to `out`. Reads the float32 matmul precision setting.
    fn bmm(&self, a: &Tensor, b: &Tensor, out: &Tensor, accumulate: bool) -> Result<()> {
        unsupported("bmm", self.name(), a.dtype())
    }

    // ---- random ----
    /// Element `i` of the contiguous `out` (`dist.dtype()`) = `dist.sample(key, base, i)`.
    fn random(&self, dist: Distribution, key: u64, base: u64, out: &Tensor) -> Result<()> {
        unsupported("random_", self.name(), out.dtype())
    }
}

/// The refusal of an op a backend does not implement.
pub fn unsupported<T>(op: &str, backend: &str, dtype: DType) -> Result<T> {
    bail!(
        NotImplemented,
        "Could not run 'aten::{}' with arguments from the '{backend}' backend (dtype {dtype}): this backend does not implement it",
        op.to_lowercase()
    )
}

static PRIVATE_USE1: OnceLock<Box<dyn Backend>> = OnceLock::new();

/// Registers the backend of `Device::PrivateUse1` (PyTorch's `privateuseone`): once per process.
pub fn register_private_use1(backend: Box<dyn Backend>) -> Result<()> {
    PRIVATE_USE1
        .set(backend)
        .map_err(|_| Error::new(ErrorKind::Runtime, "a privateuseone backend is already registered"))
}

/// The backend that runs ops on `device`: the one dispatch point.
pub fn of(device: Device) -> Result<&'static dyn Backend> {
    match device {
        Device::Cpu => Ok(&cpu::Cpu),
        Device::PrivateUse1(_) => match PRIVATE_USE1.get() {
            Some(b) => Ok(b.as_ref()),
            None => bail!(Runtime, "no backend is registered for device {device}"),
        },
        Device::Cuda(index) => cuda::backend(index),
        Device::Metal(_) => bail!(Runtime, "device {device} is not available: this build of Ember has no Metal (mps) backend"),
    }
}

/// The device of an op's tensors, which must all be on one, as PyTorch requires; a 0-d CPU
/// tensor goes with any device (PyTorch treats it as a number).
pub fn common_device(tensors: &[&Tensor]) -> Result<Device> {
    let device = tensors.iter().map(|t| t.device()).find(|&d| d != Device::Cpu).unwrap_or(Device::Cpu);
    for t in tensors {
        check_on(device, t)?;
    }
    Ok(device)
}

/// Refuses `t` for an op running on `device` (see `common_device`).
pub fn check_on(device: Device, t: &Tensor) -> Result<()> {
    let d = t.device();
    if d != device && !(d == Device::Cpu && t.ndim() == 0) {
        bail!(Runtime, "Expected all tensors to be on the same device, but found at least two devices, {device} and {d}!");
    }
    Ok(())
}
