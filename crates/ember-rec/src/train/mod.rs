//! FBGEMM's training table-batched embedding bag (`SplitTableBatchedEmbeddingBagsCodegen`):
//! one call pools every feature's bags, each feature reading one of many float32 or binary16
//! tables (each its own buffer, so separate per-table parameters need no copy); the backward
//! pass sums each touched row's gradient over the batch (rows deduplicated by sorting) and
//! applies an optimizer to those rows alone (`optim`), or adds the gradient to dense buffers.
//!
//! Layout, as FBGEMM's: `feature_table[f]` is feature f's table (features may share one);
//! `offsets` has F * B + 1 entries, feature-major (feature f, sample b is bag f * B + b), and
//! cuts `indices`; the pooled output is B rows of every feature's columns side by side, the
//! unpooled one (Pooling::None) a row per index. MEAN divides a bag by its length. An index
//! outside its table fails under BoundsCheck::Fatal; otherwise it reads row 0, and its gradient
//! goes to row 0, as FBGEMM's `bounds_check_indices` rewrites it (here without touching the
//! caller's indices).
//!
//! Parallel work: the forward and the per-sample-weight gradient run over (feature, block of
//! samples) tasks writing disjoint outputs; the backward sorts each table's lookups by row in
//! parallel, then updates the unique rows in parallel, each row by one task.
mod optim;

pub use optim::{Moments, Optimizer, WeightDecay};

use crate::simd::{has_avx2_fma, prefetch, PREFETCH_DISTANCE};
use crate::tbe::{BoundsCheck, Indices, Output, Pooling};
use crate::{fail, Error, Result};
use half::f16;
use half::slice::HalfFloatSliceExt;
use rayon::prelude::*;
use std::borrow::Cow;

/// A table's weights, row-major.
#[derive(Clone, Copy)]
pub enum Rows<'a> {
    F32(&'a [f32]),
    F16(&'a [f16]),
}

/// A table's weights, to be updated.
pub enum RowsMut<'a> {
    F32(&'a mut [f32]),
    F16(&'a mut [f16]),
}

/// One table to look up: `weights` holds rows of `dim` values.
#[derive(Clone, Copy)]
pub struct EmbeddingTable<'a> {
    pub weights: Rows<'a>,
    pub dim: usize,
}

/// One table to update: its weights (or dense gradient, for `Optimizer::Accumulate`) and its
/// optimizer state, `momentum1` / `momentum2` of `Optimizer::state_per_row` values per row
/// (empty where the optimizer keeps none).
pub struct TableUpdate<'a> {
    pub weights: RowsMut<'a>,
    pub dim: usize,
    pub momentum1: &'a mut [f32],
    pub momentum2: &'a mut [f32],
}

/// What one call looks up: which table each feature reads, the bags, their weights, pooling.
#[derive(Clone, Copy)]
pub struct Lookup<'a> {
    pub feature_table: &'a [usize],
    pub indices: Indices<'a>,
    pub offsets: Indices<'a>,
    pub per_sample_weights: Option<&'a [f32]>,
    pub pooling: Pooling,
}

/// Pools every bag into `out`: (B, sum of the features' dims), or (indices, dim) unpooled.
/// Returns how many indices fell outside their tables (read as row 0).
pub fn forward(tables: &[EmbeddingTable<'_>], lookup: &Lookup<'_>, bounds_check: BoundsCheck, out: Output<'_>) -> Result<u64> {
    let plan = Plan::new(&shapes(tables)?, lookup)?;
    let out_len = match &out {
        Output::F32(o) => o.len(),
        Output::F16(o) => o.len(),
    };
    plan.check_len(out_len, "the output")?;
    let report = match out {
        Output::F32(o) => {
            let out = Shared(o.as_mut_ptr());
            plan.tasks().into_par_iter().map(|task| forward_task(&plan, tables, &task, &out)).reduce(Report::default, Report::merge)
        }
        Output::F16(o) => {
            let out = Shared(o.as_mut_ptr());
            plan.tasks().into_par_iter().map(|task| forward_task(&plan, tables, &task, &out)).reduce(Report::default, Report::merge)
        }
    };
    match (bounds_check, report.first) {
        (BoundsCheck::Fatal, Some((f, b, index))) => Err(Error::Index(format!(
            "embedding_bags: index {index} of feature {f}, sample {b} is outside the table's {} rows ({} such indices)",
            plan.rows[lookup.feature_table[f]], report.bad
        ))),
        _ => Ok(report.bad),
    }
}

/// The gradient of the loss w.r.t. each per-sample weight: the dot product of the bag's output
/// gradient (divided by the bag's length under MEAN) with the index's row. `out`: one per index.
pub fn per_sample_weight_grads(tables: &[EmbeddingTable<'_>], lookup: &Lookup<'_>, grad_output: &[f32], out: &mut [f32]) -> Result<()> {
    let plan = Plan::new(&shapes(tables)?, lookup)?;
    plan.check_len(grad_output.len(), "grad_output")?;
    if out.len() != plan.indices.len() {
        return fail(format!("embedding_bags: the per-sample-weight gradient needs {} values, got {}", plan.indices.len(), out.len()));
    }
    let out = Shared(out.as_mut_ptr());
    plan.tasks().into_par_iter().for_each(|task| weight_grad_task(&plan, tables, grad_output, &task, &out));
    Ok(())
}

/// The backward pass: sums each touched row's gradient over the batch and applies `optimizer`
/// to those rows (their weights and state), leaving every other row as it is.
pub fn backward(tables: &mut [TableUpdate<'_>], lookup: &Lookup<'_>, grad_output: &[f32], optimizer: Optimizer) -> Result<()> {
    let shapes = tables.iter().map(|t| table_shape(t.dim, rows_len_mut(&t.weights))).collect::<Result<Vec<_>>>()?;
    let plan = Plan::new(&shapes, lookup)?;
    plan.check_len(grad_output.len(), "grad_output")?;
    for (t, (table, &(rows, dim))) in tables.iter().zip(&shapes).enumerate() {
        let (m1, m2) = optimizer.state_per_row(dim);
        if table.momentum1.len() != rows * m1 || table.momentum2.len() != rows * m2 {
            return fail(format!(
                "embedding_bags: table {t} ({rows} rows of dim {dim}) needs {} and {} optimizer state values, got {} and {}",
                rows * m1, rows * m2, table.momentum1.len(), table.momentum2.len()
            ));
        }
    }
    let raw: Vec<RawTable> = tables.iter_mut().map(RawTable::new).collect();
    let lookups = sorted_lookups(&plan, lookup.feature_table);
    let segments = segments(&lookups);
    let context = BackwardContext { plan: &plan, lookups: &lookups, grad_output, optimizer, bags: bag_of_each_index(&plan) };
    segments.par_chunks(SEGMENTS_PER_TASK).for_each(|chunk| update_rows(&context, &raw, chunk));
    Ok(())
}

/// Unique rows per parallel task in the backward pass.
const SEGMENTS_PER_TASK: usize = 64;

/// How many unique rows ahead the backward pass prefetches the row it will update.
const SEGMENTS_AHEAD: usize = 4;

fn rows_len(rows: &Rows<'_>) -> usize {
    match rows {
        Rows::F32(w) => w.len(),
        Rows::F16(w) => w.len(),
    }
}

fn rows_len_mut(rows: &RowsMut<'_>) -> usize {
    match rows {
        RowsMut::F32(w) => w.len(),
        RowsMut::F16(w) => w.len(),
    }
}

/// (rows, dim) of a table of `len` values.
fn table_shape(dim: usize, len: usize) -> Result<(usize, usize)> {
    if dim == 0 || len % dim != 0 {
        return fail(format!("embedding_bags: a table of {len} values cannot hold rows of dim {dim}"));
    }
    Ok((len / dim, dim))
}

fn shapes(tables: &[EmbeddingTable<'_>]) -> Result<Vec<(usize, usize)>> {
    tables.iter().map(|t| table_shape(t.dim, rows_len(&t.weights))).collect()
}

/// The checked sizes of one call: indices and offsets as int64, samples per feature, each
/// table's rows, each feature's dim and first output column, the output row width.
struct Plan<'a> {
    indices: Cow<'a, [i64]>,
    offsets: Cow<'a, [i64]>,
    weights: Option<&'a [f32]>,
    pooling: Pooling,
    feature_table: &'a [usize],
    batch: usize,
    rows: Vec<usize>,
    dims: Vec<usize>,
    columns: Vec<usize>,
    width: usize,
}

fn widen(values: Indices<'_>) -> Cow<'_, [i64]> {
    match values {
        Indices::I64(v) => Cow::Borrowed(v),
        Indices::I32(v) => Cow::Owned(v.iter().map(|&x| x as i64).collect()),
    }
}

impl<'a> Plan<'a> {
    fn new(tables: &[(usize, usize)], lookup: &Lookup<'a>) -> Result<Self> {
        if tables.is_empty() || lookup.feature_table.is_empty() {
            return fail("embedding_bags: there must be at least one table and one feature".into());
        }
        if let Some(&t) = lookup.feature_table.iter().find(|&&t| t >= tables.len()) {
            return fail(format!("embedding_bags: feature_table names table {t}, but there are {} tables", tables.len()));
        }
        let features = lookup.feature_table.len();
        let (indices, offsets) = (widen(lookup.indices), widen(lookup.offsets));
        if offsets.is_empty() || (offsets.len() - 1) % features != 0 {
            return fail(format!("embedding_bags: offsets must have F * B + 1 entries for F = {features} features, got {}", offsets.len()));
        }
        check_offsets(&offsets, indices.len())?;
        if let Some(w) = lookup.per_sample_weights {
            if w.len() != indices.len() {
                return fail(format!("embedding_bags: {} per_sample_weights for {} indices", w.len(), indices.len()));
            }
        }
        let dims: Vec<usize> = lookup.feature_table.iter().map(|&t| tables[t].1).collect();
        let (columns, width) = match lookup.pooling {
            Pooling::None => {
                if let Some(&other) = dims.iter().find(|&&d| d != dims[0]) {
                    return fail(format!("embedding_bags: pooling NONE needs one dim for every feature, got {} and {other}", dims[0]));
                }
                (vec![0; features], dims[0])
            }
            Pooling::Sum | Pooling::Mean => (dims.iter().scan(0, |at, &d| Some(std::mem::replace(at, *at + d))).collect(), dims.iter().sum()),
        };
        Ok(Plan {
            batch: (offsets.len() - 1) / features,
            indices,
            offsets,
            weights: lookup.per_sample_weights,
            pooling: lookup.pooling,
            feature_table: lookup.feature_table,
            rows: tables.iter().map(|t| t.0).collect(),
            dims,
            columns,
            width,
        })
    }

    /// Checks that an output-shaped buffer holds (B or indices) x width values.
    fn check_len(&self, len: usize, what: &str) -> Result<()> {
        let rows = if self.pooling == Pooling::None { self.indices.len() } else { self.batch };
        if len != rows * self.width {
            return fail(format!("embedding_bags: {what} must hold {rows} x {} values, got {len}", self.width));
        }
        Ok(())
    }

    fn bag(&self, bag: usize) -> std::ops::Range<usize> {
        self.offsets[bag] as usize..self.offsets[bag + 1] as usize
    }

    /// The factor of a bag's rows: 1, or 1 / length under MEAN.
    fn bag_scale(&self, bag: usize) -> f32 {
        let length = self.bag(bag).len();
        if self.pooling == Pooling::Mean && length > 0 {
            1.0 / length as f32
        } else {
            1.0
        }
    }

    /// Where the gradient (or output) of index i of bag `bag` lies.
    fn output_at(&self, bag: usize, i: usize) -> usize {
        let feature = bag / self.batch;
        match self.pooling {
            Pooling::None => i * self.width,
            _ => (bag % self.batch) * self.width + self.columns[feature],
        }
    }

    /// (feature, sample block) tasks: about eight per thread, so that uneven bags even out.
    fn tasks(&self) -> Vec<Task> {
        let features = self.feature_table.len();
        let wanted = 8 * rayon::current_num_threads();
        let block = (features * self.batch).div_ceil(wanted).clamp(1, self.batch.max(1));
        (0..features)
            .flat_map(|feature| (0..self.batch).step_by(block).map(move |start| Task { feature, samples: start..(start + block).min(self.batch) }))
            .collect()
    }
}

fn check_offsets(offsets: &[i64], indices: usize) -> Result<()> {
    let (first, last) = (offsets[0], offsets[offsets.len() - 1]);
    if first != 0 || last != indices as i64 {
        return fail(format!("embedding_bags: offsets must run from 0 to the number of indices ({indices}), got {first} to {last}"));
    }
    if let Some(i) = offsets.windows(2).position(|w| w[1] < w[0]) {
        return fail(format!("embedding_bags: offsets must not decrease, but offsets[{}] = {} < offsets[{i}] = {}", i + 1, offsets[i + 1], offsets[i]));
    }
    Ok(())
}

/// The row an index reads: itself inside the table, else row 0 (None if the table is empty).
#[inline(always)]
fn resolve(index: i64, rows: usize) -> (Option<usize>, bool) {
    match usize::try_from(index) {
        Ok(row) if row < rows => (Some(row), false),
        _ => ((rows > 0).then_some(0), true),
    }
}

/// A buffer shared by tasks that write disjoint parts of it.
struct Shared<T>(*mut T);
// SAFETY: every user writes elements no other task touches, while the buffer outlives the loop.
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}

#[derive(Clone)]
struct Task {
    feature: usize,
    samples: std::ops::Range<usize>,
}

/// Indices outside their tables: how many, and the first (feature, sample, index).
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

/// A weight element: read into float32 sums, stored back from float32.
trait Weight: Copy + Send + Sync + 'static {
    /// `acc += scale * row`.
    fn accumulate(acc: &mut [f32], row: &[Self], scale: f32);
    fn dot(row: &[Self], other: &[f32]) -> f32;
    fn store(out: &mut [Self], values: &[f32]);
    fn load(row: &[Self], into: &mut [f32]);
}

impl Weight for f32 {
    #[inline(always)]
    fn accumulate(acc: &mut [f32], row: &[f32], scale: f32) {
        acc.iter_mut().zip(row).for_each(|(a, &x)| *a = scale.mul_add(x, *a));
    }

    #[inline(always)]
    fn dot(row: &[f32], other: &[f32]) -> f32 {
        row.iter().zip(other).map(|(a, b)| a * b).sum()
    }

    #[inline(always)]
    fn store(out: &mut [f32], values: &[f32]) {
        out.copy_from_slice(values);
    }

    #[inline(always)]
    fn load(row: &[f32], into: &mut [f32]) {
        into.copy_from_slice(row);
    }
}

impl Weight for f16 {
    #[inline(always)]
    fn accumulate(acc: &mut [f32], row: &[f16], scale: f32) {
        acc.iter_mut().zip(row).for_each(|(a, x)| *a = scale.mul_add(x.to_f32(), *a));
    }

    #[inline(always)]
    fn dot(row: &[f16], other: &[f32]) -> f32 {
        row.iter().zip(other).map(|(a, b)| a.to_f32() * b).sum()
    }

    #[inline(always)]
    fn store(out: &mut [f16], values: &[f32]) {
        out.convert_from_f32_slice(values);
    }

    #[inline(always)]
    fn load(row: &[f16], into: &mut [f32]) {
        row.convert_to_f32_slice(into);
    }
}

fn forward_task<O: Weight>(plan: &Plan<'_>, tables: &[EmbeddingTable<'_>], task: &Task, out: &Shared<O>) -> Report {
    let table = tables[plan.feature_table[task.feature]];
    match table.weights {
        Rows::F32(w) => dispatch_forward(plan, w, task, out),
        Rows::F16(w) => dispatch_forward(plan, w, task, out),
    }
}

fn dispatch_forward<W: Weight, O: Weight>(plan: &Plan<'_>, weights: &[W], task: &Task, out: &Shared<O>) -> Report {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { forward_avx2(plan, weights, task, out) };
    }
    forward_body(plan, weights, task, out)
}

/// The forward task compiled for AVX2 + FMA, so that its loops vectorise 8 wide.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn forward_avx2<W: Weight, O: Weight>(plan: &Plan<'_>, weights: &[W], task: &Task, out: &Shared<O>) -> Report {
    forward_body(plan, weights, task, out)
}

#[inline(always)]
fn forward_body<W: Weight, O: Weight>(plan: &Plan<'_>, weights: &[W], task: &Task, out: &Shared<O>) -> Report {
    let dim = plan.dims[task.feature];
    let rows = plan.rows[plan.feature_table[task.feature]];
    let mut acc = vec![0f32; dim];
    let mut report = Report::default();
    let task_end = plan.offsets[task.feature * plan.batch + task.samples.end] as usize;
    for b in task.samples.clone() {
        let bag = task.feature * plan.batch + b;
        let scale = plan.bag_scale(bag);
        acc.fill(0.0);
        for i in plan.bag(bag) {
            if let Some(ahead) = (i + PREFETCH_DISTANCE < task_end).then(|| plan.indices[i + PREFETCH_DISTANCE]) {
                if let (Some(row), false) = resolve(ahead, rows) {
                    prefetch(&weights[row * dim..][..dim]);
                }
            }
            let (row, bad) = resolve(plan.indices[i], rows);
            if bad {
                report.bad += 1;
                report.first.get_or_insert((task.feature, b, plan.indices[i]));
            }
            if let Some(row) = row {
                let weight = plan.weights.map_or(1.0, |w| w[i]) * scale;
                W::accumulate(&mut acc, &weights[row * dim..][..dim], weight);
            }
            if plan.pooling == Pooling::None {
                // SAFETY: output row i belongs to this task's bags alone.
                O::store(unsafe { std::slice::from_raw_parts_mut(out.0.add(plan.output_at(bag, i)), dim) }, &acc);
                acc.fill(0.0);
            }
        }
        if plan.pooling != Pooling::None {
            // SAFETY: this task alone writes feature f's columns of sample b's row.
            O::store(unsafe { std::slice::from_raw_parts_mut(out.0.add(plan.output_at(bag, 0)), dim) }, &acc);
        }
    }
    report
}

fn weight_grad_task(plan: &Plan<'_>, tables: &[EmbeddingTable<'_>], grad: &[f32], task: &Task, out: &Shared<f32>) {
    match tables[plan.feature_table[task.feature]].weights {
        Rows::F32(w) => weight_grad_body(plan, w, grad, task, out),
        Rows::F16(w) => weight_grad_body(plan, w, grad, task, out),
    }
}

fn weight_grad_body<W: Weight>(plan: &Plan<'_>, weights: &[W], grad: &[f32], task: &Task, out: &Shared<f32>) {
    let dim = plan.dims[task.feature];
    let rows = plan.rows[plan.feature_table[task.feature]];
    for b in task.samples.clone() {
        let bag = task.feature * plan.batch + b;
        let scale = plan.bag_scale(bag);
        for i in plan.bag(bag) {
            let value = resolve(plan.indices[i], rows).0.map_or(0.0, |row| scale * W::dot(&weights[row * dim..][..dim], &grad[plan.output_at(bag, i)..][..dim]));
            // SAFETY: index i belongs to this task's bags alone.
            unsafe { *out.0.add(i) = value };
        }
    }
}

/// Each index's bag (feature * B + sample).
fn bag_of_each_index(plan: &Plan<'_>) -> Vec<u32> {
    let mut bags = vec![0u32; plan.indices.len()];
    for bag in 0..plan.offsets.len() - 1 {
        bags[plan.bag(bag)].fill(bag as u32);
    }
    bags
}

/// Per table, its lookups as (row, index position), sorted by row.
fn sorted_lookups(plan: &Plan<'_>, feature_table: &[usize]) -> Vec<Vec<(usize, usize)>> {
    (0..plan.rows.len())
        .into_par_iter()
        .map(|t| {
            let mut found = Vec::new();
            for feature in (0..feature_table.len()).filter(|&f| feature_table[f] == t) {
                let span = plan.offsets[feature * plan.batch] as usize..plan.offsets[(feature + 1) * plan.batch] as usize;
                found.extend(span.filter_map(|i| resolve(plan.indices[i], plan.rows[t]).0.map(|row| (row, i))));
            }
            found.sort_unstable();
            found
        })
        .collect()
}

/// The runs of one row in the sorted lookups: (table, start, end).
fn segments(lookups: &[Vec<(usize, usize)>]) -> Vec<(usize, usize, usize)> {
    let mut segments = Vec::new();
    for (t, found) in lookups.iter().enumerate() {
        let mut start = 0;
        for end in 1..=found.len() {
            if end == found.len() || found[end].0 != found[start].0 {
                segments.push((t, start, end));
                start = end;
            }
        }
    }
    segments
}

struct BackwardContext<'a> {
    plan: &'a Plan<'a>,
    lookups: &'a [Vec<(usize, usize)>],
    grad_output: &'a [f32],
    optimizer: Optimizer,
    bags: Vec<u32>,
}

/// A table's buffers as pointers, for tasks that each update rows no other task touches.
struct RawTable {
    weights: Weights,
    dim: usize,
    momentum1: *mut f32,
    momentum2: *mut f32,
}

enum Weights {
    F32(*mut f32),
    F16(*mut f16),
}

// SAFETY: the backward pass hands each unique row of a table to exactly one task.
unsafe impl Send for RawTable {}
unsafe impl Sync for RawTable {}

impl RawTable {
    fn new(table: &mut TableUpdate<'_>) -> Self {
        let weights = match &mut table.weights {
            RowsMut::F32(w) => Weights::F32(w.as_mut_ptr()),
            RowsMut::F16(w) => Weights::F16(w.as_mut_ptr()),
        };
        RawTable { weights, dim: table.dim, momentum1: table.momentum1.as_mut_ptr(), momentum2: table.momentum2.as_mut_ptr() }
    }

    #[inline(always)]
    fn prefetch_row(&self, row: usize) {
        // SAFETY: rows come from resolve(), inside the table, whose size backward() checked.
        unsafe {
            match self.weights {
                Weights::F32(w) => prefetch(std::slice::from_raw_parts(w.add(row * self.dim), self.dim)),
                Weights::F16(w) => prefetch(std::slice::from_raw_parts(w.add(row * self.dim), self.dim)),
            }
        }
    }
}

fn update_rows(context: &BackwardContext<'_>, tables: &[RawTable], segments: &[(usize, usize, usize)]) {
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA.
        return unsafe { update_rows_avx2(context, tables, segments) };
    }
    update_rows_body(context, tables, segments)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn update_rows_avx2(context: &BackwardContext<'_>, tables: &[RawTable], segments: &[(usize, usize, usize)]) {
    update_rows_body(context, tables, segments)
}

#[inline(always)]
fn update_rows_body(context: &BackwardContext<'_>, tables: &[RawTable], segments: &[(usize, usize, usize)]) {
    let plan = context.plan;
    let widest = tables.iter().map(|t| t.dim).max().unwrap_or(0);
    let (mut grad, mut row, mut scratch) = (vec![0f32; widest], vec![0f32; widest], vec![0f32; widest]);
    for (k, &(t, start, end)) in segments.iter().enumerate() {
        if let Some(&(t_ahead, start_ahead, _)) = segments.get(k + SEGMENTS_AHEAD) {
            tables[t_ahead].prefetch_row(context.lookups[t_ahead][start_ahead].0);
        }
        let table = &tables[t];
        let dim = table.dim;
        let grad = &mut grad[..dim];
        grad.fill(0.0);
        let found = &context.lookups[t][start..end];
        for &(_, i) in found {
            let bag = context.bags[i] as usize;
            let scale = plan.weights.map_or(1.0, |w| w[i]) * plan.bag_scale(bag);
            f32::accumulate(grad, &context.grad_output[plan.output_at(bag, i)..][..dim], scale);
        }
        let r = found[0].0;
        let (m1, m2) = context.optimizer.state_per_row(dim);
        let scratch = if context.optimizer.needs_scratch() { &mut scratch[..dim] } else { &mut scratch[..0] };
        // SAFETY: row r of table t is this segment's alone; the state slices lie inside the
        // buffers, whose sizes backward() checked.
        unsafe {
            let state1 = std::slice::from_raw_parts_mut(table.momentum1.add(r * m1), m1);
            let state2 = std::slice::from_raw_parts_mut(table.momentum2.add(r * m2), m2);
            match table.weights {
                Weights::F32(w) => context.optimizer.update(std::slice::from_raw_parts_mut(w.add(r * dim), dim), grad, state1, state2, scratch),
                Weights::F16(w) => {
                    let stored = std::slice::from_raw_parts_mut(w.add(r * dim), dim);
                    let row = &mut row[..dim];
                    f16::load(stored, row);
                    context.optimizer.update(row, grad, state1, state2, scratch);
                    f16::store(stored, row);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
