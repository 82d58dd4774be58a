//! Reassembly and the flow table at scale, on frames built here (no privileges).
//! Correctness with exact counts; the speed (linear, both) is measured by
//! bench/rpc-scale.sh, but the reversed-segment case also carries a generous bound
//! that the old quadratic store (a scan per segment) could not meet.

use std::time::Instant;

use magnet_rpc::{capture::linktype, Decoder, Limits, Outcome, Transaction};

fn frame(
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    seq: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
    let tot = 20 + 20 + payload.len();
    f.extend_from_slice(&[
        0x45,
        0,
        (tot >> 8) as u8,
        tot as u8,
        0,
        0,
        0x40,
        0,
        64,
        6,
        0,
        0,
    ]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&0u32.to_be_bytes());
    f.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend_from_slice(payload);
    f
}

/// An NFSv3 NULL call record (record mark included) with `pad` bytes of arguments.
fn call_record(xid: u32, pad: usize) -> Vec<u8> {
    let mut m = Vec::new();
    for w in [xid, 0, 2, 100003, 3, 0, 0, 0, 0, 0] {
        m.extend_from_slice(&w.to_be_bytes());
    }
    m.resize(m.len() + pad, 0);
    let mut r = (0x8000_0000u32 | m.len() as u32).to_be_bytes().to_vec();
    r.extend(m);
    r
}

fn reply_record(xid: u32) -> Vec<u8> {
    let mut r = (0x8000_0000u32 | 24).to_be_bytes().to_vec();
    for w in [xid, 1, 0, 0, 0, 0] {
        r.extend_from_slice(&w.to_be_bytes());
    }
    r
}

const C: [u8; 4] = [10, 0, 0, 1];
const S: [u8; 4] = [10, 0, 0, 2];

#[test]
fn one_record_in_200000_reversed_one_byte_segments() {
    let rec = call_record(7, 200_000 - 44);
    assert_eq!(rec.len(), 200_000);
    let mut dec = Decoder::new(Limits::default());
    let mut out: Vec<Transaction> = Vec::new();
    let t0 = Instant::now();
    let ts = 1_700_000_000_000_000_000;
    dec.packet(
        ts,
        linktype::ETHERNET,
        &frame(C, S, 700, 2049, 999, 0x02, &[]),
        &mut |t| out.push(t),
    );
    dec.packet(
        ts,
        linktype::ETHERNET,
        &frame(S, C, 2049, 700, 4999, 0x02, &[]),
        &mut |t| out.push(t),
    );
    for i in (0..rec.len()).rev() {
        let f = frame(C, S, 700, 2049, 1000 + i as u32, 0x08, &rec[i..i + 1]);
        dec.packet(ts, linktype::ETHERNET, &f, &mut |t| out.push(t));
    }
    dec.packet(
        ts + 1000,
        linktype::ETHERNET,
        &frame(S, C, 2049, 700, 5000, 0x08, &reply_record(7)),
        &mut |t| out.push(t),
    );
    dec.finish(&mut |t| out.push(t));
    let el = t0.elapsed();
    let c = dec.counters();
    assert_eq!(out.len(), 1);
    assert_eq!(
        (out[0].xid, out[0].outcome, out[0].exec_ns()),
        (7, Outcome::Complete, Some(1000))
    );
    assert_eq!(
        (c.tcp_out_of_order, c.tcp_gap_bytes, c.tcp_skipped_bytes),
        (199_999, 0, 0)
    );
    assert!(el.as_secs() < 30, "{el:?}: reassembly is not linear");
}

#[test]
fn flow_table_past_its_bound_evicts_the_idlest_exactly() {
    const FLOWS: u32 = 50_000;
    let lim = Limits {
        max_streams: 512,
        ..Limits::default()
    };
    let mut dec = Decoder::new(lim);
    let mut out: Vec<Transaction> = Vec::new();
    let mut ts = 1_700_000_000_000_000_000i64;
    for k in 0..FLOWS {
        let ip = [10, 1 + (k >> 16) as u8, (k >> 8) as u8, k as u8];
        let sport = 1000 + (k % 50_000) as u16;
        dec.packet(
            ts,
            linktype::ETHERNET,
            &frame(ip, S, sport, 2049, 99, 0x02, &[]),
            &mut |t| out.push(t),
        );
        dec.packet(
            ts + 1,
            linktype::ETHERNET,
            &frame(ip, S, sport, 2049, 100, 0x08, &call_record(k, 0)),
            &mut |t| out.push(t),
        );
        dec.packet(
            ts + 2,
            linktype::ETHERNET,
            &frame(S, ip, 2049, sport, 500, 0x02, &[]),
            &mut |t| out.push(t),
        );
        dec.packet(
            ts + 3,
            linktype::ETHERNET,
            &frame(S, ip, 2049, sport, 501, 0x08, &reply_record(k)),
            &mut |t| out.push(t),
        );
        ts += 10;
    }
    dec.finish(&mut |t| out.push(t));
    let c = dec.counters();
    assert_eq!(c.transactions, FLOWS as u64);
    assert!(out.iter().all(|t| t.outcome == Outcome::Complete));
    // Two directions per flow; the table keeps 512 at the end.
    assert_eq!(c.streams_evicted, 2 * FLOWS as u64 - 512);
}
