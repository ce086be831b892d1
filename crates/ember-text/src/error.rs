use std::fmt;
use std::path::PathBuf;

/// Why a tokenizer could not be built or an input encoded.
#[derive(Debug)]
pub enum Error {
    /// A file could not be read; the path is kept so the message can name it.
    Io {
        /// The file.
        path: PathBuf,
        /// What reading it reported.
        source: std::io::Error,
    },
    /// A vocabulary or tokenizer.json that does not describe a usable WordPiece tokenizer.
    Invalid(String),
    /// A request that cannot be met, such as truncating below the special tokens' length.
    Value(String),
}

/// This crate's results.
pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: {}", path.display(), source),
            Error::Invalid(m) | Error::Value(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}
