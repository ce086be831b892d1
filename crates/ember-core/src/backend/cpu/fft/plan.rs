//! FFT plans, made once per (length, direction) and precision and shared by every thread:
//! rustfft's and realfft's planners cache the plans they build, so each precision keeps one of
//! each planner behind a lock that is only held while a plan is looked up. The twiddles of the
//! radix-2 step that splits one long transform over two threads are cached the same way.
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{Fft, FftDirection, FftNum, FftPlanner};
use num_complex::Complex;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A float precision the FFT kernels run in (f32 or f64).
pub trait FftFloat: FftNum + num_traits::Float {
    fn complex_plan(n: usize, forward: bool) -> Arc<dyn Fft<Self>>;
    fn r2c_plan(n: usize) -> Arc<dyn RealToComplex<Self>>;
    fn c2r_plan(n: usize) -> Arc<dyn ComplexToReal<Self>>;
    /// `exp(-2πik/n)` for `k < n/2`: the forward twiddles of a radix-2 step over length `n`.
    fn half_twiddles(n: usize) -> Arc<Vec<Complex<Self>>>;
}

/// Twiddles computed in f64 (each from its own angle, so no error accumulates) and rounded once.
fn twiddles<T: num_traits::Float>(n: usize) -> Vec<Complex<T>> {
    let step = -2.0 * std::f64::consts::PI / n as f64;
    let round = |v: f64| T::from(v).expect("a twiddle fits the float type");
    (0..n / 2).map(|k| (step * k as f64).sin_cos()).map(|(s, c)| Complex::new(round(c), round(s))).collect()
}

macro_rules! fft_float {
    ($t:ty) => {
        impl FftFloat for $t {
            fn complex_plan(n: usize, forward: bool) -> Arc<dyn Fft<Self>> {
                static PLANNER: OnceLock<Mutex<FftPlanner<$t>>> = OnceLock::new();
                let direction = if forward { FftDirection::Forward } else { FftDirection::Inverse };
                let mut p = PLANNER.get_or_init(|| Mutex::new(FftPlanner::new())).lock().unwrap_or_else(|e| e.into_inner());
                p.plan_fft(n, direction)
            }
            fn r2c_plan(n: usize) -> Arc<dyn RealToComplex<Self>> {
                <$t as RealPlanner>::real_planner().lock().unwrap_or_else(|e| e.into_inner()).plan_fft_forward(n)
            }
            fn c2r_plan(n: usize) -> Arc<dyn ComplexToReal<Self>> {
                <$t as RealPlanner>::real_planner().lock().unwrap_or_else(|e| e.into_inner()).plan_fft_inverse(n)
            }
            fn half_twiddles(n: usize) -> Arc<Vec<Complex<Self>>> {
                static CACHE: OnceLock<Mutex<HashMap<usize, Arc<Vec<Complex<$t>>>>>> = OnceLock::new();
                let mut cache = CACHE.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
                cache.entry(n).or_insert_with(|| Arc::new(twiddles(n))).clone()
            }
        }

        impl RealPlanner for $t {
            fn real_planner() -> &'static Mutex<RealFftPlanner<$t>> {
                static PLANNER: OnceLock<Mutex<RealFftPlanner<$t>>> = OnceLock::new();
                PLANNER.get_or_init(|| Mutex::new(RealFftPlanner::new()))
            }
        }
    };
}

trait RealPlanner: FftNum {
    fn real_planner() -> &'static Mutex<RealFftPlanner<Self>>;
}

fft_float!(f32);
fft_float!(f64);
