//! CTC decoders and the TorchAudio-shaped front end.
//!
//! - [`lexicon::LexiconDecoder`] and [`lexicon_free::LexiconFreeDecoder`]: Flashlight's beam
//!   searches, returning raw per-frame [`DecodeResult`]s;
//! - [`greedy::greedy_decode`]: best path;
//! - [`CtcDecoder`]: TorchAudio 0.12's `ctc_decoder` (same options and defaults), returning
//!   [`CtcHypothesis`] lists and decoding batches in parallel.

mod beam;
pub mod greedy;
pub mod lexicon;
pub mod lexicon_free;
mod lm_cache;

use crate::dictionary::{Dictionary, Lexicon, UNK_WORD};
use crate::error::AudioError;
use crate::lm::arpa::{ArpaContext, ArpaLm, ArpaModel};
use crate::lm::LanguageModel;
use crate::trie::Trie;
use beam::Hyp;
use lexicon::LexiconDecoder;
use lexicon_free::LexiconFreeDecoder;
use rayon::prelude::*;
use std::sync::Arc;

/// Beam-search settings (Flashlight's decoder options, CTC criterion).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BeamOptions {
    /// Hypotheses kept after each frame.
    pub beam_size: usize,
    /// Tokens tried per frame (the best-scoring ones).
    pub beam_size_token: usize,
    /// Candidates more than this below the frame's best are dropped.
    pub beam_threshold: f64,
    /// Weight of the LM score.
    pub lm_weight: f64,
    /// Added per known word.
    pub word_score: f64,
    /// Added per unknown word; `-inf` disables unknown words.
    pub unk_score: f64,
    /// Added per silence token.
    pub sil_score: f64,
    /// Merge equal states by log-add instead of max.
    pub log_add: bool,
}

/// One final hypothesis as Flashlight returns it: one token and one word slot per frame, plus
/// the initial and final pseudo-frames (so `frames + 2` entries; -1 where no word ends).
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeResult {
    /// Total score: acoustic, LM and word/silence terms.
    pub score: f64,
    /// The acoustic model's part of the score.
    pub am_score: f64,
    /// The LM's part of the score (already weighted).
    pub lm_score: f64,
    /// Token index per frame.
    pub tokens: Vec<i32>,
    /// Word index per frame, -1 where no word ends.
    pub words: Vec<i32>,
}

/// All final hypotheses of a finished search, in the order of the final beam (best first);
/// `last` is the final beam, the last frame of `history`.
fn collect_results(history: &beam::History, last: &[Hyp]) -> Vec<DecodeResult> {
    last.iter()
        .enumerate()
        .map(|(i, h)| {
            let (tokens, words) = history.backtrack(i);
            DecodeResult {
                score: h.score,
                am_score: h.am_score,
                lm_score: h.lm_score,
                tokens,
                words,
            }
        })
        .collect()
}

/// TorchAudio's `CTCHypothesis`.
#[derive(Debug, Clone, PartialEq)]
pub struct CtcHypothesis {
    /// Token indices: repeats collapsed, blanks removed (the leading and trailing silence that
    /// the search adds are kept, as in TorchAudio).
    pub tokens: Vec<usize>,
    /// Words, in order (empty for lexicon-free decoding).
    pub words: Vec<String>,
    /// The search's total score.
    pub score: f64,
    /// For each token, its position in the search's frame sequence (which starts with the
    /// initial pseudo-frame, so frame `t` of the emissions is position `t + 1`).
    pub timesteps: Vec<usize>,
}

/// `ctc_decoder`'s options with TorchAudio's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct CtcDecoderOptions {
    /// Hypotheses returned per utterance.
    pub nbest: usize,
    /// Hypotheses kept per frame.
    pub beam_size: usize,
    /// `None`: every token.
    pub beam_size_token: Option<usize>,
    /// Candidates more than this below the frame's best are dropped.
    pub beam_threshold: f64,
    /// Weight of the LM score.
    pub lm_weight: f64,
    /// Added per known word.
    pub word_score: f64,
    /// Added per unknown word; `-inf` disables unknown words.
    pub unk_score: f64,
    /// Added per silence token.
    pub sil_score: f64,
    /// Merge equal states by log-add instead of max.
    pub log_add: bool,
    /// The CTC blank.
    pub blank_token: String,
    /// The silence (word boundary) token.
    pub sil_token: String,
    /// The lexicon's unknown word.
    pub unk_word: String,
}

impl Default for CtcDecoderOptions {
    fn default() -> Self {
        CtcDecoderOptions {
            nbest: 1,
            beam_size: 50,
            beam_size_token: None,
            beam_threshold: 50.0,
            lm_weight: 2.0,
            word_score: 0.0,
            unk_score: f64::NEG_INFINITY,
            sil_score: 0.0,
            log_add: false,
            blank_token: "-".into(),
            sil_token: "|".into(),
            unk_word: UNK_WORD.into(),
        }
    }
}

/// The language models the front end can build from files: none (all scores 0) or ARPA.
#[derive(Debug, Clone)]
pub enum DecoderLm {
    /// No LM: every score is 0.
    Zero,
    /// An ARPA n-gram model.
    Arpa(ArpaLm),
}

impl LanguageModel for DecoderLm {
    type State = ArpaContext;

    fn start(&self, start_with_nothing: bool) -> ArpaContext {
        match self {
            DecoderLm::Zero => ArpaContext::default(),
            DecoderLm::Arpa(lm) => lm.start(start_with_nothing),
        }
    }

    fn score(&self, state: &ArpaContext, word: usize) -> (ArpaContext, f32) {
        match self {
            DecoderLm::Zero => (ArpaContext::default(), 0.0),
            DecoderLm::Arpa(lm) => lm.score(state, word),
        }
    }

    fn finish(&self, state: &ArpaContext) -> (ArpaContext, f32) {
        match self {
            DecoderLm::Zero => (ArpaContext::default(), 0.0),
            DecoderLm::Arpa(lm) => lm.finish(state),
        }
    }
}

/// TorchAudio 0.12's `CTCDecoder`: lexicon-constrained when built with a lexicon, lexicon-free
/// otherwise. Immutable once built; `decode` may run on many threads at once.
pub struct CtcDecoder<L: LanguageModel = DecoderLm> {
    tokens: Dictionary,
    words: Option<Dictionary>,
    trie: Option<Trie>,
    lm: L,
    beam: BeamOptions,
    nbest: usize,
    blank: usize,
    silence: usize,
    unk: usize,
}

impl CtcDecoder<DecoderLm> {
    /// Build like `ctc_decoder(lexicon, tokens, lm, ...)`, from parsed assets.
    pub fn new(
        lexicon: Option<&Lexicon>,
        tokens: Dictionary,
        lm: Option<Arc<ArpaModel>>,
        options: &CtcDecoderOptions,
    ) -> Result<Self, AudioError> {
        let words = word_dictionary(lexicon, lm.is_some(), &tokens, &options.unk_word)?;
        let lm = match (lm, &words) {
            (Some(model), Some(words)) => DecoderLm::Arpa(ArpaLm::new(model, words)),
            _ => DecoderLm::Zero,
        };
        Self::with_lm(lexicon, tokens, words, lm, options)
    }

    /// Build from file paths (tokens file, optional lexicon file, optional ARPA file).
    pub fn from_files(
        lexicon: Option<&str>,
        tokens: &str,
        lm: Option<&str>,
        options: &CtcDecoderOptions,
    ) -> Result<Self, AudioError> {
        let lexicon = lexicon.map(Lexicon::load).transpose()?;
        let tokens = Dictionary::load_tokens(tokens)?;
        let lm = lm.map(ArpaModel::load).transpose()?.map(Arc::new);
        Self::new(lexicon.as_ref(), tokens, lm, options)
    }
}

/// TorchAudio's word dictionary: the lexicon's words; without a lexicon but with an LM, the
/// tokens plus the unknown word; otherwise none.
fn word_dictionary(
    lexicon: Option<&Lexicon>,
    has_lm: bool,
    tokens: &Dictionary,
    unk_word: &str,
) -> Result<Option<Dictionary>, AudioError> {
    if let Some(lexicon) = lexicon {
        return Ok(Some(lexicon.word_dictionary()));
    }
    if !has_lm {
        return Ok(None);
    }
    let mut names: Vec<&str> = tokens.entries().iter().map(String::as_str).collect();
    if !tokens.contains(unk_word) {
        names.push(unk_word);
    }
    let mut dict = Dictionary::from_entries(&names)?;
    if let Some(unk) = dict.index(unk_word) {
        dict.set_default_index(unk);
    }
    Ok(Some(dict))
}

impl<L: LanguageModel> CtcDecoder<L> {
    /// Build with any language model; `words` is the dictionary whose indices `lm` scores
    /// (required with a lexicon).
    pub fn with_lm(
        lexicon: Option<&Lexicon>,
        tokens: Dictionary,
        words: Option<Dictionary>,
        lm: L,
        options: &CtcDecoderOptions,
    ) -> Result<Self, AudioError> {
        let blank = tokens.require(&options.blank_token)?;
        let silence = tokens.require(&options.sil_token)?;
        let beam = BeamOptions {
            beam_size: options.beam_size,
            beam_size_token: options.beam_size_token.unwrap_or(tokens.len()),
            beam_threshold: options.beam_threshold,
            lm_weight: options.lm_weight,
            word_score: options.word_score,
            unk_score: options.unk_score,
            sil_score: options.sil_score,
            log_add: options.log_add,
        };
        let (trie, unk) = match lexicon {
            Some(lexicon) => {
                let words = words.as_ref().ok_or_else(|| {
                    AudioError::Invalid("a lexicon decoder needs a word dictionary".into())
                })?;
                let trie = Trie::from_lexicon(lexicon, &tokens, words, &lm, silence)?;
                (Some(trie), words.require(&options.unk_word)?)
            }
            None => (None, 0),
        };
        Ok(CtcDecoder {
            tokens,
            words,
            trie,
            lm,
            beam,
            nbest: options.nbest,
            blank,
            silence,
            unk,
        })
    }

    /// Flashlight's raw results for one utterance: every final hypothesis, best first.
    pub fn decode_raw(
        &self,
        emissions: &[f32],
        frames: usize,
        num_tokens: usize,
    ) -> Vec<DecodeResult> {
        match &self.trie {
            Some(trie) => LexiconDecoder {
                options: self.beam,
                trie,
                lm: &self.lm,
                silence: self.silence,
                blank: self.blank,
                unk_word: self.unk,
            }
            .decode(emissions, frames, num_tokens),
            None => LexiconFreeDecoder {
                options: self.beam,
                lm: &self.lm,
                silence: self.silence,
                blank: self.blank,
            }
            .decode(emissions, frames, num_tokens),
        }
    }

    /// The `nbest` best hypotheses of one utterance (`frames` rows of `num_tokens`).
    pub fn decode(
        &self,
        emissions: &[f32],
        frames: usize,
        num_tokens: usize,
    ) -> Result<Vec<CtcHypothesis>, AudioError> {
        if num_tokens != self.tokens.len() {
            return Err(AudioError::Invalid(format!(
                "emissions have {num_tokens} tokens per frame, the token set has {}",
                self.tokens.len()
            )));
        }
        if emissions.len() < frames * num_tokens {
            return Err(AudioError::Invalid(format!(
                "emissions hold {} values, fewer than {frames} frames x {num_tokens} tokens",
                emissions.len()
            )));
        }
        let raw = self.decode_raw(emissions, frames, num_tokens);
        Ok(raw
            .iter()
            .take(self.nbest)
            .map(|r| self.hypothesis(r))
            .collect())
    }

    /// Decode a `(batch, frames, num_tokens)` row-major block in parallel; `lengths` gives each
    /// utterance's valid frames (all `frames` when `None`).
    pub fn decode_batch(
        &self,
        emissions: &[f32],
        batch: usize,
        frames: usize,
        num_tokens: usize,
        lengths: Option<&[usize]>,
    ) -> Result<Vec<Vec<CtcHypothesis>>, AudioError> {
        let stride = frames * num_tokens;
        check_batch(emissions.len(), batch, stride, frames, lengths)?;
        (0..batch)
            .into_par_iter()
            .map(|b| {
                let length = lengths.map_or(frames, |l| l[b]);
                self.decode(&emissions[b * stride..(b + 1) * stride], length, num_tokens)
            })
            .collect()
    }

    /// Token strings of token indices (TorchAudio's `idxs_to_tokens`).
    pub fn idxs_to_tokens(&self, idxs: &[usize]) -> Vec<String> {
        idxs.iter()
            .map(|&i| self.tokens.entry(i).unwrap_or("").to_string())
            .collect()
    }

    /// The token set, in the order of the emissions' columns.
    pub fn tokens(&self) -> &Dictionary {
        &self.tokens
    }

    /// The lexicon's words (lexicon decoding only).
    pub fn words(&self) -> Option<&Dictionary> {
        self.words.as_ref()
    }

    /// The lexicon trie (lexicon decoding only).
    pub fn trie(&self) -> Option<&Trie> {
        self.trie.as_ref()
    }

    /// The language model.
    pub fn lm(&self) -> &L {
        &self.lm
    }

    /// TorchAudio's conversion of a raw result.
    fn hypothesis(&self, raw: &DecodeResult) -> CtcHypothesis {
        let blank = self.blank as i32;
        let mut tokens = Vec::new();
        let mut timesteps = Vec::new();
        for (i, &token) in raw.tokens.iter().enumerate() {
            let new_run = i == 0 || token != raw.tokens[i - 1];
            if new_run && token != blank && token >= 0 {
                tokens.push(token as usize);
                timesteps.push(i);
            }
        }
        let words = match &self.words {
            Some(dict) if self.trie.is_some() => raw
                .words
                .iter()
                .filter(|&&w| w >= 0)
                .map(|&w| dict.entry(w as usize).unwrap_or("").to_string())
                .collect(),
            _ => Vec::new(),
        };
        CtcHypothesis {
            tokens,
            words,
            score: raw.score,
            timesteps,
        }
    }
}

/// The checks a batched decode makes before it slices `emissions` per utterance.
fn check_batch(
    len: usize,
    batch: usize,
    stride: usize,
    frames: usize,
    lengths: Option<&[usize]>,
) -> Result<(), AudioError> {
    if len < batch * stride {
        return Err(AudioError::Invalid(
            "emissions shorter than batch * frames * tokens".into(),
        ));
    }
    if let Some(lengths) = lengths {
        if lengths.len() != batch || lengths.iter().any(|&l| l > frames) {
            return Err(AudioError::Invalid(
                "lengths must have one entry per utterance, each at most frames".into(),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
