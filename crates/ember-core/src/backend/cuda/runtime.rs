//! What `ember.cuda` asks of a device beyond ops: synchronisation, its memory pool and
//! statistics, its properties, and timing events.
//!
//! Memory comes from the device's default stream-ordered pool (`cuMemAllocAsync`). Its release
//! threshold is raised to "never" when the device is set up, so freed memory stays in the pool
//! for the next allocation, as PyTorch's caching allocator keeps it; `empty_cache` trims it.
use super::device::{cuda_error, device, Cuda};
use super::Properties;
use crate::error::Result;
use cudarc::driver::{sys, CudaEvent, DriverError};
use std::sync::atomic::Ordering;

/// The device's default memory pool.
fn pool(cuda: &Cuda) -> Result<sys::CUmemoryPool> {
    let mut pool = std::ptr::null_mut();
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, cuda.ctx.cu_device()) }.result().map_err(|e| cuda_error("cuDeviceGetDefaultMemPool", e))?;
    Ok(pool)
}

/// Keeps freed memory in the pool across synchronisations (the default returns it to the
/// driver at each one, making the next allocation slow).
pub(super) fn keep_freed_memory(cuda: &Cuda) -> Result<()> {
    let mut never = u64::MAX;
    let attr = sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    unsafe { sys::cuMemPoolSetAttribute(pool(cuda)?, attr, &mut never as *mut u64 as *mut _) }
        .result()
        .map_err(|e| cuda_error("cuMemPoolSetAttribute", e))
}

/// Waits for all work queued on `cuda:<index>`.
pub fn synchronize(index: usize) -> Result<()> {
    device(index)?.stream().synchronize().map_err(|e| cuda_error("cuStreamSynchronize", e))
}

/// Bytes held by tensors now and at most since the last reset, and bytes the pool holds from
/// the driver (`memory_allocated`, `max_memory_allocated`, `memory_reserved`).
pub fn memory_stats(index: usize) -> Result<(usize, usize, usize)> {
    let cuda = device(index)?;
    let mut reserved = 0u64;
    let attr = sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT;
    unsafe { sys::cuMemPoolGetAttribute(pool(cuda)?, attr, &mut reserved as *mut u64 as *mut _) }
        .result()
        .map_err(|e| cuda_error("cuMemPoolGetAttribute", e))?;
    Ok((cuda.stats.allocated.load(Ordering::Relaxed), cuda.stats.peak.load(Ordering::Relaxed), reserved as usize))
}

/// Starts the peak count afresh from what tensors hold now.
pub fn reset_peak_memory_stats(index: usize) -> Result<()> {
    let stats = &device(index)?.stats;
    stats.peak.store(stats.allocated.load(Ordering::Relaxed), Ordering::Relaxed);
    Ok(())
}

/// Returns the pool's unused memory to the driver (`empty_cache`).
pub fn empty_cache(index: usize) -> Result<()> {
    let cuda = device(index)?;
    synchronize(index)?;
    unsafe { sys::cuMemPoolTrimTo(pool(cuda)?, 0) }.result().map_err(|e| cuda_error("cuMemPoolTrimTo", e))
}

/// The properties of `cuda:<index>`.
pub fn properties(index: usize) -> Result<Properties> {
    let cuda = device(index)?;
    let call = |name: &'static str| move |e: DriverError| cuda_error(name, e);
    let (major, minor) = cuda.ctx.compute_capability().map_err(call("cuDeviceGetAttribute"))?;
    Ok(Properties {
        name: cuda.ctx.name().map_err(call("cuDeviceGetName"))?,
        major: major as u32,
        minor: minor as u32,
        total_memory: cuda.ctx.total_mem().map_err(call("cuDeviceTotalMem"))?,
        multi_processor_count: cuda.sm_count(),
    })
}

/// A timing event on a device's stream (`ember.cuda.Event(enable_timing=True)`).
pub struct Event {
    event: CudaEvent,
    index: usize,
}

impl Event {
    /// A new event on `cuda:<index>`, recording nothing yet.
    pub fn new(index: usize, timing: bool) -> Result<Event> {
        let flags = if timing { sys::CUevent_flags::CU_EVENT_DEFAULT } else { sys::CUevent_flags::CU_EVENT_DISABLE_TIMING };
        let event = device(index)?.ctx.new_event(Some(flags)).map_err(|e| cuda_error("cuEventCreate", e))?;
        Ok(Event { event, index })
    }

    /// Marks the point the device's queued work has reached.
    pub fn record(&self) -> Result<()> {
        self.event.record(device(self.index)?.stream()).map_err(|e| cuda_error("cuEventRecord", e))
    }

    /// Waits until the work before the recorded point is done.
    pub fn synchronize(&self) -> Result<()> {
        self.event.synchronize().map_err(|e| cuda_error("cuEventSynchronize", e))
    }

    /// Whether the work before the recorded point is done.
    pub fn query(&self) -> Result<bool> {
        self.event.try_is_complete().map_err(|e| cuda_error("cuEventQuery", e))
    }

    /// Milliseconds from this event's point to `end`'s, both recorded (waits for `end`).
    pub fn elapsed_time(&self, end: &Event) -> Result<f32> {
        self.event.elapsed_ms(&end.event).map_err(|e| cuda_error("cuEventElapsedTime", e))
    }
}
