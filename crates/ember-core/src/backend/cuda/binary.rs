//! Two-input elementwise ops (`kernels/binary.cu`; `ops::binary` holds their semantics). A
//! Python number stays a kernel argument; integer division checks its divisor for zeros first.
use super::device::{cuda_error, dtype_name, Cuda, DTYPES};
use super::strided::Strided;
use super::Family;
use crate::backend::unsupported;
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::ops::binary::BinaryOp::{self, *};
use crate::ops::binary::Operand;
use crate::tensor::Tensor;
use cudarc::driver::{sys, DevicePtr, PushKernelArg};

pub const FAMILY: Family = Family { name: "binary", source: include_str!("kernels/binary.cu"), kernel_names };

/// binary.cu's name for `op` computing in `compute`, if it has that kernel.
fn op_name(op: BinaryOp, compute: DType) -> Option<&'static str> {
    let float = compute.is_float();
    let boolean = compute == DType::Bool;
    Some(match op {
        Add => "add",
        Mul => "mul",
        Maximum => "maximum",
        Minimum => "minimum",
        // Without NaN, fmax/fmin are maximum/minimum.
        Fmax if float => "fmax",
        Fmin if float => "fmin",
        Fmax => "maximum",
        Fmin => "minimum",
        Eq => "eq",
        Ne => "ne",
        Lt => "lt",
        Le => "le",
        Gt => "gt",
        Ge => "ge",
        LogicalAnd => "logical_and",
        LogicalOr => "logical_or",
        LogicalXor => "logical_xor",
        BitwiseAnd if !float => "bitwise_and",
        BitwiseOr if !float => "bitwise_or",
        BitwiseXor if !float => "bitwise_xor",
        _ if boolean => return None,
        Sub => "sub",
        FloorDiv => "floor_div",
        TruncDiv => "trunc_div",
        Remainder => "remainder",
        Fmod => "fmod",
        Pow => "pow",
        Div | Atan2 | Hypot if float => match op {
            Div => "div",
            Atan2 => "atan2",
            _ => "hypot",
        },
        LeftShift if !float => "left_shift",
        RightShift if !float => "right_shift",
        _ => return None,
    })
}

/// Whether `op`'s result is bool whatever it computes in.
fn is_test(op: BinaryOp) -> bool {
    matches!(op, Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor)
}

/// Integer ops that divide by their second operand.
fn divides(op: BinaryOp) -> bool {
    matches!(op, FloorDiv | TruncDiv | Remainder | Fmod)
}

const OPS: [BinaryOp; 29] = [
    Add, Sub, Mul, Div, FloorDiv, TruncDiv, Remainder, Fmod, Pow, Atan2, Hypot, Maximum, Minimum, Fmax, Fmin, Eq, Ne, Lt,
    Le, Gt, Ge, LogicalAnd, LogicalOr, LogicalXor, BitwiseAnd, BitwiseOr, BitwiseXor, LeftShift, RightShift,
];

fn kernel_names() -> Vec<String> {
    let mut names: Vec<String> = OPS
        .iter()
        .flat_map(|&op| DTYPES.iter().filter_map(move |&d| Some(format!("binary_{}_{}", op_name(op, d)?, dtype_name(d)?))))
        .collect();
    let ints = DTYPES.iter().filter(|d| !d.is_float() && **d != DType::Bool);
    names.extend(ints.map(|&d| format!("any_zero_{}", dtype_name(d).unwrap())));
    names.sort();
    names.dedup();
    names
}

/// An operand as the kernels take it: a pointer and layout (null for a number) and the number
/// as a float and as an integer, already converted to the compute dtype as the CPU converts it.
struct Arg {
    ptr: sys::CUdeviceptr,
    layout: Strided,
    float: f64,
    int: i64,
}

impl Arg {
    fn new(cuda: &Cuda, o: Operand, compute: DType, out: &Tensor) -> Result<Arg> {
        Ok(match o {
            Operand::Tensor(t) => Arg { ptr: cuda.base(t)?, layout: Strided::of(t)?, float: 0.0, int: 0 },
            Operand::Scalar(s) => {
                let v = s.to_tensor(compute);
                Arg {
                    ptr: 0,
                    layout: Strided::of(out)?,
                    float: v.to_dtype(DType::F64)?.to_vec::<f64>()?[0],
                    int: if compute.is_float() { 0 } else { v.to_dtype(DType::I64)?.to_vec::<i64>()?[0] },
                }
            }
        })
    }
}

pub fn run(cuda: &Cuda, op: BinaryOp, a: Operand, b: Operand, compute: DType, out: &Tensor) -> Result<()> {
    let found = dtype_name(compute).and_then(|d| Some((op_name(op, compute)?, d)));
    let Some((name, dtype)) = found else {
        return unsupported(&format!("{op:?}"), "CUDA", compute);
    };
    let out_dtype = if is_test(op) { DType::Bool } else { compute };
    if out.dtype() != out_dtype {
        return unsupported(&format!("{op:?}"), "CUDA", out.dtype());
    }
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let (x, y) = (Arg::new(cuda, a, compute, out)?, Arg::new(cuda, b, compute, out)?);
    if divides(op) && !compute.is_float() {
        refuse_zero_divisor(cuda, b, &y, dtype)?;
    }
    let (po, lo, count) = (cuda.base(out)?, Strided::of(out)?, n as i64);
    let f = cuda.function(&FAMILY, &format!("binary_{name}_{dtype}"))?;
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&x.ptr).arg(&x.layout).arg(&x.float).arg(&x.int);
    launch.arg(&y.ptr).arg(&y.layout).arg(&y.float).arg(&y.int);
    launch.arg(&po).arg(&lo).arg(&count);
    unsafe { launch.launch(cuda.config(n)) }.map_err(|e| cuda_error("cuLaunchKernel(binary)", e))?;
    Ok(())
}

/// PyTorch's ZeroDivisionError for an integer divisor holding a zero, before anything is
/// written. A tensor divisor costs a scan and a wait for its one-word answer.
fn refuse_zero_divisor(cuda: &Cuda, divisor: Operand, arg: &Arg, dtype: &str) -> Result<()> {
    let has_zero = match divisor {
        // The number as converted to the dtype (256 is 0 in uint8, as on the CPU).
        Operand::Scalar(_) => arg.int == 0,
        Operand::Tensor(t) => {
            let found = cuda.stream().alloc_zeros::<i32>(1).map_err(|e| cuda_error("cuMemAllocAsync", e))?;
            let flag = found.device_ptr(cuda.stream()).0;
            let f = cuda.function(&FAMILY, &format!("any_zero_{dtype}"))?;
            let (p, l, count) = (cuda.base(t)?, Strided::of(t)?, t.numel() as i64);
            let mut launch = cuda.stream().launch_builder(&f);
            launch.arg(&p).arg(&l).arg(&count).arg(&flag);
            unsafe { launch.launch(cuda.config(t.numel())) }.map_err(|e| cuda_error("cuLaunchKernel(any_zero)", e))?;
            let answer = cuda.stream().clone_dtoh(&found).map_err(|e| cuda_error("cuMemcpyDtoHAsync", e))?;
            cuda.stream().synchronize().map_err(|e| cuda_error("cuStreamSynchronize", e))?;
            answer[0] != 0
        }
    };
    if has_zero {
        bail!(Runtime, "ZeroDivisionError: integer division or modulo by zero");
    }
    Ok(())
}
