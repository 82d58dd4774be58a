//! Passive ONC-RPC and NFS tracing: magnet's rebuild of Blaze's `rpcspy` and `nfstrace`.
//!
//! The pipeline, one module per box:
//!
//! ```text
//! capture (pcap/pcapng file, or live via libpcap)
//!   -> net     link / IPv4 / IPv6 headers, IP fragment reassembly
//!   -> stream  TCP reassembly (bounded), RPC record marking, resynchronisation
//!   -> decode  RPC header, call/reply pairing, program decoders (progs, nfs3, nfs4)
//!   -> Transaction  (one per call/reply pair, or an unanswered call)
//!   -> format  rpcspy lines / JSON,   nfstrace  sessions and statistics
//! ```
//!
//! Nothing here prints or exits; whatever cannot be decoded is counted in [`Counters`].
//!
//! ```
//! use magnet_rpc::{Decoder, Limits};
//! let mut dec = Decoder::new(Limits::default());
//! let mut seen = Vec::new();
//! // A frame that is not IP is counted, not an error.
//! dec.packet(0, magnet_rpc::capture::linktype::ETHERNET, &[0u8; 20], &mut |t| seen.push(t));
//! dec.finish(&mut |t| seen.push(t));
//! assert!(seen.is_empty());
//! assert_eq!(dec.counters().not_ip, 1);
//! ```

pub mod capture;
mod decode;
pub mod error;
pub mod format;
#[cfg(feature = "live")]
pub mod live;
pub mod net;
pub mod nfs3;
pub mod nfs4;
pub mod nfstrace;
pub mod progs;
pub mod rpc;
pub mod stream;
pub mod xdr;

use std::net::SocketAddr;

use serde::{Serialize, Serializer};

pub use decode::{Decoder, Limits};
pub use error::{Error, Result};

/// A file handle (NFS, MOUNT, NLM); shown and serialised as lower-case hex.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Fh(pub Vec<u8>);

impl std::fmt::Debug for Fh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fh({})", xdr::hex(&self.0))
    }
}

impl Serialize for Fh {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&xdr::hex(&self.0))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    Udp,
    Tcp,
}

/// What kind of record a [`Transaction`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Call and reply both seen.
    Complete,
    /// A call whose reply never came within the reply timeout (or before the end).
    NoReply,
}

/// One RPC transaction: a call paired with its reply.
#[derive(Debug, Clone, Serialize)]
pub struct Transaction {
    pub outcome: Outcome,
    /// Capture time of the call (the packet that completed it), ns since the epoch.
    pub call_ts_ns: i64,
    /// Capture time of the reply; `None` for [`Outcome::NoReply`].
    pub reply_ts_ns: Option<i64>,
    pub transport: Transport,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub xid: u32,
    pub prog: u32,
    pub vers: u32,
    #[serde(rename = "proc")]
    pub proc_: u32,
    /// rpcspy command name (see [`progs::command_name`]).
    pub command: String,
    pub cred: rpc::Cred,
    /// Times the same call (xid and endpoints) was seen again before its reply.
    pub retransmits: u32,
    pub args: progs::Args,
    /// RPC-level reply status (`None` for an unanswered call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_stat: Option<rpc::ReplyStat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub res: Option<progs::Res>,
}

impl Transaction {
    /// Call-to-reply time in nanoseconds.
    pub fn exec_ns(&self) -> Option<i64> {
        self.reply_ts_ns.map(|r| r - self.call_ts_ns)
    }
}

/// Everything counted along the way, including everything skipped or dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub packets: u64,
    pub bytes: u64,
    /// Frames whose link or network layer is not IPv4/IPv6.
    pub not_ip: u64,
    /// Frames of a link type not decoded (counted apart from `not_ip`).
    pub link_not_decoded: u64,
    /// The first link type not decoded, to name it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_type_not_decoded: Option<u32>,
    pub not_tcp_udp: u64,
    pub ip_malformed: u64,
    /// Packets cut by the capture's snap length.
    pub snaplen_cut: u64,
    pub ip_fragments: u64,
    pub ip_reassembled: u64,
    /// Fragmented datagrams given up (timeout, bound, overlap).
    pub frag_dropped: u64,
    /// Fragmented datagrams still missing pieces when the capture ended.
    pub frag_incomplete_at_end: u64,
    pub udp_datagrams: u64,
    pub tcp_segments: u64,
    /// TCP segments holding only bytes already seen.
    pub tcp_retransmitted: u64,
    pub tcp_out_of_order: u64,
    /// Stream bytes never captured (holes skipped over).
    pub tcp_gap_bytes: u64,
    /// Stream bytes passed over while looking for the next record mark.
    pub tcp_skipped_bytes: u64,
    /// Times a stream lost and searched again for a record boundary.
    pub tcp_resyncs: u64,
    /// RPC records longer than the record bound, skipped.
    pub records_too_large: u64,
    /// UDP payloads and TCP streams that are not ONC-RPC.
    pub not_rpc: u64,
    pub rpc_calls: u64,
    pub rpc_replies: u64,
    pub rpc_retransmitted_calls: u64,
    /// Replies whose call was never seen.
    pub rpc_orphan_replies: u64,
    /// Calls never answered (timed out or open at the end).
    pub rpc_no_reply: u64,
    /// Messages with a valid start whose header could not be decoded.
    pub rpc_malformed: u64,
    /// Pending calls evicted to keep the pending table bounded.
    pub rpc_pending_evicted: u64,
    /// TCP streams evicted to keep the stream table bounded.
    pub streams_evicted: u64,
    pub transactions: u64,
}

impl Counters {
    /// The counters that mean something was not decoded, with their names; zero ones
    /// left out.
    pub fn dropped(&self) -> Vec<(&'static str, u64)> {
        [
            ("link_not_decoded", self.link_not_decoded),
            ("snaplen_cut", self.snaplen_cut),
            ("ip_malformed", self.ip_malformed),
            ("frag_dropped", self.frag_dropped),
            ("frag_incomplete_at_end", self.frag_incomplete_at_end),
            ("tcp_gap_bytes", self.tcp_gap_bytes),
            ("tcp_skipped_bytes", self.tcp_skipped_bytes),
            ("tcp_resyncs", self.tcp_resyncs),
            ("records_too_large", self.records_too_large),
            ("rpc_orphan_replies", self.rpc_orphan_replies),
            ("rpc_no_reply", self.rpc_no_reply),
            ("rpc_malformed", self.rpc_malformed),
            ("rpc_pending_evicted", self.rpc_pending_evicted),
            ("streams_evicted", self.streams_evicted),
        ]
        .into_iter()
        .filter(|(_, v)| *v > 0)
        .collect()
    }
}
