//! Typed elementwise drivers. Each walks a `Plan` and hands runs to a loop over raw pointers
//! (never slices: in-place ops alias input and output). The loop bodies are compiled twice, once
//! for the baseline target and once with AVX2+FMA, picked at runtime, so a generic build still
//! vectorises `f` 8 lanes wide.
use crate::dtype::Element;
use crate::strided::Plan;
use crate::tensor::Tensor;

/// A raw pointer that may cross into pool threads; kernels write disjoint runs.
#[derive(Clone, Copy)]
pub struct Ptr<T>(pub *mut T);
unsafe impl<T> Send for Ptr<T> {}
unsafe impl<T> Sync for Ptr<T> {}
impl<T> Ptr<T> {
    /// The pointer `offset` elements on (the caller keeps it inside the allocation).
    #[inline(always)]
    pub fn at(self, offset: isize) -> *mut T {
        unsafe { self.0.offset(offset) }
    }
}

/// Whether this CPU has AVX2 and FMA (the second compilation of the loop bodies).
pub(crate) fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The mask of the first `n` (any count; 16 or more is all) of 16 vector lanes.
pub(crate) fn lanes(n: usize) -> u16 {
    if n >= 16 { u16::MAX } else { (1u16 << n) - 1 }
}

/// Asks for the cache line at `p` (any address: a prefetch never faults).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    }
}

/// Asks for the cache line at `p` ahead of a write (`prefetchw`): the line arrives owned, so the
/// store does not wait for it.
#[inline(always)]
pub(crate) fn prefetch_for_write<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_ET0 }>(p as *const i8)
    }
}

/// Whether this CPU has AVX-512F, detected once.
pub(crate) fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static AVX512: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AVX512.get_or_init(|| std::is_x86_feature_detected!("avx512f"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Elements per block of an in-place map (see `in_blocks`).
const IN_PLACE_BLOCK: usize = 128;

/// Whether an output run starts where an input run does: an in-place op (`x.relu_()`, `x += y`).
#[inline(always)]
fn same_address<O, I>(o: *mut O, i: *const I) -> bool {
    o as usize == i as usize
}

/// Runs `body(start, len, buf)` over `n` elements in blocks of at most `IN_PLACE_BLOCK`, with a
/// stack buffer for the block's input. An in-place loop (output run == input run) fails LLVM's
/// runtime overlap check and would run its scalar fallback, several times slower for the
/// math-heavy maps (`silu_` 7x); reading the block into a local buffer first leaves a loop whose
/// operands provably do not overlap, which vectorises. Reading a whole block before writing it is
/// what the element-by-element loop did for an exactly aliased run.
#[inline(always)]
unsafe fn in_blocks<T: Copy>(n: usize, mut body: impl FnMut(usize, usize, &mut [T])) {
    let mut buf = [std::mem::MaybeUninit::<T>::uninit(); IN_PLACE_BLOCK];
    // The block is written (copied in) by `body` before it reads it.
    let buf = std::slice::from_raw_parts_mut(buf.as_mut_ptr() as *mut T, IN_PLACE_BLOCK);
    for start in (0..n).step_by(IN_PLACE_BLOCK) {
        body(start, IN_PLACE_BLOCK.min(n - start), buf);
    }
}

#[inline(always)]
unsafe fn run1<I: Copy, O>(o: *mut O, so: isize, i: *const I, si: isize, n: usize, f: &impl Fn(I) -> O) {
    if so == 1 && si == 1 && same_address(o, i) {
        return in_blocks(n, |start, len, buf: &mut [I]| {
            std::ptr::copy_nonoverlapping(i.add(start), buf.as_mut_ptr(), len);
            for k in 0..len {
                *o.add(start + k) = f(buf[k]);
            }
        });
    }
    if so == 1 && si == 1 {
        for k in 0..n {
            *o.add(k) = f(*i.add(k));
        }
    } else {
        for k in 0..n as isize {
            *o.offset(k * so) = f(*i.offset(k * si));
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run1_avx2<I: Copy, O>(o: *mut O, so: isize, i: *const I, si: isize, n: usize, f: &impl Fn(I) -> O) {
    run1(o, so, i, si, n, f)
}

/// `run1` with 512-bit vectors: twice the lanes for the math-heavy maps (exp, gelu, sigmoid).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn run1_avx512<I: Copy, O>(o: *mut O, so: isize, i: *const I, si: isize, n: usize, f: &impl Fn(I) -> O) {
    run1(o, so, i, si, n, f)
}

#[inline(always)]
unsafe fn run2<A: Copy, B: Copy, O>(
    o: *mut O,
    s: [isize; 3],
    a: *const A,
    b: *const B,
    n: usize,
    f: &impl Fn(A, B) -> O,
) {
    match s {
        [1, 1, s_b] if same_address(o, a) => {
            return in_blocks(n, |start, len, buf: &mut [A]| {
                std::ptr::copy_nonoverlapping(a.add(start), buf.as_mut_ptr(), len);
                if s_b == 0 {
                    let bv = *b;
                    for k in 0..len {
                        *o.add(start + k) = f(buf[k], bv);
                    }
                } else if s_b == 1 && !same_address(o, b) {
                    for k in 0..len {
                        *o.add(start + k) = f(buf[k], *b.add(start + k));
                    }
                } else {
                    for k in 0..len {
                        *o.add(start + k) = f(buf[k], *b.offset((start + k) as isize * s_b));
                    }
                }
            });
        }
        [1, s_a, 1] if same_address(o, b) && !same_address(o, a) => {
            return in_blocks(n, |start, len, buf: &mut [B]| {
                std::ptr::copy_nonoverlapping(b.add(start), buf.as_mut_ptr(), len);
                if s_a == 0 {
                    let av = *a;
                    for k in 0..len {
                        *o.add(start + k) = f(av, buf[k]);
                    }
                } else {
                    for k in 0..len {
                        *o.add(start + k) = f(*a.offset((start + k) as isize * s_a), buf[k]);
                    }
                }
            });
        }
        [1, 1, 1] => {
            for k in 0..n {
                *o.add(k) = f(*a.add(k), *b.add(k));
            }
        }
        [1, 1, 0] => {
            let bv = *b;
            for k in 0..n {
                *o.add(k) = f(*a.add(k), bv);
            }
        }
        [1, 0, 1] => {
            let av = *a;
            for k in 0..n {
                *o.add(k) = f(av, *b.add(k));
            }
        }
        [so, sa, sb] => {
            for k in 0..n as isize {
                *o.offset(k * so) = f(*a.offset(k * sa), *b.offset(k * sb));
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run2_avx2<A: Copy, B: Copy, O>(
    o: *mut O,
    s: [isize; 3],
    a: *const A,
    b: *const B,
    n: usize,
    f: &impl Fn(A, B) -> O,
) {
    run2(o, s, a, b, n, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn run2_avx512<A: Copy, B: Copy, O>(
    o: *mut O,
    s: [isize; 3],
    a: *const A,
    b: *const B,
    n: usize,
    f: &impl Fn(A, B) -> O,
) {
    run2(o, s, a, b, n, f)
}

/// `dst[i] = f(src[i])`; `src` must already have `dst`'s shape (broadcast views are fine).
pub fn unary_into<I: Element, O: Element>(src: &Tensor, dst: &Tensor, f: impl Fn(I) -> O + Sync) {
    let plan = Plan::new(dst.shape(), [dst.strides(), src.strides()]);
    let [so, si] = plan.inner_strides();
    let (po, pi) = (Ptr(dst.data_ptr::<O>()), Ptr(src.data_ptr::<I>()));
    let (avx2, avx512) = (has_avx2(), has_avx512());
    plan.for_each_run(|[oo, oi], n| unsafe {
        let (o, i) = (po.at(oo), pi.at(oi) as *const I);
        #[cfg(target_arch = "x86_64")]
        match (avx512, avx2) {
            (true, _) => return run1_avx512(o, so, i, si, n, &f),
            (_, true) => return run1_avx2(o, so, i, si, n, &f),
            _ => {}
        }
        let _ = (avx2, avx512);
        run1(o, so, i, si, n, &f)
    });
}

/// `unary_into` for a vectorisable `fast` that is right only where `exact(x)`, and a scalar
/// `slow` for the other lanes (sin and cos: their vectorisable range reduction stops at 2^20).
/// Each block of a run is read into a stack buffer (so an in-place op keeps its inputs), mapped
/// with `fast` in one vectorised loop, then its few inexact lanes are redone with `slow`.
pub fn unary_into_with_slow_lanes<T: Element>(
    src: &Tensor,
    dst: &Tensor,
    fast: impl Fn(T) -> T + Sync,
    exact: impl Fn(T) -> bool + Sync,
    slow: impl Fn(T) -> T + Sync,
) {
    let plan = Plan::new(dst.shape(), [dst.strides(), src.strides()]);
    let [so, si] = plan.inner_strides();
    let (po, pi) = (Ptr(dst.data_ptr::<T>()), Ptr(src.data_ptr::<T>()));
    let (avx2, avx512) = (has_avx2(), has_avx512());
    let lanes = SlowLanes { fast, exact, slow };
    plan.for_each_run(|[oo, oi], n| unsafe {
        let (o, i) = (po.at(oo), pi.at(oi) as *const T);
        #[cfg(target_arch = "x86_64")]
        match (avx512, avx2) {
            (true, _) => return run_slow_lanes_avx512(o, so, i, si, n, &lanes),
            (_, true) => return run_slow_lanes_avx2(o, so, i, si, n, &lanes),
            _ => {}
        }
        let _ = (avx2, avx512);
        run_slow_lanes(o, so, i, si, n, &lanes)
    });
}

struct SlowLanes<F, E, S> {
    fast: F,
    exact: E,
    slow: S,
}

/// No closures inside (unlike `in_blocks`): a closure is its own function, compiled without the
/// caller's AVX2, and LLVM left this one out of line.
#[inline(always)]
unsafe fn run_slow_lanes<T: Copy, F: Fn(T) -> T, E: Fn(T) -> bool, S: Fn(T) -> T>(
    o: *mut T,
    so: isize,
    i: *const T,
    si: isize,
    n: usize,
    f: &SlowLanes<F, E, S>,
) {
    let mut input = [std::mem::MaybeUninit::<T>::uninit(); IN_PLACE_BLOCK];
    let mut output = [std::mem::MaybeUninit::<T>::uninit(); IN_PLACE_BLOCK];
    for start in (0..n).step_by(IN_PLACE_BLOCK) {
        let len = IN_PLACE_BLOCK.min(n - start);
        // Both buffers are written before they are read.
        let buf = std::slice::from_raw_parts_mut(input.as_mut_ptr() as *mut T, len);
        let out = std::slice::from_raw_parts_mut(output.as_mut_ptr() as *mut T, len);
        for (k, v) in buf.iter_mut().enumerate() {
            *v = *i.offset((start + k) as isize * si);
        }
        for (r, &v) in out.iter_mut().zip(buf.iter()) {
            *r = (f.fast)(v);
        }
        let mut all_exact = true;
        for &v in buf.iter() {
            all_exact &= (f.exact)(v);
        }
        if !all_exact {
            for (r, &v) in out.iter_mut().zip(buf.iter()) {
                if !(f.exact)(v) {
                    *r = (f.slow)(v);
                }
            }
        }
        for (k, &r) in out.iter().enumerate() {
            *o.offset((start + k) as isize * so) = r;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_slow_lanes_avx2<T: Copy, F: Fn(T) -> T, E: Fn(T) -> bool, S: Fn(T) -> T>(
    o: *mut T,
    so: isize,
    i: *const T,
    si: isize,
    n: usize,
    f: &SlowLanes<F, E, S>,
) {
    run_slow_lanes(o, so, i, si, n, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn run_slow_lanes_avx512<T: Copy, F: Fn(T) -> T, E: Fn(T) -> bool, S: Fn(T) -> T>(
    o: *mut T,
    so: isize,
    i: *const T,
    si: isize,
    n: usize,
    f: &SlowLanes<F, E, S>,
) {
    run_slow_lanes(o, so, i, si, n, f)
}

/// `dst[i] = f(a[i], b[i])`; operands already broadcast to `dst`'s shape.
pub fn binary_into<A: Element, B: Element, O: Element>(
    a: &Tensor,
    b: &Tensor,
    dst: &Tensor,
    f: impl Fn(A, B) -> O + Sync,
) {
    let plan = Plan::new(dst.shape(), [dst.strides(), a.strides(), b.strides()]);
    let s = plan.inner_strides();
    let (po, pa, pb) = (Ptr(dst.data_ptr::<O>()), Ptr(a.data_ptr::<A>()), Ptr(b.data_ptr::<B>()));
    let (avx2, avx512) = (has_avx2(), has_avx512());
    plan.for_each_run(|[oo, oa, ob], n| unsafe {
        let (o, a, b) = (po.at(oo), pa.at(oa) as *const A, pb.at(ob) as *const B);
        #[cfg(target_arch = "x86_64")]
        match (avx512, avx2) {
            (true, _) => return run2_avx512(o, s, a, b, n, &f),
            (_, true) => return run2_avx2(o, s, a, b, n, &f),
            _ => {}
        }
        let _ = (avx2, avx512);
        run2(o, s, a, b, n, &f)
    });
}

/// `dst[i] = f(a[i], b[i], c[i])`; used by `where`, `lerp`, `addcmul`-style ops.
pub fn ternary_into<A: Element, B: Element, C: Element, O: Element>(
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    dst: &Tensor,
    f: impl Fn(A, B, C) -> O + Sync,
) {
    let plan = Plan::new(dst.shape(), [dst.strides(), a.strides(), b.strides(), c.strides()]);
    let [so, sa, sb, sc] = plan.inner_strides();
    let (po, pa, pb, pc) =
        (Ptr(dst.data_ptr::<O>()), Ptr(a.data_ptr::<A>()), Ptr(b.data_ptr::<B>()), Ptr(c.data_ptr::<C>()));
    plan.for_each_run(|[oo, oa, ob, oc], n| unsafe {
        for k in 0..n as isize {
            *po.at(oo + k * so) = f(*pa.at(oa + k * sa), *pb.at(ob + k * sb), *pc.at(oc + k * sc));
        }
    });
}

/// Visits every element of `t` in logical order with its flat index (serial; for the few ops
/// whose result depends on order, like `nonzero`).
pub fn for_each_indexed<T: Element>(t: &Tensor, mut f: impl FnMut(usize, T)) {
    let shape = t.shape();
    let strides = t.strides();
    let p = t.data_ptr::<T>();
    let mut idx = vec![0usize; shape.len()];
    for flat in 0..t.numel() {
        let off: isize = idx.iter().zip(strides).map(|(&i, &s)| i as isize * s).sum();
        f(flat, unsafe { *p.offset(off) });
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}
