use crate::error::{Error, ErrorKind, Result};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    Cpu,
    Cuda(usize),
    Metal(usize),
}

impl Device {
    /// Parses PyTorch's device strings: `cpu`, `cuda`, `cuda:1`, `mps`.
    pub fn parse(s: &str) -> Result<Device> {
        let (kind, ordinal) = match s.split_once(':') {
            Some((k, o)) => {
                let o = o.parse::<usize>().map_err(|_| {
                    Error::new(ErrorKind::Runtime, format!("Invalid device string: '{s}'"))
                })?;
                (k, o)
            }
            None => (s, 0),
        };
        match kind {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda(ordinal)),
            "mps" => Ok(Device::Metal(ordinal)),
            _ => Err(Error::new(
                ErrorKind::Runtime,
                format!("Expected one of cpu, cuda, mps device type at start of device string: {s}"),
            )),
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Cuda(_) => "cuda",
            Device::Metal(_) => "mps",
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
            Device::Metal(i) => write!(f, "mps:{i}"),
        }
    }
}
