//! Copies and fills of large outputs with non-temporal (streaming) stores. A padded dense
//! batch or a permuted batch of ids is written once and is larger than the caches: an ordinary store first reads each
//! output line into the cache (a read for ownership), so the copy moves about 1.7x the bytes it
//! needs to; a streaming store writes whole lines straight to memory.

/// Outputs at least this large (a core's L2 cache) are written with streaming stores; smaller
/// ones stay in the caches for whatever reads them next.
pub(crate) const STREAM_MIN_BYTES: usize = 512 << 10;

/// `dst.copy_from_slice(src)`, with streaming stores when `stream`.
#[inline]
pub(crate) fn copy<T: Copy>(dst: &mut [T], src: &[T], stream: bool) {
    #[cfg(target_arch = "x86_64")]
    if stream && std::mem::size_of_val(dst) >= 64 && dst.len() == src.len() {
        // SAFETY: both ranges are valid for size_of_val(dst) bytes and do not overlap (one is
        // borrowed mutably).
        unsafe { x86::stream_copy(dst.as_mut_ptr() as *mut u8, src.as_ptr() as *const u8, std::mem::size_of_val(dst)) };
        return;
    }
    dst.copy_from_slice(src);
}

/// `dst.fill(value)`, with streaming stores when `stream` (and T is 1, 2, 4 or 8 bytes).
#[inline]
pub(crate) fn fill<T: Copy>(dst: &mut [T], value: T, stream: bool) {
    let size = std::mem::size_of::<T>();
    #[cfg(target_arch = "x86_64")]
    if stream && std::mem::size_of_val(dst) >= 64 && matches!(size, 1 | 2 | 4 | 8) && std::mem::align_of::<T>() == size {
        let mut pattern = [0u8; 16];
        for chunk in pattern.chunks_exact_mut(size) {
            // SAFETY: `value` is `size` readable bytes.
            chunk.copy_from_slice(unsafe { std::slice::from_raw_parts(&value as *const T as *const u8, size) });
        }
        // The first 16-byte boundary is a whole number of T away (T is aligned to its size), so
        // the pattern lines up with the elements wherever the body starts.
        let head = dst.as_ptr().align_offset(16).min(dst.len()); // in elements
        dst[..head].fill(value);
        let body = &mut dst[head..];
        let whole = body.len() * size / 16 * 16 / size;
        // SAFETY: body[..whole] is valid, 16-byte aligned and `whole * size` bytes long.
        unsafe { x86::stream_fill(body.as_mut_ptr() as *mut u8, whole * size, pattern) };
        body[whole..].fill(value);
        return;
    }
    let _ = size;
    dst.fill(value);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};

    /// Copies `len` bytes: the unaligned head and tail with ordinary stores, the rest streamed;
    /// then fences, so that the bytes are visible before the task reports done.
    pub(super) unsafe fn stream_copy(dst: *mut u8, src: *const u8, len: usize) {
        let head = dst.align_offset(16).min(len);
        std::ptr::copy_nonoverlapping(src, dst, head);
        let mut at = head;
        while at + 64 <= len {
            let a = _mm_loadu_si128(src.add(at) as *const __m128i);
            let b = _mm_loadu_si128(src.add(at + 16) as *const __m128i);
            let c = _mm_loadu_si128(src.add(at + 32) as *const __m128i);
            let d = _mm_loadu_si128(src.add(at + 48) as *const __m128i);
            _mm_stream_si128(dst.add(at) as *mut __m128i, a);
            _mm_stream_si128(dst.add(at + 16) as *mut __m128i, b);
            _mm_stream_si128(dst.add(at + 32) as *mut __m128i, c);
            _mm_stream_si128(dst.add(at + 48) as *mut __m128i, d);
            at += 64;
        }
        while at + 16 <= len {
            _mm_stream_si128(dst.add(at) as *mut __m128i, _mm_loadu_si128(src.add(at) as *const __m128i));
            at += 16;
        }
        std::ptr::copy_nonoverlapping(src.add(at), dst.add(at), len - at);
        _mm_sfence();
    }

    /// Fills `len` bytes (a multiple of 16, `dst` 16-byte aligned) with `pattern`, streamed.
    pub(super) unsafe fn stream_fill(dst: *mut u8, len: usize, pattern: [u8; 16]) {
        let value = _mm_loadu_si128(pattern.as_ptr() as *const __m128i);
        let mut at = 0;
        while at < len {
            _mm_stream_si128(dst.add(at) as *mut __m128i, value);
            at += 16;
        }
        _mm_sfence();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_copies_and_fills_match_plain_ones_at_every_alignment() {
        let src: Vec<u16> = (0..300).collect();
        for start in 0..9 {
            for len in [0, 5, 31, 32, 33, 100, 250] {
                let mut dst = vec![7u16; 300];
                copy(&mut dst[start..start + len], &src[..len], true);
                assert_eq!(&dst[start..start + len], &src[..len]);
                assert!(dst[..start].iter().chain(&dst[start + len..]).all(|&x| x == 7));
                let mut filled = vec![0u16; 300];
                fill(&mut filled[start..start + len], 0xbeef, true);
                assert!(filled[start..start + len].iter().all(|&x| x == 0xbeef));
                assert!(filled[..start].iter().chain(&filled[start + len..]).all(|&x| x == 0));
            }
        }
        let mut wide = vec![0f64; 40];
        fill(&mut wide[1..], -1.5, true);
        assert_eq!(wide[0], 0.0);
        assert!(wide[1..].iter().all(|&x| x == -1.5));
    }
}
