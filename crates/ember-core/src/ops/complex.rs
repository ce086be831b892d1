//! Complex views and constructors: `view_as_real`/`view_as_complex` (zero-copy: the same storage
//! seen as pairs of floats, strides and offset counted in the new dtype's elements), `real` and
//! `imag` (views of one part), `complex(real, imag)` and `polar(abs, angle)`. `conj` is eager in
//! Ember (the `Conj` unary op, PyTorch's `conj_physical`): there is no lazy conjugate bit.
use super::unary::{unary, UnaryOp};
use crate::autograd;
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::{broadcast_shapes, Layout};
use crate::tensor::Tensor;

/// The float pairs behind a complex tensor: shape `[..., 2]`, sharing its storage.
pub fn view_as_real(x: &Tensor) -> Result<Tensor> {
    if !x.dtype().is_complex() {
        bail!(Type, "view_as_real is only supported for complex tensors");
    }
    let mut shape = x.shape().to_vec();
    shape.push(2);
    let mut strides: Vec<isize> = x.strides().iter().map(|s| s * 2).collect();
    strides.push(1);
    let out = x.with_dtype_layout(x.dtype().to_real(), Layout::new(shape, strides, x.layout().offset() * 2));
    if autograd::needs_grad(&[x]) {
        autograd::record("ViewAsRealBackward0", &[x], &[&out], &[], |_, g| Ok(vec![Some(view_as_complex(&g[0].contiguous()?)?)]))?;
    }
    Ok(out)
}

/// Pairs of floats (last dim of size 2, stride 1) seen as complex numbers, sharing storage.
pub fn view_as_complex(x: &Tensor) -> Result<Tensor> {
    let dtype = match x.dtype() {
        DType::F16 | DType::F32 | DType::F64 => x.dtype().to_complex(),
        d => bail!(NotImplemented, "view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar type: {}", d.legacy_name()),
    };
    if x.ndim() == 0 || x.shape()[x.ndim() - 1] != 2 {
        bail!(Runtime, "Tensor must have a last dimension of size 2");
    }
    if x.strides()[x.ndim() - 1] != 1 {
        bail!(Runtime, "Tensor must have a last dimension with stride 1");
    }
    let (shape, strides) = (&x.shape()[..x.ndim() - 1], &x.strides()[..x.ndim() - 1]);
    if strides.iter().zip(shape).any(|(s, &n)| s & 1 != 0 && n > 1) {
        bail!(Runtime, "Tensor must have a stride divisible by 2 for all but last dimension");
    }
    if x.layout().offset() & 1 != 0 {
        bail!(Runtime, "Tensor must have a storage_offset divisible by 2");
    }
    let strides = strides.iter().zip(shape).map(|(s, &n)| if n > 1 { s / 2 } else { 1 }).collect();
    let out = x.with_dtype_layout(dtype, Layout::new(shape.to_vec(), strides, x.layout().offset() / 2));
    if autograd::needs_grad(&[x]) {
        autograd::record("ViewAsComplexBackward0", &[x], &[&out], &[], |_, g| Ok(vec![Some(view_as_real(&g[0])?)]))?;
    }
    Ok(out)
}

/// The real part: a view for complex input, the tensor itself otherwise (as PyTorch).
pub fn real(x: &Tensor) -> Result<Tensor> {
    if !x.dtype().is_complex() {
        return Ok(x.clone());
    }
    view_as_real(x)?.select(-1, 0)
}

/// The imaginary part, a view; real tensors have none.
pub fn imag(x: &Tensor) -> Result<Tensor> {
    if !x.dtype().is_complex() {
        bail!(Type, "imag is not implemented for tensors with non-complex dtypes.");
    }
    view_as_real(x)?.select(-1, 1)
}

/// The complex conjugate, eagerly copied (`conj_physical`); real tensors come back as they are.
pub fn conj(x: &Tensor) -> Result<Tensor> {
    if !x.dtype().is_complex() {
        return Ok(x.clone());
    }
    unary(UnaryOp::Conj, x)
}

fn check_parts(a: &Tensor, b: &Tensor) -> Result<()> {
    let ok = |d: DType| matches!(d, DType::F16 | DType::F32 | DType::F64);
    if !ok(a.dtype()) || !ok(b.dtype()) {
        bail!(NotImplemented, "Expected both inputs to be Half, Float or Double tensors but got {} and {}", a.dtype().legacy_name(), b.dtype().legacy_name());
    }
    if a.dtype() != b.dtype() {
        bail!(Runtime, "Expected object of scalar type {} but got scalar type {} for second argument", a.dtype().legacy_name(), b.dtype().legacy_name());
    }
    Ok(())
}

/// `real + i·imag`, broadcast; both of one float dtype.
pub fn complex(re: &Tensor, im: &Tensor) -> Result<Tensor> {
    check_parts(re, im)?;
    let shape = broadcast_shapes(re.shape(), im.shape())?;
    let pairs = super::join::stack(&[re.broadcast_to(&shape)?, im.broadcast_to(&shape)?], -1)?;
    view_as_complex(&pairs)
}

/// `abs·(cos angle + i·sin angle)`.
pub fn polar(abs: &Tensor, angle: &Tensor) -> Result<Tensor> {
    check_parts(abs, angle)?;
    let re = super::grad::mul(abs, &unary(UnaryOp::Cos, angle)?)?;
    let im = super::grad::mul(abs, &unary(UnaryOp::Sin, angle)?)?;
    complex(&re, &im)
}
