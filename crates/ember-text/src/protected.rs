//! Tokens recognised in the raw text before normalisation and kept whole: the special tokens
//! (`[CLS]`, `[MASK]` ...) as HuggingFace matches them anywhere, and TorchText's `never_split`
//! tokens, which count only as whole whitespace-separated words.

#[derive(Clone, Debug)]
struct Entry {
    text: Box<str>,
    id: u32,
    whole_word: bool,
}

/// The protected tokens of a tokenizer, matched longest first.
#[derive(Clone, Debug, Default)]
pub struct Protected {
    /// Longest first, so the first entry that matches at a position is the longest match.
    entries: Vec<Entry>,
    /// First bytes of the entries: most positions are rejected by one table lookup.
    starts: Vec<bool>,
}

/// A part of the input: plain text (with the index of its first character), or a protected
/// token (with its character range).
pub enum Piece<'a> {
    /// Plain text and the index of its first character.
    Text(&'a str, u32),
    /// A protected token: its id and its (start, end) character range.
    Token(u32, u32, u32),
}

impl Protected {
    /// Protects `text` as token `id`; `whole_word` tokens match only as whole
    /// whitespace-separated words. Empty and repeated texts are ignored.
    pub fn add(&mut self, text: &str, id: u32, whole_word: bool) {
        if text.is_empty() || self.entries.iter().any(|e| &*e.text == text) {
            return;
        }
        self.entries.push(Entry { text: text.into(), id, whole_word });
        self.entries.sort_by_key(|e| std::cmp::Reverse(e.text.len()));
        self.starts.resize(256, false);
        self.starts[text.as_bytes()[0] as usize] = true;
    }

    /// Calls `f` on the pieces of `text` in order; leftmost-longest matching.
    pub fn split<'a>(&self, text: &'a str, mut f: impl FnMut(Piece<'a>)) {
        if self.entries.is_empty() {
            return f(Piece::Text(text, 0));
        }
        let bytes = text.as_bytes();
        let (mut segment, mut segment_char) = (0, 0u32);
        let (mut i, mut chars) = (0, 0u32);
        while i < bytes.len() {
            if self.starts[bytes[i] as usize] {
                if let Some(e) = self.match_at(text, i) {
                    if segment < i {
                        f(Piece::Text(&text[segment..i], segment_char));
                    }
                    let n = e.text.chars().count() as u32;
                    f(Piece::Token(e.id, chars, chars + n));
                    i += e.text.len();
                    chars += n;
                    (segment, segment_char) = (i, chars);
                    continue;
                }
            }
            if bytes[i] & 0xC0 != 0x80 {
                chars += 1;
            }
            i += 1;
        }
        if segment < bytes.len() {
            f(Piece::Text(&text[segment..], segment_char));
        }
    }

    fn match_at(&self, text: &str, i: usize) -> Option<&Entry> {
        let rest = &text[i..];
        self.entries.iter().find(|e| {
            rest.starts_with(&*e.text)
                && (!e.whole_word || (ends_word_before(text, i) && starts_word_after(text, i + e.text.len())))
        })
    }
}

fn ends_word_before(text: &str, i: usize) -> bool {
    text[..i].chars().next_back().filter(|c| !c.is_whitespace()).is_none()
}

fn starts_word_after(text: &str, i: usize) -> bool {
    text[i..].chars().next().filter(|c| !c.is_whitespace()).is_none()
}
