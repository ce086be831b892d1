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
//! The contract: memory (allocation, upload/download, strided copy with cast, fill), elementwise
//! ops, reductions, matrix products, random draws, indexing, softmax and normalisation,
//! convolution, pooling, padding and resampling, embeddings, Fourier transforms, linear algebra,
//! sorting and scans. Families whose results' memory format or compute dtype is the backend's
//! choice (convolution, pooling, FFT, linear algebra) return fresh tensors instead of writing
//! into `out`.
pub mod cpu;
pub mod cuda;

use crate::bail;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::ops::binary::{BinaryOp, Operand, Scalar};
use crate::ops::index::{IndexShape, Reduce};
use crate::ops::conv::Geom;
use crate::ops::embedding::BagMode;
use crate::ops::linalg::Info;
use crate::ops::pool::{Axis, Divisor};
use crate::ops::resize::Taps;
use crate::ops::random::Distribution;
use crate::ops::scan::ScanOp;
use crate::ops::sort::{Interpolation, Statistic};
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

    /// `out = start + weight * (end - start)`, all of `out`'s float dtype and shape (PyTorch's
    /// form, exact at `weight` 0 and 1).
    fn lerp(&self, start: &Tensor, end: &Tensor, weight: &Tensor, out: &Tensor) -> Result<()> {
        unsupported("lerp", self.name(), out.dtype())
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

    // ---- indexing ----
    // Index tensors (int64, or int32 where PyTorch takes them) arrive with checked shapes; their
    // values are the backend's to check as it runs (an IndexError "index i is out of bounds for
    // dimension d with size n"), negatives wrapped where `wrap` says so (advanced indexing, which
    // also checks nothing when another dim is empty and no element moves).
    /// `out = x[indices]`: NumPy advanced indexing by `(dim, index)` pairs on increasing dims;
    /// `out` has `shape.out_shape`.
    fn index(&self, x: &Tensor, indices: &[(usize, Tensor)], shape: &IndexShape, wrap: bool, out: &Tensor) -> Result<()> {
        unsupported("index.Tensor", self.name(), x.dtype())
    }
    /// `x[indices] = values`, or `+=` in index order with `accumulate`; `values` has `x`'s dtype
    /// and `shape.out_shape`.
    fn index_put(&self, x: &Tensor, indices: &[(usize, Tensor)], shape: &IndexShape, values: &Tensor, accumulate: bool, wrap: bool) -> Result<()> {
        unsupported("index_put_", self.name(), x.dtype())
    }
    /// `out[..j..] = x[..index[..j..]..]` along `dim`; int64 `index` has `out`'s shape.
    fn gather(&self, x: &Tensor, dim: usize, index: &Tensor, out: &Tensor) -> Result<()> {
        unsupported("gather", self.name(), x.dtype())
    }
    /// `x[..index[..j..]..] (op)= src[..j..]` along `dim`, in place; `src` has `x`'s dtype.
    /// Without `include_self` a destination that receives values starts from `op`'s identity;
    /// `Mean` divides by the number of values that met there.
    fn scatter(&self, x: &Tensor, dim: usize, index: &Tensor, src: &Tensor, op: Reduce, include_self: bool) -> Result<()> {
        unsupported("scatter", self.name(), x.dtype())
    }
    /// The coordinates of `x`'s non-zero elements: an int64 `[count, ndim]` tensor on the
    /// device, in row-major order.
    fn nonzero(&self, x: &Tensor) -> Result<Tensor> {
        unsupported("nonzero", self.name(), x.dtype())
    }
    /// The elements of `x` where the bool `mask` (of `x`'s shape), 1-d in row-major order.
    fn masked_select(&self, x: &Tensor, mask: &Tensor) -> Result<Tensor> {
        unsupported("masked_select", self.name(), x.dtype())
    }
    /// `out` = `x` (2+ dims) with the elements above the `diagonal`-th diagonal of its last two
    /// dims zeroed (below it if `upper`).
    fn tri(&self, x: &Tensor, diagonal: i64, upper: bool, out: &Tensor) -> Result<()> {
        unsupported(if upper { "triu" } else { "tril" }, self.name(), x.dtype())
    }

    // ---- softmax and normalisation (float dtypes) ----
    /// `out` (contiguous) = softmax of `x` along `dim`, or log_softmax with `log`.
    fn softmax(&self, x: &Tensor, dim: usize, log: bool, out: &Tensor) -> Result<()> {
        unsupported(if log { "_log_softmax" } else { "_softmax" }, self.name(), x.dtype())
    }
    /// `out` (contiguous) = each row of `n` elements of `x` minus its mean, over the square root
    /// of its biased variance plus `eps`, times `weight` plus `bias` (`[n]`; 1 and 0 if absent).
    fn layer_norm(&self, x: &Tensor, n: usize, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64, out: &Tensor) -> Result<()> {
        unsupported("native_layer_norm", self.name(), x.dtype())
    }
    /// The mean and biased variance of each of the `rows` rows of the contiguous `x`: per-row
    /// statistics, few enough to come back to the host, where group, batch and instance norm
    /// turn them into a scale and a shift.
    fn row_moments(&self, x: &Tensor, rows: usize) -> Result<(Vec<f64>, Vec<f64>)> {
        unsupported("native_batch_norm", self.name(), x.dtype())
    }
    /// `out = x * scale[r] + shift[r]` for each row `r` of the contiguous `x` and `out`.
    fn affine_rows(&self, x: &Tensor, scale: &[f64], shift: &[f64], out: &Tensor) -> Result<()> {
        unsupported("native_batch_norm", self.name(), x.dtype())
    }

    // ---- convolution (float dtypes): `x` is `[N, C, *spatial]`, `geom` the op's geometry
    // (three dims, unit ones in front for fewer); results come in `weight`'s dtype and a memory
    // format of the backend's choosing ----
    /// `[N, out, *geom.output]` = `x` convolved with `weight` (`[out, C/groups, *kernel]`),
    /// plus `bias` (`[out]`).
    fn conv(&self, x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: usize, geom: &Geom) -> Result<Tensor> {
        unsupported("convolution", self.name(), x.dtype())
    }
    /// The transposed convolution, `[N, out, *geom.input]`, of `x` (`[N, C, *geom.output]`) with
    /// `weight` (`[C, out/groups, *kernel]`), plus `bias`: the adjoint of `conv` in its input.
    fn conv_transpose(&self, x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: usize, geom: &Geom) -> Result<Tensor> {
        unsupported("convolution", self.name(), x.dtype())
    }
    /// The gradient `[out, C/groups, *kernel]` of `conv(x, w)`'s weight, for the output
    /// gradient `g` (`[N, out, *geom.output]`), in `x`'s dtype.
    fn conv_weight_grad(&self, x: &Tensor, g: &Tensor, groups: usize, geom: &Geom) -> Result<Tensor> {
        unsupported("convolution_backward", self.name(), x.dtype())
    }

    // ---- discrete Fourier transforms over `dims` (distinct, non-empty), the result multiplied
    // by `scale` (the op's normalisation); float16 and complex32 may compute in float32 ----
    /// The complex transform of complex `x` (forward: `e^{-2πi jk/n}`), in `x`'s dtype.
    fn fft_c2c(&self, x: &Tensor, dims: &[usize], forward: bool, scale: f64) -> Result<Tensor> {
        unsupported("_fft_c2c", self.name(), x.dtype())
    }
    /// The forward transform of real `x`, complex of `x`'s precision; `onesided` keeps the last
    /// dim's first `n/2 + 1` outputs.
    fn fft_r2c(&self, x: &Tensor, dims: &[usize], onesided: bool, scale: f64) -> Result<Tensor> {
        unsupported("_fft_r2c", self.name(), x.dtype())
    }
    /// The inverse transform of complex `x`, whose last dim holds the first `n/2 + 1`
    /// coefficients of a hermitian signal of `last_size` points: real, of `x`'s precision.
    fn fft_c2r(&self, x: &Tensor, dims: &[usize], last_size: usize, scale: f64) -> Result<Tensor> {
        unsupported("_fft_c2r", self.name(), x.dtype())
    }

    // ---- linear algebra (float32/64, complex64/128) over batches of matrices: `a` is
    // `[*, m, n]`, checked; a failure is a per-matrix `Info` code, not an error ----
    /// The lower Cholesky factor of each Hermitian positive-definite matrix.
    fn cholesky(&self, a: &Tensor) -> Result<(Tensor, Info)> {
        unsupported("linalg_cholesky_ex", self.name(), a.dtype())
    }
    /// `(Q, R)` in `mode` "reduced", "complete" or "r" (Q then empty).
    fn qr(&self, a: &Tensor, mode: &str) -> Result<(Tensor, Tensor)> {
        unsupported("linalg_qr", self.name(), a.dtype())
    }
    /// Eigenvalues (ascending, real) and, with `vectors`, eigenvectors of Hermitian matrices,
    /// reading the `lower` triangle (the upper one otherwise).
    fn eigh(&self, a: &Tensor, lower: bool, vectors: bool) -> Result<(Tensor, Option<Tensor>, Info)> {
        unsupported("linalg_eigh", self.name(), a.dtype())
    }
    /// Complex eigenvalues and, with `vectors`, unit eigenvectors of general square matrices.
    fn eig(&self, a: &Tensor, vectors: bool) -> Result<(Tensor, Option<Tensor>, Info)> {
        unsupported("linalg_eig", self.name(), a.dtype())
    }
    /// `(U, S, Vh)` (U and Vh only with `vectors`; square U and Vh with `full`).
    fn svd(&self, a: &Tensor, full: bool, vectors: bool) -> Result<(Option<Tensor>, Tensor, Option<Tensor>, Info)> {
        unsupported("_linalg_svd", self.name(), a.dtype())
    }
    /// `X` with `A X = B` for square `a` and `b` (`[*, n, k]`, batch dims equal to `a`'s).
    fn solve(&self, a: &Tensor, b: &Tensor) -> Result<(Tensor, Info)> {
        unsupported("linalg_solve_ex", self.name(), a.dtype())
    }
    /// The inverse of each square matrix (info: the zero pivot).
    fn inv(&self, a: &Tensor) -> Result<(Tensor, Info)> {
        unsupported("linalg_inv_ex", self.name(), a.dtype())
    }
    /// `(det, unused)`, or with `log` `(sign, logabsdet)`, of each square matrix.
    fn det(&self, a: &Tensor, log: bool) -> Result<(Tensor, Tensor)> {
        unsupported(if log { "linalg_slogdet" } else { "linalg_det" }, self.name(), a.dtype())
    }
    /// LU with partial pivoting: the packed factors, int32 pivots (1-based, LAPACK's) and info.
    fn lu_factor(&self, a: &Tensor) -> Result<(Tensor, Tensor, Info)> {
        unsupported("linalg_lu_factor_ex", self.name(), a.dtype())
    }
    /// `X` with `A X = B` for triangular `a` (`upper` or lower, `unit` diagonal if asked).
    fn solve_triangular(&self, a: &Tensor, b: &Tensor, upper: bool, unit: bool) -> Result<Tensor> {
        unsupported("linalg_solve_triangular", self.name(), a.dtype())
    }

    // ---- embeddings: `weight` is `[rows, dim]`, row numbers checked by the op ----
    /// Rescales in place each of the distinct `rows` of `weight` whose `norm_type`-norm exceeds
    /// `max_norm` to that norm (PyTorch's `embedding_renorm_`, with its `1e-7`).
    fn embedding_renorm(&self, weight: &Tensor, rows: &[i64], max_norm: f64, norm_type: f64) -> Result<()> {
        unsupported("embedding_renorm_", self.name(), weight.dtype())
    }
    /// `out[b]` (`[bags, dim]`) = the `mode` of the rows `idx[s..e]` for bag `b = (s, e)`,
    /// scaled by `per_sample_weights` (sum), skipping `padding_idx` (not counted by the mean);
    /// an empty bag gives zeros.
    fn embedding_bag(&self, weight: &Tensor, idx: &[i64], bags: &[(usize, usize)], mode: BagMode, per_sample_weights: &[f64], padding_idx: Option<i64>, out: &Tensor) -> Result<()> {
        unsupported("_embedding_bag", self.name(), weight.dtype())
    }

    // ---- padding and resampling ----
    /// `out` (fresh, contiguous) = `x` read through one position map per dim: element
    /// `(i, j, ..)` is `x[maps[0][i], maps[1][j], ..]`, or `fill` where any map gives `None`.
    fn pad(&self, x: &Tensor, maps: &[Vec<Option<usize>>], fill: Scalar, out: &Tensor) -> Result<()> {
        unsupported("constant_pad_nd", self.name(), x.dtype())
    }
    /// One pass of a separable resize (float32/64): `[outer, n_in, inner]` (contiguous) to
    /// `[outer, taps.outputs(), inner]`, each output row the weighted sum of its taps' rows.
    fn resample(&self, x: &Tensor, taps: &Taps) -> Result<Tensor> {
        unsupported("upsample", self.name(), x.dtype())
    }

    // ---- pooling (float dtypes) over the last `dims` dims of `x`, whose D, H, W windows (unit
    // axes in front for fewer dims) the op computed; results have `x`'s leading dims, then the
    // window counts, in `x`'s dtype and a memory format of the backend's choosing ----
    /// The maximum of each window and the flat index of its first maximum within the input
    /// plane (NaN counts as the maximum), int64.
    fn max_pool(&self, x: &Tensor, dims: usize, windows: &[Axis; 3]) -> Result<(Tensor, Tensor)> {
        unsupported(&format!("max_pool{dims}d_with_indices"), self.name(), x.dtype())
    }
    /// The mean of each window, its sum divided as `divisor` says.
    fn mean_pool(&self, x: &Tensor, dims: usize, windows: &[Axis; 3], divisor: Divisor) -> Result<Tensor> {
        unsupported(&format!("avg_pool{dims}d"), self.name(), x.dtype())
    }
    /// A max pool's gradient: each row of `g` (`[planes, outputs]`) added at the positions its
    /// row of `indices` names into a zeroed `[planes, inputs]` of `g`'s dtype.
    fn max_pool_backward(&self, g: &Tensor, indices: &Tensor, inputs: usize) -> Result<Tensor> {
        unsupported("max_pool2d_with_indices_backward", self.name(), g.dtype())
    }

    // ---- sorting and scans, along `dim` of a tensor of any strides (real dtypes; NaN sorts
    // as the largest value). `values`/`indices` (int64) come fresh, of the result's shape. ----
    /// Each row sorted, ascending or `descending`; equal values keep their order.
    fn sort(&self, x: &Tensor, dim: usize, descending: bool, values: &Tensor, indices: &Tensor) -> Result<()> {
        unsupported("sort", self.name(), x.dtype())
    }
    /// The `k` largest (smallest unless `largest`) of each row, in order if `sorted`; ties in
    /// their original order.
    fn topk(&self, x: &Tensor, k: usize, dim: usize, largest: bool, sorted: bool, values: &Tensor, indices: &Tensor) -> Result<()> {
        unsupported("topk", self.name(), x.dtype())
    }
    /// `stat` of each (non-empty) row and the index it was taken at; `dim` kept as size 1.
    fn select(&self, x: &Tensor, dim: usize, stat: Statistic, values: &Tensor, indices: &Tensor) -> Result<()> {
        unsupported(&format!("{stat:?}"), self.name(), x.dtype())
    }
    /// `out[j, r]` = the `q[j]`-quantile of row `r` (NaN where the row holds one, unless
    /// `ignore_nan`; then of its other values).
    fn quantile(&self, x: &Tensor, dim: usize, q: &[f64], interpolation: Interpolation, ignore_nan: bool, out: &Tensor) -> Result<()> {
        unsupported("quantile", self.name(), x.dtype())
    }
    /// The distinct elements (`dim` None: flat, inverse of `x.numel()`) or slices along `dim`,
    /// sorted unless `consecutive` (then runs of equals), with the inverse (when asked) and the
    /// counts, all int64 on the device.
    fn unique(&self, x: &Tensor, dim: Option<usize>, consecutive: bool, with_inverse: bool) -> Result<(Tensor, Option<Tensor>, Tensor)> {
        unsupported("_unique2", self.name(), x.dtype())
    }
    /// `out` (int64 or int32) = each value of `x`' insertion point (after equals if `right`)
    /// in its row of `seq` (1-d, or `x`'s leading dims), both of one dtype, read through the
    /// int64 `sorter` when given (its values the backend's to check).
    fn searchsorted(&self, seq: &Tensor, x: &Tensor, right: bool, sorter: Option<&Tensor>, out: &Tensor) -> Result<()> {
        unsupported("searchsorted", self.name(), x.dtype())
    }
    /// `out` = the running `op` of `x` along `dim`, in `out`'s dtype (int64 for integers).
    fn scan(&self, op: ScanOp, x: &Tensor, dim: usize, out: &Tensor) -> Result<()> {
        unsupported(op.name(), self.name(), x.dtype())
    }
    /// The running maximum (minimum unless `max`) along `dim` and where it was taken: a tie
    /// moves to the later element, a NaN once seen stays.
    fn cum_extreme(&self, x: &Tensor, dim: usize, max: bool, values: &Tensor, indices: &Tensor) -> Result<()> {
        unsupported(if max { "cummax" } else { "cummin" }, self.name(), x.dtype())
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

/// The backend of `x`'s device, with every other operand checked to be there too.
pub fn serving<'a>(x: &Tensor, others: impl IntoIterator<Item = &'a Tensor>) -> Result<&'static dyn Backend> {
    for t in others {
        check_on(x.device(), t)?;
    }
    of(x.device())
}

/// Refuses `t` for an op running on `device` (see `common_device`).
pub fn check_on(device: Device, t: &Tensor) -> Result<()> {
    let d = t.device();
    if d != device && !(d == Device::Cpu && t.ndim() == 0) {
        bail!(Runtime, "Expected all tensors to be on the same device, but found at least two devices, {device} and {d}!");
    }
    Ok(())
}
