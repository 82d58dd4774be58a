//! pcap and pcapng for magnet: one crate that reads and writes captures.
//!
//! Three layers, as in the `pcap-file` crate:
//!
//! - [`parse`]: a sans-IO parser over byte slices. [`parse::Parser::next_len`] says how
//!   long the next item is (or how many bytes it needs to tell), [`parse::Parser::parse`]
//!   turns a whole item into a [`Block`]. It never allocates per packet and never
//!   panics: every length is checked before it is used.
//! - [`CaptureReader`]: the parser over any [`std::io::Read`] (a file, stdin), one
//!   buffer refilled in place; packets borrow from it.
//! - [`PcapNgWriter`] and [`PcapWriter`]: writers over any [`std::io::Write`], in
//!   either byte order; unknown blocks read from a file can be written back unchanged.
//!
//! Every error names the byte offset of the record it concerns and the number of
//! packets read before it ([`Error`]).
//!
//! Why not `pcap-file` itself: its errors carry no byte offset, its pcapng reader
//! parses every option of every packet into owned values (an allocation per packet on
//! the 7 GB/s RPC path), it reads `if_tsresol`/`if_tsoffset` without range checks,
//! and its writer cannot choose the byte order. The tests use it as an outside
//! oracle where it is available.
//!
//! ```
//! use magnet_pcap::{CaptureReader, PcapNgWriter, InterfaceDesc, OutPacket, linktype};
//! let mut w = PcapNgWriter::new(Vec::new()).unwrap();
//! let eth0 = w.add_interface(&InterfaceDesc::new(linktype::ETHERNET).name("eth0")).unwrap();
//! w.write_packet(&OutPacket::new(eth0, 1_700_000_000_123_456_789, b"frame").comment("pid=1")).unwrap();
//! let bytes = w.into_inner();
//! let mut r = CaptureReader::new(&bytes[..], "mem".as_ref()).unwrap();
//! let p = r.next_packet().unwrap().unwrap();
//! assert_eq!((p.ts_ns, p.data, p.comments().next()), (1_700_000_000_123_456_789, &b"frame"[..], Some("pid=1")));
//! ```

pub mod fuzzing;
pub mod link;
pub mod parse;
mod reader;
mod writer;

pub use parse::{Block, Interface, Options, Packet, PcapHeader, Section};
pub use reader::{CaptureReader, Item};
pub use writer::{InterfaceDesc, OutPacket, PcapNgWriter, PcapWriter};

use std::path::PathBuf;

/// Largest record or block accepted. Captures on Linux have a snap length of at most
/// 256 KiB; anything past this bound is treated as corruption instead of allocated.
pub const MAX_RECORD: usize = 16 << 20;

/// Link-layer header types (LINKTYPE_* values as written in pcap and pcapng files).
pub mod linktype {
    pub const NULL: u32 = 0;
    pub const ETHERNET: u32 = 1;
    pub const RAW: u32 = 101;
    pub const LOOP: u32 = 108;
    pub const LINUX_SLL: u32 = 113;
    pub const IPV4: u32 = 228;
    pub const IPV6: u32 = 229;
    pub const LINUX_SLL2: u32 = 276;
    /// DLT_RAW as some BSD-derived libpcaps number it in files.
    pub const RAW_ALT: u32 = 12;
    pub const RAW_ALT2: u32 = 14;
}

/// pcapng block types.
pub mod block_type {
    pub const SECTION_HEADER: u32 = 0x0A0D_0D0A;
    pub const INTERFACE: u32 = 1;
    pub const PACKET: u32 = 2;
    pub const SIMPLE_PACKET: u32 = 3;
    pub const NAME_RESOLUTION: u32 = 4;
    pub const INTERFACE_STATISTICS: u32 = 5;
    pub const ENHANCED_PACKET: u32 = 6;
    pub const DECRYPTION_SECRETS: u32 = 0x0000_000A;
}

/// Errors of the reader: each says where (file, byte offset, packets read before) and
/// why.
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
}

impl Error {
    /// Byte offset the error concerns (0 for I/O errors).
    pub fn offset(&self) -> u64 {
        match self {
            Error::Format { offset, .. } => *offset,
            _ => 0,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
