//! The fuzz targets' bodies, public so that `fuzz/` (cargo-fuzz, nightly) and the
//! stable test `tests/fuzz_stable.rs` drive the same code.
//!
//! [`capture`] reads any bytes as a capture; whatever packets come out are written
//! to a new pcapng file and read back, and must come back equal. It panics only when
//! that property fails (or when the reader itself panics, which is the bug fuzzing
//! looks for).

use crate::{CaptureReader, InterfaceDesc, OutPacket, PcapNgWriter};
use std::path::Path;

/// One fuzz input. Returns how many packets it held.
pub fn capture(data: &[u8]) -> usize {
    let Ok(mut rd) = CaptureReader::new(data, Path::new("fuzz")) else {
        return 0;
    };
    let mut pkts = Vec::new();
    while let Some(Ok(p)) = rd.next_packet() {
        // Whatever the reader gives must be consistent.
        assert!(p.number as usize == pkts.len() + 1);
        let comments: Vec<String> = p.comments().map(str::to_owned).collect();
        pkts.push((p.ts_ns, p.linktype, p.orig_len, p.data.to_vec(), comments));
    }
    let mut w = PcapNgWriter::new(Vec::new()).expect("write to memory");
    let mut ifs = std::collections::HashMap::new();
    let mut kept = Vec::new();
    for (ts, lt, orig, d, c) in &pkts {
        if *ts < 0 || *lt > 0xFFFF || (*orig as usize) < d.len() {
            continue;
        }
        let id = *ifs.entry(*lt).or_insert_with(|| {
            w.add_interface(&InterfaceDesc::new(*lt))
                .expect("interface")
        });
        let mut op = OutPacket::new(id, *ts, d).orig_len(*orig);
        for s in c {
            // Written escaped (control characters take 4 bytes or more).
            if magnet_common::text::escape(s).len() <= 65535 {
                op = op.comment(s);
            }
        }
        w.write_packet(&op).expect("packet");
        kept.push((ts, lt, orig, d, op.comments.len()));
    }
    let bytes = w.into_inner();
    let mut rd = CaptureReader::new(&bytes[..], Path::new("rewritten")).expect("reopen");
    for (ts, lt, orig, d, nc) in kept {
        let p = rd.next_packet().expect("packet back").expect("readable");
        assert_eq!(
            (p.ts_ns, p.linktype, p.orig_len, p.data),
            (*ts, *lt, *orig, &d[..])
        );
        assert_eq!(p.comments().count(), nc);
    }
    assert!(rd.next_packet().is_none());
    pkts.len()
}
