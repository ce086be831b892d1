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
pub(super) unsafe fn max_pairs_row(top: *const f32, iw: usize, ow: usize, base: i32, out: *mut f32, idx: *mut i64) {
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
        let out_mask: __mmask16 = ((1u32 << n) - 1) as u16;
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
