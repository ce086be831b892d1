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
    match out {
        DenseOut::F32(out) => fill_rows(out, columns, fill, log_offset),
        DenseOut::F64(out) => fill_rows(out, columns, fill, log_offset),
    }
    Ok(())
}

/// A value read as float64, and a float64 rounded to the block's type.
trait Float64: Copy {
    fn as_f64(self) -> f64;
    fn from_f64(x: f64) -> Self;
}

macro_rules! float64 {
    ($($t:ty),*) => {$(impl Float64 for $t {
        #[inline(always)]
        fn as_f64(self) -> f64 {
            self as f64
        }
        #[inline(always)]
        fn from_f64(x: f64) -> Self {
            x as $t
        }
    })*};
}
float64!(i32, i64, f32, f64);

/// Tasks of whole rows; within a task, column after column: a column's values are read in
/// order into a float64 buffer (nulls filled), their logs taken there in one vectorised loop,
/// then written to the column's strided slots.
fn fill_rows<T: Float64 + Send>(out: &mut [T], columns: &[(Numbers<'_>, Option<Bitmap<'_>>)], fill: f64, log_offset: Option<f64>) {
    let k = columns.len();
    out.par_chunks_mut(ROWS_PER_TASK * k).enumerate().for_each(|(task, block)| {
        let rows = task * ROWS_PER_TASK..task * ROWS_PER_TASK + block.len() / k;
        let mut buffer = [0f64; ROWS_PER_TASK];
        let xs = &mut buffer[..rows.len()];
        for (c, (values, validity)) in columns.iter().enumerate() {
            match values {
                Numbers::I32(v) => read_column(xs, &v[rows.clone()], validity, rows.start, fill),
                Numbers::I64(v) => read_column(xs, &v[rows.clone()], validity, rows.start, fill),
                Numbers::F32(v) => read_column(xs, &v[rows.clone()], validity, rows.start, fill),
                Numbers::F64(v) => read_column(xs, &v[rows.clone()], validity, rows.start, fill),
            }
            if let Some(offset) = log_offset {
                log_in_place(xs, offset);
            }
            for (slot, &x) in block[c..].iter_mut().step_by(k).zip(xs.iter()) {
                *slot = T::from_f64(x);
            }
        }
    });
}

fn read_column<S: Float64>(xs: &mut [f64], values: &[S], validity: &Option<Bitmap<'_>>, first: usize, fill: f64) {
    match validity {
        None => {
            for (x, &v) in xs.iter_mut().zip(values) {
                *x = v.as_f64();
            }
        }
        Some(bits) => {
            let fill = fill.to_bits();
            for (i, (x, &v)) in xs.iter_mut().zip(values).enumerate() {
                // A bit select rather than a branch: nulls fall at random.
                let keep = 0u64.wrapping_sub(bits.is_valid(first + i) as u64);
                *x = f64::from_bits((v.as_f64().to_bits() & keep) | (fill & !keep));
            }
        }
    }
}

/// `x = ln(x + offset)` for each x, with the widest vectors the CPU has.
fn log_in_place(xs: &mut [f64], offset: f64) {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the features the function is compiled for.
            return unsafe { log_avx512(xs, offset) };
        }
        if is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { log_avx2(xs, offset) };
        }
    }
    log_loop(xs, offset)
}

#[inline(always)]
fn log_loop(xs: &mut [f64], offset: f64) {
    for x in xs {
        *x = ln(*x + offset);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn log_avx512(xs: &mut [f64], offset: f64) {
    log_loop(xs, offset)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn log_avx2(xs: &mut [f64], offset: f64) {
    log_loop(xs, offset)
}

/// ln(x) without branches, so that a loop of it vectorises (libm's `log` is a call): fdlibm's
/// method. x = 2^k·m with m in [√2/2, √2); with f = m − 1 and s = f / (2 + f),
/// ln(m) = f − f²/2 + s·(f²/2 + R(s²)), R a degree-7 minimax polynomial; error under 1 ulp.
/// Subnormals are scaled up first; zero, negatives, infinity and NaN give libm's results.
#[inline(always)]
fn ln(x: f64) -> f64 {
    const LG: [f64; 7] = [
        6.666666666666735130e-01,
        3.999999999940941908e-01,
        2.857142874366239149e-01,
        2.222219843214978396e-01,
        1.818357216161805012e-01,
        1.531383769920937332e-01,
        1.479819860511658591e-01,
    ];
    const LN2_HI: f64 = 6.93147180369123816490e-01;
    const LN2_LO: f64 = 1.90821492927058770002e-10;
    const TWO_54: f64 = 18_014_398_509_481_984.0;
    let subnormal = x < f64::MIN_POSITIVE;
    let y = if subnormal { x * TWO_54 } else { x };
    let bits = y.to_bits();
    // Adding 1 − √2/2's offset to the high word carries into the exponent exactly when m ≥ √2.
    let high = ((bits >> 32) as u32).wrapping_add(0x3ff0_0000 - 0x3fe6_a09e);
    let k = (high >> 20) as i32 - 0x3ff - if subnormal { 54 } else { 0 };
    let high = (high & 0x000f_ffff) + 0x3fe6_a09e;
    let m = f64::from_bits(((high as u64) << 32) | (bits & 0xffff_ffff));
    let f = m - 1.0;
    let half_f2 = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let r = z * (LG[0] + w * (LG[2] + w * (LG[4] + w * LG[6]))) + w * (LG[1] + w * (LG[3] + w * LG[5]));
    let dk = k as f64;
    let result = s * (half_f2 + r) + dk * LN2_LO - half_f2 + f + dk * LN2_HI;
    if x > 0.0 && x < f64::INFINITY {
        result
    } else if x == 0.0 {
        f64::NEG_INFINITY
    } else if x == f64::INFINITY {
        x
    } else {
        f64::NAN
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

    /// Within one ulp of libm's `ln` (itself within one of the true value), special values equal.
    #[test]
    fn ln_matches_libm() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut xs: Vec<f64> = (0..200_000).map(|_| f64::from_bits(next() >> 1)).filter(|x| x.is_finite()).collect();
        xs.extend((0..100_000).map(|i| i as f64 + 3.0));
        xs.extend((0..10_000).map(|i| 1.0 + (i as f64 - 5000.0) * 1e-12));
        xs.extend([f64::MIN_POSITIVE, 5e-324, 1e-310, f64::MAX, 1.0, 2.0, std::f64::consts::SQRT_2, std::f64::consts::FRAC_1_SQRT_2]);
        for &x in &xs {
            let (got, want) = (ln(x), x.ln());
            let ulps = (got.to_bits() as i64 - want.to_bits() as i64).abs();
            assert!(ulps <= 1, "ln({x:e}) = {got:e}, libm {want:e}");
        }
        assert_eq!(ln(0.0), f64::NEG_INFINITY);
        assert_eq!(ln(-0.0), f64::NEG_INFINITY);
        assert_eq!(ln(f64::INFINITY), f64::INFINITY);
        assert!(ln(-1.0).is_nan() && ln(f64::NAN).is_nan() && ln(f64::NEG_INFINITY).is_nan());
        let mut vectorised = xs.clone();
        log_in_place(&mut vectorised, 0.0);
        assert!(vectorised.iter().zip(&xs).all(|(v, &x)| v.to_bits() == ln(x).to_bits()));
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
