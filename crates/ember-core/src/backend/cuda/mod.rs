//! The CUDA backend (`Device::Cuda`), on the driver API through `cudarc`.
//!
//! Nothing CUDA is linked: the driver (`libcuda`) and NVRTC are loaded at run time, each probed
//! first (`libs`), so a machine without them gets a RuntimeError that names what is missing.
//! Kernels are CUDA C (`kernels/*.cu`, one file per op family beside the Rust that launches
//! it), compiled by NVRTC for the device's own architecture on first use and cached on disk
//! (`nvrtc`). Every CUDA error becomes a RuntimeError naming the call and CUDA's message.
//!
//! Built with the `cuda` feature (`cuda12` / `cuda13`); without it only the answers that say
//! "not built" remain, and `CudaStorage` is uninhabited so `Storage` stays free of `cfg`.
#[cfg(feature = "cuda")]
mod binary;
#[cfg(feature = "cuda")]
mod blas;
#[cfg(feature = "cuda")]
mod copy;
#[cfg(feature = "cuda")]
mod device;
#[cfg(feature = "cuda")]
mod dnn;
#[cfg(feature = "cuda")]
mod fill;
#[cfg(feature = "cuda")]
mod index;
#[cfg(feature = "cuda")]
mod lerp;
#[cfg(feature = "cuda")]
pub mod libs;
#[cfg(feature = "cuda")]
mod norm;
#[cfg(feature = "cuda")]
pub mod nvrtc;
#[cfg(feature = "cuda")]
mod pad;
#[cfg(feature = "cuda")]
mod pool;
#[cfg(feature = "cuda")]
mod random;
#[cfg(feature = "cuda")]
mod reduce;
#[cfg(feature = "cuda")]
mod resample;
#[cfg(feature = "cuda")]
pub mod runtime;
#[cfg(feature = "cuda")]
mod strided;
#[cfg(feature = "cuda")]
mod unary;
#[cfg(feature = "cuda")]
mod where_;

#[cfg(feature = "cuda")]
pub use device::{backend, device_count, CudaStorage};
#[cfg(feature = "cuda")]
pub use dnn::version as cudnn_version;

static CUDNN_ALLOW_TF32: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// `torch.backends.cudnn.allow_tf32`: whether float32 convolutions may use TF32 tensor cores
/// (PyTorch's default: yes).
pub fn set_cudnn_allow_tf32(allow: bool) {
    CUDNN_ALLOW_TF32.store(allow, std::sync::atomic::Ordering::Relaxed);
}

/// The `torch.backends.cudnn.allow_tf32` setting.
pub fn cudnn_allow_tf32() -> bool {
    CUDNN_ALLOW_TF32.load(std::sync::atomic::Ordering::Relaxed)
}

/// Makes the NVRTC of NVIDIA's pip wheels under any of `site_dirs` (site-packages folders) the
/// one loaded before the first CUDA call (see `libs`).
#[cfg(feature = "cuda")]
pub fn use_wheels(site_dirs: &[std::path::PathBuf]) {
    libs::set_preload(libs::wheel_libraries(site_dirs));
}

/// Whether this build has the CUDA backend (`ember.backends.cuda.is_built()`).
pub const BUILT: bool = cfg!(feature = "cuda");

/// The CUDA major version the bindings are for (the pip wheels to look for), or 0 if not built.
pub const VERSION_MAJOR: u32 = if cfg!(feature = "cuda13") {
    13
} else if cfg!(feature = "cuda12") {
    12
} else {
    0
};

#[cfg(all(feature = "cuda12", feature = "cuda13"))]
compile_error!("features `cuda12` and `cuda13` are exclusive: choose the CUDA version of one build");

/// One op family's kernels: the CUDA C source and every kernel name the Rust side launches
/// from it (the test that compiles every kernel checks each name is in the compiled module).
#[cfg(feature = "cuda")]
pub struct Family {
    /// Names the source in compile errors and keys the loaded-module cache.
    pub name: &'static str,
    /// The CUDA C source, compiled by NVRTC on first use.
    pub source: &'static str,
    /// Every kernel name the Rust side launches from `source`.
    pub kernel_names: fn() -> Vec<String>,
}

/// Every kernel family of the backend.
#[cfg(feature = "cuda")]
pub const FAMILIES: [Family; 13] = [
    copy::FAMILY,
    fill::FAMILY,
    unary::FAMILY,
    binary::FAMILY,
    where_::FAMILY,
    reduce::FAMILY,
    norm::FAMILY,
    random::FAMILY,
    index::FAMILY,
    lerp::FAMILY,
    pool::FAMILY,
    pad::FAMILY,
    resample::FAMILY,
];

/// `get_device_properties`: what a script reads of a device.
#[derive(Clone, Debug)]
pub struct Properties {
    /// The marketing name, "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Compute capability.
    pub major: u32,
    /// Compute capability's minor number.
    pub minor: u32,
    /// Device memory in bytes.
    pub total_memory: usize,
    /// Streaming multiprocessors.
    pub multi_processor_count: u32,
}

#[cfg(not(feature = "cuda"))]
mod not_built {
    use crate::backend::Backend;
    use crate::bail;
    use crate::device::Device;
    use crate::error::Result;

    /// CUDA device memory: uninhabited in a build without the CUDA backend.
    pub enum CudaStorage {}

    impl CudaStorage {
        /// The device the memory lives on.
        pub fn device(&self) -> Device {
            match *self {}
        }
        /// The allocation's size in bytes.
        pub fn bytes(&self) -> usize {
            match *self {}
        }
    }

    /// Refuses: no CUDA in this build.
    pub fn backend(index: usize) -> Result<&'static dyn Backend> {
        bail!(Runtime, "device cuda:{index} is not available: this build of Ember has no CUDA backend")
    }

    /// No devices without CUDA.
    pub fn device_count() -> usize {
        0
    }

    /// Nothing to load without CUDA.
    pub fn use_wheels(_: &[std::path::PathBuf]) {}

    /// No cuDNN without CUDA.
    pub fn cudnn_version() -> Option<usize> {
        None
    }

    /// `runtime`'s answers in a build without CUDA: each refuses as `backend` does.
    pub mod runtime {
        use super::super::Properties;
        use super::backend;
        use crate::error::Result;

        /// Refuses: no CUDA in this build.
        pub fn synchronize(index: usize) -> Result<()> {
            backend(index).map(|_| ())
        }
        /// Refuses: no CUDA in this build.
        pub fn memory_stats(index: usize) -> Result<(usize, usize, usize)> {
            backend(index).map(|_| (0, 0, 0))
        }
        /// Refuses: no CUDA in this build.
        pub fn reset_peak_memory_stats(index: usize) -> Result<()> {
            backend(index).map(|_| ())
        }
        /// Refuses: no CUDA in this build.
        pub fn empty_cache(index: usize) -> Result<()> {
            backend(index).map(|_| ())
        }
        /// Refuses: no CUDA in this build.
        pub fn properties(index: usize) -> Result<Properties> {
            backend(index).and_then(|_| unreachable!())
        }
        /// A timing event: uninhabited without CUDA.
        pub enum Event {}
        impl Event {
            /// Refuses: no CUDA in this build.
            pub fn new(index: usize, _timing: bool) -> Result<Event> {
                backend(index).and_then(|_| unreachable!())
            }
            /// Never called: no event exists.
            pub fn record(&self) -> Result<()> {
                match *self {}
            }
            /// Never called: no event exists.
            pub fn synchronize(&self) -> Result<()> {
                match *self {}
            }
            /// Never called: no event exists.
            pub fn query(&self) -> Result<bool> {
                match *self {}
            }
            /// Never called: no event exists.
            pub fn elapsed_time(&self, _end: &Event) -> Result<f32> {
                match *self {}
            }
        }
    }
}
#[cfg(not(feature = "cuda"))]
pub use not_built::{backend, cudnn_version, device_count, runtime, use_wheels, CudaStorage};
