//! Arrow validity bitmaps: bit `offset + i` (least significant bit first) is 1 where item `i`
//! holds a value. `offset` is the array's own offset, so sliced arrays need no copy.
use crate::{fail, Result};

#[derive(Clone, Copy, Debug)]
pub struct Bitmap<'a> {
    bits: &'a [u8],
    offset: usize,
}

impl<'a> Bitmap<'a> {
    /// The bitmap of an array of `len` items starting at bit `offset` of `bits`.
    pub fn new(bits: &'a [u8], offset: usize, len: usize) -> Result<Self> {
        if (offset + len).div_ceil(8) > bits.len() {
            return fail(format!("validity bitmap of {} bytes is too short for {len} items at offset {offset}", bits.len()));
        }
        Ok(Bitmap { bits, offset })
    }

    #[inline(always)]
    pub fn is_valid(&self, i: usize) -> bool {
        let bit = self.offset + i;
        self.bits[bit >> 3] >> (bit & 7) & 1 == 1
    }
}

/// Whether item `i` holds a value under an optional bitmap (none: all do).
#[inline(always)]
pub(crate) fn valid(bitmap: &Option<Bitmap<'_>>, i: usize) -> bool {
    bitmap.as_ref().map_or(true, |b| b.is_valid(i))
}
