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
mod copy;
#[cfg(feature = "cuda")]
mod device;
#[cfg(feature = "cuda")]
mod fill;
#[cfg(feature = "cuda")]
mod index;
#[cfg(feature = "cuda")]
mod lerp;
#[cfg(feature = "cuda")]
pub mod libs;
#[cfg(feature = "cuda")]
pub mod nvrtc;
#[cfg(feature = "cuda")]
mod random;
#[cfg(feature = "cuda")]
mod strided;
#[cfg(feature = "cuda")]
mod unary;
#[cfg(feature = "cuda")]
mod where_;

#[cfg(feature = "cuda")]
pub use device::{backend, device_count, CudaStorage};

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
pub const FAMILIES: [Family; 8] =
    [copy::FAMILY, fill::FAMILY, unary::FAMILY, binary::FAMILY, where_::FAMILY, random::FAMILY, index::FAMILY, lerp::FAMILY];

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

    pub fn backend(index: usize) -> Result<&'static dyn Backend> {
        bail!(Runtime, "device cuda:{index} is not available: this build of Ember has no CUDA backend")
    }

    pub fn device_count() -> usize {
        0
    }

    pub fn use_wheels(_: &[std::path::PathBuf]) {}
}
#[cfg(not(feature = "cuda"))]
pub use not_built::{backend, device_count, use_wheels, CudaStorage};
