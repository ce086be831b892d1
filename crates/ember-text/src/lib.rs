//! BERT's WordPiece tokenizer in pure Rust, behaving as HuggingFace `tokenizers`' BERT
//! pipeline does: `BertNormalizer` → `BertPreTokenizer` → `WordPiece`, then truncation, the
//! `[CLS]`/`[SEP]` frame and padding. Offsets are character indices into the original string.
//!
//! ```
//! use ember_text::{BertTokenizer, Options, Vocab};
//! let vocab = Vocab::from_lines("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\n!\n##s", "##");
//! let tok = BertTokenizer::new(vocab, &Options::default()).unwrap();
//! let enc = tok.encode("Hello worlds!", None, true).unwrap();
//! assert_eq!(tok.tokens(&enc), ["[CLS]", "hello", "world", "##s", "!", "[SEP]"]);
//! assert_eq!(enc.offsets[3], (11, 12));
//! ```
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
