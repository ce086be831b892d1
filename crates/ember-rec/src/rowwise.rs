//! FBGEMM's fused rowwise formats (fbgemm `QuantUtils`), each row self-describing:
//! - fused 8-bit (`FloatToFused8BitRowwiseQuantized`): `cols` bytes, then float32 scale and
//!   bias (the row's minimum); q = round((x - min) * 255 / (range + 1e-8)), x = q * scale + bias;
//! - fused n-bit with half scale and bias (`FloatToFusedNBitRowwiseQuantizedSBHalf`, 2, 4 or
//!   8 bits): the values packed `8 / bits` to a byte, low bits first, then binary16 scale and
//!   bias. FBGEMM asks for column counts that fill whole bytes (and an even byte count); here any
//!   count works, the last byte padded with zeros.
//! Rounding is to nearest even, as `lrintf`; dequantization uses a fused multiply-add where
//! FBGEMM's does, so results agree bit for bit.
use crate::simd::f16_at;
use crate::{fail, Result, ROWS_PER_TASK};
use half::f16;
use rayon::prelude::*;

const FUSED8_EPSILON: f32 = 1e-8;

/// Bytes per fused 8-bit row of `cols` values.
pub fn fused8_row_bytes(cols: usize) -> usize {
    cols + 8
}

/// Bytes per fused n-bit row of `cols` values.
pub fn nbit_row_bytes(cols: usize, bits: u32) -> usize {
    packed_bytes(cols, bits) + 4
}

/// Bytes that hold `cols` values of `bits` bits, low bits first.
pub(crate) fn packed_bytes(cols: usize, bits: u32) -> usize {
    (cols * bits as usize).div_ceil(8)
}

pub(crate) fn check_bits(bits: u32) -> Result<()> {
    if matches!(bits, 2 | 4 | 8) {
        Ok(())
    } else {
        fail(format!("bit_rate must be 2, 4 or 8, got {bits}"))
    }
}

/// That `floats` and `bytes` hold exactly `rows` rows of `cols` values and of `row_bytes` bytes.
pub(crate) fn check_sizes(what: &str, floats: usize, rows: usize, cols: usize, bytes: usize, row_bytes: usize) -> Result<()> {
    if floats != rows * cols || bytes != rows * row_bytes {
        return fail(format!(
            "{what}: {rows} rows of {cols} columns need {} floats and {} bytes, got {floats} and {bytes}",
            rows * cols,
            rows * row_bytes
        ));
    }
    Ok(())
}

fn min_max(row: &[f32]) -> (f32, f32) {
    row.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)))
}

/// `rows` x `cols` floats (row-major) into fused 8-bit rows.
pub fn quantize_fused8(input: &[f32], rows: usize, cols: usize, out: &mut [u8]) -> Result<()> {
    let row_bytes = fused8_row_bytes(cols);
    check_sizes("quantize_fused8", input.len(), rows, cols, out.len(), row_bytes)?;
    if cols == 0 {
        out.fill(0);
        return Ok(());
    }
    out.par_chunks_mut(row_bytes * ROWS_PER_TASK).zip(input.par_chunks(cols * ROWS_PER_TASK)).for_each(|(out, input)| {
        for (q, x) in out.chunks_exact_mut(row_bytes).zip(input.chunks_exact(cols)) {
            quantize_fused8_row(x, q);
        }
    });
    Ok(())
}

fn quantize_fused8_row(x: &[f32], out: &mut [u8]) {
    let (values, scale_bias) = out.split_at_mut(x.len());
    let (scale, bias) = quantize_fused8_values(x, values);
    scale_bias[..4].copy_from_slice(&scale.to_le_bytes());
    scale_bias[4..].copy_from_slice(&bias.to_le_bytes());
}

/// FBGEMM's 8-bit rowwise quantization of one row's values into `values`; returns the float32
/// (scale, bias).
pub(crate) fn quantize_fused8_values(x: &[f32], values: &mut [u8]) -> (f32, f32) {
    let (min, max) = min_max(x);
    let range = max - min;
    let inverse_scale = 255.0 / (range + FUSED8_EPSILON);
    for (q, &v) in values.iter_mut().zip(x) {
        *q = ((v - min) * inverse_scale).round_ties_even() as u8;
    }
    (range / 255.0, min)
}

/// Fused 8-bit rows (`cols` values each) back into `rows` x `cols` floats.
pub fn dequantize_fused8(input: &[u8], rows: usize, cols: usize, out: &mut [f32]) -> Result<()> {
    let row_bytes = fused8_row_bytes(cols);
    check_sizes("dequantize_fused8", out.len(), rows, cols, input.len(), row_bytes)?;
    if cols == 0 {
        return Ok(());
    }
    out.par_chunks_mut(cols * ROWS_PER_TASK).zip(input.par_chunks(row_bytes * ROWS_PER_TASK)).for_each(|(out, input)| {
        for (x, q) in out.chunks_exact_mut(cols).zip(input.chunks_exact(row_bytes)) {
            let float_at = |at: usize| f32::from_le_bytes([q[at], q[at + 1], q[at + 2], q[at + 3]]);
            let (scale, bias) = (float_at(cols), float_at(cols + 4));
            for (x, &q) in x.iter_mut().zip(&q[..cols]) {
                *x = (q as f32).mul_add(scale, bias);
            }
        }
    });
    Ok(())
}

/// FBGEMM's n-bit quantization of one row: the packed values into `data`; returns the binary16
/// (scale, bias). The bias is the row's minimum rounded to binary16 first, so the range is
/// measured from the value dequantization adds back.
pub(crate) fn quantize_nbit_row(x: &[f32], bits: u32, data: &mut [u8]) -> (f16, f16) {
    let (min, max) = min_max(x);
    let (min, max) = if x.is_empty() { (0.0, 0.0) } else { (min, max) };
    let bias = f16::from_f32(min);
    let min = bias.to_f32();
    let range = max - min;
    let levels = ((1u32 << bits) - 1) as f32;
    let mut scale = f16::from_f32(if range == 0.0 { 1.0 } else { range / levels }).to_f32();
    if scale == 0.0 {
        // A range too small for binary16: any scale works, as every value is the minimum.
        scale = 1.0;
    }
    let mut inverse_scale = 1.0 / scale;
    if inverse_scale.is_infinite() {
        scale = 1.0;
        inverse_scale = 1.0;
    }
    data.fill(0);
    let per_byte = (8 / bits) as usize;
    for (c, &v) in x.iter().enumerate() {
        let q = ((v - min) * inverse_scale).round_ties_even().clamp(0.0, levels) as u8;
        data[c / per_byte] |= q << ((c % per_byte) as u32 * bits);
    }
    (f16::from_f32(scale), bias)
}

/// `rows` x `cols` floats into fused n-bit rows (binary16 scale and bias last).
pub fn quantize_nbit(input: &[f32], rows: usize, cols: usize, bits: u32, out: &mut [u8]) -> Result<()> {
    check_bits(bits)?;
    let row_bytes = nbit_row_bytes(cols, bits);
    check_sizes("quantize_nbit", input.len(), rows, cols, out.len(), row_bytes)?;
    let packed = packed_bytes(cols, bits);
    let quantize_row = |x: &[f32], q: &mut [u8]| {
        let (data, scale_bias) = q.split_at_mut(packed);
        let (scale, bias) = quantize_nbit_row(x, bits, data);
        scale_bias[..2].copy_from_slice(&scale.to_le_bytes());
        scale_bias[2..].copy_from_slice(&bias.to_le_bytes());
    };
    if cols == 0 {
        out.chunks_exact_mut(row_bytes).for_each(|q| quantize_row(&[], q));
        return Ok(());
    }
    out.par_chunks_mut(row_bytes * ROWS_PER_TASK).zip(input.par_chunks(cols * ROWS_PER_TASK)).for_each(|(out, input)| {
        for (q, x) in out.chunks_exact_mut(row_bytes).zip(input.chunks_exact(cols)) {
            quantize_row(x, q);
        }
    });
    Ok(())
}

/// The values of packed n-bit data, `x = q * scale + bias`, into `out`.
#[inline(always)]
pub(crate) fn dequantize_nbit_data(data: &[u8], bits: u32, scale: f32, bias: f32, out: &mut [f32]) {
    let per_byte = (8 / bits) as usize;
    let mask = ((1u16 << bits) - 1) as u8;
    for (c, x) in out.iter_mut().enumerate() {
        let q = (data[c / per_byte] >> ((c % per_byte) as u32 * bits)) & mask;
        *x = (q as f32).mul_add(scale, bias);
    }
}

/// Fused n-bit rows back into `rows` x `cols` floats.
pub fn dequantize_nbit(input: &[u8], rows: usize, cols: usize, bits: u32, out: &mut [f32]) -> Result<()> {
    check_bits(bits)?;
    let row_bytes = nbit_row_bytes(cols, bits);
    check_sizes("dequantize_nbit", out.len(), rows, cols, input.len(), row_bytes)?;
    if cols == 0 {
        return Ok(());
    }
    let packed = packed_bytes(cols, bits);
    out.par_chunks_mut(cols * ROWS_PER_TASK).zip(input.par_chunks(row_bytes * ROWS_PER_TASK)).for_each(|(out, input)| {
        for (x, q) in out.chunks_exact_mut(cols).zip(input.chunks_exact(row_bytes)) {
            dequantize_nbit_data(&q[..packed], bits, f16_at(q, packed), f16_at(q, packed + 2), x);
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row FBGEMM quantizes in its own tests' style: min -2.5, max 7.
    const ROW: [f32; 8] = [0.0, 1.0, -2.5, 3.25, 0.1, 7.0, -1.0, 2.0];

    #[test]
    fn fused8_bytes_as_fbgemm_writes_them() {
        let mut q = vec![0u8; fused8_row_bytes(8)];
        quantize_fused8(&ROW, 1, 8, &mut q).unwrap();
        // (x + 2.5) * 255 / 9.5, rounded; then scale 9.5 / 255 and bias -2.5 as float32.
        assert_eq!(&q[..8], &[67, 94, 0, 154, 70, 255, 40, 121]);
        assert_eq!(&q[8..12], &(9.5f32 / 255.0).to_le_bytes());
        assert_eq!(&q[12..], &(-2.5f32).to_le_bytes());
        let mut x = [0f32; 8];
        dequantize_fused8(&q, 1, 8, &mut x).unwrap();
        // A fused multiply-add, as FBGEMM: 67 * scale - 2.5 is not the two-rounding value.
        assert_eq!(x[0], (67f32).mul_add(9.5 / 255.0, -2.5));
        assert_eq!(x[5], (255f32).mul_add(9.5 / 255.0, -2.5));
    }

    #[test]
    fn nbit_bytes_as_fbgemm_writes_them() {
        let cases: [(u32, &[u8]); 3] = [
            (2, &[133, 77, 0x55, 0x42, 0x00, 0xc1]),
            (4, &[100, 144, 244, 114, 0x11, 0x39, 0x00, 0xc1]),
            (8, &[67, 94, 0, 154, 70, 255, 40, 121, 0xc5, 0x28, 0x00, 0xc1]),
        ];
        for (bits, want) in cases {
            let mut q = vec![0u8; nbit_row_bytes(8, bits)];
            quantize_nbit(&ROW, 1, 8, bits, &mut q).unwrap();
            assert_eq!(q, want, "{bits} bits");
        }
        // 4 bits: scale = binary16(9.5 / 15) = 0.63330078125; byte 0 holds 4 (low) and 6.
        let mut x = [0f32; 8];
        dequantize_nbit(cases[1].1, 1, 8, 4, &mut x).unwrap();
        assert_eq!(x[0], 4.0 * 0.633_300_781_25 - 2.5);
        assert_eq!(x[1], 6.0 * 0.633_300_781_25 - 2.5);
    }

    #[test]
    fn round_trips_stay_within_half_a_step() {
        let cols = 17;
        let input: Vec<f32> = (0..5 * cols).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
        for bits in [2, 4, 8] {
            let mut q = vec![0u8; 5 * nbit_row_bytes(cols, bits)];
            quantize_nbit(&input, 5, cols, bits, &mut q).unwrap();
            let mut back = vec![0f32; input.len()];
            dequantize_nbit(&q, 5, cols, bits, &mut back).unwrap();
            for (row, (x, y)) in input.chunks(cols).zip(back.chunks(cols)).enumerate() {
                let (lo, hi) = min_max(x);
                let step = (hi - lo) / ((1 << bits) - 1) as f32;
                for (a, b) in x.iter().zip(y) {
                    assert!((a - b).abs() <= step * 0.5 + 0.02, "{bits} bits row {row}: {a} vs {b}");
                }
            }
        }
        let mut q = vec![0u8; 5 * fused8_row_bytes(cols)];
        quantize_fused8(&input, 5, cols, &mut q).unwrap();
        let mut back = vec![0f32; input.len()];
        dequantize_fused8(&q, 5, cols, &mut back).unwrap();
        for (a, b) in input.iter().zip(&back) {
            assert!((a - b).abs() <= 100.0 / 7.0 / 255.0 * 0.5 + 1e-5, "{a} vs {b}");
        }
    }

    #[test]
    fn constant_rows_and_odd_widths() {
        let mut q = vec![0u8; nbit_row_bytes(3, 4)];
        quantize_nbit(&[2.0, 2.0, 2.0], 1, 3, 4, &mut q).unwrap();
        // Scale 1.0, bias 2.0, all values 0; 3 nibbles take 2 bytes.
        assert_eq!(q, [0, 0, 0x00, 0x3c, 0x00, 0x40]);
        let mut x = [0f32; 3];
        dequantize_nbit(&q, 1, 3, 4, &mut x).unwrap();
        assert_eq!(x, [2.0; 3]);
    }

    #[test]
    fn bad_sizes_and_bit_rates_are_refused() {
        let mut q = vec![0u8; 10];
        assert!(quantize_nbit(&ROW, 1, 8, 3, &mut q).is_err());
        assert!(quantize_nbit(&ROW, 1, 8, 4, &mut q).is_err());
        assert!(quantize_fused8(&ROW, 2, 8, &mut q).is_err());
        assert!(dequantize_nbit(&q, 1, 8, 4, &mut [0f32; 8]).is_err());
    }
}
