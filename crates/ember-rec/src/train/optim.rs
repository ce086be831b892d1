//! The optimizers FBGEMM fuses into the backward pass of its training embedding bag, applied to
//! one row at a time: `update` gets the row's weights (float32, widened from binary16 by the
//! caller where the table is binary16), the row's gradient summed over every lookup of the row
//! in the batch, and the row's optimizer state. The formulas are FBGEMM's (`EmbOptimType`):
//!
//! - `Sgd` (EXACT_SGD): `w -= lr * g`.
//! - `Adagrad` (EXACT_ADAGRAD): `m1 += g²`, `w -= lr * g / (√m1 + eps)`, elementwise.
//! - `RowwiseAdagrad` (EXACT_ROWWISE_ADAGRAD): one accumulator per row, `m1 += mean(g'²)` where
//!   `g' = g + weight_decay * w` under L2 decay (else `g`); `k = lr / (√m1 + eps)`;
//!   `w = c * w - k * g` with `c = 1 - k * weight_decay` (L2), `1 - lr * weight_decay`
//!   (DECOUPLED) or 1.
//! - `Adam`: `m1 = β1 m1 + (1 - β1) g`, `m2 = β2 m2 + (1 - β2) g²`,
//!   `w -= lr * (m1 / (1 - β1^t) / (√(m2 / (1 - β2^t)) + eps) + weight_decay * w)`; t is the
//!   step number, from 1. `PartialRowwiseAdam`: the same with one `m2` per row fed by `mean(g²)`.
//! - `Lamb`: Adam's moments; `r = m̂1 / (√m̂2 + eps) + weight_decay * w`,
//!   `w -= lr * (‖w‖ / ‖r‖) * r` (row norms). `PartialRowwiseLamb`: `m2` per row as above.
//! - `Accumulate`: not an optimizer but the plain gradient, added to the target rows (a dense
//!   gradient buffer in place of the weights).

/// How EXACT_ROWWISE_ADAGRAD decays the weights (FBGEMM's `WeightDecayMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightDecay {
    None,
    /// The decay is added to the gradient (and so to the accumulated squares).
    L2,
    /// The weights shrink by `lr * weight_decay` outside the adaptive step.
    Decoupled,
}

/// The hyperparameters of the Adam and LAMB families. `iter` is the step being taken (1 for the
/// first), which the bias corrections `1 - β^iter` use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moments {
    pub lr: f32,
    pub eps: f32,
    pub beta1: f32,
    pub beta2: f32,
    pub weight_decay: f32,
    pub iter: u64,
}

impl Moments {
    /// `1 / (1 - β1^t)` and `1 / (1 - β2^t)`.
    fn corrections(&self) -> (f32, f32) {
        let t = self.iter as f32;
        (1.0 / (1.0 - self.beta1.powf(t)), 1.0 / (1.0 - self.beta2.powf(t)))
    }
}

/// An optimizer fused into the backward pass (see the module's documentation for formulas).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Optimizer {
    Accumulate,
    Sgd { lr: f32 },
    Adagrad { lr: f32, eps: f32 },
    RowwiseAdagrad { lr: f32, eps: f32, weight_decay: f32, mode: WeightDecay },
    Adam(Moments),
    PartialRowwiseAdam(Moments),
    Lamb(Moments),
    PartialRowwiseLamb(Moments),
}

impl Optimizer {
    /// How many momentum1 and momentum2 values each row of a `dim`-wide table keeps.
    pub fn state_per_row(&self, dim: usize) -> (usize, usize) {
        match self {
            Optimizer::Accumulate | Optimizer::Sgd { .. } => (0, 0),
            Optimizer::Adagrad { .. } => (dim, 0),
            Optimizer::RowwiseAdagrad { .. } => (1, 0),
            Optimizer::Adam(_) | Optimizer::Lamb(_) => (dim, dim),
            Optimizer::PartialRowwiseAdam(_) | Optimizer::PartialRowwiseLamb(_) => (dim, 1),
        }
    }

    /// Whether `update` needs a row-wide scratch buffer (LAMB keeps `r` before it can scale it).
    pub(crate) fn needs_scratch(&self) -> bool {
        matches!(self, Optimizer::Lamb(_) | Optimizer::PartialRowwiseLamb(_))
    }

    /// Updates one row: `w` its weights, `g` its summed gradient, `m1` / `m2` its state (as
    /// `state_per_row` sizes them), `scratch` a buffer of the row's width.
    #[inline(always)]
    pub(crate) fn update(&self, w: &mut [f32], g: &[f32], m1: &mut [f32], m2: &mut [f32], scratch: &mut [f32]) {
        match *self {
            Optimizer::Accumulate => w.iter_mut().zip(g).for_each(|(w, g)| *w += g),
            Optimizer::Sgd { lr } => w.iter_mut().zip(g).for_each(|(w, g)| *w = (-lr).mul_add(*g, *w)),
            Optimizer::Adagrad { lr, eps } => {
                for ((w, &g), m) in w.iter_mut().zip(g).zip(m1.iter_mut()) {
                    *m = g.mul_add(g, *m);
                    *w -= lr * g / (m.sqrt() + eps);
                }
            }
            Optimizer::RowwiseAdagrad { lr, eps, weight_decay, mode } => rowwise_adagrad(w, g, &mut m1[0], lr, eps, weight_decay, mode),
            Optimizer::Adam(p) => {
                let (c1, c2) = p.corrections();
                for (((w, &g), m1), m2) in w.iter_mut().zip(g).zip(m1.iter_mut()).zip(m2.iter_mut()) {
                    *m1 = p.beta1 * *m1 + (1.0 - p.beta1) * g;
                    *m2 = p.beta2 * *m2 + (1.0 - p.beta2) * g * g;
                    *w -= p.lr * (*m1 * c1 / ((*m2 * c2).sqrt() + p.eps) + p.weight_decay * *w);
                }
            }
            Optimizer::PartialRowwiseAdam(p) => {
                let (c1, c2) = p.corrections();
                let v = &mut m2[0];
                *v = p.beta2 * *v + (1.0 - p.beta2) * mean_square(g);
                let denominator = (*v * c2).sqrt() + p.eps;
                for ((w, &g), m1) in w.iter_mut().zip(g).zip(m1.iter_mut()) {
                    *m1 = p.beta1 * *m1 + (1.0 - p.beta1) * g;
                    *w -= p.lr * (*m1 * c1 / denominator + p.weight_decay * *w);
                }
            }
            Optimizer::Lamb(p) => {
                let (c1, c2) = p.corrections();
                for ((((r, &w), &g), m1), m2) in scratch.iter_mut().zip(w.iter()).zip(g).zip(m1.iter_mut()).zip(m2.iter_mut()) {
                    *m1 = p.beta1 * *m1 + (1.0 - p.beta1) * g;
                    *m2 = p.beta2 * *m2 + (1.0 - p.beta2) * g * g;
                    *r = *m1 * c1 / ((*m2 * c2).sqrt() + p.eps) + p.weight_decay * w;
                }
                lamb_step(w, scratch, p.lr);
            }
            Optimizer::PartialRowwiseLamb(p) => {
                let (c1, c2) = p.corrections();
                let v = &mut m2[0];
                *v = p.beta2 * *v + (1.0 - p.beta2) * mean_square(g);
                let inverse = 1.0 / ((*v * c2).sqrt() + p.eps);
                for (((r, &w), &g), m1) in scratch.iter_mut().zip(w.iter()).zip(g).zip(m1.iter_mut()) {
                    *m1 = p.beta1 * *m1 + (1.0 - p.beta1) * g;
                    *r = *m1 * c1 * inverse + p.weight_decay * w;
                }
                lamb_step(w, scratch, p.lr);
            }
        }
    }
}

#[inline(always)]
fn mean_square(g: &[f32]) -> f32 {
    g.iter().map(|g| g * g).sum::<f32>() / g.len() as f32
}

#[inline(always)]
fn rowwise_adagrad(w: &mut [f32], g: &[f32], m: &mut f32, lr: f32, eps: f32, weight_decay: f32, mode: WeightDecay) {
    let squares = if mode == WeightDecay::L2 {
        w.iter().zip(g).map(|(&w, &g)| weight_decay.mul_add(w, g)).map(|g| g * g).sum::<f32>() / g.len() as f32
    } else {
        mean_square(g)
    };
    *m += squares;
    let multiplier = lr / (m.sqrt() + eps);
    let correction = match mode {
        WeightDecay::None => 1.0,
        WeightDecay::L2 => 1.0 - multiplier * weight_decay,
        WeightDecay::Decoupled => 1.0 - lr * weight_decay,
    };
    for (w, &g) in w.iter_mut().zip(g) {
        *w = correction * *w - multiplier * g;
    }
}

/// `w -= lr * (‖w‖ / ‖r‖) * r`. A zero `r` leaves the row as it is (FBGEMM divides by zero).
#[inline(always)]
fn lamb_step(w: &mut [f32], r: &[f32], lr: f32) {
    let norm = |x: &[f32]| x.iter().map(|x| x * x).sum::<f32>().sqrt();
    let (weight_norm, update_norm) = (norm(w), norm(r));
    if update_norm == 0.0 {
        return;
    }
    let step = lr * weight_norm / update_norm;
    for (w, &r) in w.iter_mut().zip(r) {
        *w = (-step).mul_add(r, *w);
    }
}
