//! Tensors in other programs' file formats. `safetensors` reads and writes the format of the same
//! name; PyTorch's pickle-based checkpoints are parsed by the Python package, which builds its
//! tensors with the two storage helpers here.
pub mod safetensors;

use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::tensor::Tensor;

/// A 1-d tensor of `dtype` over all of `t`'s storage (whole elements; a trailing partial element
/// is left out): how a checkpoint's raw bytes become a typed storage, or a typed storage its bytes.
/// It shares the memory but not the version counter, so it is the fresh root of the tensors that
/// [`on_storage`] builds on it.
pub fn reinterpret_storage(t: &Tensor, dtype: DType) -> Tensor {
    let elements = t.storage().bytes() / dtype.size();
    Tensor::from_parts(t.storage().clone(), Layout::contiguous(&[elements]), dtype)
}

/// PyTorch's `set_(storage, offset, size, stride)`: a tensor with its own layout on `storage`'s
/// memory and version counter. It is not a view (no base, no history), as the tensors PyTorch
/// rebuilds from a checkpoint are not. The layout may come from an untrusted file, so it is
/// checked with overflow-free arithmetic against the storage's length.
pub fn on_storage(storage: &Tensor, shape: &[usize], strides: &[isize], offset: usize) -> Result<Tensor> {
    if shape.len() != strides.len() {
        bail!(Runtime, "mismatch in length of strides and shape: {} vs {}", strides.len(), shape.len());
    }
    let available = storage.storage().bytes() / storage.dtype().size();
    let needed = required_elements(shape, strides, offset).ok_or_else(|| {
        crate::error::Error::new(
            crate::error::ErrorKind::Runtime,
            format!("sizes {shape:?} with strides {strides:?} overflow the address space"),
        )
    })?;
    if needed > available as u128 {
        bail!(
            Runtime,
            "setStorage: sizes {shape:?}, strides {strides:?}, storage offset {offset} require a storage of {needed} elements but it holds {available}"
        );
    }
    Ok(storage.relayout(Layout::new(shape.to_vec(), strides.to_vec(), offset)))
}

/// One past the highest element a layout touches (0 for an empty one), or `None` when a stride
/// is negative or the numbers overflow: PyTorch's checkpoints never hold negative strides.
fn required_elements(shape: &[usize], strides: &[isize], offset: usize) -> Option<u128> {
    if shape.contains(&0) {
        return Some(0);
    }
    let numel = shape.iter().try_fold(1u128, |acc, &d| acc.checked_mul(d as u128))?;
    if numel > isize::MAX as u128 {
        return None;
    }
    let mut last = offset as u128;
    for (&d, &s) in shape.iter().zip(strides) {
        let s = u128::try_from(s).ok()?;
        last = last.checked_add((d as u128 - 1).checked_mul(s)?)?;
    }
    (last < isize::MAX as u128).then_some(last + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_on_one_storage_share_memory_and_version() {
        let flat = Tensor::from_vec((0..12).map(|i| i as f32).collect::<Vec<_>>(), &[12]).unwrap();
        let a = on_storage(&flat, &[3, 4], &[4, 1], 0).unwrap();
        let t = on_storage(&flat, &[4, 3], &[1, 4], 0).unwrap();
        assert!(a.same_storage(&t) && a.base().is_none());
        assert_eq!(t.to_vec::<f32>().unwrap()[..4], [0.0, 4.0, 8.0, 1.0]);
        a.bump_version();
        assert_eq!(t.version(), a.version());
        let tail = on_storage(&flat, &[2], &[1], 10).unwrap();
        assert_eq!(tail.to_vec::<f32>().unwrap(), [10.0, 11.0]);
    }

    #[test]
    fn out_of_bounds_and_overflowing_layouts_are_refused() {
        let flat = Tensor::zeros(&[6], DType::F32).unwrap();
        assert!(on_storage(&flat, &[7], &[1], 0).is_err());
        assert!(on_storage(&flat, &[2], &[1], 5).is_err());
        assert!(on_storage(&flat, &[1 << 40, 1 << 40], &[1, 1], 0).is_err());
        assert!(on_storage(&flat, &[2, 2], &[isize::MAX, 1], 0).is_err());
        assert!(on_storage(&flat, &[1 << 40, 1 << 40], &[0, 0], 0).is_err());
        assert!(on_storage(&flat, &[2], &[-1], 1).is_err());
        assert_eq!(on_storage(&flat, &[0, 1 << 60], &[1, 1], 6).unwrap().numel(), 0);
    }

    #[test]
    fn reinterpreting_keeps_the_bytes() {
        let t = Tensor::from_vec(vec![1.0f32, -2.0], &[2]).unwrap();
        let bytes = reinterpret_storage(&t, DType::U8);
        assert_eq!(bytes.shape(), [8]);
        assert_eq!(bytes.to_vec::<u8>().unwrap()[..4], 1.0f32.to_le_bytes());
        let back = reinterpret_storage(&bytes, DType::F32);
        assert_eq!(back.to_vec::<f32>().unwrap(), [1.0, -2.0]);
    }
}
