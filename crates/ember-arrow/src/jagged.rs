//! Id columns as a KeyedJaggedTensor's key-major `values` and `lengths`, with the recsys steps
//! of TorchRec's torcharrow example (fill null ids, sigrid_hash, firstx) done while the ids are
//! written: each id is read once and written once, with no intermediate column.
use crate::bitmap::valid;
use crate::sigrid::Hasher;
use crate::{fail, Bitmap, Result, CHUNK};
use rayon::prelude::*;

/// One key's ids: a list per row (Arrow's `offsets`, possibly not starting at 0, with `ids`
/// starting at item `offsets[0]`) or, without offsets, one id per row. `validity` marks null rows (a null list has no ids).
#[derive(Clone, Copy)]
pub struct IdColumn<'a> {
    pub offsets: Option<&'a [i32]>,
    pub ids: &'a [i64],
    pub validity: Option<Bitmap<'a>>,
}

/// What happens to the ids on the way: a null id of a one-id-per-row column becomes
/// `fill_null` (without it the row has no id), ids are hashed with `sigrid_hash = (salt,
/// max_value)`, and a list keeps its first `firstx` ids.
#[derive(Clone, Copy, Default)]
pub struct IdSteps {
    pub fill_null: Option<i64>,
    pub sigrid_hash: Option<(i64, i64)>,
    pub firstx: Option<usize>,
}

impl IdColumn<'_> {
    fn rows(&self) -> usize {
        self.offsets.map_or(self.ids.len(), |o| o.len().saturating_sub(1))
    }

    fn check(&self, key: usize, rows: usize) -> Result<()> {
        if self.rows() != rows {
            return fail(format!("key_major: key {key} has {} rows, key 0 has {rows}", self.rows()));
        }
        let Some(offsets) = self.offsets else { return Ok(()) };
        if offsets.is_empty() {
            return fail(format!("key_major: key {key} has no offsets"));
        }
        let base = offsets[0];
        if base < 0 || offsets.windows(2).any(|w| w[1] < w[0]) || (offsets[offsets.len() - 1] - base) as usize > self.ids.len() {
            return fail(format!("key_major: the offsets of key {key} decrease or run past its {} ids", self.ids.len()));
        }
        Ok(())
    }

    /// Row `r`'s ids (a list's first `cap`), from `offsets`; only for list columns.
    #[inline(always)]
    fn list(&self, offsets: &[i32], r: usize, cap: usize) -> &[i64] {
        if !valid(&self.validity, r) {
            return &[];
        }
        let start = (offsets[r] - offsets[0]) as usize;
        let stop = (offsets[r + 1] - offsets[0]) as usize;
        &self.ids[start..start + (stop - start).min(cap)]
    }
}

/// How many ids a list keeps: all, or the first `firstx`.
fn cap(steps: &IdSteps) -> usize {
    steps.firstx.unwrap_or(usize::MAX)
}

/// Key `col`'s id counts per row into `lengths`; returns their sum.
fn column_lengths(col: &IdColumn<'_>, steps: &IdSteps, lengths: &mut [i32]) -> usize {
    let cap = cap(steps);
    match (col.offsets, col.validity) {
        (None, _) if cap == 0 => {
            lengths.fill(0);
            0
        }
        (None, Some(bits)) if steps.fill_null.is_none() => {
            let mut sum = 0;
            for (r, slot) in lengths.iter_mut().enumerate() {
                let n = bits.is_valid(r) as i32;
                *slot = n;
                sum += n as usize;
            }
            sum
        }
        (None, _) => {
            lengths.fill(1);
            lengths.len()
        }
        (Some(offsets), _) => {
            let mut sum = 0;
            for (r, slot) in lengths.iter_mut().enumerate() {
                let n = col.list(offsets, r, cap).len();
                *slot = n as i32;
                sum += n;
            }
            sum
        }
    }
}

/// A piece of the work: rows `rows` of key `key`, written to the next `len` values.
struct Task {
    key: usize,
    rows: std::ops::Range<usize>,
    len: usize,
}

/// The ids of every key, key after key, as a KeyedJaggedTensor's key-major `values`, and
/// `lengths[k * rows + r]`, the number of ids key `k` has in row `r` (all keys have the same
/// number of rows), with `steps` applied on the way.
pub fn key_major(columns: &[IdColumn<'_>], steps: &IdSteps) -> Result<(Vec<i64>, Vec<i32>)> {
    let rows = columns.first().map_or(0, IdColumn::rows);
    for (key, col) in columns.iter().enumerate() {
        col.check(key, rows)?;
    }
    let hasher = steps.sigrid_hash.map(|(salt, max_value)| Hasher::new(salt, max_value)).transpose()?;
    let mut lengths = vec![0i32; rows * columns.len()];
    if rows == 0 {
        return Ok((Vec::new(), lengths));
    }
    let totals: Vec<usize> = lengths.par_chunks_mut(rows).zip(columns.par_iter()).map(|(lengths, col)| column_lengths(col, steps, lengths)).collect();
    let mut values = vec![0i64; totals.iter().sum()];
    let tasks: Vec<Task> = (0..columns.len())
        .flat_map(|key| (0..rows).step_by(CHUNK).map(move |start| (key, start..(start + CHUNK).min(rows))))
        .map(|(key, range)| {
            let len = lengths[key * rows + range.start..key * rows + range.end].iter().map(|&n| n as usize).sum();
            Task { key, rows: range, len }
        })
        .collect();
    let mut pieces = Vec::with_capacity(tasks.len());
    let mut rest = values.as_mut_slice();
    for task in &tasks {
        let (piece, tail) = std::mem::take(&mut rest).split_at_mut(task.len);
        pieces.push(piece);
        rest = tail;
    }
    tasks.par_iter().zip(pieces.into_par_iter()).for_each(|(task, out)| {
        write_task(&columns[task.key], task, steps, out);
        if let Some(hasher) = &hasher {
            // The task's ids are still in cache: hashing them in a second pass costs no memory
            // traffic, and a pass of hashes alone vectorises.
            hasher.hash_in_place(out);
        }
    });
    Ok((values, lengths))
}

/// One task's ids into `out` (sized by the lengths, which the same rules counted).
fn write_task(col: &IdColumn<'_>, task: &Task, steps: &IdSteps, out: &mut [i64]) {
    let cap = cap(steps);
    match (col.offsets, col.validity) {
        (None, _) if cap == 0 => {}
        (None, None) => out.copy_from_slice(&col.ids[task.rows.clone()]),
        (None, Some(bits)) => match steps.fill_null {
            Some(fill) => {
                for (r, o) in task.rows.clone().zip(out.iter_mut()) {
                    // A bit select rather than a branch: nulls fall at random.
                    let keep = 0i64.wrapping_sub(bits.is_valid(r) as i64);
                    *o = (col.ids[r] & keep) | (fill & !keep);
                }
            }
            None => {
                let mut j = 0;
                for r in task.rows.clone() {
                    if bits.is_valid(r) {
                        out[j] = col.ids[r];
                        j += 1;
                    }
                }
            }
        },
        (Some(offsets), _) => {
            let mut j = 0;
            for r in task.rows.clone() {
                let ids = col.list(offsets, r, cap);
                out[j..j + ids.len()].copy_from_slice(ids);
                j += ids.len();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sigrid_hash_one;

    fn run(columns: &[IdColumn<'_>], steps: IdSteps) -> (Vec<i64>, Vec<i32>) {
        key_major(columns, &steps).unwrap()
    }

    #[test]
    fn lists_and_scalars_key_major() {
        // Key 0: lists [1,2,3], null, [], [4] sliced to start at offset 1; key 1: ids 7, null, 8, 9.
        let list_ids = [1, 2, 3, 4];
        let list_offsets = [1, 4, 4, 4, 5];
        let list_bits = [0b1101u8];
        let scalar_bits = [0b1101u8];
        let columns = [
            IdColumn { offsets: Some(&list_offsets), ids: &list_ids, validity: Some(Bitmap::new(&list_bits, 0, 4).unwrap()) },
            IdColumn { offsets: None, ids: &[7, 0, 8, 9], validity: Some(Bitmap::new(&scalar_bits, 0, 4).unwrap()) },
        ];
        let (values, lengths) = run(&columns, IdSteps::default());
        assert_eq!(values, [1, 2, 3, 4, 7, 8, 9]);
        assert_eq!(lengths, [3, 0, 0, 1, 1, 0, 1, 1]);

        let steps = IdSteps { fill_null: Some(-5), sigrid_hash: None, firstx: Some(2) };
        let (values, lengths) = run(&columns, steps);
        assert_eq!(values, [1, 2, 4, 7, -5, 8, 9]);
        assert_eq!(lengths, [2, 0, 0, 1, 1, 1, 1, 1]);

        let steps = IdSteps { fill_null: Some(0), sigrid_hash: Some((3, 100)), firstx: Some(1) };
        let (values, lengths) = run(&columns, steps);
        let h = |id| sigrid_hash_one(id, 3, 100).unwrap();
        assert_eq!(values, [h(1), h(4), h(7), h(0), h(8), h(9)]);
        assert_eq!(lengths, [1, 0, 0, 1, 1, 1, 1, 1]);
    }

    #[test]
    fn many_rows_split_into_tasks() {
        let n = 3 * CHUNK + 17;
        let ids: Vec<i64> = (0..n as i64).collect();
        let offsets: Vec<i32> = (0..=n as i32).collect();
        let columns = [IdColumn { offsets: None, ids: &ids, validity: None }, IdColumn { offsets: Some(&offsets), ids: &ids, validity: None }];
        let (values, lengths) = run(&columns, IdSteps::default());
        assert_eq!(values, [ids.clone(), ids].concat());
        assert!(lengths.iter().all(|&l| l == 1));
    }

    #[test]
    fn empty_and_bad_input() {
        assert_eq!(run(&[], IdSteps::default()), (vec![], vec![]));
        let none = IdColumn { offsets: Some(&[0]), ids: &[], validity: None };
        assert_eq!(run(&[none], IdSteps::default()), (vec![], vec![]));
        let bad = IdColumn { offsets: Some(&[0, 3]), ids: &[1, 2], validity: None };
        assert!(key_major(&[bad], &IdSteps::default()).is_err());
        let decreasing = IdColumn { offsets: Some(&[0, 2, 1]), ids: &[1, 2], validity: None };
        assert!(key_major(&[decreasing], &IdSteps::default()).is_err());
        let a = IdColumn { offsets: None, ids: &[1, 2], validity: None };
        let b = IdColumn { offsets: None, ids: &[1], validity: None };
        assert!(key_major(&[a, b], &IdSteps::default()).is_err());
        let steps = IdSteps { sigrid_hash: Some((0, 0)), ..IdSteps::default() };
        assert!(key_major(&[a], &steps).is_err());
        // firstx(0) leaves every row empty, ids and lists alike.
        let steps = IdSteps { fill_null: Some(1), firstx: Some(0), ..IdSteps::default() };
        let list = IdColumn { offsets: Some(&[0, 1, 2]), ids: &[1, 2], validity: None };
        assert_eq!(run(&[a, list], steps), (vec![], vec![0; 4]));
    }
}
