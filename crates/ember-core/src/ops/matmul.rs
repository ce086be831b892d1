//! Matrix products: shapes, dtypes, broadcasting and autograd; every product is one batched
//! `[B, m, k] @ [B, k, n]` of the backend (`Backend::bmm`). The float32 matmul precision
//! setting lives here, for every backend to read.
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::broadcast_shapes;
use crate::tensor::Tensor;
use std::sync::atomic::{AtomicU8, Ordering};

/// `torch.set_float32_matmul_precision`'s settings. On this CPU backend "medium" runs float32
/// products on the bfloat16 kernel (operands rounded to bfloat16, float32 sums) when the CPU has
/// AVX512-BF16; "high" has no faster algorithm here and computes like "highest".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Full float32 products (the default).
    Highest = 0,
    /// May use faster, less precise algorithms (none here: as `Highest`).
    High = 1,
    /// May use bfloat16 operands.
    Medium = 2,
}

impl Precision {
    /// The setting's string (`"highest"`, `"high"`, `"medium"`).
    pub fn name(self) -> &'static str {
        match self {
            Precision::Highest => "highest",
            Precision::High => "high",
            Precision::Medium => "medium",
        }
    }

    /// The setting `name` returns this string for.
    pub fn from_name(name: &str) -> Option<Precision> {
        [Precision::Highest, Precision::High, Precision::Medium].into_iter().find(|p| p.name() == name)
    }
}

static PRECISION: AtomicU8 = AtomicU8::new(Precision::Highest as u8);

/// Sets the process-wide precision (`torch.set_float32_matmul_precision`).
pub fn set_float32_matmul_precision(p: Precision) {
    PRECISION.store(p as u8, Ordering::Relaxed);
}

/// The process-wide precision (`torch.get_float32_matmul_precision`).
pub fn float32_matmul_precision() -> Precision {
    match PRECISION.load(Ordering::Relaxed) {
        0 => Precision::Highest,
        1 => Precision::High,
        _ => Precision::Medium,
    }
}

fn check_dtypes(op: &str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() != b.dtype() {
        bail!(Runtime, "{op}: expected both operands to have the same dtype, but got {} and {}", a.dtype(), b.dtype());
    }
    if a.dtype() == DType::Bool {
        bail!(Runtime, "{op}: \"addmm_impl_cpu_\" not implemented for 'Bool'");
    }
    Ok(())
}

/// `[B, m, k] @ [B, k, n]` into a fresh tensor on the operands' device.
pub(crate) fn bmm_fresh(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let device = crate::backend::common_device(&[a, b])?;
    let out = Tensor::empty_on(&[a.shape()[0], a.shape()[1], b.shape()[2]], a.dtype(), device)?;
    crate::backend::of(device)?.bmm(a, b, &out, false)?;
    Ok(out)
}

/// `torch.mm`: the product of two matrices of one dtype, `[m, k] @ [k, n]`, no broadcasting.
pub fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    crate::autograd::track(&[a, b], || mm_kernel(a, b), |y| super::grad::matmul::record_mm(a, b, y))
}

fn mm_kernel(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_dtypes("mm", a, b)?;
    if a.ndim() != 2 || b.ndim() != 2 {
        bail!(Runtime, "mm: expected 2-D tensors, but got {}-D and {}-D", a.ndim(), b.ndim());
    }
    if a.shape()[1] != b.shape()[0] {
        bail!(Runtime, "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})", a.shape()[0], a.shape()[1], b.shape()[0], b.shape()[1]);
    }
    Ok(bmm_fresh(&a.unsqueeze(0)?, &b.unsqueeze(0)?)?.squeeze(Some(&[0]))?)
}

/// `torch.bmm`: batched products `[B, m, k] @ [B, k, n]` of one dtype, no broadcasting.
pub fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    crate::autograd::track(&[a, b], || bmm_kernel(a, b), |y| super::grad::matmul::record_bmm(a, b, y))
}

fn bmm_kernel(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_dtypes("bmm", a, b)?;
    if a.ndim() != 3 || b.ndim() != 3 {
        bail!(Runtime, "batch1 and batch2 must be 3D tensors, got {}-D and {}-D", a.ndim(), b.ndim());
    }
    if a.shape()[0] != b.shape()[0] || a.shape()[2] != b.shape()[1] {
        bail!(Runtime, "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].", a.shape()[0], a.shape()[2], b.shape()[0], b.shape()[1]);
    }
    bmm_fresh(a, b)
}

/// `torch.matmul`: dot, matrix-vector, matrix-matrix and broadcast batched products.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    crate::autograd::track(&[a, b], || matmul_kernel(a, b), |y| super::grad::matmul::record_matmul(a, b, y))
}

fn matmul_kernel(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_dtypes("matmul", a, b)?;
    let (da, db) = (a.ndim(), b.ndim());
    if da == 0 || db == 0 {
        bail!(Runtime, "both arguments to matmul need to be at least 1D, but they are {da}D and {db}D");
    }
    let (a2, b2) = (if da == 1 { a.unsqueeze(0)? } else { a.clone() }, if db == 1 { b.unsqueeze(1)? } else { b.clone() });
    let (m, k) = (a2.shape()[a2.ndim() - 2], a2.shape()[a2.ndim() - 1]);
    let (k2, n) = (b2.shape()[b2.ndim() - 2], b2.shape()[b2.ndim() - 1]);
    if k != k2 {
        bail!(Runtime, "mat1 and mat2 shapes cannot be multiplied ({m}x{k} and {k2}x{n}); matmul operands have shapes {:?} and {:?}", a.shape(), b.shape());
    }
    if da >= 3 && db <= 2 {
        return fold_rows(&a2, &b2, db);
    }
    let batch = broadcast_shapes(&a2.shape()[..a2.ndim() - 2], &b2.shape()[..b2.ndim() - 2])?;
    let nb: usize = batch.iter().product();
    let full = |t: &Tensor, r: usize, c: usize| -> Result<Tensor> {
        let mut s = batch.clone();
        s.extend([r, c]);
        let e = t.broadcast_to(&s)?;
        e.reshape(&[nb as i64, r as i64, c as i64])
    };
    let out = bmm_fresh(&full(&a2, m, k)?, &full(&b2, k, n)?)?;
    let mut shape: Vec<i64> = batch.iter().map(|&d| d as i64).collect();
    if da > 1 {
        shape.push(m as i64);
    }
    if db > 1 {
        shape.push(n as i64);
    }
    out.reshape(&shape)
}

/// `[..., m, k] @ [k, n]` as one product of all of `a`'s rows, as PyTorch folds it: `b` is the
/// same for every batch entry, and one product per entry (swin's `[1, 56, 56, 96] @ [96, 384]`:
/// 56 products of 56 rows) runs several times slower, each small product repacking `b`.
/// `b_ndim` 1: `b` was a vector (made a column), whose dim the result drops.
fn fold_rows(a: &Tensor, b: &Tensor, b_ndim: usize) -> Result<Tensor> {
    let (lead, k) = (&a.shape()[..a.ndim() - 1], a.shape()[a.ndim() - 1]);
    let rows: usize = lead.iter().product();
    let out = bmm_fresh(&a.reshape(&[1, rows as i64, k as i64])?, &b.unsqueeze(0)?)?;
    let mut shape: Vec<i64> = lead.iter().map(|&d| d as i64).collect();
    if b_ndim > 1 {
        shape.push(b.shape()[1] as i64);
    }
    out.reshape(&shape)
}

/// `beta·input + alpha·(a @ b)` for 2-d `a`, `b` (`addmm`) or 3-d (`baddbmm`).
pub fn addmm(input: &Tensor, a: &Tensor, b: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
    use super::binary::{binary, BinaryOp::*, Operand::*, Scalar::Float};
    // Composed of recorded ops, so autograd needs nothing of its own here.
    let prod = if a.ndim() == 3 { bmm(a, b)? } else { mm(a, b)? };
    let prod = if alpha != 1.0 { binary(Mul, Tensor(&prod), Scalar(Float(alpha)))? } else { prod };
    if beta == 0.0 {
        return Ok(prod);
    }
    let scaled = if beta != 1.0 { binary(Mul, Tensor(input), Scalar(Float(beta)))? } else { input.clone() };
    binary(Add, Tensor(&scaled), Tensor(&prod))
}
