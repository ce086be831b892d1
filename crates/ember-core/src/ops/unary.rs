//! One-input elementwise ops. Float ops on integer input compute in float32 (as PyTorch does);
//! float16/bfloat16 compute in float32 blocks and round once on the way out (`half::map`).
use crate::autograd;
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// A one-input elementwise op; each variant is the PyTorch function of its name, with that
/// function's scalar arguments.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UnaryOp {
    /// `neg`: `-x` (refused for bool).
    Neg,
    /// `abs`: `|x|`.
    Abs,
    /// `sign`: -1, 0 or 1 (NaN stays NaN).
    Sign,
    /// `square`: `x * x`.
    Square,
    /// `floor`: rounds down.
    Floor,
    /// `ceil`: rounds up.
    Ceil,
    /// `round`: to the nearest integer, half to even.
    Round,
    /// `trunc`: rounds toward zero.
    Trunc,
    /// `relu`: `max(x, 0)`.
    Relu,
    /// `hardtanh(min_val, max_val)`: `x` clamped to `[min_val, max_val]`, NaN kept (`relu6` is
    /// `Hardtanh(0, 6)`).
    Hardtanh(f64, f64),
    /// `clamp(min, max)` with number bounds; `None` leaves that side open.
    Clamp(Option<f64>, Option<f64>),
    /// `exp`: `e^x`.
    Exp,
    /// `exp2`: `2^x`.
    Exp2,
    /// `expm1`: `e^x - 1`, accurate near 0.
    Expm1,
    /// `log`: natural logarithm.
    Log,
    /// `log2`: base-2 logarithm.
    Log2,
    /// `log10`: base-10 logarithm.
    Log10,
    /// `log1p`: `ln(1 + x)`, accurate near 0.
    Log1p,
    /// `sqrt`: square root.
    Sqrt,
    /// `rsqrt`: `1 / sqrt(x)`.
    Rsqrt,
    /// `reciprocal`: `1 / x`.
    Reciprocal,
    /// `sin`, in radians.
    Sin,
    /// `cos`, in radians.
    Cos,
    /// `tan`, in radians.
    Tan,
    /// `asin`, in radians.
    Asin,
    /// `acos`, in radians.
    Acos,
    /// `atan`, in radians.
    Atan,
    /// `sinh`.
    Sinh,
    /// `cosh`.
    Cosh,
    /// `tanh`.
    Tanh,
    /// `sigmoid`: `1 / (1 + e^-x)`.
    Sigmoid,
    /// `logit(eps)`: `ln(x / (1 - x))`, with `x` first clamped to `[eps, 1 - eps]` when `eps` is
    /// given.
    Logit(Option<f64>),
    /// `erf`: the error function.
    Erf,
    /// `erfc`: `1 - erf(x)`, accurate for large `x`.
    Erfc,
    /// `frac`: `x - trunc(x)`.
    Frac,
    /// `gelu` (exact, with `erf`).
    Gelu,
    /// `gelu(approximate="tanh")`.
    GeluTanh,
    /// `silu`: `x * sigmoid(x)`.
    Silu,
    /// `mish`: `x * tanh(softplus(x))`.
    Mish,
    /// `selu`, with PyTorch's fixed alpha and scale.
    Selu,
    /// `elu(alpha)`: `x` for `x > 0`, else `alpha * (e^x - 1)`.
    Elu(f64),
    /// `leaky_relu(negative_slope)`: `x` for `x > 0`, else `negative_slope * x`.
    LeakyRelu(f64),
    /// `softplus(beta, threshold)`: `ln(1 + e^(beta * x)) / beta`, and `x` itself where
    /// `beta * x > threshold`.
    Softplus(f64, f64),
    /// `hardswish`: `x * relu6(x + 3) / 6`.
    Hardswish,
    /// `hardsigmoid`: `relu6(x + 3) / 6`.
    Hardsigmoid,
    /// `nan_to_num(nan, posinf, neginf)`: those three replaced by the given values (clamped to
    /// the dtype's finite range); integers pass unchanged.
    NanToNum(f64, f64, f64),
    /// `logical_not`: bool, true where `x` is zero.
    LogicalNot,
    /// `bitwise_not`: `!x` for integers and bool (refused for floats).
    BitwiseNot,
    /// `isnan`: bool.
    IsNan,
    /// `isinf`: bool, true for both infinities.
    IsInf,
    /// `isposinf`: bool.
    IsPosInf,
    /// `isneginf`: bool.
    IsNegInf,
    /// `isfinite`: bool, false for NaN and infinities.
    IsFinite,
    /// `signbit`: bool, true where the sign bit is set (`-0.0` included).
    Signbit,
    /// `z / |z|` (the sign of a real number).
    Sgn,
    /// The complex conjugate (a copy of a real tensor).
    Conj,
    /// The argument of a complex number; 0 or π for reals.
    Angle,
}

use UnaryOp::*;

impl UnaryOp {
    /// Ops without parameters, by their PyTorch name.
    pub fn from_name(name: &str) -> Option<UnaryOp> {
        Some(match name {
            "neg" => Neg,
            "abs" => Abs,
            "sign" => Sign,
            "square" => Square,
            "floor" => Floor,
            "ceil" => Ceil,
            "round" => Round,
            "trunc" => Trunc,
            "relu" => Relu,
            "relu6" => Hardtanh(0.0, 6.0),
            "exp" => Exp,
            "exp2" => Exp2,
            "expm1" => Expm1,
            "log" => Log,
            "log2" => Log2,
            "log10" => Log10,
            "log1p" => Log1p,
            "sqrt" => Sqrt,
            "rsqrt" => Rsqrt,
            "reciprocal" => Reciprocal,
            "sin" => Sin,
            "cos" => Cos,
            "tan" => Tan,
            "asin" => Asin,
            "acos" => Acos,
            "atan" => Atan,
            "sinh" => Sinh,
            "cosh" => Cosh,
            "tanh" => Tanh,
            "sigmoid" => Sigmoid,
            "erf" => Erf,
            "erfc" => Erfc,
            "frac" => Frac,
            "gelu" => Gelu,
            "gelu_tanh" => GeluTanh,
            "silu" => Silu,
            "mish" => Mish,
            "selu" => Selu,
            "hardswish" => Hardswish,
            "hardsigmoid" => Hardsigmoid,
            "logical_not" => LogicalNot,
            "bitwise_not" => BitwiseNot,
            "isnan" => IsNan,
            "isinf" => IsInf,
            "isposinf" => IsPosInf,
            "isneginf" => IsNegInf,
            "isfinite" => IsFinite,
            "signbit" => Signbit,
            "sgn" => Sgn,
            "conj_physical" => Conj,
            "angle" => Angle,
            _ => return None,
        })
    }

    /// The result dtype for an input dtype, or the PyTorch-style refusal.
    pub fn out_dtype(self, x: DType) -> Result<DType> {
        if x.is_complex() {
            return super::complex_unary::out_dtype(self, x);
        }
        Ok(match self {
            LogicalNot | IsNan | IsInf | IsPosInf | IsNegInf | IsFinite | Signbit => DType::Bool,
            BitwiseNot if x.is_float() => bail!(Type, "bitwise_not: expected an integer or bool tensor, got {x}"),
            BitwiseNot => x,
            Neg if x == DType::Bool => bail!(Type, "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."),
            Abs | Square if x == DType::Bool => bail!(Type, "{self:?} is not supported for bool tensors"),
            Sgn | Conj if x == DType::Bool => bail!(Type, "{self:?} is not supported for bool tensors"),
            Sgn | Conj => x,
            Neg | Abs | Sign | Square | Floor | Ceil | Round | Trunc | Relu | Hardtanh(..) => x,
            Clamp(lo, hi) => {
                let bound_is_float = |b: Option<f64>| b.is_some_and(|v| v.fract() != 0.0 || !v.is_finite());
                if !x.is_float() && (bound_is_float(lo) || bound_is_float(hi)) {
                    DType::F32
                } else {
                    x
                }
            }
            NanToNum(..) => x,
            Frac if !x.is_float() => bail!(NotImplemented, "\"frac_cpu\" not implemented for '{}'", x.legacy_name()),
            _ => x.to_float(),
        })
    }
}

/// Computes `op(x)` into a fresh tensor (recorded for autograd, see `grad::unary`).
pub fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    autograd::track(&[x], || unary_kernel(op, x), |y| super::grad::unary::record_unary(op, x, y))
}

fn unary_kernel(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    let dtype = op.out_dtype(x.dtype())?;
    let out = Tensor::uninit_like(x.shape(), dtype, x.device(), Some(x))?;
    let input = if dtype.is_float() && !x.dtype().is_inexact() { x.to_dtype(dtype)? } else { x.clone() };
    crate::backend::of(x.device())?.unary(op, &input, &out)?;
    Ok(out)
}

/// Computes `op(x)` into `out` (same shape), casting when the dtypes differ. Used for `out=`
/// and in-place ops (`out` may be `x` itself).
pub fn unary_out(op: UnaryOp, x: &Tensor, out: &Tensor) -> Result<()> {
    // Checked before any path runs: one that computes out of place would cast silently.
    super::check_cast(op.out_dtype(x.dtype())?, out)?;
    if out.is_alias_of(x) {
        return autograd::inplace::in_place(out, &[], || unary_out_kernel(op, x, out), || unary(op, x));
    }
    autograd::inplace::out_write(out, &[x], || unary_out_kernel(op, x, out), || unary(op, x))
}

fn unary_out_kernel(op: UnaryOp, x: &Tensor, out: &Tensor) -> Result<()> {
    let dtype = op.out_dtype(x.dtype())?;
    super::check_out(out, x.shape(), dtype)?;
    let device = crate::backend::common_device(&[out, x])?;
    if dtype == out.dtype() && (!dtype.is_float() || x.dtype().is_inexact()) {
        crate::backend::of(device)?.unary(op, x, out)?;
        out.bump_version();
        Ok(())
    } else {
        out.copy_(&unary_kernel(op, x)?)
    }
}

