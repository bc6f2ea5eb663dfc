//! `TensorError`: a Python-style exception kind and a PyTorch-like message.

use std::fmt;

/// The Python exception class an error maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// `RuntimeError`.
    Runtime,
    /// `torch.OutOfMemoryError`.
    OutOfMemory,
    /// `IndexError`.
    Index,
    /// `TypeError`.
    Type,
    /// `ValueError`.
    Value,
    /// `NotImplementedError`.
    NotImplemented,
    /// `KeyboardInterrupt`.
    Interrupt,
}

/// An error from a tensor operation; `Display` is the message a user sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorError {
    kind: ErrorKind,
    message: String,
}

/// Results of tensor operations.
pub type Result<T> = std::result::Result<T, TensorError>;

impl TensorError {
    /// An error of the given kind.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> TensorError {
        TensorError {
            kind,
            message: message.into(),
        }
    }
    /// A `RuntimeError`.
    pub fn runtime(message: impl Into<String>) -> TensorError {
        Self::new(ErrorKind::Runtime, message)
    }
    /// An `IndexError`.
    pub fn index(message: impl Into<String>) -> TensorError {
        Self::new(ErrorKind::Index, message)
    }
    /// A `TypeError`.
    pub fn type_error(message: impl Into<String>) -> TensorError {
        Self::new(ErrorKind::Type, message)
    }
    /// A `ValueError`.
    pub fn value(message: impl Into<String>) -> TensorError {
        Self::new(ErrorKind::Value, message)
    }
    /// A `NotImplementedError`.
    pub fn not_implemented(message: impl Into<String>) -> TensorError {
        Self::new(ErrorKind::NotImplemented, message)
    }
    /// A `KeyboardInterrupt`.
    pub fn interrupted() -> TensorError {
        Self::new(ErrorKind::Interrupt, "interrupted")
    }
    /// The error's kind as an enum.
    pub fn error_kind(&self) -> ErrorKind {
        self.kind
    }
    /// The Python class name: "RuntimeError", "OutOfMemoryError", ...
    pub fn kind(&self) -> &'static str {
        match self.kind {
            ErrorKind::Runtime => "RuntimeError",
            ErrorKind::OutOfMemory => "OutOfMemoryError",
            ErrorKind::Index => "IndexError",
            ErrorKind::Type => "TypeError",
            ErrorKind::Value => "ValueError",
            ErrorKind::NotImplemented => "NotImplementedError",
            ErrorKind::Interrupt => "KeyboardInterrupt",
        }
    }
    /// The message without the kind.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for TensorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TensorError {}
