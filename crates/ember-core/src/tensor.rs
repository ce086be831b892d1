//! `Tensor`: a cheap-to-clone handle on shared storage plus a layout. Everything here is a view
//! (no data moves) except `contiguous`, `copy_` and `to_dtype`.
use crate::bail;
use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::layout::{self, wrap_dim, Layout};
use crate::storage::{CpuStorage, Storage};
use crate::with_dtype;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Clone)]
pub struct Tensor(Arc<Inner>);

pub struct Inner {
    storage: Arc<Storage>,
    layout: Layout,
    dtype: DType,
    /// Bumped by every in-place write through any view of the storage.
    version: Arc<AtomicU64>,
}

impl Tensor {
    pub fn from_parts(storage: Arc<Storage>, layout: Layout, dtype: DType) -> Self {
        Tensor(Arc::new(Inner { storage, layout, dtype, version: Arc::new(AtomicU64::new(0)) }))
    }

    /// A view sharing this tensor's storage (and version counter) with another layout.
    pub fn with_layout(&self, layout: Layout) -> Self {
        Tensor(Arc::new(Inner {
            storage: self.0.storage.clone(),
            layout,
            dtype: self.0.dtype,
            version: self.0.version.clone(),
        }))
    }

    /// A fresh contiguous tensor whose contents the caller must overwrite entirely.
    pub fn uninit(shape: &[usize], dtype: DType) -> Self {
        let bytes = layout::numel(shape) * dtype.size();
        Self::from_parts(Arc::new(Storage::Cpu(CpuStorage::uninit(bytes))), Layout::contiguous(shape), dtype)
    }

    /// A fresh tensor of `shape` laid out in memory in the same dim order as `like` when `like`
    /// is dense (as PyTorch keeps an input's memory format in elementwise results), so that
    /// every operand of the op streams through memory in the same order.
    pub fn uninit_like(shape: &[usize], dtype: DType, like: Option<&Tensor>) -> Self {
        let Some(order) = like.filter(|l| l.shape() == shape).and_then(|l| l.layout().dense_order()) else {
            return Self::uninit(shape, dtype);
        };
        let permuted: Vec<usize> = order.iter().map(|&d| shape[d]).collect();
        let mut inverse = vec![0; order.len()];
        for (i, &d) in order.iter().enumerate() {
            inverse[d] = i;
        }
        let t = Self::uninit(&permuted, dtype);
        let layout = t.layout().permute(&inverse).expect("inverse of a permutation");
        t.with_layout(layout)
    }

    pub fn zeros(shape: &[usize], dtype: DType) -> Self {
        let bytes = layout::numel(shape) * dtype.size();
        Self::from_parts(Arc::new(Storage::Cpu(CpuStorage::zeroed(bytes))), Layout::contiguous(shape), dtype)
    }

    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Self> {
        if data.len() != layout::numel(shape) {
            bail!(Runtime, "shape {shape:?} needs {} elements but {} were given", layout::numel(shape), data.len());
        }
        let t = Self::uninit(shape, T::DTYPE);
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), t.data_ptr::<T>(), data.len()) };
        Ok(t)
    }

    pub fn scalar<T: Element>(v: T) -> Self {
        Self::from_vec(vec![v], &[]).unwrap()
    }

    pub fn storage(&self) -> &Arc<Storage> {
        &self.0.storage
    }
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    pub fn device(&self) -> Device {
        self.0.storage.device()
    }
    pub fn shape(&self) -> &[usize] {
        self.0.layout.shape()
    }
    pub fn strides(&self) -> &[isize] {
        self.0.layout.strides()
    }
    pub fn ndim(&self) -> usize {
        self.0.layout.ndim()
    }
    pub fn numel(&self) -> usize {
        self.0.layout.numel()
    }
    pub fn is_contiguous(&self) -> bool {
        self.0.layout.is_contiguous()
    }
    pub fn version(&self) -> u64 {
        self.0.version.load(Ordering::Relaxed)
    }
    pub fn bump_version(&self) {
        self.0.version.fetch_add(1, Ordering::Relaxed);
    }
    pub fn same_storage(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0.storage, &other.0.storage)
    }

    /// Pointer to the element at logical index 0 (typed; `T` must match the dtype).
    pub fn data_ptr<T: Element>(&self) -> *mut T {
        debug_assert_eq!(T::DTYPE, self.dtype());
        self.byte_ptr() as *mut T
    }

    pub fn byte_ptr(&self) -> *mut u8 {
        let base = self.0.storage.cpu().as_ptr();
        unsafe { base.add(self.0.layout.offset() * self.0.dtype.size()) }
    }

    /// The elements in logical (row-major) order.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            bail!(Type, "to_vec: expected dtype {} but the tensor is {}", T::DTYPE, self.dtype());
        }
        let c = self.contiguous();
        let n = c.numel();
        let mut v = Vec::with_capacity(n);
        unsafe {
            std::ptr::copy_nonoverlapping(c.data_ptr::<T>(), v.as_mut_ptr(), n);
            v.set_len(n);
        }
        Ok(v)
    }

    /// The single value of a one-element tensor, as f64.
    pub fn item_f64(&self) -> Result<f64> {
        if self.numel() != 1 {
            bail!(Runtime, "a Tensor with {} elements cannot be converted to Scalar", self.numel());
        }
        Ok(with_dtype!(self.dtype(), T, unsafe { (*self.data_ptr::<T>()).to_f64() }))
    }

    pub fn wrap_dim(&self, dim: i64) -> Result<usize> {
        wrap_dim(dim, self.ndim())
    }

    // ---- views ----

    pub fn reshape(&self, shape: &[i64]) -> Result<Tensor> {
        let shape = layout::infer_shape(shape, self.numel())?;
        Ok(match self.layout().view(&shape) {
            Some(l) => self.with_layout(l),
            None => self.contiguous().with_layout(Layout::contiguous(&shape)),
        })
    }

    pub fn view(&self, shape: &[i64]) -> Result<Tensor> {
        let shape = layout::infer_shape(shape, self.numel())?;
        match self.layout().view(&shape) {
            Some(l) => Ok(self.with_layout(l)),
            None => bail!(Runtime, "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."),
        }
    }

    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        let dims = dims.iter().map(|&d| self.wrap_dim(d)).collect::<Result<Vec<_>>>()?;
        Ok(self.with_layout(self.layout().permute(&dims)?))
    }

    pub fn transpose(&self, d0: i64, d1: i64) -> Result<Tensor> {
        let (a, b) = (self.wrap_dim(d0)?, self.wrap_dim(d1)?);
        if self.ndim() == 0 {
            return Ok(self.clone());
        }
        Ok(self.with_layout(self.layout().transpose(a, b)))
    }

    /// `t()`: transpose of a matrix; 0-d and 1-d tensors are returned as they are.
    pub fn t(&self) -> Result<Tensor> {
        match self.ndim() {
            0 | 1 => Ok(self.clone()),
            2 => self.transpose(0, 1),
            n => bail!(Runtime, "t() expects a tensor with <= 2 dimensions, but self is {n}D"),
        }
    }

    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> Result<Tensor> {
        let d = self.wrap_dim(dim)?;
        let size = self.shape()[d] as i64;
        let start = if start < 0 { start + size } else { start };
        if start < 0 || length < 0 || start + length > size {
            bail!(Index, "start ({start}) + length ({length}) exceeds dimension size ({size}).");
        }
        Ok(self.with_layout(self.layout().slice(d, start as usize, length as usize, 1)))
    }

    /// Python-style slice `start:stop:step` along `dim` (bounds clamped as Python does).
    pub fn slice(&self, dim: i64, start: Option<i64>, stop: Option<i64>, step: i64) -> Result<Tensor> {
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
        let len = if e > s { (e - s + step - 1) / step } else { 0 };
        Ok(self.with_layout(self.layout().slice(d, s as usize, len as usize, step as usize)))
    }

    pub fn select(&self, dim: i64, index: i64) -> Result<Tensor> {
        let d = self.wrap_dim(dim)?;
        let n = self.shape()[d] as i64;
        let i = if index < 0 { index + n } else { index };
        if i < 0 || i >= n {
            bail!(Index, "index {index} is out of bounds for dimension {d} with size {n}");
        }
        Ok(self.with_layout(self.layout().select(d, i as usize)))
    }

    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        let d = wrap_dim(dim, self.ndim() + 1)?;
        Ok(self.with_layout(self.layout().unsqueeze(d)))
    }

    pub fn squeeze(&self, dims: Option<&[i64]>) -> Result<Tensor> {
        let dims: Vec<usize> = match dims {
            None => (0..self.ndim()).collect(),
            Some(ds) => ds.iter().map(|&d| self.wrap_dim(d)).collect::<Result<_>>()?,
        };
        Ok(self.with_layout(self.layout().squeeze(&dims)))
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
        Ok(self.with_layout(self.layout().broadcast_to(&target)?))
    }

    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        Ok(self.with_layout(self.layout().broadcast_to(shape)?))
    }

    pub fn flip(&self, dims: &[i64]) -> Result<Tensor> {
        let dims = dims.iter().map(|&d| self.wrap_dim(d)).collect::<Result<Vec<_>>>()?;
        Ok(self.with_layout(self.layout().flip(&dims)))
    }

    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        let (a, b) = (self.wrap_dim(dim1)?, self.wrap_dim(dim2)?);
        if a == b {
            bail!(Runtime, "diagonal dimensions cannot be identical {dim1}, {dim2}");
        }
        Ok(self.with_layout(self.layout().diagonal(offset, a, b)))
    }

    pub fn unfold(&self, dim: i64, size: usize, step: usize) -> Result<Tensor> {
        let d = self.wrap_dim(dim)?;
        Ok(self.with_layout(self.layout().unfold(d, size, step)?))
    }

    /// `as_strided`, refused when it would reach outside the storage.
    pub fn as_strided(&self, shape: &[usize], strides: &[isize], offset: Option<usize>) -> Result<Tensor> {
        if shape.len() != strides.len() {
            bail!(Runtime, "mismatch in length of strides and shape: {} vs {}", strides.len(), shape.len());
        }
        let offset = offset.unwrap_or(self.layout().offset());
        let l = Layout::new(shape.to_vec(), strides.to_vec(), offset);
        let (lo, hi) = l.span();
        let available = self.storage().cpu().bytes() / self.dtype().size();
        if lo < 0 || hi as usize > available {
            bail!(Runtime, "setStorage: sizes {shape:?}, strides {strides:?}, storage offset {offset} require a storage of {hi} elements but it holds {available}");
        }
        Ok(self.with_layout(l))
    }

    // ---- data movement ----

    pub fn contiguous(&self) -> Tensor {
        if self.is_contiguous() {
            return self.clone();
        }
        let out = Tensor::uninit(self.shape(), self.dtype());
        out.copy_from_unchecked(self);
        out
    }

    /// A fresh contiguous copy, always (PyTorch's `clone`).
    pub fn deep_clone(&self) -> Tensor {
        let out = Tensor::uninit_like(self.shape(), self.dtype(), Some(self));
        out.copy_from_unchecked(self);
        out
    }

    pub fn to_dtype(&self, dtype: DType) -> Tensor {
        if dtype == self.dtype() {
            return self.clone();
        }
        let out = Tensor::uninit_like(self.shape(), dtype, Some(self));
        out.copy_from_unchecked(self);
        out
    }

    /// `self.copy_(src)`: broadcasts `src` and casts it to this tensor's dtype.
    pub fn copy_(&self, src: &Tensor) -> Result<()> {
        let src = src.broadcast_to(self.shape())?;
        self.copy_from_unchecked(&src);
        self.bump_version();
        Ok(())
    }

    fn copy_from_unchecked(&self, src: &Tensor) {
        with_dtype!(self.dtype(), O, with_dtype!(src.dtype(), I, {
            crate::ops::map::unary_into::<I, O>(src, self, |x| cast::<I, O>(x))
        }))
    }
}

/// Casts like PyTorch's `.to(dtype)`: float to int truncates, anything to bool tests non-zero.
#[inline(always)]
pub fn cast<I: Element, O: Element>(x: I) -> O {
    if O::DTYPE == DType::Bool {
        O::from_f64(x.is_nonzero() as u8 as f64)
    } else if I::DTYPE.is_float() || O::DTYPE.is_float() {
        if I::DTYPE == DType::F32 || I::DTYPE == DType::F16 || I::DTYPE == DType::BF16 {
            O::from_f32(x.to_f32())
        } else {
            O::from_f64(x.to_f64())
        }
    } else {
        O::from_i64(x.to_i64())
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor(shape={:?}, dtype={})", self.shape(), self.dtype())
    }
}

/// Sanity helper shared by kernels: both operands must be on one device.
pub fn same_device(a: &Tensor, b: &Tensor) -> Result<()> {
    if a.device() != b.device() {
        bail!(Runtime, "Expected all tensors to be on the same device, but found at least two devices, {} and {}!", a.device(), b.device());
    }
    Ok(())
}
