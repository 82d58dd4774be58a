//! The RPC decoders fuzzed for a bounded time from a stable test (so that
//! every `cargo test` fuzzes them a little, with no fuzzing toolchain), on real captures (NFSv3 and NFSv4 from a Ganesha
//! server, RPCSEC_GSS over TCP) rewritten packet by packet. Each input is one
//! kind of damage, with what must hold asserted, not only "no panic":
//!
//! - packets repeated (retransmissions): the same transactions, each counted
//!   as retransmitted, nothing reported as not decoded;
//! - a segment split and its halves swapped: the same transactions;
//! - a segment dropped: its payload counted as a gap, every transaction still
//!   complete decodes as before, at most the RPCs whose bytes were in it lost;
//! - a byte of a segment's payload flipped: what completed before it is
//!   untouched, nothing is invented, and what still decodes whole decodes as
//!   before save the records in that segment; how many transactions a flip
//!   costs is measured and printed; every flip of a record mark loses at most
//!   its own record (`a_flipped_record_mark_loses_at_most_its_own_record`);
//! - memory: the decoder's peak heap stays under 8 MiB + 4 x the capture.
//!
//! 2 s by default (MAGNET_FUZZ_SECS), at least MIN_RUNS inputs.

mod support;
use support::{read_pkts, write_pcap, Pkt};

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use magnet_rpc::capture::CaptureReader;
use magnet_rpc::{Counters, Outcome, Transaction};

#[global_allocator]
static ALLOC: magnet_testkit::heap::Counting = magnet_testkit::heap::Counting;

const MIN_RUNS: u64 = 200;

/// Decodes; also the decoder's peak heap beyond the transactions it returned.
fn decode(bytes: &[u8]) -> (Vec<Transaction>, Counters, usize) {
    let heap = magnet_testkit::heap::Span::start();
    let mut rd = CaptureReader::new(bytes, Path::new("fuzz.pcap")).unwrap();
    let (txs, c, err) = support::decode_reader(&mut rd);
    drop(rd);
    assert_eq!(err, None);
    let kept = txs.capacity() * std::mem::size_of::<Transaction>() * 4;
    let peak = heap.peak_above(kept);
    (txs, c, peak)
}

/// Payload offset and length of an Ethernet/IPv4/TCP frame.
fn tcp_payload(d: &[u8]) -> Option<(usize, usize)> {
    if d.len() < 34 || d[12..14] != [8, 0] || d[23] != 6 {
        return None;
    }
    let ihl = (d[14] & 15) as usize * 4;
    let tot = u16::from_be_bytes([d[16], d[17]]) as usize;
    let t = 14 + ihl;
    let doff = (d[t + 12] >> 4) as usize * 4;
    Some((t + doff, tot - ihl - doff))
}

/// Splits a frame's payload at `at` into two frames (sequence numbers kept right).
fn split(d: &[u8], at: usize) -> (Vec<u8>, Vec<u8>) {
    let ihl = (d[14] & 15) as usize * 4;
    let t = 14 + ihl;
    let doff = (d[t + 12] >> 4) as usize * 4;
    let (hdr, pay) = (&d[..t + doff], &d[t + doff..]);
    let mk = |part: &[u8], add: u32| {
        let mut f = hdr.to_vec();
        f[16..18].copy_from_slice(&((ihl + doff + part.len()) as u16).to_be_bytes());
        let seq = u32::from_be_bytes([f[t + 4], f[t + 5], f[t + 6], f[t + 7]]).wrapping_add(add);
        f[t + 4..t + 8].copy_from_slice(&seq.to_be_bytes());
        f.extend_from_slice(part);
        f
    };
    (mk(&pay[..at], 0), mk(&pay[at..], at as u32))
}

fn sig(t: &Transaction) -> (u32, u32, u32, Option<u32>, String, Option<i64>) {
    let st = t.res.as_ref().and_then(|r| r.status());
    (
        t.prog,
        t.vers,
        t.proc_,
        st,
        format!("{:?}", t.args),
        t.exec_ns(),
    )
}

fn complete(txs: &[Transaction]) -> BTreeMap<u32, &Transaction> {
    txs.iter()
        .filter(|t| t.outcome == Outcome::Complete)
        .map(|t| (t.xid, t))
        .collect()
}

#[test]
fn fuzz_rpc_properties_bounded() {
    let secs: u64 = std::env::var("MAGNET_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let seeds: Vec<(&str, Vec<Pkt>, Vec<Transaction>)> = [
        "ganesha-v3-tcp.pcap",
        "ganesha-v4-tcp.pcap",
        "gss-init-tcp.pcap",
        "gss-verifier-37.pcap",
    ]
    .into_iter()
    .map(|n| {
        let pkts = read_pkts(&dir.join(n));
        let (txs, c, _) = decode(&write_pcap(&pkts));
        assert_eq!(c.dropped(), vec![], "{n}: {c:?}");
        (n, pkts, txs)
    })
    // (TCP captures: the UDP one has no streams to damage)
    .filter(|s| {
        s.1.iter()
            .any(|p| tcp_payload(&p.data).is_some_and(|(_, n)| n > 0))
    })
    .collect();
    assert!(seeds.len() >= 3, "{} seeds", seeds.len());
    let mut s: u64 = 0x5851_F42D_4C95_7F2D;
    let mut rnd = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let end = Instant::now() + Duration::from_secs(secs);
    let (mut runs, mut peak, mut kinds, mut lost_by_flip) = (0u64, 0usize, [0u64; 4], 0usize);
    let mut flips_costing_more = 0u64;
    while Instant::now() < end || runs < MIN_RUNS {
        let (name, pkts, base) = &seeds[rnd() as usize % seeds.len()];
        let bx = complete(base);
        let with_payload: Vec<usize> = (0..pkts.len())
            .filter(|&i| tcp_payload(&pkts[i].data).is_some_and(|(_, n)| n > 0))
            .collect();
        let k = (rnd() % 4) as usize;
        kinds[k] += 1;
        let i = with_payload[rnd() as usize % with_payload.len()];
        let (off, len) = tcp_payload(&pkts[i].data).unwrap();
        let mut out: Vec<Pkt> = pkts.clone();
        match k {
            0 => {
                out.insert(
                    i + 1,
                    Pkt {
                        ts: pkts[i].ts + 1000,
                        data: pkts[i].data.clone(),
                    },
                );
            }
            1 if len >= 2 => {
                let (a, b) = split(&pkts[i].data, 1 + rnd() as usize % (len - 1));
                out[i] = Pkt {
                    ts: pkts[i].ts,
                    data: b,
                };
                out.insert(
                    i + 1,
                    Pkt {
                        ts: pkts[i].ts,
                        data: a,
                    },
                );
            }
            2 => {
                out.remove(i);
            }
            _ => {
                let at = off + rnd() as usize % len;
                out[i].data[at] ^= 1 << (rnd() % 8);
            }
        }
        let (txs, c, p) = decode(&write_pcap(&out));
        peak = peak.max(p);
        let bytes: usize = pkts.iter().map(|p| p.data.len()).sum();
        assert!(p <= (8 << 20) + 4 * bytes, "{name}: peak {p} B");
        let got = complete(&txs);
        let what = format!("{name}: op {k} on packet {i}");
        // Transactions of the base whose call or reply packet is the one touched.
        let ts = pkts[i].ts;
        let touched: Vec<u32> = base
            .iter()
            .filter(|t| t.call_ts_ns == ts || t.reply_ts_ns == Some(ts))
            .map(|t| t.xid)
            .collect();
        match k {
            0 | 1 => {
                assert_eq!(got.len(), bx.len(), "{what}: {c:?}");
                for (x, t) in &got {
                    assert_eq!(sig(t), sig(bx[x]), "{what}: xid {x:#x}");
                }
                assert_eq!(c.dropped(), vec![], "{what}: {c:?}");
                if k == 0 {
                    assert_eq!(c.tcp_retransmitted, 1, "{what}");
                }
            }
            2 => {
                // A gap shows where the direction goes on after the segment.
                let dir = |d: &[u8]| (d[26..34].to_vec(), d[34..38].to_vec());
                let same = |j: &usize| dir(&pkts[*j].data) == dir(&pkts[i].data);
                if with_payload.iter().any(|j| *j < i && same(j))
                    && with_payload.iter().any(|j| *j > i && same(j))
                {
                    assert_eq!(c.tcp_gap_bytes, len as u64, "{what}: {c:?}");
                }
                for (x, t) in &got {
                    assert_eq!(sig(t), sig(bx[x]), "{what}: xid {x:#x}");
                }
                let lost = bx.keys().filter(|x| !got.contains_key(x)).count();
                assert!(
                    lost <= touched.len().max(1),
                    "{what}: {lost} lost, {} touched; {c:?}",
                    touched.len()
                );
            }
            _ => {
                // What completed before the flipped segment is untouched; what
                // still decodes whole afterwards decodes as before, save the
                // records the segment holds; the number lost is measured (a
                // flip in a payload can still cost more than its record: a
                // length inside an XDR body, say; record marks are checked
                // flip by flip below).
                for (x, t) in &bx {
                    let before = t.reply_ts_ns.is_some_and(|r| r < ts) && t.call_ts_ns < ts;
                    if before {
                        let g = got.get(x);
                        assert!(
                            g.is_some_and(|g| sig(g) == sig(t)),
                            "{what}: xid {x:#x} before the flip"
                        );
                    }
                }
                for (x, g) in &got {
                    match bx.get(x) {
                        Some(t) => assert!(
                            sig(g) == sig(t) || touched.contains(x),
                            "{what}: xid {x:#x} changed"
                        ),
                        None => assert!(!touched.is_empty(), "{what}: invented xid {x:#x}"),
                    }
                }
                let lost = bx.keys().filter(|x| !got.contains_key(x)).count();
                if lost > touched.len() {
                    flips_costing_more += 1;
                }
                lost_by_flip = lost_by_flip.max(lost);
            }
        }
        runs += 1;
    }
    eprintln!(
        "{runs} inputs in {secs} s (repeat, split+swap, drop, flip: {kinds:?}); most lost by one flip {lost_by_flip}, flips that cost more than their own records {flips_costing_more} of {}; decoder's peak heap {peak} B",
        kinds[3]
    );
}

/// Where each ONC RPC record mark of a capture lies: (packet, byte in the frame)
/// for each of its 4 bytes, and the xid of its record (its first fragment's).
fn record_marks(pkts: &[Pkt]) -> Vec<([(usize, usize); 4], u32)> {
    type Dir = (Vec<u8>, Vec<u8>);
    // Each direction's bytes in order, with where each byte came from.
    // Next sequence number, bytes, and each byte's (packet, offset).
    type Bytes = (Option<u32>, Vec<u8>, Vec<(usize, usize)>);
    let mut streams: BTreeMap<Dir, Bytes> = BTreeMap::new();
    for (i, p) in pkts.iter().enumerate() {
        let Some((off, len)) = tcp_payload(&p.data) else {
            continue;
        };
        let d = &p.data;
        let t = 14 + (d[14] & 15) as usize * 4;
        let seq = u32::from_be_bytes([d[t + 4], d[t + 5], d[t + 6], d[t + 7]]);
        let syn = d[t + 13] & 2 != 0;
        let s = streams
            .entry((d[26..34].to_vec(), d[34..38].to_vec()))
            .or_default();
        if syn {
            s.0 = Some(seq.wrapping_add(1));
            continue;
        }
        if len == 0 {
            continue;
        }
        let next = *s.0.get_or_insert(seq);
        if seq != next {
            continue; // a retransmission
        }
        s.0 = Some(seq.wrapping_add(len as u32));
        s.1.extend_from_slice(&d[off..off + len]);
        s.2.extend((off..off + len).map(|b| (i, b)));
    }
    let mut marks = Vec::new();
    for (_, (_, bytes, at)) in streams {
        let (mut p, mut xid, mut first) = (0usize, 0u32, true);
        while p + 4 <= bytes.len() {
            let m = u32::from_be_bytes(bytes[p..p + 4].try_into().unwrap());
            let len = (m & 0x7fff_ffff) as usize;
            if first && p + 8 <= bytes.len() {
                xid = u32::from_be_bytes(bytes[p + 4..p + 8].try_into().unwrap());
            }
            marks.push(([at[p], at[p + 1], at[p + 2], at[p + 3]], xid));
            first = m & 0x8000_0000 != 0;
            p += 4 + len;
        }
        assert_eq!(p, bytes.len(), "records end where the stream ends");
    }
    marks
}

/// Every single-bit flip of every record mark of the TCP fixtures (length and
/// last-fragment bit): every call and reply of the other records still pairs and
/// decodes as before, and a flip that costs its own record says so in the
/// counters (never silently). Before the reader resynchronised on a mark whose
/// record is followed by no plausible mark, a length flip that made the record
/// longer swallowed the records after it.
#[test]
fn a_flipped_record_mark_loses_at_most_its_own_record() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let (mut flips, mut costing_more, mut own_lost, mut silent) = (0u64, 0u64, 0u64, 0u64);
    let mut worst = String::new();
    for n in [
        "ganesha-v3-tcp.pcap",
        "ganesha-v4-tcp.pcap",
        "gss-init-tcp.pcap",
        "gss-verifier-37.pcap",
    ] {
        let pkts = read_pkts(&dir.join(n));
        let marks = record_marks(&pkts);
        if marks.is_empty() {
            continue;
        }
        let (base, _, _) = decode(&write_pcap(&pkts));
        let bx = complete(&base);
        for (at, xid) in &marks {
            for bit in 0..32 {
                let (pi, b) = at[bit / 8];
                let mut out = pkts.clone();
                out[pi].data[b] ^= 0x80 >> (bit % 8);
                let (txs, c, _) = decode(&write_pcap(&out));
                let got = complete(&txs);
                flips += 1;
                let lost: Vec<u32> = bx
                    .iter()
                    .filter(|(x, t)| *x != xid && got.get(x).is_none_or(|g| sig(g) != sig(t)))
                    .map(|(x, _)| *x)
                    .collect();
                if !lost.is_empty() {
                    costing_more += 1;
                    if worst.is_empty() {
                        worst = format!(
                            "{n}: bit {bit} of the mark of xid {xid:#x} lost {} other(s), e.g. {:#x}; {c:?}",
                            lost.len(),
                            lost[0]
                        );
                    }
                }
                let own_ok = bx
                    .get(xid)
                    .is_none_or(|t| got.get(xid).is_some_and(|g| sig(g) == sig(t)));
                if !own_ok {
                    own_lost += 1;
                    if c.dropped().is_empty() {
                        silent += 1;
                    }
                }
            }
        }
    }
    eprintln!(
        "{flips} record-mark bit flips: {costing_more} lost more than their own record, {own_lost} lost their own ({silent} of them silently)"
    );
    assert!(flips > 1000, "{flips} flips");
    assert_eq!(costing_more, 0, "first: {worst}");
    assert_eq!(silent, 0);
}
