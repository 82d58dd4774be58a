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
    /// The preamble or header JSON is damaged; the records are read anyway,
    /// and `reason` says which fields were lost or restored.
    #[error("header at byte {offset}: {reason}")]
    DamagedHeader { offset: u64, reason: String },
    /// Errors of one kind in a row, reported once: the first, how many more
    /// followed it, and the offset of the last.
    #[error("{first} (and {more} more like it, the last at byte {last})")]
    Repeated {
        first: Box<TraceError>,
        more: u64,
        last: u64,
    },
    /// What was read does not add up to the END block's totals (a block
    /// dropped, duplicated or damaged): one per kind or total that differs.
    #[error("totals do not add up: {0}")]
    Totals(String),
}

impl TraceError {
    /// True for damage the reader stepped over (it goes on after reporting it).
    pub fn is_recoverable(&self) -> bool {
        match self {
            TraceError::Repeated { first, .. } => first.is_recoverable(),
            e => matches!(
                e,
                TraceError::BadBlock { .. }
                    | TraceError::BadRecord { .. }
                    | TraceError::DamagedHeader { .. }
                    | TraceError::Totals(_)
            ),
        }
    }

    /// The byte offset the error names, if any.
    pub fn offset(&self) -> Option<u64> {
        match self {
            TraceError::Io { offset, .. }
            | TraceError::BadHeader { offset, .. }
            | TraceError::Truncated { offset, .. }
            | TraceError::BadBlock { offset, .. }
            | TraceError::BadRecord { offset, .. }
            | TraceError::DamagedHeader { offset, .. } => Some(*offset),
            TraceError::NotATrace | TraceError::ByteOrder => Some(0),
            TraceError::Version(..) => Some(8),
            TraceError::Repeated { last, .. } => Some(*last),
            TraceError::Totals(_) => None,
        }
    }
}
