//! One-input elementwise ops on complex tensors: `abs` and `angle` return the real dtype of the
//! parts, the predicates bool. Ops PyTorch does not define on complex refuse with its error.
use super::unary::UnaryOp::{self, *};
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;

/// The result dtype of `op` on complex input `x`, or PyTorch's refusal.
pub fn out_dtype(op: UnaryOp, x: DType) -> Result<DType> {
    Ok(match op {
        IsNan | IsInf | IsFinite | LogicalNot => DType::Bool,
        Abs | Angle => x.to_real(),
        Neg | Sgn | Conj | Square | Exp | Exp2 | Expm1 | Log | Log2 | Log10 | Log1p | Sqrt | Rsqrt | Reciprocal | Sin
        | Cos | Tan | Asin | Acos | Atan | Sinh | Cosh | Tanh | Sigmoid => x,
        Sign => bail!(NotImplemented, "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use torch.sgn instead."),
        Floor | Ceil | Round | Trunc => bail!(NotImplemented, "{} is not supported for complex inputs", op_name(op)),
        Relu | Hardtanh(..) | Clamp(..) => bail!(NotImplemented, "clamp is not supported for complex types"),
        IsPosInf | IsNegInf | Signbit => bail!(Type, "{} does not support complex inputs.", op_name(op)),
        BitwiseNot => bail!(Type, "bitwise_not: expected an integer or bool tensor, got {x}"),
        _ => bail!(NotImplemented, "\"{}\" not implemented for '{}'", op_name(op), x.legacy_name()),
    })
}

fn op_name(op: UnaryOp) -> String {
    format!("{op:?}").split('(').next().unwrap_or_default().to_lowercase()
}
