//! The beam bookkeeping both decoders share: hypotheses, candidate collection with the running
//! threshold, merging of equal states, and pruning to the beam.

use super::lm_cache::{EdgeMap, LmStateId};
use crate::trie::NodeId;
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;

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
    /// What makes two hypotheses the same search state (score aside): LM state, trie node,
    /// token and the blank flag, packed into one integer.
    #[inline]
    fn state_key(&self) -> u128 {
        ((self.lm_state as u128) << 96)
            | ((self.lex as u128) << 64)
            | ((self.token as u32 as u128) << 32)
            | self.prev_blank as u128
    }
}

/// Candidates proposed for the next frame.
pub(crate) struct Candidates {
    best: f64,
    items: Vec<Hyp>,
    threshold: f64,
    /// Merging: each state's slot in `items`, and the score of the member that slot holds
    /// (the total differs from it under log-add). Kept between frames for their capacity.
    slots: FxHashMap<u128, u32>,
    member_scores: Vec<f64>,
}

impl Default for Candidates {
    fn default() -> Self {
        Candidates {
            best: f64::NEG_INFINITY,
            items: Vec::new(),
            threshold: 0.0,
            slots: FxHashMap::default(),
            member_scores: Vec::new(),
        }
    }
}

impl Candidates {
    /// Heap bytes held (approximately, for the map).
    fn bytes(&self) -> usize {
        self.items.capacity() * std::mem::size_of::<Hyp>()
            + self.slots.capacity() * (std::mem::size_of::<(u128, u32)>() + 1)
            + self.member_scores.capacity() * std::mem::size_of::<f64>()
    }

    /// Empties the beam for the next frame.
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
    /// (sorted by score, best first, when `sorted`). Merging goes through a hash map: sorting
    /// the candidates by state, as Flashlight does, took a third of the search's time.
    pub fn store(&mut self, out: &mut Vec<Hyp>, beam_size: usize, log_add: bool, sorted: bool) {
        out.clear();
        let kept = self.merge(log_add);
        let items = &mut self.items[..kept];
        let by_score = |a: &Hyp, b: &Hyp| b.score.total_cmp(&a.score);
        let size = beam_size.min(items.len());
        if sorted {
            items.sort_by(by_score);
        } else if items.len() > size && size > 0 {
            items.select_nth_unstable_by(size - 1, by_score);
        }
        out.extend_from_slice(&items[..size]);
    }

    /// Merges the candidates above the threshold into the front of `items`; returns their count.
    fn merge(&mut self, log_add: bool) -> usize {
        let floor = self.best - self.threshold;
        self.slots.clear();
        self.member_scores.clear();
        let mut kept = 0usize;
        for i in 0..self.items.len() {
            let hyp = self.items[i];
            if hyp.score < floor {
                continue;
            }
            match self.slots.entry(hyp.state_key()) {
                Entry::Occupied(slot) => {
                    let at = *slot.get() as usize;
                    let total = merge_scores(self.items[at].score, hyp.score, log_add);
                    if hyp.score > self.member_scores[at] {
                        self.items[at] = hyp;
                        self.member_scores[at] = hyp.score;
                    }
                    self.items[at].score = total;
                }
                Entry::Vacant(slot) => {
                    slot.insert(kept as u32);
                    self.items[kept] = hyp;
                    self.member_scores.push(hyp.score);
                    kept += 1;
                }
            }
        }
        kept
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

/// What backtracking needs of one hypothesis: 12 bytes instead of a whole `Hyp`.
#[derive(Debug, Clone, Copy)]
struct Step {
    parent: u32,
    token: i32,
    word: i32,
}

/// Every frame's hypotheses, reduced to their `Step`s, in one flat buffer: only the current
/// and the previous frame need whole hypotheses, so the search keeps just those two.
#[derive(Default)]
pub(crate) struct History {
    steps: Vec<Step>,
    /// Where each frame's steps start in `steps`.
    starts: Vec<usize>,
}

impl History {
    /// Empty, with room for `frames` frames of `beam_size` hypotheses (one allocation per
    /// search instead of a growing one per frame; capped so a huge beam reserves no more than
    /// the search can fill).
    fn reset(&mut self, frames: usize, beam_size: usize) {
        self.steps.clear();
        self.starts.clear();
        self.starts.reserve(frames);
        self.steps
            .reserve(frames.saturating_mul(beam_size.min(MAX_RESERVED_BEAM)));
    }

    /// Records the hypotheses kept at one frame.
    pub fn push_frame(&mut self, hyps: &[Hyp]) {
        self.starts.push(self.steps.len());
        self.steps.extend(hyps.iter().map(|h| Step {
            parent: h.parent,
            token: h.token,
            word: h.word,
        }));
    }

    /// Walk back from `final_index` in the last frame; returns (tokens, words), one per
    /// frame including the initial and final pseudo-frames.
    pub fn backtrack(&self, final_index: usize) -> (Vec<i32>, Vec<i32>) {
        let n = self.starts.len();
        let mut tokens = vec![-1; n];
        let mut words = vec![-1; n];
        let mut index = final_index as u32;
        for f in (0..n).rev() {
            if index == NO_PARENT {
                break;
            }
            let step = self.steps[self.starts[f] + index as usize];
            tokens[f] = step.token;
            words[f] = step.word;
            index = step.parent;
        }
        (tokens, words)
    }
}

/// Beams wider than this reserve history as they go (a beam is rarely full at that width).
const MAX_RESERVED_BEAM: usize = 1024;

/// Working buffers of one search, kept by each thread between utterances: decoding a stream of
/// utterances then reuses the same memory instead of growing fresh buffers every time.
#[derive(Default)]
pub(crate) struct Scratch {
    pub candidates: Candidates,
    pub history: History,
    /// The previous frame's hypotheses and the current frame's.
    pub prev: Vec<Hyp>,
    pub next: Vec<Hyp>,
    pub order: Vec<usize>,
    /// The LM cache's edge map (its states depend on the model type, so they stay per search).
    pub lm_edges: EdgeMap,
}

/// Above this, a thread gives its buffers back after the search (one long utterance should not
/// pin its memory for the life of the thread).
const RETAINED_SCRATCH_BYTES: usize = 16 << 20;

impl Scratch {
    fn bytes(&self) -> usize {
        self.candidates.bytes()
            + self.history.steps.capacity() * std::mem::size_of::<Step>()
            + (self.prev.capacity() + self.next.capacity()) * std::mem::size_of::<Hyp>()
            + self.lm_edges.capacity() * (std::mem::size_of::<(u64, (LmStateId, f32))>() + 1)
    }
}

thread_local! {
    static SCRATCH: std::cell::Cell<Option<Box<Scratch>>> = const { std::cell::Cell::new(None) };
}

/// Run a search of `frames` frames with this thread's buffers (fresh ones when a search is
/// already using them, e.g. a Python LM that decodes from inside a decode).
pub(crate) fn with_scratch<R>(
    options: &super::BeamOptions,
    frames: usize,
    search: impl FnOnce(&mut Scratch) -> R,
) -> R {
    let mut scratch = SCRATCH.with(|slot| slot.take()).unwrap_or_default();
    scratch.candidates.threshold = options.beam_threshold;
    scratch.candidates.reset();
    scratch.history.reset(frames + 2, options.beam_size);
    scratch.prev.clear();
    scratch.next.clear();
    let result = search(&mut scratch);
    if scratch.bytes() <= RETAINED_SCRATCH_BYTES {
        SCRATCH.with(|slot| slot.set(Some(scratch)));
    }
    result
}
