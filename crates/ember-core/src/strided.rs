//! Walks N operands of one shape in lockstep, with any strides (broadcast 0s, negative, gaps).
//! Dims are merged where every operand allows it, so a contiguous tensor is one long run and a
//! transposed one is a loop of runs; runs are what the kernels see.

/// The operands' shape after merging, and each operand's strides on it (innermost last).
pub struct Plan<const N: usize> {
    pub shape: Vec<usize>,
    pub strides: [Vec<isize>; N],
}

impl<const N: usize> Plan<N> {
    pub fn new(shape: &[usize], strides: [&[isize]; N]) -> Self {
        let mut dims: Vec<usize> = (0..shape.len()).filter(|&d| shape[d] != 1).collect();
        // Make the operand 0 (the output) innermost-fastest so runs are as long as possible.
        dims.sort_by_key(|&d| std::cmp::Reverse(strides[0][d].unsigned_abs()));
        if dims.windows(2).any(|w| strides[0][w[0]].unsigned_abs() == strides[0][w[1]].unsigned_abs()) {
            dims.sort();
        }
        let mut out_shape: Vec<usize> = vec![];
        let mut out_strides: [Vec<isize>; N] = std::array::from_fn(|_| vec![]);
        for d in dims {
            let mergeable = !out_shape.is_empty()
                && (0..N).all(|k| *out_strides[k].last().unwrap() == strides[k][d] * shape[d] as isize);
            if mergeable {
                *out_shape.last_mut().unwrap() *= shape[d];
                for k in 0..N {
                    *out_strides[k].last_mut().unwrap() = strides[k][d];
                }
            } else {
                out_shape.push(shape[d]);
                for k in 0..N {
                    out_strides[k].push(strides[k][d]);
                }
            }
        }
        if out_shape.is_empty() {
            out_shape.push(if shape.contains(&0) { 0 } else { 1 });
            for s in out_strides.iter_mut() {
                s.push(1);
            }
        }
        Plan { shape: out_shape, strides: out_strides }
    }

    pub fn inner_len(&self) -> usize {
        *self.shape.last().unwrap()
    }

    pub fn inner_strides(&self) -> [isize; N] {
        std::array::from_fn(|k| *self.strides[k].last().unwrap())
    }

    /// Calls `f(offsets, len)` for every run, in parallel over the outer dims (or, for a single
    /// run, over pieces of it). `offsets` are element offsets from each operand's base.
    pub fn for_each_run(&self, f: impl Fn([isize; N], usize) + Sync) {
        let inner = self.inner_len();
        let strides = self.inner_strides();
        if self.shape.len() == 1 {
            crate::parallel::for_range(inner, crate::parallel::GRAIN, |s, e| {
                f(std::array::from_fn(|k| s as isize * strides[k]), e - s)
            });
            return;
        }
        let outer_shape = &self.shape[..self.shape.len() - 1];
        let rows: usize = outer_shape.iter().product();
        let grain = (crate::parallel::GRAIN / inner.max(1)).max(1);
        crate::parallel::for_range(rows, grain, |start, end| {
            let mut idx = unravel(start, outer_shape);
            for _ in start..end {
                let offsets = std::array::from_fn(|k| {
                    idx.iter().zip(&self.strides[k]).map(|(&i, &s)| i as isize * s).sum()
                });
                f(offsets, inner);
                for d in (0..idx.len()).rev() {
                    idx[d] += 1;
                    if idx[d] < outer_shape[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        });
    }
}

impl Plan<1> {
    /// Calls `f(offset, len, stride)` for every run, serially, in logical order.
    pub fn for_each_run_serial(&self, mut f: impl FnMut(isize, usize, isize)) {
        let inner = self.inner_len();
        let stride = *self.strides[0].last().unwrap();
        let outer = &self.shape[..self.shape.len() - 1];
        let mut idx = vec![0usize; outer.len()];
        for _ in 0..outer.iter().product::<usize>() {
            let off = idx.iter().zip(&self.strides[0]).map(|(&i, &s)| i as isize * s).sum();
            f(off, inner, stride);
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < outer[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
    }
}

pub fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        if shape[d] > 0 {
            idx[d] = flat % shape[d];
            flat /= shape[d];
        }
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_contiguous_and_keeps_transposed() {
        let p = Plan::new(&[4, 5], [&[5, 1], &[5, 1]]);
        assert_eq!(p.shape, vec![20]);
        let p = Plan::new(&[4, 5], [&[5, 1], &[1, 4]]);
        assert_eq!(p.shape, vec![4, 5]);
        let p = Plan::new(&[4, 5], [&[5, 1], &[0, 1]]);
        assert_eq!(p.strides[1], vec![0, 1]);
    }
}
