//! FBGEMM's HFP8: an 8-bit float with a sign bit, `exponent_bits` exponent bits with a chosen
//! bias and the rest mantissa, with subnormals and without infinities or NaN (values saturate
//! at `max_pos`). The bit manipulations follow FBGEMM's `float_to_hfp8` / `hfp8_to_float`, so
//! encodings agree bit for bit: rounding to nearest even happens in float32 arithmetic by adding
//! and subtracting a power of two whose last mantissa bit is the HFP8 value's last one.
use crate::{fail, Result};
use rayon::prelude::*;

/// Values per parallel task.
const CHUNK: usize = 1 << 16;

/// An HFP8 format: 1 sign bit, `exponent_bits` exponent bits biased by `exponent_bias`, and
/// `7 - exponent_bits` mantissa bits. FBGEMM's default is 4 bits with bias 7 (1.0 is 0x38).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hfp8 {
    exponent_bits: u32,
    exponent_bias: u32,
}

impl Default for Hfp8 {
    fn default() -> Self {
        Hfp8 { exponent_bits: 4, exponent_bias: 7 }
    }
}

impl Hfp8 {
    /// A format with 1 to 7 exponent bits and a bias of 0 to 127 (so that every float32 bit
    /// pattern the conversions build is a normal number).
    pub fn new(exponent_bits: i64, exponent_bias: i64) -> Result<Self> {
        if !(1..=7).contains(&exponent_bits) {
            return fail(format!("hfp8: exponent_bits must be 1 to 7, got {exponent_bits}"));
        }
        if !(0..=127).contains(&exponent_bias) {
            return fail(format!("hfp8: exponent_bias must be 0 to 127, got {exponent_bias}"));
        }
        Ok(Hfp8 { exponent_bits: exponent_bits as u32, exponent_bias: exponent_bias as u32 })
    }

    pub fn exponent_bits(self) -> u32 {
        self.exponent_bits
    }

    pub fn exponent_bias(self) -> u32 {
        self.exponent_bias
    }

    fn mantissa_bits(self) -> u32 {
        7 - self.exponent_bits
    }

    /// FBGEMM's default saturation value for the format (its `FP8QuantizationConfig`
    /// `max_position`): 2^(2^ebits - 2 - bias) * (2 - 2^(ebits - 7)), 240 for 4 bits, bias 7.
    pub fn max_position(self) -> f32 {
        let top = (1i32 << self.exponent_bits) - 2 - self.exponent_bias as i32;
        2f32.powi(top) * (2.0 - 2f32.powi(self.exponent_bits as i32 - 7))
    }

    /// `value` in this format, its magnitude first clamped to `max_pos` (NaN becomes `max_pos`,
    /// as fminf does); magnitudes below the smallest subnormal's half become zero.
    #[inline]
    pub fn encode(self, value: f32, max_pos: f32) -> u8 {
        let sign = value.to_bits() & 0x8000_0000;
        let magnitude = f32::from_bits(value.to_bits() & 0x7fff_ffff).min(max_pos);
        let bias_shift = (127 - self.exponent_bias) << 23;
        let smallest_normal = f32::from_bits(bias_shift + (1 << 23));
        if magnitude >= smallest_normal {
            // Round at the format's last mantissa bit: a bouncer 2^(23 - mbits) times the
            // value's own power of two pushes the surplus bits out in float32's rounding.
            let bouncer = f32::from_bits((magnitude.to_bits() & 0xff80_0000) + ((23 - self.mantissa_bits()) << 23));
            let rounded = (bouncer + magnitude) - bouncer;
            let rebiased = rounded.to_bits().wrapping_sub(bias_shift) << (8 - self.exponent_bits);
            ((rebiased | sign) >> 24) as u8
        } else {
            // Subnormal: a bouncer whose last mantissa bit is the smallest subnormal makes the
            // sum's low byte the encoding.
            let exponent = 127 + 23 + 1 - self.exponent_bias - self.mantissa_bits();
            let bouncer = f32::from_bits(exponent << 23);
            ((bouncer + magnitude).to_bits() as u8) | (sign >> 24) as u8
        }
    }

    /// The value of an encoding: its bits placed in a float32's exponent and mantissa, then
    /// scaled by 2^(127 - bias), which is exact (subnormals included).
    #[inline(always)]
    pub fn decode(self, byte: u8) -> f32 {
        let sign = ((byte & 0x80) as u32) << 24;
        let bits = ((byte & 0x7f) as u32) << (16 + self.exponent_bits);
        let scale = f32::from_bits((254 - self.exponent_bias) << 23);
        f32::from_bits((f32::from_bits(bits) * scale).to_bits() | sign)
    }
}

/// `input` encoded in `format` into `out`, magnitudes saturating at `max_pos`.
pub fn encode_hfp8(format: Hfp8, input: &[f32], max_pos: f32, out: &mut [u8]) -> Result<()> {
    if input.len() != out.len() {
        return fail(format!("encode_hfp8: {} inputs but {} outputs", input.len(), out.len()));
    }
    out.par_chunks_mut(CHUNK).zip(input.par_chunks(CHUNK)).for_each(|(out, input)| {
        out.iter_mut().zip(input).for_each(|(q, &x)| *q = format.encode(x, max_pos));
    });
    Ok(())
}

/// `input`, encoded in `format`, decoded into `out`.
pub fn decode_hfp8(format: Hfp8, input: &[u8], out: &mut [f32]) -> Result<()> {
    if input.len() != out.len() {
        return fail(format!("decode_hfp8: {} inputs but {} outputs", input.len(), out.len()));
    }
    out.par_chunks_mut(CHUNK).zip(input.par_chunks(CHUNK)).for_each(|(out, input)| {
        out.iter_mut().zip(input).for_each(|(x, &q)| *x = format.decode(q));
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_0x38_in_the_default_format() {
        let f = Hfp8::default();
        assert_eq!(f.encode(1.0, f.max_position()), 0x38);
        assert_eq!(f.encode(-1.0, f.max_position()), 0xb8);
        assert_eq!(f.decode(0x38), 1.0);
        assert_eq!(f.max_position(), 240.0);
    }

    #[test]
    fn encodings_computed_by_hand() {
        let f = Hfp8::default();
        let max = f.max_position();
        // 0.5 = 2^-1: exponent field 6, mantissa 0.
        assert_eq!(f.encode(0.5, max), 0b0_0110_000);
        // 3.3 rounds to 3.25 = 2^1 * 1.625: exponent 8, mantissa 101.
        assert_eq!(f.encode(3.3, max), 0b0_1000_101);
        // Saturates at 240 = 2^7 * 1.875: exponent 14, mantissa 111.
        assert_eq!(f.encode(300.0, max), 0x77);
        assert_eq!(f.encode(f32::INFINITY, max), 0x77);
        // The smallest subnormal is 2^(1 - 7 - 3) = 2^-9; -1e-3 rounds to -2^-9.
        assert_eq!(f.encode(-1e-3, max), 0x81);
        assert_eq!(f.decode(0x81), -(2f32.powi(-9)));
        assert_eq!(f.encode(1e-4, max), 0);
        assert_eq!(f.encode(0.0, max), 0);
        // Ties go to even: 1 + 1/16 lies halfway between 1 and 1 + 1/8.
        assert_eq!(f.encode(1.0625, max), 0x38);
        assert_eq!(f.encode(1.1875, max), 0x3a);
    }

    #[test]
    fn every_encoding_round_trips_in_several_formats() {
        for (bits, bias) in [(4, 7), (5, 15), (3, 3), (4, 8), (2, 1), (6, 31)] {
            let f = Hfp8::new(bits, bias).unwrap();
            let max = f32::MAX;
            for byte in 0..=255u8 {
                let value = f.decode(byte);
                let back = f.encode(value, max);
                // +0 and -0 are both zero; everything else comes back as it was.
                if value == 0.0 {
                    assert_eq!(back & 0x7f, 0, "{bits} {bias} {byte:#x}");
                } else {
                    assert_eq!(back, byte, "{bits} {bias} {byte:#x} {value}");
                }
            }
        }
    }

    #[test]
    fn bad_formats_are_refused() {
        assert!(Hfp8::new(0, 7).is_err());
        assert!(Hfp8::new(8, 7).is_err());
        assert!(Hfp8::new(4, 128).is_err());
        assert!(Hfp8::new(4, -1).is_err());
    }
}
