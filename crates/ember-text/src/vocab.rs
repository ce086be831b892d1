//! The WordPiece vocabulary: token → id hash maps and id → token.
use crate::error::{Error, Result};
use rustc_hash::FxHashMap;
use std::path::Path;

/// A WordPiece vocabulary: token ↔ id.
#[derive(Clone, Debug)]
pub struct Vocab {
    ids: FxHashMap<Box<str>, u32>,
    /// Tokens that start with the continuation prefix, keyed without it, so a word's later
    /// pieces are looked up without building `"##" + piece` strings.
    continuations: FxHashMap<Box<str>, u32>,
    tokens: Vec<Option<Box<str>>>,
    /// Longest key (bytes) of each map: longer candidates are skipped without a lookup.
    longest: usize,
    longest_continuation: usize,
}

impl Vocab {
    /// Builds from (token, id) pairs; a later duplicate token wins, as when reading a file.
    pub fn new(entries: impl IntoIterator<Item = (String, u32)>, prefix: &str) -> Self {
        let mut ids = FxHashMap::default();
        for (token, id) in entries {
            ids.insert(token.into_boxed_str(), id);
        }
        let size = ids.values().map(|&id| id as usize + 1).max().unwrap_or(0);
        let mut tokens = vec![None; size];
        for (token, &id) in &ids {
            tokens[id as usize] = Some(token.clone());
        }
        let continuations: FxHashMap<Box<str>, u32> = ids
            .iter()
            .filter_map(|(t, &id)| t.strip_prefix(prefix).filter(|rest| !rest.is_empty()).map(|rest| (rest.into(), id)))
            .collect();
        let longest = ids.keys().map(|t| t.len()).max().unwrap_or(0);
        let longest_continuation = continuations.keys().map(|t| t.len()).max().unwrap_or(0);
        Vocab { ids, continuations, tokens, longest, longest_continuation }
    }

    /// Reads BERT's `vocab.txt`: one token per line, its id the line number.
    pub fn from_file(path: impl AsRef<Path>, prefix: &str) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })?;
        Ok(Self::from_lines(&text, prefix))
    }

    /// `from_file` on the file's text.
    pub fn from_lines(text: &str, prefix: &str) -> Self {
        Self::new(text.lines().enumerate().map(|(i, line)| (line.trim_end().to_string(), i as u32)), prefix)
    }

    /// The id of `token`.
    pub fn get(&self, token: &str) -> Option<u32> {
        self.ids.get(token).copied()
    }

    /// The token with id `id`.
    pub fn token(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).and_then(|t| t.as_deref())
    }

    /// Number of ids (one past the largest id).
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether there are no tokens.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// (token, id) pairs, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        self.ids.iter().map(|(t, &id)| (&**t, id))
    }

    /// Looks up a piece of a word: the word's start, or a continuation (prefix implied).
    pub(crate) fn piece(&self, piece: &str, continuation: bool) -> Option<u32> {
        let map = if continuation { &self.continuations } else { &self.ids };
        map.get(piece).copied()
    }

    pub(crate) fn longest_piece(&self, continuation: bool) -> usize {
        if continuation {
            self.longest_continuation
        } else {
            self.longest
        }
    }
}
