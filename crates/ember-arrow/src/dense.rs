//! A frame's numerical columns as one row-major block (`Dense(batch_first=True)`), null slots
//! filled and optionally `log(x + offset)` taken, in the one pass that transposes.
use crate::{fail, Bitmap, Result};
use rayon::prelude::*;

/// One column's values, of the types Arrow and NumPy share (others are cast by the caller).
#[derive(Clone, Copy)]
pub enum Numbers<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
    F32(&'a [f32]),
    F64(&'a [f64]),
}

impl Numbers<'_> {
    pub fn len(&self) -> usize {
        match self {
            Numbers::I32(v) => v.len(),
            Numbers::I64(v) => v.len(),
            Numbers::F32(v) => v.len(),
            Numbers::F64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The block being written: (rows, columns), row-major.
pub enum DenseOut<'a> {
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
}

/// Rows per task: a task writes whole rows, so tasks never share a cache line of the block
/// for long.
const ROWS_PER_TASK: usize = 4096;

/// `out[r, c]` = f(column c's value in row r), where f is `log(x + offset)` with `log_offset` and
/// the identity without, and a null slot's x is `fill`. Computed in float64, rounded once.
pub fn dense_rows(columns: &[(Numbers<'_>, Option<Bitmap<'_>>)], fill: f64, log_offset: Option<f64>, out: DenseOut<'_>) -> Result<()> {
    let k = columns.len();
    let rows = columns.first().map_or(0, |(v, _)| v.len());
    if columns.iter().any(|(v, _)| v.len() != rows) {
        return fail("dense: columns of different lengths".into());
    }
    let slots = match &out {
        DenseOut::F32(o) => o.len(),
        DenseOut::F64(o) => o.len(),
    };
    if slots != rows * k {
        return fail(format!("dense: {slots} output slots for {rows} rows of {k} columns"));
    }
    if k == 0 {
        return Ok(());
    }
    match (out, log_offset) {
        (DenseOut::F32(out), Some(offset)) => fill_rows(out, columns, fill, |x| (x + offset).ln() as f32),
        (DenseOut::F32(out), None) => fill_rows(out, columns, fill, |x| x as f32),
        (DenseOut::F64(out), Some(offset)) => fill_rows(out, columns, fill, |x| (x + offset).ln()),
        (DenseOut::F64(out), None) => fill_rows(out, columns, fill, |x| x),
    }
    Ok(())
}

/// A value read as float64.
trait AsF64: Copy {
    fn as_f64(self) -> f64;
}

macro_rules! as_f64 {
    ($($t:ty),*) => {$(impl AsF64 for $t {
        #[inline(always)]
        fn as_f64(self) -> f64 {
            self as f64
        }
    })*};
}
as_f64!(i32, i64, f32, f64);

/// Tasks of whole rows; within a task, column after column, so that each column is read in
/// order and its type and bitmap are looked at once.
fn fill_rows<T: Send>(out: &mut [T], columns: &[(Numbers<'_>, Option<Bitmap<'_>>)], fill: f64, f: impl Fn(f64) -> T + Sync) {
    let k = columns.len();
    out.par_chunks_mut(ROWS_PER_TASK * k).enumerate().for_each(|(task, block)| {
        let rows = task * ROWS_PER_TASK..task * ROWS_PER_TASK + block.len() / k;
        for (c, (values, validity)) in columns.iter().enumerate() {
            let slots = block[c..].iter_mut().step_by(k);
            match values {
                Numbers::I32(v) => fill_column(slots, &v[rows.clone()], validity, rows.start, fill, &f),
                Numbers::I64(v) => fill_column(slots, &v[rows.clone()], validity, rows.start, fill, &f),
                Numbers::F32(v) => fill_column(slots, &v[rows.clone()], validity, rows.start, fill, &f),
                Numbers::F64(v) => fill_column(slots, &v[rows.clone()], validity, rows.start, fill, &f),
            }
        }
    });
}

fn fill_column<'s, S: AsF64, T: 's>(slots: impl Iterator<Item = &'s mut T>, values: &[S], validity: &Option<Bitmap<'_>>, first: usize, fill: f64, f: &impl Fn(f64) -> T) {
    match validity {
        None => {
            for (slot, &x) in slots.zip(values) {
                *slot = f(x.as_f64());
            }
        }
        Some(bits) => {
            let fill = fill.to_bits();
            for (i, (slot, &x)) in slots.zip(values).enumerate() {
                // A bit select rather than a branch: nulls fall at random.
                let keep = 0u64.wrapping_sub(bits.is_valid(first + i) as u64);
                *slot = f(f64::from_bits((x.as_f64().to_bits() & keep) | (fill & !keep)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposes_fills_and_logs() {
        let a = [1i32, 2, 3];
        let b = [10.0f64, 20.0, 30.0];
        let bits = [0b0000_0101u8]; // row 1 of `a` is null
        let cols = [(Numbers::I32(&a), Some(Bitmap::new(&bits, 0, 3).unwrap())), (Numbers::F64(&b), None)];
        let mut out = [0.0f64; 6];
        dense_rows(&cols, -1.0, None, DenseOut::F64(&mut out)).unwrap();
        assert_eq!(out, [1.0, 10.0, -1.0, 20.0, 3.0, 30.0]);
        let mut logs = [0.0f32; 6];
        dense_rows(&cols, 0.0, Some(3.0), DenseOut::F32(&mut logs)).unwrap();
        let expected: Vec<f32> = [4.0f64, 13.0, 3.0, 23.0, 6.0, 33.0].iter().map(|x| x.ln() as f32).collect();
        assert_eq!(logs.to_vec(), expected);
    }

    #[test]
    fn sliced_bitmap_and_many_rows() {
        // A bitmap read from bit 3: the slice of a longer array.
        let n: usize = 10_000;
        let values: Vec<i64> = (0..n as i64).collect();
        let bits: Vec<u8> = (0..(n + 3).div_ceil(8)).map(|i| if i % 2 == 0 { 0xFF } else { 0 }).collect();
        let bitmap = Bitmap::new(&bits, 3, n).unwrap();
        let cols = [(Numbers::I64(&values), Some(bitmap)), (Numbers::F32(&[0.5; 10_000]), None)];
        let mut out = vec![0.0f64; 2 * n];
        dense_rows(&cols, 7.0, None, DenseOut::F64(&mut out)).unwrap();
        for r in 0..n {
            let bit = r + 3;
            let expected = if (bit / 8) % 2 == 0 { r as f64 } else { 7.0 };
            assert_eq!((out[2 * r], out[2 * r + 1]), (expected, 0.5), "row {r}");
        }
    }

    #[test]
    fn empty_and_mismatched() {
        dense_rows(&[], 0.0, None, DenseOut::F32(&mut [])).unwrap();
        dense_rows(&[(Numbers::I32(&[]), None)], 0.0, Some(1.0), DenseOut::F32(&mut [])).unwrap();
        let cols = [(Numbers::I32(&[1, 2]), None), (Numbers::I32(&[1]), None)];
        assert!(dense_rows(&cols, 0.0, None, DenseOut::F32(&mut [0.0; 4])).is_err());
        assert!(dense_rows(&cols[..1], 0.0, None, DenseOut::F32(&mut [0.0; 3])).is_err());
        assert!(Bitmap::new(&[0], 4, 5).is_err());
    }
}
