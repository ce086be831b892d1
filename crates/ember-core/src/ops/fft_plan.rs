//! FFT plans, made once per (length, direction) and precision and shared by every thread:
//! rustfft's and realfft's planners cache the plans they build, so each precision keeps one of
//! each planner behind a lock that is only held while a plan is looked up.
use realfft::{ComplexToReal, RealFftPlanner, RealToComplex};
use rustfft::{Fft, FftDirection, FftNum, FftPlanner};
use std::sync::{Arc, Mutex, OnceLock};

/// A float precision the FFT kernels run in (f32 or f64).
pub trait FftFloat: FftNum + num_traits::Float {
    fn complex_plan(n: usize, forward: bool) -> Arc<dyn Fft<Self>>;
    fn r2c_plan(n: usize) -> Arc<dyn RealToComplex<Self>>;
    fn c2r_plan(n: usize) -> Arc<dyn ComplexToReal<Self>>;
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
