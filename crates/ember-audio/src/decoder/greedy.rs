//! Greedy (best-path) CTC decoding: the best token of every frame, repeats collapsed, blanks
//! removed.

use crate::error::AudioError;
use rayon::prelude::*;

/// The greedy transcription of one utterance.
#[derive(Debug, Clone, PartialEq)]
pub struct GreedyResult {
    /// Token indices after collapsing repeats and removing blanks.
    pub tokens: Vec<usize>,
    /// The frame where each token of `tokens` starts.
    pub timesteps: Vec<usize>,
    /// Sum over frames of the best emission (the best path's score).
    pub score: f64,
}

/// Decode `frames` rows of `num_tokens` emissions; ties go to the lowest token index, as
/// `argmax` does.
pub fn greedy_decode(
    emissions: &[f32],
    frames: usize,
    num_tokens: usize,
    blank: usize,
) -> GreedyResult {
    assert!(
        emissions.len() >= frames * num_tokens,
        "emissions shorter than frames * tokens"
    );
    let mut result = GreedyResult {
        tokens: Vec::new(),
        timesteps: Vec::new(),
        score: 0.0,
    };
    let mut previous = usize::MAX;
    for t in 0..frames {
        let frame = &emissions[t * num_tokens..(t + 1) * num_tokens];
        let best = argmax(frame);
        result.score += frame[best] as f64;
        if best != blank && best != previous {
            result.tokens.push(best);
            result.timesteps.push(t);
        }
        previous = best;
    }
    result
}

/// Greedy transcriptions of a `(batch, frames, num_tokens)` row-major block, in parallel;
/// `lengths` gives each utterance's valid frames (all `frames` when `None`).
pub fn greedy_decode_batch(
    emissions: &[f32],
    batch: usize,
    frames: usize,
    num_tokens: usize,
    lengths: Option<&[usize]>,
    blank: usize,
) -> Result<Vec<GreedyResult>, AudioError> {
    let stride = frames * num_tokens;
    super::check_batch(emissions.len(), batch, stride, frames, lengths)?;
    Ok((0..batch)
        .into_par_iter()
        .map(|b| {
            let length = lengths.map_or(frames, |l| l[b]);
            greedy_decode(
                &emissions[b * stride..(b + 1) * stride],
                length,
                num_tokens,
                blank,
            )
        })
        .collect())
}

fn argmax(frame: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in frame.iter().enumerate() {
        if v > frame[best] || (frame[best].is_nan() && !v.is_nan()) {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapses_repeats_and_drops_blanks() {
        // tokens: 0 blank, 1 a, 2 b
        let e = [
            0.1, 0.8, 0.1, // a
            0.1, 0.8, 0.1, // a (repeat)
            0.9, 0.05, 0.05, // blank
            0.1, 0.8, 0.1, // a again
            0.1, 0.1, 0.8, // b
            0.5, 0.5, 0.0, // tie -> blank
        ];
        let r = greedy_decode(&e, 6, 3, 0);
        assert_eq!(r.tokens, vec![1, 1, 2]);
        assert_eq!(r.timesteps, vec![0, 3, 4]);
        assert!((r.score - (0.8 + 0.8 + 0.9 + 0.8 + 0.8 + 0.5)).abs() < 1e-5);
    }

    #[test]
    fn batch_equals_one_by_one_with_lengths() {
        let e: Vec<f32> = (0..2 * 5 * 3).map(|i| ((i * 7919) % 13) as f32).collect();
        let got = greedy_decode_batch(&e, 2, 5, 3, Some(&[5, 2]), 0).unwrap();
        assert_eq!(got[0], greedy_decode(&e[..15], 5, 3, 0));
        assert_eq!(got[1], greedy_decode(&e[15..], 2, 3, 0));
        assert!(greedy_decode_batch(&e, 2, 5, 3, Some(&[6, 1]), 0).is_err());
        assert!(greedy_decode_batch(&e, 3, 5, 3, None, 0).is_err());
    }
}
