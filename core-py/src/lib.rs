#![allow(non_snake_case)] // the extension must be called `_C`
//! `ember._C`: the one extension module. It converts arguments, releases the GIL around
//! kernels and maps errors; the logic lives in the Rust crates.
mod arrow;
mod audio;
mod autograd;
mod buffers;
mod complex;
mod convert;
mod cuda;
mod dlpack;
mod errors;
mod index;
mod linalg;
mod nn_spatial;
mod nn_core;
mod ops;
mod rec;
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
use pyo3::exceptions::PyRuntimeError;
use pyo3::panic::PanicException;
use pyo3::prelude::*;

/// The last resort for a Rust panic in any entry point. pyo3 catches it in every function and
/// method trampoline and raises `PanicException`, which derives from `BaseException`, so
/// `except Exception` let it through. That type is this extension's own (pyo3 is linked into
/// each extension), so rebasing it on `RuntimeError` makes every panic the exception PyTorch
/// raises for an internal error, on every path and at no cost per call.
fn panics_as_runtime_errors(py: Python<'_>) -> PyResult<()> {
    py.get_type::<PanicException>().setattr("__bases__", (py.get_type::<PyRuntimeError>(),))
}

/// A caught panic reaches Python with its message; the default hook would also print it with
/// a location (and a backtrace) to stderr. Kept only where RUST_BACKTRACE asks for it.
fn quiet_caught_panics() {
    if std::env::var_os("RUST_BACKTRACE").is_none() {
        std::panic::set_hook(Box::new(|_| {}));
    }
}

/// Panics with `message`: how the tests reach the panic path once every known panic is fixed.
#[pyfunction]
fn _panic_for_test(message: &str) {
    panic!("{message}");
}

#[pymodule]
fn _C(m: &Bound<'_, PyModule>) -> PyResult<()> {
    panics_as_runtime_errors(m.py())?;
    quiet_caught_panics();
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<PyDType>()?;
    for d in DType::ALL {
        m.add(d.name(), PyDType(d))?;
    }
    ops::register(m)?;
    cuda::register(m)?;
    text::register(m)?;
    audio::register(m)?;
    arrow::register(m)?;
    rec::register(m)?;
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
