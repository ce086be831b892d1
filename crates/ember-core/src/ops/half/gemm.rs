//! bfloat16 matrix products on `vdpbf16ps` (AVX512-BF16): each instruction multiplies 16 pairs
//! of bfloat16 and adds both products into 16 float32 lanes, so operands are read in k-pairs and
//! every sum stays float32 until the finished tile is rounded once into the destination.
//!
//! Blocking: B is packed `NC` columns at a time (all of k) into 32-column panels of k-pairs,
//! shared by all threads. Tasks own rows × panels of that chunk; a row-major bfloat16 A with even
//! k is read in place (a row's k-pairs are consecutive u32s), any other A is rounded to bfloat16
//! rows `MC` at a time. The 12×32 micro-kernel keeps its tile in 24 zmm accumulators over the
//! whole k (slices of `KP_MAX` pairs beyond that, partial sums in a task's float32 scratch), so
//! each output is written once, in the destination's dtype, through its strides. No AMX path
//! (no AMX CPU to test it on).
use super::{path, scalar, Half, Path};
use crate::ops::map::Ptr;
use crate::parallel::{for_range, num_threads};
use half::bf16;

#[path = "gemm_kernel.rs"]
mod kernel;
use kernel::{MR, NR};

/// Columns of B packed at a time: a chunk of up to 512 KiB (at k = 1024) stays in L2 beside a
/// block of A rows while a task sweeps it (512 measured 4% slower at n = 1024, 1024 35%).
const NC: usize = 256;
/// Rows a task walks the chunk's panels with: their k-pairs (48 × k × 2 bytes) stay in L2.
const MC: usize = 48;
/// k-pairs the accumulators run over before a slice's sums go to scratch: a B micro-panel
/// (2048 × 32 pairs = 256 KiB) and a block of A rows still fit L2 together.
const KP_MAX: usize = 2048;
/// How far ahead (in k-pairs) B's rows are prefetched while packing.
const PREFETCH_PAIRS: usize = 8;

/// Whether the `vdpbf16ps` kernel runs (the chosen half path is `avx512bf16`).
pub fn available() -> bool {
    path() == Path::Avx512Bf16
}

/// An operand element type: bfloat16 itself, or float32 (the "medium" float32 matmul
/// precision, operands rounded to nearest even as they are packed).
pub trait Source: Copy + Send + Sync {
    /// Whether the type is bfloat16, so contiguous pairs can be read where they lie.
    const IS_BF16: bool;
    /// Writes `len` elements read at stride `cs` as bfloat16 bits.
    ///
    /// # Safety
    /// `src` valid for `len` reads at stride `cs`, `dst` for `len` writes.
    unsafe fn to_bits(src: *const Self, cs: isize, len: usize, dst: *mut u16);
}

impl Source for bf16 {
    const IS_BF16: bool = true;

    unsafe fn to_bits(src: *const bf16, cs: isize, len: usize, dst: *mut u16) {
        if cs == 1 {
            return std::ptr::copy_nonoverlapping(src as *const u16, dst, len);
        }
        for j in 0..len {
            *dst.add(j) = (*src.offset(j as isize * cs)).to_bits();
        }
    }
}

impl Source for f32 {
    const IS_BF16: bool = false;

    unsafe fn to_bits(src: *const f32, cs: isize, len: usize, dst: *mut u16) {
        if cs == 1 {
            return <bf16 as Half>::narrow(src, dst as *mut bf16, len);
        }
        for j in 0..len {
            *dst.add(j) = scalar::f32_to_bf16_bits(*src.offset(j as isize * cs));
        }
    }
}

/// A destination element type the float32 sums are written as (rounded once for bfloat16).
pub trait Sink: Copy + Send + Sync {
    /// Writes a finished float32 row into a row of this type with column stride `cs`, adding
    /// what is there first when `accumulate`.
    ///
    /// # Safety
    /// `dst` valid for `row.len()` elements at stride `cs`.
    unsafe fn store_row(row: &mut [f32], dst: *mut Self, cs: isize, accumulate: bool);
}

/// Adds the current contents of a strided row into `row`.
unsafe fn add_existing<T: crate::dtype::Element>(row: &mut [f32], dst: *const T, cs: isize) {
    for (j, v) in row.iter_mut().enumerate() {
        *v += (*dst.offset(j as isize * cs)).to_f32();
    }
}

impl Sink for bf16 {
    unsafe fn store_row(row: &mut [f32], dst: *mut bf16, cs: isize, accumulate: bool) {
        if accumulate {
            add_existing(row, dst, cs);
        }
        if cs == 1 {
            return <bf16 as Half>::narrow(row.as_ptr(), dst, row.len());
        }
        for (j, &v) in row.iter().enumerate() {
            *dst.offset(j as isize * cs) = <bf16 as Half>::from_f32_scalar(v);
        }
    }
}

impl Sink for f32 {
    unsafe fn store_row(row: &mut [f32], dst: *mut f32, cs: isize, accumulate: bool) {
        if accumulate {
            add_existing(row, dst, cs);
        }
        for (j, &v) in row.iter().enumerate() {
            *dst.offset(j as isize * cs) = v;
        }
    }
}

/// A strided matrix operand: element (r, c) at `ptr + r·rs + c·cs`.
#[derive(Clone, Copy)]
pub struct Mat<S> {
    pub ptr: Ptr<S>,
    pub rs: isize,
    pub cs: isize,
}

/// A strided destination: element (r, c) at `ptr + r·rs + c·cs`.
#[derive(Clone, Copy)]
pub struct MatMut<D> {
    pub ptr: Ptr<D>,
    pub rs: isize,
    pub cs: isize,
}

/// `c = a · b` (or `c += a · b` when `accumulate`) for (m×k)·(k×n), sums in float32, each
/// output rounded once into `D`. Any strides; runs on the thread pool (inline when called from
/// one of its threads).
///
/// # Safety
/// `a`, `b`, `c` valid for the given shapes and strides, `c` not overlapping `a` or `b`;
/// requires `available()`.
pub unsafe fn gemm<S: Source, D: Sink>(m: usize, n: usize, k: usize, a: Mat<S>, b: Mat<S>, c: MatMut<D>, accumulate: bool) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        return zero_unless_accumulating(m, n, c, accumulate);
    }
    let kp = k.div_ceil(2);
    let mut packed_b = vec![0u32; kp * NC.min(n.div_ceil(NR) * NR)];
    for j0 in (0..n).step_by(NC) {
        let cols = NC.min(n - j0);
        pack_b(b, j0, cols, k, &mut packed_b);
        let chunk = Chunk { a, b: Ptr(packed_b.as_mut_ptr()), c, j0, cols, m, k, accumulate };
        chunk.run();
    }
}

/// An empty sum: zeros, or the destination as it is.
unsafe fn zero_unless_accumulating<D: Sink>(m: usize, n: usize, c: MatMut<D>, accumulate: bool) {
    let mut zeros = vec![0f32; n];
    for i in 0..m {
        D::store_row(&mut zeros, c.ptr.at(i as isize * c.rs), c.cs, accumulate);
        zeros.fill(0.0);
    }
}

/// Columns `j0..j0 + cols` of B as 32-column panels of k-pairs, `[panel][pair][column]`, zero
/// past k and past the last column.
unsafe fn pack_b<S: Source>(b: Mat<S>, j0: usize, cols: usize, k: usize, packed: &mut [u32]) {
    let kp = k.div_ceil(2);
    let out = Ptr(packed.as_mut_ptr());
    for_range(cols.div_ceil(NR), 1, |s, e| {
        for jp in s..e {
            let (c0, width) = (j0 + jp * NR, NR.min(cols - jp * NR));
            let panel = out.at((jp * kp * NR) as isize);
            if S::IS_BF16 && b.rs == 1 && k.is_multiple_of(2) {
                pack_b_columns(b, c0, width, kp, panel);
            } else {
                pack_b_rows(b, c0, width, k, panel);
            }
        }
    });
}

/// A B whose columns are contiguous bfloat16 (a transposed row-major matrix): column j's
/// k-pairs are consecutive u32s, so a panel is a gather of u32s.
unsafe fn pack_b_columns<S: Source>(b: Mat<S>, c0: usize, width: usize, kp: usize, panel: *mut u32) {
    let col = |j: usize| b.ptr.at((c0 + j) as isize * b.cs) as *const u8;
    for q in 0..kp {
        let row = panel.add(q * NR);
        for j in 0..width {
            *row.add(j) = (col(j).add(4 * q) as *const u32).read_unaligned();
        }
        row.add(width).write_bytes(0, NR - width);
    }
}

/// Any other B: each pair of rows as bfloat16 bits (read in place when they are contiguous
/// bfloat16 already), interleaved.
unsafe fn pack_b_rows<S: Source>(b: Mat<S>, c0: usize, width: usize, k: usize, panel: *mut u32) {
    let (mut lo, mut hi) = ([0u16; NR], [0u16; NR]);
    let row = |r: usize| b.ptr.at(r as isize * b.rs + c0 as isize * b.cs) as *const S;
    for q in 0..k.div_ceil(2) {
        let has_hi = 2 * q + 1 < k;
        let (l, h) = if S::IS_BF16 && b.cs == 1 {
            // Rows PREFETCH_PAIRS ahead: the walk down a 64-byte column strip misses in cache.
            let ahead = |r: usize| b.ptr.0.wrapping_offset((r + 2 * PREFETCH_PAIRS) as isize * b.rs + c0 as isize) as *const u8;
            kernel::prefetch(ahead(2 * q));
            kernel::prefetch(ahead(2 * q + 1));
            (row(2 * q) as *const u16, row(2 * q + has_hi as usize) as *const u16)
        } else {
            S::to_bits(row(2 * q), b.cs, width, lo.as_mut_ptr());
            if has_hi {
                S::to_bits(row(2 * q + 1), b.cs, width, hi.as_mut_ptr());
            }
            (lo.as_ptr(), hi.as_ptr())
        };
        kernel::interleave(l, h, width, has_hi, panel.add(q * NR));
    }
}

/// One chunk of packed B columns against all of A.
struct Chunk<S, D> {
    a: Mat<S>,
    b: Ptr<u32>,
    c: MatMut<D>,
    j0: usize,
    cols: usize,
    m: usize,
    k: usize,
    accumulate: bool,
}

impl<S: Source, D: Sink> Chunk<S, D> {
    /// Splits rows (and panels, when rows are few) into a dozen tasks per thread: every chunk
    /// ends in a join, and the threads wait there for the last task.
    fn run(&self) {
        let (micro_rows, panels) = (self.m.div_ceil(MR), self.cols.div_ceil(NR));
        let wanted = 12 * num_threads();
        let row_parts = micro_rows.min(wanted);
        let panel_parts = (wanted / row_parts).clamp(1, panels);
        for_range(row_parts * panel_parts, 1, |s, e| {
            for t in s..e {
                let (rp, pp) = (t / panel_parts, t % panel_parts);
                let rows = (rp * micro_rows / row_parts * MR, ((rp + 1) * micro_rows / row_parts * MR).min(self.m));
                let pans = (pp * panels / panel_parts, (pp + 1) * panels / panel_parts);
                unsafe { self.task(rows, pans) };
            }
        });
    }

    /// Rows `r0..r1` against panels `p0..p1`, `MC` rows at a time.
    unsafe fn task(&self, (r0, r1): (usize, usize), (p0, p1): (usize, usize)) {
        let kp = self.k.div_ceil(2);
        let in_place = S::IS_BF16 && self.a.cs == 1 && self.k.is_multiple_of(2);
        let mut rows_buf = if in_place { Vec::new() } else { vec![0u16; MC.min(r1 - r0) * 2 * kp] };
        let slices = kp.div_ceil(KP_MAX);
        let tiles_per_block = if slices > 1 { MC.div_ceil(MR) * (p1 - p0) } else { 1 };
        let mut scratch = vec![0f32; tiles_per_block * MR * NR];
        for i0 in (r0..r1).step_by(MC) {
            let rows = MC.min(r1 - i0);
            let (a, lda) = if in_place {
                (self.a.ptr.at(i0 as isize * self.a.rs) as *const u16, self.a.rs)
            } else {
                self.round_rows(i0, rows, &mut rows_buf);
                (rows_buf.as_ptr(), 2 * kp as isize)
            };
            for s in 0..slices {
                let (q0, q1) = (s * KP_MAX, kp.min((s + 1) * KP_MAX));
                for jp in p0..p1 {
                    let bpanel = self.b.at(((jp * kp + q0) * NR) as isize) as *const u32;
                    for ir in (0..rows).step_by(MR) {
                        let t = if slices > 1 { (jp - p0) * MC.div_ceil(MR) + ir / MR } else { 0 };
                        let tile = &mut scratch[t * MR * NR..(t + 1) * MR * NR];
                        let arows = a.offset(ir as isize * lda + 2 * q0 as isize);
                        kernel::run(MR.min(rows - ir), q1 - q0, arows, lda, bpanel, tile, s > 0);
                        if s + 1 == slices {
                            self.store(tile, i0 + ir, MR.min(rows - ir), jp);
                        }
                    }
                }
            }
        }
    }

    /// Rows `i0..i0 + rows` of A as bfloat16 rows of `2·kp` elements (a zero after an odd k).
    unsafe fn round_rows(&self, i0: usize, rows: usize, buf: &mut [u16]) {
        let len = 2 * self.k.div_ceil(2);
        for i in 0..rows {
            let dst = buf.as_mut_ptr().add(i * len);
            S::to_bits(self.a.ptr.at((i0 + i) as isize * self.a.rs), self.a.cs, self.k, dst);
            if self.k < len {
                *dst.add(self.k) = 0;
            }
        }
    }

    /// Writes a finished tile's `rows` rows at output row `i` of panel `jp`.
    unsafe fn store(&self, tile: &mut [f32], i: usize, rows: usize, jp: usize) {
        let width = NR.min(self.cols - jp * NR);
        let col = (self.j0 + jp * NR) as isize * self.c.cs;
        for (r, row) in tile.chunks_exact_mut(NR).take(rows).enumerate() {
            let dst = self.c.ptr.at((i + r) as isize * self.c.rs + col);
            D::store_row(&mut row[..width], dst, self.c.cs, self.accumulate);
        }
    }
}

#[cfg(test)]
#[path = "gemm_tests.rs"]
mod tests;
