//! What is not decoded is counted and named, never passed over in silence: frames of a
//! link type magnet does not read, and fragmented datagrams still missing
//! pieces when the capture ends.

use magnet_rpc::capture::linktype;
use magnet_rpc::{Decoder, Limits};

/// An Ethernet frame: IPv4/UDP to port 2049 carrying an NFSv3 NULL call;
/// `frag` = Some((id, more_fragments, offset_in_8_bytes)) makes it a fragment.
fn frame(frag: Option<(u16, bool, u16)>) -> Vec<u8> {
    let mut rpc = Vec::new();
    for w in [0x1234u32, 0, 2, 100003, 3, 0, 0, 0, 0, 0] {
        rpc.extend_from_slice(&w.to_be_bytes());
    }
    let mut udp = Vec::new();
    udp.extend_from_slice(&800u16.to_be_bytes());
    udp.extend_from_slice(&2049u16.to_be_bytes());
    udp.extend_from_slice(&((8 + rpc.len()) as u16).to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(&rpc);
    let (id, flags) = match frag {
        Some((id, mf, off)) => (id, (if mf { 0x2000 } else { 0 }) | off),
        None => (1, 0x4000),
    };
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&((20 + udp.len()) as u16).to_be_bytes());
    ip.extend_from_slice(&id.to_be_bytes());
    ip.extend_from_slice(&flags.to_be_bytes());
    ip.extend_from_slice(&[64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&[8, 0]);
    f.extend_from_slice(&ip);
    f.extend_from_slice(&udp);
    f
}

#[test]
fn a_link_type_not_decoded_is_counted_and_named() {
    let mut dec = Decoder::new(Limits::default());
    let mut seen = 0;
    // The same Ethernet bytes under USER0 (147), then under Ethernet.
    for _ in 0..3 {
        dec.packet(0, 147, &frame(None), &mut |_| seen += 1);
    }
    dec.packet(1, linktype::ETHERNET, &frame(None), &mut |_| seen += 1);
    dec.finish(&mut |_| seen += 1);
    let c = dec.counters();
    assert_eq!(c.link_not_decoded, 3);
    assert_eq!(c.link_type_not_decoded, Some(147));
    assert_eq!(c.not_ip, 0);
    assert_eq!(c.rpc_calls, 1, "the Ethernet frame is decoded");
    assert!(
        c.dropped().contains(&("link_not_decoded", 3)),
        "{:?}",
        c.dropped()
    );
    assert_eq!(seen, 1);
}

#[test]
fn fragments_pending_at_the_end_are_counted() {
    let mut dec = Decoder::new(Limits::default());
    // 4,096 first fragments (the reassembly bound), each missing its tail,
    // within a second: none times out, none is evicted.
    for id in 0..4096u16 {
        dec.packet(
            i64::from(id),
            linktype::ETHERNET,
            &frame(Some((id, true, 0))),
            &mut |_| {},
        );
    }
    let c = dec.counters();
    assert_eq!(c.ip_fragments, 4096);
    assert_eq!(c.frag_dropped, 0);
    dec.finish(&mut |_| {});
    let c = dec.counters();
    assert_eq!(c.frag_incomplete_at_end, 4096);
    assert!(
        c.dropped().contains(&("frag_incomplete_at_end", 4096)),
        "{:?}",
        c.dropped()
    );
}

/// An Ethernet/IPv4/TCP frame from 10.0.0.1:`sport` to 10.0.0.2:`dport`.
fn tcp(sport: u16, dport: u16, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&0u32.to_be_bytes());
    t.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    t.extend_from_slice(payload);
    let (src, dst) = if sport < dport {
        ([10, 0, 0, 2], [10, 0, 0, 1])
    } else {
        ([10, 0, 0, 1], [10, 0, 0, 2])
    };
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&((20 + t.len()) as u16).to_be_bytes());
    ip.extend_from_slice(&[0, 1, 0x40, 0, 64, 6, 0, 0]);
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&[8, 0]);
    f.extend_from_slice(&ip);
    f.extend_from_slice(&t);
    f
}

fn record(words: &[u32]) -> Vec<u8> {
    let mut r = (0x8000_0000u32 | (words.len() * 4) as u32)
        .to_be_bytes()
        .to_vec();
    for w in words {
        r.extend_from_slice(&w.to_be_bytes());
    }
    r
}

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;

#[test]
fn a_connection_that_is_not_rpc_is_given_up_without_counting_damage() {
    let mut dec = Decoder::new(Limits::default());
    dec.packet(
        0,
        linktype::ETHERNET,
        &tcp(40000, 80, 99, SYN, &[]),
        &mut |_| {},
    );
    let text = b"GET /index.html HTTP/1.1\r\nHost: example\r\n\r\n".repeat(40);
    let mut seq = 100u32;
    for i in 0..100 {
        let f = tcp(40000, 80, seq, ACK, &text[..1000]);
        dec.packet(1 + i, linktype::ETHERNET, &f, &mut |_| {});
        seq += 1000;
    }
    dec.finish(&mut |_| {});
    let c = dec.counters();
    assert_eq!(c.not_rpc, 1, "{c:?}");
    assert_eq!((c.tcp_skipped_bytes, c.tcp_resyncs), (0, 0), "{c:?}");
    assert_eq!(c.dropped(), vec![], "{c:?}");
}

/// A damaged first record (its mark's length raised past the record bound)
/// costs that record, not the connection: it was given up as not RPC.
#[test]
fn a_damaged_first_record_costs_only_itself() {
    let mut dec = Decoder::new(Limits::default());
    let mut done = Vec::new();
    let (cl, sv) = (40001u16, 2049u16);
    dec.packet(
        0,
        linktype::ETHERNET,
        &tcp(cl, sv, 99, SYN, &[]),
        &mut |t| done.push(t),
    );
    dec.packet(
        1,
        linktype::ETHERNET,
        &tcp(sv, cl, 499, SYN, &[]),
        &mut |t| done.push(t),
    );
    let call = |xid| record(&[xid, 0, 2, 100003, 3, 0, 0, 0, 0, 0]);
    let reply = |xid| record(&[xid, 1, 0, 0, 0, 0]);
    let mut first = call(1);
    first[0] ^= 0x40; // length + 1 GiB
    let mut calls = first;
    for x in 2..=20 {
        calls.extend_from_slice(&call(x));
    }
    dec.packet(
        2,
        linktype::ETHERNET,
        &tcp(cl, sv, 100, ACK, &calls),
        &mut |t| done.push(t),
    );
    let mut replies = Vec::new();
    for x in 2..=20 {
        replies.extend_from_slice(&reply(x));
    }
    dec.packet(
        3,
        linktype::ETHERNET,
        &tcp(sv, cl, 500, ACK, &replies),
        &mut |t| done.push(t),
    );
    dec.finish(&mut |t| done.push(t));
    let c = dec.counters();
    let xids: Vec<u32> = done
        .iter()
        .filter(|t| t.reply_ts_ns.is_some())
        .map(|t| t.xid)
        .collect();
    assert_eq!(xids, (2..=20).collect::<Vec<u32>>(), "{c:?}");
    assert_eq!(c.not_rpc, 0, "{c:?}");
    assert_eq!(c.tcp_skipped_bytes, 44, "the damaged record: {c:?}");
}
