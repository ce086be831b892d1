//! Element types, their promotion lattice, and the macro that turns a runtime `DType` into a
//! Rust type parameter.
use half::{bf16, f16};
use num_complex::Complex;
use std::fmt;

/// The element types of complex32, complex64 and complex128: `num_complex`'s, the same types
/// rustfft and gemm take, so buffers pass to them without conversion.
pub type CHalf = Complex<f16>;
/// The element type of complex64.
pub type CFloat = Complex<f32>;
/// The element type of complex128.
pub type CDouble = Complex<f64>;

/// An element type, named as PyTorch names it (`DType::F32` is `torch.float32`), promoted by
/// PyTorch's rules.
///
/// ```
/// use ember_core::DType;
/// assert_eq!(DType::promote(DType::I64, DType::F16), DType::F16);
/// assert_eq!((DType::C64.size(), DType::BF16.name()), (8, "bfloat16"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// `torch.bool`, one byte holding 0 or 1.
    Bool,
    /// `torch.uint8`.
    U8,
    /// `torch.int8`.
    I8,
    /// `torch.int16`.
    I16,
    /// `torch.int32`.
    I32,
    /// `torch.int64`, PyTorch's default integer dtype.
    I64,
    /// `torch.float16` (IEEE half).
    F16,
    /// `torch.bfloat16`.
    BF16,
    /// `torch.float32`, PyTorch's default float dtype.
    F32,
    /// `torch.float64`.
    F64,
    /// complex32 ("chalf"): two float16.
    C32,
    /// `torch.complex64`: two float32.
    C64,
    /// `torch.complex128`: two float64.
    C128,
}

/// The coarse kind that drives type promotion: a higher category always wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    /// `bool`.
    Bool,
    /// The signed and unsigned integers.
    Int,
    /// The real floating-point types.
    Float,
    /// The complex types.
    Complex,
}

impl DType {
    /// Every dtype, from bool to complex128 (the order of PyTorch's scalar types).
    pub const ALL: [DType; 13] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::C32,
        DType::C64,
        DType::C128,
    ];

    /// Bytes per element (`torch.dtype.itemsize`).
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 | DType::C32 => 4,
            DType::I64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    /// PyTorch's name without the `torch.` prefix (`float32`); `Display` prints it.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C32 => "complex32",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }

    /// PyTorch's C++ scalar-type name ("Float", "Long"), which its error messages use.
    pub fn legacy_name(self) -> &'static str {
        match self {
            DType::Bool => "Bool",
            DType::U8 => "Byte",
            DType::I8 => "Char",
            DType::I16 => "Short",
            DType::I32 => "Int",
            DType::I64 => "Long",
            DType::F16 => "Half",
            DType::BF16 => "BFloat16",
            DType::F32 => "Float",
            DType::F64 => "Double",
            DType::C32 => "ComplexHalf",
            DType::C64 => "ComplexFloat",
            DType::C128 => "ComplexDouble",
        }
    }

    /// The dtype `name` returns this string for; `None` for aliases (`float`, `long`) and
    /// unknown names.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    /// The promotion category (bool < int < float < complex).
    pub fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => Category::Float,
            DType::C32 | DType::C64 | DType::C128 => Category::Complex,
            _ => Category::Int,
        }
    }

    /// A real floating-point type (PyTorch's `dtype.is_floating_point`).
    pub fn is_float(self) -> bool {
        self.category() == Category::Float
    }

    /// A signed or unsigned integer type (not bool).
    pub fn is_int(self) -> bool {
        self.category() == Category::Int
    }

    /// A complex type (PyTorch's `dtype.is_complex`).
    pub fn is_complex(self) -> bool {
        self.category() == Category::Complex
    }

    /// Float or complex: the dtypes that carry gradients and that `exp`-like ops keep.
    pub fn is_inexact(self) -> bool {
        self.is_float() || self.is_complex()
    }

    /// The float type an op like `exp` computes in for this input (PyTorch: ints become float32;
    /// complex stays complex).
    pub fn to_float(self) -> DType {
        if self.is_inexact() {
            self
        } else {
            DType::F32
        }
    }

    /// The type of one part of a complex dtype (`abs`, `real`, `angle`); real dtypes map to
    /// themselves.
    pub fn to_real(self) -> DType {
        match self {
            DType::C32 => DType::F16,
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            d => d,
        }
    }

    /// The complex dtype whose parts are this float dtype (ints and bfloat16 map to complex64,
    /// bfloat16 because Ember has no bfloat16 complex).
    pub fn to_complex(self) -> DType {
        match self {
            DType::F16 => DType::C32,
            DType::F64 => DType::C128,
            d if d.is_complex() => d,
            _ => DType::C64,
        }
    }

    /// PyTorch's refusal for a kernel that has no complex version: `"op" not implemented for
    /// 'ComplexFloat'`.
    pub fn require_real(self, op: &str) -> crate::error::Result<()> {
        if self.is_complex() {
            crate::bail!(NotImplemented, "\"{op}\" not implemented for '{}'", self.legacy_name());
        }
        Ok(())
    }

    /// PyTorch's `promote_types`.
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        if a == b {
            return a;
        }
        match (a.category(), b.category()) {
            (Category::Complex, Category::Complex) => DType::promote(a.to_real(), b.to_real()).to_complex(),
            // A float widens the complex type's parts; an int or bool leaves it as it is.
            (Category::Complex, Category::Float) => DType::promote(a.to_real(), b).to_complex(),
            (Category::Float, Category::Complex) => DType::promote(a, b.to_real()).to_complex(),
            (ca, cb) if ca != cb => {
                if ca > cb {
                    a
                } else {
                    b
                }
            }
            (Category::Float, _) => match (a, b) {
                (F16, BF16) | (BF16, F16) => F32,
                _ => {
                    if a.size() >= b.size() {
                        a
                    } else {
                        b
                    }
                }
            },
            _ => {
                // Integers: unsigned u8 mixes with signed types by widening until both fit.
                let signed_size = |d: DType| if d == U8 { 2 } else { d.size() };
                match signed_size(a).max(signed_size(b)) {
                    1 => I8,
                    2 => I16,
                    4 => I32,
                    _ => I64,
                }
            }
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that can live in a tensor. Conversions go through `f64`/`i64`, which hold every
/// supported value exactly except `i64` beyond 2^53 in `to_f64` (the same as PyTorch's casts).
pub trait Element: Copy + Send + Sync + PartialEq + fmt::Debug + 'static {
    /// The dtype of a tensor of this type.
    const DTYPE: DType;
    /// 0 (`false` for bool).
    fn zero() -> Self;
    /// 1 (`true` for bool).
    fn one() -> Self;
    /// As f64 (complex types: the real part).
    fn to_f64(self) -> f64;
    /// From f64, as PyTorch's casts: rounded for floats, truncated for ints, nonzero for bool.
    fn from_f64(v: f64) -> Self;
    /// As i64, truncating floats.
    fn to_i64(self) -> i64;
    /// From i64, wrapped to narrower ints as PyTorch's casts are, nonzero for bool.
    fn from_i64(v: i64) -> Self;
    /// As f32.
    fn to_f32(self) -> f32 {
        self.to_f64() as f32
    }
    /// From f32.
    fn from_f32(v: f32) -> Self {
        Self::from_f64(v as f64)
    }
    /// Not zero (what a cast to bool gives).
    fn is_nonzero(self) -> bool {
        self != Self::zero()
    }
    /// As a complex128 value (real types get a zero imaginary part).
    fn to_c128(self) -> CDouble {
        CDouble::new(self.to_f64(), 0.0)
    }
    /// From a complex128 value (real types keep the real part, as PyTorch's casts do).
    fn from_c128(v: CDouble) -> Self {
        Self::from_f64(v.re)
    }
}

macro_rules! complex_element {
    ($t:ty, $d:ident, $part:ty) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn zero() -> Self {
                Self::new(<$part>::from_f64(0.0), <$part>::from_f64(0.0))
            }
            fn one() -> Self {
                Self::new(<$part>::from_f64(1.0), <$part>::from_f64(0.0))
            }
            fn to_f64(self) -> f64 {
                self.re.to_f64()
            }
            fn from_f64(v: f64) -> Self {
                Self::new(<$part>::from_f64(v), <$part>::from_f64(0.0))
            }
            fn to_i64(self) -> i64 {
                self.re.to_f64() as i64
            }
            fn from_i64(v: i64) -> Self {
                Self::from_f64(v as f64)
            }
            fn is_nonzero(self) -> bool {
                self.re.to_f64() != 0.0 || self.im.to_f64() != 0.0
            }
            fn to_c128(self) -> CDouble {
                CDouble::new(self.re.to_f64(), self.im.to_f64())
            }
            fn from_c128(v: CDouble) -> Self {
                Self::new(<$part>::from_f64(v.re), <$part>::from_f64(v.im))
            }
        }
    };
}
complex_element!(CHalf, C32, f16);
complex_element!(CFloat, C64, f32);
complex_element!(CDouble, C128, f64);

/// Float to integer as PyTorch's casts give on x86: truncation, through int32 for the types
/// narrower than int64 (so `-1.5` becomes 255 as uint8, not Rust's saturated 0), and the
/// minimum bit pattern for NaN and out-of-range values, as the hardware conversion gives.
fn float_to_i32(v: f64) -> i32 {
    if v > -2147483649.0 && v < 2147483648.0 { v as i32 } else { i32::MIN }
}

fn float_to_i64(v: f64) -> i64 {
    if (-9223372036854775808.0..9223372036854775808.0).contains(&v) { v as i64 } else { i64::MIN }
}

macro_rules! int_element {
    ($t:ty, $d:ident, $from_float:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn zero() -> Self {
                0
            }
            fn one() -> Self {
                1
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_f64(v: f64) -> Self {
                $from_float(v) as $t
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn from_i64(v: i64) -> Self {
                v as $t
            }
        }
    };
}
int_element!(u8, U8, float_to_i32);
int_element!(i8, I8, float_to_i32);
int_element!(i16, I16, float_to_i32);
int_element!(i32, I32, float_to_i32);
int_element!(i64, I64, float_to_i64);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn from_i64(v: i64) -> Self {
        v != 0
    }
}

macro_rules! float_element {
    ($t:ty, $d:ident, $to:expr, $from:expr, $to32:expr, $from32:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn zero() -> Self {
                $from(0.0)
            }
            fn one() -> Self {
                $from(1.0)
            }
            fn to_f64(self) -> f64 {
                $to(self)
            }
            fn from_f64(v: f64) -> Self {
                $from(v)
            }
            fn to_i64(self) -> i64 {
                $to(self) as i64
            }
            fn from_i64(v: i64) -> Self {
                $from(v as f64)
            }
            fn to_f32(self) -> f32 {
                $to32(self)
            }
            fn from_f32(v: f32) -> Self {
                $from32(v)
            }
        }
    };
}
float_element!(f32, F32, |x: f32| x as f64, |v: f64| v as f32, |x: f32| x, |v: f32| v);
float_element!(f64, F64, |x: f64| x, |v: f64| v, |x: f64| x as f32, |v: f32| v as f64);
float_element!(f16, F16, f16::to_f64, f16::from_f64, f16::to_f32, f16::from_f32);
float_element!(bf16, BF16, bf16::to_f64, bf16::from_f64, bf16::to_f32, bf16::from_f32);

/// Runs `$body` with `$T` bound to the Rust type of `$dtype`.
#[macro_export]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident, $body:expr) => {{
        use $crate::dtype::DType;
        match $dtype {
            DType::Bool => {
                type $T = bool;
                $body
            }
            DType::U8 => {
                type $T = u8;
                $body
            }
            DType::I8 => {
                type $T = i8;
                $body
            }
            DType::I16 => {
                type $T = i16;
                $body
            }
            DType::I32 => {
                type $T = i32;
                $body
            }
            DType::I64 => {
                type $T = i64;
                $body
            }
            DType::F16 => {
                type $T = ::half::f16;
                $body
            }
            DType::BF16 => {
                type $T = ::half::bf16;
                $body
            }
            DType::F32 => {
                type $T = f32;
                $body
            }
            DType::F64 => {
                type $T = f64;
                $body
            }
            d @ (DType::C32 | DType::C64 | DType::C128) => $crate::dtype::no_complex_kernel(d),
        }
    }};
}

/// Runs `$body` with `$T` bound to the Rust type of the complex `$dtype`.
#[macro_export]
macro_rules! with_complex {
    ($dtype:expr, $T:ident, $body:expr) => {{
        use $crate::dtype::DType;
        match $dtype {
            DType::C32 => {
                type $T = $crate::dtype::CHalf;
                $body
            }
            DType::C64 => {
                type $T = $crate::dtype::CFloat;
                $body
            }
            DType::C128 => {
                type $T = $crate::dtype::CDouble;
                $body
            }
            d => unreachable!("complex kernel on {d}"),
        }
    }};
}

/// `with_dtype!` over every dtype, complex ones included: for kernels that only move or test
/// elements (masked fills, selections, triangles).
#[macro_export]
macro_rules! with_any_dtype {
    ($dtype:expr, $T:ident, $body:expr) => {{
        if $dtype.is_complex() {
            $crate::with_complex!($dtype, $T, $body)
        } else {
            $crate::with_dtype!($dtype, $T, $body)
        }
    }};
}

/// `with_dtype!` covers the real dtypes only; every op entry point refuses complex input
/// (`DType::require_real`) or routes it to its complex kernel before reaching one, so this is a
/// bug, never an input error.
#[cold]
pub fn no_complex_kernel(d: DType) -> ! {
    panic!("a {d} tensor reached a kernel for real dtypes only")
}

#[cfg(test)]
mod tests {
    use super::DType::*;
    use super::*;

    #[test]
    fn promotion_matches_pytorch() {
        assert_eq!(DType::promote(U8, I8), I16);
        assert_eq!(DType::promote(U8, I32), I32);
        assert_eq!(DType::promote(Bool, U8), U8);
        assert_eq!(DType::promote(I64, F16), F16);
        assert_eq!(DType::promote(F16, BF16), F32);
        assert_eq!(DType::promote(F32, F64), F64);
        assert_eq!(DType::promote(Bool, Bool), Bool);
        assert_eq!(DType::promote(F64, C64), C128);
        assert_eq!(DType::promote(F16, C32), C32);
        assert_eq!(DType::promote(BF16, C32), C64);
        assert_eq!(DType::promote(I64, C32), C32);
        assert_eq!(DType::promote(C32, C64), C64);
        for a in DType::ALL {
            for b in DType::ALL {
                assert_eq!(DType::promote(a, b), DType::promote(b, a));
            }
        }
    }
}
