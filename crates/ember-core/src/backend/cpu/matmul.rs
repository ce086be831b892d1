//! The CPU matrix products: the `gemm` crate for f32/f64/f16/complex, the bfloat16 kernel
//! (`ops::half::gemm`) for bf16 and the "medium" float32 precision, a plain loop for integers.
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::backend::cpu::half::gemm::{Mat, MatMut, Sink, Source};
use crate::backend::cpu::map::Ptr;
use crate::ops::matmul::{float32_matmul_precision, Precision};
use crate::parallel::{for_range, pool};
use crate::tensor::Tensor;
use crate::with_dtype;
use half::f16;

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

/// Batched product over the leading dims of 3-d operands `[B, m, k] @ [B, k, n]`.
pub fn bmm(a: &Tensor, b: &Tensor, out: &Tensor, accumulate: bool) -> Result<()> {
    if crate::backend::cpu::half::gemm::available() {
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
        let r = crate::ops::matmul::bmm_fresh(&a.to_dtype(wide)?, &b.to_dtype(wide)?)?;
        if accumulate {
            let sum = crate::ops::binary::binary(crate::ops::binary::BinaryOp::Add, crate::ops::binary::Operand::Tensor(out), crate::ops::binary::Operand::Tensor(&r))?;
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

/// `bmm` on the bfloat16 kernel: float32 sums, rounded once into `out`'s dtype.
fn bmm_bf16<S: Source + Sink + Element>(a: &Tensor, b: &Tensor, out: &Tensor, accumulate: bool) {
    let (batch, m, k, n) = (a.shape()[0], a.shape()[1], a.shape()[2], b.shape()[2]);
    let (pa, pb, po) = (Ptr(a.data_ptr::<S>()), Ptr(b.data_ptr::<S>()), Ptr(out.data_ptr::<S>()));
    let (sa, sb, so) = (a.strides(), b.strides(), out.strides());
    let run = |i: usize| unsafe {
        let i = i as isize;
        let am = Mat { ptr: Ptr(pa.at(i * sa[0])), rs: sa[1], cs: sa[2] };
        let bm = Mat { ptr: Ptr(pb.at(i * sb[0])), rs: sb[1], cs: sb[2] };
        let cm = MatMut { ptr: Ptr(po.at(i * so[0])), rs: so[1], cs: so[2] };
        crate::backend::cpu::half::gemm::gemm(m, n, k, am, bm, cm, accumulate);
    };
    if batch >= pool().current_num_threads() && m * n * k < 256 * 256 * 256 {
        for_range(batch, 1, |s, e| (s..e).for_each(run));
    } else {
        (0..batch).for_each(run);
    }
}

