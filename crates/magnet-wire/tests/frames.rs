//! `record --snaplen` frame records, on a trace written here (no privileges): the
//! packet's header fields come from its frame, `magnet pcap` writes the bytes as
//! they are, and a frame record shorter than its caplen is a warning, not a panic.

use magnet_pcap::CaptureReader;
use magnet_trace::catalog::{kind, FieldType};
use magnet_trace::{Catalog, ClockMap, Footer, Header, TraceReader, TraceWriter};
use magnet_wire::export::write_pcapng;
use magnet_wire::kernel::Kernel;

fn rec(cat: &Catalog, k: u16, ts: u64, fields: &[(&str, u64)], tail: &[u8]) -> Vec<u8> {
    let d = cat.get(k).unwrap();
    let mut b = vec![0u8; d.size as usize];
    b[0..8].copy_from_slice(&ts.to_le_bytes());
    b[8..10].copy_from_slice(&k.to_le_bytes());
    for (name, v) in fields {
        let f = d.field(name).unwrap();
        assert!(!matches!(f.ty, FieldType::Addr | FieldType::Comm));
        let (at, sz) = (f.offset as usize, f.ty.size() as usize);
        b[at..at + sz].copy_from_slice(&v.to_le_bytes()[..sz]);
    }
    b.extend_from_slice(tail);
    b
}

/// Ethernet + IPv4 (id 0x1234, 10.9.0.1 -> 10.9.0.2) + TCP 40000 -> 7431, seq 1000,
/// ack 2000, PSH|ACK, data offset 8 (12 bytes of options), then payload: 100 bytes.
fn frame() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend([0x45, 0, 0, 86, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0]);
    f.extend([10, 9, 0, 1, 10, 9, 0, 2]);
    f.extend([0x9c, 0x40, 0x1d, 0x07]);
    f.extend(1000u32.to_be_bytes());
    f.extend(2000u32.to_be_bytes());
    f.extend([0x80, 0x18, 0x01, 0xf5, 0, 0, 0, 0]);
    f.extend([1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
    f.resize(100, 0xab);
    f
}

fn trace(cap: usize, truncated: bool) -> Vec<u8> {
    let mut h = Header::new(
        "h".into(),
        "k".into(),
        1,
        ClockMap {
            monotonic_ns: 1_000,
            realtime_ns: 1_700_000_000_000_000_000,
        },
    );
    h.catalog = Catalog::builtin();
    let cat = h.catalog.clone();
    let mut w = TraceWriter::new(Vec::new(), &h).unwrap();
    let f = frame();
    let dev = [
        ("pkt_id", 0x50),
        ("ifindex", 3),
        ("len", 100),
        ("ethertype", 0x0800),
    ];
    w.push(&rec(&cat, kind::DEV_START_XMIT, 5_000, &dev, &[]))
        .unwrap();
    let tail = if truncated { &f[..10] } else { &f[..cap] };
    let fr = [
        ("pkt_id", 0x50),
        ("ifindex", 3),
        ("len", 100),
        ("caplen", cap as u64),
        ("dev_kind", kind::DEV_START_XMIT as u64),
    ];
    w.push(&rec(&cat, kind::FRAME, 5_000, &fr, tail)).unwrap();
    w.finish(&Footer::default()).unwrap()
}

fn load(t: &[u8]) -> Kernel {
    Kernel::load(&mut TraceReader::new(t).unwrap()).unwrap()
}

#[test]
fn frame_bytes_give_fields_and_pcap_bytes() {
    let k = load(&trace(80, false));
    assert!(k.warnings.is_empty(), "{:?}", k.warnings);
    assert_eq!(k.packets.len(), 1);
    let p = &k.packets[0];
    let ip = p.ip.expect("fields from the frame");
    assert_eq!(
        (
            ip.ip_id,
            ip.tot_len,
            ip.ttl,
            ip.sport,
            ip.dport,
            ip.seq,
            ip.ack,
            ip.tcp_flags
        ),
        (0x1234, 86, 64, 40000, 7431, 1000, 2000, 0x18)
    );
    assert_eq!(p.frame_at(&p.hops[0]).unwrap(), &frame()[..80]);

    let mut out = Vec::new();
    let st = write_pcapng(&k, &mut out).unwrap();
    assert_eq!((st.frames, st.captured, st.synthesized_ip), (1, 1, 0));
    let path = std::env::temp_dir().join(format!("magnet-frames-{}.pcapng", std::process::id()));
    std::fs::write(&path, &out).unwrap();
    let mut rd = CaptureReader::open(&path).unwrap();
    let pk = rd.next_packet().unwrap().unwrap();
    assert_eq!(pk.data, &frame()[..80]);
    assert_eq!(pk.orig_len, 100);
    let c = pk.comments().next().unwrap();
    assert!(c.ends_with(" snap=80") && !c.contains("synthesized"), "{c}");
    drop(rd);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn short_frame_record_is_a_warning() {
    let k = load(&trace(80, true));
    assert_eq!(k.warnings.len(), 1, "{:?}", k.warnings);
    assert!(
        k.warnings[0].contains("caplen says 128"),
        "{:?}",
        k.warnings
    );
    // No bytes, no fields: the frame is synthesised (link header only) and says so.
    assert!(k.packets[0].frames.is_empty() && k.packets[0].ip.is_none());
    let st = write_pcapng(&k, Vec::new()).unwrap();
    assert_eq!((st.frames, st.captured, st.link_only), (1, 0, 1));
}
