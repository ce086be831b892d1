//! FBGEMM's sparse-feature operators: the cumulative sums of lengths
//! (`asynchronous_{complete,exclusive,inclusive}_cumsum`), the permutation of key-major sparse
//! features (`permute_2D_sparse_data`, `permute_1D_sparse_data`: keys reordered, repeated or
//! left out) and the bucketing of ids into row-wise shards (`block_bucketize_sparse_features`).
//!
//! Sparse features are laid out key-major, as TorchRec's KeyedJaggedTensor: `lengths` is keys x
//! batch, and the values of key k, sample b follow those of every earlier (key, sample).
use crate::jagged::{for_each, Shared};
use crate::stream::{self, STREAM_MIN_BYTES};
use crate::tbe::Indices;
use crate::{fail, Error, Result};

/// The integer types of lengths, offsets and ids (int32, int64).
pub trait Int: Copy + Send + Sync + 'static {
    fn to_i64(self) -> i64;
    /// Wraps as PyTorch's integer arithmetic does.
    fn from_i64(v: i64) -> Self;
}

impl Int for i32 {
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn from_i64(v: i64) -> i32 {
        v as i32
    }
}

impl Int for i64 {
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self
    }
    #[inline(always)]
    fn from_i64(v: i64) -> i64 {
        v
    }
}

/// Which running sum: Complete starts at 0 and ends with the total (n + 1 entries), Exclusive
/// starts at 0 (n), Inclusive ends with the total (n).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cumsum {
    Complete,
    Exclusive,
    Inclusive,
}

impl Cumsum {
    pub fn output_len(self, n: usize) -> usize {
        if self == Cumsum::Complete {
            n + 1
        } else {
            n
        }
    }
}

/// The running sum of `input` into `out` (`kind.output_len(input.len())` entries).
pub fn cumsum<L: Int>(input: &[L], kind: Cumsum, out: &mut [L]) -> Result<()> {
    if out.len() != kind.output_len(input.len()) {
        return fail(format!("cumsum: the output must hold {} entries, got {}", kind.output_len(input.len()), out.len()));
    }
    if out.is_empty() {
        return Ok(());
    }
    let mut total = 0i64;
    let (leading, rest) = if kind == Cumsum::Inclusive { (&mut [][..], &mut out[..]) } else { out.split_at_mut(1) };
    leading.iter_mut().for_each(|o| *o = L::from_i64(0));
    for (o, &x) in rest.iter_mut().zip(input) {
        total = total.wrapping_add(x.to_i64());
        *o = L::from_i64(total);
    }
    Ok(())
}

/// Lengths as counts, after checking that none is negative.
fn counts(op: &str, lengths: Indices<'_>) -> Result<Vec<usize>> {
    let lengths = lengths.to_i64();
    if let Some(i) = lengths.iter().position(|&l| l < 0) {
        return fail(format!("{op}: lengths must be non-negative, got lengths[{i}] = {}", lengths[i]));
    }
    Ok(lengths.into_iter().map(|l| l as usize).collect())
}

/// A permutation of the keys of key-major sparse features: output key p is input key
/// `keys[p]`, whose values are rows starts[p]..starts[p] + sizes[p] of the input.
pub struct Permutation {
    keys: Vec<usize>,
    starts: Vec<usize>,
    sizes: Vec<usize>,
    out_starts: Vec<usize>,
    batch: usize,
}

impl Permutation {
    /// From `permute` (entries in 0..keys) and the keys x `batch` `lengths`, whose sum must not
    /// exceed the `value_rows` rows of values.
    pub fn new(permute: Indices<'_>, lengths: Indices<'_>, keys: usize, batch: usize, value_rows: usize) -> Result<Self> {
        const OP: &str = "permute_sparse_data";
        if keys.checked_mul(batch) != Some(lengths.len()) {
            return fail(format!("{OP}: lengths hold {} entries, not {keys} keys x {batch}", lengths.len()));
        }
        let permute = permute.to_i64();
        if let Some(&bad) = permute.iter().find(|&&k| k < 0 || k as u64 >= keys as u64) {
            return Err(Error::Index(format!("{OP}: permute holds {bad}, outside the {keys} keys")));
        }
        let lengths = counts(OP, lengths)?;
        let per_key: Vec<usize> = if batch == 0 { vec![0; keys] } else { lengths.chunks(batch).map(|c| c.iter().sum()).collect() };
        let key_starts: Vec<usize> = per_key.iter().scan(0, |at, &n| Some(std::mem::replace(at, *at + n))).collect();
        let total_in: usize = per_key.iter().sum();
        if total_in > value_rows {
            return fail(format!("{OP}: lengths sum to {total_in}, but there are {value_rows} values"));
        }
        let keys: Vec<usize> = permute.into_iter().map(|k| k as usize).collect();
        let sizes: Vec<usize> = keys.iter().map(|&k| per_key[k]).collect();
        let out_starts = sizes.iter().scan(0, |at, &n| Some(std::mem::replace(at, *at + n))).collect();
        Ok(Permutation { starts: keys.iter().map(|&k| key_starts[k]).collect(), keys, sizes, out_starts, batch })
    }

    /// Rows of the permuted values.
    pub fn total_rows(&self) -> usize {
        self.sizes.iter().sum()
    }

    /// The permuted keys' values (rows of `inner`), `total_rows() * inner` elements.
    pub fn gather<T: Copy + Send + Sync>(&self, values: &[T], inner: usize, out: &mut [T]) -> Result<()> {
        if out.len() != self.total_rows() * inner {
            return fail(format!("permute_sparse_data: the output must hold {} elements, got {}", self.total_rows() * inner, out.len()));
        }
        if let Some(end) = self.starts.iter().zip(&self.sizes).map(|(s, n)| s + n).max() {
            if end * inner > values.len() {
                return fail(format!("permute_sparse_data: values hold {} rows of {inner}, fewer than the lengths need ({end})", values.len() / inner.max(1)));
            }
        }
        let streamed = std::mem::size_of_val(out) >= STREAM_MIN_BYTES;
        let shared = Shared::new(out);
        for_each(self.keys.len(), out.len(), |p| {
            let len = self.sizes[p] * inner;
            // SAFETY: output key p alone writes its rows.
            let dst = unsafe { shared.slice(self.out_starts[p] * inner, len) };
            stream::copy(dst, &values[self.starts[p] * inner..][..len], streamed);
        });
        Ok(())
    }

    /// The permuted keys' lengths (`keys.len() * batch` entries).
    pub fn permute_lengths<L: Copy>(&self, lengths: &[L], out: &mut [L]) -> Result<()> {
        if out.len() != self.keys.len() * self.batch {
            return fail(format!("permute_sparse_data: the lengths output must hold {} entries, got {}", self.keys.len() * self.batch, out.len()));
        }
        for (dst, &k) in out.chunks_mut(self.batch.max(1)).zip(&self.keys) {
            dst.copy_from_slice(&lengths[k * self.batch..][..self.batch]);
        }
        Ok(())
    }
}

/// Options of `block_bucketize_sparse_features`.
#[derive(Clone, Copy)]
pub struct Bucketize<'a> {
    /// Rows per bucket of each feature.
    pub block_sizes: Indices<'a>,
    /// The buckets (FBGEMM's `my_size`).
    pub buckets: usize,
    /// Keep each id as it is instead of its row within the bucket.
    pub keep_orig_idx: bool,
}

/// What `block_bucketize_sparse_features` returns beside its ids: the new lengths (buckets x
/// features x batch, bucket-major) and each input id's place among the output ids (FBGEMM's
/// `unbucketize_permute`).
#[derive(Debug)]
pub struct Bucketed {
    pub lengths: Vec<i64>,
    pub dest: Vec<usize>,
}

/// Id `id` of a feature with `block` rows per bucket: bucket id / block and row id % block
/// while the id lies in the first buckets * block rows, else bucket id % buckets and row
/// id / buckets (FBGEMM's rule for ids past the blocks).
#[inline(always)]
fn bucket_of(id: i64, block: i64, buckets: i64) -> (usize, i64) {
    if id < block * buckets {
        ((id / block) as usize, id % block)
    } else {
        ((id % buckets) as usize, id / buckets)
    }
}

/// `block_bucketize_sparse_features`: the ids of the features x batch `lengths` (feature-major)
/// sorted into `options.buckets` buckets, each (bucket, feature, sample) keeping the ids' order.
/// Writes the new ids into `ids_out` and, when given, each id's position in its sample into
/// `positions`.
pub fn block_bucketize<I: Int>(lengths: Indices<'_>, ids: &[I], options: Bucketize<'_>, ids_out: &mut [I], positions: Option<&mut [I]>) -> Result<Bucketed> {
    const OP: &str = "block_bucketize_sparse_features";
    let blocks = options.block_sizes.to_i64();
    let features = blocks.len();
    if options.buckets == 0 {
        return fail(format!("{OP}: my_size must be positive"));
    }
    if let Some(t) = blocks.iter().position(|&b| b <= 0) {
        return fail(format!("{OP}: block_sizes must be positive, got block_sizes[{t}] = {}", blocks[t]));
    }
    if (features == 0 && !lengths.is_empty()) || (features > 0 && lengths.len() % features != 0) {
        return fail(format!("{OP}: {} lengths do not divide among the {features} features of block_sizes", lengths.len()));
    }
    let samples = lengths.len();
    let batch = if features == 0 { 0 } else { samples / features };
    let counts = counts(OP, lengths)?;
    let starts: Vec<usize> = counts.iter().scan(0, |at, &n| Some(std::mem::replace(at, *at + n))).collect();
    let total: usize = counts.iter().sum();
    if total != ids.len() {
        return fail(format!("{OP}: lengths sum to {total}, but there are {} indices", ids.len()));
    }
    if let Some(i) = ids.iter().position(|id| id.to_i64() < 0) {
        return fail(format!("{OP}: indices must be non-negative, got indices[{i}] = {}", ids[i].to_i64()));
    }
    if ids_out.len() != total || positions.as_ref().is_some_and(|p| p.len() != total) {
        return fail(format!("{OP}: the outputs must hold {total} entries"));
    }
    let buckets = options.buckets;
    // Pass 1: how many ids of each sample go to each bucket (sample-major).
    let mut per_sample = vec![0usize; samples * buckets];
    let shared = Shared::new(&mut per_sample);
    for_each(samples, total, |s| {
        // SAFETY: sample s alone writes its `buckets` counts.
        let mine = unsafe { shared.slice(s * buckets, buckets) };
        let block = blocks[s / batch.max(1)];
        for id in &ids[starts[s]..starts[s] + counts[s]] {
            mine[bucket_of(id.to_i64(), block, buckets as i64).0] += 1;
        }
    });
    // The output is bucket-major: (bucket, sample) in that order.
    let mut new_lengths = vec![0i64; buckets * samples];
    let mut out_starts = vec![0usize; buckets * samples];
    let mut at = 0;
    for p in 0..buckets {
        for s in 0..samples {
            let n = per_sample[s * buckets + p];
            new_lengths[p * samples + s] = n as i64;
            out_starts[p * samples + s] = at;
            at += n;
        }
    }
    // Pass 2: each id to its place.
    let mut dest = vec![0usize; total];
    let (dest_out, ids_shared) = (Shared::new(&mut dest), Shared::new(ids_out));
    let positions = positions.map(Shared::new);
    for_each(samples, total, |s| {
        let block = blocks[s / batch.max(1)];
        let mut cursor: Vec<usize> = (0..buckets).map(|p| out_starts[p * samples + s]).collect();
        // SAFETY: sample s alone writes its ids' entries of `dest` and the output slots its
        // cursors walk (its (bucket, sample) ranges).
        let my_dest = unsafe { dest_out.slice(starts[s], counts[s]) };
        for (j, (id, d)) in ids[starts[s]..starts[s] + counts[s]].iter().zip(my_dest).enumerate() {
            let (p, row) = bucket_of(id.to_i64(), block, buckets as i64);
            let slot = cursor[p];
            cursor[p] += 1;
            *d = slot;
            unsafe {
                ids_shared.slice(slot, 1)[0] = if options.keep_orig_idx { *id } else { I::from_i64(row) };
                if let Some(positions) = &positions {
                    positions.slice(slot, 1)[0] = I::from_i64(j as i64);
                }
            }
        }
    });
    Ok(Bucketed { lengths: new_lengths, dest })
}

/// out[dest[i]] = values[i] (rows of `inner`): the per-id weights of a bucketing.
pub fn scatter_rows<T: Copy + Send + Sync>(values: &[T], inner: usize, dest: &[usize], out: &mut [T]) -> Result<()> {
    if values.len() != dest.len() * inner || out.len() != values.len() {
        return fail(format!("scatter_rows: {} destinations for {} values and {} outputs of rows of {inner}", dest.len(), values.len(), out.len()));
    }
    let shared = Shared::new(out);
    const CHUNK: usize = 4096;
    for_each(dest.len().div_ceil(CHUNK), values.len(), |c| {
        for i in c * CHUNK..((c + 1) * CHUNK).min(dest.len()) {
            // SAFETY: `dest` comes from a bucketing, a permutation: each row is written once.
            unsafe { shared.slice(dest[i] * inner, inner) }.copy_from_slice(&values[i * inner..][..inner]);
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_cumulative_sums() {
        let x = [3i32, 0, 2, 5];
        let mut complete = [0i32; 5];
        cumsum(&x, Cumsum::Complete, &mut complete).unwrap();
        assert_eq!(complete, [0, 3, 3, 5, 10]);
        let mut exclusive = [9i32; 4];
        cumsum(&x, Cumsum::Exclusive, &mut exclusive).unwrap();
        assert_eq!(exclusive, [0, 3, 3, 5]);
        let mut inclusive = [9i32; 4];
        cumsum(&x, Cumsum::Inclusive, &mut inclusive).unwrap();
        assert_eq!(inclusive, [3, 3, 5, 10]);
        let mut empty = [7i64; 1];
        cumsum::<i64>(&[], Cumsum::Complete, &mut empty).unwrap();
        assert_eq!(empty, [0]);
        assert!(cumsum(&x, Cumsum::Inclusive, &mut complete).is_err());
    }

    #[test]
    fn permute_reorders_repeats_and_drops_keys() {
        // 3 keys x 2 samples: key 0 [1], [2, 3]; key 1 [], [4]; key 2 [5, 6], [].
        let lengths = [1i64, 2, 0, 1, 2, 0];
        let values = [1i64, 2, 3, 4, 5, 6];
        let weights = [0.1f32, 0.2, 0.3, 0.4, 0.5, 0.6];
        let plan = Permutation::new(Indices::I64(&[2, 0, 2]), Indices::I64(&lengths), 3, 2, 6).unwrap();
        assert_eq!(plan.total_rows(), 7);
        let mut out = [0i64; 7];
        plan.gather(&values, 1, &mut out).unwrap();
        assert_eq!(out, [5, 6, 1, 2, 3, 5, 6]);
        let mut w = [0f32; 7];
        plan.gather(&weights, 1, &mut w).unwrap();
        assert_eq!(w, [0.5, 0.6, 0.1, 0.2, 0.3, 0.5, 0.6]);
        let mut l = [0i64; 6];
        plan.permute_lengths(&lengths, &mut l).unwrap();
        assert_eq!(l, [2, 0, 1, 2, 2, 0]);
        assert!(matches!(Permutation::new(Indices::I64(&[3]), Indices::I64(&lengths), 3, 2, 6), Err(Error::Index(_))));
        assert!(Permutation::new(Indices::I64(&[0]), Indices::I64(&lengths), 3, 2, 5).is_err());
        assert!(Permutation::new(Indices::I64(&[0]), Indices::I64(&[1, -1]), 1, 2, 5).is_err());
    }

    #[test]
    fn bucketize_matches_fbgemm_on_its_own_example() {
        // Two features (blocks 5 and 4), batch 2, three buckets: worked out with fbgemm_gpu.
        let lengths = [2i32, 1, 1, 2];
        let ids = [1i32, 7, 4, 12, 3, 9];
        let options = Bucketize { block_sizes: Indices::I32(&[5, 4]), buckets: 3, keep_orig_idx: false };
        let (mut out, mut pos) = ([0i32; 6], [0i32; 6]);
        let bucketed = block_bucketize(Indices::I32(&lengths), &ids, options, &mut out, Some(&mut pos)).unwrap();
        assert_eq!(bucketed.lengths, [1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(out, [1, 4, 4, 3, 2, 1]);
        assert_eq!(pos, [0, 0, 0, 0, 1, 1]);
        assert_eq!(bucketed.dest, [0, 4, 1, 2, 3, 5]);
        let weights = [10f32, 11., 12., 13., 14., 15.];
        let mut w = [0f32; 6];
        scatter_rows(&weights, 1, &bucketed.dest, &mut w).unwrap();
        assert_eq!(w, [10., 12., 13., 14., 11., 15.]);
        let kept = Bucketize { keep_orig_idx: true, ..options };
        block_bucketize(Indices::I32(&lengths), &ids, kept, &mut out, None).unwrap();
        assert_eq!(out, [1, 4, 12, 3, 7, 9]);
    }

    #[test]
    fn bucketize_refuses_bad_input() {
        let options = Bucketize { block_sizes: Indices::I64(&[5]), buckets: 2, keep_orig_idx: false };
        let mut out = [0i64; 2];
        assert!(block_bucketize(Indices::I64(&[1, 1]), &[1i64, -3], options, &mut out, None).unwrap_err().to_string().contains("non-negative"));
        assert!(block_bucketize(Indices::I64(&[1, 2]), &[1i64, 3], options, &mut out, None).unwrap_err().to_string().contains("sum to 3"));
        let zero = Bucketize { block_sizes: Indices::I64(&[0]), ..options };
        assert!(block_bucketize(Indices::I64(&[1, 1]), &[1i64, 3], zero, &mut out, None).is_err());
    }
}
