//! Kernels over Apache Arrow buffers for `emberarrow` (TorchArrow on pyarrow): the recsys
//! functions Arrow has no kernel for, and fused conversions that write a tensor's final layout
//! straight from a frame's columns. Everything works on plain slices (values, offsets, validity
//! bitmaps as Arrow lays them out), so the buffers cross from Python without a copy; parallel
//! kernels run on the current rayon pool (the binding installs Ember's).
#![doc = include_str!("../README.md")]
mod bitmap;
mod dense;
mod jagged;
mod lists;
mod sigrid;

pub use bitmap::Bitmap;
pub use dense::{dense_rows, DenseOut, Numbers};
pub use jagged::{key_major, IdColumn, IdSteps};
pub use lists::{bucketize, firstx};
pub use sigrid::{sigrid_hash, sigrid_hash_one};

/// A kernel's arguments do not fit together (lengths, offsets, parameters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn fail<T>(message: String) -> Result<T> {
    Err(Error(message))
}

/// Items per parallel task: large enough that handing out a task costs little, small enough
/// that the two halves of a shared machine's cores both get work.
const CHUNK: usize = 1 << 14;
