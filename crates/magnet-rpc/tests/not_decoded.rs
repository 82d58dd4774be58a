//! What is not decoded is counted and named (issue 24, finding 10): frames of a
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
