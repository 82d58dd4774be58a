//! Errors of trace reading and writing. Every reading error names the byte
//! offset where it was found, so a damaged file can be inspected by hand.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum TraceError {
    #[error("I/O error at byte {offset}: {source}")]
    Io {
        offset: u64,
        #[source]
        source: std::io::Error,
    },
    #[error("not a magnet trace (bad magic at byte 0)")]
    NotATrace,
    #[error("trace format version {0} is not supported (this magnet reads versions 1 to {1})")]
    Version(u16, u16),
    #[error("trace written on a big-endian host; only little-endian traces are supported")]
    ByteOrder,
    #[error("header at byte {offset}: {reason}")]
    BadHeader { offset: u64, reason: String },
    #[error("trace cut short at byte {offset}: {reason}; everything before it was read")]
    Truncated { offset: u64, reason: String },
    #[error("block at byte {offset}: {reason}")]
    BadBlock { offset: u64, reason: String },
    #[error("record {index} of block at byte {offset}: {reason}")]
    BadRecord {
        offset: u64,
        index: u32,
        reason: String,
    },
    /// What was read does not add up to the END block's totals (a block
    /// dropped, duplicated or damaged): one per kind or total that differs.
    #[error("totals do not add up: {0}")]
    Totals(String),
}

impl TraceError {
    /// True for damage the reader stepped over (it goes on after reporting it).
    pub fn is_recoverable(&self) -> bool {
        matches!(
            self,
            TraceError::BadBlock { .. } | TraceError::BadRecord { .. } | TraceError::Totals(_)
        )
    }
}
