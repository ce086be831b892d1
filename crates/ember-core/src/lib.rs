#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
pub mod autograd;
pub mod backend;
pub mod device;
pub mod dtype;
pub mod error;
pub mod layout;
pub mod ops;
pub mod parallel;
pub mod serialize;
pub mod storage;
pub(crate) mod strided;
pub mod tensor;

pub use device::Device;
pub use dtype::{DType, Element};
pub use error::{Error, ErrorKind, Result};
pub use layout::Layout;
pub use tensor::Tensor;
