//! The records as `bpf/include/magnet/events.h` defines them, generated at
//! build time (`build.rs`, `gen/events_h.rs`): kind ids ([`kind`]), the flags
//! and limits of the header, the catalog entries ([`kinds`]), and a zero-copy
//! view per struct (`Hdr`, `Lost`, `Tcp`, `TcpSnap`, …) with a getter and a
//! setter per field, smoltcp-style: `View::new_checked(bytes)` checks the
//! length once, after which no accessor panics.
//!
//! ```
//! use magnet_trace::events::{kind, Hdr, Lost};
//! let mut rec = vec![0u8; Lost::<&[u8]>::LEN];
//! let mut l = Lost::new_checked(&mut rec[..]).unwrap();
//! l.hdr_mut().set_kind(kind::LOST);
//! l.set_count(7);
//! assert_eq!(Hdr::new_checked(&rec[..]).unwrap().kind(), kind::LOST);
//! assert_eq!(Lost::new_checked(&rec[..]).unwrap().count(), 7);
//! assert!(Lost::new_checked(&rec[..39]).is_none());
//! ```

#![allow(clippy::all)]

include!(concat!(env!("OUT_DIR"), "/events.rs"));
