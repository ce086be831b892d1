//! A native reader and scorer for n-gram models in the ARPA text format (what KenLM builds
//! its binaries from).
//!
//! Scores are log10 probabilities with standard back-off: the longest n-gram ending in the word
//! whose history matches the context gives the probability, plus the back-off weights of every
//! longer context that did not match. Words missing from the vocabulary score as `<unk>`; a
//! model without `<unk>` gets it with log10 probability -100, as KenLM does.
//!
//! Each order's n-grams sit in one hash table keyed by a 64-bit hash of their word ids, as in
//! KenLM's probing structure: no key is stored, so an n-gram costs about 20 bytes. A query
//! absent from the model matches a present n-gram only if their 64-bit hashes collide (about
//! one chance in 2^64 / n for n n-grams of that order).

use crate::dictionary::Dictionary;
use crate::error::AudioError;
use crate::lm::LanguageModel;
use rustc_hash::FxHashMap;
use std::io::BufRead;
use std::sync::Arc;

/// log10 probability KenLM gives `<unk>` when the model lacks it.
pub const MISSING_UNK_LOG10: f32 = -100.0;

/// The highest n-gram order read (KenLM's default build limit, which Flashlight's decoders use).
pub const MAX_ORDER: usize = 6;

/// What an ARPA state remembers: the last `order - 1` words, inline. A search makes a state per
/// new LM query, so a heap vector here cost an allocation (and ~16 bytes) each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ArpaContext {
    len: u8,
    ids: [u32; MAX_ORDER - 1],
}

impl ArpaContext {
    /// `ids` holds at most `MAX_ORDER - 1` words (the parser refuses longer n-grams).
    fn from_ids(ids: &[u32]) -> Self {
        let mut context = ArpaContext::default();
        context.ids[..ids.len()].copy_from_slice(ids);
        context.len = ids.len() as u8;
        context
    }
}

impl std::ops::Deref for ArpaContext {
    type Target = [u32];

    fn deref(&self) -> &[u32] {
        &self.ids[..self.len as usize]
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    log10_prob: f32,
    log10_backoff: f32,
}

/// A parsed ARPA model, with its own vocabulary.
#[derive(Debug, Clone)]
pub struct ArpaModel {
    vocab: FxHashMap<String, u32>,
    /// `ngrams[k]` holds the (k+1)-grams, keyed by `ngram_key` of their vocabulary ids.
    ngrams: Vec<FxHashMap<u64, Entry>>,
    unk: u32,
    sentence_start: u32,
    sentence_end: u32,
}

impl ArpaModel {
    /// Read an ARPA file.
    /// Read an ARPA file, line by line (the text is never held whole in memory).
    pub fn load(path: &str) -> Result<Self, AudioError> {
        let io_error = |e: std::io::Error| AudioError::Io {
            path: path.to_string(),
            message: e.to_string(),
        };
        let file = std::fs::File::open(path).map_err(io_error)?;
        let bytes = file.metadata().map_err(io_error)?.len();
        let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
        let mut parser = ArpaParser::for_bytes(bytes);
        let mut line = String::new();
        let mut number = 0usize;
        loop {
            line.clear();
            if reader.read_line(&mut line).map_err(io_error)? == 0 {
                break;
            }
            number += 1;
            parser
                .line(line.trim())
                .map_err(|message| AudioError::Parse {
                    what: "ARPA file".into(),
                    line: number,
                    message,
                })?;
        }
        parser.finish()
    }

    /// Parse the text of an ARPA file.
    pub fn parse(text: &str) -> Result<Self, AudioError> {
        let mut parser = ArpaParser::for_bytes(text.len() as u64);
        for (number, line) in text.lines().enumerate() {
            parser
                .line(line.trim())
                .map_err(|message| AudioError::Parse {
                    what: "ARPA file".into(),
                    line: number + 1,
                    message,
                })?;
        }
        parser.finish()
    }

    /// The highest n-gram order.
    pub fn order(&self) -> usize {
        self.ngrams.len()
    }

    /// The vocabulary id of `word` (`<unk>`'s id for unknown words).
    pub fn word_id(&self, word: &str) -> u32 {
        self.vocab.get(word).copied().unwrap_or(self.unk)
    }

    /// The context holding only `<s>`.
    pub fn begin_sentence(&self) -> ArpaContext {
        ArpaContext::from_ids(&[self.sentence_start])
    }

    /// The id of `</s>`.
    pub fn end_sentence_id(&self) -> u32 {
        self.sentence_end
    }

    /// log10 P(word | context) with back-off, and the context after `word` (at most order-1
    /// most recent words).
    pub fn score_id(&self, context: &[u32], word: u32) -> (ArpaContext, f32) {
        let keep = context.len().min(self.order() - 1);
        let mut key = [0u32; MAX_ORDER];
        key[..keep].copy_from_slice(&context[context.len() - keep..]);
        key[keep] = word;
        let key = &key[..keep + 1];
        let score = self.backed_off(key);
        let next_keep = key.len().min(self.order() - 1);
        (ArpaContext::from_ids(&key[key.len() - next_keep..]), score)
    }

    /// `key` = history ++ [word]; walks from the full history down to the unigram.
    fn backed_off(&self, key: &[u32]) -> f32 {
        let mut backoff = 0.0f32;
        for start in 0..key.len() {
            let ngram = &key[start..];
            if let Some(entry) = self.ngrams[ngram.len() - 1].get(&ngram_key(ngram)) {
                return backoff + entry.log10_prob;
            }
            let history = &key[start..key.len() - 1];
            if let Some(entry) = self.ngrams[history.len() - 1].get(&ngram_key(history)) {
                backoff += entry.log10_backoff;
            }
        }
        unreachable!("every vocabulary id has a unigram")
    }

    /// log10 probability of a whole sentence, `<s>` and `</s>` included (handy for checks).
    pub fn sentence_log10(&self, words: &[&str]) -> f32 {
        let mut context = self.begin_sentence();
        let mut total = 0.0;
        for word in words {
            let (next, score) = self.score_id(&context, self.word_id(word));
            total += score;
            context = next;
        }
        total + self.score_id(&context, self.sentence_end).1
    }
}

/// The shortest line an n-gram can take (`p w` and a newline).
const MIN_NGRAM_LINE_BYTES: u64 = 4;

#[derive(Default)]
struct ArpaParser {
    /// The most n-grams the text can hold: the header's counts are reserved up to this, so a
    /// header that claims more than the file holds cannot exhaust memory.
    max_ngrams: usize,
    counts: Vec<usize>,
    section: Section,
    vocab: FxHashMap<String, u32>,
    ngrams: Vec<FxHashMap<u64, Entry>>,
}

#[derive(Default, PartialEq)]
enum Section {
    #[default]
    Preamble,
    Data,
    Ngrams(usize),
    End,
}

impl ArpaParser {
    fn for_bytes(bytes: u64) -> Self {
        let max_ngrams = usize::try_from(bytes / MIN_NGRAM_LINE_BYTES).unwrap_or(usize::MAX);
        ArpaParser { max_ngrams, ..Default::default() }
    }

    fn line(&mut self, line: &str) -> Result<(), String> {
        if line.is_empty() || self.section == Section::End {
            return Ok(());
        }
        if line == "\\data\\" {
            self.section = Section::Data;
            return Ok(());
        }
        if line == "\\end\\" {
            self.section = Section::End;
            return Ok(());
        }
        if let Some(order) = section_order(line) {
            if order == 0 || order > self.counts.len() {
                return Err(format!("section {line} not announced in \\data\\"));
            }
            self.section = Section::Ngrams(order);
            while self.ngrams.len() < order {
                let count = self.counts[self.ngrams.len()].min(self.max_ngrams);
                self.ngrams.push(FxHashMap::with_capacity_and_hasher(
                    count,
                    Default::default(),
                ));
            }
            return Ok(());
        }
        match self.section {
            Section::Preamble => Ok(()),
            Section::Data => self.count_line(line),
            Section::Ngrams(order) => self.ngram_line(order, line),
            Section::End => Ok(()),
        }
    }

    fn count_line(&mut self, line: &str) -> Result<(), String> {
        let rest = line
            .strip_prefix("ngram ")
            .ok_or_else(|| format!("bad count line '{line}'"))?;
        let (order, count) = rest
            .split_once('=')
            .ok_or_else(|| format!("bad count line '{line}'"))?;
        let order: usize = order
            .trim()
            .parse()
            .map_err(|_| format!("bad order in '{line}'"))?;
        let count: usize = count
            .trim()
            .parse()
            .map_err(|_| format!("bad count in '{line}'"))?;
        if order != self.counts.len() + 1 {
            return Err(format!("n-gram orders out of sequence at '{line}'"));
        }
        if order > MAX_ORDER {
            return Err(format!(
                "n-grams of order {order}: models up to order {MAX_ORDER} are supported (KenLM's default limit)"
            ));
        }
        self.counts.push(count);
        Ok(())
    }

    fn ngram_line(&mut self, order: usize, line: &str) -> Result<(), String> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() != order + 1 && fields.len() != order + 2 {
            return Err(format!("expected {order} words in '{line}'"));
        }
        let log10_prob: f32 = fields[0]
            .parse()
            .map_err(|_| format!("bad probability in '{line}'"))?;
        let log10_backoff: f32 = match fields.get(order + 1) {
            Some(text) => text
                .parse()
                .map_err(|_| format!("bad back-off in '{line}'"))?,
            None => 0.0,
        };
        let mut ids = Vec::with_capacity(order);
        for word in &fields[1..=order] {
            ids.push(self.word_id(order, word)?);
        }
        self.ngrams[order - 1].insert(
            ngram_key(&ids),
            Entry {
                log10_prob,
                log10_backoff,
            },
        );
        Ok(())
    }

    fn word_id(&mut self, order: usize, word: &str) -> Result<u32, String> {
        if let Some(&id) = self.vocab.get(word) {
            return Ok(id);
        }
        if order != 1 {
            return Err(format!("word '{word}' has no unigram"));
        }
        let id = self.vocab.len() as u32;
        self.vocab.insert(word.to_string(), id);
        Ok(id)
    }

    fn finish(mut self) -> Result<ArpaModel, AudioError> {
        let invalid = |m: String| AudioError::Parse {
            what: "ARPA file".into(),
            line: 0,
            message: m,
        };
        if self.counts.is_empty() || self.ngrams.is_empty() {
            return Err(invalid("no \\data\\ section or no 1-grams".into()));
        }
        for (k, table) in self.ngrams.iter().enumerate() {
            if table.len() != self.counts[k] {
                return Err(invalid(format!(
                    "\\data\\ announces {} {}-grams, the file has {}",
                    self.counts[k],
                    k + 1,
                    table.len()
                )));
            }
        }
        while self.ngrams.len() < self.counts.len() {
            self.ngrams.push(FxHashMap::default());
        }
        let unk = match self.vocab.get("<unk>") {
            Some(&id) => id,
            None => {
                let id = self.vocab.len() as u32;
                self.vocab.insert("<unk>".into(), id);
                let entry = Entry {
                    log10_prob: MISSING_UNK_LOG10,
                    log10_backoff: 0.0,
                };
                self.ngrams[0].insert(ngram_key(&[id]), entry);
                id
            }
        };
        let sentence_start = self.vocab.get("<s>").copied().unwrap_or(unk);
        let sentence_end = self.vocab.get("</s>").copied().unwrap_or(unk);
        Ok(ArpaModel {
            vocab: self.vocab,
            ngrams: self.ngrams,
            unk,
            sentence_start,
            sentence_end,
        })
    }
}

/// The table key of an n-gram: its word ids folded through splitmix64's mixer, so distinct
/// n-grams get unrelated 64-bit keys.
fn ngram_key(ids: &[u32]) -> u64 {
    ids.iter()
        .fold(0x9E37_79B9_7F4A_7C15, |h, &id| mix64(h ^ id as u64))
}

fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn section_order(line: &str) -> Option<usize> {
    line.strip_prefix('\\')?
        .strip_suffix("-grams:")?
        .parse()
        .ok()
}

/// An ARPA model bound to a decoder's word dictionary (Flashlight's `KenLM` wrapper): word
/// indices of the dictionary are mapped once to the model's vocabulary.
#[derive(Debug, Clone)]
pub struct ArpaLm {
    model: Arc<ArpaModel>,
    user_to_model: Vec<u32>,
}

impl ArpaLm {
    /// Bind `model` to `words` (the decoder's word dictionary).
    pub fn new(model: Arc<ArpaModel>, words: &Dictionary) -> Self {
        let user_to_model = words.entries().iter().map(|w| model.word_id(w)).collect();
        ArpaLm {
            model,
            user_to_model,
        }
    }

    /// Read an ARPA file and bind it to `words`.
    pub fn load(path: &str, words: &Dictionary) -> Result<Self, AudioError> {
        Ok(Self::new(Arc::new(ArpaModel::load(path)?), words))
    }

    /// The n-gram model this scorer reads.
    pub fn model(&self) -> &ArpaModel {
        &self.model
    }
}

impl LanguageModel for ArpaLm {
    type State = ArpaContext;

    fn start(&self, start_with_nothing: bool) -> ArpaContext {
        if start_with_nothing {
            ArpaContext::default()
        } else {
            self.model.begin_sentence()
        }
    }

    fn score(&self, state: &ArpaContext, word: usize) -> (ArpaContext, f32) {
        let id = self
            .user_to_model
            .get(word)
            .copied()
            .unwrap_or(self.model.unk);
        self.model.score_id(state, id)
    }

    fn finish(&self, state: &ArpaContext) -> (ArpaContext, f32) {
        self.model.score_id(state, self.model.sentence_end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const TINY: &str = "\\data\\
ngram 1=5
ngram 2=4

\\1-grams:
-1.0\t<s>\t-0.5
-0.7\t</s>
-0.6\thello\t-0.3
-0.9\tworld\t-0.2
-2.0\t<unk>

\\2-grams:
-0.2\t<s> hello
-0.1\thello world
-0.4\tworld </s>
-1.5\t<s> world

\\end\\
";

    fn close(a: f32, b: f32) {
        assert!((a - b).abs() < 1e-6, "{a} vs {b}");
    }

    #[test]
    fn parses_counts_and_scores_with_backoff() {
        let m = ArpaModel::parse(TINY).unwrap();
        assert_eq!(m.order(), 2);
        let s = m.begin_sentence();
        let hello = m.word_id("hello");
        let world = m.word_id("world");
        let (after_hello, p) = m.score_id(&s, hello);
        close(p, -0.2);
        assert_eq!(*after_hello, [hello]);
        close(m.score_id(&after_hello, world).1, -0.1);
        // "hello hello" is missing: back-off(hello) + P(hello)
        close(m.score_id(&after_hello, hello).1, -0.3 + -0.6);
        // "world </s>" exists
        close(m.score_id(&[world], m.end_sentence_id()).1, -0.4);
        // "hello </s>" missing: -0.3 + -0.7
        close(m.score_id(&[hello], m.end_sentence_id()).1, -1.0);
        // unknown words score as <unk>, backing off from <s>
        close(m.score_id(&s, m.word_id("zebra")).1, -0.5 + -2.0);
        close(m.sentence_log10(&["hello", "world"]), -0.2 - 0.1 - 0.4);
    }

    #[test]
    fn loads_from_a_file() {
        let path = std::env::temp_dir().join(format!("ember-audio-{}.arpa", std::process::id()));
        std::fs::write(&path, TINY).unwrap();
        let m = ArpaModel::load(path.to_str().unwrap()).unwrap();
        std::fs::remove_file(&path).unwrap();
        close(m.sentence_log10(&["hello", "world"]), -0.7);
        assert!(matches!(
            ArpaModel::load("/nonexistent.arpa"),
            Err(AudioError::Io { .. })
        ));
    }

    #[test]
    fn missing_unk_is_added_and_counts_are_checked() {
        let text = "\\data\\\nngram 1=2\n\\1-grams:\n-0.5 a\n-0.5 </s>\n\\end\\\n";
        let m = ArpaModel::parse(text).unwrap();
        close(m.score_id(&[], m.word_id("b")).1, MISSING_UNK_LOG10);
        let bad = "\\data\\\nngram 1=3\n\\1-grams:\n-0.5 a\n\\end\\\n";
        assert!(ArpaModel::parse(bad).is_err());
    }

    #[test]
    fn a_header_claiming_more_ngrams_than_the_file_holds_reserves_no_more() {
        // 6e11 unigrams would be terabytes of table: the text's size bounds the reservation and
        // the count check refuses the file.
        let text = "\\data\\\nngram 1=600000000000\n\\1-grams:\n-0.5 a\n\\end\\\n";
        let err = ArpaModel::parse(text).unwrap_err();
        assert!(err.to_string().contains("600000000000"), "{err}");
    }

    #[test]
    fn orders_above_the_limit_are_refused() {
        let counts: String = (1..=MAX_ORDER + 1)
            .map(|k| format!("ngram {k}=1\n"))
            .collect();
        let err = ArpaModel::parse(&format!("\\data\\\n{counts}")).unwrap_err();
        assert!(err.to_string().contains("up to order 6"), "{err}");
    }

    #[test]
    fn trigram_backs_off_through_two_levels() {
        let text = "\\data\\\nngram 1=3\nngram 2=2\nngram 3=1\n\\1-grams:\n-1 a -0.1\n-1 b -0.2\n-1 c\n\\2-grams:\n-0.5 a b -0.05\n-0.4 b c\n\\3-grams:\n-0.3 a b c\n\\end\\\n";
        let m = ArpaModel::parse(text).unwrap();
        let (a, b, c) = (m.word_id("a"), m.word_id("b"), m.word_id("c"));
        close(m.score_id(&[a, b], c).1, -0.3);
        // "b a b" -> no trigram "a b"?  context [b,a], word b: trigram missing, bo(b a) missing=0,
        // bigram "a b" exists -> -0.5
        close(m.score_id(&[b, a], b).1, -0.5);
        // context [a,b], word a: trigram missing, bo(a b)=-0.05, bigram "b a" missing, bo(b)=-0.2,
        // unigram a=-1
        close(m.score_id(&[a, b], a).1, -0.05 - 0.2 - 1.0);
        // state keeps order-1 words
        assert_eq!(*m.score_id(&[a, b], c).0, [b, c]);
    }
}
