//! Matrix products on the `gemm` crate (f32, f64, f16); bfloat16 on Ember's `vdpbf16ps` kernel
//! (`half::gemm`) where the CPU has AVX512-BF16, else through float32; integers use a plain
//! blocked loop. The float32 matmul precision setting can route float32 products to the
//! bfloat16 kernel.
use super::half::gemm::{Mat, MatMut, Sink, Source};
use super::map::Ptr;
use crate::bail;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::layout::broadcast_shapes;
use crate::parallel::{for_range, pool};
use crate::tensor::Tensor;
use crate::with_dtype;
use half::f16;
use std::sync::atomic::{AtomicU8, Ordering};

/// `torch.set_float32_matmul_precision`'s settings. On this CPU backend "medium" runs float32
/// products on the bfloat16 kernel (operands rounded to bfloat16, float32 sums) when the CPU has
/// AVX512-BF16; "high" has no faster algorithm here and computes like "highest".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    Highest = 0,
    High = 1,
    Medium = 2,
}

impl Precision {
    pub fn name(self) -> &'static str {
        match self {
            Precision::Highest => "highest",
            Precision::High => "high",
            Precision::Medium => "medium",
        }
    }

    pub fn from_name(name: &str) -> Option<Precision> {
        [Precision::Highest, Precision::High, Precision::Medium].into_iter().find(|p| p.name() == name)
    }
}

static PRECISION: AtomicU8 = AtomicU8::new(Precision::Highest as u8);

pub fn set_float32_matmul_precision(p: Precision) {
    PRECISION.store(p as u8, Ordering::Relaxed);
}

pub fn float32_matmul_precision() -> Precision {
    match PRECISION.load(Ordering::Relaxed) {
        0 => Precision::Highest,
        1 => Precision::High,
        _ => Precision::Medium,
    }
}

/// `dst = alpha·dst + beta·(a @ b)` for one (m×k)·(k×n) product with arbitrary strides.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_one<T: Element>(
    m: usize, n: usize, k: usize,
    dst: *mut T, dst_rs: isize, dst_cs: isize,
    a: *const T, a_rs: isize, a_cs: isize,
    b: *const T, b_rs: isize, b_cs: isize,
    accumulate: bool, threads: usize,
) {
    let par = if threads > 1 && m * n * k > 64 * 64 * 64 { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
    macro_rules! call {
        ($t:ty, $zero:expr, $one:expr) => {
            gemm::gemm::<$t>(m, n, k, dst as *mut $t, dst_cs, dst_rs, accumulate, a as *const $t, a_cs, a_rs,
                b as *const $t, b_cs, b_rs, if accumulate { $one } else { $zero }, $one, false, false, false, par)
        };
    }
    match T::DTYPE {
        DType::F32 => call!(f32, 0.0, 1.0),
        DType::F64 => call!(f64, 0.0, 1.0),
        DType::F16 => call!(f16, f16::ZERO, f16::ONE),
        DType::C64 => call!(gemm::c32, gemm::c32::new(0.0, 0.0), gemm::c32::new(1.0, 0.0)),
        DType::C128 => call!(gemm::c64, gemm::c64::new(0.0, 0.0), gemm::c64::new(1.0, 0.0)),
        _ => {
            // Integers: i-k-j loop, accumulate in the element type with wrapping, as PyTorch does.
            for i in 0..m as isize {
                for j in 0..n as isize {
                    let d = dst.offset(i * dst_rs + j * dst_cs);
                    let mut acc: i64 = if accumulate { (*d).to_i64() } else { 0 };
                    for p in 0..k as isize {
                        acc = acc.wrapping_add((*a.offset(i * a_rs + p * a_cs)).to_i64().wrapping_mul((*b.offset(p * b_rs + j * b_cs)).to_i64()));
                    }
                    *d = T::from_i64(acc);
                }
            }
        }
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

/// Batched product over the leading dims of 3-d operands `[B, m, k] @ [B, k, n]`.
fn bmm_into(a: &Tensor, b: &Tensor, out: &Tensor, accumulate: bool) -> Result<()> {
    if super::half::gemm::available() {
        match a.dtype() {
            DType::BF16 => return Ok(bmm_bf16::<half::bf16>(a, b, out, accumulate)),
            DType::F32 if float32_matmul_precision() == Precision::Medium => return Ok(bmm_bf16::<f32>(a, b, out, accumulate)),
            _ => {}
        }
    }
    // bfloat16 and complex32 have no gemm kernel: they compute in float32 / complex64.
    let wide = match a.dtype() {
        DType::BF16 => Some(DType::F32),
        DType::C32 => Some(DType::C64),
        _ => None,
    };
    if let Some(wide) = wide {
        let r = bmm_fresh(&a.to_dtype(wide), &b.to_dtype(wide))?;
        if accumulate {
            let sum = super::binary::binary(super::binary::BinaryOp::Add, super::binary::Operand::Tensor(out), super::binary::Operand::Tensor(&r))?;
            out.copy_(&sum)?;
        } else {
            out.copy_(&r)?;
        }
        return Ok(());
    }
    if a.dtype().is_complex() {
        crate::with_complex!(a.dtype(), T, bmm_typed::<T>(a, b, out, accumulate))
    } else {
        with_dtype!(a.dtype(), T, bmm_typed::<T>(a, b, out, accumulate))
    }
    Ok(())
}

fn bmm_typed<T: Element>(a: &Tensor, b: &Tensor, out: &Tensor, accumulate: bool) {
    let (batch, m, k, n) = (a.shape()[0], a.shape()[1], a.shape()[2], b.shape()[2]);
    let threads = pool().current_num_threads();
    {
        let (pa, pb, po) = (Ptr(a.data_ptr::<T>()), Ptr(b.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
        let (sa, sb, so) = (a.strides(), b.strides(), out.strides());
        let run = |i: usize, threads: usize| unsafe {
            let i = i as isize;
            gemm_one::<T>(m, n, k, po.at(i * so[0]), so[1], so[2], pa.at(i * sa[0]), sa[1], sa[2],
                pb.at(i * sb[0]), sb[1], sb[2], accumulate, threads);
        };
        if batch >= threads && m * n * k < 256 * 256 * 256 {
            // Many small products: one per thread beats splitting each one.
            for_range(batch, 1, |s, e| (s..e).for_each(|i| run(i, 1)));
        } else {
            pool().install(|| (0..batch).for_each(|i| run(i, threads)));
        }
    }
}

/// `bmm_into` on the bfloat16 kernel: float32 sums, rounded once into `out`'s dtype.
fn bmm_bf16<S: Source + Sink + Element>(a: &Tensor, b: &Tensor, out: &Tensor, accumulate: bool) {
    let (batch, m, k, n) = (a.shape()[0], a.shape()[1], a.shape()[2], b.shape()[2]);
    let (pa, pb, po) = (Ptr(a.data_ptr::<S>()), Ptr(b.data_ptr::<S>()), Ptr(out.data_ptr::<S>()));
    let (sa, sb, so) = (a.strides(), b.strides(), out.strides());
    let run = |i: usize| unsafe {
        let i = i as isize;
        let am = Mat { ptr: Ptr(pa.at(i * sa[0])), rs: sa[1], cs: sa[2] };
        let bm = Mat { ptr: Ptr(pb.at(i * sb[0])), rs: sb[1], cs: sb[2] };
        let cm = MatMut { ptr: Ptr(po.at(i * so[0])), rs: so[1], cs: so[2] };
        super::half::gemm::gemm(m, n, k, am, bm, cm, accumulate);
    };
    if batch >= pool().current_num_threads() && m * n * k < 256 * 256 * 256 {
        for_range(batch, 1, |s, e| (s..e).for_each(run));
    } else {
        (0..batch).for_each(run);
    }
}

fn bmm_fresh(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let out = Tensor::uninit(&[a.shape()[0], a.shape()[1], b.shape()[2]], a.dtype())?;
    bmm_into(a, b, &out, false)?;
    Ok(out)
}

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
