//! Linear algebra on host memory, on faer. Each kernel takes a batch of row-major matrices (the
//! input made contiguous), hands faer one matrix at a time (row-major views are just faer
//! matrices with swapped strides) and spreads the batch over Ember's pool; a lone large matrix
//! instead lets faer parallelise inside it.
pub mod decomp;
pub mod eigen;
pub mod solve;
pub mod svd;

use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::parallel::{for_range, pool};
use crate::tensor::Tensor;
use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::{MatMut, MatRef, Par};

/// The element types faer computes in: float32/64 and complex64/128.
pub trait Field: faer::traits::ComplexField + Element {}
impl Field for f32 {}
impl Field for f64 {}
impl Field for crate::dtype::CFloat {}
impl Field for crate::dtype::CDouble {}

/// Runs `$body` with `$T` bound to the faer element type of `$dtype`.
#[macro_export]
macro_rules! with_field {
    ($dtype:expr, $T:ident, $body:expr) => {{
        use $crate::dtype::DType;
        match $dtype {
            DType::F32 => { type $T = f32; $body }
            DType::F64 => { type $T = f64; $body }
            DType::C64 => { type $T = $crate::dtype::CFloat; $body }
            DType::C128 => { type $T = $crate::dtype::CDouble; $body }
            other => unreachable!("linalg kernel called with {other}"),
        }
    }};
}

/// A contiguous batch of `m × n` row-major matrices and its leading (batch) shape.
pub struct Batch {
    pub t: Tensor,
    pub lead: Vec<usize>,
    pub count: usize,
    pub m: usize,
    pub n: usize,
}

impl Batch {
    pub fn new(x: &Tensor) -> Result<Batch> {
        let nd = x.ndim();
        let lead = x.shape()[..nd - 2].to_vec();
        Ok(Batch { t: x.contiguous()?, count: lead.iter().product(), m: x.shape()[nd - 2], n: x.shape()[nd - 1], lead })
    }

    /// Matrix `i` as a faer view.
    ///
    /// # Safety
    /// `i < count`, and `T` is the tensor's element type.
    pub unsafe fn mat<'a, T: Field>(&self, i: usize) -> MatRef<'a, T> {
        let len = self.m * self.n;
        MatRef::from_row_major_slice(std::slice::from_raw_parts(self.t.data_ptr::<T>().add(i * len), len), self.m, self.n)
    }
}

/// `[lead..., m, n]` freshly allocated, and a writer of its matrix `i`.
pub struct Out {
    pub t: Tensor,
    ptr: usize,
    m: usize,
    n: usize,
}

impl Out {
    pub fn new(lead: &[usize], m: usize, n: usize, dtype: DType) -> Result<Out> {
        let shape: Vec<usize> = lead.iter().copied().chain([m, n]).collect();
        let t = Tensor::zeros(&shape, dtype)?;
        Ok(Out { ptr: t.byte_ptr() as usize, t, m, n })
    }

    /// Matrix `i` as a mutable faer view; each batch task writes only its own matrices.
    ///
    /// # Safety
    /// In bounds, `T` is the dtype, and no two live views of the same `i`.
    pub unsafe fn mat<'a, T: Field>(&self, i: usize) -> MatMut<'a, T> {
        let len = self.m * self.n;
        MatMut::from_row_major_slice_mut(std::slice::from_raw_parts_mut((self.ptr as *mut T).add(i * len), len), self.m, self.n)
    }
}

/// Calls `f(i, par)` for every matrix of a batch: many matrices run one per task, a lone one
/// gets faer's own parallelism when it is large enough (`work`: its flop count).
pub fn each(count: usize, work: usize, f: impl Fn(usize, Par) + Sync) {
    if count == 1 {
        let par = if work >= 1 << 21 && pool().current_num_threads() > 1 { Par::rayon(0) } else { Par::Seq };
        pool().install(|| f(0, par));
    } else {
        for_range(count, (1 << 18) / work.max(1) + 1, |s, e| (s..e).for_each(|i| f(i, Par::Seq)));
    }
}

/// A scratch buffer of `req` for one faer call.
pub fn scratch(req: StackReq) -> MemBuffer {
    MemBuffer::new(req)
}

pub fn stack(buf: &mut MemBuffer) -> &mut MemStack {
    MemStack::new(buf)
}

/// Real values (eigenvalues, singular values) gathered as f64, as a tensor of `dtype`.
pub fn real_tensor(values: Vec<f64>, shape: &[usize], dtype: DType) -> Result<Tensor> {
    Tensor::from_vec(values, shape)?.to_dtype(dtype)
}
