//! `ember.cuda`'s calls into the core's CUDA backend: the build, the devices, synchronisation,
//! memory statistics, properties and timing events.
use crate::errors::IntoPyResult;
use ember_core::backend::cuda::{self, runtime};
use pyo3::prelude::*;

/// Whether this build has the CUDA backend, and the CUDA major version it is for (0 if none).
#[pyfunction]
fn _cuda_build() -> (bool, u32) {
    (cuda::BUILT, cuda::VERSION_MAJOR)
}

/// How many CUDA devices ops can run on: 0 where the driver or a GPU is missing.
#[pyfunction]
fn _cuda_device_count() -> usize {
    cuda::device_count()
}

/// Hands the core the site-packages folders to look in for NVIDIA's library wheels, which it
/// loads by path before its first CUDA call.
#[pyfunction]
fn _cuda_use_wheels(site_dirs: Vec<std::path::PathBuf>) {
    cuda::use_wheels(&site_dirs)
}

/// The CUDA device `"cuda"` means, and the setter (`current_device` / `set_device`).
#[pyfunction]
fn _cuda_current_device() -> usize {
    ember_core::device::current_cuda()
}

#[pyfunction]
fn _cuda_set_device(index: usize) -> PyResult<()> {
    ember_core::device::set_current_cuda(index).py()
}

#[pyfunction]
fn _cuda_synchronize(index: usize) -> PyResult<()> {
    runtime::synchronize(index).py()
}

/// cuDNN's version, or None where it cannot be loaded.
#[pyfunction]
fn _cudnn_version() -> Option<usize> {
    cuda::cudnn_version()
}

#[pyfunction]
fn _cudnn_allow_tf32() -> bool {
    cuda::cudnn_allow_tf32()
}

#[pyfunction]
fn _cudnn_set_allow_tf32(allow: bool) {
    cuda::set_cudnn_allow_tf32(allow)
}

/// `(allocated, max_allocated, reserved)` bytes of `cuda:<index>`.
#[pyfunction]
fn _cuda_memory_stats(index: usize) -> PyResult<(usize, usize, usize)> {
    runtime::memory_stats(index).py()
}

#[pyfunction]
fn _cuda_reset_peak_memory_stats(index: usize) -> PyResult<()> {
    runtime::reset_peak_memory_stats(index).py()
}

#[pyfunction]
fn _cuda_empty_cache(index: usize) -> PyResult<()> {
    runtime::empty_cache(index).py()
}

/// `(name, major, minor, total_memory, multi_processor_count)` of `cuda:<index>`.
#[pyfunction]
fn _cuda_properties(index: usize) -> PyResult<(String, u32, u32, usize, u32)> {
    let p = runtime::properties(index).py()?;
    Ok((p.name, p.major, p.minor, p.total_memory, p.multi_processor_count))
}

/// A timing event on a device's stream; `ember.cuda.Event` wraps it.
#[pyclass(name = "_CudaEvent", module = "ember._C", frozen)]
struct CudaEvent(runtime::Event);

#[pymethods]
impl CudaEvent {
    #[new]
    fn new(index: usize, enable_timing: bool) -> PyResult<Self> {
        runtime::Event::new(index, enable_timing).py().map(CudaEvent)
    }
    fn record(&self) -> PyResult<()> {
        self.0.record().py()
    }
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.0.synchronize()).py()
    }
    fn query(&self) -> PyResult<bool> {
        self.0.query().py()
    }
    fn elapsed_time(&self, py: Python<'_>, end: &CudaEvent) -> PyResult<f32> {
        py.detach(|| self.0.elapsed_time(&end.0)).py()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_cuda_build, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_device_count, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_use_wheels, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_current_device, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_set_device, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_reset_peak_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_properties, m)?)?;
    m.add_function(wrap_pyfunction!(_cudnn_version, m)?)?;
    m.add_function(wrap_pyfunction!(_cudnn_allow_tf32, m)?)?;
    m.add_function(wrap_pyfunction!(_cudnn_set_allow_tf32, m)?)?;
    m.add_class::<CudaEvent>()?;
    Ok(())
}
