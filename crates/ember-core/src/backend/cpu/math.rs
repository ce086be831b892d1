//! Scalar math the kernels inline. `exp_f32` and `erf_gelu_f32` are branch-free so the compiler
//! vectorises whole loops of them; libm's are calls that it cannot.
pub trait Real: num_traits::Float + crate::dtype::Element {
    fn erf(self) -> Self;
    fn erfc(self) -> Self;
    /// `exp`, vectorisable where the type allows it.
    fn vexp(self) -> Self;
    /// `erf` as GELU uses it: vectorisable, float32-accurate inside `0.5·x·(1 + erf)`.
    fn gelu_erf(self) -> Self;
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
    fn gelu_erf_is_close() {
        for i in -400..400 {
            let x = i as f32 / 50.0;
            assert!((erf_gelu_f32(x) as f64 - libm::erf(x as f64)).abs() < 3e-7);
        }
    }
}
