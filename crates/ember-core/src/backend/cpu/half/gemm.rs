//! bfloat16 matrix products on `vdpbf16ps` (AVX512-BF16): each instruction multiplies 16 pairs
//! of bfloat16 and adds both products into 16 float32 lanes, so operands are read in k-pairs and
//! every sum stays float32 until the finished tile is rounded once into the destination.
//!
//! Blocking: B is packed `NC` columns at a time (all of k) into 32-column panels of k-pairs,
//! shared by all threads; each job multiplies by one chunk while it packs the next. Tasks own
//! rows × panels of a chunk; a row-major bfloat16 A with even k is read in place (a row's
//! k-pairs are consecutive u32s) unless its rows alias in L1, any other A is rounded or copied to
//! bfloat16 rows `MC` at a time. The 12×32 micro-kernel keeps its tile in 24 zmm accumulators
//! over the whole k (slices of `KP_MAX` pairs beyond that, partial sums in a task's float32
//! scratch), so each output is written once: whole tiles straight into a unit-stride
//! destination, the rest through its strides. No AMX path (no AMX CPU to test it on).
use super::{path, scalar, Half, Path};
use crate::backend::cpu::map::{prefetch, Ptr};
use crate::parallel::{for_each_with, for_range, num_threads};
use half::bf16;

#[path = "gemm_kernel.rs"]
mod kernel;
use kernel::{MR, NR};

/// Columns of B packed at a time: a chunk of up to 512 KiB (at k = 1024) stays in L2 beside a
/// block of A rows while a task sweeps it (512 measured 4% slower at n = 1024, 1024 35%).
const NC: usize = 256;
/// Columns per chunk when A's rows are copied (once per chunk): fewer copies.
const NC_COPIED: usize = 512;
/// Rows a task walks the chunk's panels with: their k-pairs (48 × k × 2 bytes) stay in L2.
const MC: usize = 48;
/// k-pairs the accumulators run over before a slice's sums go to scratch: a B micro-panel
/// (2048 × 32 pairs = 256 KiB) and a block of A rows still fit L2 together.
const KP_MAX: usize = 2048;
/// How far ahead (in k-pairs) B's rows are prefetched while packing.
const PREFETCH_PAIRS: usize = 8;
/// k-pairs of a chunk one packing task covers.
const PACK_PAIRS: usize = 64;

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

    /// The kernel's output for whole rows of 32 unit-stride elements at `dst`, `rs` apart.
    fn direct(dst: *mut Self, rs: isize) -> kernel::Out;
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

    fn direct(dst: *mut bf16, rs: isize) -> kernel::Out {
        kernel::Out::Bf16(dst as *mut u16, rs)
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

    fn direct(dst: *mut f32, rs: isize) -> kernel::Out {
        kernel::Out::F32(dst, rs)
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
    let mut product = Product { a, b, c, m, n, k, kp: k.div_ceil(2), nc: NC, accumulate };
    if !product.a_in_place() {
        product.nc = NC_COPIED;
    }
    let chunk_len = product.panel_len() * product.nc.min(n).div_ceil(NR);
    let chunks = n.div_ceil(product.nc);
    // Two chunk buffers: each job multiplies by one while it packs the next chunk into the
    // other. Not zeroed: a job reads only what the job before it packed.
    let mut packed = Vec::<u32>::with_capacity(chunk_len * chunks.min(2));
    let base = Ptr(packed.as_mut_ptr());
    let buffer = |chunk: usize| Ptr(base.at((chunk % 2 * chunk_len) as isize));
    let pack_tasks = product.kp.div_ceil(PACK_PAIRS);
    for_range(pack_tasks, 1, |s, e| (s..e).for_each(|t| product.pack(0, t, buffer(0))));
    for chunk in 0..chunks {
        let next = if chunk + 1 < chunks { pack_tasks } else { 0 };
        let split = product.split(chunk);
        for_each_with(next + split.tasks(), || product.scratch(&split), |scratch, t| match t < next {
            true => product.pack(chunk + 1, t, buffer(chunk + 1)),
            false => product.task(chunk, buffer(chunk), split.task(t - next), scratch),
        });
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

/// Whether A's rows lie a multiple of 4 KiB apart: the micro-kernel's 12 rows would then share
/// one 8-way L1 set, so they are copied at a padded stride (5% faster at k = 2048).
fn rows_alias(rs: isize) -> bool {
    (rs * 2) % 4096 == 0
}

/// A chunk's tasks: rows × panels, two dozen per thread (every chunk ends in a join, where the
/// threads wait for the last task).
struct Split {
    micro_rows: usize,
    panels: usize,
    row_parts: usize,
    panel_parts: usize,
}

impl Split {
    fn tasks(&self) -> usize {
        self.row_parts * self.panel_parts
    }

    /// Task `t`'s rows and panels.
    fn task(&self, t: usize) -> ((usize, usize), (usize, usize)) {
        let (rp, pp) = (t / self.panel_parts, t % self.panel_parts);
        let rows = (rp * self.micro_rows / self.row_parts * MR, (rp + 1) * self.micro_rows / self.row_parts * MR);
        (rows, (pp * self.panels / self.panel_parts, (pp + 1) * self.panels / self.panel_parts))
    }
}

/// A task's buffers, kept by its thread through a job: A's rows rounded or copied to bfloat16,
/// and float32 tiles for partial sums.
struct Scratch {
    rows: Vec<u16>,
    tiles: Vec<f32>,
}

/// The whole product, cut into chunks of `nc` columns of B.
struct Product<S, D> {
    a: Mat<S>,
    b: Mat<S>,
    c: MatMut<D>,
    m: usize,
    n: usize,
    k: usize,
    kp: usize,
    nc: usize,
    accumulate: bool,
}

impl<S: Source, D: Sink> Product<S, D> {
    fn columns(&self, chunk: usize) -> (usize, usize) {
        (chunk * self.nc, self.nc.min(self.n - chunk * self.nc))
    }

    fn split(&self, chunk: usize) -> Split {
        let (micro_rows, panels) = (self.m.div_ceil(MR), self.columns(chunk).1.div_ceil(NR));
        let wanted = 24 * num_threads();
        let row_parts = micro_rows.min(wanted);
        Split { micro_rows, panels, row_parts, panel_parts: (wanted / row_parts).clamp(1, panels) }
    }

    /// Whether A is read where it lies: bfloat16 rows of whole k-pairs that do not alias.
    fn a_in_place(&self) -> bool {
        S::IS_BF16 && self.a.cs == 1 && self.k.is_multiple_of(2) && !rows_alias(self.a.rs)
    }

    /// u32s from one packed panel to the next: 64 bytes past its pairs, since panels a multiple
    /// of 4 KiB apart put the packing's writes to all of them in one L1 set.
    fn panel_len(&self) -> usize {
        self.kp * NR + 16
    }

    /// Row stride of A's copies: 64 bytes past the k-pairs, so copied rows never alias.
    fn copy_stride(&self) -> usize {
        2 * self.kp + 32
    }

    fn scratch(&self, split: &Split) -> Scratch {
        let rows = if self.a_in_place() { Vec::new() } else { vec![0u16; MC.min(self.m) * self.copy_stride()] };
        let slices = self.kp.div_ceil(KP_MAX);
        let tiles = if slices > 1 { MC.div_ceil(MR) * split.panels.div_ceil(split.panel_parts) } else { 1 };
        Scratch { rows, tiles: vec![0f32; tiles * MR * NR] }
    }

    /// Packing task `t` of `chunk`: k-pairs `t·PACK_PAIRS..` of every panel, into `packed`
    /// (`[panel][pair][column]`, zero past k and past the last column).
    unsafe fn pack(&self, chunk: usize, t: usize, packed: Ptr<u32>) {
        let (j0, cols) = self.columns(chunk);
        let pairs = (t * PACK_PAIRS, self.kp.min((t + 1) * PACK_PAIRS));
        let panel = |jp: usize| packed.at((jp * self.panel_len()) as isize);
        if S::IS_BF16 && self.b.rs == 1 && self.k.is_multiple_of(2) {
            for jp in 0..cols.div_ceil(NR) {
                pack_b_columns(self.b, j0 + jp * NR, NR.min(cols - jp * NR), pairs, panel(jp));
            }
        } else {
            pack_b_rows(self.b, j0, cols, self.k, pairs, panel(0), self.panel_len());
        }
    }

    /// Rows `r0..r1` against panels `p0..p1` of `chunk`, `MC` rows at a time.
    unsafe fn task(&self, chunk: usize, packed: Ptr<u32>, ((r0, r1), (p0, p1)): ((usize, usize), (usize, usize)), scratch: &mut Scratch) {
        let (kp, r1) = (self.kp, r1.min(self.m));
        let slices = kp.div_ceil(KP_MAX);
        for i0 in (r0..r1).step_by(MC) {
            let rows = MC.min(r1 - i0);
            let (a, lda) = match self.a_in_place() {
                true => (self.a.ptr.at(i0 as isize * self.a.rs) as *const u16, self.a.rs),
                false => (self.copy_rows(i0, rows, &mut scratch.rows), self.copy_stride() as isize),
            };
            for s in 0..slices {
                let (q0, q1) = (s * KP_MAX, kp.min((s + 1) * KP_MAX));
                for jp in p0..p1 {
                    let bpanel = packed.at((jp * self.panel_len() + q0 * NR) as isize) as *const u32;
                    for ir in (0..rows).step_by(MR) {
                        let t = if slices > 1 { (jp - p0) * MC.div_ceil(MR) + ir / MR } else { 0 };
                        let tile = &mut scratch.tiles[t * MR * NR..(t + 1) * MR * NR];
                        let arows = a.offset(ir as isize * lda + 2 * q0 as isize);
                        let last = s + 1 == slices;
                        let (i, n) = (i0 + ir, MR.min(rows - ir));
                        let out = if last { self.direct(chunk, i, jp) } else { None };
                        kernel::run(n, q1 - q0, arows, lda, bpanel, tile, s > 0, out.unwrap_or(kernel::Out::Tile));
                        if last && out.is_none() {
                            self.store(chunk, tile, i, n, jp);
                        }
                    }
                }
            }
        }
    }

    /// Rows `i0..i0 + rows` of A as bfloat16 rows at `copy_stride` (a zero after an odd k).
    unsafe fn copy_rows(&self, i0: usize, rows: usize, buf: &mut [u16]) -> *const u16 {
        for i in 0..rows {
            let dst = buf.as_mut_ptr().add(i * self.copy_stride());
            S::to_bits(self.a.ptr.at((i0 + i) as isize * self.a.rs), self.a.cs, self.k, dst);
            if self.k < 2 * self.kp {
                *dst.add(self.k) = 0;
            }
        }
        buf.as_ptr()
    }

    /// The destination itself, for the kernel to write a finished tile into: whole panels of
    /// unit-stride rows that are not added to.
    fn direct(&self, chunk: usize, i: usize, jp: usize) -> Option<kernel::Out> {
        let (j0, cols) = self.columns(chunk);
        let whole = (jp + 1) * NR <= cols && self.c.cs == 1 && !self.accumulate;
        whole.then(|| D::direct(self.c.ptr.at(i as isize * self.c.rs + (j0 + jp * NR) as isize), self.c.rs))
    }

    /// Writes a finished tile's `rows` rows at output row `i` of panel `jp`.
    unsafe fn store(&self, chunk: usize, tile: &mut [f32], i: usize, rows: usize, jp: usize) {
        let (j0, cols) = self.columns(chunk);
        let width = NR.min(cols - jp * NR);
        let col = (j0 + jp * NR) as isize * self.c.cs;
        for (r, row) in tile.chunks_exact_mut(NR).take(rows).enumerate() {
            let dst = self.c.ptr.at((i + r) as isize * self.c.rs + col);
            D::store_row(&mut row[..width], dst, self.c.cs, self.accumulate);
        }
    }
}

/// A B whose columns are contiguous bfloat16 (a transposed row-major matrix): column j's
/// k-pairs are consecutive u32s, so a panel is a gather of u32s.
unsafe fn pack_b_columns<S: Source>(b: Mat<S>, c0: usize, width: usize, (q0, q1): (usize, usize), panel: *mut u32) {
    let col = |j: usize| b.ptr.at((c0 + j) as isize * b.cs) as *const u8;
    for q in q0..q1 {
        let row = panel.add(q * NR);
        for j in 0..width {
            *row.add(j) = (col(j).add(4 * q) as *const u32).read_unaligned();
        }
        row.add(width).write_bytes(0, NR - width);
    }
}

/// Any other B, pairs `q0..q1` of columns `c0..c0 + cols`: each pair of rows as bfloat16 bits
/// (read in place when they are contiguous bfloat16 already), interleaved into every panel in
/// turn, so a row is read along its length. Panels are `panel_len` u32s apart.
unsafe fn pack_b_rows<S: Source>(b: Mat<S>, c0: usize, cols: usize, k: usize, (q0, q1): (usize, usize), panels: *mut u32, panel_len: usize) {
    let mut bits = vec![0u16; 2 * cols];
    let (lo, hi) = bits.split_at_mut(cols);
    let row = |r: usize| b.ptr.at(r as isize * b.rs + c0 as isize * b.cs) as *const S;
    for q in q0..q1 {
        let has_hi = 2 * q + 1 < k;
        let (l, h) = if S::IS_BF16 && b.cs == 1 {
            // Rows PREFETCH_PAIRS ahead: walking down B's rows misses in cache.
            let ahead = |r: usize| b.ptr.0.wrapping_offset((r + 2 * PREFETCH_PAIRS) as isize * b.rs + c0 as isize) as *const u8;
            for line in (0..cols * 2).step_by(64) {
                prefetch(ahead(2 * q).add(line));
                prefetch(ahead(2 * q + 1).add(line));
            }
            (row(2 * q) as *const u16, row(2 * q + has_hi as usize) as *const u16)
        } else {
            S::to_bits(row(2 * q), b.cs, cols, lo.as_mut_ptr());
            if has_hi {
                S::to_bits(row(2 * q + 1), b.cs, cols, hi.as_mut_ptr());
            }
            (lo.as_ptr() as *const u16, hi.as_ptr() as *const u16)
        };
        for (jp, j) in (0..cols).step_by(NR).enumerate() {
            kernel::interleave(l.add(j), h.add(j), NR.min(cols - j), has_hi, panels.add(jp * panel_len + q * NR));
        }
    }
}

#[cfg(test)]
#[path = "gemm_tests.rs"]
mod tests;
