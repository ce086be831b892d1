#![allow(non_snake_case)] // the extension must be called `_C`
//! `ember._C`: the one extension module. It converts arguments, releases the GIL around
//! kernels and maps errors; the logic lives in the Rust crates.
mod audio;
mod autograd;
mod complex;
mod convert;
mod dlpack;
mod errors;
mod index;
mod linalg;
mod nn_spatial;
mod nn_core;
mod ops;
mod serialize;
mod sort;
mod tensor;
mod text;

/// Kernels allocate on pool threads (gemm's packing buffers, outputs), and glibc gives each
/// thread an arena that keeps its freed pages: RSS drifted above PyTorch's in a training loop.
/// mimalloc reuses and returns memory across threads (Polars ships an allocator the same way).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use convert::PyDType;
use ember_core::DType;
use pyo3::prelude::*;

#[pymodule]
fn _C(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<PyDType>()?;
    for d in DType::ALL {
        m.add(d.name(), PyDType(d))?;
    }
    ops::register(m)?;
    text::register(m)?;
    audio::register(m)?;
    index::register(m)?;
    dlpack::register(m)?;
    sort::register(m)?;
    nn_spatial::register(m)?;
    nn_core::register(m)?;
    autograd::register(m)?;
    serialize::register(m)?;
    complex::register(m)?;
    linalg::register(m)?;
    Ok(())
}
