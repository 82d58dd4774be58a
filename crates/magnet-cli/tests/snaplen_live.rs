//! `magnet record --snaplen N` (root, real BPF): a TCP workload over a veth pair,
//! tcpdump -s N on the peer's end; `magnet pcap`'s frames of that interface for the
//! connection are tcpdump's bytes, frame for frame, payload included. About 5 s.

mod common;

use common::{magnet, tmp, MAGNET};
use magnet_pcap::CaptureReader;
use magnet_testkit::{live_or_skip, Capture, End, Need, Netns, Side, Veth};
use magnet_wire::kernel::ip_of_frame;

const SNAP: usize = 96;
const PORT: u16 = 7431;

/// (outbound?, bytes, original length) of the connection's frames, in file order.
/// `keep` says whether a frame belongs to the interface compared.
fn frames(
    path: &std::path::Path,
    keep: impl Fn(&magnet_pcap::Packet) -> Option<bool>,
) -> Vec<(bool, Vec<u8>, u32)> {
    let mut rd = CaptureReader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(p) = rd.next_packet() {
        let p = p.unwrap();
        let Some(ip) = ip_of_frame(p.data) else {
            continue;
        };
        if ip.protocol != 6 || (ip.sport != PORT && ip.dport != PORT) {
            continue;
        }
        if let Some(outbound) = keep(&p) {
            out.push((outbound, p.data.to_vec(), p.orig_len));
        }
    }
    out
}

/// Records the workload with `--snaplen snap` and tcpdump `-s snap` on b, and
/// checks that `magnet pcap`'s frames of b are tcpdump's bytes, frame for frame,
/// payload included (TCP payload sits in the skb's page fragments, past its
/// linear part, on both sides of the veth). Returns the frames compared.
fn frames_equal_tcpdump(ns: &Netns, b: &End, script: &str, snap: usize) -> usize {
    let cap = Capture::start(b.netns(), b.name(), &["-s", &snap.to_string()]).unwrap();
    let trace = tmp(&format!("snap{snap}.mgt"));
    let out_pcap = tmp(&format!("snap{snap}.pcapng"));
    let o = magnet(&[
        "record",
        "-q",
        "--snaplen",
        &snap.to_string(),
        "-o",
        trace.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let pcap = cap.stop().unwrap();
    let o = magnet(&[
        "pcap",
        trace.to_str().unwrap(),
        "-i",
        b.name(),
        "-o",
        out_pcap.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let theirs = frames(pcap.path(), |_| Some(false));
    let if_tag = format!(" if={} ", b.ifindex());
    let ours = frames(&out_pcap, |p| {
        let c = p.comments().next()?;
        if !c.contains(&if_tag) {
            return None;
        }
        // Frames with recorded bytes say how many, and never `synthesized`.
        assert!(c.contains(" snap=") && !c.contains("synthesized"), "{c}");
        Some(c.contains(" dir=out "))
    });
    let _ = std::fs::remove_file(&trace);
    let _ = std::fs::remove_file(&out_pcap);
    // 8 x 16 KiB one way, acknowledged, plus handshake and close.
    assert!(theirs.len() >= 20, "tcpdump saw {} frames", theirs.len());
    assert_eq!(ours.len(), theirs.len(), "frames on {} ({ns:?})", b.name());
    // tcpdump's order on one interface is the driver's; ours is by time. Compare
    // each direction in order (the two may interleave differently).
    let mut payload = 0;
    for dir in [false, true] {
        let o: Vec<_> = ours.iter().filter(|f| f.0 == dir).collect();
        // tcpdump does not say the direction: a frame is outbound on b when b's
        // address is its source.
        let t: Vec<_> = theirs
            .iter()
            .filter(|f| {
                let ip = ip_of_frame(&f.1).unwrap();
                (ip.saddr == std::net::IpAddr::V4(b.addr())) == dir
            })
            .collect();
        assert_eq!(o.len(), t.len(), "direction out={dir}");
        for (i, (x, y)) in o.iter().zip(&t).enumerate() {
            assert_eq!(x.2, y.2, "frame {i} out={dir}: original length");
            assert_eq!(y.1.len(), (y.2 as usize).min(snap));
            assert_eq!(
                x.1.len(),
                y.1.len(),
                "frame {i} out={dir}: {} bytes, tcpdump {}",
                x.1.len(),
                y.1.len()
            );
            assert!(x.1 == y.1, "frame {i} out={dir}: bytes differ");
            // Ethernet + IPv4 + TCP with timestamps: 66 bytes of headers.
            if x.1.len() > 66 {
                payload += 1;
            }
        }
    }
    // The 128 KiB of payload: at least 8 frames (GSO) carry some of it.
    assert!(payload >= 8, "{payload} frames with payload");
    eprintln!(
        "snaplen {snap}: {} frames equal tcpdump's, {payload} of them with payload",
        ours.len()
    );
    ours.len()
}

#[test]
fn snaplen_frames_equal_tcpdump() {
    if !live_or_skip(
        "snaplen_frames_equal_tcpdump",
        &[Need::Btf, Need::Tool("tcpdump")],
    ) {
        return;
    }
    let ns = Netns::new().unwrap();
    let link = Veth::pair(Side::Root, Side::Ns(&ns)).unwrap();
    let b = link.b();
    let trace = tmp("snap.mgt");
    let script = format!(
        "{MAGNET} loadgen --tcp 8x16k --netns {ns} --peer-addr {addr} --port {PORT}",
        ns = ns.name(),
        addr = b.addr()
    );
    // A few payload bytes (one fragment), then the most a frame record keeps
    // (2048: 1982 payload bytes, across fragments where the sender's page
    // fragment ends).
    frames_equal_tcpdump(&ns, b, &script, SNAP);
    frames_equal_tcpdump(&ns, b, &script, 2048);

    // `magnet match` takes footprints from the frame bytes: recorded without the
    // IP layer (the dev layer records no addresses or ports, so without the frame
    // bytes no frame could match), every IPv4 frame of tcpdump's still matches.
    let cap = Capture::start(b.netns(), b.name(), &["-s", &SNAP.to_string()]).unwrap();
    let o = magnet(&[
        "record",
        "-q",
        "--layers",
        "app,dev",
        "--snaplen",
        &SNAP.to_string(),
        "-o",
        trace.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let pcap = cap.stop().unwrap();
    let o = magnet(&[
        "match",
        trace.to_str().unwrap(),
        pcap.path().to_str().unwrap(),
        "--json",
    ]);
    let _ = std::fs::remove_file(&trace);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary: serde_json::Value = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| v.get("summary").cloned())
        .expect("summary line");
    let n = summary["ipv4_frames"].as_u64().unwrap();
    assert!(n >= 20, "{summary}");
    assert_eq!(summary["ipv4_matched"], n, "{summary}");
}
