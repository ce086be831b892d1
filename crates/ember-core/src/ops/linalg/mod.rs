//! `linalg`: dense linear algebra batched over leading dims. PyTorch's argument checks, error
//! messages and derivatives live here (`ops.rs`, `grad/linalg.rs`); the factorizations are the
//! backend's. Failures are per matrix: an `info` code (0 for success) that the `_ex` variants
//! return and the others turn into errors.
pub mod ops;

use crate::backend::cpu::map::Ptr;
use crate::bail;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::tensor::Tensor;

/// PyTorch's dtype check: linalg works on float and complex tensors only.
pub fn check_dtype(op: &str, x: &Tensor) -> Result<()> {
    match x.dtype() {
        DType::F32 | DType::F64 | DType::C64 | DType::C128 => Ok(()),
        DType::F16 | DType::BF16 | DType::C32 => bail!(Runtime, "{op}: Low precision dtypes not supported. Got {}", x.dtype().legacy_name()),
        d => bail!(NotImplemented, "{op}: Expected a floating point or complex tensor as input. Got {}", d.legacy_name()),
    }
}

/// Checks `x` is a batch of matrices (at least 2-d), square when `square`.
pub fn check_matrix(op: &str, x: &Tensor, square: bool) -> Result<()> {
    if x.ndim() < 2 {
        bail!(Runtime, "{op}: The input tensor A must have at least 2 dimensions.");
    }
    let (m, n) = (x.shape()[x.ndim() - 2], x.shape()[x.ndim() - 1]);
    if square && m != n {
        bail!(Runtime, "{op}: A must be batches of square matrices, but they are {m} by {n} matrices");
    }
    check_dtype(op, x)
}

/// Per-matrix failure codes, written from the batch tasks.
pub struct Info {
    codes: Vec<i32>,
}

impl Info {
    /// `count` codes, all 0 (success); a backend's linalg kernel sets a code per failed matrix.
    pub fn new(count: usize) -> Info {
        Info { codes: vec![0; count] }
    }

    /// A pointer to the codes, one `i32` per batch matrix, that the batch tasks write in
    /// parallel (each task writes only its own matrices' codes).
    pub fn writer(&mut self) -> Ptr<i32> {
        Ptr(self.codes.as_mut_ptr())
    }

    /// The info as an int32 tensor of the batch shape (what `_ex` returns).
    pub fn tensor(&self, lead: &[usize]) -> Tensor {
        Tensor::from_vec(self.codes.clone(), lead).expect("info shape matches the batch")
    }

    /// The first failure as PyTorch reports it: `op: (Batch element i): message(code)`.
    pub fn check(&self, op: &str, message: impl Fn(i32) -> String) -> Result<()> {
        let Some(i) = self.codes.iter().position(|&c| c != 0) else { return Ok(()) };
        let which = if self.codes.len() > 1 { format!("(Batch element {i}): ") } else { String::new() };
        Err(Error::new(ErrorKind::LinAlg, format!("{op}: {which}{}", message(self.codes[i]))))
    }
}

/// `linalg.solve`'s message for a singular matrix.
pub(crate) const SINGULAR: &str = "The solver failed because the input matrix is singular.";

/// Broadcasts the batch dims of `a` ([*, n, n]) and `b` ([*, n, k]) against each other.
pub fn broadcast_pair(op: &str, a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor)> {
    let (na, nb) = (a.ndim(), b.ndim());
    if nb < 2 || a.shape()[na - 1] != b.shape()[nb - 2] {
        let bshape = if nb >= 2 { format!("{}x{}", b.shape()[nb - 2], b.shape()[nb - 1]) } else { format!("{}x1", b.shape().last().copied().unwrap_or(1)) };
        bail!(Runtime, "{op}: Incompatible shapes of A and B for the equation AX = B ({}x{} and {bshape})", a.shape()[na - 2], a.shape()[na - 1]);
    }
    let lead = crate::layout::broadcast_shapes(&a.shape()[..na - 2], &b.shape()[..nb - 2])?;
    let with = |t: &Tensor, r: usize, c: usize| -> Result<Tensor> { t.broadcast_to(&lead.iter().copied().chain([r, c]).collect::<Vec<_>>()) };
    Ok((with(a, a.shape()[na - 2], a.shape()[na - 1])?, with(b, b.shape()[nb - 2], b.shape()[nb - 1])?))
}

/// `linalg.inv`'s message for a zero pivot at 1-based diagonal position `code`.
pub(crate) fn inv_message(code: i32) -> String {
    format!("The diagonal element {code} is zero, the inversion could not be completed because the input matrix is singular.")
}

/// `linalg.cholesky`'s message for a non-positive leading minor of order `code`.
pub(crate) fn not_positive_definite(code: i32) -> String {
    format!("The factorization could not be completed because the input is not positive-definite (the leading minor of order {code} is not positive-definite).")
}

/// The eigen solvers' message when the iteration does not converge.
pub(crate) const NO_CONVERGENCE: &str = "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues.";

/// `linalg.svd`'s message when the iteration does not converge.
pub(crate) const SVD_NO_CONVERGENCE: &str = "The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated singular values.";
