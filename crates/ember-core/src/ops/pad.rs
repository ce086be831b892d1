//! `pad`: constant, reflect, replicate and circular padding (negative pads crop).
//!
//! Each output position along a padded dim maps to one input position, or to "the fill value"
//! in constant mode; the maps are built once per dim here, and the backend gathers through them.
use super::binary::Scalar;
use crate::bail;
use crate::error::Result;
use crate::tensor::Tensor;

/// `F.pad`'s `mode`: what fills the border.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PadMode {
    /// `"constant"`: the value (PyTorch's `value`, default 0); negative padding crops.
    Constant(Scalar),
    /// `"reflect"`: the mirror image without the edge element (padding below the dim's size).
    Reflect,
    /// `"replicate"`: the edge element repeated.
    Replicate,
    /// `"circular"`: the input wrapped around (padding at most the dim's size).
    Circular,
}

impl PadMode {
    fn name(&self) -> &'static str {
        match self {
            PadMode::Constant(_) => "constant",
            PadMode::Reflect => "reflect",
            PadMode::Replicate => "replicate",
            PadMode::Circular => "circular",
        }
    }
}

/// The input position each output position reads along one dim; `None` is the fill value.
fn position_map(n: usize, lo: i64, hi: i64, mode: PadMode) -> Result<Vec<Option<usize>>> {
    let (n, out) = (n as i64, n as i64 + lo + hi);
    // As long as the padded dim: allocated fallibly, before the output.
    let mut map = crate::storage::try_vec(out.max(0) as usize)?;
    map.extend((0..out).map(|o| {
        let i = o - lo;
        let mapped = match mode {
            PadMode::Constant(_) => i,
            PadMode::Reflect if i < 0 => -i,
            PadMode::Reflect if i >= n => 2 * (n - 1) - i,
            PadMode::Reflect => i,
            PadMode::Replicate => i.clamp(0, n - 1),
            PadMode::Circular => i.rem_euclid(n),
        };
        (0..n).contains(&mapped).then_some(mapped as usize)
    }));
    Ok(map)
}

fn fmt_size(s: &[usize]) -> String {
    format!("{s:?}")
}

/// Checks the rules that differ per mode and returns the (lo, hi) pad of every input dim.
fn check(input: &Tensor, pad: &[i64], mode: PadMode) -> Result<Vec<(i64, i64)>> {
    let ndim = input.ndim();
    if pad.len() % 2 != 0 {
        bail!(Runtime, "Padding length must be divisible by 2");
    }
    if pad.len() > 2 * ndim {
        bail!(Runtime, "Padding length should be less than or equal to two times the input dimension but got padding length {} and input of dimension {ndim}", pad.len());
    }
    let k = pad.len() / 2;
    let constant = matches!(mode, PadMode::Constant(_));
    if !constant && (!(1..=3).contains(&k) || (ndim != k + 1 && ndim != k + 2)) {
        bail!(NotImplemented, "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now (got {} padding of length {} for an input of size {})", mode.name(), pad.len(), fmt_size(input.shape()));
    }
    let mut pads = vec![(0i64, 0i64); ndim];
    for j in 0..k {
        let d = ndim - 1 - j;
        let (lo, hi, n) = (pad[2 * j], pad[2 * j + 1], input.shape()[d] as i64);
        if n.checked_add(lo).and_then(|s| s.checked_add(hi)).is_none() {
            return Err(crate::layout::size_overflow(pad));
        }
        match mode {
            PadMode::Constant(_) if n + lo + hi < 0 => {
                bail!(Runtime, "The input size {n}, plus negative padding {lo} and {hi} resulted in a negative output size, which is invalid. Check dimension {d} of your input.")
            }
            PadMode::Reflect if lo >= n || hi >= n => {
                bail!(Runtime, "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding ({lo}, {hi}) at dimension {d} of input {}", fmt_size(input.shape()))
            }
            PadMode::Circular if lo > n || hi > n => bail!(Runtime, "Padding value causes wrapping around more than once."),
            PadMode::Reflect | PadMode::Replicate | PadMode::Circular if n == 0 || n + lo + hi <= 0 => {
                bail!(Runtime, "{} padding: input of size {} is too small for padding ({lo}, {hi}) at dimension {d}; the output would be empty", mode.name(), fmt_size(input.shape()))
            }
            _ => {}
        }
        pads[d] = (lo, hi);
    }
    Ok(pads)
}

/// `torch.nn.functional.pad(input, pad, mode, value)`: `pad` lists (left, right) pairs from the
/// last dim backwards.
pub fn pad(input: &Tensor, pad: &[i64], mode: PadMode) -> Result<Tensor> {
    crate::autograd::track(&[input], || pad_kernel(input, pad, mode), |y| super::grad::pool::record_pad(input, pad, mode, y))
}

fn pad_kernel(input: &Tensor, pad: &[i64], mode: PadMode) -> Result<Tensor> {
    let pads = check(input, pad, mode)?;
    if input.ndim() == 0 {
        return Ok(input.deep_clone()?);
    }
    let maps: Vec<Vec<Option<usize>>> = input.shape().iter().zip(&pads).map(|(&n, &(lo, hi))| position_map(n, lo, hi, mode)).collect::<Result<_>>()?;
    let shape: Vec<usize> = maps.iter().map(|m| m.len()).collect();
    let out = Tensor::empty_on(&shape, input.dtype(), input.device())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let fill = match mode {
        PadMode::Constant(v) => v,
        _ => Scalar::Int(0),
    };
    crate::backend::of(input.device())?.pad(input, &maps, fill, &out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_follow_each_mode() {
        let r = |m| position_map(3, 2, 2, m).unwrap().into_iter().map(|p| p.map_or(-1, |p| p as i64)).collect::<Vec<_>>();
        assert_eq!(r(PadMode::Reflect), vec![2, 1, 0, 1, 2, 1, 0]);
        assert_eq!(r(PadMode::Replicate), vec![0, 0, 0, 1, 2, 2, 2]);
        assert_eq!(r(PadMode::Circular), vec![1, 2, 0, 1, 2, 0, 1]);
        assert_eq!(r(PadMode::Constant(Scalar::Int(0))), vec![-1, -1, 0, 1, 2, -1, -1]);
        assert_eq!(position_map(4, -1, -2, PadMode::Constant(Scalar::Int(0))).unwrap(), vec![Some(1)]);
    }
}
