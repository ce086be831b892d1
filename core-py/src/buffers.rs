//! Borrowing the items of a Python buffer (NumPy arrays from the domain packages) as slices,
//! for the bindings of the kernel crates (`arrow.rs`, `rec.rs`).
use pyo3::buffer::{Element, PyBuffer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

fn contiguous<T: Element>(buf: &PyBuffer<T>, name: &str) -> PyResult<()> {
    if buf.is_c_contiguous() {
        Ok(())
    } else {
        Err(PyValueError::new_err(format!("{name}: the buffer must be contiguous")))
    }
}

/// The items of a buffer, borrowed for as long as the buffer is held.
pub(crate) fn items<'a, T: Element>(buf: &'a PyBuffer<T>, name: &str) -> PyResult<&'a [T]> {
    contiguous(buf, name)?;
    if buf.item_count() == 0 {
        return Ok(&[]);
    }
    // SAFETY: a held buffer keeps its memory alive and in place; it is contiguous and aligned
    // (PyBuffer::get checked the alignment and the item type).
    Ok(unsafe { std::slice::from_raw_parts(buf.buf_ptr() as *const T, buf.item_count()) })
}

/// The items of an output buffer. The caller passes a fresh array that no input shares.
#[allow(clippy::mut_from_ref)]
pub(crate) fn items_mut<'a, T: Element>(buf: &'a PyBuffer<T>, name: &str) -> PyResult<&'a mut [T]> {
    contiguous(buf, name)?;
    if buf.readonly() {
        return Err(PyValueError::new_err(format!("{name}: the output buffer is read-only")));
    }
    if buf.item_count() == 0 {
        return Ok(&mut []);
    }
    // SAFETY: as in `items`, and the buffer is writable and not read elsewhere during the call.
    Ok(unsafe { std::slice::from_raw_parts_mut(buf.buf_ptr() as *mut T, buf.item_count()) })
}
