//! The one error type of the crate. Every variant says where (file, byte offset, packet
//! number) and why.

/// Errors from reading captures or opening live sources. Decoding problems inside a
/// packet are not errors: they are counted (see [`crate::Counters`]) and the packet is
/// skipped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the capture file (names the file, byte offset and packet).
    #[error(transparent)]
    Capture(#[from] magnet_pcap::Error),
    #[error("live capture: {0}")]
    Live(String),
    #[error("filter {expr:?}: {reason}")]
    Filter { expr: String, reason: String },
}

pub type Result<T> = std::result::Result<T, Error>;
