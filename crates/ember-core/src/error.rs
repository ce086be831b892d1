//! One error type; its kind decides which Python exception the binding raises.
use std::fmt;

/// What went wrong, which decides the Python exception the extension raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Wrong dtype or argument type (`TypeError`).
    Type,
    /// A value out of its domain (`ValueError`).
    Value,
    /// Shapes, devices or state that do not fit together (`RuntimeError`).
    Runtime,
    /// An index or dim out of range (`IndexError`).
    Index,
    /// A combination Ember does not support yet (`NotImplementedError`).
    NotImplemented,
    /// A singular or non-positive-definite matrix (`torch.linalg.LinAlgError`, a `RuntimeError`).
    LinAlg,
}

/// An error with PyTorch's message for the same mistake; `Display` prints the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The kind, which picks the Python exception.
    pub kind: ErrorKind,
    /// The message, worded as PyTorch's.
    pub message: String,
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of `kind` (the `bail!` macro builds one and returns it).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// `bail!(Kind, "fmt", args)` returns an `Err` of that kind from the current function.
#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::error::Error::new($crate::error::ErrorKind::$kind, format!($($arg)*)))
    };
}
