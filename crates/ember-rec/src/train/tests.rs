use super::*;

/// Two tables (6 x 3 and 4 x 5), three features (the first two read table 0), B = 2; bags of
/// varied lengths with duplicate rows and one empty bag.
struct Case {
    weights: Vec<Vec<f32>>,
    dims: Vec<usize>,
    feature_table: Vec<usize>,
    indices: Vec<i64>,
    offsets: Vec<i64>,
    per_sample: Vec<f32>,
}

fn case() -> Case {
    let dims = vec![3, 5];
    let weights = [6, 4].iter().zip(&dims).enumerate().map(|(k, (&rows, &dim))| (0..rows * dim).map(|i| (((i + 7 * k) * 37 % 23) as f32 - 11.0) / 10.0).collect()).collect();
    let indices = vec![1, 1, 4, 0, 5, 1, 2, 3, 3, 3];
    let offsets = vec![0, 3, 3, 5, 6, 8, 10];
    let per_sample = (0..indices.len()).map(|i| 0.5 + i as f32 / 4.0).collect();
    Case { weights, dims, feature_table: vec![0, 0, 1], indices, offsets, per_sample }
}

impl Case {
    fn lookup(&self, weighted: bool, pooling: Pooling) -> Lookup<'_> {
        Lookup {
            feature_table: &self.feature_table,
            indices: Indices::I64(&self.indices),
            offsets: Indices::I64(&self.offsets),
            per_sample_weights: weighted.then_some(&self.per_sample[..]),
            pooling,
        }
    }

    fn tables(&self) -> Vec<EmbeddingTable<'_>> {
        self.weights.iter().zip(&self.dims).map(|(w, &dim)| EmbeddingTable { weights: Rows::F32(w), dim }).collect()
    }

    /// Each index's (feature, sample, factor: per-sample weight times the MEAN scale).
    fn each_index(&self, weighted: bool, mean: bool) -> Vec<(usize, usize, f32)> {
        let b = (self.offsets.len() - 1) / self.feature_table.len();
        let mut out = Vec::new();
        for bag in 0..self.offsets.len() - 1 {
            let (start, end) = (self.offsets[bag] as usize, self.offsets[bag + 1] as usize);
            for i in start..end {
                let w = if weighted { self.per_sample[i] } else { 1.0 };
                out.push((bag / b, bag % b, if mean { w / (end - start) as f32 } else { w }));
            }
        }
        out
    }

    fn reference_forward(&self, weighted: bool, mean: bool) -> Vec<f32> {
        let columns = [0, 3, 6];
        let mut out = vec![0f32; 2 * 11];
        for (i, (f, b, factor)) in self.each_index(weighted, mean).into_iter().enumerate() {
            let (t, dim) = (self.feature_table[f], self.dims[self.feature_table[f]]);
            for d in 0..dim {
                out[b * 11 + columns[f] + d] += factor * self.weights[t][self.indices[i] as usize * dim + d];
            }
        }
        out
    }

    /// The dense gradient of each table for an output gradient.
    fn reference_grads(&self, grad: &[f32], weighted: bool, mean: bool) -> Vec<Vec<f32>> {
        let columns = [0, 3, 6];
        let mut grads: Vec<Vec<f32>> = self.weights.iter().map(|w| vec![0.0; w.len()]).collect();
        for (i, (f, b, factor)) in self.each_index(weighted, mean).into_iter().enumerate() {
            let (t, dim) = (self.feature_table[f], self.dims[self.feature_table[f]]);
            for d in 0..dim {
                grads[t][self.indices[i] as usize * dim + d] += factor * grad[b * 11 + columns[f] + d];
            }
        }
        grads
    }
}

fn assert_close(got: &[f32], want: &[f32], tolerance: f32) {
    assert_eq!(got.len(), want.len());
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!((a - b).abs() <= tolerance * (1.0 + b.abs()), "element {i}: {a} vs {b}");
    }
}

fn grad_output() -> Vec<f32> {
    (0..22).map(|i| ((i * 13 % 7) as f32 - 3.0) / 5.0).collect()
}

#[test]
fn pooled_forward_matches_the_reference_in_float32_and_float16() {
    let c = case();
    for (weighted, pooling, mean) in [(false, Pooling::Sum, false), (true, Pooling::Sum, false), (true, Pooling::Mean, true)] {
        let mut out = vec![f32::NAN; 22];
        let bad = forward(&c.tables(), &c.lookup(weighted, pooling), BoundsCheck::Fatal, Output::F32(&mut out)).unwrap();
        assert_eq!(bad, 0);
        assert_close(&out, &c.reference_forward(weighted, mean), 1e-6);
        let halves: Vec<Vec<f16>> = c.weights.iter().map(|w| w.iter().map(|&x| f16::from_f32(x)).collect()).collect();
        let tables: Vec<EmbeddingTable<'_>> = halves.iter().zip(&c.dims).map(|(w, &dim)| EmbeddingTable { weights: Rows::F16(w), dim }).collect();
        let mut half_out = vec![f16::ZERO; 22];
        forward(&tables, &c.lookup(weighted, pooling), BoundsCheck::Fatal, Output::F16(&mut half_out)).unwrap();
        assert_close(&half_out.iter().map(|x| x.to_f32()).collect::<Vec<_>>(), &c.reference_forward(weighted, mean), 5e-3);
    }
}

#[test]
fn unpooled_forward_gives_a_row_per_index() {
    let weights = [vec![1.0, 2.0, 3.0, 4.0], vec![5.0, 6.0, 7.0, 8.0, 9.0, 10.0]];
    let tables = [EmbeddingTable { weights: Rows::F32(&weights[0]), dim: 2 }, EmbeddingTable { weights: Rows::F32(&weights[1]), dim: 2 }];
    let (indices, offsets) = ([1i64, 0, 2], [0i64, 2, 2, 2, 3]);
    let lookup = Lookup { feature_table: &[0, 1], indices: Indices::I64(&indices), offsets: Indices::I64(&offsets), per_sample_weights: None, pooling: Pooling::None };
    let mut out = vec![0f32; 6];
    forward(&tables, &lookup, BoundsCheck::Fatal, Output::F32(&mut out)).unwrap();
    assert_eq!(out, [3.0, 4.0, 1.0, 2.0, 9.0, 10.0]);
}

#[test]
fn out_of_range_indices_fail_or_read_and_train_row_zero() {
    let mut c = case();
    c.indices[3] = 6;
    let mut out = vec![0f32; 22];
    let error = forward(&c.tables(), &c.lookup(false, Pooling::Sum), BoundsCheck::Fatal, Output::F32(&mut out)).unwrap_err();
    assert!(matches!(&error, Error::Index(m) if m.contains("index 6 of feature 1, sample 0")), "{error:?}");
    assert_eq!(forward(&c.tables(), &c.lookup(false, Pooling::Sum), BoundsCheck::Warning, Output::F32(&mut out)).unwrap(), 1);
    let mut fixed = case();
    fixed.indices[3] = 0;
    assert_close(&out, &fixed.reference_forward(false, false), 1e-6);
    let want = fixed.reference_grads(&grad_output(), false, false);
    let grads = accumulate(&c, &grad_output(), false, Pooling::Sum);
    assert_close(&grads[0], &want[0], 1e-6);
}

fn accumulate(c: &Case, grad: &[f32], weighted: bool, pooling: Pooling) -> Vec<Vec<f32>> {
    let mut grads: Vec<Vec<f32>> = c.weights.iter().map(|w| vec![0.0; w.len()]).collect();
    let mut updates: Vec<TableUpdate<'_>> =
        grads.iter_mut().zip(&c.dims).map(|(g, &dim)| TableUpdate { weights: RowsMut::F32(g), dim, momentum1: &mut [], momentum2: &mut [] }).collect();
    backward(&mut updates, &c.lookup(weighted, pooling), grad, Optimizer::Accumulate).unwrap();
    grads
}

#[test]
fn accumulated_gradients_sum_duplicate_rows() {
    let c = case();
    for (weighted, pooling, mean) in [(false, Pooling::Sum, false), (true, Pooling::Sum, false), (true, Pooling::Mean, true)] {
        let grads = accumulate(&c, &grad_output(), weighted, pooling);
        for (got, want) in grads.iter().zip(c.reference_grads(&grad_output(), weighted, mean)) {
            assert_close(got, &want, 1e-6);
        }
    }
}

#[test]
fn per_sample_weight_gradients_are_dot_products_with_the_rows() {
    let c = case();
    let mut out = vec![0f32; c.indices.len()];
    per_sample_weight_grads(&c.tables(), &c.lookup(true, Pooling::Sum), &grad_output(), &mut out).unwrap();
    let columns = [0, 3, 6];
    let grad = grad_output();
    for (i, (f, b, _)) in c.each_index(true, false).into_iter().enumerate() {
        let (t, dim) = (c.feature_table[f], c.dims[c.feature_table[f]]);
        let want: f32 = (0..dim).map(|d| c.weights[t][c.indices[i] as usize * dim + d] * grad[b * 11 + columns[f] + d]).sum();
        assert!((out[i] - want).abs() < 1e-5, "index {i}: {} vs {want}", out[i]);
    }
}

/// One row's update written out in float64, straight from FBGEMM's formulas.
fn reference_update(optimizer: Optimizer, w: &mut [f64], g: &[f64], m1: &mut [f64], m2: &mut [f64]) {
    let d = w.len() as f64;
    let moments = |p: Moments| (p.lr as f64, p.eps as f64, p.beta1 as f64, p.beta2 as f64, p.weight_decay as f64, p.iter as i32);
    match optimizer {
        Optimizer::Accumulate => unreachable!(),
        Optimizer::Sgd { lr } => (0..w.len()).for_each(|k| w[k] -= lr as f64 * g[k]),
        Optimizer::Adagrad { lr, eps } => (0..w.len()).for_each(|k| {
            m1[k] += g[k] * g[k];
            w[k] -= lr as f64 * g[k] / (m1[k].sqrt() + eps as f64);
        }),
        Optimizer::RowwiseAdagrad { lr, eps, weight_decay, mode } => {
            let (lr, eps, wd) = (lr as f64, eps as f64, weight_decay as f64);
            let decayed: Vec<f64> = (0..w.len()).map(|k| if mode == WeightDecay::L2 { g[k] + wd * w[k] } else { g[k] }).collect();
            m1[0] += decayed.iter().map(|x| x * x).sum::<f64>() / d;
            let k = lr / (m1[0].sqrt() + eps);
            let shrink = match mode {
                WeightDecay::None => 0.0,
                WeightDecay::L2 => k * wd,
                WeightDecay::Decoupled => lr * wd,
            };
            (0..w.len()).for_each(|j| w[j] = w[j] - shrink * w[j] - k * g[j]);
        }
        Optimizer::Adam(p) | Optimizer::Lamb(p) | Optimizer::PartialRowwiseAdam(p) | Optimizer::PartialRowwiseLamb(p) => {
            let (lr, eps, b1, b2, wd, t) = moments(p);
            let rowwise = matches!(optimizer, Optimizer::PartialRowwiseAdam(_) | Optimizer::PartialRowwiseLamb(_));
            if rowwise {
                m2[0] = b2 * m2[0] + (1.0 - b2) * g.iter().map(|x| x * x).sum::<f64>() / d;
            }
            let mut r = vec![0.0; w.len()];
            for k in 0..w.len() {
                m1[k] = b1 * m1[k] + (1.0 - b1) * g[k];
                let v = if rowwise { m2[0] } else {
                    m2[k] = b2 * m2[k] + (1.0 - b2) * g[k] * g[k];
                    m2[k]
                };
                r[k] = m1[k] / (1.0 - b1.powi(t)) / ((v / (1.0 - b2.powi(t))).sqrt() + eps) + wd * w[k];
            }
            let ratio = if matches!(optimizer, Optimizer::Lamb(_) | Optimizer::PartialRowwiseLamb(_)) {
                w.iter().map(|x| x * x).sum::<f64>().sqrt() / r.iter().map(|x| x * x).sum::<f64>().sqrt()
            } else {
                1.0
            };
            (0..w.len()).for_each(|k| w[k] -= lr * ratio * r[k]);
        }
    }
}

#[test]
fn every_optimizer_updates_the_touched_rows_as_fbgemm_defines_it() {
    let moments = |iter| Moments { lr: 0.1, eps: 1e-3, beta1: 0.8, beta2: 0.9, weight_decay: 0.05, iter };
    let optimizers = |iter| {
        [
            Optimizer::Sgd { lr: 0.3 },
            Optimizer::Adagrad { lr: 0.3, eps: 1e-2 },
            Optimizer::RowwiseAdagrad { lr: 0.3, eps: 1e-2, weight_decay: 0.0, mode: WeightDecay::None },
            Optimizer::RowwiseAdagrad { lr: 0.3, eps: 1e-2, weight_decay: 0.1, mode: WeightDecay::L2 },
            Optimizer::RowwiseAdagrad { lr: 0.3, eps: 1e-2, weight_decay: 0.1, mode: WeightDecay::Decoupled },
            Optimizer::Adam(moments(iter)),
            Optimizer::PartialRowwiseAdam(moments(iter)),
            Optimizer::Lamb(moments(iter)),
            Optimizer::PartialRowwiseLamb(moments(iter)),
        ]
    };
    let c = case();
    for which in 0..optimizers(1).len() {
        let mut weights = c.weights.clone();
        let mut reference: Vec<Vec<f64>> = c.weights.iter().map(|w| w.iter().map(|&x| x as f64).collect()).collect();
        let mut state: Vec<(Vec<f32>, Vec<f32>)> = (0..2)
            .map(|t| {
                let (m1, m2) = optimizers(1)[which].state_per_row(c.dims[t]);
                let rows = c.weights[t].len() / c.dims[t];
                (vec![0.0; rows * m1], vec![0.0; rows * m2])
            })
            .collect();
        let mut reference_state: Vec<(Vec<f64>, Vec<f64>)> = state.iter().map(|(a, b)| (vec![0.0; a.len()], vec![0.0; b.len()])).collect();
        for step in 1..=3u64 {
            let optimizer = optimizers(step)[which];
            let grad: Vec<f32> = grad_output().iter().map(|g| g * step as f32).collect();
            let dense = c.reference_grads(&grad, true, false);
            let mut updates: Vec<TableUpdate<'_>> = weights
                .iter_mut()
                .zip(state.iter_mut())
                .zip(&c.dims)
                .map(|((w, (m1, m2)), &dim)| TableUpdate { weights: RowsMut::F32(w), dim, momentum1: m1, momentum2: m2 })
                .collect();
            backward(&mut updates, &c.lookup(true, Pooling::Sum), &grad, optimizer).unwrap();
            for t in 0..2 {
                let dim = c.dims[t];
                let (m1_row, m2_row) = optimizer.state_per_row(dim);
                let mut touched: Vec<usize> = c.indices.iter().zip(c.each_index(true, false)).filter(|(_, (f, _, _))| c.feature_table[*f] == t).map(|(&i, _)| i as usize).collect();
                touched.sort_unstable();
                touched.dedup();
                for r in touched {
                    let g: Vec<f64> = dense[t][r * dim..][..dim].iter().map(|&x| x as f64).collect();
                    let (m1, m2) = &mut reference_state[t];
                    reference_update(optimizer, &mut reference[t][r * dim..][..dim], &g, &mut m1[r * m1_row..][..m1_row], &mut m2[r * m2_row..][..m2_row]);
                }
                let want: Vec<f32> = reference[t].iter().map(|&x| x as f32).collect();
                assert_close(&weights[t], &want, 2e-5);
                let want_m1: Vec<f32> = reference_state[t].0.iter().map(|&x| x as f32).collect();
                assert_close(&state[t].0, &want_m1, 2e-5);
            }
        }
    }
}

#[test]
fn inconsistent_arguments_are_refused() {
    let c = case();
    let mut out = vec![0f32; 22];
    let value_error = |r: Result<u64>| matches!(r, Err(Error::Value(_)));
    let mut lookup = c.lookup(false, Pooling::Sum);
    let short = &c.offsets[..6];
    lookup.offsets = Indices::I64(short);
    assert!(value_error(forward(&c.tables(), &lookup, BoundsCheck::Fatal, Output::F32(&mut out))));
    assert!(value_error(forward(&c.tables(), &c.lookup(false, Pooling::None), BoundsCheck::Fatal, Output::F32(&mut out))));
    assert!(value_error(forward(&c.tables(), &c.lookup(false, Pooling::Sum), BoundsCheck::Fatal, Output::F32(&mut out[..21]))));
    let mut lookup = c.lookup(false, Pooling::Sum);
    lookup.feature_table = &[0, 0, 2];
    assert!(value_error(forward(&c.tables(), &lookup, BoundsCheck::Fatal, Output::F32(&mut out))));
    // Adagrad without its state changes nothing.
    let mut weights = c.weights.clone();
    let mut updates: Vec<TableUpdate<'_>> = weights.iter_mut().zip(&c.dims).map(|(w, &dim)| TableUpdate { weights: RowsMut::F32(w), dim, momentum1: &mut [], momentum2: &mut [] }).collect();
    let result = backward(&mut updates, &c.lookup(false, Pooling::Sum), &grad_output(), Optimizer::Adagrad { lr: 0.1, eps: 1e-8 });
    assert!(matches!(result, Err(Error::Value(_))));
    assert_eq!(weights, c.weights);
}
