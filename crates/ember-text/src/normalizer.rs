//! BertNormalizer: cleaning, CJK spacing, accent stripping and lowercasing in one pass over the
//! input, writing into a reusable buffer that remembers, for every byte it writes, which
//! character of the original string it came from.
use crate::unicode::{is_chinese_char, is_clean_whitespace, is_nonspacing_mark, is_removed_by_cleaning};
use unicode_normalization_alignments::char::{canonical_combining_class, decompose_canonical};

/// HuggingFace's `BertNormalizer` options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BertNormalizer {
    /// Remove control characters and turn every kind of whitespace into `' '`.
    pub clean_text: bool,
    /// Surround CJK ideographs with spaces so each becomes a word of its own.
    pub handle_chinese_chars: bool,
    /// Decompose (NFD) and drop nonspacing marks.
    pub strip_accents: bool,
    /// Lowercase every character.
    pub lowercase: bool,
}

impl BertNormalizer {
    /// HuggingFace's defaults; `strip_accents: None` follows `lowercase`, as in BERT.
    pub fn new(lowercase: bool, strip_accents: Option<bool>) -> Self {
        BertNormalizer { clean_text: true, handle_chinese_chars: true, strip_accents: strip_accents.unwrap_or(lowercase), lowercase }
    }
}

/// The normalised text and, per byte of it, the index of the original character it came from.
#[derive(Default, Debug)]
pub struct Normalized {
    /// The normalised text.
    pub text: String,
    /// For each byte of `text`, the index of the original character it came from.
    pub origin: Vec<u32>,
    /// Combining marks (non-zero combining class) waiting for canonical ordering.
    marks: Vec<Mark>,
    /// Scratch for `flush_marks`: the origins the run consumes, in input order.
    consumed: Vec<u32>,
    /// Origin of the last input character consumed by decomposition; characters a
    /// decomposition adds after its first take it.
    last_origin: u32,
}

#[derive(Clone, Copy, Debug)]
struct Mark {
    class: u8,
    c: char,
    /// First character of its character's decomposition: the one that stands for it.
    first: bool,
    at: u32,
}

impl Normalized {
    fn push(&mut self, c: char, at: u32) {
        self.flush_marks();
        self.push_raw(c, at);
    }

    fn push_raw(&mut self, c: char, at: u32) {
        self.text.push(c);
        self.origin.resize(self.text.len(), at);
    }

    fn push_ascii(&mut self, b: u8, at: u32) {
        self.flush_marks();
        self.last_origin = at;
        // SAFETY: `b` is ASCII, so the string stays valid UTF-8.
        unsafe { self.text.as_mut_vec().push(b) };
        self.origin.push(at);
    }

    /// A character of its own in the input to decomposition (a space the cleaning or CJK steps
    /// wrote): it consumes an origin like any input character.
    fn push_starter(&mut self, c: char, at: u32) {
        self.flush_marks();
        self.last_origin = at;
        self.push_raw(c, at);
    }

    /// Canonical ordering (part of NFD): a run of combining marks is sorted, stably, by class.
    /// Origins follow `tokenizers`' alignment rules: walking the sorted run, each mark that is
    /// the first of its character's decomposition takes the next origin in input order, and
    /// any other mark the origin taken last. Nonspacing marks are dropped after that.
    fn flush_marks(&mut self) {
        if self.marks.is_empty() {
            return;
        }
        let mut marks = std::mem::take(&mut self.marks);
        let mut consumed = std::mem::take(&mut self.consumed);
        consumed.extend(marks.iter().filter(|m| m.first).map(|m| m.at));
        marks.sort_by_key(|m| m.class);
        let mut next = consumed.iter();
        for m in &marks {
            if m.first {
                self.last_origin = next.next().copied().unwrap_or(self.last_origin);
            }
            if !is_nonspacing_mark(m.c) {
                self.push_raw(m.c, self.last_origin);
            }
        }
        marks.clear();
        consumed.clear();
        (self.marks, self.consumed) = (marks, consumed);
    }
}

impl BertNormalizer {
    /// Normalises `input` into `out` (cleared first). Original character indices start at
    /// `first_char`, so a segment of a longer string reports offsets into the whole string.
    pub fn normalize(&self, input: &str, first_char: u32, out: &mut Normalized) {
        out.text.clear();
        out.origin.clear();
        out.text.reserve(input.len());
        out.origin.reserve(input.len());
        for (i, c) in input.chars().enumerate() {
            let at = first_char + i as u32;
            if c.is_ascii() {
                self.push_ascii(c as u8, at, out);
            } else {
                self.push_unicode(c, at, out);
            }
        }
        out.flush_marks();
    }

    fn push_ascii(&self, b: u8, at: u32, out: &mut Normalized) {
        let b = if self.clean_text && (b < 0x20 || b == 0x7f) {
            match b {
                b'\t' | b'\n' | b'\r' => b' ',
                _ => return,
            }
        } else if self.lowercase {
            b.to_ascii_lowercase()
        } else {
            b
        };
        out.push_ascii(b, at);
    }

    fn push_unicode(&self, c: char, at: u32, out: &mut Normalized) {
        if self.clean_text {
            if is_removed_by_cleaning(c) {
                return;
            }
            if is_clean_whitespace(c) {
                return out.push_starter(' ', at);
            }
        }
        if self.handle_chinese_chars && is_chinese_char(c) {
            out.push_starter(' ', at);
            self.push_accents_and_case(c, at, out);
            out.push_starter(' ', at);
        } else {
            self.push_accents_and_case(c, at, out);
        }
    }

    fn push_accents_and_case(&self, c: char, at: u32, out: &mut Normalized) {
        if !self.strip_accents {
            return self.push_cased(c, at, out);
        }
        let mut first = true;
        decompose_canonical(c, |d| {
            let class = canonical_combining_class(d);
            if class != 0 {
                out.marks.push(Mark { class, c: d, first, at });
            } else {
                out.flush_marks();
                if first {
                    out.last_origin = at;
                }
                if !is_nonspacing_mark(d) {
                    // Marks have no case, so lowercasing only starters is lowercasing all.
                    self.push_cased(d, out.last_origin, out);
                }
            }
            first = false;
        });
    }

    fn push_cased(&self, c: char, at: u32, out: &mut Normalized) {
        if self.lowercase {
            for l in c.to_lowercase() {
                out.push(l, at);
            }
        } else {
            out.push(c, at);
        }
    }
}
