//! bfloat16 and float16 on the CPU. Conversions to and from float32 run in blocks on the best
//! path this CPU has, chosen once at runtime; every half-precision op converts a block to
//! float32, runs the float32 kernel and rounds the block back, so each op is vectorised without
//! half-specific code. The path can be forced (`EMBER_SIMD`, `force_path`) to test each one.
//!
//! Paths: `avx512bf16` (`vcvtne2ps2bf16`, and the `vdpbf16ps` matmul), `avx512` (AVX-512F/BW
//! integer rounding for bf16, `vcvtps2ph` for f16), `avx2` (AVX2 integer rounding for bf16,
//! F16C for f16), `scalar`. There is no AVX512-FP16 path (no such CPU to test it on): float16
//! always converts through F16C / AVX-512F `vcvtps2ph`, which round to nearest even.
pub(crate) mod gemm;
pub(crate) mod map;
pub(crate) mod scalar;
#[cfg(target_arch = "x86_64")]
mod x86;

use half::{bf16, f16};
use std::sync::atomic::{AtomicU8, Ordering};

/// A conversion path, ordered from the most portable to the fastest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Path {
    /// Portable code, on any CPU.
    Scalar = 1,
    /// AVX2 integer rounding for bf16, F16C for f16.
    Avx2 = 2,
    /// AVX-512F/BW for bf16, `vcvtps2ph` for f16.
    Avx512 = 3,
    /// AVX512-BF16's `vcvtne2ps2bf16`, and `vdpbf16ps` in the bf16 matmul.
    Avx512Bf16 = 4,
}

impl Path {
    /// Every path, in order.
    pub const ALL: [Path; 4] = [Path::Scalar, Path::Avx2, Path::Avx512, Path::Avx512Bf16];

    /// The name `EMBER_SIMD` and `from_name` take: `scalar`, `avx2`, `avx512`, `avx512bf16`.
    pub fn name(self) -> &'static str {
        match self {
            Path::Scalar => "scalar",
            Path::Avx2 => "avx2",
            Path::Avx512 => "avx512",
            Path::Avx512Bf16 => "avx512bf16",
        }
    }

    /// The path called `name`, or `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<Path> {
        Path::ALL.into_iter().find(|p| p.name() == name)
    }

    /// Whether this CPU can run the path.
    pub fn is_supported(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::is_x86_feature_detected as has;
            let avx2 = has!("avx2") && has!("fma") && has!("f16c");
            let avx512 = avx2 && has!("avx512f") && has!("avx512bw") && has!("avx512vl");
            match self {
                Path::Scalar => true,
                Path::Avx2 => avx2,
                Path::Avx512 => avx512,
                Path::Avx512Bf16 => avx512 && has!("avx512bf16"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Path::Scalar
        }
    }

    fn from_u8(v: u8) -> Path {
        Path::ALL[v as usize - 1]
    }
}

/// The chosen path; 0 until the first use detects it.
static PATH: AtomicU8 = AtomicU8::new(0);

/// The best supported path, capped by `EMBER_SIMD` (scalar|avx2|avx512|avx512bf16) when set.
fn detect() -> Path {
    let best = Path::ALL.into_iter().rev().find(|p| p.is_supported()).unwrap_or(Path::Scalar);
    match std::env::var("EMBER_SIMD").ok().as_deref().and_then(Path::from_name) {
        Some(cap) => cap.min(best),
        None => best,
    }
}

/// The path conversions run on now.
pub fn path() -> Path {
    match PATH.load(Ordering::Relaxed) {
        0 => {
            let p = detect();
            PATH.store(p as u8, Ordering::Relaxed);
            p
        }
        v => Path::from_u8(v),
    }
}

/// Forces a path (tests and benchmarks); `None` goes back to detection. Refuses a path this CPU
/// cannot run.
pub fn force_path(p: Option<Path>) -> crate::error::Result<()> {
    match p {
        Some(p) if !p.is_supported() => crate::bail!(Runtime, "half path '{}' is not supported by this CPU", p.name()),
        Some(p) => PATH.store(p as u8, Ordering::Relaxed),
        None => PATH.store(detect() as u8, Ordering::Relaxed),
    }
    Ok(())
}

/// Elements converted per block: 4 KiB of float32 stays in L1 beside the source and target.
pub const BLOCK: usize = 1024;

/// bfloat16 and float16: the half types with block conversions to and from float32.
pub trait Half: crate::dtype::Element {
    /// `dst[i] = src[i] as f32` for `n` elements.
    ///
    /// # Safety
    /// `src` valid for `n` reads, `dst` for `n` writes.
    unsafe fn widen(src: *const Self, dst: *mut f32, n: usize);
    /// `dst[i] = round(src[i])` for `n` elements.
    ///
    /// # Safety
    /// `src` valid for `n` reads, `dst` for `n` writes.
    unsafe fn narrow(src: *const f32, dst: *mut Self, n: usize);
    /// One float32 rounded to nearest even.
    fn from_f32_scalar(v: f32) -> Self;
    /// A one-pass float32 sum of `n` contiguous elements, on the paths that have one.
    fn fused_sum() -> Option<unsafe fn(*const Self, usize) -> f32>;
}

impl Half for bf16 {
    unsafe fn widen(src: *const bf16, dst: *mut f32, n: usize) {
        bf16_to_f32_raw(src as *const u16, dst, n)
    }
    unsafe fn narrow(src: *const f32, dst: *mut bf16, n: usize) {
        f32_to_bf16_raw(src, dst as *mut u16, n)
    }
    fn from_f32_scalar(v: f32) -> bf16 {
        bf16::from_bits(scalar::f32_to_bf16_bits(v))
    }
    fn fused_sum() -> Option<unsafe fn(*const bf16, usize) -> f32> {
        #[cfg(target_arch = "x86_64")]
        if path() >= Path::Avx512 {
            return Some(|p, n| unsafe { x86::sum_bf16_avx512(p as *const u16, n) });
        }
        None
    }
}

impl Half for f16 {
    unsafe fn widen(src: *const f16, dst: *mut f32, n: usize) {
        f16_to_f32_raw(src as *const u16, dst, n)
    }
    unsafe fn narrow(src: *const f32, dst: *mut f16, n: usize) {
        f32_to_f16_raw(src, dst as *mut u16, n)
    }
    fn from_f32_scalar(v: f32) -> f16 {
        f16::from_bits(scalar::f32_to_f16_bits(v))
    }
    fn fused_sum() -> Option<unsafe fn(*const f16, usize) -> f32> {
        #[cfg(target_arch = "x86_64")]
        if path() >= Path::Avx512 {
            return Some(|p, n| unsafe { x86::sum_f16_avx512(p as *const u16, n) });
        }
        None
    }
}

macro_rules! dispatch {
    ($name:ident, $S:ty, $D:ty, $scalar:expr, $avx2:ident, $avx512:ident, $avx512bf16:ident) => {
        /// # Safety
        /// `src` valid for `n` reads and `dst` for `n` writes (they may be the same memory only
        /// if the element sizes match).
        pub unsafe fn $name(src: *const $S, dst: *mut $D, n: usize) {
            #[cfg(target_arch = "x86_64")]
            match path() {
                Path::Scalar => {}
                Path::Avx2 => return x86::$avx2(src, dst, n),
                Path::Avx512 => return x86::$avx512(src, dst, n),
                Path::Avx512Bf16 => return x86::$avx512bf16(src, dst, n),
            }
            for i in 0..n {
                *dst.add(i) = $scalar(*src.add(i));
            }
        }
    };
}

dispatch!(f32_to_bf16_raw, f32, u16, scalar::f32_to_bf16_bits, f32_to_bf16_avx2, f32_to_bf16_avx512, f32_to_bf16_avx512bf16);
dispatch!(bf16_to_f32_raw, u16, f32, scalar::bf16_bits_to_f32, bf16_to_f32_avx2, bf16_to_f32_avx512, bf16_to_f32_avx512);
dispatch!(f32_to_f16_raw, f32, u16, scalar::f32_to_f16_bits, f32_to_f16_avx2, f32_to_f16_avx512, f32_to_f16_avx512);
dispatch!(f16_to_f32_raw, u16, f32, scalar::f16_bits_to_f32, f16_to_f32_avx2, f16_to_f32_avx512, f16_to_f32_avx512);

#[cfg(test)]
mod tests;
