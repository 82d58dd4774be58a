//! The wire side of a magnet trace.
//!
//! - [`kernel`]: the trace seen packet by packet: each packet id with its path through
//!   the stack (hooks, interfaces, times in wall-clock nanoseconds), its IP and
//!   transport header fields, the socket and process it belongs to, and the
//!   application calls around it.
//! - [`export`]: that model as pcapng (`magnet pcap`): one interface block per device,
//!   one enhanced packet block per frame the trace saw at the device layer, with a
//!   comment Wireshark can filter on; the frame's first bytes as recorded when the
//!   trace has them (`record --snaplen N`), else headers synthesised from the
//!   recorded fields.
//! - [`footprint`]: the footprint of a captured frame or a kernel packet (addresses,
//!   IPv4 identification or IPv6 next header, and the transport key), the key that
//!   ties the two together.
//! - [`paths`]: each packet as the path it took (`magnet packets`), and TCP
//!   handshakes (Table 6-6) found by one rule for `packets` and `match`.
//! - [`matching`]: packet association (`magnet match`): each frame of any capture to
//!   the kernel's packet, with the clock offset and drift between the two.
//!
//! Nothing here prints or exits.

pub mod export;
pub mod footprint;
pub mod ifaces;
pub mod kernel;
pub mod match_stream;
pub mod matching;
pub mod paths;

/// Errors: the trace or capture named, with what went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Trace {
        path: String,
        #[source]
        source: magnet_trace::TraceError,
    },
    #[error(transparent)]
    Capture(#[from] magnet_pcap::Error),
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

pub type Result<T> = std::result::Result<T, Error>;
