//! Random numbers from a counter-based generator (Philox4x32-10): element `i` of a draw depends
//! only on (seed, offset + i), so results are identical for every thread count and every run.
use crate::bail;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// A random stream (PyTorch's `torch.Generator`): a seed and how much of its stream was used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generator {
    seed: u64,
    /// Counter blocks already consumed.
    offset: u64,
}

/// Philox4x32 with 10 rounds: four 32-bit outputs per (key, counter).
fn philox(key: u64, counter: u64) -> [u32; 4] {
    const M0: u64 = 0xD251_1F53;
    const M1: u64 = 0xCD9E_8D57;
    const W0: u32 = 0x9E37_79B9;
    const W1: u32 = 0xBB67_AE85;
    let mut c = [counter as u32, (counter >> 32) as u32, 0, 0];
    let mut k = [key as u32, (key >> 32) as u32];
    for _ in 0..10 {
        let p0 = M0 * c[0] as u64;
        let p1 = M1 * c[2] as u64;
        c = [(p1 >> 32) as u32 ^ c[1] ^ k[0], p1 as u32, (p0 >> 32) as u32 ^ c[3] ^ k[1], p0 as u32];
        k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
    }
    c
}

impl Generator {
    /// A stream at its start for `seed`.
    pub fn new(seed: u64) -> Self {
        Generator { seed, offset: 0 }
    }

    /// The seed (`Generator.initial_seed()`).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Restarts the stream from `seed` (`Generator.manual_seed`).
    pub fn manual_seed(&mut self, seed: u64) {
        *self = Generator::new(seed);
    }

    /// (seed, offset): enough to restore the stream exactly.
    pub fn state(&self) -> (u64, u64) {
        (self.seed, self.offset)
    }

    /// Restores a `state()` (`Generator.set_state`).
    pub fn set_state(&mut self, state: (u64, u64)) {
        (self.seed, self.offset) = state;
    }

    /// Reserves `n` 64-bit draws: the (key, first counter) that `bits` numbers them from.
    fn reserve(&mut self, n: usize) -> (u64, u64) {
        let at = (self.seed, self.offset);
        self.offset += (n as u64).div_ceil(2);
        at
    }

    /// Reserves `n` 64-bit draws and returns a pure function from index to draw.
    fn stream(&mut self, n: usize) -> impl Fn(usize) -> u64 + Sync + use<> {
        let (key, base) = self.reserve(n);
        move |i| bits(key, base, i)
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.stream(2)(0)
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        unit(self.next_u64())
    }
}

/// Draw `i` of the stream reserved at (`key`, `base`): two 64-bit draws per Philox block.
pub fn bits(key: u64, base: u64, i: usize) -> u64 {
    let r = philox(key, base + (i / 2) as u64);
    let (hi, lo) = if i % 2 == 0 { (r[0], r[1]) } else { (r[2], r[3]) };
    ((hi as u64) << 32) | lo as u64
}

/// A draw as a float uniform in [0, 1) with 53 random bits.
pub fn unit(bits: u64) -> f64 {
    (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// What `Backend::random` draws: element `i` of the output is a pure function of (key, base,
/// i), given by `Distribution::sample`, so every backend draws the same numbers for a seed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Distribution {
    /// Float64 on [low, high).
    Uniform {
        /// Inclusive lower bound.
        low: f64,
        /// Exclusive upper bound.
        high: f64,
    },
    /// Float64 by Box–Muller, one pair of draws per element.
    Normal {
        /// The mean.
        mean: f64,
        /// The standard deviation.
        std: f64,
    },
    /// Int64 on [low, high).
    Integers {
        /// Inclusive lower bound.
        low: i64,
        /// Exclusive upper bound.
        high: i64,
    },
}

impl Distribution {
    /// 64-bit draws one element consumes.
    pub fn draws(self) -> usize {
        if matches!(self, Distribution::Normal { .. }) { 2 } else { 1 }
    }

    /// The output's dtype.
    pub fn dtype(self) -> DType {
        if matches!(self, Distribution::Integers { .. }) { DType::I64 } else { DType::F64 }
    }

    /// Element `i` of a draw at (`key`, `base`), as the bits of the output's dtype.
    #[inline]
    pub fn sample(self, key: u64, base: u64, i: usize) -> u64 {
        match self {
            Distribution::Uniform { low, high } => (low + (high - low) * unit(bits(key, base, i))).to_bits(),
            Distribution::Normal { mean, std } => {
                let u1 = 1.0 - unit(bits(key, base, 2 * i));
                let u2 = unit(bits(key, base, 2 * i + 1));
                (mean + std * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()).to_bits()
            }
            Distribution::Integers { low, high } => {
                let range = (high as i128 - low as i128) as u128;
                (low as i128 + (bits(key, base, i) as u128 % range) as i128) as i64 as u64
            }
        }
    }
}

/// `shape` drawn from `dist` on `device`, then cast to `dtype`.
fn draw(g: &mut Generator, dist: Distribution, shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
    let n = crate::layout::checked_numel(shape, 8)?;
    let out = Tensor::empty_on(&[n], dist.dtype(), device)?;
    let (key, base) = g.reserve(dist.draws() * n);
    crate::backend::of(device)?.random(dist, key, base, &out)?;
    cast_vec(out, shape, dtype)
}

/// The process-wide default generator (`ember.manual_seed`).
pub fn default_generator() -> &'static Mutex<Generator> {
    static G: OnceLock<Mutex<Generator>> = OnceLock::new();
    G.get_or_init(|| Mutex::new(Generator::new(67280421310721)))
}

/// Locks a generator. A draw that panicked (a failed allocation) poisons the lock but leaves the
/// generator whole, so later draws go on instead of all failing.
pub fn lock(g: &Mutex<Generator>) -> MutexGuard<'_, Generator> {
    g.lock().unwrap_or_else(|e| e.into_inner())
}

fn float_out(dtype: DType, op: &str) -> Result<()> {
    if !dtype.is_float() {
        bail!(Type, "{op} expects a floating point dtype, got {dtype}");
    }
    Ok(())
}

fn cast_vec(t: Tensor, shape: &[usize], dtype: DType) -> Result<Tensor> {
    t.to_dtype(dtype)?.reshape(&shape.iter().map(|&d| d as i64).collect::<Vec<_>>())
}

/// Uniform on [low, high).
pub fn uniform(g: &mut Generator, shape: &[usize], low: f64, high: f64, dtype: DType, device: Device) -> Result<Tensor> {
    float_out(dtype, "uniform")?;
    draw(g, Distribution::Uniform { low, high }, shape, dtype, device)
}

/// Normal(mean, std).
pub fn normal(g: &mut Generator, shape: &[usize], mean: f64, std: f64, dtype: DType, device: Device) -> Result<Tensor> {
    float_out(dtype, "normal")?;
    if std < 0.0 {
        bail!(Runtime, "normal expects std >= 0.0, but found std {std}");
    }
    draw(g, Distribution::Normal { mean, std }, shape, dtype, device)
}

/// Integers uniform on [low, high).
pub fn randint(g: &mut Generator, shape: &[usize], low: i64, high: i64, dtype: DType, device: Device) -> Result<Tensor> {
    if high <= low {
        bail!(Runtime, "random_ expects 'from' to be less than 'to', but got from={low} >= to={high}");
    }
    draw(g, Distribution::Integers { low, high }, shape, dtype, device)
}

/// `torch.randperm`: a random permutation of `0..n` (Fisher–Yates), as `dtype`.
pub fn randperm(g: &mut Generator, n: usize, dtype: DType) -> Result<Tensor> {
    let mut v: Vec<i64> = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        bail!(Runtime, "DefaultCPUAllocator: can't allocate memory: you tried to allocate {} bytes.", n as u128 * 8);
    }
    let s = g.stream(n);
    v.extend(0..n as i64);
    for i in (1..n).rev() {
        v.swap(i, (s(i) % (i as u64 + 1)) as usize);
    }
    Ok(Tensor::from_vec(v, &[n])?.to_dtype(dtype)?)
}

/// Each element 1 with probability `p[i]` (which must lie in [0, 1]), on `p`'s device: a
/// uniform draw below `p[i]`, so every device draws the same values for a seed.
pub fn bernoulli(g: &mut Generator, p: &Tensor, dtype: DType) -> Result<Tensor> {
    use super::binary::{binary, BinaryOp, Operand, Scalar};
    let probs = p.to_dtype(DType::F64)?;
    let number = |v: f64| Operand::Scalar(Scalar::Float(v));
    let at_least_0 = binary(BinaryOp::Ge, Operand::Tensor(&probs), number(0.0))?;
    let at_most_1 = binary(BinaryOp::Le, Operand::Tensor(&probs), number(1.0))?;
    let in_range = binary(BinaryOp::LogicalAnd, Operand::Tensor(&at_least_0), Operand::Tensor(&at_most_1))?;
    if super::reduce::reduce(super::reduce::ReduceOp::All, &in_range, None, false, None)?.item_f64()? == 0.0 {
        bail!(Runtime, "Expected p_in >= 0 && p_in <= 1 to be true, but got false.");
    }
    let u = draw(g, Distribution::Uniform { low: 0.0, high: 1.0 }, p.shape(), DType::F64, p.device())?;
    binary(BinaryOp::Lt, Operand::Tensor(&u), Operand::Tensor(&probs))?.to_dtype(dtype)
}

/// Draws `num_samples` category indices per row of `probs` (1-d or 2-d).
pub fn multinomial(g: &mut Generator, probs: &Tensor, num_samples: usize, replacement: bool) -> Result<Tensor> {
    let (rows, cats) = match probs.shape() {
        [c] => (1, *c),
        [r, c] => (*r, *c),
        s => bail!(Runtime, "prob_dist must be 1 or 2 dim, got shape {s:?}"),
    };
    if cats == 0 {
        bail!(Runtime, "multinomial: number of categories cannot be zero");
    }
    if !replacement && num_samples > cats {
        bail!(Runtime, "cannot sample n_sample > prob_dist.size(-1) samples without replacement (n_sample = {num_samples}, categories = {cats})");
    }
    let p = probs.to_dtype(DType::F64)?.contiguous()?.to_vec::<f64>()?;
    if p.iter().any(|&w| w < 0.0 || !w.is_finite()) {
        bail!(Runtime, "probability tensor contains either `inf`, `nan` or element < 0");
    }
    let mut out = Vec::with_capacity(rows * num_samples);
    for r in 0..rows {
        let mut w = p[r * cats..(r + 1) * cats].to_vec();
        if w.iter().sum::<f64>() <= 0.0 {
            bail!(Runtime, "invalid multinomial distribution (sum of probabilities <= 0)");
        }
        if !replacement && w.iter().filter(|&&wc| wc > 0.0).count() < num_samples {
            bail!(Runtime, "invalid multinomial distribution (with replacement=False, not enough non-negative category to sample)");
        }
        for _ in 0..num_samples {
            let total: f64 = w.iter().sum();
            let mut target = g.next_f64() * total;
            let mut pick = cats - 1;
            for (c, &wc) in w.iter().enumerate() {
                if target < wc {
                    pick = c;
                    break;
                }
                target -= wc;
            }
            while w[pick] == 0.0 {
                pick -= 1; // rounding at the top end; walk back to a category with weight
            }
            out.push(pick as i64);
            if !replacement {
                w[pick] = 0.0;
            }
        }
    }
    let shape: Vec<usize> = if probs.ndim() == 1 { vec![num_samples] } else { vec![rows, num_samples] };
    Tensor::from_vec(out, &shape)
}

/// Fills `dst` (any dtype) from f64 values; the helper behind in-place `uniform_`/`normal_`.
pub fn fill_from(dst: &Tensor, values: &Tensor) -> Result<()> {
    dst.copy_(values)
}
