//! Shape, signed strides and offset: every view op is a pure function from one `Layout` to
//! another, so views never touch the data.
use crate::bail;
use crate::error::Result;

/// Shape, signed strides and offset, in elements: where each logical element lies in storage.
///
/// ```
/// use ember_core::Layout;
/// let l = Layout::contiguous(&[2, 3]);
/// assert_eq!((l.strides(), l.is_contiguous()), (&[3isize, 1][..], true));
/// let t = l.transpose(0, 1);
/// assert_eq!((t.shape(), t.strides(), t.is_contiguous()), (&[3usize, 2][..], &[1isize, 3][..], false));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    shape: Vec<usize>,
    strides: Vec<isize>,
    offset: usize,
}

/// Wraps a possibly negative dim into `0..ndim` (PyTorch's `maybe_wrap_dim`).
pub fn wrap_dim(dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    if dim < -n || dim >= n {
        bail!(Index, "Dimension out of range (expected to be in range of [{}, {}], but got {dim})", -n, n - 1);
    }
    Ok(if dim < 0 { (dim + n) as usize } else { dim as usize })
}

/// Row-major strides for `shape`, in elements (size-0 dims count as 1).
pub fn contiguous_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc = 1isize;
    for i in (0..shape.len()).rev() {
        strides[i] = acc;
        acc *= shape[i].max(1) as isize;
    }
    strides
}

/// The element count of `shape` (unchecked: see `checked_numel` for user input).
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The element count of a shape built from user input, refusing counts whose bytes at
/// `elem_size` would not fit an `isize` (PyTorch's storage size check): every size a new
/// storage or a new view's shape comes from passes through here, so no later product of these
/// dims can wrap.
pub fn checked_numel(shape: &[usize], elem_size: usize) -> Result<usize> {
    if shape.contains(&0) {
        return Ok(0);
    }
    let n = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    n.filter(|n| n.checked_mul(elem_size.max(1)).is_some_and(|b| b <= isize::MAX as usize)).ok_or_else(|| size_overflow(shape))
}

/// PyTorch's error for sizes whose product (or a size computed from them) does not fit.
pub fn size_overflow(sizes: &(impl std::fmt::Debug + ?Sized)) -> crate::error::Error {
    crate::error::Error::new(crate::error::ErrorKind::Runtime, format!("Storage size calculation overflowed with sizes={sizes:?}"))
}

/// The NumPy/PyTorch broadcast of two shapes.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => bail!(
                Runtime,
                "The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton dimension {i}; shapes {a:?} and {b:?} are not broadcastable"
            ),
        };
    }
    Ok(out)
}

/// Resolves a single `-1` in a requested shape against `numel`.
pub fn infer_shape(shape: &[i64], numel: usize) -> Result<Vec<usize>> {
    let mut infer = None;
    let mut known = 1usize;
    for (i, &d) in shape.iter().enumerate() {
        match d {
            -1 if infer.is_none() => infer = Some(i),
            -1 => bail!(Runtime, "only one dimension can be inferred"),
            d if d < 0 => bail!(Runtime, "invalid shape dimension {d}"),
            d => known *= d as usize,
        }
    }
    let mut out: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
    match infer {
        Some(i) if known != 0 && numel % known == 0 => out[i] = numel / known,
        None if known == numel => {}
        _ => bail!(Runtime, "shape '{shape:?}' is invalid for input of size {numel}"),
    }
    Ok(out)
}

impl Layout {
    /// The row-major layout of `shape` at offset 0.
    pub fn contiguous(shape: &[usize]) -> Self {
        Layout { strides: contiguous_strides(shape), shape: shape.to_vec(), offset: 0 }
    }

    /// A layout as given (`shape` and `strides` of equal length; not checked against a storage).
    pub fn new(shape: Vec<usize>, strides: Vec<isize>, offset: usize) -> Self {
        debug_assert_eq!(shape.len(), strides.len());
        Layout { shape, strides, offset }
    }

    /// The sizes of the dims.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }
    /// The step between neighbours along each dim, in elements.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }
    /// Where logical element 0 lies, in elements from the storage's start.
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// The number of dims.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }
    /// The number of elements.
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }

    /// Row-major contiguous (size-1 dims may have any stride, as in PyTorch).
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1isize;
        for i in (0..self.ndim()).rev() {
            if self.shape[i] != 1 {
                if self.strides[i] != expected {
                    return false;
                }
                expected *= self.shape[i] as isize;
            }
        }
        true
    }

    /// For a permuted-but-dense layout (a transpose of a contiguous tensor, say), the dims from
    /// outermost to innermost in memory; `None` when contiguous already or not dense (gaps,
    /// overlaps, negative or broadcast strides).
    /// A layout that is contiguous only because its size-1 dims' strides do not count (PyTorch's
    /// channels-last `[N, 1, H, W]`) still has an order, which results keep as PyTorch's do.
    pub fn dense_order(&self) -> Option<Vec<usize>> {
        if self.strides == contiguous_strides(&self.shape) || self.strides.iter().any(|&s| s <= 0) {
            return None;
        }
        let mut order: Vec<usize> = (0..self.ndim()).collect();
        order.sort_by_key(|&d| std::cmp::Reverse((self.strides[d], self.shape[d])));
        let mut expected = 1isize;
        for &d in order.iter().rev() {
            if self.shape[d] != 1 && self.strides[d] != expected {
                return None;
            }
            expected *= self.shape[d] as isize;
        }
        Some(order)
    }

    /// The lowest and one-past-highest element offsets touched, for bounds checks. The layout
    /// may come from user input (`as_strided`, a DLPack producer), so the arithmetic is checked.
    pub fn span(&self) -> Result<(isize, isize)> {
        if self.shape.contains(&0) {
            return Ok((self.offset as isize, self.offset as isize));
        }
        let (mut lo, mut hi) = (Some(self.offset as i128), Some(self.offset as i128 + 1));
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            let reach = (d as i128 - 1) * s as i128; // < 2^64 * 2^63: no overflow in i128
            if reach < 0 {
                lo = lo.and_then(|l| l.checked_add(reach));
            } else {
                hi = hi.and_then(|h| h.checked_add(reach));
            }
        }
        let fits = |v: i128| isize::try_from(v).ok();
        match (lo.and_then(fits), hi.and_then(fits)) {
            (Some(lo), Some(hi)) if hi.checked_sub(lo).is_some() => Ok((lo, hi)),
            _ => bail!(Runtime, "sizes {:?} with strides {:?} overflow the address space", self.shape, self.strides),
        }
    }

    /// The dims reordered (`dims[i]` becomes dim `i`); an error unless `dims` is a permutation.
    pub fn permute(&self, dims: &[usize]) -> Result<Layout> {
        let n = self.ndim();
        let mut seen = vec![false; n];
        if dims.len() != n {
            bail!(Runtime, "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to len(dims) = {}", dims.len());
        }
        for &d in dims {
            if d >= n || std::mem::replace(&mut seen[d], true) {
                bail!(Runtime, "permute(): duplicate or out-of-range dims {dims:?} for a tensor with {n} dims");
            }
        }
        Ok(Layout {
            shape: dims.iter().map(|&d| self.shape[d]).collect(),
            strides: dims.iter().map(|&d| self.strides[d]).collect(),
            offset: self.offset,
        })
    }

    /// `d0` and `d1` swapped (both must be in range).
    pub fn transpose(&self, d0: usize, d1: usize) -> Layout {
        let mut l = self.clone();
        l.shape.swap(d0, d1);
        l.strides.swap(d0, d1);
        l
    }

    /// `start..start+len` along `dim` taking every `step`-th element.
    pub fn slice(&self, dim: usize, start: usize, len: usize, step: usize) -> Layout {
        let mut l = self.clone();
        if len > 0 {
            l.offset = (self.offset as isize + start as isize * self.strides[dim]) as usize;
        }
        l.shape[dim] = len;
        l.strides[dim] *= step as isize;
        l
    }

    /// Element `index` along `dim`, that dim removed (both must be in range).
    pub fn select(&self, dim: usize, index: usize) -> Layout {
        let mut l = self.slice(dim, index, 1, 1);
        l.shape.remove(dim);
        l.strides.remove(dim);
        l
    }

    /// A size-1 dim inserted at `dim` (`0..=ndim`).
    pub fn unsqueeze(&self, dim: usize) -> Layout {
        let mut l = self.clone();
        let stride = if dim < self.ndim() { self.strides[dim] * self.shape[dim] as isize } else { 1 };
        l.shape.insert(dim, 1);
        l.strides.insert(dim, stride);
        l
    }

    /// The size-1 dims among `dims` removed; others are kept.
    pub fn squeeze(&self, dims: &[usize]) -> Layout {
        let keep = |i: &usize| !(self.shape[*i] == 1 && dims.contains(i));
        let idx: Vec<usize> = (0..self.ndim()).filter(keep).collect();
        Layout {
            shape: idx.iter().map(|&i| self.shape[i]).collect(),
            strides: idx.iter().map(|&i| self.strides[i]).collect(),
            offset: self.offset,
        }
    }

    /// A stride-0 view with `shape` (trailing-aligned, NumPy rules).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Layout> {
        if shape.len() < self.ndim() {
            bail!(Runtime, "the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})", shape.len(), self.ndim());
        }
        let lead = shape.len() - self.ndim();
        let mut strides = vec![0isize; shape.len()];
        for i in 0..self.ndim() {
            let (have, want) = (self.shape[i], shape[lead + i]);
            strides[lead + i] = if have == want {
                self.strides[i]
            } else if have == 1 {
                0
            } else {
                bail!(Runtime, "The expanded size of the tensor ({want}) must match the existing size ({have}) at non-singleton dimension {}.  Target sizes: {shape:?}.  Tensor sizes: {:?}", lead + i, self.shape);
            };
        }
        checked_numel(shape, 1)?;
        Ok(Layout { shape: shape.to_vec(), strides, offset: self.offset })
    }

    /// The order of `dims` reversed, by negating their strides.
    pub fn flip(&self, dims: &[usize]) -> Layout {
        let mut l = self.clone();
        for &d in dims {
            if l.shape[d] > 0 {
                l.offset = (l.offset as isize + (l.shape[d] as isize - 1) * l.strides[d]) as usize;
            }
            l.strides[d] = -l.strides[d];
        }
        l
    }

    /// The diagonal of the `d1`, `d2` plane (above it for `offset > 0`), as a new last dim.
    pub fn diagonal(&self, offset: i64, d1: usize, d2: usize) -> Layout {
        let (n1, n2) = (self.shape[d1] as i64, self.shape[d2] as i64);
        let len = if offset >= 0 { (n1).min(n2 - offset) } else { (n1 + offset).min(n2) }.max(0) as usize;
        let mut start = self.offset as isize;
        if len > 0 {
            start += if offset >= 0 { offset as isize * self.strides[d2] } else { -offset as isize * self.strides[d1] };
        }
        let diag_stride = self.strides[d1] + self.strides[d2];
        let (mut shape, mut strides) = (vec![], vec![]);
        for i in (0..self.ndim()).filter(|&i| i != d1 && i != d2) {
            shape.push(self.shape[i]);
            strides.push(self.strides[i]);
        }
        shape.push(len);
        strides.push(diag_stride);
        Layout { shape, strides, offset: start.max(0) as usize }
    }

    /// Sliding windows of `size` every `step` along `dim`, as a new last dim.
    pub fn unfold(&self, dim: usize, size: usize, step: usize) -> Result<Layout> {
        let n = self.shape.get(dim).copied().unwrap_or(1);
        if size > n {
            bail!(Runtime, "maximum size for tensor at dimension {dim} is {n} but size is {size}");
        }
        if step == 0 {
            bail!(Runtime, "step is {step} but must be > 0");
        }
        let mut l = self.clone();
        let inner = self.strides.get(dim).copied().unwrap_or(1);
        if self.ndim() == 0 {
            l.shape = vec![size];
            l.strides = vec![1];
            return Ok(l);
        }
        l.shape[dim] = (n - size) / step + 1;
        l.strides[dim] *= step as isize;
        l.shape.push(size);
        l.strides.push(inner);
        Ok(l)
    }

    /// Strides for viewing this layout as `shape` without moving data, if possible. Walks the old
    /// dims from the innermost outwards in "chunks" of dims that are contiguous with each other;
    /// each chunk must be covered exactly by a run of new dims.
    pub fn view(&self, shape: &[usize]) -> Option<Layout> {
        if self.numel() == 0 || self.ndim() == 0 {
            return Some(Layout { offset: self.offset, ..Layout::contiguous(shape) });
        }
        let mut strides = vec![0isize; shape.len()];
        let mut next_new = shape.len();
        let mut base = *self.strides.last().unwrap();
        let (mut chunk_old, mut chunk_new) = (1usize, 1usize);
        for d in (0..self.ndim()).rev() {
            chunk_old *= self.shape[d];
            let chunk_ends = d == 0
                || (self.shape[d - 1] != 1 && self.strides[d - 1] != chunk_old as isize * base);
            if !chunk_ends {
                continue;
            }
            while next_new > 0 && (chunk_new < chunk_old || shape[next_new - 1] == 1) {
                next_new -= 1;
                strides[next_new] = chunk_new as isize * base;
                chunk_new *= shape[next_new];
            }
            if chunk_new != chunk_old {
                return None;
            }
            if d > 0 {
                base = self.strides[d - 1];
                chunk_old = 1;
                chunk_new = 1;
            }
        }
        (next_new == 0).then(|| Layout { shape: shape.to_vec(), strides, offset: self.offset })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_and_byte_counts_that_overflow_are_errors() {
        assert_eq!(checked_numel(&[2, 3, 4], 8).unwrap(), 24);
        assert_eq!(checked_numel(&[usize::MAX, 2, 0], 8).unwrap(), 0);
        for (shape, size) in [(&[1usize << 62][..], 4), (&[1 << 32, 1 << 32][..], 1), (&[1 << 40, 1 << 40][..], 1)] {
            let err = checked_numel(shape, size).unwrap_err();
            assert!(err.message.starts_with("Storage size calculation overflowed with sizes="), "{}", err.message);
        }
        assert!(Layout::contiguous(&[4]).broadcast_to(&[1 << 62, 4]).is_err());
        assert!(Layout::new(vec![1 << 62, 4], vec![1 << 62, 1], 0).span().is_err());
        assert_eq!(Layout::new(vec![3, 4], vec![-4, 1], 8).span().unwrap(), (0, 12));
    }

    #[test]
    fn views_share_offsets() {
        let l = Layout::contiguous(&[2, 3, 4]);
        assert!(l.is_contiguous());
        let t = l.transpose(0, 2);
        assert_eq!(t.strides(), &[1, 4, 12]);
        assert!(!t.is_contiguous());
        let f = l.flip(&[2]);
        assert_eq!((f.offset(), f.strides()[2]), (3, -1));
        assert_eq!(l.diagonal(0, 1, 2).shape(), &[2, 3]);
        assert_eq!(l.unfold(2, 2, 1).unwrap().shape(), &[2, 3, 3, 2]);
    }

    #[test]
    fn view_of_non_contiguous() {
        let l = Layout::contiguous(&[4, 6]).slice(1, 0, 3, 2); // every other column: uniform stride 2
        assert_eq!(l.view(&[12]).unwrap().strides(), &[2]);
        let l = Layout::contiguous(&[4, 6]).slice(1, 0, 3, 1); // first half of each row
        assert!(l.view(&[12]).is_none());
        assert_eq!(l.view(&[2, 2, 3]).unwrap().strides(), &[12, 6, 1]);
        let t = Layout::contiguous(&[2, 3, 4]).transpose(0, 1); // [3,2,4] strides [4,12,1]
        assert!(t.view(&[3, 8]).is_none());
        assert_eq!(t.view(&[3, 2, 2, 2]).unwrap().strides(), &[4, 12, 2, 1]);
    }

    #[test]
    fn dense_order_of_permutations() {
        let l = Layout::contiguous(&[2, 3, 4]);
        assert_eq!(l.dense_order(), None);
        assert_eq!(l.permute(&[2, 0, 1]).unwrap().dense_order(), Some(vec![1, 2, 0]));
        assert_eq!(l.slice(2, 0, 2, 2).transpose(0, 1).dense_order(), None); // gaps
        assert_eq!(l.flip(&[0]).transpose(0, 1).dense_order(), None);
    }

    #[test]
    fn broadcast_and_infer() {
        assert_eq!(broadcast_shapes(&[3, 1], &[4]).unwrap(), vec![3, 4]);
        assert!(broadcast_shapes(&[3], &[4]).is_err());
        assert_eq!(infer_shape(&[-1, 4], 12).unwrap(), vec![3, 4]);
        assert!(infer_shape(&[-1, 5], 12).is_err());
    }
}
