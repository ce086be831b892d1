//! `bucketize` and `firstx` (TorchArrow's functional ops) over flat values and list offsets.
use crate::{fail, Result, CHUNK};
use rayon::prelude::*;

/// `a < b` in NumPy's sort order, where NaN comes after every number.
#[inline(always)]
fn sorts_before(a: f64, b: f64) -> bool {
    a < b || (b.is_nan() && !a.is_nan())
}

/// Velox's computeBucketId: the index of the first border not below the value, moved one to
/// the right when the next border equals the value (a border given twice is a bucket of its own).
#[inline(always)]
fn bucket(value: f64, borders: &[f64]) -> i32 {
    let index = borders.partition_point(|&b| sorts_before(b, value));
    let bump = index + 1 < borders.len() && borders[index + 1] <= value;
    (index + bump as usize) as i32
}

/// `out[i]` = the bucket of `values[i]` among sorted `borders` (checked by the caller: not empty,
/// non-decreasing, no value three times).
pub fn bucketize(values: &[f64], borders: &[f64], out: &mut [i32]) -> Result<()> {
    if values.len() != out.len() {
        return fail(format!("bucketize: {} values but {} output slots", values.len(), out.len()));
    }
    if borders.is_empty() {
        return fail("bucketize: Borders should not be empty.".into());
    }
    out.par_chunks_mut(CHUNK).zip(values.par_chunks(CHUNK)).for_each(|(out, values)| {
        for (o, &v) in out.iter_mut().zip(values) {
            *o = bucket(v, borders);
        }
    });
    Ok(())
}

/// The first `n` items of each list: `out_offsets` gets the new offsets (from 0) and `keep[j]`
/// says whether item `j` of the values (counted from `offsets[0]`) stays, so any item type can be
/// filtered with it. Returns the number of items kept.
pub fn firstx(offsets: &[i32], n: usize, keep: &mut [u8], out_offsets: &mut [i32]) -> Result<usize> {
    if offsets.is_empty() || out_offsets.len() != offsets.len() {
        return fail(format!("firstx: {} offsets for {} output offsets", offsets.len(), out_offsets.len()));
    }
    let base = offsets[0];
    if keep.len() != (offsets[offsets.len() - 1] - base) as usize {
        return fail(format!("firstx: {} keep flags for {} items", keep.len(), offsets[offsets.len() - 1] - base));
    }
    let mut kept = 0usize;
    out_offsets[0] = 0;
    for (row, pair) in offsets.windows(2).enumerate() {
        let (start, stop) = ((pair[0] - base) as usize, (pair[1] - base) as usize);
        if stop < start || stop > keep.len() {
            return fail(format!("firstx: offsets decrease or run past the values at row {row}"));
        }
        let take = (stop - start).min(n);
        keep[start..start + take].fill(1);
        keep[start + take..stop].fill(0);
        kept += take;
        out_offsets[row + 1] = kept as i32;
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_velox() {
        let borders = [1.0, 2.0, 2.0, 5.0];
        let values = [-1.0, 1.0, 1.5, 2.0, 3.0, 5.0, 9.0, f64::NAN];
        let mut out = [0; 8];
        bucketize(&values, &borders, &mut out).unwrap();
        // 2.0 sits in the bucket of its own that the repeated border makes.
        assert_eq!(out, [0, 0, 1, 2, 3, 3, 4, 4]);
        assert!(bucketize(&[1.0], &[], &mut [0]).is_err());
        assert!(bucketize(&[1.0], &[0.0], &mut []).is_err());
    }

    #[test]
    fn firstx_cuts_lists_and_keeps_empty_ones() {
        // Rows [1,2,3], [], [4], [5,6], sliced so that offsets start at 2.
        let offsets = [2, 5, 5, 6, 8];
        let mut keep = [9u8; 6];
        let mut out = [0; 5];
        assert_eq!(firstx(&offsets, 1, &mut keep, &mut out).unwrap(), 3);
        assert_eq!(keep, [1, 0, 0, 1, 1, 0]);
        assert_eq!(out, [0, 1, 1, 2, 3]);
        assert_eq!(firstx(&offsets, 0, &mut keep, &mut out).unwrap(), 0);
        assert_eq!(out, [0; 5]);
        assert_eq!(firstx(&offsets, 10, &mut keep, &mut out).unwrap(), 6);
        assert_eq!(keep, [1; 6]);
        let mut none: [u8; 0] = [];
        assert_eq!(firstx(&[7], 2, &mut none, &mut [0]).unwrap(), 0);
        assert!(firstx(&[0, 2], 1, &mut [0; 3], &mut [0; 2]).is_err());
        assert!(firstx(&[3, 2], 1, &mut none, &mut [0; 2]).is_err());
    }
}
