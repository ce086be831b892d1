//! The CUDA backend on a GPU, through the ops API: moves between devices, and every op family
//! the backend serves equal to the CPU's on the same inputs. Ignored by default (CI has no
//! GPU); on a machine with one: `VIRTUAL_ENV=<venv with the NVRTC wheel> cargo test -p ember-core
//! --test cuda_device -- --ignored` (core-py/tests/test_cuda.py checks the same from Python).
#![cfg(feature = "cuda")]
use ember_core::backend::cuda;
use ember_core::ops::binary::{binary, where_, BinaryOp, Operand, Scalar};
use ember_core::ops::creation::full_on;
use ember_core::ops::unary::{unary, UnaryOp};
use ember_core::{DType, Device, Tensor};
use std::path::PathBuf;

const GPU: Device = Device::Cuda(0);
const FLOATS: [DType; 4] = [DType::F32, DType::F64, DType::F16, DType::BF16];
const INTS: [DType; 5] = [DType::U8, DType::I8, DType::I16, DType::I32, DType::I64];

fn gpu() {
    let venv = std::env::var_os("VIRTUAL_ENV").map(PathBuf::from).unwrap_or_default();
    let sites: Vec<PathBuf> = std::fs::read_dir(venv.join("lib"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path().join("site-packages"))).collect())
        .unwrap_or_default();
    cuda::use_wheels(&sites);
    assert!(cuda::device_count() > 0, "no CUDA device: {:?}", cuda::backend(0).err());
}

/// Signs, zeros, fractions, and for floats inf and NaN.
fn values(dtype: DType, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|i| match i {
            1 if dtype.is_float() => f64::INFINITY,
            2 if dtype.is_float() => f64::NEG_INFINITY,
            3 if dtype.is_float() => f64::NAN,
            _ if dtype.is_float() => ((i * 7919) % 101) as f64 / 8.0 - 6.0,
            _ if dtype == DType::U8 => ((i * 37) % 200) as f64,
            _ => ((i * 37) % 101) as f64 - 50.0,
        })
        .collect();
    Tensor::from_vec(v, shape).unwrap().to_dtype(dtype).unwrap()
}

/// `got` (on the GPU) equals `want` (on the CPU) within `dtype`'s rounding, NaN where NaN.
fn same(got: &Tensor, want: &Tensor, what: &str) {
    assert_eq!(got.device(), GPU, "{what}");
    assert_eq!((got.shape(), got.dtype()), (want.shape(), want.dtype()), "{what}");
    let got = got.to_device(Device::Cpu).unwrap().to_dtype(DType::F64).unwrap().contiguous().unwrap().to_vec::<f64>().unwrap();
    let want = want.to_dtype(DType::F64).unwrap().contiguous().unwrap().to_vec::<f64>().unwrap();
    // One unit in the last place of the half types (the float result rounded either way),
    // a few for float32's and float64's math functions.
    let tol = [("bf16", 1.6e-2), ("f16", 2e-3), ("f32", 2e-6)].iter().find(|(d, _)| what.ends_with(d)).map_or(1e-12, |t| t.1);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= tol * w.abs().max(1.0);
        assert!(ok, "{what}: element {i} is {g} on the GPU, {w} on the CPU");
    }
}

fn name(dtype: DType) -> String {
    format!("{dtype:?}").to_lowercase()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_dtype_goes_to_the_gpu_and_back_unchanged() {
    gpu();
    for dtype in FLOATS.into_iter().chain(INTS).chain([DType::Bool]) {
        let x = values(dtype, &[3, 5]);
        let g = x.to_device(GPU).unwrap();
        assert_eq!((g.device(), g.dtype()), (GPU, dtype));
        same(&g, &x, &format!("round trip {}", name(dtype)));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn strided_copies_casts_and_fills_match_the_cpu() {
    gpu();
    let x = values(DType::F32, &[4, 6]);
    let g = x.to_device(GPU).unwrap();
    same(&g.t().unwrap().contiguous().unwrap(), &x.t().unwrap().contiguous().unwrap(), "transpose f32");
    for to in FLOATS.into_iter().chain([DType::Bool]) {
        same(&g.t().unwrap().to_dtype(to).unwrap(), &x.t().unwrap().to_dtype(to).unwrap(), &format!("cast to {}", name(to)));
    }
    // In-range values only: a float beyond int32 (or NaN) converts as each device's hardware
    // does, saturating on CUDA and to INT_MIN on x86, as PyTorch's CUDA and CPU results differ.
    let finite = Tensor::from_vec(vec![-3.7f32, 0.5, 2.9, -2e9], &[2, 2]).unwrap();
    same(&finite.to_device(GPU).unwrap().to_dtype(DType::I32).unwrap(), &finite.to_dtype(DType::I32).unwrap(), "cast to i32");
    for dtype in FLOATS.into_iter().chain(INTS) {
        let v = Scalar::Int(3);
        same(&full_on(&[3, 4], v, dtype, GPU).unwrap(), &full_on(&[3, 4], v, dtype, Device::Cpu).unwrap(), &format!("fill {}", name(dtype)));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn unary_ops_match_the_cpu() {
    gpu();
    use UnaryOp::*;
    let ops = [
        Neg, Abs, Sign, Square, Floor, Ceil, Round, Trunc, Relu, Exp, Exp2, Expm1, Log, Log2, Log10, Log1p, Sqrt, Rsqrt,
        Reciprocal, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh, Sigmoid, Erf, Erfc, Frac, Gelu, GeluTanh, Silu,
        Mish, Selu, Hardswish, Hardsigmoid, Elu(0.5), LeakyRelu(0.2), Softplus(2.0, 10.0), Hardtanh(-2.0, 2.0),
        Clamp(Some(-1.0), None), NanToNum(1.0, 100.0, -100.0), Logit(Some(0.01)), IsNan, IsInf, IsFinite, Signbit, LogicalNot,
    ];
    for dtype in FLOATS {
        let x = values(dtype, &[5, 7]);
        let g = x.to_device(GPU).unwrap();
        for op in ops {
            same(&unary(op, &g).unwrap(), &unary(op, &x).unwrap(), &format!("{op:?} {}", name(dtype)));
        }
    }
    for dtype in INTS {
        let x = values(dtype, &[5, 7]);
        let g = x.to_device(GPU).unwrap();
        for op in [Abs, Sign, Square, Relu, BitwiseNot, LogicalNot, Clamp(Some(-5.0), Some(20.0)), IsNan, Signbit] {
            same(&unary(op, &g).unwrap(), &unary(op, &x).unwrap(), &format!("{op:?} {}", name(dtype)));
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn binary_ops_match_the_cpu_with_numbers_and_broadcasting() {
    gpu();
    use BinaryOp::*;
    let float_ops = [
        Add, Sub, Mul, Div, FloorDiv, TruncDiv, Remainder, Fmod, Pow, Atan2, Hypot, Maximum, Minimum, Fmax, Fmin, Eq, Ne, Lt,
        Le, Gt, Ge, LogicalAnd, LogicalOr, LogicalXor,
    ];
    for dtype in FLOATS {
        let (a, b) = (values(dtype, &[5, 7]), values(dtype, &[7]));
        let (ga, gb) = (a.to_device(GPU).unwrap(), b.to_device(GPU).unwrap());
        for op in float_ops {
            let what = format!("{op:?} {}", name(dtype));
            same(&binary(op, Operand::Tensor(&ga), Operand::Tensor(&gb)).unwrap(), &binary(op, Operand::Tensor(&a), Operand::Tensor(&b)).unwrap(), &what);
            let s = Operand::Scalar(Scalar::Float(1.5));
            same(&binary(op, Operand::Tensor(&ga), s).unwrap(), &binary(op, Operand::Tensor(&a), s).unwrap(), &what);
        }
    }
    let int_ops = [Add, Sub, Mul, FloorDiv, TruncDiv, Remainder, Fmod, Maximum, Minimum, Eq, Lt, BitwiseAnd, BitwiseXor, LeftShift, RightShift];
    for dtype in INTS {
        let a = values(dtype, &[5, 7]);
        let b = binary(Maximum, Operand::Tensor(&values(dtype, &[5, 7])), Operand::Scalar(Scalar::Int(1))).unwrap();
        let (ga, gb) = (a.to_device(GPU).unwrap(), b.to_device(GPU).unwrap());
        for op in int_ops {
            let what = format!("{op:?} {}", name(dtype));
            same(&binary(op, Operand::Tensor(&ga), Operand::Tensor(&gb)).unwrap(), &binary(op, Operand::Tensor(&a), Operand::Tensor(&b)).unwrap(), &what);
            let s = Operand::Scalar(Scalar::Int(3));
            same(&binary(op, Operand::Tensor(&ga), s).unwrap(), &binary(op, Operand::Tensor(&a), s).unwrap(), &what);
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn where_matches_the_cpu() {
    gpu();
    for dtype in FLOATS.into_iter().chain(INTS) {
        let (a, b) = (values(dtype, &[5, 7]), values(dtype, &[7]));
        let cond = binary(BinaryOp::Gt, Operand::Tensor(&values(DType::I32, &[5, 1])), Operand::Scalar(Scalar::Int(0))).unwrap();
        let on = |t: &Tensor| t.to_device(GPU).unwrap();
        let got = where_(&on(&cond), Operand::Tensor(&on(&a)), Operand::Tensor(&on(&b))).unwrap();
        same(&got, &where_(&cond, Operand::Tensor(&a), Operand::Tensor(&b)).unwrap(), &format!("where {}", name(dtype)));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_errors_are_runtime_errors() {
    gpu();
    let a = Tensor::from_vec(vec![4i64, 5, 6], &[3]).unwrap().to_device(GPU).unwrap();
    let zero = Tensor::from_vec(vec![1i64, 0, 2], &[3]).unwrap().to_device(GPU).unwrap();
    let err = binary(BinaryOp::FloorDiv, Operand::Tensor(&a), Operand::Tensor(&zero)).unwrap_err();
    assert!(err.message.contains("ZeroDivisionError"), "{}", err.message);
    let err = binary(BinaryOp::Remainder, Operand::Tensor(&a), Operand::Scalar(Scalar::Int(0))).unwrap_err();
    assert!(err.message.contains("ZeroDivisionError"), "{}", err.message);
    let cpu = Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap();
    let err = binary(BinaryOp::Add, Operand::Tensor(&a), Operand::Tensor(&cpu)).unwrap_err();
    assert!(err.message.starts_with("Expected all tensors to be on the same device"), "{}", err.message);
    let past = Device::Cuda(cuda::device_count());
    let err = Tensor::zeros_on(&[2], DType::F32, past).unwrap_err();
    assert!(err.message.contains("invalid device ordinal"), "{}", err.message);
}
