//! The safetensors format on the `safetensors` crate: an 8-byte little-endian header length, a
//! JSON header giving each tensor's dtype, shape and byte range, then the bytes.
//!
//! Files are read in one sequential pass, each tensor's bytes straight into its own fresh
//! (64-byte aligned) storage, so loading costs no memory beyond the tensors themselves and no
//! mapping of a file that may change underneath. Errors are `std::io::Error`s: `InvalidData` for
//! a malformed file, `Unsupported` for a dtype Ember lacks, `InvalidInput` for bad arguments.
//!
//! ```
//! use ember_core::serialize::safetensors;
//! use ember_core::Tensor;
//! let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
//! let bytes = safetensors::serialize(&[("w".to_string(), w)], None).unwrap();
//! let loaded = safetensors::deserialize(&bytes).unwrap();
//! assert_eq!(loaded.tensors[0].1.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, 4.0]);
//! ```
use crate::dtype::DType;
use crate::tensor::Tensor;
use safetensors::tensor::Metadata;
use safetensors::{Dtype, SafeTensorError, View};
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io::{self, Read};
use std::path::Path;

/// The crate's limit: a larger header is refused before it is read.
const MAX_HEADER_BYTES: u64 = 100_000_000;

/// What a safetensors file holds: its tensors in file order and its `__metadata__` strings.
pub struct Loaded {
    /// The tensors, by name, in file order.
    pub tensors: Vec<(String, Tensor)>,
    /// The header's `__metadata__`, if it has one.
    pub metadata: Option<HashMap<String, String>>,
}

/// Serialises `tensors` (any layout: non-contiguous ones are written in row-major order) with
/// optional string `metadata`.
pub fn serialize(tensors: &[(String, Tensor)], metadata: Option<HashMap<String, String>>) -> io::Result<Vec<u8>> {
    safetensors::serialize(views(tensors)?, metadata).map_err(from_crate)
}

/// Writes `tensors` to `path` (through a temporary file renamed into place, so an existing file
/// is never left half-written).
pub fn save_file(tensors: &[(String, Tensor)], metadata: Option<HashMap<String, String>>, path: impl AsRef<Path>) -> io::Result<()> {
    safetensors::serialize_to_file(views(tensors)?, metadata, path.as_ref()).map_err(from_crate)
}

/// Reads a whole safetensors file.
pub fn load_file(path: impl AsRef<Path>) -> io::Result<Loaded> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    read(&mut file, len)
}

/// Parses a safetensors buffer; the tensors get their own memory.
pub fn deserialize(bytes: &[u8]) -> io::Result<Loaded> {
    read(&mut &bytes[..], bytes.len() as u64)
}

/// Reads a safetensors stream of `total_len` bytes: the header, then each tensor in file order.
pub fn read(r: &mut impl Read, total_len: u64) -> io::Result<Loaded> {
    let mut len = [0u8; 8];
    r.read_exact(&mut len).map_err(|_| invalid("header too small"))?;
    let n = u64::from_le_bytes(len);
    if n > MAX_HEADER_BYTES {
        return Err(invalid("header too large"));
    }
    if n.saturating_add(8) > total_len {
        return Err(invalid("invalid header length"));
    }
    let mut header = vec![0u8; n as usize];
    r.read_exact(&mut header)?;
    let meta: Metadata = serde_json::from_slice(&header).map_err(|e| invalid(&format!("invalid JSON in header: {e}")))?;
    if 8 + n + meta.data_len() as u64 != total_len {
        return Err(invalid("incomplete metadata, file not fully covered"));
    }
    let mut tensors = Vec::with_capacity(meta.tensors().len());
    for name in meta.offset_keys() {
        let info = meta.info(&name).expect("offset_keys lists the header's own names");
        let dtype = from_dtype(info.dtype, &name)?;
        let t = Tensor::zeros(&info.shape, dtype).map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e))?;
        let nbytes = t.numel() * dtype.size();
        if nbytes > 0 {
            // SAFETY: `t` is a fresh contiguous tensor of exactly `nbytes` bytes that nothing else sees yet.
            let dst = unsafe { std::slice::from_raw_parts_mut(t.byte_ptr(), nbytes) };
            r.read_exact(dst)?;
        }
        tensors.push((name, t));
    }
    Ok(Loaded { tensors, metadata: meta.metadata().clone() })
}

/// A tensor as the crate's `View`: row-major bytes, borrowed when already contiguous.
struct TensorBytes {
    tensor: Tensor,
    dtype: Dtype,
}

impl View for TensorBytes {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        self.tensor.shape()
    }
    fn data(&self) -> Cow<'_, [u8]> {
        let n = self.data_len();
        if n == 0 {
            return Cow::Borrowed(&[]);
        }
        // SAFETY: the tensor is contiguous (see `views`), so its `n` bytes are one run from `byte_ptr`.
        Cow::Borrowed(unsafe { std::slice::from_raw_parts(self.tensor.byte_ptr(), n) })
    }
    fn data_len(&self) -> usize {
        self.tensor.numel() * self.tensor.dtype().size()
    }
}

fn views(tensors: &[(String, Tensor)]) -> io::Result<Vec<(&str, TensorBytes)>> {
    let mut seen = HashSet::new();
    tensors
        .iter()
        .map(|(name, t)| {
            if !seen.insert(name.as_str()) {
                return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("tensor name '{name}' appears twice")));
            }
            Ok((name.as_str(), TensorBytes { tensor: t.to_device(crate::Device::Cpu).and_then(|h| h.contiguous()).map_err(|e| io::Error::new(io::ErrorKind::OutOfMemory, e))?, dtype: to_dtype(t.dtype(), name)? }))
        })
        .collect()
}

fn to_dtype(d: DType, name: &str) -> io::Result<Dtype> {
    Ok(match d {
        DType::Bool => Dtype::BOOL,
        DType::U8 => Dtype::U8,
        DType::I8 => Dtype::I8,
        DType::I16 => Dtype::I16,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::C64 => Dtype::C64,
        DType::C32 | DType::C128 => {
            return Err(io::Error::new(io::ErrorKind::Unsupported, format!("tensor '{name}' has dtype {d:?}, which the safetensors format cannot store")))
        }
    })
}

fn from_dtype(d: Dtype, name: &str) -> io::Result<DType> {
    Ok(match d {
        Dtype::BOOL => DType::Bool,
        Dtype::U8 => DType::U8,
        Dtype::I8 => DType::I8,
        Dtype::I16 => DType::I16,
        Dtype::I32 => DType::I32,
        Dtype::I64 => DType::I64,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        Dtype::C64 => DType::C64,
        other => {
            return Err(io::Error::new(io::ErrorKind::Unsupported, format!("tensor '{name}' has dtype {other:?}, which Ember does not support")))
        }
    })
}

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("Error while deserializing header: {msg}"))
}

fn from_crate(e: SafeTensorError) -> io::Error {
    match e {
        SafeTensorError::IoError(e) => e,
        other => io::Error::new(io::ErrorKind::InvalidData, other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str, t: Tensor) -> (String, Tensor) {
        (name.to_string(), t)
    }

    #[test]
    fn layout_matches_the_format_by_hand() {
        let a = Tensor::from_vec(vec![1i32, 2, 3, 4], &[2, 2]).unwrap();
        let b = Tensor::from_vec(vec![true], &[]).unwrap();
        let bytes = serialize(&[named("b", b), named("a", a)], None).unwrap();
        // Larger alignment first, then by name: "a" (I32) before "b" (BOOL).
        let header = r#"{"a":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"BOOL","shape":[],"data_offsets":[16,17]}}"#;
        let padded = header.len().next_multiple_of(8);
        assert_eq!(u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize, padded);
        assert_eq!(&bytes[8..8 + header.len()], header.as_bytes());
        assert!(bytes[8 + header.len()..8 + padded].iter().all(|&c| c == b' '));
        let data = &bytes[8 + padded..];
        assert_eq!(&data[..16], [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0]);
        assert_eq!(&data[16..], [1]);
    }

    #[test]
    fn round_trip_every_dtype_and_metadata() {
        let mut tensors = Vec::new();
        for (i, d) in DType::ALL.iter().filter(|d| !d.is_complex()).enumerate() {
            let t = Tensor::from_vec(vec![0.0f64, 1.0, 0.5, 3.0, 1.0, 0.0], &[2, 3]).unwrap().to_dtype(*d).unwrap();
            tensors.push(named(&format!("t{i}"), t.transpose(0, 1).unwrap()));
        }
        let meta = HashMap::from([("format".to_string(), "pt".to_string())]);
        let loaded = deserialize(&serialize(&tensors, Some(meta.clone())).unwrap()).unwrap();
        assert_eq!(loaded.metadata, Some(meta));
        assert_eq!(loaded.tensors.len(), tensors.len());
        for (name, t) in &loaded.tensors {
            let orig = &tensors.iter().find(|(n, _)| n == name).unwrap().1;
            assert_eq!((t.dtype(), t.shape()), (orig.dtype(), orig.shape()));
            assert_eq!(t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap(), orig.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap());
        }
    }

    #[test]
    fn complex64_round_trips_and_other_complex_dtypes_are_refused() {
        use crate::ops::complex::{view_as_complex, view_as_real};
        let t = view_as_complex(&Tensor::from_vec(vec![1.0f32, -2.0, 0.5, 3.0], &[2, 2]).unwrap()).unwrap();
        let loaded = deserialize(&serialize(&[named("z", t.clone())], None).unwrap()).unwrap();
        let z = &loaded.tensors[0].1;
        assert_eq!((z.dtype(), z.shape()), (DType::C64, &[2][..]));
        assert_eq!(view_as_real(z).unwrap().contiguous().unwrap().to_vec::<f32>().unwrap(), [1.0, -2.0, 0.5, 3.0]);
        let wide = t.to_dtype(DType::C128).unwrap();
        assert_eq!(serialize(&[named("w", wide)], None).unwrap_err().kind(), io::ErrorKind::Unsupported);
    }

    #[test]
    fn files_round_trip_and_keep_file_order() {
        let dir = std::env::temp_dir().join(format!("ember-st-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.safetensors");
        let w = Tensor::from_vec(vec![1.5f32; 6], &[3, 2]).unwrap();
        let e = Tensor::zeros(&[0, 4], DType::I64).unwrap();
        save_file(&[named("w", w), named("empty", e)], None, &path).unwrap();
        let loaded = load_file(&path).unwrap();
        let names: Vec<_> = loaded.tensors.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["empty", "w"]);
        assert_eq!(loaded.tensors[1].1.to_vec::<f32>().unwrap(), [1.5; 6]);
        assert_eq!(loaded.tensors[0].1.shape(), [0, 4]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn malformed_buffers_are_refused() {
        let t = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let good = serialize(&[named("x", t)], None).unwrap();
        let kind = |b: &[u8]| deserialize(b).err().map(|e| e.kind());
        assert_eq!(kind(&good[..5]), Some(io::ErrorKind::InvalidData));
        assert_eq!(kind(&good[..good.len() - 1]), Some(io::ErrorKind::InvalidData));
        let mut huge = good.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(kind(&huge), Some(io::ErrorKind::InvalidData));
        let mut bad_json = good.clone();
        bad_json[8] = b'[';
        assert_eq!(kind(&bad_json), Some(io::ErrorKind::InvalidData));
        let u16_header = br#"{"x":{"dtype":"U16","shape":[1],"data_offsets":[0,2]}}"#;
        let mut u16_file = (u16_header.len() as u64).to_le_bytes().to_vec();
        u16_file.extend_from_slice(u16_header);
        u16_file.extend_from_slice(&[0, 0]);
        assert_eq!(kind(&u16_file), Some(io::ErrorKind::Unsupported));
        let dup = [named("x", Tensor::zeros(&[1], DType::F32).unwrap()), named("x", Tensor::zeros(&[1], DType::F32).unwrap())];
        assert_eq!(serialize(&dup, None).err().map(|e| e.kind()), Some(io::ErrorKind::InvalidInput));
    }
}
