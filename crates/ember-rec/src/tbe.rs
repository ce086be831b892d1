//! FBGEMM's inference table-batched embedding bag (`int_nbit_split_embedding_codegen_lookup_
//! function`): one call looks up every feature's bags, each feature in its own table of
//! quantized rows (`SparseType`), dequantizing each row as it is pooled.
//!
//! Layout, as FBGEMM's: `tables[t]` says where feature t's rows lie in one weights buffer
//! (FBGEMM's `weights_offsets`, `weights_tys`, `rows_per_table`; features may share a table);
//! `offsets` has T * B + 1 entries, table-major (feature t, sample b is bag t * B + b) and
//! indexes `indices`; the pooled output is B rows of all features' dims side by side (FBGEMM's
//! `D_offsets`), the unpooled one a row per index. Index -1 is a pruned row and adds nothing
//! (MEAN still counts it, as FBGEMM does).
//!
//! Work is split into (feature, block of samples) tasks; each writes its own columns of its
//! own output rows. The arithmetic is FBGEMM's: an integer row adds
//! `fma(scale * w, q, acc + bias * w)`, a float row `fma(w, x, acc)`, MEAN multiplies by 1 / L.
use crate::hfp8::Hfp8;
use crate::simd::{f16_at, has_avx2_fma, prefetch, PREFETCH_DISTANCE};
use crate::sparse_type::{dequantize_row, SparseType, SCALE_BIAS_BYTES};
use crate::{fail, Error, Result};
use half::f16;
use half::slice::HalfFloatSliceExt;
use rayon::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pooling {
    Sum,
    Mean,
    /// No pooling: one output row per index (every table must have the same dim).
    None,
}

/// What an index outside its table does (FBGEMM's `BoundsCheckMode`, less NONE: an index is
/// always checked, since reading outside a table is not an option here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoundsCheck {
    /// The call fails (Python: IndexError).
    Fatal,
    /// The index reads row 0, and is counted (the count is returned).
    Warning,
    /// The index reads row 0, and is counted all the same.
    Ignore,
}

/// Where feature t's table lies in the weights buffer: `rows` rows of `dim` values of type
/// `ty` from byte `offset`, each row padded to the batch's row alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Table {
    pub ty: SparseType,
    pub rows: usize,
    pub dim: usize,
    pub offset: usize,
}

/// The tables of one embedding bag: every feature's table in one buffer.
#[derive(Clone, Copy)]
pub struct TableBatch<'a> {
    pub weights: &'a [u8],
    /// One per feature.
    pub tables: &'a [Table],
    pub row_alignment: usize,
    /// The format of FP8 rows.
    pub fp8: Hfp8,
}

/// Indices or offsets, as int32 or int64.
#[derive(Clone, Copy)]
pub enum Indices<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
}

impl Indices<'_> {
    pub fn len(&self) -> usize {
        match self {
            Indices::I32(v) => v.len(),
            Indices::I64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn get(&self, i: usize) -> i64 {
        match self {
            Indices::I32(v) => v[i] as i64,
            Indices::I64(v) => v[i],
        }
    }
}

/// The output: float32 or binary16, B x total_D (pooled) or indices x D (unpooled), row-major.
pub enum Output<'a> {
    F32(&'a mut [f32]),
    F16(&'a mut [f16]),
}

impl Output<'_> {
    fn len(&self) -> usize {
        match self {
            Output::F32(v) => v.len(),
            Output::F16(v) => v.len(),
        }
    }
}

/// Looks up every bag: `offsets` (T * B + 1, starting at 0 and ending at the number of
/// indices) cut `indices` into bags, feature-major; `per_sample_weights` (one per index)
/// scales each row. Returns how many indices fell outside their tables (Warning, Ignore).
#[allow(clippy::too_many_arguments)]
pub fn embedding_bags(batch: &TableBatch<'_>, indices: Indices<'_>, offsets: Indices<'_>, per_sample_weights: Option<&[f32]>, pooling: Pooling, bounds_check: BoundsCheck, out: Output<'_>) -> Result<u64> {
    let shape = check(batch, indices, offsets, per_sample_weights, pooling, out.len())?;
    match (indices, offsets) {
        (Indices::I32(i), Indices::I32(o)) => run(batch, i, o, per_sample_weights, pooling, bounds_check, &shape, out),
        (Indices::I64(i), Indices::I64(o)) => run(batch, i, o, per_sample_weights, pooling, bounds_check, &shape, out),
        (Indices::I32(i), Indices::I64(o)) => run(batch, i, o, per_sample_weights, pooling, bounds_check, &shape, out),
        (Indices::I64(i), Indices::I32(o)) => run(batch, i, o, per_sample_weights, pooling, bounds_check, &shape, out),
    }
}

/// The sizes the checks derived: samples per feature, output row width, each feature's first
/// output column (pooled).
struct Shape {
    batch: usize,
    width: usize,
    columns: Vec<usize>,
}

fn check(batch: &TableBatch<'_>, indices: Indices<'_>, offsets: Indices<'_>, weights: Option<&[f32]>, pooling: Pooling, out_len: usize) -> Result<Shape> {
    let tables = batch.tables;
    if tables.is_empty() {
        return fail("embedding_bags: there must be at least one table".into());
    }
    if batch.row_alignment == 0 {
        return fail("embedding_bags: row_alignment must be positive".into());
    }
    for (t, table) in tables.iter().enumerate() {
        let bytes = table.rows.checked_mul(table.ty.row_bytes(table.dim, batch.row_alignment));
        let end = bytes.and_then(|b| b.checked_add(table.offset));
        if end.is_none_or(|end| end > batch.weights.len()) {
            return fail(format!(
                "embedding_bags: table {t} ({} rows of dim {} as {:?} from byte {}) runs past the {} bytes of weights",
                table.rows,
                table.dim,
                table.ty,
                table.offset,
                batch.weights.len()
            ));
        }
    }
    let t = tables.len();
    if offsets.is_empty() || (offsets.len() - 1) % t != 0 {
        return fail(format!("embedding_bags: offsets must have T * B + 1 entries for T = {t} tables, got {}", offsets.len()));
    }
    let b = (offsets.len() - 1) / t;
    check_offsets(offsets, indices.len())?;
    if let Some(w) = weights {
        if w.len() != indices.len() {
            return fail(format!("embedding_bags: {} per_sample_weights for {} indices", w.len(), indices.len()));
        }
    }
    let (rows, width, columns) = match pooling {
        Pooling::None => {
            let dim = tables[0].dim;
            if let Some(other) = tables.iter().find(|table| table.dim != dim) {
                return fail(format!("embedding_bags: pooling NONE needs one dim for every table, got {dim} and {}", other.dim));
            }
            (indices.len(), dim, vec![0; t])
        }
        Pooling::Sum | Pooling::Mean => {
            let columns: Vec<usize> = tables.iter().scan(0, |at, table| Some(std::mem::replace(at, *at + table.dim))).collect();
            (b, tables.iter().map(|table| table.dim).sum(), columns)
        }
    };
    if out_len != rows * width {
        return fail(format!("embedding_bags: the output must hold {rows} x {width} values, got {out_len}"));
    }
    Ok(Shape { batch: b, width, columns })
}

fn check_offsets(offsets: Indices<'_>, indices: usize) -> Result<()> {
    let first = offsets.get(0);
    let last = offsets.get(offsets.len() - 1);
    if first != 0 || last != indices as i64 {
        return fail(format!("embedding_bags: offsets must run from 0 to the number of indices ({indices}), got {first} to {last}"));
    }
    let decreasing = match offsets {
        Indices::I32(o) => o.windows(2).position(|w| w[1] < w[0]),
        Indices::I64(o) => o.windows(2).position(|w| w[1] < w[0]),
    };
    if let Some(i) = decreasing {
        return fail(format!("embedding_bags: offsets must not decrease, but offsets[{}] = {} < offsets[{i}] = {}", i + 1, offsets.get(i + 1), offsets.get(i)));
    }
    Ok(())
}

trait IndexValue: Copy + Send + Sync {
    fn value(self) -> i64;
}

impl IndexValue for i32 {
    #[inline(always)]
    fn value(self) -> i64 {
        self as i64
    }
}

impl IndexValue for i64 {
    #[inline(always)]
    fn value(self) -> i64 {
        self
    }
}

/// The output buffer, shared by tasks that write disjoint parts of it.
struct SharedOut<T>(*mut T);
// SAFETY: tasks write disjoint elements (their own columns of their own rows), and the buffer
// outlives the parallel loop.
unsafe impl<T> Send for SharedOut<T> {}
unsafe impl<T> Sync for SharedOut<T> {}

/// Everything a task reads.
struct Context<'a, I, O> {
    batch: &'a TableBatch<'a>,
    indices: &'a [I],
    offsets: &'a [O],
    weights: Option<&'a [f32]>,
    pooling: Pooling,
    shape: &'a Shape,
}

/// Feature `table`'s bags for samples `samples`.
#[derive(Clone)]
struct Task {
    table: usize,
    samples: std::ops::Range<usize>,
}

/// What a task saw of indices outside their tables: how many, and the first (feature, sample,
/// index).
#[derive(Default)]
struct Report {
    bad: u64,
    first: Option<(usize, usize, i64)>,
}

impl Report {
    fn merge(mut self, other: Report) -> Report {
        self.bad += other.bad;
        self.first = self.first.or(other.first);
        self
    }
}

#[allow(clippy::too_many_arguments)]
fn run<I: IndexValue, O: IndexValue>(batch: &TableBatch<'_>, indices: &[I], offsets: &[O], weights: Option<&[f32]>, pooling: Pooling, bounds_check: BoundsCheck, shape: &Shape, out: Output<'_>) -> Result<u64> {
    let context = Context { batch, indices, offsets, weights, pooling, shape };
    let tasks = tasks(batch.tables.len(), shape.batch);
    let report = match out {
        Output::F32(out) => {
            let out = SharedOut(out.as_mut_ptr());
            tasks.into_par_iter().map(|task| run_task(&context, &task, &out)).reduce(Report::default, Report::merge)
        }
        Output::F16(out) => {
            let out = SharedOut(out.as_mut_ptr());
            tasks.into_par_iter().map(|task| run_task(&context, &task, &out)).reduce(Report::default, Report::merge)
        }
    };
    match (bounds_check, report.first) {
        (BoundsCheck::Fatal, Some((t, b, index))) => Err(Error::Index(format!(
            "embedding_bags: index {index} of feature {t}, sample {b} is outside the table's {} rows ({} such indices)",
            batch.tables[t].rows, report.bad
        ))),
        _ => Ok(report.bad),
    }
}

/// (feature, sample block) tasks: about eight per thread, so that uneven bags even out.
fn tasks(tables: usize, samples: usize) -> Vec<Task> {
    let wanted = 8 * rayon::current_num_threads();
    let block = (tables * samples).div_ceil(wanted).clamp(1, samples.max(1));
    (0..tables)
        .flat_map(|table| (0..samples).step_by(block).map(move |start| Task { table, samples: start..(start + block).min(samples) }))
        .collect()
}

/// How an output element is stored.
trait Store: Copy + Send + Sync + 'static {
    fn store(out: &mut [Self], values: &[f32]);
}

impl Store for f32 {
    #[inline(always)]
    fn store(out: &mut [f32], values: &[f32]) {
        out.copy_from_slice(values);
    }
}

impl Store for f16 {
    #[inline(always)]
    fn store(out: &mut [f16], values: &[f32]) {
        out.convert_from_f32_slice(values);
    }
}

fn run_task<I: IndexValue, O: IndexValue, T: Store>(context: &Context<'_, I, O>, task: &Task, out: &SharedOut<T>) -> Report {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { run_task_avx2(context, task, out) };
    }
    task_body(context, task, out)
}

/// The same task compiled for AVX2 + FMA: the loops below vectorise 8 wide, and the fused
/// multiply-adds are single instructions instead of library calls.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_task_avx2<I: IndexValue, O: IndexValue, T: Store>(context: &Context<'_, I, O>, task: &Task, out: &SharedOut<T>) -> Report {
    task_body(context, task, out)
}

#[inline(always)]
fn task_body<I: IndexValue, O: IndexValue, T: Store>(context: &Context<'_, I, O>, task: &Task, out: &SharedOut<T>) -> Report {
    let batch = context.batch;
    let table = batch.tables[task.table];
    let row_bytes = table.ty.row_bytes(table.dim, batch.row_alignment);
    let rows = &batch.weights[table.offset..table.offset + table.rows * row_bytes];
    let dim = table.dim;
    let mut report = Report::default();
    let mut acc = vec![0f32; dim];
    let mut scratch = Scratch::new(dim);
    let width = context.shape.width;
    let unpadded = table.ty.unpadded_row_bytes(dim);
    let first_bag = task.table * context.shape.batch;
    let task_end = context.offsets[first_bag + task.samples.end].value() as usize;
    for b in task.samples.clone() {
        let bag = task.table * context.shape.batch + b;
        let (start, end) = (context.offsets[bag].value() as usize, context.offsets[bag + 1].value() as usize);
        if context.pooling != Pooling::None {
            acc.fill(0.0);
        }
        for i in start..end {
            // Rows are scattered across tables far larger than the caches: ask for the row
            // PREFETCH_DISTANCE lookups ahead now, so that it has arrived when its turn comes.
            if let Some(ahead) = context.indices.get(i + PREFETCH_DISTANCE).filter(|_| i + PREFETCH_DISTANCE < task_end) {
                let ahead = ahead.value();
                if (0..table.rows as i64).contains(&ahead) {
                    prefetch(&rows[ahead as usize * row_bytes..][..unpadded]);
                }
            }
            let index = context.indices[i].value();
            let row = match usize::try_from(index) {
                Ok(row) if row < table.rows => Some(row),
                _ if index == -1 => None,
                _ => {
                    report.bad += 1;
                    report.first.get_or_insert((task.table, b, index));
                    // FBGEMM reads row 0 in its place (none if the table is empty).
                    (table.rows > 0).then_some(0)
                }
            };
            if context.pooling == Pooling::None {
                acc.fill(0.0);
            }
            if let Some(row) = row {
                let weight = context.weights.map_or(1.0, |w| w[i]);
                accumulate(table.ty, &rows[row * row_bytes..][..unpadded], weight, batch.fp8, &mut acc, &mut scratch);
            }
            if context.pooling == Pooling::None {
                // SAFETY: row i of the unpooled output belongs to this task's bags alone.
                let dst = unsafe { std::slice::from_raw_parts_mut(out.0.add(i * width), dim) };
                T::store(dst, &acc);
            }
        }
        if context.pooling != Pooling::None {
            if context.pooling == Pooling::Mean && end > start {
                let scale = 1.0 / (end - start) as f32;
                acc.iter_mut().for_each(|x| *x *= scale);
            }
            // SAFETY: this task alone writes feature t's columns of sample b's row.
            let dst = unsafe { std::slice::from_raw_parts_mut(out.0.add(b * width + context.shape.columns[task.table]), dim) };
            T::store(dst, &acc);
        }
    }
    report
}


/// Per-task buffers for unpacking a row.
struct Scratch {
    levels: Vec<u8>,
    values: Vec<f32>,
}

impl Scratch {
    fn new(dim: usize) -> Self {
        // Whole bytes of 2-bit values: up to 3 more than dim.
        Scratch { levels: vec![0; dim + 4], values: vec![0.0; dim] }
    }
}

/// `acc += weight * row`, the row dequantized on the way.
#[inline(always)]
fn accumulate(ty: SparseType, row: &[u8], weight: f32, fp8: Hfp8, acc: &mut [f32], scratch: &mut Scratch) {
    match ty {
        SparseType::Int8 | SparseType::Int4 | SparseType::Int2 => {
            let scale = f16_at(row, 0) * weight;
            let bias = f16_at(row, 2) * weight;
            let levels = unpack(ty, &row[SCALE_BIAS_BYTES..], acc.len(), &mut scratch.levels);
            for (a, &q) in acc.iter_mut().zip(levels) {
                *a = scale.mul_add(q as f32, *a + bias);
            }
        }
        SparseType::Fp32 | SparseType::Fp16 | SparseType::Fp8 => {
            dequantize_row(ty, row, fp8, &mut scratch.values);
            for (a, &x) in acc.iter_mut().zip(&scratch.values) {
                *a = weight.mul_add(x, *a);
            }
        }
    }
}

/// An integer row's values (one byte each) from its packed data, low bits first.
#[inline(always)]
fn unpack<'s>(ty: SparseType, data: &'s [u8], dim: usize, levels: &'s mut [u8]) -> &'s [u8] {
    match ty {
        SparseType::Int8 => return &data[..dim],
        SparseType::Int4 => {
            for (pair, &byte) in levels.chunks_exact_mut(2).zip(data) {
                pair[0] = byte & 0x0f;
                pair[1] = byte >> 4;
            }
        }
        _ => {
            for (quad, &byte) in levels.chunks_exact_mut(4).zip(data) {
                quad[0] = byte & 3;
                quad[1] = (byte >> 2) & 3;
                quad[2] = (byte >> 4) & 3;
                quad[3] = byte >> 6;
            }
        }
    }
    &levels[..dim]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sparse_type::quantize_rows;

    /// Tables built from float rows, with their bytes and the floats their rows decode to.
    struct Built {
        weights: Vec<u8>,
        tables: Vec<Table>,
        decoded: Vec<Vec<f32>>,
    }

    fn build(specs: &[(SparseType, usize, usize)], alignment: usize) -> Built {
        let (mut weights, mut tables, mut decoded) = (Vec::new(), Vec::new(), Vec::new());
        for (k, &(ty, rows, dim)) in specs.iter().enumerate() {
            let x: Vec<f32> = (0..rows * dim).map(|i| (((i + 13 * k) * 7919 % 1009) as f32 - 504.0) / 300.0).collect();
            let mut q = vec![0u8; rows * ty.row_bytes(dim, alignment)];
            quantize_rows(ty, &x, rows, dim, alignment, Hfp8::default(), 240.0, &mut q).unwrap();
            let mut back = vec![0f32; rows * dim];
            crate::dequantize_rows(ty, &q, rows, dim, alignment, Hfp8::default(), &mut back).unwrap();
            // Tables start on 128-byte lines, as FBGEMM's.
            weights.resize(weights.len().next_multiple_of(128), 0);
            tables.push(Table { ty, rows, dim, offset: weights.len() });
            weights.extend_from_slice(&q);
            decoded.push(back);
        }
        Built { weights, tables, decoded }
    }

    /// The pooled output computed row by row from the decoded floats.
    fn reference(built: &Built, indices: &[i64], offsets: &[i64], weights: Option<&[f32]>, mean: bool) -> Vec<f32> {
        let t = built.tables.len();
        let b = (offsets.len() - 1) / t;
        let width: usize = built.tables.iter().map(|x| x.dim).sum();
        let mut out = vec![0f32; b * width];
        let mut column = 0;
        for (k, table) in built.tables.iter().enumerate() {
            for s in 0..b {
                let (start, end) = (offsets[k * b + s] as usize, offsets[k * b + s + 1] as usize);
                for i in start..end {
                    if indices[i] < 0 {
                        continue;
                    }
                    let row = &built.decoded[k][indices[i] as usize * table.dim..][..table.dim];
                    for d in 0..table.dim {
                        out[s * width + column + d] += weights.map_or(1.0, |w| w[i]) * row[d];
                    }
                }
                if mean && end > start {
                    for d in 0..table.dim {
                        out[s * width + column + d] /= (end - start) as f32;
                    }
                }
            }
            column += table.dim;
        }
        out
    }

    const SPECS: [(SparseType, usize, usize); 6] = [
        (SparseType::Int4, 10, 5),
        (SparseType::Fp32, 6, 3),
        (SparseType::Int8, 7, 17),
        (SparseType::Fp8, 9, 4),
        (SparseType::Int2, 5, 6),
        (SparseType::Fp16, 4, 2),
    ];

    fn bags() -> (Vec<i64>, Vec<i64>) {
        // B = 2 samples per table; table-major bags of varied lengths, one empty, pruned -1s.
        let lengths: [usize; 12] = [2, 1, 0, 3, 2, 2, 1, 1, 4, 0, 2, 3];
        let mut offsets = vec![0i64];
        let mut indices = Vec::new();
        for (bag, &l) in lengths.iter().enumerate() {
            let rows = SPECS[bag / 2].1;
            for j in 0..l {
                indices.push(if (bag + j) % 5 == 4 { -1 } else { ((bag * 3 + j * 7) % rows) as i64 });
            }
            offsets.push(indices.len() as i64);
        }
        (indices, offsets)
    }

    fn lookup(built: &Built, alignment: usize, indices: &[i64], offsets: &[i64], weights: Option<&[f32]>, pooling: Pooling, check: BoundsCheck) -> Result<(Vec<f32>, u64)> {
        let batch = TableBatch { weights: &built.weights, tables: &built.tables, row_alignment: alignment, fp8: Hfp8::default() };
        let rows = if pooling == Pooling::None { indices.len() } else { (offsets.len() - 1) / built.tables.len() };
        let width = if pooling == Pooling::None { built.tables[0].dim } else { built.tables.iter().map(|t| t.dim).sum() };
        let mut out = vec![f32::NAN; rows * width];
        let warned = embedding_bags(&batch, Indices::I64(indices), Indices::I64(offsets), weights, pooling, check, Output::F32(&mut out))?;
        Ok((out, warned))
    }

    fn assert_close(got: &[f32], want: &[f32]) {
        assert_eq!(got.len(), want.len());
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "element {i}: {a} vs {b}");
        }
    }

    #[test]
    fn sum_and_mean_over_every_type_match_the_row_by_row_reference() {
        for alignment in [1, 16] {
            let built = build(&SPECS, alignment);
            let (indices, offsets) = bags();
            let weights: Vec<f32> = (0..indices.len()).map(|i| 0.5 + i as f32 / 10.0).collect();
            for (mean, pooling) in [(false, Pooling::Sum), (true, Pooling::Mean)] {
                let (out, warned) = lookup(&built, alignment, &indices, &offsets, None, pooling, BoundsCheck::Fatal).unwrap();
                assert_eq!(warned, 0);
                assert_close(&out, &reference(&built, &indices, &offsets, None, mean));
                let (out, _) = lookup(&built, alignment, &indices, &offsets, Some(&weights), pooling, BoundsCheck::Fatal).unwrap();
                assert_close(&out, &reference(&built, &indices, &offsets, Some(&weights), mean));
            }
        }
    }

    #[test]
    fn int32_indices_and_float16_output() {
        let built = build(&SPECS, 1);
        let (indices, offsets) = bags();
        let (i32s, o32s): (Vec<i32>, Vec<i32>) = (indices.iter().map(|&i| i as i32).collect(), offsets.iter().map(|&o| o as i32).collect());
        let batch = TableBatch { weights: &built.weights, tables: &built.tables, row_alignment: 1, fp8: Hfp8::default() };
        let width: usize = SPECS.iter().map(|s| s.2).sum();
        let mut out = vec![f16::ZERO; 2 * width];
        embedding_bags(&batch, Indices::I32(&i32s), Indices::I32(&o32s), None, Pooling::Sum, BoundsCheck::Fatal, Output::F16(&mut out)).unwrap();
        let want = reference(&built, &indices, &offsets, None, false);
        for (a, b) in out.iter().zip(&want) {
            assert!((a.to_f32() - b).abs() <= 1e-3 * (1.0 + b.abs()), "{a} vs {b}");
        }
    }

    #[test]
    fn unpooled_rows_one_per_index_with_pruned_rows_zero() {
        let specs = [(SparseType::Int4, 10, 6), (SparseType::Fp8, 5, 6)];
        let built = build(&specs, 1);
        let indices = [3, -1, 9, 4, 0];
        let offsets = [0, 2, 3, 3, 5];
        let (out, _) = lookup(&built, 1, &indices, &offsets, None, Pooling::None, BoundsCheck::Fatal).unwrap();
        let tables = [0, 0, 0, 1, 1];
        for (i, (&index, &t)) in indices.iter().zip(&tables).enumerate() {
            let want = if index < 0 { vec![0.0; 6] } else { built.decoded[t][index as usize * 6..][..6].to_vec() };
            assert_eq!(&out[i * 6..][..6], &want[..], "index {i}");
        }
    }

    #[test]
    fn out_of_range_indices_fail_or_read_row_zero() {
        let built = build(&SPECS, 1);
        let (mut indices, offsets) = bags();
        let error = lookup(&built, 1, &{
            let mut bad = indices.clone();
            bad[0] = 10;
            bad
        }, &offsets, None, Pooling::Sum, BoundsCheck::Fatal).unwrap_err();
        assert!(matches!(&error, Error::Index(m) if m.contains("index 10 of feature 0, sample 0")), "{error:?}");
        let original = indices.clone();
        indices[0] = 10;
        indices[3] = -7;
        for check in [BoundsCheck::Warning, BoundsCheck::Ignore] {
            let (out, warned) = lookup(&built, 1, &indices, &offsets, None, Pooling::Sum, check).unwrap();
            assert_eq!(warned, 2);
            let mut fixed = original.clone();
            fixed[0] = 0;
            fixed[3] = 0;
            assert_close(&out, &reference(&built, &fixed, &offsets, None, false));
        }
    }

    #[test]
    fn many_samples_split_into_blocks() {
        let built = build(&[(SparseType::Int4, 50, 16), (SparseType::Int8, 40, 8)], 1);
        let b = 300;
        let offsets: Vec<i64> = (0..=2 * b as i64).map(|i| i * 3).collect();
        let indices: Vec<i64> = (0..offsets[2 * b]).map(|i| if i < 3 * b as i64 { i * 11 % 50 } else { i * 7 % 40 }).collect();
        let (out, _) = lookup(&built, 1, &indices, &offsets, None, Pooling::Mean, BoundsCheck::Fatal).unwrap();
        assert_close(&out, &reference(&built, &indices, &offsets, None, true));
    }

    #[test]
    fn inconsistent_arguments_are_refused() {
        let built = build(&SPECS, 1);
        let (indices, offsets) = bags();
        let value_error = |r: Result<(Vec<f32>, u64)>| matches!(r, Err(Error::Value(_)));
        let mut decreasing = offsets.clone();
        decreasing[2] = 0;
        assert!(value_error(lookup(&built, 1, &indices, &decreasing, None, Pooling::Sum, BoundsCheck::Ignore)));
        assert!(value_error(lookup(&built, 1, &indices, &offsets[..offsets.len() - 1], None, Pooling::Sum, BoundsCheck::Ignore)));
        assert!(value_error(lookup(&built, 1, &indices[1..], &offsets, None, Pooling::Sum, BoundsCheck::Ignore)));
        assert!(value_error(lookup(&built, 1, &indices, &offsets, Some(&[1.0]), Pooling::Sum, BoundsCheck::Ignore)));
        assert!(value_error(lookup(&built, 1, &indices, &offsets, None, Pooling::None, BoundsCheck::Ignore)));
        // Alignment 16 makes the rows longer than the buffer holds.
        assert!(value_error(lookup(&built, 16, &indices, &offsets, None, Pooling::Sum, BoundsCheck::Ignore)));
    }
}
