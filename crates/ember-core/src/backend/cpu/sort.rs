//! Sorting and order statistics along one dim: sort, topk, k-th value, median, mode, quantile,
//! unique and searchsorted. Every kernel sees its input as rows (one per index of the other
//! dims, reached through the tensor's own strides, so nothing is copied to make it contiguous)
//! and runs the rows in parallel. NaN sorts as the largest value, as in PyTorch.
use crate::backend::cpu::map::Ptr;
use crate::bail;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::ops::sort::{Interpolation, Statistic};
use crate::parallel::{for_range, pool, GRAIN};
use crate::strided::unravel;
use crate::tensor::Tensor;
use crate::with_dtype;
use rayon::slice::ParallelSliceMut;
use std::cmp::Ordering;

pub fn is_nan<T: Element + PartialOrd>(a: &T) -> bool {
    a.partial_cmp(a).is_none()
}

/// Ascending total order: NaN is larger than every number and equal to itself (PyTorch's order).
pub fn cmp_asc<T: Element + PartialOrd>(a: &T, b: &T) -> Ordering {
    a.partial_cmp(b).unwrap_or_else(|| is_nan(a).cmp(&is_nan(b)))
}

/// (value, original index) ascending; equal values keep their original order, which makes every
/// sort here stable even through the faster unstable algorithms.
fn asc_pair<T: Element + PartialOrd>(a: &(T, i64), b: &(T, i64)) -> Ordering {
    cmp_asc(&a.0, &b.0).then(a.1.cmp(&b.1))
}

/// (value, original index) descending by value; equal values still in original order.
fn desc_pair<T: Element + PartialOrd>(a: &(T, i64), b: &(T, i64)) -> Ordering {
    cmp_asc(&b.0, &a.0).then(a.1.cmp(&b.1))
}

/// Runs `$body` with `$order` bound to the pair comparator of element type `$T` for
/// `$descending`: a fn item, not a fn pointer, so the sort loops inline it.
macro_rules! with_pair_order {
    ($descending:expr, $T:ty, $order:ident, $body:expr) => {
        if $descending {
            let $order = desc_pair::<$T>;
            $body
        } else {
            let $order = asc_pair::<$T>;
            $body
        }
    };
}

/// Rows at least this long sort by radix (linear in their length) instead of by comparisons.
const RADIX_MIN: usize = 512;

/// An unsigned key ordered as `cmp_asc` orders values (NaN last, -0.0 equal to 0.0), for the
/// radix sort.
fn radix_key<T: Element + PartialOrd>(v: T) -> u64 {
    if !T::DTYPE.is_float() {
        return (v.to_i64() as u64) ^ (1 << 63);
    }
    // Narrow floats keep 32-bit keys: the radix sort skips the constant high bytes.
    let (bits, sign) = if T::DTYPE.size() <= 4 {
        let x = v.to_f32();
        if x.is_nan() {
            return u64::MAX;
        }
        ((x + 0.0).to_bits() as u64, 1 << 31) // -0.0 + 0.0 is +0.0
    } else {
        let x = v.to_f64();
        if x.is_nan() {
            return u64::MAX;
        }
        ((x + 0.0).to_bits(), 1 << 63)
    };
    if bits & sign != 0 {
        !bits & (sign | (sign - 1))
    } else {
        bits | sign
    }
}

/// Sorts a row of (value, index) pairs that arrive in index order, by value with ties in index
/// order. The radix sort is stable, so it keeps that tie order by itself.
fn sort_pairs<T: Element + PartialOrd>(pairs: &mut [(T, i64)], descending: bool) {
    match (pairs.len() >= RADIX_MIN, descending) {
        (true, false) => radsort::sort_by_key(pairs, |p| radix_key(p.0)),
        (true, true) => radsort::sort_by_key(pairs, |p| !radix_key(p.0)),
        (false, _) => with_pair_order!(descending, T, order, pairs.sort_unstable_by(order)),
    }
}

/// The rows of same-shaped tensors along `dim` (their lengths along `dim` may differ): every
/// index of the other dims names one row, which each tensor reaches through its own strides.
pub struct Rows<const N: usize> {
    kept_shape: Vec<usize>,
    kept_strides: [Vec<isize>; N],
    /// Each tensor's stride along `dim`.
    pub steps: [isize; N],
}

impl<const N: usize> Rows<N> {
    pub fn new(tensors: [&Tensor; N], dim: usize) -> Self {
        let kept = |t: &Tensor| -> Vec<usize> { (0..t.ndim()).filter(|&i| i != dim).collect() };
        let kept_shape = kept(tensors[0]).iter().map(|&i| tensors[0].shape()[i]).collect();
        let kept_strides = std::array::from_fn(|k| kept(tensors[k]).iter().map(|&i| tensors[k].strides()[i]).collect());
        let steps = std::array::from_fn(|k| tensors[k].strides()[dim]);
        Rows { kept_shape, kept_strides, steps }
    }

    pub fn count(&self) -> usize {
        self.kept_shape.iter().product()
    }

    /// Calls `f(row, offsets)` for every row in parallel; `work` is one row's cost in elements.
    pub fn for_each(&self, work: usize, f: impl Fn(usize, [isize; N]) + Sync) {
        for_range(self.count(), (GRAIN / work.max(1)).max(1), |start, end| {
            let mut idx = unravel(start, &self.kept_shape);
            for row in start..end {
                f(row, std::array::from_fn(|k| idx.iter().zip(&self.kept_strides[k]).map(|(&i, &s)| i as isize * s).sum()));
                for d in (0..idx.len()).rev() {
                    idx[d] += 1;
                    if idx[d] < self.kept_shape[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        });
    }
}

unsafe fn read_pairs<T: Element + PartialOrd>(p: Ptr<T>, base: isize, step: isize, n: usize) -> Vec<(T, i64)> {
    (0..n).map(|k| (*p.at(base + k as isize * step), k as i64)).collect()
}

/// Writes `pairs` into a values row and an indices row.
unsafe fn write_pairs<T: Element + PartialOrd>(pairs: &[(T, i64)], values: (Ptr<T>, isize, isize), indices: (Ptr<i64>, isize, isize)) {
    for (k, &(v, i)) in pairs.iter().enumerate() {
        *values.0.at(values.1 + k as isize * values.2) = v;
        *indices.0.at(indices.1 + k as isize * indices.2) = i;
    }
}

/// `values`, `indices` = the rows of `x` along `d` sorted (see `Backend::sort`).
pub fn sort(xs: &Tensor, d: usize, descending: bool, values: &Tensor, indices: &Tensor) {
    let rows = Rows::new([xs, values, indices], d);
    let n = xs.shape()[d];
    with_dtype!(xs.dtype(), T, {
        let (px, pv, pi) = (Ptr(xs.data_ptr::<T>()), Ptr(values.data_ptr::<T>()), Ptr(indices.data_ptr::<i64>()));
        let [sx, sv, si] = rows.steps;
        rows.for_each(n * 8, |_, [bx, bv, bi]| unsafe {
            let mut pairs = read_pairs(px, bx, sx, n);
            sort_pairs(&mut pairs, descending);
            write_pairs(&pairs, (pv, bv, sv), (pi, bi, si));
        });
    });
}

/// The `k` largest (smallest) of each row along `d` (see `Backend::topk`). Selects first, so
/// only `k` elements are sorted; ties come out in their original order.
pub fn topk(xs: &Tensor, k: usize, d: usize, largest: bool, sorted: bool, values: &Tensor, indices: &Tensor) {
    let n = xs.shape()[d];
    let rows = Rows::new([xs, values, indices], d);
    with_dtype!(xs.dtype(), T, {
        let (px, pv, pi) = (Ptr(xs.data_ptr::<T>()), Ptr(values.data_ptr::<T>()), Ptr(indices.data_ptr::<i64>()));
        let [sx, sv, si] = rows.steps;
        rows.for_each(n * 2, |_, [bx, bv, bi]| unsafe {
            let mut pairs = read_pairs(px, bx, sx, n);
            with_pair_order!(largest, T, order, {
                if k > 0 && k < n {
                    pairs.select_nth_unstable_by(k - 1, order);
                }
                pairs.truncate(k);
                if sorted {
                    pairs.sort_unstable_by(order);
                }
            });
            write_pairs(&pairs, (pv, bv, sv), (pi, bi, si));
        });
    });
}

/// One statistic of each row along `d` and the index it was taken at (see `Backend::select`).
pub fn select(xs: &Tensor, d: usize, stat: Statistic, values: &Tensor, indices: &Tensor) {
    if let Statistic::Mode = stat {
        return mode(xs, d, values, indices);
    }
    let n = xs.shape()[d];
    // The ascending position of the statistic in a row of n values holding `nans` NaNs (which
    // sort last).
    let pick = move |n: usize, nans: usize| match stat {
        Statistic::Kth(k) => k,
        Statistic::Median { ignore_nan: false } if nans == 0 => (n - 1) / 2,
        Statistic::Median { ignore_nan: false } => n - nans,
        Statistic::Median { ignore_nan: true } => (n - nans).saturating_sub(1) / 2,
        Statistic::Mode => unreachable!("mode counts runs instead"),
    };
    let rows = Rows::new([xs, values, indices], d);
    with_dtype!(xs.dtype(), T, {
        let (px, pv, pi) = (Ptr(xs.data_ptr::<T>()), Ptr(values.data_ptr::<T>()), Ptr(indices.data_ptr::<i64>()));
        let sx = rows.steps[0];
        rows.for_each(n * 2, |_, [bx, bv, bi]| unsafe {
            let mut pairs = read_pairs(px, bx, sx, n);
            let nans = pairs.iter().filter(|p| is_nan(&p.0)).count();
            let at = pick(n, nans);
            let (v, i) = *pairs.select_nth_unstable_by(at, asc_pair::<T>).1;
            *pv.at(bv) = v;
            *pi.at(bi) = i;
        });
    });
}

/// The most frequent value of each row (the smallest on ties) and its last index.
fn mode(xs: &Tensor, d: usize, values: &Tensor, indices: &Tensor) {
    let n = xs.shape()[d];
    let rows = Rows::new([xs, values, indices], d);
    with_dtype!(xs.dtype(), T, {
        let (px, pv, pi) = (Ptr(xs.data_ptr::<T>()), Ptr(values.data_ptr::<T>()), Ptr(indices.data_ptr::<i64>()));
        let sx = rows.steps[0];
        rows.for_each(n * 8, |_, [bx, bv, bi]| unsafe {
            let mut pairs = read_pairs(px, bx, sx, n);
            pairs.sort_unstable_by(asc_pair::<T>);
            let (v, i) = most_frequent(&pairs);
            *pv.at(bv) = v;
            *pi.at(bi) = i;
        });
    });
}

/// In pairs sorted ascending: the value of the longest run of equals (the first, so smallest, on
/// ties) and the last original index inside that run.
fn most_frequent<T: Element + PartialOrd>(sorted: &[(T, i64)]) -> (T, i64) {
    let (mut best, mut best_len) = (sorted[0], 0);
    let mut start = 0;
    for end in 1..=sorted.len() {
        if end == sorted.len() || cmp_asc(&sorted[end].0, &sorted[start].0) != Ordering::Equal {
            if end - start > best_len {
                best_len = end - start;
                best = sorted[end - 1];
            }
            start = end;
        }
    }
    best
}

/// The `q`-quantile of ascending `sorted` values with `how`'s interpolation.
fn quantile_of<T: Element + PartialOrd>(how: Interpolation, sorted: &[T], q: f64) -> f64 {
    let rank = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    let (a, b) = (sorted[lo].to_f64(), sorted[hi].to_f64());
    match how {
        Interpolation::Linear => lerp(a, b, rank - lo as f64),
        Interpolation::Lower => a,
        Interpolation::Higher => b,
        Interpolation::Midpoint => lerp(a, b, 0.5),
        Interpolation::Nearest => sorted[rank.round_ties_even() as usize].to_f64(),
    }
}

/// PyTorch's lerp: exact at both ends.
fn lerp(a: f64, b: f64, w: f64) -> f64 {
    if w < 0.5 {
        a + w * (b - a)
    } else {
        b - (b - a) * (1.0 - w)
    }
}

/// `out[j, r]` = the `q[j]`-quantile of row `r` of `xs` along `d` (see `Backend::quantile`).
pub fn quantile(xs: &Tensor, d: usize, q: &[f64], interpolation: Interpolation, ignore_nan: bool, out: &Tensor) {
    let n = xs.shape()[d];
    let rows = Rows::new([xs], d);
    let count = rows.count();
    with_dtype!(xs.dtype(), T, {
        let (px, po) = (Ptr(xs.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
        let sx = rows.steps[0];
        rows.for_each(n * 8, |row, [bx]| unsafe {
            let mut vals: Vec<T> = (0..n).map(|k| *px.at(bx + k as isize * sx)).collect();
            vals.sort_unstable_by(cmp_asc);
            let nans = vals.iter().rev().take_while(|v| is_nan(*v)).count();
            let usable = if ignore_nan { &vals[..n - nans] } else { &vals[..] };
            for (j, &qj) in q.iter().enumerate() {
                let r = if usable.is_empty() || (!ignore_nan && nans > 0) { f64::NAN } else { quantile_of(interpolation, usable, qj) };
                *po.at((j * count + row) as isize) = T::from_f64(r);
            }
        });
    });
}

/// Groups of equal keys `0..n`: sorted first unless `consecutive`. Returns the first key of each
/// group, each key's group (the inverse) and the group sizes.
fn group_keys(
    n: usize,
    consecutive: bool,
    cmp: impl Fn(usize, usize) -> Ordering + Sync,
    eq: impl Fn(usize, usize) -> bool,
) -> (Vec<usize>, Vec<i64>, Vec<i64>) {
    let mut order: Vec<usize> = (0..n).collect();
    if !consecutive {
        let by = |a: &usize, b: &usize| cmp(*a, *b).then(a.cmp(b));
        if n >= 2 * GRAIN {
            pool().install(|| order.par_sort_unstable_by(by));
        } else {
            order.sort_unstable_by(by);
        }
    }
    let (mut firsts, mut inverse, mut counts) = (vec![], vec![0i64; n], vec![]);
    for (pos, &key) in order.iter().enumerate() {
        if pos == 0 || !eq(order[pos - 1], key) {
            firsts.push(key);
            counts.push(0);
        }
        inverse[key] = firsts.len() as i64 - 1;
        *counts.last_mut().unwrap() += 1;
    }
    (firsts, inverse, counts)
}

/// Counts `v` into the last run of `distinct`, or starts a new run (NaN never joins one).
fn push_run<T: Element + PartialOrd>(distinct: &mut Vec<T>, counts: &mut Vec<i64>, v: T) {
    if distinct.last() != Some(&v) {
        distinct.push(v);
        counts.push(0);
    }
    *counts.last_mut().unwrap() += 1;
}

/// The sorted distinct elements of `values`, each element's group (when asked) and the group
/// sizes. A radix sort of the values (or of (value, index) pairs for the inverse) runs in linear
/// time on contiguous memory.
fn unique_elements<T: Element + PartialOrd>(mut values: Vec<T>, with_inverse: bool) -> (Vec<T>, Option<Vec<i64>>, Vec<i64>) {
    let (mut distinct, mut counts) = (Vec::new(), Vec::new());
    if !with_inverse {
        radsort::sort_by_key(&mut values, |&v| radix_key(v));
        values.into_iter().for_each(|v| push_run(&mut distinct, &mut counts, v));
        return (distinct, None, counts);
    }
    let mut pairs: Vec<(T, i64)> = values.iter().copied().zip(0..).collect();
    sort_pairs(&mut pairs, false);
    let mut inverse = vec![0i64; values.len()];
    for (v, key) in pairs {
        push_run(&mut distinct, &mut counts, v);
        inverse[key as usize] = distinct.len() as i64 - 1;
    }
    (distinct, Some(inverse), counts)
}

/// The distinct elements (`dim` None) or slices along `dim`, sorted unless `consecutive` (see
/// `Backend::unique`).
pub fn unique(x: &Tensor, dim: Option<usize>, consecutive: bool, with_inverse: bool) -> Result<(Tensor, Option<Tensor>, Tensor)> {
    match dim {
        None if !consecutive => with_dtype!(x.dtype(), T, {
            let (v, i, c) = unique_elements(x.to_vec::<T>()?, with_inverse);
            let (nv, nc) = (v.len(), c.len());
            Ok((Tensor::from_vec(v, &[nv])?, i.map(|i| Tensor::from_vec(i, &[x.numel()])).transpose()?, Tensor::from_vec(c, &[nc])?))
        }),
        None => {
            let (v, i, c) = unique_slices(&x.reshape(&[-1])?, 0, true)?;
            Ok((v, Some(i).filter(|_| with_inverse), c))
        }
        Some(d) => {
            let (v, i, c) = unique_slices(x, d, consecutive)?;
            Ok((v, Some(i).filter(|_| with_inverse), c))
        }
    }
}

fn unique_slices(x: &Tensor, d: usize, consecutive: bool) -> Result<(Tensor, Tensor, Tensor)> {
    // Slices along `d` become contiguous rows of `m` elements, the other dims in their order (as
    // PyTorch's `moveaxis`: a transpose would compare the elements of a slice in another order).
    let ndim = x.ndim();
    let to_front: Vec<i64> = [d].into_iter().chain((0..ndim).filter(|&k| k != d)).map(|k| k as i64).collect();
    let back: Vec<i64> = (0..ndim).map(|k| (if k < d { k + 1 } else if k == d { 0 } else { k }) as i64).collect();
    let moved = x.permute(&to_front)?.contiguous()?;
    let n = x.shape()[d];
    let m = if n == 0 { 0 } else { moved.numel() / n };
    let (firsts, inverse, counts) = with_dtype!(x.dtype(), T, {
        let p = Ptr(moved.data_ptr::<T>());
        // An empty slice must not come from the (possibly dangling) pointer of an empty buffer.
        let row = |i: usize| if m == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(p.at((i * m) as isize) as *const T, m) } };
        if m == 1 {
            // Plain elements: compare values, not one-element slices.
            let at = |i: usize| unsafe { &*(p.at(i as isize) as *const T) };
            group_keys(n, consecutive, |a, b| cmp_asc(at(a), at(b)), |a, b| at(a) == at(b))
        } else {
            let cmp = |a: usize, b: usize| row(a).iter().zip(row(b)).map(|(u, v)| cmp_asc(u, v)).find(|o| o.is_ne()).unwrap_or(Ordering::Equal);
            group_keys(n, consecutive, cmp, |a, b| row(a) == row(b))
        }
    });
    let mut shape = moved.shape().to_vec();
    shape[0] = firsts.len();
    let values = Tensor::uninit(&shape, x.dtype())?;
    let size = m * x.dtype().size();
    for (g, &first) in firsts.iter().enumerate().filter(|_| size > 0) {
        unsafe { std::ptr::copy_nonoverlapping(moved.byte_ptr().add(first * size), values.byte_ptr().add(g * size), size) };
    }
    let ng = firsts.len();
    Ok((values.permute(&back)?.contiguous()?, Tensor::from_vec(inverse, &[n])?, Tensor::from_vec(counts, &[ng])?))
}

/// `out` = each value of `xs`' insertion point in its row of `seq` (see `Backend::searchsorted`).
pub fn searchsorted(seq: &Tensor, xs: &Tensor, right: bool, sorter: Option<&Tensor>, out: &Tensor) -> Result<()> {
    let n = *seq.shape().last().unwrap();
    let sorter = sorter.map(|s| checked_sorter(s, n)).transpose()?;
    let (seq, xs) = (seq.contiguous()?, xs.contiguous()?);
    let out_int32 = out.dtype() == DType::I32;
    let per_row = if seq.ndim() == 1 { xs.numel() } else { *xs.shape().last().unwrap() };
    let common = xs.dtype();
    with_dtype!(common, T, {
        let (ps, px) = (Ptr(seq.data_ptr::<T>()), Ptr(xs.data_ptr::<T>()));
        let order = sorter.as_ref().map(|s| Ptr(s.data_ptr::<i64>()));
        let at = move |row: usize, i: usize| unsafe {
            let j = order.map_or(i, |o| *o.at((row * n + i) as isize) as usize);
            *ps.at((row * n + j) as isize)
        };
        let position = |e: usize| {
            let row = e.checked_div(per_row).unwrap_or(0);
            let v = unsafe { *px.at(e as isize) };
            // The first position whose element is > v (right) or >= v (left).
            let goes_after = |i: usize| match cmp_asc(&at(row, i), &v) {
                Ordering::Less => true,
                Ordering::Equal => right,
                Ordering::Greater => false,
            };
            partition_point(n, goes_after)
        };
        write_positions(&out, position, out_int32);
    });
    Ok(())
}

fn partition_point(n: usize, goes_after: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if goes_after(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

fn write_positions(out: &Tensor, position: impl Fn(usize) -> usize + Sync, int32: bool) {
    let (p64, p32) = if int32 { (None, Some(Ptr(out.data_ptr::<i32>()))) } else { (Some(Ptr(out.data_ptr::<i64>())), None) };
    for_range(out.numel(), GRAIN / 16, |s, e| {
        for k in s..e {
            let v = position(k);
            unsafe {
                match (p64, p32) {
                    (Some(p), _) => *p.at(k as isize) = v as i64,
                    (_, Some(p)) => *p.at(k as isize) = v as i32,
                    _ => unreachable!(),
                }
            }
        }
    });
}

/// A contiguous copy of the int64 `sorter`, checked to be a valid index into each row of length `n`.
fn checked_sorter(sorter: &Tensor, n: usize) -> Result<Tensor> {
    let s = sorter.contiguous()?;
    if s.to_vec::<i64>()?.iter().any(|&i| i < 0 || i as usize >= n) {
        bail!(Runtime, "torch.searchsorted(): sorter index out of range");
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    #[test]
    fn nan_sorts_last_and_equals_itself() {
        let mut v = vec![3.0, f64::NAN, -1.0, f64::INFINITY, f64::NAN, 0.0];
        v.sort_by(cmp_asc);
        assert_eq!(&v[..4], &[-1.0, 0.0, 3.0, f64::INFINITY]);
        assert!(v[4].is_nan() && v[5].is_nan());
        assert_eq!(cmp_asc(&f32::NAN, &f32::NAN), Ordering::Equal);
        assert_eq!(cmp_asc(&f16::NAN, &f16::INFINITY), Ordering::Greater);
        assert_eq!(cmp_asc(&bf16::from_f32(1.0), &bf16::NAN), Ordering::Less);
        assert_eq!(cmp_asc(&true, &false), Ordering::Greater);
    }

    #[test]
    fn pairs_break_ties_by_index() {
        let a = (1.0f32, 0i64);
        let b = (1.0f32, 1i64);
        assert_eq!(asc_pair(&a, &b), Ordering::Less);
        assert_eq!(desc_pair(&a, &b), Ordering::Less);
        assert_eq!(desc_pair(&(2.0f32, 5), &a), Ordering::Less);
        assert_eq!(desc_pair(&(f32::NAN, 5), &(f32::INFINITY, 0)), Ordering::Less);
    }

    #[test]
    fn radix_sort_matches_the_comparison_order() {
        fn check<T: Element + PartialOrd>(values: Vec<T>) {
            for descending in [false, true] {
                let mut radix: Vec<(T, i64)> = values.iter().copied().zip(0..).collect();
                let mut compared = radix.clone();
                sort_pairs(&mut radix, descending);
                with_pair_order!(descending, T, order, compared.sort_by(order));
                let key = |p: &(T, i64)| (radix_key(p.0), p.1);
                assert_eq!(radix.iter().map(key).collect::<Vec<_>>(), compared.iter().map(key).collect::<Vec<_>>());
            }
        }
        let specials = [f32::NAN, -f32::NAN, 0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, 1.5, -1.5];
        check((0..RADIX_MIN * 3).map(|i| specials[i % 8] * ((i % 5) as f32 - 2.0)).collect::<Vec<f32>>());
        check((0..RADIX_MIN * 3).map(|i| (i as i64 * 7919 % 1000) - 500).collect::<Vec<i64>>());
        check((0..RADIX_MIN * 3).map(|i| f16::from_f32((i % 17) as f32 - 8.0)).collect::<Vec<f16>>());
        check((0..RADIX_MIN * 3).map(|i| i % 3 == 0).collect::<Vec<bool>>());
    }

    #[test]
    fn mode_prefers_the_smallest_of_equally_frequent_values() {
        let mut p = vec![(3, 0i64), (1, 1), (3, 2), (1, 3), (2, 4)];
        p.sort_unstable_by(asc_pair::<i32>);
        assert_eq!(most_frequent(&p), (1, 3));
    }

    #[test]
    fn quantile_interpolations() {
        let v = [1.0f64, 2.0, 4.0, 8.0];
        assert_eq!(quantile_of(Interpolation::Linear, &v, 0.5), 3.0);
        assert_eq!(quantile_of(Interpolation::Lower, &v, 0.5), 2.0);
        assert_eq!(quantile_of(Interpolation::Higher, &v, 0.5), 4.0);
        assert_eq!(quantile_of(Interpolation::Midpoint, &v, 0.4), 3.0);
        assert_eq!(quantile_of(Interpolation::Nearest, &v, 0.5), 4.0); // rank 1.5 rounds to even 2
        assert!(Interpolation::from_name("cubic").is_err());
    }
}
