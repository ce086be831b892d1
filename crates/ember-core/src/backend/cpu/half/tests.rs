//! Every conversion path against `half`'s scalar conversions (the exact reference), bit for bit,
//! over every half value and a dense sample of float32 bit patterns with all rounding cases.
use super::*;
use std::sync::Mutex;

/// Paths are process-wide: tests that force them take turns.
pub(crate) static FORCE: Mutex<()> = Mutex::new(());

/// Runs `f` once on every path this CPU supports, then goes back to detection.
pub(crate) fn on_every_path(mut f: impl FnMut(Path)) {
    let _turn = FORCE.lock().unwrap_or_else(|e| e.into_inner());
    for p in Path::ALL.into_iter().filter(|p| p.is_supported()) {
        force_path(Some(p)).unwrap();
        f(p);
    }
    force_path(None).unwrap();
}

/// float32 patterns: every high half with low halves at and around both types' rounding points
/// (bfloat16 ties at 0x8000, float16 normal ties at 0x1000; subnormal float16 ties sit in the
/// high half, which runs over every value), plus a strided sweep of all 2^32 patterns.
fn patterns() -> Vec<f32> {
    let lows = [0u32, 1, 0x0fff, 0x1000, 0x1001, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001, 0xc000, 0xffff];
    let mut v: Vec<f32> = (0..=0xffffu32).flat_map(|hi| lows.iter().map(move |&lo| f32::from_bits(hi << 16 | lo))).collect();
    v.extend((0..u32::MAX / 4093).map(|i| f32::from_bits(i.wrapping_mul(4093).wrapping_add(i >> 7))));
    v
}

#[test]
fn narrowing_matches_half_on_every_path() {
    let x = patterns();
    let want_bf: Vec<u16> = x.iter().map(|&v| bf16::from_f32(v).to_bits()).collect();
    let want_h: Vec<u16> = x.iter().map(|&v| f16::from_f32(v).to_bits()).collect();
    let scalar_bf: Vec<u16> = x.iter().map(|&v| scalar::f32_to_bf16_bits(v)).collect();
    assert_eq!(scalar_bf, want_bf);
    on_every_path(|p| {
        let mut got = vec![0u16; x.len()];
        unsafe { f32_to_bf16_raw(x.as_ptr(), got.as_mut_ptr(), x.len()) };
        let bad = (0..x.len()).find(|&i| got[i] != want_bf[i]);
        assert!(bad.is_none(), "bf16 {p:?}: {:#010x} -> {:#06x}, want {:#06x}", x[bad.unwrap()].to_bits(), got[bad.unwrap()], want_bf[bad.unwrap()]);
        unsafe { f32_to_f16_raw(x.as_ptr(), got.as_mut_ptr(), x.len()) };
        let bad = (0..x.len()).find(|&i| got[i] != want_h[i]);
        assert!(bad.is_none(), "f16 {p:?}: {:#010x} -> {:#06x}, want {:#06x}", x[bad.unwrap()].to_bits(), got[bad.unwrap()], want_h[bad.unwrap()]);
    });
}

/// Equal bits, except that NaNs compare with the quiet bit set: `half` quiets a signalling NaN
/// when it widens, the exact widening (a shift for bfloat16, as PyTorch does) keeps it.
fn same_up_to_quieting(got: f32, want: f32) -> bool {
    let quiet = |v: f32| if v.is_nan() { v.to_bits() | 0x0040_0000 } else { v.to_bits() };
    quiet(got) == quiet(want)
}

#[test]
fn widening_is_exact_on_every_path() {
    let h: Vec<u16> = (0..=0xffffu16).collect();
    on_every_path(|p| {
        let mut got = vec![0f32; h.len()];
        unsafe { bf16_to_f32_raw(h.as_ptr(), got.as_mut_ptr(), h.len()) };
        for (&b, &g) in h.iter().zip(&got) {
            assert!(same_up_to_quieting(g, bf16::from_bits(b).to_f32()), "bf16 {p:?} {b:#06x} -> {:#010x}", g.to_bits());
        }
        unsafe { f16_to_f32_raw(h.as_ptr(), got.as_mut_ptr(), h.len()) };
        for (&b, &g) in h.iter().zip(&got) {
            assert!(same_up_to_quieting(g, f16::from_bits(b).to_f32()), "f16 {p:?} {b:#06x} -> {:#010x}", g.to_bits());
        }
    });
}

#[test]
fn every_tail_length_converts() {
    on_every_path(|p| {
        for n in 0..70 {
            let x: Vec<f32> = (0..n).map(|i| i as f32 * 1.37 - 20.0).collect();
            let mut h = vec![0u16; n + 1];
            unsafe { f32_to_bf16_raw(x.as_ptr(), h.as_mut_ptr(), n) };
            assert_eq!(h[n], 0, "{p:?} wrote past the end");
            let want: Vec<u16> = x.iter().map(|&v| bf16::from_f32(v).to_bits()).collect();
            assert_eq!(&h[..n], &want[..], "{p:?} n={n}");
            let mut back = vec![-1f32; n + 1];
            unsafe { f16_to_f32_raw(h.as_ptr(), back.as_mut_ptr(), n) };
            assert_eq!(back[n], -1.0, "{p:?} wrote past the end");
        }
    });
}

#[test]
fn sums_are_exact_on_small_integers_on_every_path_and_tail_length() {
    on_every_path(|p| {
        for n in [0usize, 1, 15, 16, 17, 127, 128, 129, 300, 1030, 2100] {
            // Small integers: every order of summation gives the exact total.
            let x: Vec<f32> = (0..n).map(|i| (i % 9) as f32 - 4.0).collect();
            let exact: f32 = x.iter().sum();
            let b: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v)).collect();
            let h: Vec<f16> = x.iter().map(|&v| f16::from_f32(v)).collect();
            assert_eq!(unsafe { map::run::<bf16>(map::Fold::Sum)(b.as_ptr(), n) }, exact, "bfloat16 {p:?} n={n}");
            assert_eq!(unsafe { map::run::<f16>(map::Fold::Sum)(h.as_ptr(), n) }, exact, "float16 {p:?} n={n}");
        }
    });
}
