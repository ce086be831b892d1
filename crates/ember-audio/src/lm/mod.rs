//! Language models as the decoders see them (Flashlight's `LM` interface).
//!
//! A model maps a state and a word index (an index of the decoder's word dictionary, or of the
//! token set in lexicon-free decoding) to a new state and a score. Scores are whatever the model
//! returns: Flashlight's KenLM wrapper passes KenLM's log10 probabilities through unchanged, and
//! [`arpa::ArpaLm`] does the same, so `lm_weight` means what it means in TorchAudio.
//!
//! The decoders never compare states: they key states by word history (see
//! `decoder::lm_cache`), exactly as Flashlight does for states made with `LMState.child(word)`,
//! so a model's state only has to carry what it needs to score; a model whose states have an
//! identity of their own reports it through [`LanguageModel::state_identity`].

pub mod arpa;

/// A word-level (or token-level) language model.
pub trait LanguageModel: Send + Sync {
    /// What the model needs to remember about the words so far.
    type State: Clone + Send;

    /// The state before the first word; `start_with_nothing` asks for an empty context instead
    /// of the sentence start `<s>`.
    fn start(&self, start_with_nothing: bool) -> Self::State;

    /// Score `word` after `state`; returns the state after it and the score.
    fn score(&self, state: &Self::State, word: usize) -> (Self::State, f32);

    /// Score the end of the sentence after `state`.
    fn finish(&self, state: &Self::State) -> (Self::State, f32);

    /// An identity for `state`, for models whose states are objects compared by identity (as
    /// Flashlight compares them; e.g. a Python LM that returns the same state object for two
    /// histories). States with equal identities are one search state. `None` (the default):
    /// identity is the word history, which is what `LMState.child(word)` gives.
    fn state_identity(&self, _state: &Self::State) -> Option<u64> {
        None
    }
}

/// The model that scores every word 0 (TorchAudio's default when `lm=None`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ZeroLm;

impl LanguageModel for ZeroLm {
    type State = ();

    fn start(&self, _start_with_nothing: bool) {}

    fn score(&self, _state: &(), _word: usize) -> ((), f32) {
        ((), 0.0)
    }

    fn finish(&self, _state: &()) -> ((), f32) {
        ((), 0.0)
    }
}
