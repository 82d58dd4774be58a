//! Reading pcap and pcapng files: the `magnet-pcap` crate, re-exported here for the
//! decoder's users (the reader that used to live here could not write, and panicked on
//! a 12-byte Simple Packet Block).

pub use magnet_pcap::{linktype, CaptureReader, Packet, MAX_RECORD};
