//! The CPU backend: host memory (`storage::CpuStorage`) and the kernels that read it through
//! raw pointers, vectorised at runtime for the CPU at hand.
pub(crate) mod binary;
pub(crate) mod complex;
pub(crate) mod conv;
pub(crate) mod embedding;
pub(crate) mod fft;
pub mod half;
pub(crate) mod index;
pub(crate) mod linalg;
pub mod map;
pub(crate) mod math;
pub(crate) mod nhwc;
pub(crate) mod norm;
pub(crate) mod pad;
pub(crate) mod pool;
pub(crate) mod sum_simd;
pub(crate) mod matmul;
pub(crate) mod reduce;
pub(crate) mod resize;
pub(crate) mod scan;
pub(crate) mod sort;
pub(crate) mod unary;

use super::Backend;
use crate::bail;
use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::ops::binary::{BinaryOp, Operand, Scalar};
use crate::ops::index::{IndexShape, Reduce};
use crate::ops::conv::Geom;
use crate::ops::embedding::BagMode;
use crate::ops::linalg::Info;
use crate::ops::pool::{Axis, Divisor};
use crate::ops::resize::Taps;
use crate::backend::cpu::map::{for_each_indexed, ternary_into, unary_into, Ptr};
use crate::ops::random::Distribution;
use crate::ops::reduce::ReduceOp;
use crate::ops::scan::ScanOp;
use crate::ops::sort::{Interpolation, Statistic};
use crate::ops::unary::UnaryOp;
use crate::parallel::{for_range, GRAIN};
use crate::storage::{CpuStorage, Storage};
use crate::tensor::{cast, Tensor};
use crate::{with_complex, with_dtype};

/// The CPU backend: every op family's kernels over `CpuStorage`, run on the crate's thread
/// pool ([`crate::parallel`]).
pub struct Cpu;

impl Backend for Cpu {
    fn name(&self) -> &'static str {
        "CPU"
    }

    fn alloc(&self, _: Device, bytes: usize, zeroed: bool) -> Result<Storage> {
        Ok(Storage::Cpu(if zeroed { CpuStorage::zeroed(bytes)? } else { CpuStorage::uninit(bytes)? }))
    }

    fn upload(&self, host: &Tensor, dst: &Tensor) -> Result<()> {
        self.copy(host, dst)
    }

    fn download(&self, src: &Tensor, host: &Tensor) -> Result<()> {
        self.copy(src, host)
    }

    fn copy(&self, src: &Tensor, dst: &Tensor) -> Result<()> {
        if crate::backend::cpu::half::map::convert_into(src, dst) {
            return Ok(());
        }
        match (src.dtype().is_complex(), dst.dtype().is_complex()) {
            (false, false) => with_dtype!(dst.dtype(), O, with_dtype!(src.dtype(), I, unary_into::<I, O>(src, dst, cast::<I, O>))),
            (true, true) => with_complex!(dst.dtype(), O, with_complex!(src.dtype(), I, unary_into::<I, O>(src, dst, cast::<I, O>))),
            (false, true) => with_complex!(dst.dtype(), O, with_dtype!(src.dtype(), I, unary_into::<I, O>(src, dst, cast::<I, O>))),
            (true, false) => with_dtype!(dst.dtype(), O, with_complex!(src.dtype(), I, unary_into::<I, O>(src, dst, cast::<I, O>))),
        }
        Ok(())
    }

    fn fill(&self, dst: &Tensor, value: Scalar) -> Result<()> {
        let v = value.to_tensor(dst.dtype()).broadcast_to(dst.shape())?;
        crate::with_any_dtype!(dst.dtype(), T, unary_into::<T, T>(&v, dst, |x| x));
        Ok(())
    }

    fn unary(&self, op: UnaryOp, x: &Tensor, out: &Tensor) -> Result<()> {
        unary::run(op, x, out);
        Ok(())
    }

    fn binary(&self, op: BinaryOp, a: Operand, b: Operand, compute: DType, out: &Tensor) -> Result<()> {
        // A Python number is a 0-d tensor broadcast with stride 0, which the drivers' scalar
        // fast paths read once.
        let operand = |o: Operand| match o {
            Operand::Tensor(t) => Ok(t.clone()),
            Operand::Scalar(s) => s.to_tensor(compute).broadcast_to(out.shape()),
        };
        let (x, y) = (operand(a)?, operand(b)?);
        if matches!(op, BinaryOp::FloorDiv | BinaryOp::TruncDiv | BinaryOp::Remainder | BinaryOp::Fmod) && !compute.is_float() && has_zero(&y) {
            bail!(Runtime, "ZeroDivisionError: integer division or modulo by zero");
        }
        binary::run(op, &x, &y, out);
        Ok(())
    }

    fn where_(&self, cond: &Tensor, a: &Tensor, b: &Tensor, out: &Tensor) -> Result<()> {
        if out.dtype().is_complex() {
            with_complex!(out.dtype(), T, ternary_into::<bool, T, T, T>(cond, a, b, out, |c, x, y| if c { x } else { y }));
        } else {
            with_dtype!(out.dtype(), T, ternary_into::<bool, T, T, T>(cond, a, b, out, |c, x, y| if c { x } else { y }));
        }
        Ok(())
    }

    fn lerp(&self, start: &Tensor, end: &Tensor, weight: &Tensor, out: &Tensor) -> Result<()> {
        with_dtype!(out.dtype(), T, ternary_into::<T, T, T, T>(start, end, weight, out, |s, e, w| {
            let (s, e, w) = (s.to_f64(), e.to_f64(), w.to_f64());
            T::from_f64(if w.abs() < 0.5 { s + w * (e - s) } else { e - (e - s) * (1.0 - w) })
        }));
        Ok(())
    }

    fn reduce(&self, op: ReduceOp, x: &Tensor, mask: &[bool], out: &Tensor) -> Result<()> {
        reduce::reduce(op, x, mask, out)
    }

    fn arg_reduce(&self, x: &Tensor, dim: usize, max: bool, values: &Tensor, indices: &Tensor) -> Result<()> {
        reduce::arg_reduce(x, dim, max, values, indices)
    }

    fn bmm(&self, a: &Tensor, b: &Tensor, out: &Tensor, accumulate: bool) -> Result<()> {
        matmul::bmm(a, b, out, accumulate)
    }

    fn random(&self, dist: Distribution, key: u64, base: u64, out: &Tensor) -> Result<()> {
        // Float64 and int64 outputs alike are written as the sample's 64 bits.
        let p = Ptr(out.byte_ptr() as *mut u64);
        for_range(out.numel(), GRAIN, |s, e| {
            for i in s..e {
                unsafe { *p.at(i as isize) = dist.sample(key, base, i) };
            }
        });
        Ok(())
    }

    fn index(&self, x: &Tensor, indices: &[(usize, Tensor)], shape: &IndexShape, wrap: bool, out: &Tensor) -> Result<()> {
        index::index(x, indices, shape, wrap, out)
    }

    fn index_put(&self, x: &Tensor, indices: &[(usize, Tensor)], shape: &IndexShape, values: &Tensor, accumulate: bool, wrap: bool) -> Result<()> {
        index::index_put(x, indices, shape, values, accumulate, wrap)
    }

    fn gather(&self, x: &Tensor, dim: usize, index: &Tensor, out: &Tensor) -> Result<()> {
        index::gather(x, dim, index, out)
    }

    fn scatter(&self, x: &Tensor, dim: usize, index: &Tensor, src: &Tensor, op: Reduce, include_self: bool) -> Result<()> {
        index::scatter(x, dim, index, src, op, include_self)
    }

    fn nonzero(&self, x: &Tensor) -> Result<Tensor> {
        index::nonzero(x)
    }

    fn masked_select(&self, x: &Tensor, mask: &Tensor) -> Result<Tensor> {
        index::masked_select(x, mask)
    }

    fn tri(&self, x: &Tensor, diagonal: i64, upper: bool, out: &Tensor) -> Result<()> {
        index::tri(x, diagonal, upper, out)
    }

    fn softmax(&self, x: &Tensor, dim: usize, log: bool, out: &Tensor) -> Result<()> {
        norm::softmax(x, dim, log, out)
    }

    fn layer_norm(&self, x: &Tensor, n: usize, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64, out: &Tensor) -> Result<()> {
        norm::layer_norm(x, n, weight, bias, eps, out)
    }

    fn row_moments(&self, x: &Tensor, rows: usize) -> Result<(Vec<f64>, Vec<f64>)> {
        Ok(norm::row_moments(x, rows))
    }

    fn affine_rows(&self, x: &Tensor, scale: &[f64], shift: &[f64], out: &Tensor) -> Result<()> {
        norm::affine(x, scale, shift, out);
        Ok(())
    }

    fn sort(&self, x: &Tensor, dim: usize, descending: bool, values: &Tensor, indices: &Tensor) -> Result<()> {
        sort::sort(x, dim, descending, values, indices);
        Ok(())
    }

    fn topk(&self, x: &Tensor, k: usize, dim: usize, largest: bool, sorted: bool, values: &Tensor, indices: &Tensor) -> Result<()> {
        sort::topk(x, k, dim, largest, sorted, values, indices);
        Ok(())
    }

    fn select(&self, x: &Tensor, dim: usize, stat: Statistic, values: &Tensor, indices: &Tensor) -> Result<()> {
        sort::select(x, dim, stat, values, indices);
        Ok(())
    }

    fn quantile(&self, x: &Tensor, dim: usize, q: &[f64], interpolation: Interpolation, ignore_nan: bool, out: &Tensor) -> Result<()> {
        sort::quantile(x, dim, q, interpolation, ignore_nan, out);
        Ok(())
    }

    fn unique(&self, x: &Tensor, dim: Option<usize>, consecutive: bool, with_inverse: bool) -> Result<(Tensor, Option<Tensor>, Tensor)> {
        sort::unique(x, dim, consecutive, with_inverse)
    }

    fn searchsorted(&self, seq: &Tensor, x: &Tensor, right: bool, sorter: Option<&Tensor>, out: &Tensor) -> Result<()> {
        sort::searchsorted(seq, x, right, sorter, out)
    }

    fn scan(&self, op: ScanOp, x: &Tensor, dim: usize, out: &Tensor) -> Result<()> {
        scan::scan(op, x, dim, out);
        Ok(())
    }

    fn cum_extreme(&self, x: &Tensor, dim: usize, max: bool, values: &Tensor, indices: &Tensor) -> Result<()> {
        scan::cum_extreme(x, dim, max, values, indices);
        Ok(())
    }

    fn conv(&self, x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: usize, geom: &Geom) -> Result<Tensor> {
        conv::conv(x, weight, bias, groups, geom)
    }

    fn conv_transpose(&self, x: &Tensor, weight: &Tensor, bias: Option<&Tensor>, groups: usize, geom: &Geom) -> Result<Tensor> {
        conv::conv_transpose(x, weight, bias, groups, geom)
    }

    fn conv_weight_grad(&self, x: &Tensor, g: &Tensor, groups: usize, geom: &Geom) -> Result<Tensor> {
        conv::weight_grad::weight_grad(x, g, groups, geom)
    }

    fn fft_c2c(&self, x: &Tensor, dims: &[usize], forward: bool, scale: f64) -> Result<Tensor> {
        fft::c2c(x, dims, forward, scale)
    }

    fn fft_r2c(&self, x: &Tensor, dims: &[usize], onesided: bool, scale: f64) -> Result<Tensor> {
        fft::r2c(x, dims, onesided, scale)
    }

    fn fft_c2r(&self, x: &Tensor, dims: &[usize], last_size: usize, scale: f64) -> Result<Tensor> {
        fft::c2r(x, dims, last_size, scale)
    }

    fn cholesky(&self, a: &Tensor) -> Result<(Tensor, Info)> {
        linalg::decomp::cholesky_kernel(a)
    }

    fn qr(&self, a: &Tensor, mode: &str) -> Result<(Tensor, Tensor)> {
        linalg::decomp::qr_kernel(a, mode)
    }

    fn eigh(&self, a: &Tensor, lower: bool, vectors: bool) -> Result<(Tensor, Option<Tensor>, Info)> {
        linalg::eigen::eigh_kernel(a, lower, vectors)
    }

    fn eig(&self, a: &Tensor, vectors: bool) -> Result<(Tensor, Option<Tensor>, Info)> {
        linalg::eigen::eig_kernel(a, vectors)
    }

    fn svd(&self, a: &Tensor, full: bool, vectors: bool) -> Result<(Option<Tensor>, Tensor, Option<Tensor>, Info)> {
        linalg::svd::svd_kernel(a, full, vectors)
    }

    fn solve(&self, a: &Tensor, b: &Tensor) -> Result<(Tensor, Info)> {
        linalg::solve::solve_kernel(a, b)
    }

    fn inv(&self, a: &Tensor) -> Result<(Tensor, Info)> {
        linalg::solve::inv_kernel(a)
    }

    fn det(&self, a: &Tensor, log: bool) -> Result<(Tensor, Tensor)> {
        linalg::solve::det_kernel(a, log)
    }

    fn lu_factor(&self, a: &Tensor) -> Result<(Tensor, Tensor, Info)> {
        linalg::solve::lu_factor_kernel(a)
    }

    fn solve_triangular(&self, a: &Tensor, b: &Tensor, upper: bool, unit: bool) -> Result<Tensor> {
        linalg::solve::solve_triangular_kernel(a, b, upper, unit)
    }

    fn embedding_renorm(&self, weight: &Tensor, rows: &[i64], max_norm: f64, norm_type: f64) -> Result<()> {
        embedding::renorm(weight, rows, max_norm, norm_type);
        Ok(())
    }

    fn embedding_bag(&self, weight: &Tensor, idx: &[i64], bags: &[(usize, usize)], mode: BagMode, per_sample_weights: &[f64], padding_idx: Option<i64>, out: &Tensor) -> Result<()> {
        embedding::bag(weight, idx, bags, mode, per_sample_weights, padding_idx, out);
        Ok(())
    }

    fn pad(&self, x: &Tensor, maps: &[Vec<Option<usize>>], fill: Scalar, out: &Tensor) -> Result<()> {
        if x.dtype().is_complex() {
            with_complex!(x.dtype(), T, pad::gather::<T>(x, maps, T::from_c128(fill.to_c128()), out));
        } else {
            with_dtype!(x.dtype(), T, pad::gather::<T>(x, maps, T::from_f64(fill.to_f64()), out));
        }
        Ok(())
    }

    fn resample(&self, x: &Tensor, taps: &Taps) -> Result<Tensor> {
        if x.dtype() == DType::F64 {
            resize::resample::<f64>(x, taps)
        } else {
            resize::resample::<f32>(x, taps)
        }
    }

    fn max_pool(&self, x: &Tensor, dims: usize, windows: &[Axis; 3]) -> Result<(Tensor, Tensor)> {
        pool::max_pool(x, dims, windows)
    }

    fn mean_pool(&self, x: &Tensor, dims: usize, windows: &[Axis; 3], divisor: Divisor) -> Result<Tensor> {
        pool::mean_pool(x, dims, windows, divisor)
    }

    fn max_pool_backward(&self, g: &Tensor, indices: &Tensor, inputs: usize) -> Result<Tensor> {
        pool::max_pool_backward(g, indices, inputs)
    }
}

/// Whether an integer divisor holds a zero.
fn has_zero(y: &Tensor) -> bool {
    with_dtype!(y.dtype(), T, {
        let mut found = false;
        for_each_indexed::<T>(y, |_, v| found |= !v.is_nonzero());
        found
    })
}
