//! Where a tensor's bytes live. Backends that are not built hold uninhabited stub types, so the
//! enum and every `match` on it stay free of `cfg`.
use crate::device::Device;
use std::alloc::{self, Layout as AllocLayout};
use std::any::Any;
use std::ptr::NonNull;

const ALIGN: usize = 64;
/// Buffers this big are 2 MiB aligned and backed by transparent huge pages: a fresh output then
/// costs one page fault per 2 MiB instead of one per 4 KiB, which is most of an elementwise op.
const HUGE: usize = 4 << 20;
const HUGE_ALIGN: usize = 2 << 20;

fn alignment(bytes: usize) -> usize {
    if bytes >= HUGE {
        HUGE_ALIGN
    } else {
        ALIGN
    }
}

/// A CPU buffer: either allocated here (64-byte aligned, for SIMD) or borrowed from a foreign
/// owner (a NumPy array, a DLPack capsule) that is kept alive for as long as the buffer.
pub struct CpuStorage {
    ptr: NonNull<u8>,
    bytes: usize,
    owner: Owner,
}

enum Owner {
    Ember,
    Foreign(#[allow(dead_code)] Box<dyn Any + Send + Sync>),
}

// Tensors share storage across threads like PyTorch's: concurrent writes to one storage are the
// caller's responsibility, reads are always safe.
unsafe impl Send for CpuStorage {}
unsafe impl Sync for CpuStorage {}

impl CpuStorage {
    pub fn zeroed(bytes: usize) -> Self {
        Self::alloc(bytes, true)
    }

    /// Uninitialised memory: only for outputs that a kernel overwrites entirely.
    pub fn uninit(bytes: usize) -> Self {
        Self::alloc(bytes, false)
    }

    fn alloc(bytes: usize, zero: bool) -> Self {
        if bytes == 0 {
            return CpuStorage { ptr: NonNull::dangling(), bytes, owner: Owner::Ember };
        }
        let layout = AllocLayout::from_size_align(bytes, alignment(bytes)).expect("tensor too large");
        let raw = unsafe { if zero { alloc::alloc_zeroed(layout) } else { alloc::alloc(layout) } };
        let ptr = NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        #[cfg(target_os = "linux")]
        if bytes >= HUGE {
            // Advice only: where huge pages are off this is a no-op.
            unsafe { libc::madvise(raw as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE) };
        }
        CpuStorage { ptr, bytes, owner: Owner::Ember }
    }

    /// Wraps foreign memory.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `bytes` bytes for as long as `owner` lives.
    pub unsafe fn from_foreign(ptr: *mut u8, bytes: usize, owner: Box<dyn Any + Send + Sync>) -> Self {
        let ptr = NonNull::new(ptr).unwrap_or(NonNull::dangling());
        CpuStorage { ptr, bytes, owner: Owner::Foreign(owner) }
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for CpuStorage {
    fn drop(&mut self) {
        if matches!(self.owner, Owner::Ember) && self.bytes > 0 {
            let layout = AllocLayout::from_size_align(self.bytes, alignment(self.bytes)).unwrap();
            unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) }
        }
    }
}

/// CUDA device memory; uninhabited until the CUDA backend is built.
pub enum CudaStorage {}
/// Metal buffer; uninhabited until the Metal backend is built.
pub enum MetalStorage {}

pub enum Storage {
    Cpu(CpuStorage),
    Cuda(CudaStorage),
    Metal(MetalStorage),
}

impl Storage {
    pub fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::Cpu,
            Storage::Cuda(s) => match *s {},
            Storage::Metal(s) => match *s {},
        }
    }

    pub fn cpu(&self) -> &CpuStorage {
        match self {
            Storage::Cpu(s) => s,
            Storage::Cuda(s) => match *s {},
            Storage::Metal(s) => match *s {},
        }
    }
}
