//! CTC decoding for speech recognition, in pure Rust.
//!
//! The beam search follows Flashlight's lexicon-constrained and lexicon-free decoders (the
//! algorithm behind TorchAudio 0.12's `ctc_decoder`); emissions are plain row-major `&[f32]`
//! slices of shape `(frames, tokens)`. Pieces, one concern per module:
//!
//! - [`dictionary`]: the tokens file and the lexicon file (Flashlight formats);
//! - [`trie`]: the lexicon trie with word labels and smeared LM look-ahead scores;
//! - [`lm`]: the language-model interface, the zero LM and a native KenLM ARPA reader;
//! - [`decoder`]: the lexicon and lexicon-free beam searches, the greedy decoder, and
//!   [`CtcDecoder`], the TorchAudio-shaped front end with batched decoding across cores.
//!
//! ```
//! use ember_audio::{CtcDecoder, CtcDecoderOptions, Dictionary, Lexicon};
//!
//! let tokens = Dictionary::parse_tokens("-\n|\na\nb\n").unwrap();
//! let lexicon = Lexicon::parse("ab a b |\nba b a |\n").unwrap();
//! let decoder = CtcDecoder::new(Some(&lexicon), tokens, None, &CtcDecoderOptions::default()).unwrap();
//! // 4 frames x 4 tokens (-, |, a, b) of log-probabilities: "b a |"
//! let lo = -5.0f32;
//! let emissions = [lo, lo, lo, -0.1, lo, lo, -0.1, lo, -0.1, lo, lo, lo, lo, -0.1, lo, lo];
//! let best = &decoder.decode(&emissions, 4, 4).unwrap()[0];
//! assert_eq!(best.words, vec!["ba"]);
//! ```

pub mod decoder;
pub mod dictionary;
pub mod error;
pub mod lm;
pub mod trie;

pub use decoder::{CtcDecoder, CtcDecoderOptions, CtcHypothesis, DecodeResult};
pub use dictionary::{Dictionary, Lexicon};
pub use error::AudioError;
pub use lm::{arpa::ArpaLm, LanguageModel, ZeroLm};
pub use trie::Trie;

/// The README's examples, run as doc tests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
