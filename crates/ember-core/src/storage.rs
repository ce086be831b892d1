//! Where a tensor's bytes live. Backends that are not built hold uninhabited stub types, so the
//! enum and every `match` on it stay free of `cfg`.
use crate::bail;
use crate::device::Device;
use crate::error::Result;
use std::alloc::{self, Layout as AllocLayout};
use std::any::Any;
use std::ptr::NonNull;

const ALIGN: usize = 64;
/// Buffers this big are 2 MiB aligned and backed by transparent huge pages: a fresh output then
/// costs one page fault per 2 MiB instead of one per 4 KiB, which is most of an elementwise op.
const HUGE: usize = 4 << 20;
const HUGE_ALIGN: usize = 2 << 20;

/// Bytes actually reserved for a buffer of `bytes`: large ones round up to whole huge pages, so
/// that buffers of nearby sizes share a size class in the cache.
fn capacity(bytes: usize) -> usize {
    layout(bytes).size()
}

/// Only called with sizes `alloc` accepted (`checked_layout`), so it cannot fail here.
fn layout(bytes: usize) -> AllocLayout {
    checked_layout(bytes).expect("a size that was allocated before")
}

/// `None` when `bytes`, rounded up to its size class, exceeds what any allocation can hold.
fn checked_layout(bytes: usize) -> Option<AllocLayout> {
    let align = if bytes >= HUGE { HUGE_ALIGN } else { ALIGN };
    let cap = if bytes >= HUGE { bytes.checked_next_multiple_of(HUGE_ALIGN)? } else { bytes };
    AllocLayout::from_size_align(cap, align).ok()
}

/// PyTorch's message for a failed CPU allocation, so callers that match on it keep working.
fn out_of_memory<T>(bytes: usize) -> Result<T> {
    bail!(
        Runtime,
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate {bytes} bytes. Error code 12 (Cannot allocate memory)"
    )
}

/// An empty `Vec` with room for `capacity` elements, or the allocator's error: for a kernel's
/// scratch sized from user input, whose growth would otherwise abort on failure.
pub fn try_vec<T>(capacity: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    match v.try_reserve_exact(capacity) {
        Ok(()) => Ok(v),
        Err(_) => out_of_memory(capacity.saturating_mul(std::mem::size_of::<T>())),
    }
}

/// Freed large buffers kept for reuse. A fresh large buffer pays a page fault per page on first
/// touch, and with huge pages sometimes a synchronous compaction stall: more than the op that
/// fills it. Reusing a freed block of the same size class skips both, as glibc's heap does for
/// NumPy and PyTorch. Bounded by `LARGE_CACHE_BYTES`, oldest evicted first.
pub(crate) mod large_cache {
    use super::{capacity, layout};
    use std::alloc;
    use std::sync::Mutex;

    pub const LARGE_CACHE_BYTES: usize = 1 << 30;

    struct Cache {
        /// (capacity, address), oldest first.
        blocks: Vec<(usize, usize)>,
        total: usize,
    }

    static CACHE: Mutex<Cache> = Mutex::new(Cache { blocks: Vec::new(), total: 0 });

    /// A cached block for `bytes`, if one of its size class is free.
    pub fn take(bytes: usize) -> Option<*mut u8> {
        let cap = capacity(bytes);
        let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let i = c.blocks.iter().rposition(|&(b, _)| b == cap)?;
        let (_, addr) = c.blocks.remove(i);
        c.total -= cap;
        Some(addr as *mut u8)
    }

    /// Frees every cached block; whether there were any.
    pub fn clear() -> bool {
        let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        for (cap, addr) in c.blocks.drain(..) {
            unsafe { alloc::dealloc(addr as *mut u8, layout(cap)) };
        }
        std::mem::take(&mut c.total) > 0
    }

    thread_local! {
        /// The cache's lock, held by the forking thread across `fork`.
        static HELD_FOR_FORK: std::cell::Cell<Option<std::sync::MutexGuard<'static, Cache>>> = const { std::cell::Cell::new(None) };
    }

    /// Taken before `fork` (see `parallel::after_fork_in_child`): a forked child has only the
    /// forking thread, so a lock another thread held at that moment would stay held forever.
    pub fn hold_for_fork() {
        HELD_FOR_FORK.set(Some(CACHE.lock().unwrap_or_else(|e| e.into_inner())));
    }

    /// Released after `fork`, in the parent and in the child.
    pub fn release_after_fork() {
        drop(HELD_FOR_FORK.take());
    }

    /// Keeps the block for reuse, evicting the oldest ones beyond the budget.
    pub fn give(ptr: *mut u8, bytes: usize) {
        crate::parallel::register_fork_handlers();
        let cap = capacity(bytes);
        let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        c.blocks.push((cap, ptr as usize));
        c.total += cap;
        while c.total > LARGE_CACHE_BYTES {
            let (old, addr) = c.blocks.remove(0);
            c.total -= old;
            unsafe { alloc::dealloc(addr as *mut u8, layout(old)) };
        }
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
    /// Zero-filled memory; an error (not an abort) when the allocation fails.
    pub fn zeroed(bytes: usize) -> Result<Self> {
        Self::alloc(bytes, true)
    }

    /// Uninitialised memory: only for outputs that a kernel overwrites entirely.
    pub fn uninit(bytes: usize) -> Result<Self> {
        Self::alloc(bytes, false)
    }

    /// A failed allocation is an error, not an abort (`handle_alloc_error`): a too-large
    /// request from Python must leave the process running, as PyTorch's allocator does.
    fn alloc(bytes: usize, zero: bool) -> Result<Self> {
        if bytes == 0 {
            return Ok(CpuStorage { ptr: NonNull::dangling(), bytes, owner: Owner::Ember });
        }
        let Some(layout) = checked_layout(bytes) else {
            return out_of_memory(bytes);
        };
        if bytes >= HUGE {
            if let Some(raw) = large_cache::take(bytes) {
                if zero {
                    unsafe { std::ptr::write_bytes(raw, 0, bytes) };
                }
                return Ok(CpuStorage { ptr: NonNull::new(raw).unwrap(), bytes, owner: Owner::Ember });
            }
        }
        let fresh = || NonNull::new(unsafe { if zero { alloc::alloc_zeroed(layout) } else { alloc::alloc(layout) } });
        // The blocks kept for reuse are the one memory we can give back before failing.
        let Some(ptr) = fresh().or_else(|| large_cache::clear().then(fresh).flatten()) else {
            return out_of_memory(bytes);
        };
        let raw = ptr.as_ptr();
        #[cfg(target_os = "linux")]
        if bytes >= HUGE {
            // Advice only: where huge pages are off this is a no-op.
            unsafe { libc::madvise(raw as *mut libc::c_void, layout.size(), libc::MADV_HUGEPAGE) };
        }
        Ok(CpuStorage { ptr, bytes, owner: Owner::Ember })
    }

    /// Wraps foreign memory.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `bytes` bytes for as long as `owner` lives.
    pub unsafe fn from_foreign(ptr: *mut u8, bytes: usize, owner: Box<dyn Any + Send + Sync>) -> Self {
        let ptr = NonNull::new(ptr).unwrap_or(NonNull::dangling());
        CpuStorage { ptr, bytes, owner: Owner::Foreign(owner) }
    }

    /// The first byte (64-byte aligned for Ember's own non-empty allocations; dangling when
    /// empty).
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for CpuStorage {
    fn drop(&mut self) {
        match self.owner {
            Owner::Ember if self.bytes >= HUGE => large_cache::give(self.ptr.as_ptr(), self.bytes),
            Owner::Ember if self.bytes > 0 => unsafe { alloc::dealloc(self.ptr.as_ptr(), layout(self.bytes)) },
            _ => {}
        }
    }
}

/// CUDA device memory: the CUDA backend's, or uninhabited in a build without it.
pub use crate::backend::cuda::CudaStorage;
/// Metal buffer; uninhabited until the Metal backend is built.
pub enum MetalStorage {}

/// Memory of a backend registered at run time (`Device::PrivateUse1`): whatever that backend
/// allocated, which only its own kernels read.
pub struct ExtStorage {
    /// The device the backend registered as.
    pub device: Device,
    /// Length in bytes.
    pub bytes: usize,
    /// The backend's own handle to the memory, downcast by its kernels.
    pub memory: Box<dyn Any + Send + Sync>,
}

/// The bytes behind one or more tensors, on one device (PyTorch's `UntypedStorage`); views
/// share it through an `Arc`.
pub enum Storage {
    /// Host memory.
    Cpu(CpuStorage),
    /// CUDA device memory.
    Cuda(CudaStorage),
    /// A Metal buffer (no Metal backend yet: never constructed).
    Metal(MetalStorage),
    /// Memory of a backend registered at run time.
    Ext(ExtStorage),
}

impl Storage {
    /// The device the memory is on.
    pub fn device(&self) -> Device {
        match self {
            Storage::Cpu(_) => Device::Cpu,
            Storage::Cuda(s) => s.device(),
            Storage::Metal(s) => match *s {},
            Storage::Ext(s) => s.device,
        }
    }

    /// Length in bytes.
    pub fn bytes(&self) -> usize {
        match self {
            Storage::Cpu(s) => s.bytes(),
            Storage::Cuda(s) => s.bytes(),
            Storage::Metal(s) => match *s {},
            Storage::Ext(s) => s.bytes,
        }
    }

    /// The host memory the CPU kernels read. Ops reach other devices' memory only through
    /// their backend (`crate::backend`); an op family that is not yet part of the contract
    /// runs CPU kernels only, and another device's tensor stops here (a panic, which the
    /// extension raises as a RuntimeError) instead of being read as host memory.
    pub fn cpu(&self) -> &CpuStorage {
        match self {
            Storage::Cpu(s) => s,
            Storage::Cuda(s) => panic!("a CPU kernel was given memory of {}: its backend must serve the op", s.device()),
            Storage::Metal(s) => match *s {},
            Storage::Ext(s) => panic!("a CPU kernel was given memory of {}: its backend must serve the op", s.device),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_buffers_are_reused_and_zeroed_on_request() {
        let bytes = HUGE + 12345;
        let first = CpuStorage::uninit(bytes).unwrap();
        let addr = first.as_ptr();
        unsafe { std::ptr::write_bytes(addr, 0xAB, bytes) };
        drop(first);
        let again = CpuStorage::zeroed(bytes + 1).unwrap();
        assert_eq!(again.as_ptr(), addr, "same size class reuses the freed block");
        let data = unsafe { std::slice::from_raw_parts(again.as_ptr(), again.bytes()) };
        assert!(data.iter().all(|&b| b == 0));
        assert_eq!(again.as_ptr() as usize % HUGE_ALIGN, 0);
    }

    #[test]
    fn impossible_sizes_are_errors_not_aborts() {
        for bytes in [usize::MAX, usize::MAX - HUGE_ALIGN, isize::MAX as usize + 1] {
            let err = CpuStorage::uninit(bytes).err().expect("no allocation of that size");
            assert!(err.message.starts_with("DefaultCPUAllocator: can't allocate memory"), "{}", err.message);
        }
    }
}
