//! The 2x2/2 max pool on AVX-512, sixteen outputs at a time: the even and odd columns of two
//! input rows are split apart with permutes, and each tap updates the running maximum and its
//! index with masks, in the scalar kernel's tap order (so ties and NaNs pick the same index).

/// One output row: `out[j]`, `idx[j]` for `j < ow` from input rows `top` and `top + iw`; `base`
/// is the flat in-plane index of `top[0]`.
///
/// # Safety
/// The CPU has AVX-512F; `top` and `top + iw` hold `2·ow` readable floats each; `out` and `idx`
/// hold `ow` writable values; every index fits in an `i32`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn max_pairs_row(top: *const f32, iw: usize, ow: usize, base: i32, out: *mut f32, idx: *mut i64) {
    use std::arch::x86_64::*;
    let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    let bottom = top.add(iw);
    let mut ox = 0;
    while ox < ow {
        let n = (ow - ox).min(16);
        // Masks for the 2n input floats (split over two vectors) and the n outputs.
        let lo_mask: __mmask16 = if 2 * n >= 16 { 0xFFFF } else { (1u32 << (2 * n)) as u16 - 1 };
        let hi_mask: __mmask16 = if 2 * n > 16 { ((1u32 << (2 * n - 16)) - 1) as u16 } else { 0 };
        let out_mask = crate::backend::cpu::map::lanes(n);
        // Masked loads that miss the cache stall (4x slower streams on Zen 5): full steps go
        // unmasked.
        let part = |mask: __mmask16, p: *const f32| if n == 16 { _mm512_loadu_ps(p) } else { _mm512_maskz_loadu_ps(mask, p) };
        let load = |row: *const f32| {
            let lo = part(lo_mask, row.add(2 * ox));
            let hi = part(hi_mask, row.wrapping_add(2 * ox + 16));
            (_mm512_permutex2var_ps(lo, even, hi), _mm512_permutex2var_ps(lo, odd, hi))
        };
        let (t0, t1) = load(top);
        let (b0, b1) = load(bottom);
        let first = _mm512_add_epi32(_mm512_set1_epi32(base + 2 * ox as i32), _mm512_slli_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 1));
        let (mut best, mut at) = (t0, first);
        for (v, offset) in [(t1, 1), (b0, iw as i32), (b1, iw as i32 + 1)] {
            let take = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, best) | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
            best = _mm512_mask_blend_ps(take, best, v);
            at = _mm512_mask_blend_epi32(take, at, _mm512_add_epi32(first, _mm512_set1_epi32(offset)));
        }
        _mm512_mask_storeu_ps(out.add(ox), out_mask, best);
        let wide_lo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(at));
        let wide_hi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64::<1>(at));
        _mm512_mask_storeu_epi64(idx.add(ox), out_mask as u8, wide_lo);
        _mm512_mask_storeu_epi64(idx.wrapping_add(ox + 8), (out_mask >> 8) as u8, wide_hi);
        ox += n;
    }
}

/// One input row's maxima over every output column's window, sixteen columns at a time:
/// `values[o]`, `indices[o]` over the taps `starts[o] + j·step`, `j < counts[o]`, gathered from
/// `row`, in tap order (the first maximum or the last NaN, as the scalar kernel); `(-inf, -1)`
/// for a window with no tap. `base` is the flat in-plane index of `row[0]`.
///
/// # Safety
/// The CPU has AVX-512F; every tap lies in `row`; `values` and `indices` hold `starts.len()`
/// writable values; every index fits in an `i32`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn window_maxima_row(row: *const f32, (starts, counts, step): (&[i32], &[i32], i32), base: i32, values: *mut f32, indices: *mut i32) {
    use std::arch::x86_64::*;
    for o in (0..starts.len()).step_by(16) {
        let mask = crate::backend::cpu::map::lanes(starts.len() - o);
        let (first, count) = (_mm512_maskz_loadu_epi32(mask, starts.as_ptr().add(o)), _mm512_maskz_loadu_epi32(mask, counts.as_ptr().add(o)));
        let (mut best, mut at) = (_mm512_set1_ps(f32::NEG_INFINITY), _mm512_set1_epi32(-1));
        let most = counts[o..(o + 16).min(counts.len())].iter().max().copied().unwrap_or(0);
        for j in 0..most {
            let tap = _mm512_add_epi32(first, _mm512_set1_epi32(j * step));
            let valid = _mm512_cmpgt_epi32_mask(count, _mm512_set1_epi32(j));
            let v = _mm512_mask_i32gather_ps::<4>(best, valid, tap, row as _);
            at = take_max(valid, v, &mut best, at, _mm512_add_epi32(tap, _mm512_set1_epi32(base)));
        }
        _mm512_mask_storeu_ps(values.add(o), mask, best);
        _mm512_mask_storeu_epi32(indices.add(o), mask, at);
    }
}

/// Folds one row of window maxima into the running `best`, `at` of `n` outputs, the same way.
///
/// # Safety
/// The CPU has AVX-512F; every pointer holds `n` values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn fold_maxima(values: *const f32, indices: *const i32, n: usize, best: *mut f32, at: *mut i32) {
    use std::arch::x86_64::*;
    for o in (0..n).step_by(16) {
        let mask = crate::backend::cpu::map::lanes(n - o);
        let mut b = _mm512_maskz_loadu_ps(mask, best.add(o));
        let v = _mm512_maskz_loadu_ps(mask, values.add(o));
        let a = take_max(mask, v, &mut b, _mm512_maskz_loadu_epi32(mask, at.add(o)), _mm512_maskz_loadu_epi32(mask, indices.add(o)));
        _mm512_mask_storeu_ps(best.add(o), mask, b);
        _mm512_mask_storeu_epi32(at.add(o), mask, a);
    }
}

/// Where `valid`, takes `v` (and its index) over `best` when it is greater, NaN, or the first.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn take_max(valid: std::arch::x86_64::__mmask16, v: std::arch::x86_64::__m512, best: &mut std::arch::x86_64::__m512, at: std::arch::x86_64::__m512i, index: std::arch::x86_64::__m512i) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::*;
    let none = _mm512_cmplt_epi32_mask(at, _mm512_setzero_si512());
    let take = valid & (_mm512_cmp_ps_mask::<_CMP_GT_OQ>(v, *best) | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v) | none);
    *best = _mm512_mask_blend_ps(take, *best, v);
    _mm512_mask_blend_epi32(take, at, index)
}
