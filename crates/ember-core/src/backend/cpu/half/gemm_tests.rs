use super::*;

fn round(v: f32) -> f64 {
    scalar::bf16_bits_to_f32(scalar::f32_to_bf16_bits(v)) as f64
}

/// A (rows × cols) matrix stored row-major or column-major, in the source type.
struct Stored<S> {
    data: Vec<S>,
    rs: isize,
    cs: isize,
}

impl<S: Copy> Stored<S> {
    fn new(values: &[f32], rows: usize, cols: usize, transposed: bool, cast: impl Fn(f32) -> S) -> Self {
        if transposed {
            let data = (0..rows * cols).map(|i| cast(values[(i % rows) * cols + i / rows])).collect();
            Stored { data, rs: 1, cs: rows as isize }
        } else {
            Stored { data: values.iter().map(|&v| cast(v)).collect(), rs: cols as isize, cs: 1 }
        }
    }

    fn mat(&self) -> Mat<S> {
        Mat { ptr: Ptr(self.data.as_ptr() as *mut S), rs: self.rs, cs: self.cs }
    }
}

fn values(len: usize, seed: usize) -> Vec<f32> {
    (0..len).map(|i| ((i * seed) % 97) as f32 / 13.0 - 3.0).collect()
}

/// `c (+)= a·b` through `gemm` with the given layouts, against a float64 reference of the
/// bf16-rounded operands (plus the start value of `c` when accumulating).
fn check<S: Source, D: Sink + Copy>(
    (m, n, k): (usize, usize, usize), (ta, tb, tc): (bool, bool, bool), accumulate: bool,
    cast: impl Fn(f32) -> S + Copy, out: impl Fn(f32) -> D + Copy, back: impl Fn(D) -> f64,
) {
    let (av, bv, cv) = (values(m * k, 7919), values(k * n, 104729), values(m * n, 31));
    let (a, b) = (Stored::new(&av, m, k, ta, cast), Stored::new(&bv, k, n, tb, cast));
    let mut c = Stored::new(&cv, m, n, tc, out);
    let dst = MatMut { ptr: Ptr(c.data.as_mut_ptr()), rs: c.rs, cs: c.cs };
    unsafe { gemm(m, n, k, a.mat(), b.mat(), dst, accumulate) };
    for i in 0..m {
        for j in 0..n {
            let terms = (0..k).map(|p| round(av[i * k + p]) * round(bv[p * n + j]));
            let start = if accumulate { back(out(cv[i * n + j])) } else { 0.0 };
            let (want, size) = terms.fold((start, start.abs()), |(s, z), t| (s + t, z + t.abs()));
            let got = back(c.data[(i as isize * c.rs + j as isize * c.cs) as usize]);
            // float32 sums (a few ulps of the summed magnitudes), then one rounding into D.
            let rounding = if std::mem::size_of::<D>() == 2 { want.abs() / 256.0 } else { 0.0 };
            let tol = 1e-5 * size + rounding;
            assert!((got - want).abs() <= tol, "{m}x{n}x{k} {ta}/{tb}/{tc} acc {accumulate} [{i},{j}]: {got} vs {want}");
        }
    }
}

const SHAPES: &[(usize, usize, usize)] = &[(1, 1, 1), (3, 5, 7), (9, 33, 2), (12, 32, 16), (17, 70, 513), (130, 40, 300), (50, 600, 9), (20, 530, 64)];

fn with_bf16_path(f: impl FnOnce()) {
    if !Path::Avx512Bf16.is_supported() {
        return;
    }
    let _turn = super::super::tests::FORCE.lock().unwrap_or_else(|e| e.into_inner());
    super::super::force_path(Some(Path::Avx512Bf16)).unwrap();
    f();
    super::super::force_path(None).unwrap();
}

/// Every layout of A, B and C (awkward sizes: tails of every block, odd and unit k), into
/// bfloat16 and float32 destinations, with and without accumulation.
#[test]
fn products_match_a_float64_reference() {
    with_bf16_path(|| {
        let to_bf16 = bf16::from_f32;
        for &shape in SHAPES {
            for layout in 0..8 {
                let t = (layout & 1 != 0, layout & 2 != 0, layout & 4 != 0);
                for accumulate in [false, true] {
                    check(shape, t, accumulate, to_bf16, to_bf16, |v: bf16| v.to_f64());
                    check(shape, t, accumulate, |v| v, |v| v, |v: f32| v as f64);
                }
            }
        }
    });
}

/// k beyond one register pass (`KP_MAX` pairs): partial sums go through the scratch tiles.
#[test]
fn long_k_runs_in_slices() {
    with_bf16_path(|| {
        let k = 2 * KP_MAX + 7;
        check((13, 40, k), (false, false, false), false, bf16::from_f32, |v| v, |v: f32| v as f64);
        check((5, 3, 2 * KP_MAX + 2), (false, true, true), true, bf16::from_f32, bf16::from_f32, |v: bf16| v.to_f64());
    });
}

/// Row-major bfloat16 A with rows 4 KiB apart: copied at a padded stride, not read in place.
#[test]
fn aliasing_rows_are_copied() {
    with_bf16_path(|| {
        assert!(rows_alias(2048) && !rows_alias(1024));
        check((30, 70, 2048), (false, false, false), false, bf16::from_f32, bf16::from_f32, |v: bf16| v.to_f64());
        check((30, 70, 2048), (false, true, false), true, bf16::from_f32, |v| v, |v: f32| v as f64);
    });
}

#[test]
fn empty_k_writes_zeros_or_keeps_c() {
    with_bf16_path(|| {
        for accumulate in [false, true] {
            check((4, 3, 0), (false, false, false), accumulate, bf16::from_f32, |v| v, |v: f32| v as f64);
        }
    });
}
