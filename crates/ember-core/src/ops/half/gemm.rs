//! bfloat16 matrix products on `vdpbf16ps` (AVX512-BF16): each instruction multiplies 16 pairs
//! of bfloat16 and adds both products into 16 float32 lanes, so operands are packed in k-pairs
//! and every sum stays float32 until the caller rounds the finished product once.
//!
//! Blocking: a KC-deep slice of B is packed once into 32-column panels shared by all threads;
//! tasks own (MC rows × NCHUNK columns) tiles, pack their rows of A and run the 8×32 micro-kernel
//! over them. No AMX path (no AMX CPU to test it on).
use super::{path, scalar, Path};
use crate::ops::map::Ptr;
use crate::parallel::for_range;
use half::bf16;

const MR: usize = 8;
const NR: usize = 32;
/// k per packed slice: a B micro-panel (KC × 32 bf16 = 16 KiB) stays in L1.
const KC: usize = 256;
/// Rows per task: its packed A (MC × KC bf16 = 64 KiB) stays in L2.
const MC: usize = 128;
const NCHUNK: usize = 512;

/// Whether the `vdpbf16ps` kernel runs (the chosen half path is `avx512bf16`).
pub fn available() -> bool {
    path() == Path::Avx512Bf16
}

/// An operand element the packer rounds to bfloat16 bits: bfloat16 itself, or float32 (the
/// "medium" float32 matmul precision, rounded to nearest even).
pub trait Source: Copy + Send + Sync {
    fn bits(self) -> u16;
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

impl Source for bf16 {
    #[inline(always)]
    fn bits(self) -> u16 {
        self.to_bits()
    }

    unsafe fn store_row(row: &mut [f32], dst: *mut bf16, cs: isize, accumulate: bool) {
        if accumulate {
            add_existing(row, dst, cs);
        }
        if cs == 1 {
            return <bf16 as super::Half>::narrow(row.as_ptr(), dst, row.len());
        }
        for (j, &v) in row.iter().enumerate() {
            *dst.offset(j as isize * cs) = <bf16 as super::Half>::from_f32_scalar(v);
        }
    }
}

impl Source for f32 {
    #[inline(always)]
    fn bits(self) -> u16 {
        scalar::f32_to_bf16_bits(self)
    }

    unsafe fn store_row(row: &mut [f32], dst: *mut f32, cs: isize, accumulate: bool) {
        if accumulate {
            add_existing(row, dst, cs);
        }
        for (j, &v) in row.iter().enumerate() {
            *dst.offset(j as isize * cs) = v;
        }
    }
}

/// A strided matrix operand.
#[derive(Clone, Copy)]
pub struct Mat<S> {
    pub ptr: Ptr<S>,
    pub rs: isize,
    pub cs: isize,
}

impl<S: Source> Mat<S> {
    /// The (`r`, `c`) and (`r + 1`, `c`)… pair as one u32: `lo` at [r0, c0], `hi` one step
    /// along k; zero outside the matrix.
    #[inline(always)]
    unsafe fn pair(&self, lo: Option<(usize, usize)>, hi: Option<(usize, usize)>) -> u32 {
        let get = |at: Option<(usize, usize)>| at.map_or(0, |(r, c)| (*self.ptr.at(r as isize * self.rs + c as isize * self.cs)).bits() as u32);
        get(lo) | get(hi) << 16
    }
}

/// `c = a · b` for (m×k)·(k×n), `c` a row-major float32 buffer of `m × n`.
///
/// # Safety
/// `a`, `b` valid for the given shapes and strides; requires `available()`.
pub unsafe fn gemm<S: Source>(m: usize, n: usize, k: usize, a: Mat<S>, b: Mat<S>, c: &mut [f32]) {
    c.fill(0.0);
    if m == 0 || n == 0 {
        return;
    }
    let panels = n.div_ceil(NR);
    let pc = Ptr(c.as_mut_ptr());
    for p0 in (0..k).step_by(KC) {
        let kp = KC.min(k - p0).div_ceil(2);
        let packed_b = pack_b(b, p0, k, n, kp, panels);
        let pb = Ptr(packed_b.as_ptr() as *mut u32);
        let (mblocks, nchunks) = (m.div_ceil(MC), n.div_ceil(NCHUNK));
        for_range(mblocks * nchunks, 1, |s, e| {
            for t in s..e {
                let (i0, j0) = ((t / nchunks) * MC, (t % nchunks) * NCHUNK);
                let rows = MC.min(m - i0);
                let packed_a = pack_a(a, i0, rows, p0, k, kp);
                for jp in (j0 / NR)..((j0 + NCHUNK).min(n)).div_ceil(NR) {
                    let bpanel = pb.at((jp * kp * NR) as isize) as *const u32;
                    for ip in 0..rows.div_ceil(MR) {
                        let apanel = packed_a.as_ptr().add(ip * kp * MR);
                        let (r, col) = (i0 + ip * MR, jp * NR);
                        kernel(kp, apanel, bpanel, pc.at((r * n + col) as isize), n, MR.min(m - r), NR.min(n - col));
                    }
                }
            }
        });
    }
}

/// Rows `p0..p0 + 2·kp` of B as 32-column panels of k-pairs: `[panel][pair][column]`.
unsafe fn pack_b<S: Source>(b: Mat<S>, p0: usize, k: usize, n: usize, kp: usize, panels: usize) -> Vec<u32> {
    let mut packed = vec![0u32; panels * kp * NR];
    let out = Ptr(packed.as_mut_ptr());
    for_range(panels, 4, |s, e| {
        for jp in s..e {
            for q in 0..kp {
                let (r0, r1) = (p0 + 2 * q, p0 + 2 * q + 1);
                for j in 0..NR.min(n - jp * NR) {
                    let c = jp * NR + j;
                    let v = b.pair(Some((r0, c)), (r1 < k).then_some((r1, c)));
                    *out.at(((jp * kp + q) * NR + j) as isize) = v;
                }
            }
        }
    });
    packed
}

/// Rows `i0..i0 + rows` of A, columns `p0..p0 + 2·kp`, as 8-row panels: `[panel][pair][row]`.
unsafe fn pack_a<S: Source>(a: Mat<S>, i0: usize, rows: usize, p0: usize, k: usize, kp: usize) -> Vec<u32> {
    let mut packed = vec![0u32; rows.div_ceil(MR) * kp * MR];
    for i in 0..rows {
        let (panel, lane) = (i / MR, i % MR);
        for q in 0..kp {
            let (c0, c1) = (p0 + 2 * q, p0 + 2 * q + 1);
            packed[(panel * kp + q) * MR + lane] = a.pair(Some((i0 + i, c0)), (c1 < k).then_some((i0 + i, c1)));
        }
    }
    packed
}

/// `c[rows × cols] += a_panel · b_panel` over `kp` k-pairs (8×32 accumulators in registers).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn kernel(kp: usize, a: *const u32, b: *const u32, c: *mut f32, ldc: usize, rows: usize, cols: usize) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_ps(); 2]; MR];
    for q in 0..kp {
        let b0 = std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(b.add(q * NR) as *const __m512i));
        let b1 = std::mem::transmute::<__m512i, __m512bh>(_mm512_loadu_si512(b.add(q * NR + 16) as *const __m512i));
        for (i, row) in acc.iter_mut().enumerate() {
            let ai = std::mem::transmute::<__m512i, __m512bh>(_mm512_set1_epi32(*a.add(q * MR + i) as i32));
            row[0] = _mm512_dpbf16_ps(row[0], ai, b0);
            row[1] = _mm512_dpbf16_ps(row[1], ai, b1);
        }
    }
    let mask = |n: usize| if n >= 16 { 0xffff } else { ((1u32 << n) - 1) as __mmask16 };
    let (m0, m1) = (mask(cols), mask(cols.saturating_sub(16)));
    for (i, row) in acc.iter().enumerate().take(rows) {
        let p = c.add(i * ldc);
        _mm512_mask_storeu_ps(p, m0, _mm512_add_ps(_mm512_maskz_loadu_ps(m0, p), row[0]));
        _mm512_mask_storeu_ps(p.add(16), m1, _mm512_add_ps(_mm512_maskz_loadu_ps(m1, p.add(16)), row[1]));
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn kernel(_: usize, _: *const u32, _: *const u32, _: *mut f32, _: usize, _: usize, _: usize) {
    unreachable!("the bf16 kernel runs only where `available()`")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The product against a float64 reference of the bf16-rounded operands, on awkward sizes
    /// (tails of every block) and transposed strides.
    #[test]
    fn products_match_a_float64_reference() {
        if !Path::Avx512Bf16.is_supported() {
            return;
        }
        let _turn = super::super::tests::FORCE.lock().unwrap_or_else(|e| e.into_inner());
        super::super::force_path(Some(Path::Avx512Bf16)).unwrap();
        for &(m, n, k) in &[(1, 1, 1), (3, 5, 7), (9, 33, 2), (17, 70, 513), (130, 40, 300)] {
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 7919) % 97) as f32 / 13.0 - 3.0).collect();
            let b: Vec<f32> = (0..k * n).map(|i| ((i * 104729) % 89) as f32 / 11.0 - 4.0).collect();
            let round = |v: f32| scalar::bf16_bits_to_f32(scalar::f32_to_bf16_bits(v)) as f64;
            let mut c = vec![0f32; m * n];
            // B read transposed (column-major) to exercise the strides.
            let bt: Vec<f32> = (0..n * k).map(|i| b[(i % k) * n + i / k]).collect();
            let am = Mat { ptr: Ptr(a.as_ptr() as *mut f32), rs: k as isize, cs: 1 };
            let bm = Mat { ptr: Ptr(bt.as_ptr() as *mut f32), rs: 1, cs: k as isize };
            unsafe { gemm(m, n, k, am, bm, &mut c) };
            for i in 0..m {
                for j in 0..n {
                    let terms = (0..k).map(|p| round(a[i * k + p]) * round(b[p * n + j]));
                    let (want, size): (f64, f64) = terms.fold((0.0, 0.0), |(s, z), t| (s + t, z + t.abs()));
                    let got = c[i * n + j] as f64;
                    // float32 accumulation: a few ulps of the summed magnitudes.
                    assert!((got - want).abs() <= 1e-5 * size, "{m}x{n}x{k} [{i},{j}]: {got} vs {want}");
                }
            }
        }
        super::super::force_path(None).unwrap();
    }
}
