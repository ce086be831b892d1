//! Contiguous float sums in explicit SIMD. The generic lane fold in `reduce` leaves the vector
//! width to LLVM's SLP vectoriser, which builds sums two lanes wide; a row sum is the hottest
//! reduction there is, so it gets chains of full-width vectors instead: 512 bits wide where the
//! CPU has AVX-512 (one load per cache line streamed a cache-line-aligned row from memory about
//! a quarter faster than AVX2's two; rows off the line run at AVX2's speed either way, even when
//! rebuilt from aligned loads), else 256.
use super::map::{has_avx2, has_avx512};

/// Folds `len` contiguous elements from a pointer into one value.
pub(crate) type Run<T, A> = unsafe fn(*const T, usize) -> A;

/// Independent chains per row: eight keep enough loads in flight to stream a row from memory at
/// full speed (four, and four rows of four at once, measured slower).
const CHAINS: usize = 8;

macro_rules! simd_sum {
    ($kernel:ident, $feature:literal, $T:ty, $W:expr, $zero:ident, $add:ident, $load:ident, $store:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feature)]
        unsafe fn $kernel(p: *const $T, len: usize) -> $T {
            let mut acc = [$zero(); CHAINS];
            let mut k = 0;
            while k + $W * CHAINS <= len {
                for (j, a) in acc.iter_mut().enumerate() {
                    *a = $add(*a, $load(p.add(k + $W * j)));
                }
                k += $W * CHAINS;
            }
            while k + $W <= len {
                acc[0] = $add(acc[0], $load(p.add(k)));
                k += $W;
            }
            let mut n = CHAINS;
            while n > 1 {
                n /= 2;
                for j in 0..n {
                    acc[j] = $add(acc[j], acc[j + n]);
                }
            }
            let mut lanes = [0.0 as $T; $W];
            $store(lanes.as_mut_ptr(), acc[0]);
            let mut total: $T = lanes.iter().sum();
            for i in k..len {
                total += *p.add(i);
            }
            total
        }
    };
}

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

simd_sum!(sum_f32_avx512, "avx512f", f32, 16, _mm512_setzero_ps, _mm512_add_ps, _mm512_loadu_ps, _mm512_storeu_ps);
simd_sum!(sum_f32_avx2, "avx2", f32, 8, _mm256_setzero_ps, _mm256_add_ps, _mm256_loadu_ps, _mm256_storeu_ps);
simd_sum!(sum_f64_avx512, "avx512f", f64, 8, _mm512_setzero_pd, _mm512_add_pd, _mm512_loadu_pd, _mm512_storeu_pd);
simd_sum!(sum_f64_avx2, "avx2", f64, 4, _mm256_setzero_pd, _mm256_add_pd, _mm256_loadu_pd, _mm256_storeu_pd);

/// This CPU's fast contiguous float32 sum, when it has one.
pub(crate) fn f32_sum() -> Option<Run<f32, f32>> {
    #[cfg(target_arch = "x86_64")]
    match (has_avx512(), has_avx2()) {
        (true, _) => return Some(sum_f32_avx512),
        (_, true) => return Some(sum_f32_avx2),
        _ => {}
    }
    None
}

/// This CPU's fast contiguous float64 sum, when it has one.
pub(crate) fn f64_sum() -> Option<Run<f64, f64>> {
    #[cfg(target_arch = "x86_64")]
    match (has_avx512(), has_avx2()) {
        (true, _) => return Some(sum_f64_avx512),
        (_, true) => return Some(sum_f64_avx2),
        _ => {}
    }
    None
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn every_simd_sum_matches_a_plain_sum_on_every_tail_length() {
        let f32_kernels: Vec<Run<f32, f32>> = [(has_avx2(), sum_f32_avx2 as Run<f32, f32>), (has_avx512(), sum_f32_avx512)].into_iter().filter(|k| k.0).map(|k| k.1).collect();
        let f64_kernels: Vec<Run<f64, f64>> = [(has_avx2(), sum_f64_avx2 as Run<f64, f64>), (has_avx512(), sum_f64_avx512)].into_iter().filter(|k| k.0).map(|k| k.1).collect();
        for len in [0usize, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 200, 1001] {
            // Small integers: every order of summation gives the exact total.
            let x: Vec<f64> = (0..len).map(|i| (i % 17) as f64 - 8.0).collect();
            let exact: f64 = x.iter().sum();
            let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            for run in &f64_kernels {
                assert_eq!(unsafe { run(x.as_ptr(), len) }, exact, "len {len}");
            }
            for run in &f32_kernels {
                assert_eq!(unsafe { run(xf.as_ptr(), len) }, exact as f32, "len {len}");
            }
        }
    }
}
