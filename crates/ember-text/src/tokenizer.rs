//! The BERT tokenizer: protected tokens → BertNormalizer → BertPreTokenizer → WordPiece →
//! truncation → [CLS]/[SEP] → padding, and back again with `decode`.
use crate::encoding::{truncate, Encoding, Padding, Truncation};
use crate::error::{Error, Result};
use crate::normalizer::{BertNormalizer, Normalized};
use crate::pretokenizer::for_each_word;
use crate::protected::{Piece, Protected};
use crate::vocab::Vocab;
use crate::wordpiece::WordPiece;
use rayon::prelude::*;
use std::cell::RefCell;
use std::path::Path;

/// How to build a tokenizer from a vocabulary; the defaults are HuggingFace's
/// `BertWordPieceTokenizer` defaults.
#[derive(Clone, Debug)]
pub struct Options {
    /// Text normalisation before splitting into words.
    pub normalizer: BertNormalizer,
    /// The token for words not in the vocabulary (it must be in it).
    pub unk_token: String,
    /// The token that opens an encoding.
    pub cls_token: String,
    /// The token that closes each input of an encoding.
    pub sep_token: String,
    /// The padding token.
    pub pad_token: String,
    /// The mask token (a special token `decode` can skip).
    pub mask_token: String,
    /// The prefix of pieces that continue a word (`##`).
    pub continuing_subword_prefix: String,
    /// Words with more characters than this become one unknown token.
    pub max_input_chars_per_word: usize,
    /// Recognise the special tokens that are in the vocabulary anywhere in the raw text, as
    /// HuggingFace does; TorchText's BERTTokenizer does not.
    pub match_special_tokens: bool,
    /// Whole whitespace-separated words kept as they are (not lowercased, not split).
    pub never_split: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            normalizer: BertNormalizer::new(true, None),
            unk_token: "[UNK]".into(),
            cls_token: "[CLS]".into(),
            sep_token: "[SEP]".into(),
            pad_token: "[PAD]".into(),
            mask_token: "[MASK]".into(),
            continuing_subword_prefix: "##".into(),
            max_input_chars_per_word: 100,
            match_special_tokens: true,
            never_split: Vec::new(),
        }
    }
}

/// A BERT WordPiece tokenizer: see the crate docs for the pipeline.
#[derive(Clone, Debug)]
pub struct BertTokenizer {
    normalizer: BertNormalizer,
    model: WordPiece,
    protected: Protected,
    /// Ids that `decode(skip_special_tokens=true)` drops.
    special_ids: Vec<u32>,
    cls_id: Option<u32>,
    sep_id: Option<u32>,
    /// Truncation applied by `encode` and `encode_batch`, if any.
    pub truncation: Option<Truncation>,
    /// Padding applied by `encode` and `encode_batch` (to the batch's longest), if any.
    pub padding: Option<Padding>,
}

/// Per-thread buffers reused from one input to the next.
#[derive(Default)]
struct Scratch {
    normalized: Normalized,
    pieces: Vec<(u32, usize, usize)>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl BertTokenizer {
    /// A tokenizer over `vocab`, which must hold `options.unk_token`.
    pub fn new(vocab: Vocab, options: &Options) -> Result<Self> {
        let unk_id = vocab
            .get(&options.unk_token)
            .ok_or_else(|| Error::Invalid(format!("the vocabulary has no unknown token '{}'", options.unk_token)))?;
        let mut protected = Protected::default();
        let mut special_ids = Vec::new();
        let specials = [&options.unk_token, &options.sep_token, &options.cls_token, &options.pad_token, &options.mask_token];
        for token in specials {
            if let Some(id) = vocab.get(token) {
                special_ids.push(id);
                if options.match_special_tokens {
                    protected.add(token, id, false);
                }
            }
        }
        for token in &options.never_split {
            protected.add(token, vocab.get(token).unwrap_or(unk_id), true);
        }
        Ok(BertTokenizer {
            normalizer: options.normalizer,
            cls_id: vocab.get(&options.cls_token),
            sep_id: vocab.get(&options.sep_token),
            model: WordPiece {
                vocab,
                unk_id,
                prefix: options.continuing_subword_prefix.clone(),
                max_input_chars_per_word: options.max_input_chars_per_word,
            },
            protected,
            special_ids,
            truncation: None,
            padding: None,
        })
    }

    /// From BERT's `vocab.txt`.
    pub fn from_vocab_file(path: impl AsRef<Path>, options: &Options) -> Result<Self> {
        let path = path.as_ref();
        let vocab = Vocab::from_file(path, &options.continuing_subword_prefix)?;
        Self::new(vocab, options).map_err(|e| Error::Invalid(format!("{}: {e}", path.display())))
    }

    pub(crate) fn from_parts(
        normalizer: BertNormalizer,
        model: WordPiece,
        protected: Protected,
        special_ids: Vec<u32>,
        cls_sep: (Option<u32>, Option<u32>),
    ) -> Self {
        BertTokenizer { normalizer, model, protected, special_ids, cls_id: cls_sep.0, sep_id: cls_sep.1, truncation: None, padding: None }
    }

    /// The vocabulary.
    pub fn vocab(&self) -> &Vocab {
        &self.model.vocab
    }

    /// The id of `token`, if it is in the vocabulary.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.model.vocab.get(token)
    }

    /// The token with id `id`, if there is one.
    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        self.model.vocab.token(id)
    }

    /// The normaliser options.
    pub fn normalizer(&self) -> BertNormalizer {
        self.normalizer
    }

    /// The token strings of an encoding; padding shows as the padding's `pad_token`,
    /// whatever its id.
    pub fn tokens(&self, encoding: &Encoding) -> Vec<&str> {
        let pad = self.padding.as_ref().map_or("[PAD]", |p| &p.pad_token);
        let token = |(&id, &attend): (&u32, &u32)| if attend == 0 { pad } else { self.id_to_token(id).unwrap_or("") };
        encoding.ids.iter().zip(&encoding.attention_mask).map(token).collect()
    }

    /// Encodes one sequence or a pair; with `add_special_tokens`, as `[CLS] a [SEP] b [SEP]`.
    pub fn encode(&self, first: &str, second: Option<&str>, add_special_tokens: bool) -> Result<Encoding> {
        let mut encoding = self.encode_unpadded(first, second, add_special_tokens)?;
        if let Some(p) = &self.padding {
            encoding.pad(p.target(encoding.len()), p);
        }
        Ok(encoding)
    }

    /// Encodes a batch on all the threads of the current rayon pool; padding (if set) applies
    /// to the batch as a whole.
    pub fn encode_batch<S: AsRef<str> + Sync>(&self, inputs: &[(S, Option<S>)], add_special_tokens: bool) -> Result<Vec<Encoding>> {
        let encodings = inputs.par_iter().with_min_len(8).map(|input| self.encode_input(input, add_special_tokens)).collect::<Result<_>>()?;
        Ok(self.pad_batch(encodings))
    }

    /// `encode_batch` on the calling thread, for batches too small to be worth a hand-off.
    pub fn encode_batch_serial<S: AsRef<str>>(&self, inputs: &[(S, Option<S>)], add_special_tokens: bool) -> Result<Vec<Encoding>> {
        let encodings = inputs.iter().map(|input| self.encode_input(input, add_special_tokens)).collect::<Result<_>>()?;
        Ok(self.pad_batch(encodings))
    }

    fn encode_input<S: AsRef<str>>(&self, (a, b): &(S, Option<S>), add_special_tokens: bool) -> Result<Encoding> {
        self.encode_unpadded(a.as_ref(), b.as_ref().map(|b| b.as_ref()), add_special_tokens)
    }

    fn pad_batch(&self, mut encodings: Vec<Encoding>) -> Vec<Encoding> {
        if let Some(p) = &self.padding {
            let target = p.target(encodings.iter().map(Encoding::len).max().unwrap_or(0));
            encodings.iter_mut().for_each(|e| e.pad(target, p));
        }
        encodings
    }

    /// Ids of each text on its own (no special tokens, truncation or padding), in parallel.
    pub fn encode_ids_batch<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Vec<Vec<u32>> {
        texts.par_iter().with_min_len(8).map(|t| self.encode_ids(t.as_ref())).collect()
    }

    fn encode_unpadded(&self, first: &str, second: Option<&str>, add_special_tokens: bool) -> Result<Encoding> {
        let mut a = self.encode_sequence(first, 0);
        let mut b = second.map(|s| self.encode_sequence(s, 1));
        if let Some(t) = &self.truncation {
            let reserved = if add_special_tokens { 2 + b.is_some() as usize } else { 0 };
            truncate(&mut a, b.as_mut(), t, reserved)?;
        }
        if !add_special_tokens {
            if let Some(b) = b {
                a.append(b);
            }
            return Ok(a);
        }
        let (cls, sep) = self.cls_sep()?;
        let mut out = Encoding::default();
        out.push(cls, 0, (0, 0), true, true);
        out.append(a);
        out.push(sep, 0, (0, 0), true, true);
        if let Some(b) = b {
            out.append(b);
            out.push(sep, 1, (0, 0), true, true);
        }
        Ok(out)
    }

    fn cls_sep(&self) -> Result<(u32, u32)> {
        match (self.cls_id, self.sep_id) {
            (Some(c), Some(s)) => Ok((c, s)),
            _ => Err(Error::Value("add_special_tokens needs the [CLS] and [SEP] tokens, which the vocabulary lacks".into())),
        }
    }

    /// Tokens of one sequence, without special tokens, truncation or padding.
    pub fn encode_sequence(&self, text: &str, type_id: u32) -> Encoding {
        let mut encoding = Encoding::default();
        self.for_each_token(text, |id, offsets| encoding.push(id, type_id, offsets, false, true));
        encoding
    }

    /// Ids of one sequence, without special tokens, truncation or padding.
    pub fn encode_ids(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::with_capacity(text.len() / 4);
        self.for_each_token(text, |id, _| ids.push(id));
        ids
    }

    /// Calls `emit(id, (start, end))` for each token of `text`, offsets in characters.
    fn for_each_token(&self, text: &str, mut emit: impl FnMut(u32, (u32, u32))) {
        SCRATCH.with_borrow_mut(|scratch| {
            self.protected.split(text, |piece| match piece {
                Piece::Text(t, first_char) => self.tokenize_text(t, first_char, scratch, &mut emit),
                Piece::Token(id, start, end) => emit(id, (start, end)),
            })
        });
    }

    fn tokenize_text(&self, text: &str, first_char: u32, scratch: &mut Scratch, emit: &mut impl FnMut(u32, (u32, u32))) {
        let Scratch { normalized, pieces } = scratch;
        self.normalizer.normalize(text, first_char, normalized);
        let (norm, origin) = (&normalized.text, &normalized.origin);
        for_each_word(norm, |start, end| {
            pieces.clear();
            self.model.tokenize(&norm[start..end], pieces);
            for &(id, s, e) in pieces.iter() {
                emit(id, (origin[start + s], origin[start + e - 1] + 1));
            }
        });
    }

    /// Word strings of `text` after normalisation and pre-tokenisation, without WordPiece.
    pub fn pre_tokenize(&self, text: &str) -> Vec<String> {
        let mut normalized = Normalized::default();
        self.normalizer.normalize(text, 0, &mut normalized);
        let mut words = Vec::new();
        for_each_word(&normalized.text, |s, e| words.push(normalized.text[s..e].to_string()));
        words
    }

    /// Joins WordPiece tokens back into text: `##` pieces glue to the previous token, others
    /// get a space, and spaces before common punctuation and contractions are removed.
    /// Ids outside the vocabulary are skipped.
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> String {
        let mut out = String::new();
        let mut first = true;
        for &id in ids {
            let Some(token) = self.id_to_token(id) else { continue };
            if skip_special_tokens && self.special_ids.contains(&id) {
                continue;
            }
            let piece = match (first, token.strip_prefix(&*self.model.prefix)) {
                (true, _) => token.to_string(),
                (false, Some(rest)) => rest.to_string(),
                (false, None) => format!(" {token}"),
            };
            out.push_str(&cleanup(&piece));
            first = false;
        }
        out
    }
}

/// Removes the spaces tokenisation put before punctuation and inside English contractions.
fn cleanup(piece: &str) -> String {
    const RULES: [(&str, &str); 11] = [
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" do not", " don't"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ];
    if !piece.contains(' ') {
        return piece.to_string();
    }
    RULES.iter().fold(piece.to_string(), |s, (from, to)| s.replace(from, to))
}
