//! The vector conversion kernels. Every one takes raw pointers (source and destination may be
//! the same buffer reinterpreted, so no slices) and handles any length: AVX2 finishes its tail
//! one element at a time with the scalar rounding, AVX-512 with masked loads and stores. Masks
//! stay out of the main loops: masked memory ops in a loop ran 4x slower on Zen 5.
use super::scalar;
use crate::backend::cpu::map::lanes;
use std::arch::x86_64::*;

// ---- AVX2 + F16C ----

/// RNE float32 -> bfloat16 on 8 lanes in integer arithmetic; the result sits in the low 16 bits
/// of each 32-bit lane.
#[inline(always)]
unsafe fn bf16_round_avx2(x: __m256i) -> __m256i {
    let high = _mm256_srli_epi32::<16>(x);
    let lsb = _mm256_and_si256(high, _mm256_set1_epi32(1));
    let rounded = _mm256_srli_epi32::<16>(_mm256_add_epi32(x, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))));
    let quiet = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
    let abs = _mm256_and_si256(x, _mm256_set1_epi32(0x7fff_ffff));
    let is_nan = _mm256_cmpgt_epi32(abs, _mm256_set1_epi32(0x7f80_0000));
    _mm256_blendv_epi8(rounded, quiet, is_nan)
}

#[target_feature(enable = "avx2,f16c,fma")]
pub unsafe fn f32_to_bf16_avx2(src: *const f32, dst: *mut u16, n: usize) {
    let mut i = 0;
    while i + 16 <= n {
        let lo = bf16_round_avx2(_mm256_loadu_si256(src.add(i) as *const __m256i));
        let hi = bf16_round_avx2(_mm256_loadu_si256(src.add(i + 8) as *const __m256i));
        // packus works per 128-bit lane; the permute puts the four quarters back in order.
        let packed = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_packus_epi32(lo, hi));
        _mm256_storeu_si256(dst.add(i) as *mut __m256i, packed);
        i += 16;
    }
    for j in i..n {
        *dst.add(j) = scalar::f32_to_bf16_bits(*src.add(j));
    }
}

#[target_feature(enable = "avx2,f16c,fma")]
pub unsafe fn bf16_to_f32_avx2(src: *const u16, dst: *mut f32, n: usize) {
    let mut i = 0;
    while i + 8 <= n {
        let wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(src.add(i) as *const __m128i));
        _mm256_storeu_si256(dst.add(i) as *mut __m256i, _mm256_slli_epi32::<16>(wide));
        i += 8;
    }
    for j in i..n {
        *dst.add(j) = scalar::bf16_bits_to_f32(*src.add(j));
    }
}

#[target_feature(enable = "avx2,f16c,fma")]
pub unsafe fn f32_to_f16_avx2(src: *const f32, dst: *mut u16, n: usize) {
    let mut i = 0;
    while i + 8 <= n {
        let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(src.add(i)));
        _mm_storeu_si128(dst.add(i) as *mut __m128i, h);
        i += 8;
    }
    for j in i..n {
        *dst.add(j) = scalar::f32_to_f16_bits(*src.add(j));
    }
}

#[target_feature(enable = "avx2,f16c,fma")]
pub unsafe fn f16_to_f32_avx2(src: *const u16, dst: *mut f32, n: usize) {
    let mut i = 0;
    while i + 8 <= n {
        let f = _mm256_cvtph_ps(_mm_loadu_si128(src.add(i) as *const __m128i));
        _mm256_storeu_ps(dst.add(i), f);
        i += 8;
    }
    for j in i..n {
        *dst.add(j) = scalar::f16_bits_to_f32(*src.add(j));
    }
}

// ---- AVX-512 (F, BW, VL) ----

#[inline(always)]
unsafe fn bf16_round_avx512(x: __m512i) -> __m256i {
    let high = _mm512_srli_epi32::<16>(x);
    let lsb = _mm512_and_si512(high, _mm512_set1_epi32(1));
    let rounded = _mm512_srli_epi32::<16>(_mm512_add_epi32(x, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))));
    let quiet = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
    let abs = _mm512_and_si512(x, _mm512_set1_epi32(0x7fff_ffff));
    let is_nan = _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7f80_0000));
    _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, rounded, quiet))
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,f16c")]
pub unsafe fn f32_to_bf16_avx512(src: *const f32, dst: *mut u16, n: usize) {
    let mut i = 0;
    while i + 16 <= n {
        let x = _mm512_loadu_si512(src.add(i) as *const __m512i);
        _mm256_storeu_si256(dst.add(i) as *mut __m256i, bf16_round_avx512(x));
        i += 16;
    }
    if i < n {
        let m = lanes(n - i);
        let x = _mm512_maskz_loadu_epi32(m, src.add(i) as *const i32);
        _mm256_mask_storeu_epi16(dst.add(i) as *mut i16, m, bf16_round_avx512(x));
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,f16c")]
pub unsafe fn bf16_to_f32_avx512(src: *const u16, dst: *mut f32, n: usize) {
    let widen = |h: __m256i| _mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h));
    let mut i = 0;
    while i + 16 <= n {
        let h = _mm256_loadu_si256(src.add(i) as *const __m256i);
        _mm512_storeu_si512(dst.add(i) as *mut __m512i, widen(h));
        i += 16;
    }
    if i < n {
        let m = lanes(n - i);
        let h = _mm256_maskz_loadu_epi16(m, src.add(i) as *const i16);
        _mm512_mask_storeu_epi32(dst.add(i) as *mut i32, m, widen(h));
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,f16c")]
pub unsafe fn f32_to_f16_avx512(src: *const f32, dst: *mut u16, n: usize) {
    let mut i = 0;
    while i + 16 <= n {
        let h = _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm512_loadu_ps(src.add(i)));
        _mm256_storeu_si256(dst.add(i) as *mut __m256i, h);
        i += 16;
    }
    if i < n {
        let m = lanes(n - i);
        let h = _mm512_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm512_maskz_loadu_ps(m, src.add(i)));
        _mm256_mask_storeu_epi16(dst.add(i) as *mut i16, m, h);
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512vl,f16c")]
pub unsafe fn f16_to_f32_avx512(src: *const u16, dst: *mut f32, n: usize) {
    let mut i = 0;
    while i + 16 <= n {
        let f = _mm512_cvtph_ps(_mm256_loadu_si256(src.add(i) as *const __m256i));
        _mm512_storeu_ps(dst.add(i), f);
        i += 16;
    }
    if i < n {
        let m = lanes(n - i);
        let f = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src.add(i) as *const i16));
        _mm512_mask_storeu_ps(dst.add(i), m, f);
    }
}

/// Sums `n` halves in float32 in one pass, widening in registers; eight chains of 16 lanes, as
/// the float32 row sum runs (`sum_simd`).
macro_rules! half_sum {
    ($name:ident, $widen:expr) => {
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,f16c")]
        pub unsafe fn $name(src: *const u16, n: usize) -> f32 {
            let widen = $widen;
            let load = |i: usize| widen(_mm256_loadu_si256(src.add(i) as *const __m256i));
            let mut acc = [_mm512_setzero_ps(); 8];
            let mut i = 0;
            while i + 128 <= n {
                for (j, a) in acc.iter_mut().enumerate() {
                    *a = _mm512_add_ps(*a, load(i + 16 * j));
                }
                i += 128;
            }
            while i + 16 <= n {
                acc[0] = _mm512_add_ps(acc[0], load(i));
                i += 16;
            }
            if i < n {
                acc[1] = _mm512_add_ps(acc[1], widen(_mm256_maskz_loadu_epi16(lanes(n - i), src.add(i) as *const i16)));
            }
            for width in [4, 2, 1] {
                for j in 0..width {
                    acc[j] = _mm512_add_ps(acc[j], acc[j + width]);
                }
            }
            _mm512_reduce_add_ps(acc[0])
        }
    };
}

half_sum!(sum_bf16_avx512, |h: __m256i| _mm512_castsi512_ps(_mm512_slli_epi32::<16>(_mm512_cvtepu16_epi32(h))));
half_sum!(sum_f16_avx512, |h: __m256i| _mm512_cvtph_ps(h));

// ---- AVX-512 BF16 ----

/// Lanes holding a float32 subnormal, which the BF16 instructions flush to zero.
#[inline(always)]
unsafe fn subnormal_lanes(x: __m512) -> __mmask16 {
    let bits = _mm512_castps_si512(x);
    _mm512_testn_epi32_mask(bits, _mm512_set1_epi32(0x7f80_0000)) & _mm512_test_epi32_mask(bits, _mm512_set1_epi32(0x007f_ffff))
}

/// `vcvtne2ps2bf16` rounds to nearest even and quiets NaN like the integer paths, but treats
/// subnormal inputs as zero: blocks that hold one take the integer rounding instead.
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
pub unsafe fn f32_to_bf16_avx512bf16(src: *const f32, dst: *mut u16, n: usize) {
    let mut i = 0;
    while i + 32 <= n {
        let (lo, hi) = (_mm512_loadu_ps(src.add(i)), _mm512_loadu_ps(src.add(i + 16)));
        if subnormal_lanes(lo) | subnormal_lanes(hi) != 0 {
            _mm256_storeu_si256(dst.add(i) as *mut __m256i, bf16_round_avx512(_mm512_castps_si512(lo)));
            _mm256_storeu_si256(dst.add(i + 16) as *mut __m256i, bf16_round_avx512(_mm512_castps_si512(hi)));
        } else {
            let pair = std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(hi, lo));
            _mm512_storeu_si512(dst.add(i) as *mut __m512i, pair);
        }
        i += 32;
    }
    while i < n {
        let m = lanes(n - i);
        let x = _mm512_maskz_loadu_ps(m, src.add(i));
        let h: __m256i = if subnormal_lanes(x) != 0 {
            bf16_round_avx512(_mm512_castps_si512(x))
        } else {
            std::mem::transmute::<__m256bh, __m256i>(_mm512_cvtneps_pbh(x))
        };
        _mm256_mask_storeu_epi16(dst.add(i) as *mut i16, m, h);
        i += 16;
    }
}
