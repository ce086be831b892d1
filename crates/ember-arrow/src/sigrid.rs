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

fn check(max_value: i64) -> Result<FloorRem> {
    if max_value <= 0 {
        return fail(format!("sigrid_hash: maxValue must be larger than 0, got {max_value}"));
    }
    Ok(FloorRem::new(max_value as u64))
}

#[inline(always)]
pub(crate) fn hash_one(id: i64, salt: i64, rem: &FloorRem) -> i64 {
    rem.floor_rem(hash_128_to_64(salt as u64, twang_mix64(id as u64)) as i64)
}

/// One id's hash (for tests and single values).
pub fn sigrid_hash_one(id: i64, salt: i64, max_value: i64) -> Result<i64> {
    Ok(hash_one(id, salt, &check(max_value)?))
}

/// The parameters checked once, then applied to each id.
pub(crate) fn hasher(salt: i64, max_value: i64) -> Result<impl Fn(i64) -> i64 + Sync + Copy> {
    let rem = check(max_value)?;
    Ok(move |id: i64| hash_one(id, salt, &rem))
}

/// `out[i]` = sigrid_hash(`ids[i]`), on all threads of the current pool. Null slots are hashed
/// like any value: the caller keeps the input's validity for the result.
pub fn sigrid_hash(ids: &[i64], salt: i64, max_value: i64, out: &mut [i64]) -> Result<()> {
    if ids.len() != out.len() {
        return fail(format!("sigrid_hash: {} ids but {} output slots", ids.len(), out.len()));
    }
    let hash = hasher(salt, max_value)?;
    out.par_chunks_mut(CHUNK).zip(ids.par_chunks(CHUNK)).for_each(|(out, ids)| {
        for (o, &id) in out.iter_mut().zip(ids) {
            *o = hash(id);
        }
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
