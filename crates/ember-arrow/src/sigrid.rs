//! Velox's `sigrid_hash` (TorchArrow's `functional.sigrid_hash`), bit for bit:
//! folly's `hash_128_to_64(salt, twang_mix64(id))`, then the floor remainder by `max_value`.
use crate::{fail, Result, CHUNK};
use rayon::prelude::*;

const K_MUL: u64 = 0x9DDF_EA08_EB38_2D69;

/// folly::hash::twang_mix64.
#[inline(always)]
fn twang_mix64(k: u64) -> u64 {
    let mut key = (!k).wrapping_add(k << 21);
    key ^= key >> 24;
    key = key.wrapping_add(key << 3).wrapping_add(key << 8);
    key ^= key >> 14;
    key = key.wrapping_add(key << 2).wrapping_add(key << 4);
    key ^= key >> 28;
    key.wrapping_add(key << 31)
}

/// folly::hash::hash_128_to_64(upper, lower), which is what hash_combine(salt, key) computes.
#[inline(always)]
fn hash_128_to_64(upper: u64, lower: u64) -> u64 {
    let mut a = (lower ^ upper).wrapping_mul(K_MUL);
    a ^= a >> 47;
    let mut b = (upper ^ a).wrapping_mul(K_MUL);
    b ^= b >> 47;
    b.wrapping_mul(K_MUL)
}

/// The floor remainder by a fixed divisor without a division per item: Lemire's "direct
/// computation" with a 128-bit reciprocal, exact for every 64-bit numerator (a hardware 64-bit
/// division would cost more than the whole hash). Branch-free: the hash's sign is random, and
/// a branch on it would be mispredicted every other id.
#[derive(Clone, Copy)]
pub(crate) struct FloorRem {
    reciprocal: u128,
    divisor: u64,
    /// 2**63 mod divisor: what the bias that makes a signed number unsigned adds to its remainder.
    bias: u64,
}

const SIGN: u64 = 1 << 63;

impl FloorRem {
    pub(crate) fn new(divisor: u64) -> Self {
        debug_assert!(divisor > 0 && divisor <= i64::MAX as u64);
        FloorRem { reciprocal: (u128::MAX / divisor as u128).wrapping_add(1), divisor, bias: SIGN % divisor }
    }

    #[inline(always)]
    fn rem_unsigned(&self, x: u64) -> u64 {
        let low = self.reciprocal.wrapping_mul(x as u128);
        let bottom = ((low as u64) as u128 * self.divisor as u128) >> 64;
        let top = (low >> 64) * self.divisor as u128;
        ((bottom + top) >> 64) as u64
    }

    /// `x` mod divisor in [0, divisor), as Python's `%` (and NumPy's remainder) give it:
    /// (x + 2**63) mod divisor, less the bias's remainder, wrapped back into range.
    #[inline(always)]
    pub(crate) fn floor_rem(&self, x: i64) -> i64 {
        let r = self.rem_unsigned(x as u64 ^ SIGN);
        let below = 0u64.wrapping_sub((r < self.bias) as u64);
        r.wrapping_sub(self.bias).wrapping_add(self.divisor & below) as i64
    }
}

/// sigrid_hash with its parameters checked once.
#[derive(Clone, Copy)]
pub(crate) struct Hasher {
    salt: u64,
    rem: FloorRem,
    /// 1 / max_value, for the float64 remainder of `hash_in_place`, where max_value is in the
    /// range that remainder is exact for.
    inverse: Option<f64>,
}

/// The max_values the float64 remainder is exact for (see `floor_rem_f64`).
const FLOAT_REM: std::ops::RangeInclusive<i64> = 1 << 12..=1 << 48;

impl Hasher {
    pub(crate) fn new(salt: i64, max_value: i64) -> Result<Self> {
        if max_value <= 0 {
            return fail(format!("sigrid_hash: maxValue must be larger than 0, got {max_value}"));
        }
        let inverse = FLOAT_REM.contains(&max_value).then(|| 1.0 / max_value as f64);
        Ok(Hasher { salt: salt as u64, rem: FloorRem::new(max_value as u64), inverse })
    }

    #[inline(always)]
    fn mix(&self, id: i64) -> i64 {
        hash_128_to_64(self.salt, twang_mix64(id as u64)) as i64
    }

    #[inline(always)]
    pub(crate) fn one(&self, id: i64) -> i64 {
        self.rem.floor_rem(self.mix(id))
    }

    /// Each id replaced by its hash. With AVX2 the remainder is taken in float64 arithmetic,
    /// which vectorises (the 128-bit products of `FloorRem` do not), and so does the rest.
    pub(crate) fn hash_in_place(&self, ids: &mut [i64]) {
        #[cfg(target_arch = "x86_64")]
        if let Some(inverse) = self.inverse {
            if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512dq") {
                // SAFETY: the CPU has the features the function is compiled for.
                return unsafe { hash_avx512(self, inverse, ids) };
            }
            if is_x86_feature_detected!("avx2") {
                // SAFETY: as above.
                return unsafe { hash_avx2(self, inverse, ids) };
            }
        }
        for id in ids {
            *id = self.one(*id);
        }
    }

    #[inline(always)]
    fn float_loop(&self, inverse: f64, ids: &mut [i64]) {
        let d = self.rem.divisor as i64;
        for id in ids {
            *id = floor_rem_f64(self.mix(*id), d, inverse);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
unsafe fn hash_avx512(hasher: &Hasher, inverse: f64, ids: &mut [i64]) {
    hasher.float_loop(inverse, ids)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn hash_avx2(hasher: &Hasher, inverse: f64, ids: &mut [i64]) {
    hasher.float_loop(inverse, ids)
}

/// 1.5·2^52: an integer v with |v| < 2^51 added to it lands in its mantissa's low bits, so
/// integers cross between int64 and float64 by an add and a bit cast (AVX2 has no conversion
/// instruction for 64-bit integers).
const MAGIC: f64 = 6_755_399_441_055_744.0;
/// The largest quotient the round trip through MAGIC carries.
const LARGEST: f64 = ((1u64 << 51) - 1) as f64;

#[inline(always)]
fn small_to_f64(v: i64) -> f64 {
    f64::from_bits(v.wrapping_add(MAGIC.to_bits() as i64) as u64) - MAGIC
}

/// The nearest integer to `v`, for |v| <= LARGEST.
#[inline(always)]
fn nearest_small(v: f64) -> i64 {
    ((v + MAGIC).to_bits() as i64).wrapping_sub(MAGIC.to_bits() as i64)
}

/// `x` as a float64, rounded once: its two 32-bit halves convert exactly.
#[inline(always)]
fn to_f64(x: i64) -> f64 {
    small_to_f64(x >> 32) * 4_294_967_296.0 + small_to_f64(x & 0xffff_ffff)
}

/// `x` mod `d` in [0, d) for d in FLOAT_REM, by two float64 quotients rounded to the nearest
/// integer. The first, of x rounded to 53 bits (off by up to 2^9) times 1/d (two more
/// roundings of a quotient under 2^51), is off by under 2^12 / d + 2 (clamping it to LARGEST
/// included), so the remainder it leaves is under 2^12 + 2·d in size: exact as a float64, and
/// at most 3·d. The second quotient, of that, is then the nearest integer to r / d but within
/// 2^-50 of a half, so the second remainder lies in (-d, d), and adding d to a negative one
/// ends it in [0, d).
#[inline(always)]
fn floor_rem_f64(x: i64, d: i64, inverse: f64) -> i64 {
    let q = nearest_small((to_f64(x) * inverse).clamp(-LARGEST, LARGEST));
    let r = x.wrapping_sub(q.wrapping_mul(d));
    let r = r - nearest_small(small_to_f64(r) * inverse) * d;
    r + (d & (r >> 63))
}

/// One id's hash (for tests and single values).
pub fn sigrid_hash_one(id: i64, salt: i64, max_value: i64) -> Result<i64> {
    Ok(Hasher::new(salt, max_value)?.one(id))
}

/// `out[i]` = sigrid_hash(`ids[i]`), on all threads of the current pool. Null slots are hashed
/// like any value: the caller keeps the input's validity for the result.
pub fn sigrid_hash(ids: &[i64], salt: i64, max_value: i64, out: &mut [i64]) -> Result<()> {
    if ids.len() != out.len() {
        return fail(format!("sigrid_hash: {} ids but {} output slots", ids.len(), out.len()));
    }
    let hasher = Hasher::new(salt, max_value)?;
    out.par_chunks_mut(CHUNK).zip(ids.par_chunks(CHUNK)).for_each(|(out, ids)| {
        out.copy_from_slice(ids);
        hasher.hash_in_place(out);
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (no dependency for random numbers).
    pub(crate) fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn floor_rem_matches_rem_euclid() {
        let mut state = 0x1234_5678_9abc_def0;
        let divisors = [1u64, 2, 3, 7, 4096, 1_000_000_007, (1 << 62) + 3, 1 << 62, i64::MAX as u64, i64::MAX as u64 - 1];
        let edges = [0i64, 1, -1, i64::MAX, i64::MIN, i64::MIN + 1, 4095, -4096];
        for &d in &divisors {
            let rem = FloorRem::new(d);
            let randoms: Vec<i64> = (0..20_000).map(|_| xorshift(&mut state) as i64).collect();
            for &x in edges.iter().chain(&randoms) {
                assert_eq!(rem.floor_rem(x), x.rem_euclid(d as i64), "{x} mod {d}");
            }
        }
    }

    #[test]
    fn float_remainder_matches_rem_euclid() {
        let mut state = 0x0bad_cafe_f00d_d00d;
        let divisors = [1 << 12, (1 << 12) + 1, 100_003, 1_000_000_007, (1 << 40) + 15, (1 << 48) - 1, 1 << 48];
        let edges = [0i64, 1, -1, i64::MAX, i64::MIN, i64::MIN + 1, i64::MAX - 1, 4095, -4096, 1 << 53, -(1 << 53) - 1];
        for &d in &divisors {
            let inverse = 1.0 / d as f64;
            let randoms: Vec<i64> = (0..20_000).map(|_| xorshift(&mut state) as i64).collect();
            // Multiples of d and their neighbours: where a quotient's rounding would show.
            let multiples: Vec<i64> = randoms.iter().flat_map(|&x| {
                let m = (x / d).wrapping_mul(d);
                [m.wrapping_sub(1), m, m.wrapping_add(1)]
            }).collect();
            for &x in edges.iter().chain(&randoms).chain(&multiples) {
                assert_eq!(floor_rem_f64(x, d, inverse), x.rem_euclid(d), "{x} mod {d}");
            }
        }
    }

    #[test]
    fn hash_in_place_equals_one_by_one() {
        let mut state = 7;
        let ids: Vec<i64> = (0..10_007).map(|_| xorshift(&mut state) as i64).collect();
        for (salt, max_value) in [(0, 4096), (2, 4095), (-3, 1_000_000_007), (5, 1 << 48), (9, (1 << 48) + 1), (1, i64::MAX)] {
            let hasher = Hasher::new(salt, max_value).unwrap();
            let mut hashed = ids.clone();
            hasher.hash_in_place(&mut hashed);
            for (&id, &h) in ids.iter().zip(&hashed) {
                assert_eq!(h, hasher.one(id), "id {id}, salt {salt}, max_value {max_value}");
            }
        }
    }

    /// Vectors from emberarrow's NumPy implementation, itself checked against TorchArrow's tests.
    #[test]
    fn known_hashes() {
        let ids = [0i64, 1, -1, i64::MAX, i64::MIN, 1761418852, 123456789012345, -987654321];
        let cases: [(i64, i64, [i64; 8]); 4] = [
            (0, 4096, [1110, 2320, 3467, 1359, 1829, 885, 1271, 2081]),
            (123, 1_000_000_007, [785817750, 250924677, 2676006, 324330339, 912892179, 693937672, 956338382, 797483]),
            (-5, (1 << 62) + 3, [
                2023769646588078204, 933226683746123409, 972733664676231684, 3587936694571447156,
                1284188294542458648, 4417566560930769912, 1126108265733725970, 3229650296072683579,
            ]),
            (7, 1, [0; 8]),
        ];
        for (salt, max_value, expected) in cases {
            let mut out = [0i64; 8];
            sigrid_hash(&ids, salt, max_value, &mut out).unwrap();
            assert_eq!(out, expected, "salt {salt}, max_value {max_value}");
        }
    }

    #[test]
    fn parallel_equals_one_by_one() {
        let mut state = 99;
        let ids: Vec<i64> = (0..100_003).map(|_| xorshift(&mut state) as i64).collect();
        let mut out = vec![0; ids.len()];
        sigrid_hash(&ids, 11, 4096, &mut out).unwrap();
        for (&id, &h) in ids.iter().zip(&out) {
            assert_eq!(h, sigrid_hash_one(id, 11, 4096).unwrap());
        }
        let mut empty: [i64; 0] = [];
        sigrid_hash(&[], 0, 5, &mut empty).unwrap();
    }

    #[test]
    fn bad_arguments() {
        assert!(sigrid_hash(&[1], 0, 0, &mut [0]).unwrap_err().0.contains("maxValue must be larger than 0"));
        assert!(sigrid_hash(&[1, 2], 0, 5, &mut [0]).is_err());
    }
}
