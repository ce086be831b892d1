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

/// Edge label used for the end of sentence.
const FINISH: i64 = -1;

pub(crate) struct LmCache<'a, L: LanguageModel> {
    lm: &'a L,
    states: Vec<L::State>,
    edges: FxHashMap<(LmStateId, i64), (LmStateId, f32)>,
    /// States by the model's own identity, for models that report one.
    by_identity: FxHashMap<u64, LmStateId>,
}

impl<'a, L: LanguageModel> LmCache<'a, L> {
    /// A fresh history tree whose root is the model's start state.
    pub fn new(lm: &'a L) -> Self {
        let start = lm.start(false);
        let mut by_identity = FxHashMap::default();
        if let Some(key) = lm.state_identity(&start) {
            by_identity.insert(key, 0);
        }
        LmCache {
            lm,
            states: vec![start],
            edges: FxHashMap::default(),
            by_identity,
        }
    }

    /// The state after `word` and the score of `word`.
    pub fn score(&mut self, state: LmStateId, word: usize) -> (LmStateId, f32) {
        self.step(state, word as i64)
    }

    /// The state after the sentence end and the end's score.
    pub fn finish(&mut self, state: LmStateId) -> (LmStateId, f32) {
        self.step(state, FINISH)
    }

    fn step(&mut self, state: LmStateId, edge: i64) -> (LmStateId, f32) {
        if let Some(&hit) = self.edges.get(&(state, edge)) {
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
        self.edges.insert((state, edge), (id, score));
        (id, score)
    }
}
