//! Id columns as a KeyedJaggedTensor's key-major `values` and `lengths`, with the recsys steps
//! of TorchRec's torcharrow example (fill null ids, sigrid_hash, firstx) done while the ids are
//! written: each id is read once and written once, with no intermediate column.
use crate::bitmap::valid;
use crate::sigrid::hasher;
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

    fn check(&self, key: usize) -> Result<()> {
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

    /// The ids row `r` contributes, before `firstx`.
    #[inline(always)]
    fn row_ids(&self, r: usize, fill_null: Option<i64>) -> RowIds<'_> {
        let is_valid = valid(&self.validity, r);
        match self.offsets {
            Some(offsets) if is_valid => {
                let base = offsets[0];
                RowIds::Slice(&self.ids[(offsets[r] - base) as usize..(offsets[r + 1] - base) as usize])
            }
            Some(_) => RowIds::Slice(&[]),
            None if is_valid => RowIds::One(self.ids[r]),
            None => fill_null.map_or(RowIds::Slice(&[]), RowIds::One),
        }
    }
}

enum RowIds<'a> {
    One(i64),
    Slice(&'a [i64]),
}

impl RowIds<'_> {
    #[inline(always)]
    fn len(&self) -> usize {
        match self {
            RowIds::One(_) => 1,
            RowIds::Slice(s) => s.len(),
        }
    }
}

fn row_length(col: &IdColumn<'_>, r: usize, steps: &IdSteps) -> usize {
    let n = col.row_ids(r, steps.fill_null).len();
    steps.firstx.map_or(n, |x| n.min(x))
}

/// `lengths[k * rows + r]` = the number of ids key `k` has in row `r` (all keys have `rows`
/// rows). Returns the total, the length of the values `key_major_values` writes.
pub fn key_major_lengths(columns: &[IdColumn<'_>], steps: &IdSteps, lengths: &mut [i32]) -> Result<usize> {
    let rows = columns.first().map_or(0, IdColumn::rows);
    for (key, col) in columns.iter().enumerate() {
        col.check(key)?;
        if col.rows() != rows {
            return fail(format!("key_major: key {key} has {} rows, key 0 has {rows}", col.rows()));
        }
    }
    if lengths.len() != rows * columns.len() {
        return fail(format!("key_major: {} length slots for {rows} rows of {} keys", lengths.len(), columns.len()));
    }
    if rows == 0 {
        return Ok(0);
    }
    let total: usize = lengths
        .par_chunks_mut(rows)
        .zip(columns.par_iter())
        .map(|(lengths, col)| {
            let mut sum = 0;
            for (r, slot) in lengths.iter_mut().enumerate() {
                let n = row_length(col, r, steps);
                *slot = n as i32;
                sum += n;
            }
            sum
        })
        .sum();
    Ok(total)
}

/// A piece of the work: rows `rows` of key `key`, written to the next `len` values.
struct Task {
    key: usize,
    rows: std::ops::Range<usize>,
    len: usize,
}

/// Writes the ids of every key, key after key, into `values`, as `lengths` (from
/// `key_major_lengths` with the same columns and steps) counts them.
pub fn key_major_values(columns: &[IdColumn<'_>], steps: &IdSteps, lengths: &[i32], values: &mut [i64]) -> Result<()> {
    let rows = columns.first().map_or(0, IdColumn::rows);
    if lengths.len() != rows * columns.len() || lengths.iter().any(|&n| n < 0) {
        return fail(format!("key_major: {} lengths (none negative) needed for {rows} rows of {} keys", rows * columns.len(), columns.len()));
    }
    let tasks: Vec<Task> = (0..columns.len())
        .flat_map(|key| (0..rows).step_by(CHUNK).map(move |start| (key, start..(start + CHUNK).min(rows))))
        .map(|(key, rows_range)| {
            let len = lengths[key * rows + rows_range.start..key * rows + rows_range.end].iter().map(|&n| n as usize).sum();
            Task { key, rows: rows_range, len }
        })
        .collect();
    if tasks.iter().map(|t| t.len).sum::<usize>() != values.len() {
        return fail(format!("key_major: the lengths count other than the {} value slots", values.len()));
    }
    let mut pieces = Vec::with_capacity(tasks.len());
    let mut rest = values;
    for task in &tasks {
        let (piece, tail) = std::mem::take(&mut rest).split_at_mut(task.len);
        pieces.push(piece);
        rest = tail;
    }
    let write = |task: &Task, out: &mut [i64]| match steps.sigrid_hash {
        Some((salt, max_value)) => write_task(&columns[task.key], task, rows, lengths, steps.fill_null, out, hasher(salt, max_value)?),
        None => write_task(&columns[task.key], task, rows, lengths, steps.fill_null, out, |id| id),
    };
    tasks.par_iter().zip(pieces.into_par_iter()).try_for_each(|(task, out)| write(task, out))
}

/// One task's ids through `map` into `out`; generic over `map` so that the hash is inlined.
fn write_task(col: &IdColumn<'_>, task: &Task, rows: usize, lengths: &[i32], fill_null: Option<i64>, out: &mut [i64], map: impl Fn(i64) -> i64) -> Result<()> {
    let mut j = 0;
    for r in task.rows.clone() {
        let n = lengths[task.key * rows + r] as usize;
        let ids = col.row_ids(r, fill_null);
        if j + n > out.len() || n > ids.len() {
            return fail(format!("key_major: lengths do not match the ids of key {} at row {r}", task.key));
        }
        match ids {
            RowIds::One(id) => {
                if n == 1 {
                    out[j] = map(id);
                }
            }
            RowIds::Slice(ids) => {
                for (o, &id) in out[j..j + n].iter_mut().zip(ids) {
                    *o = map(id);
                }
            }
        }
        j += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sigrid_hash_one;

    fn run(columns: &[IdColumn<'_>], steps: IdSteps) -> (Vec<i64>, Vec<i32>) {
        let rows = columns.first().map_or(0, IdColumn::rows);
        let mut lengths = vec![-1; rows * columns.len()];
        let total = key_major_lengths(columns, &steps, &mut lengths).unwrap();
        let mut values = vec![-1; total];
        key_major_values(columns, &steps, &lengths, &mut values).unwrap();
        (values, lengths)
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
        assert!(key_major_lengths(&[bad], &IdSteps::default(), &mut [0]).is_err());
        let a = IdColumn { offsets: None, ids: &[1, 2], validity: None };
        let b = IdColumn { offsets: None, ids: &[1], validity: None };
        assert!(key_major_lengths(&[a, b], &IdSteps::default(), &mut [0; 4]).is_err());
        assert!(key_major_values(&[a], &IdSteps::default(), &[1, 1], &mut [0; 3]).is_err());
        assert!(key_major_values(&[a], &IdSteps::default(), &[2, 0], &mut [0; 2]).is_err());
        let steps = IdSteps { sigrid_hash: Some((0, 0)), ..IdSteps::default() };
        assert!(key_major_values(&[a], &steps, &[1, 1], &mut [0; 2]).is_err());
    }
}
