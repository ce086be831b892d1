//! LM states keyed by word history, as Flashlight keys them.
//!
//! Flashlight gives each LM state a child per word index and compares states by identity, so two
//! hypotheses share an LM state exactly when they emitted the same words (or tokens) in the same
//! order. This arena reproduces that: state ids are nodes of a history tree, and each edge caches
//! the model's score so a repeated query costs one hash lookup.

use crate::lm::LanguageModel;
use rustc_hash::FxHashMap;

/// Index of a history node; 0 is the start.
pub type LmStateId = u32;

/// Edge label used for the end of sentence (word indices are dictionary indices, far below it).
const FINISH: u32 = u32::MAX;

/// An edge (state, label) as one 8-byte key: a map entry is then 16 bytes, not 24.
#[inline]
fn edge_key(state: LmStateId, label: u32) -> u64 {
    (u64::from(state) << 32) | u64::from(label)
}

/// The edge map, by packed edge key; a thread's searches pass it on to each other (see
/// `beam::Scratch`), so its table is allocated once rather than grown again per utterance.
pub(crate) type EdgeMap = FxHashMap<u64, (LmStateId, f32)>;

pub(crate) struct LmCache<'a, L: LanguageModel> {
    lm: &'a L,
    states: Vec<L::State>,
    edges: EdgeMap,
    /// States by the model's own identity, for models that report one.
    by_identity: FxHashMap<u64, LmStateId>,
}

impl<'a, L: LanguageModel> LmCache<'a, L> {
    /// A fresh history tree whose root is the model's start state; `edges` is emptied and reused.
    pub fn new(lm: &'a L, mut edges: EdgeMap) -> Self {
        edges.clear();
        let start = lm.start(false);
        let mut by_identity = FxHashMap::default();
        if let Some(key) = lm.state_identity(&start) {
            by_identity.insert(key, 0);
        }
        LmCache {
            lm,
            states: vec![start],
            edges,
            by_identity,
        }
    }

    /// Ends the search, handing back the edge map for the next one.
    pub fn into_edges(self) -> EdgeMap {
        self.edges
    }

    /// The state after `word` and the score of `word`.
    pub fn score(&mut self, state: LmStateId, word: usize) -> (LmStateId, f32) {
        self.step(state, word as u32)
    }

    /// The state after the sentence end and the end's score.
    pub fn finish(&mut self, state: LmStateId) -> (LmStateId, f32) {
        self.step(state, FINISH)
    }

    fn step(&mut self, state: LmStateId, edge: u32) -> (LmStateId, f32) {
        if let Some(&hit) = self.edges.get(&edge_key(state, edge)) {
            return hit;
        }
        let from = &self.states[state as usize];
        let (next, score) = if edge == FINISH {
            self.lm.finish(from)
        } else {
            self.lm.score(from, edge as usize)
        };
        let id = match self.lm.state_identity(&next) {
            Some(key) => *self.by_identity.entry(key).or_insert_with(|| {
                self.states.push(next);
                (self.states.len() - 1) as LmStateId
            }),
            None => {
                self.states.push(next);
                (self.states.len() - 1) as LmStateId
            }
        };
        self.edges.insert(edge_key(state, edge), (id, score));
        (id, score)
    }
}
