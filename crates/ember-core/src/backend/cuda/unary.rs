//! One-input elementwise ops (`kernels/unary.cu`; `ops::unary` holds their semantics).
use super::device::{cuda_error, dtype_name, Cuda, DTYPES};
use super::strided::Strided;
use super::Family;
use crate::backend::unsupported;
use crate::dtype::DType;
use crate::error::Result;
use crate::ops::unary::UnaryOp::{self, *};
use crate::tensor::Tensor;
use cudarc::driver::PushKernelArg;

pub const FAMILY: Family = Family { name: "unary", source: include_str!("kernels/unary.cu"), kernel_names };

/// The three kernel shapes of unary.cu, with the op's name there and its parameters.
#[derive(Debug, PartialEq)]
enum Kernel {
    /// Float dtypes, computing in float (double for float64): `out` of `x`'s dtype.
    Float(&'static str, [f64; 3]),
    /// Integer dtypes, computing in i64: `out` of `x`'s dtype.
    Int(&'static str, [i64; 2]),
    /// Any dtype to bool (`is_<name>`).
    Predicate(&'static str),
}

/// The kernel for `op` on `dtype`, if unary.cu has it.
fn kernel(op: UnaryOp, dtype: DType) -> Option<Kernel> {
    use Kernel::{Float, Int, Predicate};
    let float = dtype.is_float();
    let int = !float && dtype != DType::Bool;
    let f = |name| Float(name, [0.0; 3]);
    let i = |name| Int(name, [0; 2]);
    Some(match op {
        IsNan => Predicate("nan"),
        IsInf => Predicate("inf"),
        IsPosInf => Predicate("posinf"),
        IsNegInf => Predicate("neginf"),
        IsFinite => Predicate("finite"),
        Signbit => Predicate("signbit"),
        LogicalNot => Predicate("zero"),
        // `~` of a bool is `not`.
        BitwiseNot if dtype == DType::Bool => Predicate("zero"),
        BitwiseNot if int => Int("bitwise_not", [0; 2]),
        Neg if float => f("neg"),
        Abs if float => f("abs"),
        Sign | Sgn if float => f("sign"),
        Square if float => f("square"),
        Floor if float => f("floor"),
        Ceil if float => f("ceil"),
        Round if float => f("round"),
        Trunc if float => f("trunc"),
        Relu if float => f("relu"),
        Conj if float => f("identity"),
        Angle if float => f("angle"),
        Hardtanh(lo, hi) if float => Float("hardtanh", [lo, hi, 0.0]),
        Clamp(lo, hi) if float => Float("clamp", [lo.unwrap_or(f64::NEG_INFINITY), hi.unwrap_or(f64::INFINITY), 0.0]),
        NanToNum(nan, pos, neg) if float => Float("nan_to_num", finite_replacements(dtype, [nan, pos, neg])),
        Exp => f("exp"),
        Exp2 => f("exp2"),
        Expm1 => f("expm1"),
        Log => f("log"),
        Log2 => f("log2"),
        Log10 => f("log10"),
        Log1p => f("log1p"),
        Sqrt => f("sqrt"),
        Rsqrt => f("rsqrt"),
        Reciprocal => f("reciprocal"),
        Sin => f("sin"),
        Cos => f("cos"),
        Tan => f("tan"),
        Asin => f("asin"),
        Acos => f("acos"),
        Atan => f("atan"),
        Sinh => f("sinh"),
        Cosh => f("cosh"),
        Tanh => f("tanh"),
        Sigmoid => f("sigmoid"),
        Logit(eps) => Float("logit", [eps.unwrap_or(0.0), eps.is_some() as u8 as f64, 0.0]),
        Erf => f("erf"),
        Erfc => f("erfc"),
        Frac => f("frac"),
        Gelu => f("gelu"),
        GeluTanh => f("gelu_tanh"),
        Silu => f("silu"),
        Mish => f("mish"),
        Selu => f("selu"),
        Elu(alpha) => Float("elu", [alpha, 0.0, 0.0]),
        LeakyRelu(slope) => Float("leaky_relu", [slope, 0.0, 0.0]),
        Softplus(beta, threshold) => Float("softplus", [beta, threshold, 0.0]),
        Hardswish => f("hardswish"),
        Hardsigmoid => f("hardsigmoid"),
        Neg if int => i("neg"),
        Abs if int => i("abs"),
        Sign | Sgn if int => i("sign"),
        Square if int => i("square"),
        Relu if int => i("relu"),
        Floor | Ceil | Round | Trunc | Conj | NanToNum(..) if int => i("identity"),
        Hardtanh(lo, hi) if int => Int("clamp", [lo as i64, hi as i64]),
        Clamp(lo, hi) if int => Int("clamp", [lo.map_or(i64::MIN, |v| v as i64), hi.map_or(i64::MAX, |v| v as i64)]),
        _ => return None,
    })
    // Float-only ops on an integer or bool dtype have no kernel (the ops layer casts first).
    .filter(|k| match k {
        Float(..) => float,
        Int(..) => int,
        Predicate(_) => true,
    })
}

/// nan_to_num's replacements clamped to the dtype's finite range, as the CPU kernel does.
fn finite_replacements(dtype: DType, values: [f64; 3]) -> [f64; 3] {
    let max = match dtype {
        DType::F64 => return values,
        DType::F16 => 65504.0,
        DType::BF16 => 3.389_531_4e38,
        _ => f32::MAX as f64,
    };
    values.map(|v| v.clamp(-max, max))
}

fn kernel_name(k: &Kernel, dtype: &str) -> String {
    match k {
        Kernel::Float(name, _) | Kernel::Int(name, _) => format!("unary_{name}_{dtype}"),
        Kernel::Predicate(name) => format!("unary_is_{name}_{dtype}"),
    }
}

/// Every op with sample parameters: the kernel names do not depend on the values.
const OPS: [UnaryOp; 59] = [
    Neg, Abs, Sign, Square, Floor, Ceil, Round, Trunc, Relu, Hardtanh(-1.0, 1.0), Clamp(Some(0.0), None), Exp, Exp2, Expm1,
    Log, Log2, Log10, Log1p, Sqrt, Rsqrt, Reciprocal, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh, Sigmoid,
    Logit(None), Erf, Erfc, Frac, Gelu, GeluTanh, Silu, Mish, Selu, Elu(1.0), LeakyRelu(0.01), Softplus(1.0, 20.0),
    Hardswish, Hardsigmoid, NanToNum(0.0, 1.0, -1.0), LogicalNot, BitwiseNot, IsNan, IsInf, IsPosInf, IsNegInf,
    IsFinite, Signbit, Sgn, Conj, Angle, Logit(Some(1e-6)), Clamp(None, Some(1.0)),
];

fn kernel_names() -> Vec<String> {
    let mut names: Vec<String> = OPS
        .iter()
        .flat_map(|&op| DTYPES.iter().filter_map(move |&d| Some(kernel_name(&kernel(op, d)?, dtype_name(d)?))))
        .collect();
    names.sort();
    names.dedup();
    names
}

pub fn run(cuda: &Cuda, op: UnaryOp, x: &Tensor, out: &Tensor) -> Result<()> {
    let dtype = x.dtype();
    let found = dtype_name(dtype).and_then(|name| Some((kernel(op, dtype)?, name)));
    let Some((k, name)) = found else {
        return unsupported(&format!("{op:?}"), "CUDA", dtype);
    };
    let out_dtype = if matches!(k, Kernel::Predicate(_)) { DType::Bool } else { dtype };
    if out.dtype() != out_dtype {
        return unsupported(&format!("{op:?}"), "CUDA", out.dtype());
    }
    let n = out.numel();
    if n == 0 {
        return Ok(());
    }
    let f = cuda.function(&FAMILY, &kernel_name(&k, name))?;
    let (px, po) = (cuda.base(x)?, cuda.base(out)?);
    let (lx, lo, count) = (Strided::of(x)?, Strided::of(out)?, n as i64);
    let mut launch = cuda.stream().launch_builder(&f);
    launch.arg(&px).arg(&lx).arg(&po).arg(&lo).arg(&count);
    match &k {
        Kernel::Float(_, p) => launch.arg(&p[0]).arg(&p[1]).arg(&p[2]),
        Kernel::Int(_, p) => launch.arg(&p[0]).arg(&p[1]),
        Kernel::Predicate(_) => &mut launch,
    };
    unsafe { launch.launch(cuda.config(n)) }.map_err(|e| cuda_error("cuLaunchKernel(unary)", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_map_to_the_kernel_of_their_dtype() {
        assert_eq!(kernel(Exp, DType::F16), Some(Kernel::Float("exp", [0.0; 3])));
        assert_eq!(kernel(Exp, DType::I32), None);
        assert_eq!(kernel(Clamp(None, Some(3.0)), DType::I64), Some(Kernel::Int("clamp", [i64::MIN, 3])));
        assert_eq!(kernel(BitwiseNot, DType::Bool), Some(Kernel::Predicate("zero")));
        assert_eq!(kernel(NanToNum(f64::MAX, 1.0, -1.0), DType::F16), Some(Kernel::Float("nan_to_num", [65504.0, 1.0, -1.0])));
    }
}
