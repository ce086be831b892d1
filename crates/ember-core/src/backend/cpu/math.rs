//! Scalar math the kernels inline. `exp_f32`, `ln_f32`, `ln_1p_f32`, `tanh_f32`,
//! `erf_gelu_f32`, `sin_f32` and `cos_f32` are branch-free so the compiler vectorises whole loops
//! of them; libm's are calls that it cannot.
pub trait Real: num_traits::Float + crate::dtype::Element {
    fn erf(self) -> Self;
    fn erfc(self) -> Self;
    /// `exp`, vectorisable where the type allows it.
    fn vexp(self) -> Self;
    /// `erf` as GELU uses it: vectorisable, float32-accurate inside `0.5·x·(1 + erf)`.
    fn gelu_erf(self) -> Self;
    /// `ln`, `ln_1p` and `tanh`, vectorisable where the type allows it.
    fn vln(self) -> Self;
    fn vln_1p(self) -> Self;
    fn vtanh(self) -> Self;
}

impl Real for f32 {
    fn erf(self) -> Self {
        libm::erff(self)
    }
    fn erfc(self) -> Self {
        libm::erfcf(self)
    }
    #[inline(always)]
    fn vexp(self) -> Self {
        exp_f32(self)
    }
    #[inline(always)]
    fn gelu_erf(self) -> Self {
        erf_gelu_f32(self)
    }
    #[inline(always)]
    fn vln(self) -> Self {
        ln_f32(self)
    }
    #[inline(always)]
    fn vln_1p(self) -> Self {
        ln_1p_f32(self)
    }
    #[inline(always)]
    fn vtanh(self) -> Self {
        tanh_f32(self)
    }
}

impl Real for f64 {
    fn erf(self) -> Self {
        libm::erf(self)
    }
    fn erfc(self) -> Self {
        libm::erfc(self)
    }
    #[inline(always)]
    fn vexp(self) -> Self {
        self.exp()
    }
    fn gelu_erf(self) -> Self {
        libm::erf(self)
    }
    fn vln(self) -> Self {
        self.ln()
    }
    fn vln_1p(self) -> Self {
        self.ln_1p()
    }
    fn vtanh(self) -> Self {
        self.tanh()
    }
}

/// exp(x) = 2^n · e^r with |r| <= ln2/2; e^r by its degree-7 Taylor polynomial (< 1 ulp on
/// that interval). Scaling in two halves keeps subnormal results right.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    const ROUND: f32 = 12_582_912.0; // 1.5 * 2^23: adding it rounds to an integer in the low bits
    let x = if x < -104.0 { -104.0 } else if x > 89.0 { 89.0 } else { x };
    let t = x * LOG2E + ROUND;
    let n = t - ROUND;
    let ni = (t.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    let n1 = ni >> 1;
    let n2 = ni - n1;
    let s1 = f32::from_bits(((n1 + 127) as u32) << 23);
    let s2 = f32::from_bits(((n2 + 127) as u32) << 23);
    p * s1 * s2
}

/// ln(x): x = 2^e·m with m in [√2/2, √2), then ln(m) = f − f²/2 + f³·P(f) with f = m − 1 and
/// P Cephes' degree-8 polynomial for logf (relative error under 1e-7). Subnormals are scaled up
/// first; zero, negatives, infinity and NaN give libm's results.
#[inline(always)]
pub fn ln_f32(x: f32) -> f32 {
    const P: [f32; 9] = [
        7.037_683_6e-2,
        -1.151_461_0e-1,
        1.167_699_9e-1,
        -1.242_014_1e-1,
        1.424_932_3e-1,
        -1.666_805_8e-1,
        2.000_071_4e-1,
        -2.499_999_4e-1,
        3.333_333_1e-1,
    ];
    let subnormal = x < f32::MIN_POSITIVE;
    let y = if subnormal { x * 8_388_608.0 } else { x };
    // Adding 1 − √2/2's offset carries into the exponent exactly when the mantissa is ≥ √2.
    let bits = y.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let e = ((bits >> 23) as i32 - 127 - if subnormal { 23 } else { 0 }) as f32;
    let f = f32::from_bits((bits & 0x007f_ffff) + 0x3f35_04f3) - 1.0;
    let z = f * f;
    let p = P.iter().fold(0.0, |acc, &c| acc * f + c);
    // ln 2 in two parts (0.693359375 is exact in a few bits), so that e·ln 2 adds no error.
    let r = f + (f * z * p - 2.121_944_4e-4 * e - 0.5 * z) + 0.693_359_4 * e;
    if x > 0.0 && x < f32::INFINITY {
        r
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        x
    } else {
        f32::NAN
    }
}

/// ln(1 + x) without losing a small x: with u = 1 + x rounded, ln(u)·x/(u − 1) corrects for the
/// rounding of u (Goldberg's method).
#[inline(always)]
pub fn ln_1p_f32(x: f32) -> f32 {
    let u = 1.0 + x;
    let d = u - 1.0;
    let r = if d == 0.0 { x } else { ln_f32(u) * (x / d) };
    if x == f32::INFINITY { x } else { r }
}

/// tanh(x): below |x| = 0.55 its odd Taylor series to x^17 (truncation under 0.1 ulp), above
/// 1 − 2/(e^{2|x|} + 1), where no cancellation is left to lose digits; the sign put back last.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    const C: [f32; 8] = [
        6_404_582.0 / 10_854_718_875.0,
        -929_569.0 / 638_512_875.0,
        21_844.0 / 6_081_075.0,
        -1_382.0 / 155_925.0,
        62.0 / 2_835.0,
        -17.0 / 315.0,
        2.0 / 15.0,
        -1.0 / 3.0,
    ];
    let a = x.abs();
    let z = a * a;
    let series = a + a * z * C.iter().fold(0.0, |acc, &c| acc * z + c);
    let large = 1.0 - 2.0 / (exp_f32(2.0 * a) + 1.0);
    let t = if a < 0.55 { series } else { large };
    t.copysign(x)
}

/// Above this |x| the range reduction of `sin_f32`/`cos_f32` is no longer exact (the quadrant
/// count outgrows the 20 bits that keep `n·π/2`'s leading part exact); callers use libm there.
pub const SIN_COS_REDUCTION_LIMIT: f32 = 1_048_576.0;

/// Whether `sin_f32`/`cos_f32` are accurate for `x`: false beyond the reduction's range and for
/// infinities and NaN, which libm answers.
#[inline(always)]
pub fn sin_cos_reduce_exactly(x: f32) -> bool {
    x.abs() <= SIN_COS_REDUCTION_LIMIT
}

/// sin(x) within 1 ulp for |x| <= `SIN_COS_REDUCTION_LIMIT` (meaningless beyond it).
#[inline(always)]
pub fn sin_f32(x: f32) -> f32 {
    sin_quadrant_shifted(x, 0)
}

/// cos(x) within 1 ulp for |x| <= `SIN_COS_REDUCTION_LIMIT` (meaningless beyond it).
#[inline(always)]
pub fn cos_f32(x: f32) -> f32 {
    sin_quadrant_shifted(x, 1)
}

/// sin(x + shift·π/2). Cody–Waite reduction in float64: x = n·π/2 + r, |r| <= π/4, with π/2 in
/// a 33-bit leading part (n·hi is exact for n < 2^20, and so is x − n·hi) and a float64 tail, so
/// r is right to float64 rounding even next to a multiple of π/2. r is split into float32 hi +
/// lo, and sin r, cos r come from their Taylor series to r^9 and r^10 (truncation under 0.05
/// ulp on |r| <= π/4) in float32 with lo as the first-order correction; the quadrant n + shift
/// picks one of them and its sign.
#[inline(always)]
fn sin_quadrant_shifted(x: f32, shift: u32) -> f32 {
    const PIO2_HI: f64 = 1.570_796_326_734_125_6; // 0x1.921fb544p+0: 33 significant bits
    const PIO2_LO: f64 = 6.077_100_506_506_192e-11; // π/2 − PIO2_HI
    const ROUND: f64 = 6_755_399_441_055_744.0; // 1.5 * 2^52: adding it rounds to an integer in the low bits
    let xd = x as f64;
    let t = xd * std::f64::consts::FRAC_2_PI + ROUND;
    let n = t - ROUND;
    let quadrant = (t.to_bits() as u32).wrapping_add(shift);
    let r = (xd - n * PIO2_HI) - n * PIO2_LO;
    let hi = r as f32;
    let lo = (r - hi as f64) as f32;
    let z = hi * hi;
    let sin = hi + (lo + hi * z * (-1.0 / 6.0 + z * (1.0 / 120.0 + z * (-1.0 / 5_040.0 + z * (1.0 / 362_880.0)))));
    let cos_tail = z * z * (1.0 / 24.0 + z * (-1.0 / 720.0 + z * (1.0 / 40_320.0 + z * (-1.0 / 3_628_800.0))));
    let cos = 1.0 - 0.5 * z + (cos_tail - hi * lo);
    let v = if quadrant & 1 == 0 { sin } else { cos };
    // Quadrants 2 and 3 negate: bit 1 of the quadrant moved to the sign bit.
    let reduced = f32::from_bits(v.to_bits() ^ ((quadrant & 2) << 30));
    // Below 2^-12, sin x rounds to x (x³/6 is under half an ulp); taking x also keeps
    // sin(−0) = −0, which adding the +0 correction would lose.
    if shift == 0 && x.abs() < 2.441_406_3e-4 {
        x
    } else {
        reduced
    }
}

/// erf for GELU: Abramowitz–Stegun 7.1.26 (absolute error < 1.5e-7). In `0.5·x·(1 + erf)` an
/// absolute error becomes a relative one of the same size, which is float32 precision.
#[inline(always)]
pub fn erf_gelu_f32(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t * (0.254_829_6 + t * (-0.284_496_74 + t * (1.421_413_8 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let y = 1.0 - poly * exp_f32(-a * a);
    if x < 0.0 {
        -y
    } else {
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in float32 ulps from the float64 function's value rounded to float32.
    fn ulps(got: f32, want: f64) -> u32 {
        let want = want as f32;
        if got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan() {
            return 0;
        }
        assert_eq!(got.is_sign_negative(), want.is_sign_negative(), "{got} vs {want}");
        (got.to_bits() as i64 - want.to_bits() as i64).unsigned_abs() as u32
    }

    /// Every 97th float32 (of either sign), and the special values.
    fn samples() -> impl Iterator<Item = f32> {
        (0..u32::MAX / 97).map(|i| f32::from_bits(i * 97)).chain([0.0, -0.0, 1.0, -1.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MIN_POSITIVE, f32::MAX])
    }

    #[test]
    fn ln_ln_1p_and_tanh_within_two_ulps() {
        for x in samples() {
            assert!(ulps(ln_f32(x), (x as f64).ln()) <= 1, "ln({x:e}) = {:e}", ln_f32(x));
            assert!(ulps(ln_1p_f32(x), (x as f64).ln_1p()) <= 2, "ln_1p({x:e}) = {:e}", ln_1p_f32(x));
            assert!(ulps(tanh_f32(x), (x as f64).tanh()) <= 2, "tanh({x:e}) = {:e}", tanh_f32(x));
        }
    }

    #[test]
    fn exp_is_accurate_over_the_range() {
        let mut x = -110.0f32;
        while x < 90.0 {
            let (got, want) = (exp_f32(x) as f64, (x as f64).exp() as f32 as f64);
            let tolerance = 3e-7 * want + 3.0 * f32::from_bits(1) as f64; // 3e-7 relative, 3 subnormal ulps
            assert!((got - want).abs() <= tolerance || want.is_infinite() && got.is_infinite(), "exp({x}) = {got}, want {want}");
            x += 0.0137;
        }
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
    }

    #[test]
    fn sin_and_cos_within_one_ulp_over_the_reduction_range() {
        let near_multiples_of_half_pi = (1..2000).flat_map(|k| {
            let m = (k as f64 * 333.3).round() * std::f64::consts::FRAC_PI_2;
            let x = m as f32;
            [x, f32::from_bits(x.to_bits() + 1), f32::from_bits(x.to_bits() - 1)]
        });
        let edges = [SIN_COS_REDUCTION_LIMIT, -SIN_COS_REDUCTION_LIMIT, 0.785_398_2, 2.356_194_5, 1e-30, f32::from_bits(1)];
        for x in samples().filter(|&x| sin_cos_reduce_exactly(x)).chain(near_multiples_of_half_pi).chain(edges) {
            assert!(ulps(sin_f32(x), (x as f64).sin()) <= 1, "sin({x:e}) = {:e}", sin_f32(x));
            assert!(ulps(cos_f32(x), (x as f64).cos()) <= 1, "cos({x:e}) = {:e}", cos_f32(x));
        }
        for x in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.5e6, -3e38] {
            assert!(!sin_cos_reduce_exactly(x), "{x} is libm's");
        }
    }

    #[test]
    fn gelu_erf_is_close() {
        for i in -400..400 {
            let x = i as f32 / 50.0;
            assert!((erf_gelu_f32(x) as f64 - libm::erf(x as f64)).abs() < 3e-7);
        }
    }
}
