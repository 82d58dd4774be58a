//! Errors of this crate. Each names the file, the byte offset (or type id) and
//! the reason, so a damaged BTF blob or source file can be inspected by hand.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum FuncsError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{what}: BTF at byte {offset}: {reason}")]
    Btf {
        what: String,
        offset: usize,
        reason: String,
    },
    #[error("{path}: ELF at byte {offset}: {reason}")]
    Elf {
        path: PathBuf,
        offset: usize,
        reason: String,
    },
    #[error("{0}")]
    Other(String),
}

impl FuncsError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        FuncsError::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T> = std::result::Result<T, FuncsError>;
