//! PyTorch's memory-overlap rules for writes (in-place ops and `out=`). A written tensor two of
//! whose elements share one address (an expanded view) is refused; an input that shares some
//! but not all of the written memory is refused, as PyTorch does; an input that overlaps in a
//! way PyTorch cannot meet (its `flip` returns a copy, Ember's a view with negative strides; a
//! layout with gaps) is read through a temporary, so the result is what a fresh input gives.
//! The check costs a storage comparison and two spans per input; only intersecting spans look
//! at strides.
use crate::bail;
use crate::error::Result;
use crate::tensor::Tensor;

const INTERNAL: &str = "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.";
const PARTIAL: &str = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.";

#[derive(Clone, Copy, PartialEq, Debug)]
enum Overlap {
    None,
    /// The same elements in the same order.
    Full,
    /// Dense layouts sharing some memory.
    Partial,
    /// Intersecting spans of which one is not dense (gaps, broadcast or negative strides).
    Unknown,
}

/// Refuses a written tensor with a broadcast (stride 0) dim, as PyTorch's
/// `assert_no_internal_overlap`.
pub fn check_internal(dst: &Tensor) -> Result<()> {
    if dst.numel() > 0 && dst.shape().iter().zip(dst.strides()).any(|(&n, &s)| n > 1 && s == 0) {
        bail!(Runtime, "{INTERNAL}");
    }
    Ok(())
}

/// `dst` with every broadcast dim narrowed to its one element, when it has any: a fill writes
/// the same value to every element, so an expanded target is fine (PyTorch's `fill_` skips the
/// check too), and goes to each distinct element once.
pub fn distinct_elements(dst: &Tensor) -> Result<Option<Tensor>> {
    let broadcast: Vec<usize> = (0..dst.ndim()).filter(|&d| dst.shape()[d] > 1 && dst.strides()[d] == 0).collect();
    if broadcast.is_empty() || dst.numel() == 0 {
        return Ok(None);
    }
    let mut t = dst.clone();
    for d in broadcast {
        t = t.narrow(d as i64, 0, 1)?;
    }
    Ok(Some(t))
}

/// Checks an elementwise write into `dst` that reads `inputs`: each output element reads only
/// the inputs' elements at its own position, so a full overlap (`x.add_(x)`) is safe. Returns
/// whether the inputs must be read from a temporary.
pub fn check_write(dst: &Tensor, inputs: &[&Tensor]) -> Result<bool> {
    check_internal(dst)?;
    let mut through_copy = false;
    for t in inputs {
        match overlap(dst, t) {
            Overlap::Partial => bail!(Runtime, "{PARTIAL}"),
            Overlap::Unknown => through_copy = true,
            Overlap::None | Overlap::Full => {}
        }
    }
    Ok(through_copy)
}

/// Refuses any dense input sharing memory with `dst`, as PyTorch's `assert_no_overlap`: for ops
/// whose output elements read other positions (scatter, index_put, index_add ...).
pub fn check_no_overlap(dst: &Tensor, inputs: &[&Tensor]) -> Result<()> {
    for t in inputs {
        if matches!(overlap(dst, t), Overlap::Partial | Overlap::Full) {
            bail!(Runtime, "{PARTIAL}");
        }
    }
    Ok(())
}

fn overlap(a: &Tensor, b: &Tensor) -> Overlap {
    if a.numel() == 0 || b.numel() == 0 || !a.same_storage(b) {
        return Overlap::None;
    }
    let ((a0, a1), (b0, b1)) = (byte_span(a), byte_span(b));
    if a1 <= b0 || b1 <= a0 {
        return Overlap::None;
    }
    if a.is_alias_of(b) || (a0, a1) == (b0, b1) && same_walk(a, b) {
        return Overlap::Full;
    }
    if is_dense(a) && is_dense(b) {
        return Overlap::Partial;
    }
    Overlap::Unknown
}

/// Whether both visit the same elements in the same order: equal shapes, dtypes and strides,
/// where a dim of size 1 has no stride to compare (`x.flip(0)` of one element is `x`).
fn same_walk(a: &Tensor, b: &Tensor) -> bool {
    a.dtype() == b.dtype()
        && a.shape() == b.shape()
        && a.shape().iter().zip(a.strides().iter().zip(b.strides())).all(|(&n, (sa, sb))| n == 1 || sa == sb)
}

/// The lowest and one-past-highest byte offsets in the storage (dtypes of different sizes may
/// share one, through `view_as_real`).
fn byte_span(t: &Tensor) -> (isize, isize) {
    // Every tensor's span was checked when its layout was made.
    let (lo, hi) = t.layout().span().expect("a tensor's span fits in isize");
    let size = t.dtype().size() as isize;
    (lo * size, hi * size)
}

/// PyTorch's non-overlapping and dense: a permutation of a contiguous layout.
fn is_dense(t: &Tensor) -> bool {
    t.is_contiguous() || t.layout().dense_order().is_some()
}
