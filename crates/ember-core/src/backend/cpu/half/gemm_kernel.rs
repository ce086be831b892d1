//! The `vdpbf16ps` micro-kernel: a 12×32 float32 tile in 24 zmm accumulators.
//!
//! Per k-pair it loads the B panel's 32 columns (two zmm) and, for each row, broadcasts that
//! row's pair of A straight from memory (`{1to16}`), so the loop is loads and dot products only.

/// Rows of the register tile.
pub const MR: usize = 12;
/// Columns of the register tile (two zmm of float32).
pub const NR: usize = 32;

/// Where the kernel writes its finished sums.
#[derive(Clone, Copy)]
pub enum Out {
    /// The float32 `tile`.
    Tile,
    /// All 32 columns of bfloat16 rows `ld` elements apart, rounded to nearest even.
    Bf16(*mut u16, isize),
    /// All 32 columns of float32 rows `ld` elements apart.
    F32(*mut f32, isize),
}

/// `out[..rows] = (tile if load) + a[rows × 2·kp] · b[kp pairs × 32]`: `a` bfloat16 rows at
/// stride `lda` (elements), `b` a packed panel, `tile` row-major `MR × NR` float32.
///
/// # Safety
/// `a` readable for `rows` rows of `2·kp` elements, `b` for `kp · NR` u32s, `out` writable for
/// `rows` rows; `rows <= MR`.
pub unsafe fn run(rows: usize, kp: usize, a: *const u16, lda: isize, b: *const u32, tile: &mut [f32], load: bool, out: Out) {
    assert!(rows <= MR && tile.len() >= MR * NR);
    macro_rules! rows {
        ($($r:literal)*) => {
            match rows {
                $($r => tile_kernel::<$r>(kp, a, lda, b, tile.as_mut_ptr(), load, out),)*
                _ => {}
            }
        };
    }
    rows!(1 2 3 4 5 6 7 8 9 10 11 12)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512bf16")]
unsafe fn tile_kernel<const R: usize>(kp: usize, a: *const u16, lda: isize, b: *const u32, tile: *mut f32, load: bool, out: Out) {
    use std::arch::x86_64::*;
    let bh = |v: __m512i| std::mem::transmute::<__m512i, __m512bh>(v);
    let mut acc = [[_mm512_setzero_ps(); 2]; R];
    if load {
        for (i, row) in acc.iter_mut().enumerate() {
            row[0] = _mm512_loadu_ps(tile.add(i * NR));
            row[1] = _mm512_loadu_ps(tile.add(i * NR + 16));
        }
    }
    for q in 0..kp {
        let b0 = bh(_mm512_loadu_si512(b.add(q * NR) as *const __m512i));
        let b1 = bh(_mm512_loadu_si512(b.add(q * NR + 16) as *const __m512i));
        for (i, row) in acc.iter_mut().enumerate() {
            let pair = (a.offset(i as isize * lda + 2 * q as isize) as *const u32).read_unaligned();
            let ai = bh(_mm512_set1_epi32(pair as i32));
            row[0] = _mm512_dpbf16_ps(row[0], b0, ai);
            row[1] = _mm512_dpbf16_ps(row[1], b1, ai);
        }
    }
    for (i, row) in acc.iter().enumerate() {
        let (lo, hi) = match out {
            Out::Tile => (tile.add(i * NR), tile.add(i * NR + 16)),
            Out::F32(p, ld) => (p.offset(i as isize * ld), p.offset(i as isize * ld + 16)),
            Out::Bf16(p, ld) => {
                let pairs = std::mem::transmute::<__m512bh, __m512i>(_mm512_cvtne2ps_pbh(row[1], row[0]));
                _mm512_storeu_si512(p.offset(i as isize * ld) as *mut __m512i, pairs);
                continue;
            }
        };
        _mm512_storeu_ps(lo, row[0]);
        _mm512_storeu_ps(hi, row[1]);
    }
}

/// One packed k-pair row of a B panel: `out[j] = lo[j] | hi[j] << 16` for `j < width`, zero
/// past `width`; `hi` read as zeros unless `has_hi` (the pair past an odd k).
///
/// # Safety
/// `lo` (and `hi` when `has_hi`) readable for `width <= NR` elements, `out` writable for `NR`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
pub unsafe fn interleave(lo: *const u16, hi: *const u16, width: usize, has_hi: bool, out: *mut u32) {
    use std::arch::x86_64::*;
    // permutex2var indices: u16 lane 2j takes lo[j], lane 2j + 1 takes hi[j] (index 32 + j).
    const fn pairs(first: u16) -> [u16; 32] {
        let mut idx = [0u16; 32];
        let mut j = 0;
        while j < 16 {
            idx[2 * j] = first + j as u16;
            idx[2 * j + 1] = 32 + first + j as u16;
            j += 1;
        }
        idx
    }
    const LOW: [u16; 32] = pairs(0);
    const HIGH: [u16; 32] = pairs(16);
    // A masked load that misses the cache stalls (4x slower streams on Zen 5): full rows go
    // unmasked.
    let load = |p: *const u16| match width >= NR {
        true => _mm512_loadu_si512(p as *const __m512i),
        false => _mm512_maskz_loadu_epi16((1u32 << width) - 1, p as *const i16),
    };
    let l = load(lo);
    let h = if has_hi { load(hi) } else { _mm512_setzero_si512() };
    let idx = |t: &[u16; 32]| _mm512_loadu_si512(t.as_ptr() as *const __m512i);
    _mm512_storeu_si512(out as *mut __m512i, _mm512_permutex2var_epi16(l, idx(&LOW), h));
    _mm512_storeu_si512(out.add(16) as *mut __m512i, _mm512_permutex2var_epi16(l, idx(&HIGH), h));
}

#[cfg(not(target_arch = "x86_64"))]
pub unsafe fn interleave(_: *const u16, _: *const u16, _: usize, _: bool, _: *mut u32) {
    unreachable!("the bf16 kernel runs only where `available()`")
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn tile_kernel<const R: usize>(_: usize, _: *const u16, _: isize, _: *const u32, _: *mut f32, _: bool, _: Out) {
    unreachable!("the bf16 kernel runs only where `available()`")
}
