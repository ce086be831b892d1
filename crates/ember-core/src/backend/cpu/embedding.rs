//! Embedding kernels on host memory: `max_norm` renormalisation in place and pooled bags.
use crate::backend::cpu::map::Ptr;
use crate::dtype::Element;
use crate::ops::embedding::BagMode;
use crate::parallel::for_range;
use crate::tensor::Tensor;
use crate::with_dtype;

/// `Backend::embedding_renorm` on host memory, in float64.
pub fn renorm(weight: &Tensor, rows: &[i64], max_norm: f64, norm_type: f64) {
    let (dim, [s0, s1]) = (weight.shape()[1], [weight.strides()[0], weight.strides()[1]]);
    with_dtype!(weight.dtype(), T, {
        let pw = Ptr(weight.data_ptr::<T>());
        for &i in rows {
            let at = |j: usize| pw.at(i as isize * s0 + j as isize * s1);
            let row: Vec<f64> = (0..dim).map(|j| unsafe { (*at(j)).to_f64() }).collect();
            let norm = p_norm(&row, norm_type);
            if norm > max_norm {
                let scale = max_norm / (norm + 1e-7);
                for (j, v) in row.iter().enumerate() {
                    unsafe { *at(j) = T::from_f64(v * scale) };
                }
            }
        }
    });
}

fn p_norm(v: &[f64], p: f64) -> f64 {
    if p.is_infinite() {
        v.iter().fold(0.0, |m, x| m.max(x.abs()))
    } else if p == 0.0 {
        v.iter().filter(|x| **x != 0.0).count() as f64
    } else {
        v.iter().map(|x| x.abs().powf(p)).sum::<f64>().powf(1.0 / p)
    }
}

/// `Backend::embedding_bag` on host memory, accumulating in float64.
pub fn bag(weight: &Tensor, idx: &[i64], bags: &[(usize, usize)], mode: BagMode, psw: &[f64], padding_idx: Option<i64>, out: &Tensor) {
    let (dim, [s0, s1]) = (weight.shape()[1], [weight.strides()[0], weight.strides()[1]]);
    with_dtype!(weight.dtype(), T, {
        let (pw, po) = (Ptr(weight.data_ptr::<T>()), Ptr(out.data_ptr::<T>()));
        for_range(bags.len(), 1, |s, e| {
            let mut acc = vec![0.0f64; dim];
            for (b, &(start, end)) in bags.iter().enumerate().take(e).skip(s) {
                let members: Vec<usize> = (start..end).filter(|&k| Some(idx[k]) != padding_idx).collect();
                let init = if mode == BagMode::Max && !members.is_empty() { f64::NEG_INFINITY } else { 0.0 };
                acc.iter_mut().for_each(|a| *a = init);
                for &k in &members {
                    for (j, a) in acc.iter_mut().enumerate() {
                        let v = unsafe { (*pw.at(idx[k] as isize * s0 + j as isize * s1)).to_f64() };
                        *a = if mode == BagMode::Max { a.max(v) } else { *a + v * psw[k] };
                    }
                }
                let div = if mode == BagMode::Mean { members.len().max(1) as f64 } else { 1.0 };
                for (j, a) in acc.iter().enumerate() {
                    unsafe { *po.at((b * dim + j) as isize) = T::from_f64(a / div) };
                }
            }
        });
    });
}
