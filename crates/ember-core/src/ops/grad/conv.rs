//! Derivatives of convolution and transposed convolution, on the same kernels: the input
//! gradient of a convolution is a transposed convolution of the output gradient (and the other
//! way round), and the weight gradient is a correlation of the input with the output gradient,
//! computed as a matrix product with the input's sliding windows.
use crate::autograd::{needs_grad, record, untracked};
use crate::bail;
use crate::error::Result;
use crate::ops::conv::{conv as conv_kernel, conv_transpose as conv_transpose_kernel, to3, ConvPadding, Geom};
use crate::ops::pad::{pad, PadMode};
use crate::ops::binary::Scalar;
use crate::ops::matmul::matmul;
use crate::ops::reduce::{reduce, ReduceOp};
use crate::tensor::Tensor;

fn per_dim(v: &[i64], dims: usize) -> Vec<i64> {
    if v.len() == 1 { vec![v[0]; dims] } else { v.to_vec() }
}

fn bias_grad(g: &Tensor) -> Result<Tensor> {
    let dims: Vec<i64> = (0..g.ndim() as i64).filter(|&d| d != 1).collect();
    reduce(ReduceOp::Sum, g, Some(&dims), false, None)
}

/// The weight gradient of `conv(x, w)` with output gradient `g`: the one-pass kernel, unless the
/// gradient itself is recorded (`create_graph`), which composes differentiable ops instead.
fn weight_grad(x: &Tensor, g: &Tensor, kernel: &[usize], stride: &[i64], pad_: &[i64], dilation: &[i64], groups: usize) -> Result<Tensor> {
    if needs_grad(&[x, g]) {
        return weight_grad_recorded(x, g, kernel, stride, pad_, dilation, groups);
    }
    let usize_of = |v: &[i64]| v.iter().map(|&e| e as usize).collect::<Vec<_>>();
    let geom = Geom {
        input: to3(&x.shape()[2..], 1),
        output: to3(&g.shape()[2..], 1),
        kernel: to3(kernel, 1),
        stride: to3(&usize_of(stride), 1),
        pad: to3(&usize_of(pad_), 0),
        dilation: to3(&usize_of(dilation), 1),
    };
    crate::backend::serving(x, [g])?.conv_weight_grad(x, g, groups, &geom)
}

/// The input gradient of a stride-1 `conv(x, w)`: the output gradient convolved with the
/// flipped weight, channels swapped per group, which runs on the fast forward kernels. `None`
/// when that needs negative padding (padding beyond the kernel's reach).
fn input_grad_stride1(g: &Tensor, w: &Tensor, p: &[i64], d: &[i64], groups: i64, dims: usize) -> Result<Option<Tensor>> {
    let kernel = &w.shape()[2..];
    let pad: Vec<i64> = (0..dims).map(|i| d[i] * (kernel[i] as i64 - 1) - p[i]).collect();
    if pad.iter().any(|&v| v < 0) {
        return Ok(None);
    }
    let (cout, cig) = (w.shape()[0] as i64, w.shape()[1] as i64);
    let mut grouped = vec![groups, cout / groups, cig];
    grouped.extend(kernel.iter().map(|&k| k as i64));
    let mut swapped = vec![groups * cig, cout / groups];
    swapped.extend(kernel.iter().map(|&k| k as i64));
    let spatial: Vec<i64> = (3..3 + dims as i64).collect();
    let wt = w.view(&grouped)?.transpose(1, 2)?.flip(&spatial)?.reshape(&swapped)?;
    Ok(Some(crate::ops::conv::conv(g, &wt, None, &[1], ConvPadding::Explicit(&pad), d, groups, dims)?))
}

/// The weight gradient from differentiable ops: per group, the product of `g` (out channels ×
/// positions) with the input's sliding windows (positions × in channels · kernel), the windows
/// being strided views of the padded input (one copy, as im2col).
fn weight_grad_recorded(x: &Tensor, g: &Tensor, kernel: &[usize], stride: &[i64], pad_: &[i64], dilation: &[i64], groups: usize) -> Result<Tensor> {
    let dims = kernel.len();
    let (n, cin, cout) = (x.shape()[0] as i64, x.shape()[1] as i64, g.shape()[1] as i64);
    let (gr, cig, cog) = (groups as i64, cin / groups as i64, cout / groups as i64);
    let pads: Vec<i64> = pad_.iter().rev().flat_map(|&p| [p, p]).collect();
    let mut win = if pads.iter().any(|&p| p != 0) { pad(x, &pads, PadMode::Constant(Scalar::Int(0)))? } else { x.clone() };
    for i in 0..dims {
        let span = (kernel[i] - 1) * dilation[i] as usize + 1;
        win = win.unfold(2 + i as i64, span, stride[i] as usize)?;
        if dilation[i] > 1 {
            win = win.slice(-1, None, None, dilation[i])?;
        }
    }
    // win: [N, Cin, *out, *kernel] -> [G, Cin/G·kernel, N·out]: output positions innermost,
    // so the copy moves whole rows of the input rather than kernel-sized runs.
    let out: Vec<i64> = win.shape()[2..2 + dims].iter().map(|&d| d as i64).collect();
    let (ovol, kvol): (i64, i64) = (out.iter().product(), kernel.iter().product::<usize>() as i64);
    let split: Vec<i64> = [n, gr, cig].into_iter().chain(out.iter().copied()).chain(kernel.iter().map(|&k| k as i64)).collect();
    let mut order: Vec<i64> = vec![1, 2];
    order.extend(3 + dims as i64..3 + 2 * dims as i64);
    order.push(0);
    order.extend(3..3 + dims as i64);
    let cols = win.view(&split)?.permute(&order)?.reshape(&[gr, cig * kvol, n * ovol])?;
    let grads = g.reshape(&[n, gr, cog, ovol])?.permute(&[1, 2, 0, 3])?.reshape(&[gr, cog, n * ovol])?;
    let mut shape = vec![cout, cig];
    shape.extend(kernel.iter().map(|&k| k as i64));
    matmul(&grads, &cols.transpose(1, 2)?)?.reshape(&shape)
}

/// `conv` recorded for autograd (`ops::conv::conv` sends tracked calls here).
#[allow(clippy::too_many_arguments)]
pub(crate) fn conv(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>, stride: &[i64], padding: ConvPadding, dilation: &[i64], groups: i64, dims: usize) -> Result<Tensor> {
    if input.ndim() == dims + 1 {
        return conv(&input.unsqueeze(0)?, weight, bias, stride, padding, dilation, groups, dims)?.squeeze(Some(&[0]));
    }
    let (s, d) = (per_dim(stride, dims), per_dim(dilation, dims));
    let kernel: Vec<usize> = weight.shape().get(2..).unwrap_or(&[]).to_vec();
    // 'same' and 'valid' become explicit padding; an odd 'same' total pads the right side first.
    let (x, p) = match padding {
        ConvPadding::Explicit(p) => (input.clone(), per_dim(p, dims)),
        ConvPadding::Valid => (input.clone(), vec![0; dims]),
        ConvPadding::Same => {
            if s.iter().any(|&v| v != 1) {
                bail!(Runtime, "padding='same' is not supported for strided convolutions");
            }
            let total: Vec<i64> = (0..dims).map(|i| d[i] * (kernel.get(i).copied().unwrap_or(1) as i64 - 1)).collect();
            let extra: Vec<i64> = total.iter().rev().flat_map(|t| [0, t % 2]).collect();
            let x = if extra.iter().any(|&e| e != 0) { pad(input, &extra, PadMode::Constant(Scalar::Int(0)))? } else { input.clone() };
            (x, total.iter().map(|t| t / 2).collect())
        }
    };
    let y = {
        let _untracked = untracked();
        conv_kernel(&x, weight, bias, &s, ConvPadding::Explicit(&p), &d, groups, dims)?
    };
    let absent = Tensor::zeros(&[0], weight.dtype())?;
    let spatial: Vec<usize> = x.shape()[2..].to_vec();
    record("ConvolutionBackward0", &[&x, weight, bias.unwrap_or(&absent)], &[&y], &[&x, weight], move |ctx, g| {
        let g = &g[0];
        let out: Vec<usize> = g.shape()[2..].to_vec();
        let gx = if ctx.needs_input_grad(0) {
            let w = ctx.saved(1)?;
            let flipped = if s.iter().all(|&v| v == 1) { input_grad_stride1(g, &w, &p, &d, groups, dims)? } else { None };
            match flipped {
                Some(gx) => Some(gx),
                None => {
                    let op: Vec<i64> = (0..dims).map(|i| spatial[i] as i64 - ((out[i] as i64 - 1) * s[i] - 2 * p[i] + d[i] * (kernel[i] as i64 - 1) + 1)).collect();
                    Some(crate::ops::conv::conv_transpose(g, &w, None, &s, &p, &op, groups, &d, dims)?)
                }
            }
        } else {
            None
        };
        let gw = if ctx.needs_input_grad(1) { Some(weight_grad(&ctx.saved(0)?, g, &kernel, &s, &p, &d, groups as usize)?) } else { None };
        let gb = if ctx.needs_input_grad(2) { Some(bias_grad(g)?) } else { None };
        Ok(vec![gx, gw, gb])
    })?;
    Ok(y)
}

/// `conv_transpose` recorded for autograd: the adjoint of `conv` in its input.
#[allow(clippy::too_many_arguments)]
pub(crate) fn conv_transpose(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>, stride: &[i64], padding: &[i64], output_padding: &[i64], groups: i64, dilation: &[i64], dims: usize) -> Result<Tensor> {
    if input.ndim() == dims + 1 {
        return conv_transpose(&input.unsqueeze(0)?, weight, bias, stride, padding, output_padding, groups, dilation, dims)?.squeeze(Some(&[0]));
    }
    let y = {
        let _untracked = untracked();
        conv_transpose_kernel(input, weight, bias, stride, padding, output_padding, groups, dilation, dims)?
    };
    let (s, p, d) = (per_dim(stride, dims), per_dim(padding, dims), per_dim(dilation, dims));
    let kernel: Vec<usize> = weight.shape()[2..].to_vec();
    let spatial: Vec<usize> = input.shape()[2..].to_vec();
    let absent = Tensor::zeros(&[0], weight.dtype())?;
    record("ConvolutionBackward0", &[input, weight, bias.unwrap_or(&absent)], &[&y], &[input, weight], move |ctx, g| {
        let g = &g[0];
        let gx = if ctx.needs_input_grad(0) {
            let mut gx = crate::ops::conv::conv(g, &ctx.saved(1)?, None, &s, ConvPadding::Explicit(&p), &d, groups, dims)?;
            for (i, &n) in spatial.iter().enumerate() {
                gx = gx.narrow(2 + i as i64, 0, n as i64)?;
            }
            Some(gx)
        } else {
            None
        };
        let gw = if ctx.needs_input_grad(1) { Some(weight_grad(g, &ctx.saved(0)?, &kernel, &s, &p, &d, groups as usize)?) } else { None };
        let gb = if ctx.needs_input_grad(2) { Some(bias_grad(g)?) } else { None };
        Ok(vec![gx, gw, gb])
    })?;
    Ok(y)
}
