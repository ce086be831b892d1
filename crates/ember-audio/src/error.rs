//! The crate's error type.

use std::fmt;

/// Everything that can go wrong while loading decoder assets or decoding.
#[derive(Debug, Clone, PartialEq)]
pub enum AudioError {
    /// A file could not be read.
    Io {
        /// The file.
        path: String,
        /// What reading it reported.
        message: String,
    },
    /// A file's content does not follow its format; `line` is 1-based when known.
    Parse {
        /// The kind of file (tokens, lexicon, ARPA LM).
        what: String,
        /// The line, 1-based (0 when unknown).
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A caller's argument is out of range or inconsistent.
    Invalid(String),
}

impl fmt::Display for AudioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AudioError::Io { path, message } => write!(f, "cannot read {path}: {message}"),
            AudioError::Parse {
                what,
                line,
                message,
            } => {
                write!(f, "{what}, line {line}: {message}")
            }
            AudioError::Invalid(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for AudioError {}

pub(crate) fn read_text(path: &str) -> Result<String, AudioError> {
    std::fs::read_to_string(path).map_err(|e| AudioError::Io {
        path: path.to_string(),
        message: e.to_string(),
    })
}
