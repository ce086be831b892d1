//! The CPU kernels of the reductions (`ops::reduce` holds their semantics). The reduced dims
//! are merged into runs (`Plan`); each output folds its runs with 8 independent accumulators,
//! which is what lets float sums vectorise.
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::backend::cpu::half::map::{self as half_map, Fold};
use crate::backend::cpu::map::Ptr;
use crate::ops::reduce::ReduceOp::{self, *};
use crate::backend::cpu::sum_simd::{self, Run};
use crate::parallel::{for_range, GRAIN};
use crate::strided::{unravel, Plan};
use crate::tensor::Tensor;
use crate::with_dtype;
use half::{bf16, f16};

/// `out` = `op` over the dims `mask` marks (`out` has the kept dims, in order, or keeps them as 1s).
pub fn reduce(op: ReduceOp, x: &Tensor, mask: &[bool], out: &Tensor) -> Result<()> {
    if x.dtype().is_complex() {
        return super::complex::reduce::reduce(op, x, mask, out);
    }
    let (d, out_dtype) = (x.dtype(), out.dtype());
    macro_rules! go {
        ($T:ty, $A:ty, $O:ty, $init:expr, $load:expr, $step:expr, $finish:expr) => {
            go!($T, $A, $O, $init, $load, $step, $finish, None)
        };
        ($T:ty, $A:ty, $O:ty, $init:expr, $load:expr, $step:expr, $finish:expr, $run:expr) => {
            fold::<$T, $A, $O>(x, mask, out, $init, $load, $step, $finish, $run)
        };
    }
    // `sums`: whether the fold is a sum, which has explicit-SIMD runs for f32 and f64; `fold`:
    // the half-precision run (float32 blocks, see `half::map`).
    macro_rules! floats {
        ($init:expr, $step:expr, $finish:expr, $sums:expr, $fold:expr) => {
            match d {
                DType::F32 => go!(f32, f32, f32, $init, |v| v, $step, |a, n| $finish(a, n), sum_simd::f32_sum().filter(|_| $sums)),
                DType::F64 => go!(f64, f64, f64, $init, |v| v, $step, |a, n| $finish(a, n), sum_simd::f64_sum().filter(|_| $sums)),
                DType::F16 => go!(f16, f32, f16, $init, |v: f16| v.to_f32(), $step, |a, n| f16::from_f32($finish(a, n)), Some(half_map::run::<f16>($fold))),
                DType::BF16 => go!(bf16, f32, bf16, $init, |v: bf16| v.to_f32(), $step, |a, n| bf16::from_f32($finish(a, n)), Some(half_map::run::<bf16>($fold))),
                _ => unreachable!(),
            }
        };
    }
    match op {
        Sum if d.is_float() => floats!(0.0, |a, b| a + b, |a, _| a, true, Fold::Sum),
        Prod if d.is_float() => floats!(1.0, |a, b| a * b, |a, _| a, false, Fold::Prod),
        Mean => floats!(0.0, |a, b| a + b, mean_of, true, Fold::Sum),
        Amax if d.is_float() => floats!(f32::NEG_INFINITY as _, |a, b| if a > b || a.is_nan() { a } else { b }, |a, _| a, false, Fold::Max),
        Amin if d.is_float() => floats!(f32::INFINITY as _, |a, b| if a < b || a.is_nan() { a } else { b }, |a, _| a, false, Fold::Min),
        Sum => with_dtype!(d, T, go!(T, i64, i64, 0, |v: T| v.to_i64(), |a: i64, b| a.wrapping_add(b), |a, _| a)),
        Prod => with_dtype!(d, T, go!(T, i64, i64, 1, |v: T| v.to_i64(), |a: i64, b| a.wrapping_mul(b), |a, _| a)),
        Amax => with_dtype!(d, T, go!(T, i64, T, i64::MIN, |v: T| v.to_i64(), |a: i64, b| a.max(b), |a, _| T::from_i64(a))),
        Amin => with_dtype!(d, T, go!(T, i64, T, i64::MAX, |v: T| v.to_i64(), |a: i64, b| a.min(b), |a, _| T::from_i64(a))),
        All | Any if out_dtype == DType::U8 => {
            let (init, all) = (op == All, op == All);
            go!(u8, bool, u8, init, |v: u8| v != 0, move |a: bool, b| if all { a & b } else { a | b }, |a, _| a as u8)
        }
        All => with_dtype!(d, T, go!(T, bool, bool, true, |v: T| v.is_nonzero(), |a: bool, b| a & b, |a, _| a)),
        Any => with_dtype!(d, T, go!(T, bool, bool, false, |v: T| v.is_nonzero(), |a: bool, b| a | b, |a, _| a)),
        CountNonzero => with_dtype!(d, T, go!(T, i64, i64, 0, |v: T| v.is_nonzero() as i64, |a: i64, b| a + b, |a, _| a)),
    }
}

/// Values and first indices of the extremes along `dim` (`max`: maxima, else minima; NaN
/// counts as the extreme).
pub fn arg_reduce(x: &Tensor, dim: usize, max: bool, values: &Tensor, indices: &Tensor) -> Result<()> {
    let n = x.shape()[dim];
    // `dim` moved last with the kept dims in their order (a transpose would swap the last kept
    // dim into `dim`'s place and scramble the outputs' order).
    let order: Vec<i64> = (0..x.ndim()).filter(|&d| d != dim).chain([dim]).map(|d| d as i64).collect();
    let xt = x.permute(&order)?;
    let kept_shape = &xt.shape()[..xt.ndim() - 1];
    let kept_strides = &xt.strides()[..xt.ndim() - 1];
    let s = *xt.strides().last().unwrap();
    with_dtype!(x.dtype(), T, {
        let (px, pv, pi) = (Ptr(xt.data_ptr::<T>()), Ptr(values.data_ptr::<T>()), Ptr(indices.data_ptr::<i64>()));
        let better = |a: T, b: T| -> bool {
            // `a` replaces the current best `b`.
            a.to_f64().is_nan() && !b.to_f64().is_nan() || if max { a > b } else { a < b }
        };
        for_range(values.numel(), (GRAIN / n).max(1), |start, end| {
            let mut idx = unravel(start, kept_shape);
            for o in start..end {
                let base: isize = idx.iter().zip(kept_strides).map(|(&i, &st)| i as isize * st).sum();
                let (mut best, mut at) = (unsafe { *px.at(base) }, 0usize);
                for k in 1..n {
                    let v = unsafe { *px.at(base + k as isize * s) };
                    if better(v, best) {
                        best = v;
                        at = k;
                    }
                }
                unsafe {
                    *pv.at(o as isize) = best;
                    *pi.at(o as isize) = at as i64;
                }
                for d in (0..idx.len()).rev() {
                    idx[d] += 1;
                    if idx[d] < kept_shape[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        });
    });
    Ok(())
}

fn mean_of<A: num_traits::Float>(sum: A, n: usize) -> A {
    sum / A::from(n).unwrap()
}


/// Folds `len` elements at `p` (stride `s`) into `acc`. Contiguous runs go through `N`
/// independent lanes (then 8): several vector chains, since one is bound by the add latency.
#[inline(always)]
unsafe fn fold_run<const N: usize, T: Copy, A: Copy>(
    p: *const T,
    len: usize,
    s: isize,
    init: A,
    acc: A,
    load: &impl Fn(T) -> A,
    step: &impl Fn(A, A) -> A,
) -> A {
    let mut acc = acc;
    if s != 1 {
        for k in 0..len as isize {
            acc = step(acc, load(*p.offset(k * s)));
        }
        return acc;
    }
    let mut k = 0;
    let wide = fold_lanes::<N, T, A>(p, &mut k, len, init, load, step);
    let narrow = fold_lanes::<8, T, A>(p, &mut k, len, init, load, step);
    acc = step(acc, step(fold_tree(wide, step), fold_tree(narrow, step)));
    for k in k..len {
        acc = step(acc, load(*p.add(k)));
    }
    acc
}

/// Folds `N` lanes (a power of two) by halves: a chain through every lane would cost more
/// than the main loop on rows of a few thousand elements.
#[inline(always)]
fn fold_tree<const N: usize, A: Copy>(mut lanes: [A; N], step: &impl Fn(A, A) -> A) -> A {
    let mut n = N;
    while n > 1 {
        n /= 2;
        for i in 0..n {
            lanes[i] = step(lanes[i], lanes[i + n]);
        }
    }
    lanes[0]
}

/// Folds whole groups of `N` elements from `*k` on into `N` lanes. The lanes are rebuilt by
/// value, not updated in place: that is what lets LLVM keep them in vector registers.
#[inline(always)]
unsafe fn fold_lanes<const N: usize, T: Copy, A: Copy>(
    p: *const T,
    k: &mut usize,
    len: usize,
    init: A,
    load: &impl Fn(T) -> A,
    step: &impl Fn(A, A) -> A,
) -> [A; N] {
    let mut lanes = [init; N];
    while *k + N <= len {
        let q = p.add(*k);
        lanes = std::array::from_fn(|l| step(lanes[l], load(*q.add(l))));
        *k += N;
    }
    lanes
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fold_run_avx2<T: Copy, A: Copy>(
    p: *const T,
    len: usize,
    s: isize,
    init: A,
    acc: A,
    load: &impl Fn(T) -> A,
    step: &impl Fn(A, A) -> A,
) -> A {
    fold_run::<32, T, A>(p, len, s, init, acc, load, step)
}

#[allow(clippy::too_many_arguments)]
unsafe fn fold_any<T: Copy, A: Copy>(
    p: *const T,
    len: usize,
    s: isize,
    init: A,
    acc: A,
    load: &impl Fn(T) -> A,
    step: &impl Fn(A, A) -> A,
    run: Option<Run<T, A>>,
) -> A {
    if let (Some(run), 1) = (run, s) {
        return step(acc, run(p, len));
    }
    #[cfg(target_arch = "x86_64")]
    if crate::backend::cpu::map::has_avx2() {
        return fold_run_avx2(p, len, s, init, acc, load, step);
    }
    fold_run::<8, T, A>(p, len, s, init, acc, load, step)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn fold<T: Element, A: Copy + Send + Sync, O: Element>(
    x: &Tensor,
    mask: &[bool],
    out: &Tensor,
    init: A,
    load: impl Fn(T) -> A + Sync,
    step: impl Fn(A, A) -> A + Sync,
    finish: impl Fn(A, usize) -> O + Sync,
    run: Option<Run<T, A>>,
) -> Result<()> {
    let (kept, red): (Vec<usize>, Vec<usize>) = (0..x.ndim()).partition(|&d| !mask[d]);
    let red_shape: Vec<usize> = red.iter().map(|&d| x.shape()[d]).collect();
    let count: usize = red_shape.iter().product();
    let outputs = out.numel();
    let po = Ptr(out.data_ptr::<O>());
    if outputs == 0 {
        return Ok(());
    }
    if outputs == 1 && x.numel() >= 2 * GRAIN {
        // One output: fold pieces of the flat data on every thread, then fold the partials in
        // piece order, so the result does not depend on which thread finished first.
        let xc = x.contiguous()?;
        let px = Ptr(xc.data_ptr::<T>());
        let partials = std::sync::Mutex::new(Vec::new());
        for_range(count, GRAIN, |s, e| {
            let part = unsafe { fold_any(px.at(s as isize), e - s, 1, init, init, &load, &step, run) };
            partials.lock().unwrap().push((s, part));
        });
        let mut partials = partials.into_inner().unwrap();
        partials.sort_unstable_by_key(|p| p.0);
        let total = partials.into_iter().map(|p| p.1).fold(init, &step);
        unsafe { *po.at(0) = finish(total, count) };
        return Ok(());
    }
    let red_strides: Vec<isize> = red.iter().map(|&d| x.strides()[d]).collect();
    let red_plan = Plan::new(&red_shape, [&red_strides]);
    let kept_shape: Vec<usize> = kept.iter().map(|&d| x.shape()[d]).collect();
    let kept_strides: Vec<isize> = kept.iter().map(|&d| x.strides()[d]).collect();
    let px = Ptr(x.data_ptr::<T>());
    if kept_strides.last() == Some(&1) && red_plan.inner_strides()[0] != 1 && count > 0 {
        let cols = Columns { shape: &kept_shape, strides: &kept_strides, red_plan: &red_plan, count };
        cols.fold(px, po, init, &load, &step, &finish);
        return Ok(());
    }
    let grain = (GRAIN / count.max(1)).max(1);
    // Rows of a contiguous tensor reduced over its trailing dims: a row takes a fraction of a
    // microsecond, so it goes straight to the kernel, without the general walk below.
    let trailing = mask.iter().skip_while(|&&m| !m).all(|&m| m);
    if let Some(run) = run.filter(|_| trailing && x.is_contiguous() && count > 0) {
        for_range(outputs, grain, |start, end| unsafe {
            for o in start..end {
                *po.at(o as isize) = finish(step(init, run(px.at((o * count) as isize), count)), count);
            }
        });
        return Ok(());
    }
    for_range(outputs, grain, |start, end| {
        let mut idx = unravel(start, &kept_shape);
        for o in start..end {
            let base: isize = idx.iter().zip(&kept_strides).map(|(&i, &s)| i as isize * s).sum();
            let mut acc = init;
            if count > 0 {
                red_plan.for_each_run_serial(|off, len, s| {
                    acc = unsafe { fold_any(px.at(base + off), len, s, init, acc, &load, &step, run) };
                });
            }
            unsafe { *po.at(o as isize) = finish(acc, count) };
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < kept_shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    });
    Ok(())
}

/// A reduction over outer dims whose innermost kept dim is contiguous (`sum(dim=0)` of a
/// matrix): walking each output's column would touch a new cache line per element, so each task
/// owns a block of adjacent outputs and streams whole row pieces into a block of accumulators.
struct Columns<'a> {
    shape: &'a [usize],
    strides: &'a [isize],
    red_plan: &'a Plan<1>,
    count: usize,
}

const COLUMN_BLOCK: usize = 256;

impl Columns<'_> {
    pub(crate) fn fold<T: Element, A: Copy + Send + Sync, O: Element>(
        &self,
        px: Ptr<T>,
        po: Ptr<O>,
        init: A,
        load: &(impl Fn(T) -> A + Sync),
        step: &(impl Fn(A, A) -> A + Sync),
        finish: &(impl Fn(A, usize) -> O + Sync),
    ) {
        let inner = *self.shape.last().unwrap();
        let outer_shape = &self.shape[..self.shape.len() - 1];
        let blocks_per_row = inner.div_ceil(COLUMN_BLOCK);
        let blocks = outer_shape.iter().product::<usize>() * blocks_per_row;
        let grain = (GRAIN / (COLUMN_BLOCK * self.count).max(1)).max(1);
        for_range(blocks, grain, |start, end| {
            let mut acc = [init; COLUMN_BLOCK];
            for b in start..end {
                let (row, piece) = (b / blocks_per_row, b % blocks_per_row);
                let first = piece * COLUMN_BLOCK;
                let len = COLUMN_BLOCK.min(inner - first);
                let idx = unravel(row, outer_shape);
                let base: isize = idx.iter().zip(self.strides).map(|(&i, &s)| i as isize * s).sum::<isize>() + first as isize;
                acc[..len].fill(init);
                self.red_plan.for_each_run_serial(|off, rlen, s| {
                    for j in 0..rlen as isize {
                        unsafe { accumulate_any(&mut acc[..len], px.at(base + off + j * s), load, step) };
                    }
                });
                let out_at = (row * inner + first) as isize;
                for (i, &a) in acc[..len].iter().enumerate() {
                    unsafe { *po.at(out_at + i as isize) = finish(a, self.count) };
                }
            }
        });
    }
}

#[inline(always)]
unsafe fn accumulate<T: Copy, A: Copy>(acc: &mut [A], p: *const T, load: &impl Fn(T) -> A, step: &impl Fn(A, A) -> A) {
    for (i, a) in acc.iter_mut().enumerate() {
        *a = step(*a, load(*p.add(i)));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn accumulate_avx2<T: Copy, A: Copy>(acc: &mut [A], p: *const T, load: &impl Fn(T) -> A, step: &impl Fn(A, A) -> A) {
    accumulate(acc, p, load, step)
}

unsafe fn accumulate_any<T: Copy, A: Copy>(acc: &mut [A], p: *const T, load: &impl Fn(T) -> A, step: &impl Fn(A, A) -> A) {
    #[cfg(target_arch = "x86_64")]
    if crate::backend::cpu::map::has_avx2() {
        return accumulate_avx2(acc, p, load, step);
    }
    accumulate(acc, p, load, step)
}

