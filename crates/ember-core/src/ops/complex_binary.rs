//! Two-input elementwise ops on complex operands: arithmetic, `pow`, equality and the logical
//! ops. Ordering comparisons, min/max and the integer-style ops refuse as PyTorch does.
use super::binary::BinaryOp::{self, *};
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;

/// (dtype the kernel computes in, dtype of the result) for complex `common`.
pub fn dtypes(op: BinaryOp, common: DType) -> Result<(DType, DType)> {
    let name = common.legacy_name();
    Ok(match op {
        Add | Sub | Mul | Div | Pow => (common, common),
        Eq | Ne | LogicalAnd | LogicalOr | LogicalXor => (common, DType::Bool),
        Maximum | Minimum | Fmax | Fmin => bail!(Type, "{} not implemented for complex tensors.", format!("{op:?}").to_lowercase()),
        Lt | Le | Gt | Ge => bail!(NotImplemented, "\"{}_cpu\" not implemented for '{name}'", format!("{op:?}").to_lowercase()),
        FloorDiv => bail!(NotImplemented, "\"div_floor_cpu\" not implemented for '{name}'"),
        TruncDiv => bail!(NotImplemented, "\"div_trunc_cpu\" not implemented for '{name}'"),
        BitwiseAnd | BitwiseOr | BitwiseXor | LeftShift | RightShift => {
            bail!(Type, "{op:?} is only supported for integer and bool tensors, got {common}")
        }
        Remainder | Fmod | Atan2 | Hypot => bail!(NotImplemented, "\"{}_cpu\" not implemented for '{name}'", format!("{op:?}").to_lowercase()),
    })
}
