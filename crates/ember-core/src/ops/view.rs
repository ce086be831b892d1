//! Views: each is a new layout over the same storage (no data moves), and each states its
//! derivative. A view's gradient puts the view's gradient back where its elements came from:
//! a reshape or permutation undone, a broadcast summed down, a selection scattered into zeros.
use crate::autograd::{self, LinearFn};
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::{self, wrap_dim, Layout};
use crate::ops::binary::{binary_out, BinaryOp, Operand};
use crate::ops::reduce::sum_to;
use crate::tensor::Tensor;
use std::sync::Arc;

fn dims_i64(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&d| d as i64).collect()
}

impl Tensor {
    /// The view with `layout`, recorded with `back` mapping its gradient to this tensor's.
    fn view_with(&self, name: &'static str, layout: Layout, back: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static) -> Result<Tensor> {
        let out = self.with_layout(layout);
        if autograd::needs_grad(&[self]) {
            autograd::record(name, &[self], &[&out], &[], move |_, g| Ok(vec![Some(back(&g[0])?)]))?;
        }
        Ok(out)
    }

    /// A view picking some of this tensor's elements by the logical layout map `pick` (select,
    /// slice, diagonal). Its gradient writes the view's gradient into zeros through the same
    /// map: a linear map whose own derivative is the view again.
    fn picking_view(&self, names: [&'static str; 2], pick: impl Fn(&Layout) -> Layout + Send + Sync + 'static) -> Result<Tensor> {
        let shape = self.shape().to_vec();
        let pick = Arc::new(pick);
        let p = pick.clone();
        let map: LinearFn = Arc::new(move |t: &Tensor| Ok(t.with_layout(p(t.layout()))));
        let adjoint: LinearFn = Arc::new(move |g: &Tensor| {
            let z = Tensor::zeros(&shape, g.dtype())?;
            z.with_layout(pick(z.layout())).copy_(g)?;
            Ok(z)
        });
        autograd::linear(names, self, map, adjoint)
    }

    /// `reshape`: a view when the strides allow, else a contiguous copy; one dim may be -1.
    pub fn reshape(&self, shape: &[i64]) -> Result<Tensor> {
        let shape = layout::infer_shape(shape, self.numel())?;
        match self.layout().view(&shape) {
            Some(l) => self.view_with("ViewBackward0", l, unreshape(self.shape())),
            None => {
                // Not expressible as a view: a contiguous copy, seen in the new shape.
                let c = self.contiguous()?;
                let out = c.relayout(Layout::contiguous(&shape));
                if autograd::needs_grad(&[&c]) {
                    let back = unreshape(c.shape());
                    autograd::record("UnsafeViewBackward0", &[&c], &[&out], &[], move |_, g| Ok(vec![Some(back(&g[0])?)]))?;
                }
                Ok(out)
            }
        }
    }

    /// `view`: the same data in `shape` (one dim may be -1); an error where no view can express it.
    pub fn view(&self, shape: &[i64]) -> Result<Tensor> {
        let shape = layout::infer_shape(shape, self.numel())?;
        match self.layout().view(&shape) {
            Some(l) => self.view_with("ViewBackward0", l, unreshape(self.shape())),
            None => bail!(Runtime, "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."),
        }
    }

    /// `view(dtype)`: the same bytes read as `dtype` (PyTorch's rules). With equal element
    /// sizes every dim stays; otherwise the last dim must have stride 1 and is rescaled by the
    /// size ratio, and going to a wider dtype also needs the last dim's size, the other strides
    /// and the storage offset divisible by the ratio. Not differentiable (a bit pattern has no
    /// derivative), so the result never requires grad.
    pub fn view_dtype(&self, dtype: DType) -> Result<Tensor> {
        let (from, to) = (self.dtype().size(), dtype.size());
        let names = format!("{} as {}", self.dtype().legacy_name(), dtype.legacy_name());
        if (self.dtype() == DType::Bool) != (dtype == DType::Bool) {
            // Rust reads a bool byte other than 0 or 1 as undefined behaviour, and a view would
            // let a write through either alias put one there.
            bail!(NotImplemented, "view({names}) is not supported in Ember: bool elements must stay 0 or 1, which a view of other bytes cannot promise; convert instead (x != 0, or x.to(dtype))");
        }
        let layout = if from == to {
            self.layout().clone()
        } else {
            self.rescaled_for_dtype(from, to, &names)?
        };
        let out = self.with_dtype_layout(dtype, layout);
        out.set_differentiable_view(false);
        // Complex elements are pairs: their alignment is half their size. Device allocations
        // are aligned far beyond that, so there the offset into the storage decides.
        let align = if dtype.is_complex() { to / 2 } else { to };
        let address = if out.device() == crate::Device::Cpu { out.byte_ptr() as usize } else { out.layout().offset() * to };
        if out.numel() > 0 && address % align != 0 {
            bail!(Runtime, "view({names}): the data at {address:#x} is not aligned to {align} bytes, as {} elements must be", dtype.legacy_name());
        }
        Ok(out)
    }

    /// The layout of `view(dtype)` between element sizes `from` and `to` (bytes), counted in
    /// the new elements.
    fn rescaled_for_dtype(&self, from: usize, to: usize, names: &str) -> Result<Layout> {
        let n = self.ndim();
        if n == 0 {
            bail!(Runtime, "self.dim() cannot be 0 to view {names} (different element sizes)");
        }
        let (shape, strides, offset) = (self.shape(), self.strides(), self.layout().offset());
        if strides[n - 1] != 1 {
            bail!(Runtime, "self.stride(-1) must be 1 to view {names} (different element sizes), but got {}", strides[n - 1]);
        }
        let (mut shape, mut strides) = (shape.to_vec(), strides.to_vec());
        if from > to {
            let ratio = from / to;
            strides[..n - 1].iter_mut().for_each(|s| *s *= ratio as isize);
            shape[n - 1] *= ratio;
            return Ok(Layout::new(shape, strides, offset * ratio));
        }
        let ratio = to / from;
        if shape[n - 1] % ratio != 0 {
            bail!(Runtime, "self.size(-1) must be divisible by {ratio} to view {names} (different element sizes), but got {}", shape[n - 1]);
        }
        if offset % ratio != 0 {
            bail!(Runtime, "self.storage_offset() must be divisible by {ratio} to view {names} (different element sizes), but got {offset}");
        }
        if let Some(d) = (0..n - 1).find(|&d| strides[d] % ratio as isize != 0) {
            bail!(Runtime, "self.stride({d}) must be divisible by {ratio} to view {names} (different element sizes), but got {}", strides[d]);
        }
        strides[..n - 1].iter_mut().for_each(|s| *s /= ratio as isize);
        shape[n - 1] /= ratio;
        Ok(Layout::new(shape, strides, offset / ratio))
    }

    /// `permute`: dim `dims[i]` becomes dim `i` (a view).
    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        let dims = dims.iter().map(|&d| self.wrap_dim(d)).collect::<Result<Vec<_>>>()?;
        let layout = self.layout().permute(&dims)?;
        let mut inverse = vec![0i64; dims.len()];
        for (i, &d) in dims.iter().enumerate() {
            inverse[d] = i as i64;
        }
        self.view_with("PermuteBackward0", layout, move |g| g.permute(&inverse))
    }

    /// `transpose`: dims `d0` and `d1` swapped (a view).
    pub fn transpose(&self, d0: i64, d1: i64) -> Result<Tensor> {
        let (a, b) = (self.wrap_dim(d0)?, self.wrap_dim(d1)?);
        if self.ndim() == 0 {
            return Ok(self.clone());
        }
        self.view_with("TransposeBackward0", self.layout().transpose(a, b), move |g| g.transpose(a as i64, b as i64))
    }

    /// `t()`: transpose of a matrix; 0-d and 1-d tensors are returned as they are.
    pub fn t(&self) -> Result<Tensor> {
        match self.ndim() {
            0 | 1 => Ok(self.clone()),
            2 => self.view_with("TBackward0", self.layout().transpose(0, 1), |g| g.t()),
            n => bail!(Runtime, "t() expects a tensor with <= 2 dimensions, but self is {n}D"),
        }
    }

    /// `narrow`: `length` elements from `start` (negative counts from the end) along `dim`, as a view.
    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            bail!(Runtime, "narrow() cannot be applied to a 0-dim tensor.");
        }
        let d = self.wrap_dim(dim)?;
        let size = self.shape()[d] as i64;
        let start = if start < 0 { start + size } else { start };
        if start < 0 || length < 0 || start.checked_add(length).is_none_or(|end| end > size) {
            bail!(Index, "start ({start}) + length ({length}) exceeds dimension size ({size}).");
        }
        self.picking_view(["SliceBackward0", "SliceBackwardBackward0"], move |l| l.slice(d, start as usize, length as usize, 1))
    }

    /// Python-style slice `start:stop:step` along `dim` (bounds clamped as Python does).
    pub fn slice(&self, dim: i64, start: Option<i64>, stop: Option<i64>, step: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            bail!(Index, "slice() cannot be applied to a 0-dim tensor.");
        }
        let d = self.wrap_dim(dim)?;
        if step <= 0 {
            bail!(Value, "slice step must be positive, got {step}");
        }
        let n = self.shape()[d] as i64;
        let clamp = |v: Option<i64>, default: i64| match v {
            None => default,
            Some(v) if v < 0 => (v + n).max(0),
            Some(v) => v.min(n),
        };
        let (s, e) = (clamp(start, 0), clamp(stop, n));
        let len = if e > s { (e - s - 1) / step + 1 } else { 0 };
        self.picking_view(["SliceBackward0", "SliceBackwardBackward0"], move |l| l.slice(d, s as usize, len as usize, step as usize))
    }

    /// `select`: element `index` (negative counts from the end) along `dim`, that dim removed (a view).
    pub fn select(&self, dim: i64, index: i64) -> Result<Tensor> {
        if self.ndim() == 0 {
            bail!(Index, "select() cannot be applied to a 0-dim tensor.");
        }
        let d = self.wrap_dim(dim)?;
        let n = self.shape()[d] as i64;
        let i = if index < 0 { index + n } else { index };
        if i < 0 || i >= n {
            bail!(Index, "index {index} is out of bounds for dimension {d} with size {n}");
        }
        self.picking_view(["SelectBackward0", "SelectBackwardBackward0"], move |l| l.select(d, i as usize))
    }

    /// `unsqueeze`: a size-1 dim inserted at `dim` (a view).
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim() + 1)?;
        self.view_with("UnsqueezeBackward0", self.layout().unsqueeze(d), unreshape(self.shape()))
    }

    /// `squeeze`: the size-1 dims among `dims` (all when `None`) removed (a view).
    pub fn squeeze(&self, dims: Option<&[i64]>) -> Result<Tensor> {
        let dims: Vec<usize> = match dims {
            None => (0..self.ndim()).collect(),
            Some(ds) => {
                let dims = ds.iter().map(|&d| self.wrap_dim(d)).collect::<Result<Vec<_>>>()?;
                if let Some(d) = dims.iter().enumerate().find_map(|(i, d)| dims[..i].contains(d).then_some(*d)) {
                    bail!(Runtime, "dim {d} appears multiple times in the list of dims");
                }
                dims
            }
        };
        self.view_with("SqueezeBackward0", self.layout().squeeze(&dims), unreshape(self.shape()))
    }

    /// `expand`: -1 keeps a dim; new leading dims may be added.
    pub fn expand(&self, shape: &[i64]) -> Result<Tensor> {
        let lead = shape.len() as isize - self.ndim() as isize;
        if lead < 0 {
            bail!(Runtime, "expand: the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})", shape.len(), self.ndim());
        }
        let mut target = Vec::with_capacity(shape.len());
        for (i, &s) in shape.iter().enumerate() {
            target.push(match s {
                -1 if (i as isize) < lead => bail!(Runtime, "expand: -1 is not allowed in a leading, non-existing dimension {i}"),
                -1 => self.shape()[i - lead as usize],
                s if s < 0 => bail!(Runtime, "expand: invalid size {s} at dim {i}"),
                s => s as usize,
            });
        }
        self.broadcast_to(&target)
    }

    /// `broadcast_to`: a stride-0 view with `shape` (NumPy's rules).
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        let layout = self.layout().broadcast_to(shape)?;
        if layout == *self.layout() {
            return Ok(self.clone());
        }
        let own = self.shape().to_vec();
        self.view_with("ExpandBackward0", layout, move |g| sum_to(g, &own))
    }

    /// `flip`: the order along `dims` reversed, as a view with negative strides (PyTorch copies).
    pub fn flip(&self, dims: &[i64]) -> Result<Tensor> {
        let dims = dims.iter().map(|&d| self.wrap_dim(d)).collect::<Result<Vec<_>>>()?;
        if let Some(d) = dims.iter().enumerate().find_map(|(i, d)| dims[..i].contains(d).then_some(d)) {
            bail!(Runtime, "dim {d} appears multiple times in the list of dims");
        }
        if self.ndim() == 0 {
            return Ok(self.clone());
        }
        let again: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        self.view_with("FlipBackward0", self.layout().flip(&dims), move |g| g.flip(&again))
    }

    /// `diagonal`: the diagonal of the `dim1`, `dim2` plane (above it for `offset > 0`), as a new
    /// last dim (a view).
    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        let (a, b) = (self.wrap_dim(dim1)?, self.wrap_dim(dim2)?);
        if a == b {
            bail!(Runtime, "diagonal dimensions cannot be identical {dim1}, {dim2}");
        }
        self.picking_view(["DiagonalBackward0", "DiagonalBackwardBackward0"], move |l| l.diagonal(offset, a, b))
    }

    /// Sliding windows of `size` every `step` along `dim`, as a new last dim. Windows overlap
    /// when `step < size`, so the gradient adds each window position's slice in turn.
    pub fn unfold(&self, dim: i64, size: usize, step: usize) -> Result<Tensor> {
        let d = self.wrap_dim(dim)?;
        let layout = self.layout().unfold(d, size, step)?;
        if !autograd::needs_grad(&[self]) {
            return Ok(self.with_layout(layout));
        }
        let shape = self.shape().to_vec();
        let map: LinearFn = Arc::new(move |t: &Tensor| Ok(t.with_layout(t.layout().unfold(d, size, step)?)));
        let adjoint: LinearFn = Arc::new(move |g: &Tensor| {
            let z = Tensor::zeros(&shape, g.dtype())?;
            if z.ndim() == 0 {
                z.copy_(&g.reshape(&[])?)?;
                return Ok(z);
            }
            let windows = g.shape()[d];
            for k in 0..size {
                let part = z.with_layout(z.layout().slice(d, k, windows, step));
                let gk = g.with_layout(g.layout().select(g.ndim() - 1, k));
                binary_out(BinaryOp::Add, Operand::Tensor(&part), Operand::Tensor(&gk), &part)?;
            }
            Ok(z)
        });
        autograd::linear(["UnfoldBackward0", "UnfoldBackwardBackward0"], self, map, adjoint)
    }

    /// `as_strided`, refused when it would reach outside the storage. Its gradient maps each
    /// view element back to the element of this tensor at the same memory address (this
    /// tensor's own elements must not overlap).
    pub fn as_strided(&self, shape: &[usize], strides: &[isize], offset: Option<usize>) -> Result<Tensor> {
        if shape.len() != strides.len() {
            bail!(Runtime, "mismatch in length of strides and shape: {} vs {}", strides.len(), shape.len());
        }
        let offset = offset.unwrap_or(self.layout().offset());
        crate::layout::checked_numel(shape, 1)?;
        let l = Layout::new(shape.to_vec(), strides.to_vec(), offset);
        let (lo, hi) = l.span()?;
        let available = self.storage().bytes() / self.dtype().size();
        if lo < 0 || hi as usize > available {
            bail!(Runtime, "setStorage: sizes {shape:?}, strides {strides:?}, storage offset {offset} require a storage of {hi} elements but it holds {available}");
        }
        let out = self.with_layout(l);
        if autograd::needs_grad(&[self]) {
            let idx = Arc::new(address_map(self.layout(), out.layout())?);
            let own = self.shape().to_vec();
            autograd::record("AsStridedBackward0", &[self], &[&out], &[], move |_, g| {
                Ok(vec![Some(crate::ops::index::take_adjoint(&g[0], &idx, &own)?)])
            })?;
        }
        Ok(out)
    }
}

/// `g.reshape(shape)`, the derivative of every shape-only view.
fn unreshape(shape: &[usize]) -> impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static {
    let shape = dims_i64(shape);
    move |g| g.reshape(&shape)
}

/// For each element of `view`, the flat index of the element of `base` at the same address.
pub(crate) fn address_map(base: &Layout, view: &Layout) -> Result<Tensor> {
    let (lo, hi) = base.span()?;
    let mut at = vec![-1i64; (hi - lo).max(0) as usize];
    for (flat, off) in offsets(base).into_iter().enumerate() {
        let slot = &mut at[(off - lo) as usize];
        if *slot >= 0 {
            bail!(Runtime, "as_strided: the derivative is not implemented for an input whose elements overlap in memory");
        }
        *slot = flat as i64;
    }
    let idx = offsets(view)
        .into_iter()
        .map(|off| match at.get((off - lo) as usize) {
            Some(&i) if off >= lo && i >= 0 => Ok(i),
            _ => bail!(Runtime, "as_strided: the derivative is not implemented for a view that reads memory outside its input"),
        })
        .collect::<Result<Vec<i64>>>()?;
    Tensor::from_vec(idx, view.shape())
}

/// Element offsets of a layout in logical order.
fn offsets(l: &Layout) -> Vec<isize> {
    let n = l.numel();
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; l.ndim()];
    for _ in 0..n {
        out.push(l.offset() as isize + idx.iter().zip(l.strides()).map(|(&i, &s)| i as isize * s).sum::<isize>());
        for d in (0..idx.len()).rev() {
            idx[d] += 1;
            if idx[d] < l.shape()[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    out
}
