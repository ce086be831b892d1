//! Flashlight's tokens file and lexicon file.
//!
//! Tokens file: one entry per non-empty line; several whitespace-separated entries on one line
//! share that line's index. Lexicon file: `word tok tok ...` per line (any whitespace), a word may
//! appear on several lines (one spelling each). Loading a lexicon always adds `<unk>` with no
//! spelling, as Flashlight does.

use crate::error::{read_text, AudioError};
use rustc_hash::FxHashMap;

/// The unknown word Flashlight adds to every lexicon.
pub const UNK_WORD: &str = "<unk>";

/// A two-way map between entries and dense indices (Flashlight's `Dictionary`).
#[derive(Debug, Clone, Default)]
pub struct Dictionary {
    index_of: FxHashMap<String, usize>,
    entries: Vec<String>,
    default_index: Option<usize>,
}

impl Dictionary {
    /// Build from a list, one entry per index.
    pub fn from_entries<S: AsRef<str>>(entries: &[S]) -> Result<Self, AudioError> {
        let mut dict = Dictionary::default();
        for entry in entries {
            dict.push_line(&[entry.as_ref()])?;
        }
        Ok(dict)
    }

    /// Parse the text of a tokens file.
    pub fn parse_tokens(text: &str) -> Result<Self, AudioError> {
        let mut dict = Dictionary::default();
        for (number, line) in text.lines().enumerate() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.is_empty() {
                continue;
            }
            dict.push_line(&fields).map_err(|e| AudioError::Parse {
                what: "tokens file".into(),
                line: number + 1,
                message: e.to_string(),
            })?;
        }
        Ok(dict)
    }

    /// Read a tokens file.
    pub fn load_tokens(path: &str) -> Result<Self, AudioError> {
        Self::parse_tokens(&read_text(path)?)
    }

    /// Add one index, reached by every name in `names` (the first one is its printed entry).
    fn push_line(&mut self, names: &[&str]) -> Result<(), AudioError> {
        let index = self.entries.len();
        for name in names {
            if self.index_of.contains_key(*name) {
                return Err(AudioError::Invalid(format!(
                    "duplicate dictionary entry '{name}'"
                )));
            }
            self.index_of.insert((*name).to_string(), index);
        }
        self.entries.push(names[0].to_string());
        Ok(())
    }

    /// Number of distinct indices.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The index of `entry`, or the default index (if one is set) for unknown entries.
    pub fn index(&self, entry: &str) -> Option<usize> {
        self.index_of.get(entry).copied().or(self.default_index)
    }

    /// Like [`index`](Self::index), with an error naming the entry.
    pub fn require(&self, entry: &str) -> Result<usize, AudioError> {
        self.index(entry)
            .ok_or_else(|| AudioError::Invalid(format!("unknown dictionary entry '{entry}'")))
    }

    /// Whether `entry` is in the dictionary (the default index does not count).
    pub fn contains(&self, entry: &str) -> bool {
        self.index_of.contains_key(entry)
    }

    /// The printed entry of `index`.
    pub fn entry(&self, index: usize) -> Option<&str> {
        self.entries.get(index).map(String::as_str)
    }

    /// Entries in index order.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Map unknown entries to `index` from now on.
    pub fn set_default_index(&mut self, index: usize) {
        self.default_index = Some(index);
    }
}

/// Words and their spellings, in file order (a word's first line fixes its position).
#[derive(Debug, Clone, Default)]
pub struct Lexicon {
    words: Vec<(String, Vec<Vec<String>>)>,
}

impl Lexicon {
    /// Parse the text of a lexicon file, then add `<unk>` (no spelling) if absent.
    pub fn parse(text: &str) -> Result<Self, AudioError> {
        let mut position: FxHashMap<String, usize> = FxHashMap::default();
        let mut words: Vec<(String, Vec<Vec<String>>)> = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.is_empty() {
                continue;
            }
            if fields.len() < 2 {
                return Err(AudioError::Parse {
                    what: "lexicon file".into(),
                    line: number + 1,
                    message: format!("expected a word and its spelling, got '{line}'"),
                });
            }
            let spelling = fields[1..].iter().map(|s| s.to_string()).collect();
            let slot = *position.entry(fields[0].to_string()).or_insert_with(|| {
                words.push((fields[0].to_string(), Vec::new()));
                words.len() - 1
            });
            words[slot].1.push(spelling);
        }
        if !position.contains_key(UNK_WORD) {
            words.push((UNK_WORD.to_string(), Vec::new()));
        }
        Ok(Lexicon { words })
    }

    /// Read a lexicon file.
    pub fn load(path: &str) -> Result<Self, AudioError> {
        Self::parse(&read_text(path)?)
    }

    /// `(word, spellings)` pairs in file order.
    pub fn words(&self) -> &[(String, Vec<Vec<String>>)] {
        &self.words
    }

    /// The word dictionary: one index per word in lexicon order, unknown words map to `<unk>`.
    pub fn word_dictionary(&self) -> Dictionary {
        let names: Vec<&str> = self.words.iter().map(|(w, _)| w.as_str()).collect();
        let mut dict = Dictionary::from_entries(&names).expect("lexicon words are unique");
        if let Some(unk) = dict.index(UNK_WORD) {
            dict.set_default_index(unk);
        }
        dict
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_file_lines_share_an_index() {
        let dict = Dictionary::parse_tokens("-\n|\na A\n\nb\n").unwrap();
        assert_eq!(dict.len(), 4);
        assert_eq!(dict.index("a"), Some(2));
        assert_eq!(dict.index("A"), Some(2));
        assert_eq!(dict.index("b"), Some(3));
        assert_eq!(dict.entry(2), Some("a"));
        assert_eq!(dict.index("zz"), None);
        assert!(Dictionary::parse_tokens("a\na\n").is_err());
    }

    #[test]
    fn lexicon_keeps_order_and_spellings_and_adds_unk() {
        let lex = Lexicon::parse("the\tt h e |\na a |\nthe t h |\n").unwrap();
        let words = lex.words();
        assert_eq!(words.len(), 3);
        assert_eq!(words[0].0, "the");
        assert_eq!(words[0].1.len(), 2);
        assert_eq!(words[0].1[1], vec!["t", "h", "|"]);
        assert_eq!(words[2].0, UNK_WORD);
        let dict = lex.word_dictionary();
        assert_eq!(dict.index("a"), Some(1));
        assert_eq!(dict.index("nope"), Some(2));
        assert!(Lexicon::parse("lonely\n").is_err());
    }
}
