//! Half-precision elementwise ops and reduction runs as float32 kernels between block
//! conversions. Contiguous runs go `BLOCK` elements at a time through a stack buffer; strided
//! runs (rare for these dtypes) convert one element at a time.
use super::{Half, BLOCK};
use crate::backend::cpu::map::{has_avx2, has_avx512, Ptr};
use crate::strided::Plan;
use crate::tensor::Tensor;

/// Applies `f` to `buf` in place, compiled for AVX-512 or AVX2 when the CPU has it so `f`
/// vectorises.
#[inline(always)]
fn apply1(buf: &mut [f32], f: &impl Fn(f32) -> f32) {
    #[inline(always)]
    fn plain(buf: &mut [f32], f: &impl Fn(f32) -> f32) {
        buf.iter_mut().for_each(|v| *v = f(*v));
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2(buf: &mut [f32], f: &impl Fn(f32) -> f32) {
        plain(buf, f)
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn avx512(buf: &mut [f32], f: &impl Fn(f32) -> f32) {
        plain(buf, f)
    }
    #[cfg(target_arch = "x86_64")]
    match (has_avx512(), has_avx2()) {
        (true, _) => return unsafe { avx512(buf, f) },
        (_, true) => return unsafe { avx2(buf, f) },
        _ => {}
    }
    plain(buf, f)
}

/// `a[i] = f(a[i], b[i])`, compiled like `apply1`.
#[inline(always)]
fn apply2(a: &mut [f32], b: &[f32], f: &impl Fn(f32, f32) -> f32) {
    #[inline(always)]
    fn plain(a: &mut [f32], b: &[f32], f: &impl Fn(f32, f32) -> f32) {
        a.iter_mut().zip(b).for_each(|(x, &y)| *x = f(*x, y));
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2(a: &mut [f32], b: &[f32], f: &impl Fn(f32, f32) -> f32) {
        plain(a, b, f)
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn avx512(a: &mut [f32], b: &[f32], f: &impl Fn(f32, f32) -> f32) {
        plain(a, b, f)
    }
    #[cfg(target_arch = "x86_64")]
    match (has_avx512(), has_avx2()) {
        (true, _) => return unsafe { avx512(a, b, f) },
        (_, true) => return unsafe { avx2(a, b, f) },
        _ => {}
    }
    plain(a, b, f)
}

/// `dst[i] = round(f(src[i]))` for half `src` and `dst` of one shape (`dst` may be `src`).
pub fn unary_into<H: Half>(src: &Tensor, dst: &Tensor, f: impl Fn(f32) -> f32 + Sync) {
    let plan = Plan::new(dst.shape(), [dst.strides(), src.strides()]);
    let [so, si] = plan.inner_strides();
    let (po, pi) = (Ptr(dst.data_ptr::<H>()), Ptr(src.data_ptr::<H>()));
    plan.for_each_run(|[oo, oi], n| unsafe {
        let (o, i) = (po.at(oo), pi.at(oi) as *const H);
        if so != 1 || si != 1 {
            for k in 0..n as isize {
                *o.offset(k * so) = H::from_f32_scalar(f((*i.offset(k * si)).to_f32()));
            }
            return;
        }
        let mut buf = [0f32; BLOCK];
        for start in (0..n).step_by(BLOCK) {
            let len = BLOCK.min(n - start);
            H::widen(i.add(start), buf.as_mut_ptr(), len);
            apply1(&mut buf[..len], &f);
            H::narrow(buf.as_ptr(), o.add(start), len);
        }
    });
}

/// Reads `len` elements from a run of stride `s` (0: one broadcast value) into `buf`.
unsafe fn load<H: Half>(p: *const H, s: isize, buf: &mut [f32]) {
    match s {
        1 => H::widen(p, buf.as_mut_ptr(), buf.len()),
        0 => buf.fill((*p).to_f32()),
        _ => buf.iter_mut().enumerate().for_each(|(k, v)| *v = (*p.offset(k as isize * s)).to_f32()),
    }
}

/// `dst[i] = round(f(a[i], b[i]))` for half operands already broadcast to `dst`'s shape.
pub fn binary_into<H: Half>(a: &Tensor, b: &Tensor, dst: &Tensor, f: impl Fn(f32, f32) -> f32 + Sync) {
    let plan = Plan::new(dst.shape(), [dst.strides(), a.strides(), b.strides()]);
    let [so, sa, sb] = plan.inner_strides();
    let (po, pa, pb) = (Ptr(dst.data_ptr::<H>()), Ptr(a.data_ptr::<H>()), Ptr(b.data_ptr::<H>()));
    plan.for_each_run(|[oo, oa, ob], n| unsafe {
        let (o, a, b) = (po.at(oo), pa.at(oa) as *const H, pb.at(ob) as *const H);
        let (mut x, mut y) = ([0f32; BLOCK], [0f32; BLOCK]);
        for start in (0..n).step_by(BLOCK) {
            let len = BLOCK.min(n - start);
            let at = start as isize;
            load(a.offset(at * sa), sa, &mut x[..len]);
            load(b.offset(at * sb), sb, &mut y[..len]);
            apply2(&mut x[..len], &y[..len], &f);
            if so == 1 {
                H::narrow(x.as_ptr(), o.add(start), len);
            } else {
                for (k, &v) in x[..len].iter().enumerate() {
                    *o.offset((start + k) as isize * so) = H::from_f32_scalar(v);
                }
            }
        }
    });
}

/// The float reductions with half-precision runs.
#[derive(Clone, Copy)]
pub enum Fold {
    Sum,
    Prod,
    Max,
    Min,
}

/// A contiguous-run folder for `fold` (see `reduce`): widens blocks and folds them in float32,
/// or for sums, in one pass where the path has a kernel for it.
pub fn run<H: Half>(op: Fold) -> super::super::sum_simd::Run<H, f32> {
    match op {
        Fold::Sum => H::fused_sum().unwrap_or(fold_blocks::<H, 0>),
        Fold::Prod => fold_blocks::<H, 1>,
        Fold::Max => fold_blocks::<H, 2>,
        Fold::Min => fold_blocks::<H, 3>,
    }
}

/// Folds `len` contiguous half elements in float32; `OP` indexes `Fold` (a const so each op is
/// its own function pointer). Max/min propagate NaN as `reduce`'s steps do.
unsafe fn fold_blocks<H: Half, const OP: u8>(p: *const H, len: usize) -> f32 {
    let step = |a: f32, b: f32| match OP {
        0 => a + b,
        1 => a * b,
        2 => if a > b || a.is_nan() { a } else { b },
        _ => if a < b || a.is_nan() { a } else { b },
    };
    let init = [0.0, 1.0, f32::NEG_INFINITY, f32::INFINITY][OP as usize];
    let sum = crate::backend::cpu::sum_simd::f32_sum();
    let mut buf = [0f32; BLOCK];
    let mut acc = init;
    for start in (0..len).step_by(BLOCK) {
        let n = BLOCK.min(len - start);
        H::widen(p.add(start), buf.as_mut_ptr(), n);
        let part = match (OP, sum) {
            (0, Some(sum)) => sum(buf.as_ptr(), n),
            _ => fold_lanes(&buf[..n], init, &step),
        };
        acc = step(acc, part);
    }
    acc
}

/// Eight lanes wide, so the plain loop vectorises (under AVX2 when the CPU has it).
#[inline(always)]
fn fold_lanes(x: &[f32], init: f32, step: &impl Fn(f32, f32) -> f32) -> f32 {
    #[inline(always)]
    fn plain(x: &[f32], init: f32, step: &impl Fn(f32, f32) -> f32) -> f32 {
        let mut lanes = [init; 8];
        let chunks = x.chunks_exact(8);
        let rest = chunks.remainder();
        for c in chunks {
            lanes = std::array::from_fn(|l| step(lanes[l], c[l]));
        }
        let mut acc = lanes.into_iter().fold(init, step);
        for &v in rest {
            acc = step(acc, v);
        }
        acc
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2(x: &[f32], init: f32, step: &impl Fn(f32, f32) -> f32) -> f32 {
        plain(x, init, step)
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        return unsafe { avx2(x, init, step) };
    }
    plain(x, init, step)
}

/// `dst = src` cast, when it is a float32 <-> bfloat16/float16 conversion (the block
/// converters); `false` leaves other pairs to the generic cast.
pub fn convert_into(src: &Tensor, dst: &Tensor) -> bool {
    use crate::dtype::DType::*;
    use half::{bf16, f16};
    match (src.dtype(), dst.dtype()) {
        (F32, BF16) => narrow_into::<bf16>(src, dst),
        (F32, F16) => narrow_into::<f16>(src, dst),
        (BF16, F32) => widen_into::<bf16>(src, dst),
        (F16, F32) => widen_into::<f16>(src, dst),
        _ => return false,
    }
    true
}

fn narrow_into<H: Half>(src: &Tensor, dst: &Tensor) {
    let plan = Plan::new(dst.shape(), [dst.strides(), src.strides()]);
    let [so, si] = plan.inner_strides();
    let (po, pi) = (Ptr(dst.data_ptr::<H>()), Ptr(src.data_ptr::<f32>()));
    plan.for_each_run(|[oo, oi], n| unsafe {
        let (o, i) = (po.at(oo), pi.at(oi) as *const f32);
        if so == 1 && si == 1 {
            return H::narrow(i, o, n);
        }
        for k in 0..n as isize {
            *o.offset(k * so) = H::from_f32_scalar(*i.offset(k * si));
        }
    });
}

fn widen_into<H: Half>(src: &Tensor, dst: &Tensor) {
    let plan = Plan::new(dst.shape(), [dst.strides(), src.strides()]);
    let [so, si] = plan.inner_strides();
    let (po, pi) = (Ptr(dst.data_ptr::<f32>()), Ptr(src.data_ptr::<H>()));
    plan.for_each_run(|[oo, oi], n| unsafe {
        let (o, i) = (po.at(oo), pi.at(oi) as *const H);
        if so == 1 && si == 1 {
            return H::widen(i, o, n);
        }
        for k in 0..n as isize {
            *o.offset(k * so) = (*i.offset(k * si)).to_f32();
        }
    });
}
