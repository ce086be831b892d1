//! Conversions written without branches, so the loops that call them vectorise, and the
//! runtime choice of the AVX2 + FMA build of a kernel.

/// A binary16 bit pattern as float32, exactly: its exponent and mantissa placed in a float32's
/// and scaled by 2^112 (exact for subnormals too); infinities and NaN get the all-ones exponent.
#[inline(always)]
pub fn f16_bits_to_f32(h: u16) -> f32 {
    let h = h as u32;
    let magnitude = h & 0x7fff;
    let scaled = (f32::from_bits(magnitude << 13) * f32::from_bits((127 + 112) << 23)).to_bits();
    let special = (magnitude << 13) | 0x7f80_0000;
    let bits = if magnitude >= 0x7c00 { special } else { scaled };
    f32::from_bits(bits | ((h & 0x8000) << 16))
}

/// The little-endian binary16 at `bytes[at..at + 2]` as float32.
#[inline(always)]
pub fn f16_at(bytes: &[u8], at: usize) -> f32 {
    f16_bits_to_f32(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
}

/// Whether this CPU runs the AVX2 + FMA builds of the kernels.
pub fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *FOUND.get_or_init(|| std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// How many lookups ahead the embedding bags prefetch rows (FBGEMM's CPU kernels use 16).
pub const PREFETCH_DISTANCE: usize = 16;

/// Asks for the cache lines of `values` (rows scattered across tables far larger than the
/// caches: asked for ahead of their turn, they have arrived when it comes).
#[inline(always)]
pub fn prefetch<T>(values: &[T]) {
    #[cfg(target_arch = "x86_64")]
    for at in (0..std::mem::size_of_val(values)).step_by(64) {
        // SAFETY: a prefetch reads nothing architecturally, and the address is inside `values`.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((values.as_ptr() as *const i8).add(at)) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = values;
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    #[test]
    fn every_half_converts_as_the_half_crate_does() {
        for bits in 0..=u16::MAX {
            let ours = f16_bits_to_f32(bits);
            let theirs = f16::from_bits(bits).to_f32();
            assert!(ours.to_bits() == theirs.to_bits() || (ours.is_nan() && theirs.is_nan()), "{bits:#x}");
        }
    }
}
