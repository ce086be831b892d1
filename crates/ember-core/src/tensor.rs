//! `Tensor`: a cheap-to-clone handle on shared storage plus a layout. Everything here is a view
//! (no data moves) except `contiguous`, `copy_` and `to_dtype`.
use crate::bail;
use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::layout::{self, wrap_dim, Layout};
use crate::backend::Backend;
use crate::storage::Storage;
use crate::with_dtype;
use crate::autograd::{self, meta::AutogradMeta};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// A strided tensor: a cheap-to-clone handle (an `Arc`) on shared storage, a [`Layout`] and a
/// [`DType`]. Clones and views share the data; writes through any of them are seen by all, as
/// in PyTorch.
///
/// ```
/// use ember_core::{DType, Tensor};
/// let a = Tensor::from_vec(vec![1i64, 2, 3, 4, 5, 6], &[2, 3])?;
/// let col = a.select(1, 2)?; // a view of the last column
/// assert_eq!((a.shape(), a.dtype()), (&[2, 3][..], DType::I64));
/// assert_eq!(col.to_vec::<i64>()?, [3, 6]);
/// assert_eq!((&col * 2.0)?.to_dtype(DType::I64)?.to_vec::<i64>()?, [6, 12]);
/// # Ok::<(), ember_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<Inner>);

/// What a [`Tensor`] handle shares: storage, layout, dtype and autograd state.
pub struct Inner {
    storage: Arc<Storage>,
    layout: Layout,
    dtype: DType,
    /// Bumped by every in-place write through any view of the storage.
    version: Arc<AtomicU64>,
    /// For a view: the tensor that first owned the storage (in-place writes through a view
    /// must rewrite the base's history too).
    base: Option<Tensor>,
    /// For a view: whether autograd sees it as a view of its base (it was made in grad mode or
    /// given a history), so that writes to the base or to other views change its history too.
    differentiable_view: AtomicBool,
    /// For a view made in no_grad mode (PyTorch's `CreationMeta::NO_GRAD_MODE`): it requires grad
    /// when its base does, but no gradient reaches the base through it and it cannot be written
    /// in place with grad mode on.
    no_grad_view: AtomicBool,
    /// For a view: the version its history was made at. A write through another alias since
    /// then leaves that history stale; it is remade from the base's when next used.
    view_version: AtomicU64,
    /// For a view that is (or was taken from) one output of a function returning several views
    /// (`split`, `unbind`): that function's name and the output's position. Autograd cannot
    /// rewrite one such output's history alone, so in-place writes to it are refused.
    multi_output: OnceLock<(&'static str, usize)>,
    /// Set on a leaf that requires grad and on every result autograd tracks: the one word the
    /// per-op hot path reads, so ops on untracked tensors pay a single relaxed load.
    pub(crate) requires_grad: AtomicBool,
    /// grad, grad_fn, hooks: allocated only for tensors autograd deals with.
    pub(crate) autograd: Mutex<Option<Box<AutogradMeta>>>,
}

impl Tensor {
    /// A tensor over `storage` with `layout` and `dtype`, sharing nothing else (a fresh version
    /// counter, no autograd history). The layout must stay within the storage's bytes.
    pub fn from_parts(storage: Arc<Storage>, layout: Layout, dtype: DType) -> Self {
        Tensor(Arc::new(Inner {
            storage,
            layout,
            dtype,
            version: Arc::new(AtomicU64::new(0)),
            base: None,
            differentiable_view: AtomicBool::new(false),
            no_grad_view: AtomicBool::new(false),
            view_version: AtomicU64::new(0),
            multi_output: OnceLock::new(),
            requires_grad: AtomicBool::new(false),
            autograd: Mutex::new(None),
        }))
    }

    /// A view sharing this tensor's storage (and version counter) with another layout; it
    /// carries no autograd history (the public view ops record theirs).
    pub fn with_layout(&self, layout: Layout) -> Self {
        self.alias(layout, Some(self.0.base.clone().unwrap_or_else(|| self.clone())))
    }

    /// This tensor's storage under another layout, as a tensor of its own rather than a view:
    /// for fresh results whose first layout was provisional (a copy that `reshape` made).
    pub fn relayout(&self, layout: Layout) -> Self {
        self.alias(layout, self.0.base.clone())
    }

    /// A view of this tensor's storage as another dtype, `layout` counted in that dtype's
    /// elements (`view_as_real`, `view_as_complex`). The caller checks that the layout stays
    /// inside the storage and is aligned for `dtype`.
    pub fn with_dtype_layout(&self, dtype: DType, layout: Layout) -> Self {
        self.alias_as(layout, Some(self.0.base.clone().unwrap_or_else(|| self.clone())), dtype)
    }

    fn alias(&self, layout: Layout, base: Option<Tensor>) -> Self {
        self.alias_as(layout, base, self.0.dtype)
    }

    fn alias_as(&self, layout: Layout, base: Option<Tensor>, dtype: DType) -> Self {
        // As in PyTorch, a view made in no_grad mode is not a view for autograd.
        let differentiable = base.is_some() && autograd::is_grad_enabled();
        let made_in_no_grad = base.is_some() && !differentiable;
        let multi_output = OnceLock::new();
        if let Some(&origin) = self.0.multi_output.get() {
            let _ = multi_output.set(origin);
        }
        Tensor(Arc::new(Inner {
            storage: self.0.storage.clone(),
            layout,
            dtype,
            version: self.0.version.clone(),
            base,
            differentiable_view: AtomicBool::new(differentiable),
            no_grad_view: AtomicBool::new(made_in_no_grad),
            view_version: AtomicU64::new(self.version()),
            multi_output,
            requires_grad: AtomicBool::new(false),
            autograd: Mutex::new(None),
        }))
    }

    /// The tensor whose storage this view shares, if this is a view.
    pub fn base(&self) -> Option<&Tensor> {
        self.0.base.as_ref()
    }

    /// Whether autograd treats this tensor as a view of its base (see `Inner`).
    pub(crate) fn is_differentiable_view(&self) -> bool {
        self.0.base.is_some() && self.0.differentiable_view.load(Ordering::Relaxed)
    }

    /// Makes this view one autograd follows (`on`) or one it ignores entirely (`detach_`,
    /// `view(dtype)`).
    pub(crate) fn set_differentiable_view(&self, on: bool) {
        self.0.differentiable_view.store(on && self.0.base.is_some(), Ordering::Relaxed);
        self.0.no_grad_view.store(false, Ordering::Relaxed);
    }

    /// A view made in no_grad mode (see `Inner`).
    pub(crate) fn is_no_grad_view(&self) -> bool {
        self.0.no_grad_view.load(Ordering::Relaxed)
    }

    /// Marks the views `function` returned as its outputs, by position (see `Inner`).
    pub(crate) fn mark_multi_output(views: &[Tensor], function: &'static str) {
        for (k, v) in views.iter().enumerate() {
            let _ = v.0.multi_output.set((function, k));
        }
    }

    /// The function and position of a multi-output view (see `Inner`).
    pub(crate) fn multi_output(&self) -> Option<(&'static str, usize)> {
        self.0.multi_output.get().copied()
    }

    /// A differentiable view whose base was written (directly or through another view) after
    /// the view's history was made.
    pub(crate) fn is_stale_view(&self) -> bool {
        self.is_differentiable_view() && self.0.view_version.load(Ordering::Relaxed) != self.version()
    }

    /// Marks a view's history as made at the current version.
    pub(crate) fn mark_view_current(&self) {
        if self.0.base.is_some() {
            self.0.view_version.store(self.version(), Ordering::Relaxed);
            self.set_differentiable_view(true);
        }
    }

    /// When this is the last handle on the tensor: its autograd state and its base, for
    /// freeing graphs without recursion (`autograd::node`). The rest is freed here.
    pub(crate) fn into_last_parts(self) -> Option<(Option<Box<AutogradMeta>>, Option<Tensor>)> {
        let inner = Arc::try_unwrap(self.0).ok()?;
        let Inner { autograd, base, .. } = inner;
        Some((autograd.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner), base))
    }

    /// The same data and version counter with no autograd history (`detach`). Not a view for
    /// autograd's purposes: writes through it rewrite no history.
    pub fn detach(&self) -> Tensor {
        self.alias(self.layout().clone(), None)
    }

    /// A fresh contiguous CPU tensor whose contents the caller must overwrite entirely.
    pub fn uninit(shape: &[usize], dtype: DType) -> Result<Self> {
        Self::empty_on(shape, dtype, Device::Cpu)
    }

    /// A fresh contiguous tensor on `device` whose contents the caller must overwrite entirely.
    pub fn empty_on(shape: &[usize], dtype: DType, device: Device) -> Result<Self> {
        Self::alloc_on(shape, dtype, device, false)
    }

    /// A fresh tensor of `shape` on `device` laid out in memory in the same dim order as `like`
    /// when `like` is dense (as PyTorch keeps an input's memory format in elementwise results),
    /// so that every operand of the op streams through memory in the same order.
    pub fn uninit_like(shape: &[usize], dtype: DType, device: Device, like: Option<&Tensor>) -> Result<Self> {
        let Some(order) = like.filter(|l| l.shape() == shape).and_then(|l| l.layout().dense_order()) else {
            return Self::empty_on(shape, dtype, device);
        };
        let permuted: Vec<usize> = order.iter().map(|&d| shape[d]).collect();
        let mut inverse = vec![0; order.len()];
        for (i, &d) in order.iter().enumerate() {
            inverse[d] = i;
        }
        let t = Self::empty_on(&permuted, dtype, device)?;
        let layout = t.layout().permute(&inverse).expect("inverse of a permutation");
        Ok(t.relayout(layout))
    }

    /// A fresh contiguous CPU tensor of zeros.
    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Self> {
        Self::zeros_on(shape, dtype, Device::Cpu)
    }

    /// A fresh contiguous tensor of zeros on `device`.
    pub fn zeros_on(shape: &[usize], dtype: DType, device: Device) -> Result<Self> {
        Self::alloc_on(shape, dtype, device, true)
    }

    fn alloc_on(shape: &[usize], dtype: DType, device: Device, zeroed: bool) -> Result<Self> {
        let bytes = layout::checked_numel(shape, dtype.size())? * dtype.size();
        let storage = crate::backend::of(device)?.alloc(device, bytes, zeroed)?;
        Ok(Self::from_parts(Arc::new(storage), Layout::contiguous(shape), dtype))
    }

    /// A contiguous CPU tensor of `shape` holding `data` in row-major order (`torch.tensor`);
    /// an error when the lengths differ.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Self> {
        if data.len() != layout::numel(shape) {
            bail!(Runtime, "shape {shape:?} needs {} elements but {} were given", layout::numel(shape), data.len());
        }
        let t = Self::uninit(shape, T::DTYPE)?;
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), t.data_ptr::<T>(), data.len()) };
        Ok(t)
    }

    /// A zero-dim CPU tensor holding `v`.
    pub fn scalar<T: Element>(v: T) -> Self {
        Self::from_vec(vec![v], &[]).unwrap()
    }

    /// The storage this tensor views (shared with its other views).
    pub fn storage(&self) -> &Arc<Storage> {
        &self.0.storage
    }
    /// Shape, strides and offset, in elements.
    pub fn layout(&self) -> &Layout {
        &self.0.layout
    }
    /// The element type (`tensor.dtype`).
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    /// The device of its storage (`tensor.device`).
    pub fn device(&self) -> Device {
        self.0.storage.device()
    }
    /// The sizes of the dims (`tensor.shape`).
    pub fn shape(&self) -> &[usize] {
        self.0.layout.shape()
    }
    /// Strides in elements, possibly zero or negative (`tensor.stride()`).
    pub fn strides(&self) -> &[isize] {
        self.0.layout.strides()
    }
    /// The number of dims (`tensor.dim()`).
    pub fn ndim(&self) -> usize {
        self.0.layout.ndim()
    }
    /// The number of elements (`tensor.numel()`).
    pub fn numel(&self) -> usize {
        self.0.layout.numel()
    }
    /// Row-major contiguous (`tensor.is_contiguous()`).
    pub fn is_contiguous(&self) -> bool {
        self.0.layout.is_contiguous()
    }
    /// The count of in-place writes to this tensor's data, shared by its views (PyTorch's
    /// `tensor._version`); autograd compares it to refuse stale saved tensors.
    pub fn version(&self) -> u64 {
        self.0.version.load(Ordering::Relaxed)
    }
    /// Records an in-place write (see `version`).
    pub(crate) fn bump_version(&self) {
        self.0.version.fetch_add(1, Ordering::Relaxed);
    }
    /// Whether both name exactly the same elements (an in-place op's target and operand).
    pub fn is_alias_of(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || (self.same_storage(other) && self.layout() == other.layout() && self.dtype() == other.dtype())
    }

    /// Whether both view the same storage (overlapping or not).
    pub fn same_storage(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0.storage, &other.0.storage)
    }

    /// Pointer to the element at logical index 0 (typed; `T` must match the dtype).
    pub fn data_ptr<T: Element>(&self) -> *mut T {
        debug_assert_eq!(T::DTYPE, self.dtype());
        self.byte_ptr() as *mut T
    }

    /// Pointer to the first byte of the element at logical index 0.
    ///
    /// # Panics
    /// When the tensor is not on the CPU.
    pub fn byte_ptr(&self) -> *mut u8 {
        let base = self.0.storage.cpu().as_ptr();
        unsafe { base.add(self.0.layout.offset() * self.0.dtype.size()) }
    }

    /// The elements in logical (row-major) order.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype() {
            bail!(Type, "to_vec: expected dtype {} but the tensor is {}", T::DTYPE, self.dtype());
        }
        let c = self.to_device(Device::Cpu)?.contiguous()?;
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
        if self.dtype().is_complex() {
            return Ok(self.item_c128()?.re);
        }
        let host = self.to_device(Device::Cpu)?;
        Ok(with_dtype!(self.dtype(), T, unsafe { (*host.data_ptr::<T>()).to_f64() }))
    }

    /// The single value of a one-element tensor as complex128 (real dtypes: zero imaginary part).
    pub fn item_c128(&self) -> Result<crate::dtype::CDouble> {
        if self.numel() != 1 {
            bail!(Runtime, "a Tensor with {} elements cannot be converted to Scalar", self.numel());
        }
        if self.dtype().is_complex() {
            let host = self.to_device(Device::Cpu)?;
            return Ok(crate::with_complex!(self.dtype(), T, unsafe { (*host.data_ptr::<T>()).to_c128() }));
        }
        Ok(crate::dtype::CDouble::new(self.item_f64()?, 0.0))
    }

    /// `dim` in `0..ndim`, counting from the end when negative; an `Index` error when out of
    /// range.
    pub fn wrap_dim(&self, dim: i64) -> Result<usize> {
        wrap_dim(dim, self.ndim())
    }

    // ---- data movement ----

    /// A row-major contiguous tensor with the same values: `self` when it is one already, else a
    /// copy (`tensor.contiguous()`).
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            return Ok(self.clone());
        }
        self.copied("CloneBackward0", Tensor::empty_on(self.shape(), self.dtype(), self.device())?)
    }

    /// A fresh contiguous copy, always (PyTorch's `clone`).
    pub fn deep_clone(&self) -> Result<Tensor> {
        self.copied("CloneBackward0", Tensor::uninit_like(self.shape(), self.dtype(), self.device(), Some(self))?)
    }

    /// Casts; float-to-float casts are differentiable (the gradient is cast back).
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype() {
            return Ok(self.clone());
        }
        let out = Tensor::uninit_like(self.shape(), dtype, self.device(), Some(self))?;
        if !dtype.is_inexact() {
            out.copy_from_unchecked(self)?;
            return Ok(out);
        }
        self.copied("ToCopyBackward0", out)
    }

    /// This tensor on `device`: itself when it is there already, else a contiguous copy whose
    /// gradient flows back to this tensor's device.
    pub fn to_device(&self, device: Device) -> Result<Tensor> {
        if device == self.device() {
            return Ok(self.clone());
        }
        let out = Tensor::empty_on(self.shape(), self.dtype(), device)?;
        out.copy_from_unchecked(self)?;
        if autograd::needs_grad(&[self]) {
            let from = self.device();
            autograd::record("ToCopyBackward0", &[self], &[&out], &[], move |_, g| Ok(vec![Some(g[0].to_device(from)?)]))?;
        }
        Ok(out)
    }

    /// Copies this tensor into `out` (same shape and device), recording the copy: the gradient
    /// is the output's, cast back to this tensor's dtype.
    fn copied(&self, name: &'static str, out: Tensor) -> Result<Tensor> {
        out.copy_from_unchecked(self)?;
        if autograd::needs_grad(&[self]) {
            let dtype = self.dtype();
            autograd::record(name, &[self], &[&out], &[], move |_, g| Ok(vec![Some(g[0].to_dtype(dtype)?)]))?;
        }
        Ok(out)
    }

    /// `self.copy_(src)`: broadcasts `src` and casts it to this tensor's dtype; `src` may be on
    /// another device. Under autograd the gradient of this tensor flows to `src` (summed over
    /// the broadcast dims). A one-element `src` is a fill (Ember's `fill_`), which may write an
    /// expanded tensor.
    pub fn copy_(&self, src: &Tensor) -> Result<()> {
        if src.numel() == 1 {
            if let Some(target) = crate::ops::overlap::distinct_elements(self)? {
                return target.copy_(src);
            }
        }
        autograd::inplace::in_place(
            self,
            &[src],
            || {
                let src = src.broadcast_to(self.shape())?;
                self.copy_from_unchecked(&src)?;
                self.bump_version();
                Ok(())
            },
            || src.to_device(self.device())?.to_dtype(self.dtype())?.broadcast_to(self.shape()),
        )
    }

    /// `self[i] = cast(src[i])`, same shape. Across devices the data goes through the host:
    /// a contiguous copy of the source's dtype is downloaded or uploaded, then cast in place.
    fn copy_from_unchecked(&self, src: &Tensor) -> Result<()> {
        let (from, to) = (src.device(), self.device());
        if from == to {
            return crate::backend::of(to)?.copy(src, self);
        }
        let host = if from == Device::Cpu {
            src.contiguous()?
        } else {
            let staged = Tensor::empty_on(src.shape(), src.dtype(), from)?;
            crate::backend::of(from)?.copy(src, &staged)?;
            let host = Tensor::uninit(src.shape(), src.dtype())?;
            crate::backend::of(from)?.download(&staged, &host)?;
            host
        };
        if to == Device::Cpu {
            return crate::backend::cpu::Cpu.copy(&host, self);
        }
        let staged = Tensor::empty_on(self.shape(), src.dtype(), to)?;
        crate::backend::of(to)?.upload(&host, &staged)?;
        crate::backend::of(to)?.copy(&staged, self)
    }
}

/// Casts like PyTorch's `.to(dtype)`: float to int truncates, anything to bool tests non-zero.
#[inline(always)]
pub fn cast<I: Element, O: Element>(x: I) -> O {
    if O::DTYPE == DType::Bool {
        O::from_f64(x.is_nonzero() as u8 as f64)
    } else if I::DTYPE.is_complex() || O::DTYPE.is_complex() {
        // Through complex128, which holds every part exactly; complex to real drops the
        // imaginary part as PyTorch does.
        O::from_c128(x.to_c128())
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
