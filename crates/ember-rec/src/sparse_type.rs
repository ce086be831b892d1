//! The rows of FBGEMM's inference table-batched embedding bag
//! (`IntNBitTableBatchedEmbeddingBagsCodegen`), one format per table:
//! - FP32, FP16: the values, little-endian;
//! - FP8: one HFP8 byte per value (`Hfp8`: exponent bits and bias chosen per embedding bag);
//! - INT8, INT4, INT2: a 4-byte header of binary16 scale and bias, then the values packed
//!   `8 / bits` to a byte, low bits first. Quantized as FBGEMM's `quantize_embs` does: INT4 and
//!   INT2 by the n-bit rowwise rule, INT8 by the 8-bit rowwise rule with its float32 scale and
//!   bias then rounded to binary16.
//! Each row is padded with zeros to a multiple of `row_alignment` bytes (FBGEMM: 1 on the CPU,
//! 16 on GPUs). FBGEMM wants dims that fill whole bytes; here the last byte is padded instead.
use crate::rowwise::check_sizes;
use crate::hfp8::Hfp8;
use crate::rowwise::{dequantize_nbit_data, packed_bytes, quantize_fused8_values, quantize_nbit_row};
use crate::simd::f16_at;
use crate::{fail, Result, ROWS_PER_TASK};
use half::f16;
use rayon::prelude::*;

/// Bytes of the binary16 scale and bias at the start of an integer row.
pub const SCALE_BIAS_BYTES: usize = 4;

/// A row format, numbered as FBGEMM's `SparseType.as_int()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SparseType {
    Fp32 = 0,
    Fp16 = 1,
    Int8 = 2,
    Int4 = 3,
    Int2 = 4,
    Fp8 = 6,
}

impl SparseType {
    pub fn from_int(code: i64) -> Result<Self> {
        Ok(match code {
            0 => SparseType::Fp32,
            1 => SparseType::Fp16,
            2 => SparseType::Int8,
            3 => SparseType::Int4,
            4 => SparseType::Int2,
            6 => SparseType::Fp8,
            _ => return fail(format!("unsupported weight type code {code} (FP32 0, FP16 1, INT8 2, INT4 3, INT2 4, FP8 6)")),
        })
    }

    pub fn bits(self) -> u32 {
        match self {
            SparseType::Fp32 => 32,
            SparseType::Fp16 => 16,
            SparseType::Int8 | SparseType::Fp8 => 8,
            SparseType::Int4 => 4,
            SparseType::Int2 => 2,
        }
    }

    /// Whether rows carry a scale and bias header.
    pub fn is_int(self) -> bool {
        matches!(self, SparseType::Int8 | SparseType::Int4 | SparseType::Int2)
    }

    /// Bytes of a row of `dim` values before padding.
    pub fn unpadded_row_bytes(self, dim: usize) -> usize {
        packed_bytes(dim, self.bits()) + if self.is_int() { SCALE_BIAS_BYTES } else { 0 }
    }

    /// Bytes of a row of `dim` values padded to a multiple of `alignment`.
    pub fn row_bytes(self, dim: usize, alignment: usize) -> usize {
        self.unpadded_row_bytes(dim).next_multiple_of(alignment.max(1))
    }
}

/// `rows` x `dim` floats into rows of type `ty`, each padded to a multiple of `alignment`
/// bytes. FP8 values saturate at `fp8_max_pos`.
pub fn quantize_rows(ty: SparseType, input: &[f32], rows: usize, dim: usize, alignment: usize, fp8: Hfp8, fp8_max_pos: f32, out: &mut [u8]) -> Result<()> {
    let row_bytes = ty.row_bytes(dim, alignment);
    check_sizes("quantize_rows", input.len(), rows, dim, out.len(), row_bytes)?;
    if dim == 0 {
        out.chunks_exact_mut(row_bytes.max(1)).for_each(|q| quantize_row(ty, &[], fp8, fp8_max_pos, q));
        return Ok(());
    }
    out.par_chunks_mut(row_bytes * ROWS_PER_TASK).zip(input.par_chunks(dim * ROWS_PER_TASK)).for_each(|(out, input)| {
        for (q, x) in out.chunks_exact_mut(row_bytes).zip(input.chunks_exact(dim)) {
            quantize_row(ty, x, fp8, fp8_max_pos, q);
        }
    });
    Ok(())
}

fn quantize_row(ty: SparseType, x: &[f32], fp8: Hfp8, fp8_max_pos: f32, out: &mut [u8]) {
    out.fill(0);
    match ty {
        SparseType::Fp32 => x.iter().zip(out.chunks_exact_mut(4)).for_each(|(v, q)| q.copy_from_slice(&v.to_le_bytes())),
        SparseType::Fp16 => x.iter().zip(out.chunks_exact_mut(2)).for_each(|(v, q)| q.copy_from_slice(&f16::from_f32(*v).to_le_bytes())),
        SparseType::Fp8 => x.iter().zip(out.iter_mut()).for_each(|(v, q)| *q = fp8.encode(*v, fp8_max_pos)),
        SparseType::Int8 | SparseType::Int4 | SparseType::Int2 => {
            let (header, data) = out.split_at_mut(SCALE_BIAS_BYTES);
            let data = &mut data[..packed_bytes(x.len(), ty.bits())];
            let (scale, bias) = if ty == SparseType::Int8 {
                // As FBGEMM's `quantize_embs`: the 8-bit rowwise values, then its float32
                // scale and bias rounded to binary16.
                let (scale, bias) = if x.is_empty() { (0.0, 0.0) } else { quantize_fused8_values(x, data) };
                (f16::from_f32(scale), f16::from_f32(bias))
            } else {
                quantize_nbit_row(x, ty.bits(), data)
            };
            header[..2].copy_from_slice(&scale.to_le_bytes());
            header[2..].copy_from_slice(&bias.to_le_bytes());
        }
    }
}

/// One row of type `ty` (its bytes from the start of the row) as `out.len()` floats.
#[inline(always)]
pub(crate) fn dequantize_row(ty: SparseType, row: &[u8], fp8: Hfp8, out: &mut [f32]) {
    match ty {
        SparseType::Fp32 => {
            for (x, b) in out.iter_mut().zip(row.chunks_exact(4)) {
                *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        SparseType::Fp16 => {
            for (c, x) in out.iter_mut().enumerate() {
                *x = f16_at(row, 2 * c);
            }
        }
        SparseType::Fp8 => {
            for (x, &b) in out.iter_mut().zip(row) {
                *x = fp8.decode(b);
            }
        }
        SparseType::Int8 | SparseType::Int4 | SparseType::Int2 => {
            let (scale, bias) = (f16_at(row, 0), f16_at(row, 2));
            dequantize_nbit_data(&row[SCALE_BIAS_BYTES..], ty.bits(), scale, bias, out);
        }
    }
}

/// Rows of type `ty` (each padded to a multiple of `alignment` bytes) as `rows` x `dim` floats.
pub fn dequantize_rows(ty: SparseType, input: &[u8], rows: usize, dim: usize, alignment: usize, fp8: Hfp8, out: &mut [f32]) -> Result<()> {
    let row_bytes = ty.row_bytes(dim, alignment);
    check_sizes("dequantize_rows", out.len(), rows, dim, input.len(), row_bytes)?;
    if dim == 0 {
        return Ok(());
    }
    out.par_chunks_mut(dim * ROWS_PER_TASK).zip(input.par_chunks(row_bytes * ROWS_PER_TASK)).for_each(|(out, input)| {
        for (x, q) in out.chunks_exact_mut(dim).zip(input.chunks_exact(row_bytes)) {
            dequantize_row(ty, q, fp8, x);
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_sizes_as_fbgemm_for_whole_bytes_and_rounded_up_otherwise() {
        // FBGEMM: FP32 4d, FP16 2d, FP8 d, INT8 d + 4, INT4 d / 2 + 4, INT2 d / 4 + 4.
        assert_eq!(SparseType::Fp32.row_bytes(128, 1), 512);
        assert_eq!(SparseType::Fp16.row_bytes(128, 1), 256);
        assert_eq!(SparseType::Fp8.row_bytes(128, 1), 128);
        assert_eq!(SparseType::Int8.row_bytes(128, 1), 132);
        assert_eq!(SparseType::Int4.row_bytes(128, 1), 68);
        assert_eq!(SparseType::Int2.row_bytes(128, 1), 36);
        assert_eq!(SparseType::Int4.row_bytes(128, 16), 80);
        assert_eq!(SparseType::Int4.row_bytes(5, 1), 7);
        assert_eq!(SparseType::Int2.row_bytes(17, 1), 9);
        assert_eq!(SparseType::Fp8.row_bytes(3, 16), 16);
    }

    #[test]
    fn int4_row_is_header_then_low_nibbles_first() {
        let x = [0.0, 1.0, -2.5, 3.25, 0.1, 7.0, -1.0, 2.0];
        let mut q = vec![0u8; SparseType::Int4.row_bytes(8, 16)];
        quantize_rows(SparseType::Int4, &x, 1, 8, 16, Hfp8::default(), 240.0, &mut q).unwrap();
        // FBGEMM's n-bit row with the scale and bias moved in front; padding zero.
        assert_eq!(&q[..8], &[0x11, 0x39, 0x00, 0xc1, 100, 144, 244, 114]);
        assert_eq!(&q[8..], &[0; 8]);
    }

    #[test]
    fn fp8_and_fp16_rows_by_hand() {
        let mut q = vec![0u8; 3];
        quantize_rows(SparseType::Fp8, &[1.0, -0.5, 300.0], 1, 3, 1, Hfp8::default(), 240.0, &mut q).unwrap();
        assert_eq!(q, [0x38, 0xb0, 0x77]);
        let mut q = vec![0u8; 4];
        quantize_rows(SparseType::Fp16, &[1.0, -2.0], 1, 2, 1, Hfp8::default(), 240.0, &mut q).unwrap();
        assert_eq!(q, [0x00, 0x3c, 0x00, 0xc0]);
    }

    #[test]
    fn every_type_round_trips_odd_dims() {
        for ty in [SparseType::Fp32, SparseType::Fp16, SparseType::Fp8, SparseType::Int8, SparseType::Int4, SparseType::Int2] {
            for (dim, alignment) in [(3, 1), (5, 16), (17, 8)] {
                let rows = 300;
                let x: Vec<f32> = (0..rows * dim).map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 250.0).collect();
                let mut q = vec![0u8; rows * ty.row_bytes(dim, alignment)];
                quantize_rows(ty, &x, rows, dim, alignment, Hfp8::default(), 240.0, &mut q).unwrap();
                let mut back = vec![0f32; x.len()];
                dequantize_rows(ty, &q, rows, dim, alignment, Hfp8::default(), &mut back).unwrap();
                let tolerance = match ty {
                    SparseType::Fp32 => 0.0,
                    SparseType::Fp16 => 1e-3,
                    SparseType::Fp8 => 0.0625 * 2.0,
                    _ => 4.0 / ((1u32 << ty.bits()) - 1) as f32 * 0.5 + 5e-3,
                };
                for (a, b) in x.iter().zip(&back) {
                    assert!((a - b).abs() <= tolerance, "{ty:?} dim {dim}: {a} vs {b}");
                }
            }
        }
    }

    #[test]
    fn bad_codes_and_sizes_are_refused() {
        assert!(SparseType::from_int(5).is_err());
        assert_eq!(SparseType::from_int(6).unwrap(), SparseType::Fp8);
        let mut q = vec![0u8; 7];
        assert!(quantize_rows(SparseType::Int4, &[0.0; 5], 1, 5, 16, Hfp8::default(), 240.0, &mut q).is_err());
    }
}
