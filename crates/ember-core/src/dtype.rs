//! Element types, their promotion lattice, and the macro that turns a runtime `DType` into a
//! Rust type parameter.
use half::{bf16, f16};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

/// The coarse kind that drives type promotion: a higher category always wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Bool,
    Int,
    Float,
}

impl DType {
    pub const ALL: [DType; 10] = [
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
    ];

    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

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
        }
    }

    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }

    pub fn category(self) -> Category {
        match self {
            DType::Bool => Category::Bool,
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => Category::Float,
            _ => Category::Int,
        }
    }

    pub fn is_float(self) -> bool {
        self.category() == Category::Float
    }

    pub fn is_int(self) -> bool {
        self.category() == Category::Int
    }

    /// The float type an op like `exp` computes in for this input (PyTorch: ints become float32).
    pub fn to_float(self) -> DType {
        if self.is_float() {
            self
        } else {
            DType::F32
        }
    }

    /// PyTorch's `promote_types`.
    pub fn promote(a: DType, b: DType) -> DType {
        use DType::*;
        if a == b {
            return a;
        }
        match (a.category(), b.category()) {
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
pub trait Element: Copy + Send + Sync + PartialOrd + fmt::Debug + 'static {
    const DTYPE: DType;
    fn zero() -> Self;
    fn one() -> Self;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    fn to_i64(self) -> i64;
    fn from_i64(v: i64) -> Self;
    fn to_f32(self) -> f32 {
        self.to_f64() as f32
    }
    fn from_f32(v: f32) -> Self {
        Self::from_f64(v as f64)
    }
    fn is_nonzero(self) -> bool {
        self != Self::zero()
    }
}

macro_rules! int_element {
    ($t:ty, $d:ident) => {
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
                v as $t
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
int_element!(u8, U8);
int_element!(i8, I8);
int_element!(i16, I16);
int_element!(i32, I32);
int_element!(i64, I64);

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
                type $T = half::f16;
                $body
            }
            DType::BF16 => {
                type $T = half::bf16;
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
        }
    }};
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
        for a in DType::ALL {
            for b in DType::ALL {
                assert_eq!(DType::promote(a, b), DType::promote(b, a));
            }
        }
    }
}
