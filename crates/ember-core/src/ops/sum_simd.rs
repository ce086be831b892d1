//! Contiguous float sums in explicit AVX2. The generic lane fold in `reduce` leaves the vector
//! width to LLVM's SLP vectoriser, which builds sums two lanes wide; a row sum is the hottest
//! reduction there is, so it gets eight chains of full-width vectors instead.

/// Folds `len` contiguous elements from a pointer into one value.
pub(crate) type Run<T, A> = unsafe fn(*const T, usize) -> A;

macro_rules! simd_sum {
    ($getter:ident, $kernel:ident, $T:ty, $W:expr, $zero:ident, $add:ident, $load:ident, $store:ident) => {
        /// This CPU's fast contiguous sum of
        #[doc = stringify!($T)]
        /// , when it has one.
        pub(crate) fn $getter() -> Option<Run<$T, $T>> {
            #[cfg(target_arch = "x86_64")]
            if super::map::has_avx2() {
                return Some($kernel);
            }
            None
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        unsafe fn $kernel(p: *const $T, len: usize) -> $T {
            use std::arch::x86_64::*;
            // Eight independent chains hide the add latency on two add ports.
            const CHAINS: usize = 8;
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

simd_sum!(f32_sum, sum_f32_avx2, f32, 8, _mm256_setzero_ps, _mm256_add_ps, _mm256_loadu_ps, _mm256_storeu_ps);
simd_sum!(f64_sum, sum_f64_avx2, f64, 4, _mm256_setzero_pd, _mm256_add_pd, _mm256_loadu_pd, _mm256_storeu_pd);

#[cfg(test)]
mod tests {
    #[test]
    fn simd_sums_match_a_plain_sum_on_every_tail_length() {
        for len in [0usize, 1, 7, 8, 9, 63, 64, 65, 200, 1001] {
            let x: Vec<f64> = (0..len).map(|i| (i % 17) as f64 - 8.0).collect();
            let exact: f64 = x.iter().sum();
            let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            if let Some(run) = super::f64_sum() {
                assert_eq!(unsafe { run(x.as_ptr(), len) }, exact);
            }
            if let Some(run) = super::f32_sum() {
                assert_eq!(unsafe { run(xf.as_ptr(), len) }, exact as f32);
            }
        }
    }
}
