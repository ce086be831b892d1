//! Where a tensor's storage lives, named as PyTorch names devices (`torch.device`).
use crate::error::{Error, ErrorKind, Result};
use std::fmt;

/// A device type and its index (PyTorch's `torch.device`); `Display` prints `cpu` or `cuda:1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// Host memory (`cpu`).
    Cpu,
    /// An NVIDIA GPU by ordinal (`cuda:N`).
    Cuda(usize),
    /// An Apple GPU (`mps:N`).
    Metal(usize),
    /// A backend registered at run time (PyTorch's `privateuseone`): out-of-tree backends and
    /// the test backend that proves the contract (`backend::register_private_use1`).
    PrivateUse1(usize),
}

/// PyTorch's device type names, in the order its parse error lists them.
const KINDS: [&str; 4] = ["cpu", "cuda", "mps", "privateuseone"];

impl Device {
    /// Parses PyTorch's device strings (`cpu`, `cuda`, `cuda:1`, `mps`, `privateuseone:0`) into
    /// the type and the index, which is `None` when the string names none.
    pub fn parse_spec(s: &str) -> Result<(&'static str, Option<usize>)> {
        let invalid = || Error::new(ErrorKind::Runtime, format!("Invalid device string: '{s}'"));
        let (kind, index) = match s.split_once(':') {
            // As c10's parser: digits only, no sign, no leading zero.
            Some((k, o)) if !o.is_empty() && o.bytes().all(|b| b.is_ascii_digit()) && (o == "0" || !o.starts_with('0')) => {
                (k, Some(o.parse::<usize>().map_err(|_| invalid())?))
            }
            Some(_) => return Err(invalid()),
            None => (s, None),
        };
        let Some(kind) = KINDS.into_iter().find(|&k| k == kind) else {
            return Err(Error::new(
                ErrorKind::Runtime,
                format!("Expected one of {} device type at start of device string: {s}", KINDS.join(", ")),
            ));
        };
        Ok((kind, index))
    }

    /// The device a string names (the index defaults to 0).
    pub fn parse(s: &str) -> Result<Device> {
        let (kind, index) = Self::parse_spec(s)?;
        let current = if kind == "cuda" { current_cuda() } else { 0 };
        Ok(Self::new(kind, index.unwrap_or(current)))
    }

    /// The device of a type name `parse_spec` returned.
    pub fn new(kind: &str, index: usize) -> Device {
        match kind {
            "cpu" => Device::Cpu,
            "cuda" => Device::Cuda(index),
            "mps" => Device::Metal(index),
            "privateuseone" => Device::PrivateUse1(index),
            _ => unreachable!("device type {kind} was not parsed"),
        }
    }

    /// PyTorch's device type name (`device.type`): `cpu`, `cuda`, `mps` or `privateuseone`.
    pub fn kind(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Cuda(_) => "cuda",
            Device::Metal(_) => "mps",
            Device::PrivateUse1(_) => "privateuseone",
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(i) | Device::Metal(i) | Device::PrivateUse1(i) => write!(f, "{}:{i}", self.kind()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Device;

    #[test]
    fn parses_pytorch_device_strings() {
        assert_eq!(Device::parse_spec("cuda").unwrap(), ("cuda", None));
        assert_eq!(Device::parse("cuda:1").unwrap(), Device::Cuda(1));
        assert_eq!(Device::parse("mps").unwrap().to_string(), "mps:0");
        for bad in ["cuda:", "cuda:-1", "cuda:01", "cuda:x", "cuda:1:2"] {
            assert_eq!(Device::parse(bad).unwrap_err().message, format!("Invalid device string: '{bad}'"));
        }
        assert!(Device::parse("gpu").unwrap_err().message.starts_with("Expected one of cpu, cuda, mps, privateuseone"));
    }
}

static CURRENT_CUDA: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The CUDA device a `"cuda"` with no index means (`torch.cuda.current_device()`).
pub fn current_cuda() -> usize {
    CURRENT_CUDA.load(std::sync::atomic::Ordering::Relaxed)
}

/// Makes `cuda:<index>` the device `"cuda"` means (`torch.cuda.set_device`), once it is known
/// to exist.
pub fn set_current_cuda(index: usize) -> Result<()> {
    crate::backend::of(Device::Cuda(index))?;
    CURRENT_CUDA.store(index, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}
