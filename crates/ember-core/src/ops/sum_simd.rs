//! Contiguous float sums in explicit AVX2. The generic lane fold in `reduce` leaves the vector
//! width to LLVM's SLP vectoriser, which builds sums two lanes wide; a row sum is the hottest
//! reduction there is, so it gets chains of full-width vectors instead, over four rows at once
//! where it can.

/// Folds `len` contiguous elements from a pointer into one value.
pub(crate) type Run<T, A> = unsafe fn(*const T, usize) -> A;

/// Folds four rows `stride` elements apart, `len` contiguous elements each; each sum equals
/// the one `Run` gives for that row.
pub(crate) type Rows4<T, A> = unsafe fn(*const T, usize, usize) -> [A; 4];

/// Independent chains per row: four hide the add latency well enough for a stream from memory,
/// and four rows of them (the `Rows4` kernels, which keep four streams of cache misses in
/// flight where one row keeps one) fill the sixteen vector registers.
const CHAINS: usize = 4;

macro_rules! simd_sum {
    ($getter:ident, $getter4:ident, $kernel:ident, $kernel4:ident, $finish:ident, $T:ty, $W:expr, $V:ty, $zero:ident, $add:ident, $load:ident, $store:ident) => {
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

        /// The four-row form of the same sum, when this CPU has it.
        pub(crate) fn $getter4() -> Option<Rows4<$T, $T>> {
            #[cfg(target_arch = "x86_64")]
            if super::map::has_avx2() {
                return Some($kernel4);
            }
            None
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        unsafe fn $kernel(p: *const $T, len: usize) -> $T {
            let mut acc = [$zero(); CHAINS];
            let mut k = 0;
            while k + $W * CHAINS <= len {
                for (j, a) in acc.iter_mut().enumerate() {
                    *a = $add(*a, $load(p.add(k + $W * j)));
                }
                k += $W * CHAINS;
            }
            $finish(acc, p, k, len)
        }

        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        unsafe fn $kernel4(p: *const $T, len: usize, stride: usize) -> [$T; 4] {
            let mut acc = [[$zero(); CHAINS]; 4];
            let mut k = 0;
            while k + $W * CHAINS <= len {
                for (r, row) in acc.iter_mut().enumerate() {
                    for (j, a) in row.iter_mut().enumerate() {
                        *a = $add(*a, $load(p.add(r * stride + k + $W * j)));
                    }
                }
                k += $W * CHAINS;
            }
            std::array::from_fn(|r| $finish(acc[r], p.add(r * stride), k, len))
        }

        /// A row's chains folded, then its elements from `k` on.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        unsafe fn $finish(mut acc: [$V; CHAINS], p: *const $T, mut k: usize, len: usize) -> $T {
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

simd_sum!(f32_sum, f32_sum4, sum_f32_avx2, sum4_f32_avx2, finish_f32_avx2, f32, 8, __m256, _mm256_setzero_ps, _mm256_add_ps, _mm256_loadu_ps, _mm256_storeu_ps);
simd_sum!(f64_sum, f64_sum4, sum_f64_avx2, sum4_f64_avx2, finish_f64_avx2, f64, 4, __m256d, _mm256_setzero_pd, _mm256_add_pd, _mm256_loadu_pd, _mm256_storeu_pd);

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

    #[test]
    fn four_row_sums_equal_the_row_sums_bit_for_bit() {
        for len in [0usize, 1, 8, 31, 32, 33, 100, 1001] {
            let stride = len + 3;
            let x: Vec<f32> = (0..4 * stride).map(|i| ((i * 7919) % 1013) as f32 / 97.0 - 5.0).collect();
            let xd: Vec<f64> = x.iter().map(|&v| v as f64 * 1.1).collect();
            if let (Some(run), Some(rows)) = (super::f32_sum(), super::f32_sum4()) {
                let want: Vec<u32> = (0..4).map(|r| unsafe { run(x.as_ptr().add(r * stride), len) }.to_bits()).collect();
                assert_eq!(unsafe { rows(x.as_ptr(), len, stride) }.map(f32::to_bits).to_vec(), want, "len {len}");
            }
            if let (Some(run), Some(rows)) = (super::f64_sum(), super::f64_sum4()) {
                let want: Vec<u64> = (0..4).map(|r| unsafe { run(xd.as_ptr().add(r * stride), len) }.to_bits()).collect();
                assert_eq!(unsafe { rows(xd.as_ptr(), len, stride) }.map(f64::to_bits).to_vec(), want, "len {len}");
            }
        }
    }
}
