//! Joining and splitting: cat/stack copy each input once into its slice of the result (in
//! parallel); split/chunk/tensor_split/unbind return views; roll, repeat and repeat_interleave
//! are strided copies.
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::wrap_dim;
use crate::tensor::Tensor;

/// `cat`: joins along `dim`. As in PyTorch, 1-d empty tensors are skipped (legacy behaviour),
/// and the result dtype is the promotion of every input's.
pub fn cat(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let kernel = || {
        let (shape, dtype) = cat_shape(tensors, dim)?;
        let out = Tensor::empty_on(&shape, dtype, crate::backend::common_device(&refs)?)?;
        cat_kernel(tensors, dim, &out)?;
        Ok(out)
    };
    crate::autograd::track(&refs, kernel, |y| super::grad::index::record_cat(&refs, wrap_dim(dim, y.ndim())?, y))
}

/// The result shape and dtype of `cat`, with every input checked.
pub fn cat_shape(tensors: &[Tensor], dim: i64) -> Result<(Vec<usize>, DType)> {
    if tensors.is_empty() {
        bail!(Runtime, "torch.cat(): expected a non-empty list of Tensors");
    }
    let dtype = tensors.iter().skip(1).fold(tensors[0].dtype(), |acc, t| DType::promote(acc, t.dtype()));
    let kept: Vec<(usize, &Tensor)> = tensors.iter().enumerate().filter(|(_, t)| !is_legacy_empty(t)).collect();
    let Some(&(_, first)) = kept.first() else {
        return Ok((vec![0], dtype));
    };
    if first.ndim() == 0 {
        bail!(Runtime, "zero-dimensional tensor (at position {}) cannot be concatenated", kept[0].0);
    }
    let d = wrap_dim(dim, first.ndim())?;
    let mut shape = first.shape().to_vec();
    shape[d] = 0;
    for &(i, t) in &kept {
        if t.ndim() != first.ndim() {
            bail!(Runtime, "Tensors must have same number of dimensions: got {} and {}", first.ndim(), t.ndim());
        }
        for k in (0..t.ndim()).filter(|&k| k != d) {
            if t.shape()[k] != first.shape()[k] {
                bail!(Runtime, "Sizes of tensors must match except in dimension {d}. Expected size {} but got size {} for tensor number {i} in the list.", first.shape()[k], t.shape()[k]);
            }
        }
        shape[d] = shape[d].checked_add(t.shape()[d]).ok_or_else(|| crate::layout::size_overflow(&shape))?;
    }
    Ok((shape, dtype))
}

fn is_legacy_empty(t: &Tensor) -> bool {
    t.ndim() == 1 && t.numel() == 0
}

/// `cat` into `out` (already shaped by `cat_shape`), each input cast into its slice.
pub fn cat_into(tensors: &[Tensor], dim: i64, out: &Tensor) -> Result<()> {
    let inputs: Vec<&Tensor> = tensors.iter().collect();
    super::overlap::check_no_overlap(out, &inputs)?;
    crate::autograd::inplace::out_write(out, &inputs, || cat_kernel(tensors, dim, out), || cat(tensors, dim))
}

fn cat_kernel(tensors: &[Tensor], dim: i64, out: &Tensor) -> Result<()> {
    let (shape, dtype) = cat_shape(tensors, dim)?;
    super::check_out(out, &shape, dtype)?;
    let kept: Vec<&Tensor> = tensors.iter().filter(|t| !is_legacy_empty(t)).collect();
    if kept.is_empty() {
        return Ok(());
    }
    let d = wrap_dim(dim, shape.len())?;
    let mut start = 0;
    for t in kept {
        let n = t.shape()[d];
        out.narrow(d as i64, start as i64, n as i64)?.copy_(t)?;
        start += n;
    }
    Ok(())
}

/// `stack`: joins equally shaped tensors along a new dim.
pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    if tensors.is_empty() {
        bail!(Runtime, "stack expects a non-empty TensorList");
    }
    for (i, t) in tensors.iter().enumerate() {
        if t.shape() != tensors[0].shape() {
            bail!(Runtime, "stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {i}", tensors[0].shape(), t.shape());
        }
    }
    let d = wrap_dim(dim, tensors[0].ndim() + 1)? as i64;
    let expanded = tensors.iter().map(|t| t.unsqueeze(d)).collect::<Result<Vec<_>>>()?;
    cat(&expanded, d)
}

/// `split` into pieces of `size` along `dim` (the last one shorter), as views.
pub fn split(x: &Tensor, size: i64, dim: i64) -> Result<Vec<Tensor>> {
    let d = x.wrap_dim(dim)?;
    if x.ndim() == 0 {
        bail!(Runtime, "split expects at least a 1-dimensional tensor");
    }
    if size < 0 {
        bail!(Runtime, "split expects split_size be non-negative, but got split_size={size}");
    }
    let n = x.shape()[d] as i64;
    if size == 0 {
        if n != 0 {
            bail!(Runtime, "split_size can only be 0 if dimension size is 0, but got dimension size of {n}");
        }
        return Ok(vec![x.clone()]);
    }
    let pieces = ((n + size - 1) / size).max(1);
    let views = (0..pieces).map(|k| x.narrow(d as i64, k * size, size.min(n - k * size))).collect::<Result<Vec<_>>>()?;
    Tensor::mark_multi_output(&views, "Split");
    Ok(views)
}

/// `split` with explicit `sizes` that must add up to the length of `dim`, as views.
pub fn split_with_sizes(x: &Tensor, sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    let views = pieces_of(x, sizes, dim)?;
    Tensor::mark_multi_output(&views, "SplitWithSizes");
    Ok(views)
}

/// Views of consecutive pieces of `sizes` along `dim`, which must add up to its length.
fn pieces_of(x: &Tensor, sizes: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    let d = x.wrap_dim(dim)?;
    if x.ndim() == 0 {
        bail!(Runtime, "split expects at least a 1-dimensional tensor");
    }
    let n = x.shape()[d] as i64;
    if sizes.iter().any(|&s| s < 0) || sizes.iter().sum::<i64>() != n {
        bail!(Runtime, "split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at dimension {d}), but got split_sizes={sizes:?}");
    }
    let mut start = 0;
    sizes
        .iter()
        .map(|&s| {
            start += s;
            x.narrow(d as i64, start - s, s)
        })
        .collect()
}

/// `chunk`: at most `chunks` views of equal length (the last may be shorter).
pub fn chunk(x: &Tensor, chunks: i64, dim: i64) -> Result<Vec<Tensor>> {
    if chunks <= 0 {
        bail!(Runtime, "chunk expects `chunks` to be greater than 0, got: {chunks}");
    }
    if x.ndim() == 0 {
        bail!(Runtime, "chunk expects at least a 1-dimensional tensor");
    }
    let n = x.shape()[x.wrap_dim(dim)?] as i64;
    split(x, ((n + chunks - 1) / chunks).max(if n == 0 { 0 } else { 1 }), dim)
}

/// `tensor_split` into `sections` views whose lengths differ by at most one (longer first).
pub fn tensor_split_sections(x: &Tensor, sections: i64, dim: i64) -> Result<Vec<Tensor>> {
    if sections <= 0 {
        bail!(Runtime, "number of sections must be larger than 0, got {sections}");
    }
    if x.ndim() == 0 {
        bail!(Runtime, "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
    }
    let n = x.shape()[x.wrap_dim(dim)?] as i64;
    let sizes: Vec<i64> = (0..sections).map(|k| n / sections + (k < n % sections) as i64).collect();
    pieces_of(x, &sizes, dim) // separate slices for autograd, as PyTorch's: each may be written
}

/// `tensor_split` at the given `indices` (clamped to the dim, as Python slices are).
pub fn tensor_split_indices(x: &Tensor, indices: &[i64], dim: i64) -> Result<Vec<Tensor>> {
    if x.ndim() == 0 {
        bail!(Runtime, "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims");
    }
    let d = x.wrap_dim(dim)?;
    let bounds: Vec<Option<i64>> = indices.iter().map(|&i| Some(i)).collect();
    let starts = std::iter::once(None).chain(bounds.iter().copied());
    let stops = bounds.iter().copied().chain(std::iter::once(None));
    starts.zip(stops).map(|(s, e)| x.slice(d as i64, s, e, 1)).collect()
}

/// `unbind`: every slice along `dim`, as views.
pub fn unbind(x: &Tensor, dim: i64) -> Result<Vec<Tensor>> {
    if x.ndim() == 0 {
        bail!(Index, "Dimension specified as 0 but tensor has no dimensions");
    }
    let d = x.wrap_dim(dim)?;
    let views = (0..x.shape()[d] as i64).map(|i| x.select(d as i64, i)).collect::<Result<Vec<_>>>()?;
    Tensor::mark_multi_output(&views, "Unbind");
    Ok(views)
}

/// `roll`: elements shifted along each of `dims` by the matching shift, wrapping around; with
/// no dims the flattened tensor is rolled and the shape restored.
pub fn roll(x: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    crate::autograd::track(&[x], || roll_kernel(x, shifts, dims), |y| super::grad::index::record_roll(x, shifts, dims, y))
}

fn roll_kernel(x: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    if dims.is_empty() {
        if shifts.len() != 1 {
            bail!(Runtime, "shifts and dimensions must align. shifts: {}, dims:0", shifts.len());
        }
        let flat = roll_kernel(&x.reshape(&[-1])?, shifts, &[0])?;
        return flat.reshape(&x.shape().iter().map(|&s| s as i64).collect::<Vec<_>>());
    }
    if shifts.len() != dims.len() {
        bail!(Runtime, "shifts and dimensions must align. shifts: {}, dims:{}", shifts.len(), dims.len());
    }
    if x.ndim() == 0 {
        bail!(Index, "Dimension specified as {} but tensor has no dimensions", dims[0]);
    }
    let mut cur = x.clone();
    for (&shift, &dim) in shifts.iter().zip(dims) {
        cur = roll_one(&cur, shift, cur.wrap_dim(dim)?)?;
    }
    Ok(if cur.same_storage(x) { x.deep_clone()? } else { cur })
}

/// One dim of `roll`: two strided copies, the tail to the front and the head behind it.
fn roll_one(x: &Tensor, shift: i64, d: usize) -> Result<Tensor> {
    let n = x.shape()[d] as i64;
    if n == 0 || shift.rem_euclid(n) == 0 {
        return Ok(x.clone());
    }
    let s = shift.rem_euclid(n);
    let out = Tensor::empty_on(x.shape(), x.dtype(), x.device())?;
    out.narrow(d as i64, 0, s)?.copy_(&x.narrow(d as i64, n - s, s)?)?;
    out.narrow(d as i64, s, n - s)?.copy_(&x.narrow(d as i64, 0, n - s)?)?;
    Ok(out)
}

/// `repeat`: `x` tiled `repeats[k]` times along each dim (leading repeats add dims). One
/// strided copy: the result viewed as `[r0, s0, r1, s1, ...]` receives `x` broadcast over the r's.
pub fn repeat(x: &Tensor, repeats: &[i64]) -> Result<Tensor> {
    crate::autograd::track(&[x], || repeat_kernel(x, repeats), |y| super::grad::index::record_repeat(x, repeats, y))
}

fn repeat_kernel(x: &Tensor, repeats: &[i64]) -> Result<Tensor> {
    if repeats.len() < x.ndim() {
        bail!(Runtime, "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor");
    }
    if let Some(r) = repeats.iter().find(|&&r| r < 0) {
        bail!(Runtime, "Trying to create tensor with negative dimension {r}: {repeats:?}");
    }
    let lead = repeats.len() - x.ndim();
    let sizes: Vec<i64> = std::iter::repeat_n(1, lead).chain(x.shape().iter().map(|&s| s as i64)).collect();
    let out_shape = repeats.iter().zip(&sizes).map(|(&r, &s)| r.checked_mul(s).map(|n| n as usize)).collect::<Option<Vec<usize>>>();
    let out_shape = out_shape.ok_or_else(|| crate::layout::size_overflow(repeats))?;
    let out = Tensor::empty_on(&out_shape, x.dtype(), x.device())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let pairs: Vec<i64> = repeats.iter().zip(&sizes).flat_map(|(&r, &s)| [r, s]).collect();
    let src_shape: Vec<i64> = sizes.iter().flat_map(|&s| [1, s]).collect();
    let src = x.reshape(&src_shape)?.expand(&pairs)?;
    out.view(&pairs)?.copy_(&src)?;
    Ok(out)
}

/// `repeat_interleave`: element (or slice along `dim`) i repeated `counts[i]` times, via
/// `index_select` with the repeated positions. One count applies to every element.
pub fn repeat_interleave(x: &Tensor, counts: &[i64], dim: i64) -> Result<Tensor> {
    let d = x.wrap_dim(dim)?;
    let n = x.shape().get(d).copied().unwrap_or(1);
    if counts.len() != 1 && counts.len() != n {
        bail!(Runtime, "repeats must have the same size as input along dim, but got repeats.size(0) = {} and input.size({d}) = {n}", counts.len());
    }
    if counts.iter().any(|&c| c < 0) {
        bail!(Runtime, "repeats can not be negative");
    }
    let count = |i: usize| counts[i.min(counts.len() - 1)] as usize;
    let len = (0..n).try_fold(0usize, |acc, i| acc.checked_add(count(i))).ok_or_else(|| crate::layout::size_overflow(counts))?;
    let mut positions = crate::storage::try_vec(len)?;
    positions.extend((0..n).flat_map(|i| std::iter::repeat_n(i as i64, count(i))));
    super::index::index_select(x, d as i64, &Tensor::from_vec(positions, &[len])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_whose_sizes_overflow_are_errors_before_any_allocation() {
        let x = Tensor::zeros(&[3], DType::F32).unwrap();
        assert!(repeat(&x, &[1 << 62]).unwrap_err().message.contains("overflowed"));
        assert!(repeat_interleave(&x, &[i64::MAX], 0).unwrap_err().message.contains("overflowed"));
        let wide = Tensor::zeros(&[1], DType::F32).unwrap().broadcast_to(&[1 << 62]).unwrap();
        assert!(cat_shape(&[wide.clone(), wide.clone(), wide.clone(), wide], 0).unwrap_err().message.contains("overflowed"));
    }

    fn range(n: usize, shape: &[usize]) -> Tensor {
        Tensor::from_vec((0..n as i64).collect(), shape).unwrap()
    }

    #[test]
    fn cat_checks_and_skips_legacy_empty() {
        let a = range(6, &[2, 3]);
        let e = Tensor::zeros(&[0], DType::F32).unwrap();
        let r = cat(&[a.clone(), e, a.clone()], 0).unwrap();
        assert_eq!((r.shape(), r.dtype()), (&[4usize, 3][..], DType::F32));
        let b = range(4, &[2, 2]);
        let err = cat(&[a.clone(), b], 0).unwrap_err();
        assert!(err.message.contains("Sizes of tensors must match except in dimension 0"));
    }

    #[test]
    fn split_returns_views() {
        let a = range(10, &[10]);
        let parts = split(&a, 4, 0).unwrap();
        assert_eq!(parts.iter().map(|p| p.numel()).collect::<Vec<_>>(), vec![4, 4, 2]);
        assert!(parts.iter().all(|p| p.same_storage(&a)));
        assert!(split_with_sizes(&a, &[3, 3], 0).is_err());
    }

    #[test]
    fn roll_and_repeat() {
        let a = range(5, &[5]);
        assert_eq!(roll(&a, &[2], &[0]).unwrap().to_vec::<i64>().unwrap(), vec![3, 4, 0, 1, 2]);
        let r = repeat(&range(2, &[2]), &[2, 2]).unwrap();
        assert_eq!(r.to_vec::<i64>().unwrap(), vec![0, 1, 0, 1, 0, 1, 0, 1]);
    }
}
