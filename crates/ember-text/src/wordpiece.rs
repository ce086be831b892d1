//! WordPiece: greedy longest-match-first split of one word into vocabulary pieces.
use crate::vocab::Vocab;

/// The WordPiece model: a vocabulary, its unknown token and continuation prefix.
#[derive(Clone, Debug)]
pub struct WordPiece {
    /// The vocabulary.
    pub vocab: Vocab,
    /// Id of the unknown token.
    pub unk_id: u32,
    /// Prefix of continuation pieces (`##`).
    pub prefix: String,
    /// Words with more characters than this become a single unknown token.
    pub max_input_chars_per_word: usize,
}

impl WordPiece {
    /// Appends the pieces of `word` to `out` as (id, start byte, end byte) within the word.
    /// A word with any part not in the vocabulary becomes one unknown token spanning it all.
    pub fn tokenize(&self, word: &str, out: &mut Vec<(u32, usize, usize)>) {
        let first = out.len();
        if self.too_long(word) || !self.split(word, out) {
            out.truncate(first);
            out.push((self.unk_id, 0, word.len()));
        }
    }

    fn too_long(&self, word: &str) -> bool {
        word.len() > self.max_input_chars_per_word && word.chars().count() > self.max_input_chars_per_word
    }

    fn split(&self, word: &str, out: &mut Vec<(u32, usize, usize)>) -> bool {
        let mut start = 0;
        while start < word.len() {
            let continuation = start > 0;
            let mut end = floor_char_boundary(word, (start + self.vocab.longest_piece(continuation)).min(word.len()));
            let id = loop {
                if end <= start {
                    return false;
                }
                if let Some(id) = self.vocab.piece(&word[start..end], continuation) {
                    break id;
                }
                end = floor_char_boundary(word, end - 1);
            };
            out.push((id, start, end));
            start = end;
        }
        true
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
