//! The beam bookkeeping both decoders share: hypotheses, candidate collection with the running
//! threshold, merging of equal states, and pruning to the beam.

use super::lm_cache::LmStateId;
use crate::trie::NodeId;

/// Marks "no parent" (the initial hypothesis).
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// One hypothesis of one frame. `parent` indexes the previous frame's hypotheses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hyp {
    pub score: f64,
    pub lm_state: LmStateId,
    /// Trie node (lexicon decoding); always 0 in lexicon-free decoding.
    pub lex: NodeId,
    pub parent: u32,
    pub token: i32,
    /// Word completed at this step, or -1.
    pub word: i32,
    pub prev_blank: bool,
    pub am_score: f64,
    pub lm_score: f64,
}

impl Hyp {
    /// What makes two hypotheses the same search state (score aside).
    #[inline]
    fn state_key(&self) -> (LmStateId, NodeId, i32, bool) {
        (self.lm_state, self.lex, self.token, self.prev_blank)
    }
}

/// Candidates proposed for the next frame.
pub(crate) struct Candidates {
    best: f64,
    items: Vec<Hyp>,
    threshold: f64,
}

impl Candidates {
    pub fn new(threshold: f64) -> Self {
        Candidates {
            best: f64::NEG_INFINITY,
            items: Vec::new(),
            threshold,
        }
    }

    pub fn reset(&mut self) {
        self.best = f64::NEG_INFINITY;
        self.items.clear();
    }

    /// Keep `hyp` unless it is already `threshold` below the best score seen so far.
    #[inline]
    pub fn add(&mut self, hyp: Hyp) {
        if hyp.score >= self.best {
            self.best = hyp.score;
        }
        if hyp.score >= self.best - self.threshold {
            self.items.push(hyp);
        }
    }

    /// Drop candidates below best - threshold, merge equal states (max, or log-add of scores;
    /// the best-scoring member's history is kept), and keep the `beam_size` best in `out`
    /// (sorted by score, best first, when `sorted`).
    pub fn store(&mut self, out: &mut Vec<Hyp>, beam_size: usize, log_add: bool, sorted: bool) {
        out.clear();
        let floor = self.best - self.threshold;
        let items = &mut self.items;
        items.retain(|h| h.score >= floor);
        if items.is_empty() {
            return;
        }
        items.sort_unstable_by(|a, b| {
            a.state_key()
                .cmp(&b.state_key())
                .then_with(|| b.score.total_cmp(&a.score))
        });
        let mut kept = 0usize;
        for i in 1..items.len() {
            if items[i].state_key() != items[kept].state_key() {
                kept += 1;
                items[kept] = items[i];
            } else {
                items[kept].score = merge_scores(items[kept].score, items[i].score, log_add);
            }
        }
        items.truncate(kept + 1);
        let by_score = |a: &Hyp, b: &Hyp| b.score.total_cmp(&a.score);
        let size = beam_size.min(items.len());
        if sorted {
            items.sort_by(by_score);
        } else if items.len() > size && size > 0 {
            items.select_nth_unstable_by(size - 1, by_score);
        }
        out.extend_from_slice(&items[..size]);
    }
}

#[inline]
fn merge_scores(a: f64, b: f64, log_add: bool) -> f64 {
    let hi = a.max(b);
    if log_add {
        let lo = a.min(b);
        hi + (lo - hi).exp().ln_1p()
    } else {
        hi
    }
}

/// Token indices of the `k` best-scoring tokens of one frame (all of them when `k >= n`, in
/// index order, as Flashlight leaves them).
pub(crate) fn top_tokens(frame: &[f32], k: usize, order: &mut Vec<usize>) {
    order.clear();
    order.extend(0..frame.len());
    if k < frame.len() {
        order.select_nth_unstable_by(k, |&a, &b| frame[b].total_cmp(&frame[a]));
        order.truncate(k);
    }
}

/// Walk back from `final_index` in the last frame; returns (tokens, words), one per frame
/// including the initial and final pseudo-frames.
pub(crate) fn backtrack(frames: &[Vec<Hyp>], final_index: usize) -> (Vec<i32>, Vec<i32>) {
    let n = frames.len();
    let mut tokens = vec![-1; n];
    let mut words = vec![-1; n];
    let mut index = final_index as u32;
    for f in (0..n).rev() {
        if index == NO_PARENT {
            break;
        }
        let hyp = &frames[f][index as usize];
        tokens[f] = hyp.token;
        words[f] = hyp.word;
        index = hyp.parent;
    }
    (tokens, words)
}
