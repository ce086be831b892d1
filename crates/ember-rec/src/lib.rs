//! FBGEMM's recommendation kernels for `emberrec`, in pure Rust over slices: embedding rows
//! quantized in FBGEMM's exact byte layouts (`rowwise`: the fused 8-bit and n-bit rowwise
//! formats; `hfp8`: FBGEMM's 8-bit float; `sparse_type`: the rows of the inference
//! table-batched embedding bag), and that embedding bag itself (`tbe`), which dequantizes each
//! row as it pools it; and the training embedding bag (`train`): float32 or binary16 tables
//! with FBGEMM's optimizers fused into its backward pass. Parallel kernels run on the current
//! rayon pool (the binding installs Ember's). Exposed to Python as `ember._C.rec`.
#![doc = include_str!("../README.md")]
mod hfp8;
mod jagged;
mod rowwise;
mod simd;
mod sparse;
mod sparse_type;
mod stream;
mod tbe;
pub mod train;

pub use hfp8::{decode_hfp8, encode_hfp8, Hfp8};
pub use jagged::{
    batched_dense_vec_jagged_2d_mul, batched_dense_vec_jagged_2d_mul_backward, dense_to_jagged, jagged_dense_add_dense_output,
    jagged_dense_jagged_output, jagged_to_padded_dense, Combine, Dense, Jagged, Real, PARALLEL_MIN_ELEMENTS,
};
pub use rowwise::{
    dequantize_fused8, dequantize_nbit, fused8_row_bytes, nbit_row_bytes, quantize_fused8, quantize_nbit,
};
pub use sparse::{block_bucketize, cumsum, scatter_rows, Bucketed, Bucketize, Cumsum, Int, Permutation};
pub use sparse_type::{dequantize_rows, quantize_rows, SparseType, SCALE_BIAS_BYTES};
pub use tbe::{embedding_bags, BoundsCheck, Indices, Output, Pooling, Table, TableBatch};

/// A kernel's arguments do not fit together (lengths, offsets, parameters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Sizes, offsets or parameters that contradict each other (Python: ValueError).
    Value(String),
    /// An index outside its table under `BoundsCheck::Fatal` (Python: IndexError).
    Index(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Value(m) | Error::Index(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn fail<T>(message: String) -> Result<T> {
    Err(Error::Value(message))
}

/// Rows per parallel task in the row-by-row (de)quantizers: large enough that handing out a
/// task costs little, small enough that both halves of a shared machine's cores get work.
const ROWS_PER_TASK: usize = 256;
