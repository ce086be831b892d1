//! Two-input elementwise ops: arithmetic, comparison, logical and bitwise, with broadcasting
//! and PyTorch's result-type rules for tensor/0-d tensor/Python-number operands.
use crate::autograd;
use crate::bail;
use crate::device::Device;
use crate::dtype::{CDouble, Category, DType, Element};
use crate::error::Result;
use crate::layout::broadcast_shapes;
use crate::tensor::Tensor;
use half::{bf16, f16};

/// A Python number operand: it takes part in the result type only as a "wrapped number" does
/// in PyTorch (a float scalar makes an int tensor float32, but never widens a float16 tensor).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    /// A Python `bool`.
    Bool(bool),
    /// A Python `int`.
    Int(i64),
    /// A Python `float`.
    Float(f64),
    /// A Python `complex`.
    Complex(CDouble),
}

impl Scalar {
    /// The value as a float (a complex number's real part).
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
            Scalar::Complex(z) => z.re,
        }
    }

    /// The value as a complex number (imaginary part 0 for a real scalar).
    pub fn to_c128(self) -> CDouble {
        match self {
            Scalar::Complex(z) => z,
            s => CDouble::new(s.to_f64(), 0.0),
        }
    }

    /// The dtype a Python number takes when it decides a result type on its own.
    pub fn default_dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => DType::F32,
            Scalar::Complex(_) => DType::C64,
        }
    }

    /// `to_tensor` for a value written into a tensor of `dtype` (`fill_`, `x[i] = v`): refuses a
    /// value `dtype` cannot hold, as PyTorch's checked conversion does (an imaginary part for a
    /// real dtype, an integer out of range, NaN or infinity for an integer dtype, a finite float
    /// beyond the largest of a float dtype).
    pub fn to_tensor_checked(self, dtype: DType) -> Result<Tensor> {
        if !self.fits(dtype) {
            bail!(Runtime, "value cannot be converted to type {} without overflow", c_type_name(dtype));
        }
        Ok(self.to_tensor(dtype))
    }

    fn fits(self, dtype: DType) -> bool {
        let v = match self {
            Scalar::Complex(z) if !dtype.is_complex() && z.im != 0.0 => return false,
            Scalar::Bool(_) => return true,
            Scalar::Int(_) if dtype == DType::I64 => return true,
            s => s.to_f64(),
        };
        let finite_max = match dtype {
            DType::Bool | DType::F64 | DType::C128 => return true,
            DType::F32 | DType::C64 => f32::MAX as f64,
            DType::F16 | DType::C32 => f16::MAX.to_f64(),
            DType::BF16 => bf16::MAX.to_f64(),
            // As c10's `overflows`: a negative integer may wrap into uint8 (two's complement); a
            // float must lie within the type's range as it is, fraction included.
            DType::U8 if matches!(self, Scalar::Int(_)) => return (-255.0..=255.0).contains(&v),
            DType::U8 => return (0.0..=255.0).contains(&v),
            DType::I8 => return (-128.0..=127.0).contains(&v),
            DType::I16 => return (-32768.0..=32767.0).contains(&v),
            DType::I32 => return (-2147483648.0..=2147483647.0).contains(&v),
            DType::I64 => return (-9223372036854775808.0..9223372036854775808.0).contains(&v),
        };
        !v.is_finite() || v.abs() <= finite_max
    }

    /// A 0-d tensor of `dtype` holding this value.
    pub fn to_tensor(self, dtype: DType) -> Tensor {
        if dtype.is_complex() {
            return crate::with_complex!(dtype, T, Tensor::scalar(T::from_c128(self.to_c128())));
        }
        crate::with_dtype!(dtype, T, match self {
            Scalar::Complex(z) => Tensor::scalar(T::from_f64(z.re)),
            Scalar::Float(f) => Tensor::scalar(T::from_f64(f)),
            Scalar::Int(i) => Tensor::scalar(T::from_i64(i)),
            Scalar::Bool(b) => Tensor::scalar(T::from_i64(b as i64)),
        })
    }
}

/// The C++ type PyTorch's conversion errors name.
fn c_type_name(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "bool",
        DType::U8 => "uint8_t",
        DType::I8 => "int8_t",
        DType::I16 => "int16_t",
        DType::I32 => "int",
        DType::I64 => "int64_t",
        DType::F16 => "at::Half",
        DType::BF16 => "at::BFloat16",
        DType::F32 => "float",
        DType::F64 => "double",
        DType::C32 => "c10::complex<c10::Half>",
        DType::C64 => "c10::complex<float>",
        DType::C128 => "c10::complex<double>",
    }
}

/// One side of a binary op: a tensor or a Python number.
#[derive(Clone, Copy)]
pub enum Operand<'a> {
    /// A tensor, 0-d or not (a 0-d tensor ranks below dimensioned ones in the result type).
    Tensor(&'a Tensor),
    /// A Python number.
    Scalar(Scalar),
}

impl Operand<'_> {
    /// Whether the op must record for this operand (see `autograd::needs_grad`).
    fn needs_grad(&self) -> bool {
        matches!(self, Operand::Tensor(t) if autograd::needs_grad(&[t]))
    }

    /// The operand as a tensor: itself, or a number as a 0-d tensor of `dtype`.
    fn to_tensor(self, dtype: DType) -> Tensor {
        match self {
            Operand::Tensor(t) => t.clone(),
            Operand::Scalar(s) => s.to_tensor(dtype),
        }
    }

    fn shape(&self) -> &[usize] {
        match self {
            Operand::Tensor(t) => t.shape(),
            Operand::Scalar(_) => &[],
        }
    }

    /// This operand as a tensor of `dtype` on `device` broadcast to `shape`.
    pub fn materialize(&self, dtype: DType, shape: &[usize], device: Device) -> Result<Tensor> {
        let t = match self {
            Operand::Tensor(t) => t.to_device(device)?.to_dtype(dtype)?,
            Operand::Scalar(s) => s.to_tensor(dtype).to_device(device)?,
        };
        t.broadcast_to(shape)
    }

    /// This operand as a backend takes it: a tensor of `dtype` on `device` broadcast to
    /// `shape`, or a number, which stays a number.
    fn ready(self, dtype: DType, shape: &[usize], device: Device) -> Result<Ready> {
        Ok(match self {
            Operand::Tensor(_) => Ready::Tensor(self.materialize(dtype, shape, device)?),
            Operand::Scalar(s) => Ready::Scalar(s),
        })
    }
}

/// The device of an op's operands (numbers go with any); no allocation, as every op asks.
fn operands_device(operands: &[Operand]) -> Result<Device> {
    let tensors = || operands.iter().filter_map(|o| match o {
        Operand::Tensor(t) => Some(*t),
        Operand::Scalar(_) => None,
    });
    let device = tensors().map(|t| t.device()).find(|&d| d != Device::Cpu).unwrap_or(Device::Cpu);
    for t in tensors() {
        crate::backend::check_on(device, t)?;
    }
    Ok(device)
}

/// An operand prepared for a backend (see `Operand::ready`).
enum Ready {
    Tensor(Tensor),
    Scalar(Scalar),
}

impl Ready {
    fn operand(&self) -> Operand<'_> {
        match self {
            Ready::Tensor(t) => Operand::Tensor(t),
            Ready::Scalar(s) => Operand::Scalar(*s),
        }
    }
}

/// PyTorch's `combine_categories`: a lower-priority operand (0-d tensor, Python number) only
/// changes the result when it is of a higher category; a complex one then keeps a float
/// operand's precision (float64 tensor * 1j is complex128).
fn combine(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    match (higher, lower) {
        (Some(h), _) if h.is_complex() => Some(h),
        (Some(h), Some(l)) if l.is_complex() => Some(if h.is_float() { h.to_complex() } else { l }),
        (Some(h), _) if h.is_float() => Some(h),
        (Some(h), Some(l)) if h == DType::Bool || l.is_float() => Some(DType::promote(h, l)),
        (Some(h), _) => Some(h),
        (None, l) => l,
    }
}

/// PyTorch's `result_type`: tensors with dims decide first; 0-d tensors and then Python numbers
/// only matter when they are of a higher category.
pub fn result_type(operands: &[Operand]) -> DType {
    let (mut dim, mut zero, mut wrapped) = (None, None, None);
    let join = |acc: Option<DType>, d: DType| Some(acc.map_or(d, |a| DType::promote(a, d)));
    for op in operands {
        match op {
            Operand::Tensor(t) if t.ndim() > 0 => dim = join(dim, t.dtype()),
            Operand::Tensor(t) => zero = join(zero, t.dtype()),
            Operand::Scalar(s) => wrapped = join(wrapped, s.default_dtype()),
        }
    }
    combine(dim, combine(zero, wrapped)).expect("result_type of no operands")
}

/// The two-input elementwise ops, each PyTorch's function of the same name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BinaryOp {
    /// `torch.add` (`+`).
    Add,
    /// `torch.sub` (`-`).
    Sub,
    /// `torch.mul` (`*`).
    Mul,
    /// `torch.div` (`/`): true division, so integer inputs give the default float dtype.
    Div,
    /// `torch.floor_divide` (`//`): the quotient rounded down.
    FloorDiv,
    /// `div(rounding_mode='trunc')`.
    TruncDiv,
    /// `torch.remainder` (`%`): the sign of the divisor, as Python's `%`.
    Remainder,
    /// `torch.fmod`: the sign of the dividend, as C's `fmod`.
    Fmod,
    /// `torch.pow` (`**`).
    Pow,
    /// `torch.atan2(input, other)`: the angle of `(other, input)` in radians.
    Atan2,
    /// `torch.hypot`: `sqrt(a² + b²)` without overflow.
    Hypot,
    /// `torch.maximum`: NaN wins.
    Maximum,
    /// `torch.minimum`: NaN wins.
    Minimum,
    /// `torch.fmax`: the number wins over NaN.
    Fmax,
    /// `torch.fmin`: the number wins over NaN.
    Fmin,
    /// `torch.eq` (`==`), to bool.
    Eq,
    /// `torch.ne` (`!=`), to bool.
    Ne,
    /// `torch.lt` (`<`), to bool.
    Lt,
    /// `torch.le` (`<=`), to bool.
    Le,
    /// `torch.gt` (`>`), to bool.
    Gt,
    /// `torch.ge` (`>=`), to bool.
    Ge,
    /// `torch.logical_and`, to bool.
    LogicalAnd,
    /// `torch.logical_or`, to bool.
    LogicalOr,
    /// `torch.logical_xor`, to bool.
    LogicalXor,
    /// `torch.bitwise_and` (`&`): integer and bool dtypes.
    BitwiseAnd,
    /// `torch.bitwise_or` (`|`): integer and bool dtypes.
    BitwiseOr,
    /// `torch.bitwise_xor` (`^`): integer and bool dtypes.
    BitwiseXor,
    /// `torch.bitwise_left_shift` (`<<`).
    LeftShift,
    /// `torch.bitwise_right_shift` (`>>`): arithmetic for signed dtypes.
    RightShift,
}

use BinaryOp::*;

impl BinaryOp {
    /// The op PyTorch names `name` (`"add"`, `"floor_divide"`, `"bitwise_left_shift"`, ...), or
    /// `None` for an unknown name.
    pub fn from_name(name: &str) -> Option<BinaryOp> {
        Some(match name {
            "add" => Add,
            "sub" => Sub,
            "mul" => Mul,
            "div" => Div,
            "floor_divide" => FloorDiv,
            "div_trunc" => TruncDiv,
            "remainder" => Remainder,
            "fmod" => Fmod,
            "pow" => Pow,
            "atan2" => Atan2,
            "hypot" => Hypot,
            "maximum" => Maximum,
            "minimum" => Minimum,
            "fmax" => Fmax,
            "fmin" => Fmin,
            "eq" => Eq,
            "ne" => Ne,
            "lt" => Lt,
            "le" => Le,
            "gt" => Gt,
            "ge" => Ge,
            "logical_and" => LogicalAnd,
            "logical_or" => LogicalOr,
            "logical_xor" => LogicalXor,
            "bitwise_and" => BitwiseAnd,
            "bitwise_or" => BitwiseOr,
            "bitwise_xor" => BitwiseXor,
            "bitwise_left_shift" => LeftShift,
            "bitwise_right_shift" => RightShift,
            _ => return None,
        })
    }

    fn is_comparison(self) -> bool {
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor)
    }

    /// (dtype the kernel computes in, dtype of the result).
    pub fn dtypes(self, common: DType) -> Result<(DType, DType)> {
        if common.is_complex() {
            return super::complex_binary::dtypes(self, common);
        }
        let cat = common.category();
        Ok(match self {
            Hypot if cat != Category::Float => bail!(NotImplemented, "\"hypot_cpu\" not implemented for '{}'", common.legacy_name()),
            Div | Atan2 | Hypot => (common.to_float(), common.to_float()),
            _ if self.is_comparison() => (common, DType::Bool),
            Sub if cat == Category::Bool => bail!(Type, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead."),
            BitwiseAnd | BitwiseOr | BitwiseXor | LeftShift | RightShift if cat == Category::Float => {
                bail!(Type, "{self:?} is only supported for integer and bool tensors, got {common}")
            }
            FloorDiv | TruncDiv | Remainder | Fmod | Pow if cat == Category::Bool => (DType::I64, DType::I64),
            _ => (common, common),
        })
    }
}

/// `op(a, b)` into a fresh tensor (recorded for autograd, see `grad::binary`).
pub fn binary(op: BinaryOp, a: Operand, b: Operand) -> Result<Tensor> {
    if !(a.needs_grad() || b.needs_grad()) {
        return binary_kernel(op, a, b);
    }
    let y = {
        let _untracked = autograd::untracked();
        binary_kernel(op, a, b)?
    };
    let (compute, _) = op.dtypes(result_type(&[a, b]))?;
    super::grad::binary::record_binary(op, &a.to_tensor(compute), &b.to_tensor(compute), &y)?;
    Ok(y)
}

/// The first operand with the result's shape: the result takes its memory order (PyTorch's
/// TensorIterator lets the first operand decide, so channels-last inputs give channels-last results).
fn same_shape_operand<'a>(operands: &[Operand<'a>], shape: &[usize]) -> Option<&'a Tensor> {
    operands.iter().find_map(|o| match *o {
        Operand::Tensor(t) if t.shape() == shape => Some(t),
        _ => None,
    })
}

fn binary_kernel(op: BinaryOp, a: Operand, b: Operand) -> Result<Tensor> {
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let (compute, out_dtype) = op.dtypes(result_type(&[a, b]))?;
    let device = operands_device(&[a, b])?;
    let out = Tensor::uninit_like(&shape, out_dtype, device, same_shape_operand(&[a, b], &shape))?;
    run(op, a, b, compute, &out)?;
    Ok(out)
}

/// `op(a, b)` written into `out` (for `out=` and in-place ops, where `out` is `a`).
pub fn binary_out(op: BinaryOp, a: Operand, b: Operand, out: &Tensor) -> Result<()> {
    // Checked before any path runs: one that computes out of place would cast silently.
    super::check_cast(op.dtypes(result_type(&[a, b]))?.1, out)?;
    let operands: Vec<&Tensor> = [a, b].iter().filter_map(|o| match o {
        Operand::Tensor(t) => Some(*t),
        Operand::Scalar(_) => None,
    }).collect();
    if operands.iter().any(|t| out.is_alias_of(t)) {
        return autograd::inplace::in_place(out, &operands, || binary_out_kernel(op, a, b, out), || binary(op, a, b));
    }
    autograd::inplace::out_write(out, &operands, || binary_out_kernel(op, a, b, out), || binary(op, a, b))
}

fn binary_out_kernel(op: BinaryOp, a: Operand, b: Operand, out: &Tensor) -> Result<()> {
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let (compute, out_dtype) = op.dtypes(result_type(&[a, b]))?;
    super::check_out(out, &shape, out_dtype)?;
    for o in [a, b] {
        if let Operand::Tensor(t) = o {
            crate::backend::check_on(out.device(), t)?;
        }
    }
    if out_dtype != out.dtype() {
        return out.copy_(&binary_kernel(op, a, b)?);
    }
    run(op, a, b, compute, out)?;
    out.bump_version();
    Ok(())
}

/// Casts and broadcasts the operands to `compute` and `out`'s shape, then runs the op on
/// `out`'s backend.
fn run(op: BinaryOp, a: Operand, b: Operand, compute: DType, out: &Tensor) -> Result<()> {
    let device = out.device();
    let (x, y) = (a.ready(compute, out.shape(), device)?, b.ready(compute, out.shape(), device)?);
    crate::backend::of(device)?.binary(op, x.operand(), y.operand(), compute, out)
}

/// `where(cond, a, b)`: picks from `a` where `cond` is true.
pub fn where_(cond: &Tensor, a: Operand, b: Operand) -> Result<Tensor> {
    if !(a.needs_grad() || b.needs_grad()) {
        return where_kernel(cond, a, b);
    }
    let y = {
        let _untracked = autograd::untracked();
        where_kernel(cond, a, b)?
    };
    let dtype = result_type(&[a, b]);
    super::grad::binary::record_where(cond, &a.to_tensor(dtype), &b.to_tensor(dtype), &y)?;
    Ok(y)
}

fn where_kernel(cond: &Tensor, a: Operand, b: Operand) -> Result<Tensor> {
    if cond.dtype() != DType::Bool && cond.dtype() != DType::U8 {
        bail!(Type, "where expected condition to be a boolean tensor, but got a tensor with dtype {}", cond.dtype());
    }
    let shape = broadcast_shapes(&broadcast_shapes(cond.shape(), a.shape())?, b.shape())?;
    let dtype = result_type(&[a, b]);
    let device = operands_device(&[Operand::Tensor(cond), a, b])?;
    let c = Operand::Tensor(cond).materialize(DType::Bool, &shape, device)?;
    let (x, y) = (a.materialize(dtype, &shape, device)?, b.materialize(dtype, &shape, device)?);
    let out = Tensor::uninit_like(&shape, dtype, device, same_shape_operand(&[a, b], &shape))?;
    crate::backend::of(device)?.where_(&c, &x, &y, &out)?;
    Ok(out)
}

/// `lerp(start, end, weight) = start + weight * (end - start)` (floats only, as in PyTorch).
pub fn lerp(start: &Tensor, end: &Tensor, weight: Operand) -> Result<Tensor> {
    let w = weight.to_tensor(start.dtype());
    autograd::track(&[start, end, &w], || lerp_kernel(start, end, weight), |y| super::grad::binary::record_lerp(start, end, &w, y))
}

fn lerp_kernel(start: &Tensor, end: &Tensor, weight: Operand) -> Result<Tensor> {
    if !start.dtype().is_float() || start.dtype() != end.dtype() {
        bail!(Type, "lerp: expected start and end of one floating dtype, got {} and {}", start.dtype(), end.dtype());
    }
    let shape = broadcast_shapes(&broadcast_shapes(start.shape(), end.shape())?, weight.shape())?;
    let dtype = start.dtype();
    let (s, e, w) = (start.broadcast_to(&shape)?, end.broadcast_to(&shape)?, weight.materialize(dtype, &shape, start.device())?);
    let out = Tensor::uninit_like(&shape, dtype, start.device(), [start, end].into_iter().find(|t| t.shape() == shape.as_slice()))?;
    crate::backend::serving(&s, [&e, &w])?.lerp(&s, &e, &w, &out)?;
    Ok(out)
}
