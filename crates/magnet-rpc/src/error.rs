//! The one error type of the crate. Every variant says where (file, byte offset, packet
//! number) and why.

use std::path::PathBuf;

/// Errors from reading captures or opening live sources. Decoding problems inside a
/// packet are not errors: they are counted (see [`crate::Counters`]) and the packet is
/// skipped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: not a pcap or pcapng file (magic {magic:#010x} at offset 0)")]
    BadMagic { path: PathBuf, magic: u32 },
    #[error("{path}: offset {offset}, packet {packet}: {reason}")]
    Format {
        path: PathBuf,
        offset: u64,
        packet: u64,
        reason: String,
    },
    #[error("live capture: {0}")]
    Live(String),
    #[error("filter {expr:?}: {reason}")]
    Filter { expr: String, reason: String },
}

pub type Result<T> = std::result::Result<T, Error>;
