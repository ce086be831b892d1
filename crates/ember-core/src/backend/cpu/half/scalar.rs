//! Bit-level float32 -> bfloat16/float16 rounding, one element at a time: the fallback path, and
//! the fix-up for lanes the vector paths cannot round themselves. Written from the IEEE rules,
//! not on `half`, so the exhaustive tests compare two independent implementations.

/// Round-to-nearest-even float32 -> bfloat16 bits; NaN stays NaN (quieted, sign and top payload
/// kept), infinities and subnormals are rounded like any other value.
#[inline(always)]
pub fn f32_to_bf16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    if bits & 0x7fff_ffff > 0x7f80_0000 {
        return ((bits >> 16) | 0x0040) as u16;
    }
    // Adding 0x7fff plus the kept lowest bit carries exactly when the dropped half is above the
    // midpoint, or at it with an odd kept part: ties go to even.
    let lsb = (bits >> 16) & 1;
    (bits.wrapping_add(0x7fff + lsb) >> 16) as u16
}

#[inline(always)]
pub fn bf16_bits_to_f32(h: u16) -> f32 {
    f32::from_bits((h as u32) << 16)
}

/// Round-to-nearest-even float32 -> float16 bits, with gradual underflow to float16 subnormals
/// and overflow to infinity; NaN keeps its sign and top payload and is quieted.
pub fn f32_to_f16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x007f_ffff;
    if exp == 0xff {
        return if man == 0 { sign | 0x7c00 } else { sign | 0x7e00 | (man >> 13) as u16 };
    }
    let half_exp = exp - 127 + 15;
    if half_exp >= 0x1f {
        return sign | 0x7c00;
    }
    if half_exp <= 0 {
        // A float16 subnormal (or zero): the value in units of 2^-24 is the full mantissa
        // shifted right by `shift`.
        let shift = (14 - half_exp) as u32;
        if shift > 24 {
            return sign;
        }
        let full = man | 0x0080_0000;
        return sign | round_shift(full, shift) as u16;
    }
    // The carry of a round-up may run into the exponent, which is right (up to infinity).
    sign | (((half_exp as u32) << 10) as u16 + round_shift(man, 13) as u16)
}

/// `v >> shift`, rounded to nearest with ties to even.
#[inline(always)]
fn round_shift(v: u32, shift: u32) -> u32 {
    let kept = v >> shift;
    let rest = v & ((1 << shift) - 1);
    let halfway = 1 << (shift - 1);
    kept + (rest > halfway || (rest == halfway && kept & 1 == 1)) as u32
}

/// Exact float16 -> float32 (every float16 is a float32).
pub fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let man = (h & 0x03ff) as u32;
    let bits = match exp {
        0 if man == 0 => sign,
        0 => {
            // Subnormal: normalise the mantissa into a float32 exponent.
            let lead = man.leading_zeros() - 21;
            sign | ((113 - lead) << 23) | ((man << lead) & 0x03ff) << 13
        }
        0x1f => sign | 0x7f80_0000 | (man << 13) | if man != 0 { 0x0040_0000 } else { 0 },
        _ => sign | ((exp + 112) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}
