#![doc = include_str!("../README.md")]
mod encoding;
mod error;
mod json;
mod normalizer;
mod pretokenizer;
mod protected;
mod tokenizer;
mod unicode;
mod vocab;
mod wordpiece;

pub use encoding::{Encoding, Padding, Side, Truncation, TruncationStrategy};
pub use error::{Error, Result};
pub use normalizer::{BertNormalizer, Normalized};
pub use pretokenizer::for_each_word;
pub use tokenizer::{BertTokenizer, Options};
pub use vocab::Vocab;
pub use wordpiece::WordPiece;
