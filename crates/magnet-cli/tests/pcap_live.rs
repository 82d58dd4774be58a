//! `magnet pcap` against tshark (root, real BPF): a clean TCP transfer over
//! loopback and over a veth pair into another network namespace, recorded with and
//! without `--snaplen`. Wireshark's TCP analysis of the pcapng finds no
//! retransmission, out-of-order, duplicate ACK or missing segment; on loopback the
//! frames are tcpdump -i lo's, one per packet; and every frame's comment names
//! exactly the send calls whose bytes tshark decodes in it (none for a pure ACK).
//! About 10 s.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::{magnet, tmp, MAGNET};
use magnet_testkit::{live_or_skip, tshark_fields, Capture, Need, Netns, Side, Veth};

/// 8 sends of 16 KiB: stream bytes [16384 (n-1), 16384 n) are send n's.
const SEND: u64 = 16384;
const SENDS: u64 = 8;

/// The analysis flags a clean transfer must not raise.
const BAD: &str = "tcp.analysis.retransmission || tcp.analysis.fast_retransmission \
    || tcp.analysis.spurious_retransmission || tcp.analysis.out_of_order \
    || tcp.analysis.lost_segment || tcp.analysis.ack_lost_segment \
    || tcp.analysis.duplicate_ack";

fn record(trace: &Path, snaplen: Option<usize>, script: &str) {
    let snap = snaplen.map(|s| s.to_string());
    let mut args = vec!["record", "-q"];
    if let Some(s) = &snap {
        args.extend(["--snaplen", s]);
    }
    args.extend(["-o", trace.to_str().unwrap(), "--", "sh", "-c", script]);
    let o = magnet(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn pcap(trace: &Path, out: &Path, extra: &[&str]) {
    let mut args = vec![
        "pcap",
        "-q",
        trace.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    let o = magnet(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Frames tshark flags with `BAD`, and tshark's expert summary for the message.
fn flagged(file: &Path, port: u16) -> (usize, String) {
    let rows = tshark_fields(
        file,
        &format!("tcp.port == {port} && ({BAD})"),
        &["frame.number"],
    )
    .unwrap();
    let n = rows.iter().filter(|r| !r[0].is_empty()).count();
    let expert = Command::new("tshark")
        .args([
            "-r",
            file.to_str().unwrap(),
            "-n",
            "-q",
            "-z",
            "expert,warn",
        ])
        .output()
        .unwrap();
    (n, String::from_utf8_lossy(&expert.stdout).into_owned())
}

/// Checks every frame of the connection: tshark's payload length against the
/// calls its comment names. Returns (frames, frames with payload).
fn comments_name_the_bytes(file: &Path, port: u16, lo: bool) -> (usize, usize) {
    let rows = tshark_fields(
        file,
        &format!("tcp.port == {port}"),
        &["tcp.dstport", "tcp.seq", "tcp.len", "frame.comment"],
    )
    .unwrap();
    let mut with_payload = 0;
    let mut last_recv = 0u64;
    for r in &rows {
        let (dport, seq, len, c) = (
            r[0].parse::<u16>().unwrap(),
            r[1].parse::<u64>().unwrap(),
            r[2].parse::<u64>().unwrap(),
            &r[3],
        );
        let named = |what: &str| -> Vec<u64> {
            c.split(' ')
                .find_map(|f| f.strip_prefix("app="))
                .unwrap_or("")
                .split(',')
                .filter_map(|e| e.strip_prefix(what))
                .map(|e| e.split('(').next().unwrap().parse().unwrap())
                .collect()
        };
        assert!(!c.contains(" at="), "{c}");
        if len == 0 {
            assert!(!c.contains(" app="), "no payload, calls named: {c}");
            continue;
        }
        with_payload += 1;
        assert_eq!(dport, port, "payload toward the sender: {c}");
        // Relative sequence numbers: the stream's first byte is 1.
        let first = (seq - 1) / SEND + 1;
        let last = (seq - 1 + len - 1) / SEND + 1;
        assert!(last <= SENDS);
        // The sender's frame (or a loopback one) names the sends, exactly.
        let (out, inb) = match () {
            _ if c.contains(" dir=lo ") => (true, true),
            _ if c.contains(" dir=out ") => (true, false),
            _ => (false, true),
        };
        assert_eq!(lo, out && inb, "{c}");
        if out {
            let want: Vec<u64> = (first..=last).collect();
            assert_eq!(named("send#"), want, "seq {seq} len {len}: {c}");
        } else {
            assert!(!c.contains("send#"), "{c}");
        }
        if inb {
            // The receiver's calls that consumed them, in order.
            let recvs = named("recv#");
            assert!(
                !recvs.is_empty(),
                "frame in with payload names no recv: {c}"
            );
            assert!(recvs[0] >= last_recv, "recv calls out of order: {c}");
            last_recv = *recvs.last().unwrap();
        } else {
            assert!(!c.contains("recv#"), "{c}");
        }
    }
    (rows.len(), with_payload)
}

fn check(file: &Path, port: u16, lo: bool, what: &str) -> usize {
    let (n, expert) = flagged(file, port);
    assert_eq!(n, 0, "{what}: tshark flags {n} frames:\n{expert}");
    for bad in [
        "retransmission",
        "Out-Of-Order",
        "ACKed segment that wasn't captured",
        "Previous segment",
    ] {
        assert!(
            !expert.to_lowercase().contains(&bad.to_lowercase()),
            "{what}: {expert}"
        );
    }
    let (frames, payload) = comments_name_the_bytes(file, port, lo);
    // The handshake, 128 KiB of data, its ACKs, the FINs.
    assert!(
        frames >= 7 && payload >= 2,
        "{what}: {frames} frames, {payload} with payload"
    );
    eprintln!("{what}: {frames} frames, {payload} with payload, no analysis flags");
    frames
}

#[test]
fn loopback_pcap_is_what_tcpdump_saw_and_tshark_trusts() {
    if !live_or_skip(
        "loopback_pcap_is_what_tcpdump_saw_and_tshark_trusts",
        &[Need::Btf, Need::Tool("tshark"), Need::Tool("tcpdump")],
    ) {
        return;
    }
    let port = 21_000 + (std::process::id() % 20_000) as u16;
    let script = format!("{MAGNET} loadgen --tcp {SENDS}x16k --port {port}");
    for snap in [Some(128), None] {
        let what = format!("loopback, snaplen {snap:?}");
        let trace = tmp("lo.mgt");
        let out = tmp("lo.pcapng");
        let cap =
            Capture::start(None, "lo", &["-s", "128", "tcp", "port", &port.to_string()]).unwrap();
        record(&trace, snap, &script);
        let theirs = cap.stop().unwrap();
        pcap(&trace, &out, &[]);
        let ours = check(&out, port, true, &what);
        // One frame per packet, as tcpdump -i lo saw them: same count, same
        // (direction, seq, len, flags) in the same order.
        let key = |f: &Path| {
            tshark_fields(
                f,
                &format!("tcp.port == {port}"),
                &["tcp.srcport", "tcp.seq_raw", "tcp.len", "tcp.flags"],
            )
            .unwrap()
        };
        let t = key(theirs.path());
        assert_eq!(
            ours,
            t.len(),
            "{what}: frames, tcpdump -i lo saw {}",
            t.len()
        );
        let as_set = |v: Vec<Vec<String>>| v.into_iter().collect::<BTreeSet<_>>();
        assert_eq!(
            as_set(key(&out)),
            as_set(t),
            "{what}: frames differ from tcpdump's"
        );
        // -i lo: the same; -o -: the same bytes on standard output.
        let o = magnet(&["pcap", "-q", trace.to_str().unwrap(), "-o", "-"]);
        assert!(o.status.success());
        assert_eq!(
            o.stdout,
            std::fs::read(&out).unwrap(),
            "{what}: -o - differs"
        );
        assert!(!Path::new("-").exists());
        let _ = std::fs::remove_file(&trace);
        let _ = std::fs::remove_file(&out);
    }
}

#[test]
fn veth_pcap_is_clean_for_tshark() {
    if !live_or_skip(
        "veth_pcap_is_clean_for_tshark",
        &[Need::Btf, Need::Tool("tshark")],
    ) {
        return;
    }
    let ns = Netns::new().unwrap();
    let link = Veth::pair(Side::Root, Side::Ns(&ns)).unwrap();
    let b = link.b();
    let port = 22_000 + (std::process::id() % 20_000) as u16;
    let script = format!(
        "{MAGNET} loadgen --tcp {SENDS}x16k --netns {ns} --peer-addr {addr} --port {port}",
        ns = ns.name(),
        addr = b.addr()
    );
    for snap in [Some(128), None] {
        let what = format!("veth, snaplen {snap:?}");
        let trace = tmp("veth.mgt");
        let out = tmp("veth.pcapng");
        record(&trace, snap, &script);
        pcap(&trace, &out, &[]);
        let once = check(&out, port, false, &what);
        // Each end alone is clean too, and holds each packet once.
        for end in [link.a(), b] {
            pcap(&trace, &out, &["-i", end.name()]);
            let n = check(&out, port, false, &format!("{what}, -i {}", end.name()));
            assert_eq!(n, once, "{what}: frames on {}", end.name());
        }
        // The oracle sees duplicates: both ends in one file are retransmissions.
        pcap(&trace, &out, &["--each-device"]);
        let (n, _) = flagged(&out, port);
        assert!(
            n > 0,
            "{what}: tshark flagged nothing with each device's frames"
        );
        let _ = std::fs::remove_file(&trace);
        let _ = std::fs::remove_file(&out);
    }
}

/// Both ends of a veth pair between two new namespaces are ifindex 2, and here
/// both are named alike, as two containers' `eth0`s are. `-i NAME` must not
/// merge them (tshark then takes every packet's second copy for a
/// retransmission): it is refused, in one line naming both; `-i NAME@NETNS`
/// writes exactly the frames tcpdump saw on that end, the frames no socket
/// names (a SYN to a closed port, the reset that answers it) included.
#[test]
fn one_device_of_two_with_the_same_ifindex_and_name() {
    if !live_or_skip(
        "one_device_of_two_with_the_same_ifindex_and_name",
        &[Need::Btf, Need::Tool("tshark"), Need::Tool("tcpdump")],
    ) {
        return;
    }
    use std::io::{Read, Write};
    const NAME: &str = "mgsame0";
    let (a, b) = (Netns::new().unwrap(), Netns::new().unwrap());
    let link = Veth::pair(Side::Ns(&a), Side::Ns(&b)).unwrap();
    let baddr = link.b().addr();
    for (ns, end) in [(&a, link.a()), (&b, link.b())] {
        for args in [
            &["link", "set", end.name(), "down"][..],
            &["link", "set", end.name(), "name", NAME],
            &["link", "set", NAME, "up"],
        ] {
            assert!(ns.command("ip").args(args).status().unwrap().success());
        }
    }
    let port = 23_000 + (std::process::id() % 20_000) as u16;
    let caps: Vec<Capture> = [&a, &b]
        .iter()
        .map(|ns| Capture::start(Some(ns), NAME, &["-s", "128", "tcp"]).unwrap())
        .collect();
    let trace = tmp("same_ifindex.mgt");
    let host = baddr.to_string();
    let rec = magnet_testkit::Recorder::record(
        MAGNET,
        None,
        &trace,
        &["--all", "--host", &host, "--snaplen", "128"],
    );
    let listener = magnet_testkit::run_in_netns(&b, || std::net::TcpListener::bind((baddr, port)))
        .unwrap()
        .unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut v = Vec::new();
        s.read_to_end(&mut v).unwrap();
        v.len()
    });
    let mut c = magnet_testkit::run_in_netns(&a, || std::net::TcpStream::connect((baddr, port)))
        .unwrap()
        .unwrap();
    c.write_all(&[9u8; 200_000]).unwrap();
    drop(c);
    assert_eq!(server.join().unwrap(), 200_000);
    let refused =
        magnet_testkit::run_in_netns(&a, || std::net::TcpStream::connect((baddr, port + 1)))
            .unwrap();
    assert!(refused.is_err(), "nothing listens on {}", port + 1);
    rec.stop().success();
    let wire: Vec<_> = caps.into_iter().map(|c| c.stop().unwrap()).collect();

    let out = tmp("same_ifindex.pcapng");
    let o = magnet(&[
        "pcap",
        "-q",
        trace.to_str().unwrap(),
        "-i",
        NAME,
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "-i {NAME} names two devices: {err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    for ns in [&a, &b] {
        assert!(err.contains(&format!("{NAME}@{}", ns.inode())), "{err}");
    }
    let frames = |f: &Path, filter: &str| {
        tshark_fields(f, filter, &["frame.number"])
            .unwrap()
            .iter()
            .filter(|r| !r[0].is_empty())
            .count()
    };
    for (ns, w) in [&a, &b].into_iter().zip(&wire) {
        let sel = format!("{NAME}@{}", ns.inode());
        pcap(&trace, &out, &["-i", &sel]);
        let filter = format!("tcp.port == {port} || tcp.port == {}", port + 1);
        let (got, want) = (frames(&out, &filter), frames(w.path(), &filter));
        assert_eq!(got, want, "-i {sel}: frames, tcpdump's on that end");
        let refused = format!("tcp.port == {}", port + 1);
        assert_eq!(frames(&out, &refused), 2, "-i {sel}: the SYN and its reset");
        // Wireshark's TCP analysis finds in magnet's frames what it finds in
        // tcpdump's. (The frames hold the bytes the trace kept: synthesised
        // headers carry no receive window, so a window update would read as
        // a duplicate ACK.)
        let (got, expert) = flagged(&out, port);
        let (want, expert_want) = flagged(w.path(), port);
        assert_eq!(
            got, want,
            "-i {sel}: tshark's flags: {expert}\nvs tcpdump's: {expert_want}"
        );
    }
}

/// A receiver behind a lossy hop acknowledges with SACK blocks: 12 to 36
/// bytes of options past its usual header. Without the frame bytes
/// (`--snaplen`), the synthesised header must take them in, as the header
/// length the ACK had: the receiver sends no data, so every frame it sends
/// reads `Len=0` in tshark, as in tcpdump's capture of the same ACKs.
#[test]
fn sack_acks_have_no_payload_in_synthesised_headers() {
    if !live_or_skip(
        "sack_acks_have_no_payload_in_synthesised_headers",
        &[Need::Btf, Need::Tool("tshark"), Need::Tool("tcpdump")],
    ) {
        return;
    }
    use std::io::{Read, Write};
    let chain = magnet_testkit::Chain::new(3).unwrap();
    let (a, b) = (chain.host(0), chain.host(2));
    chain.end(1).tbf("20mbit", "8kb", "4ms").unwrap();
    let baddr = chain.addr(2);
    let port = 24_000 + (std::process::id() % 20_000) as u16;
    let cap = Capture::start(Some(b), chain.end(2).name(), &["-s", "128", "tcp"]).unwrap();
    let trace = tmp("sack.mgt");
    let host = baddr.to_string();
    let rec = magnet_testkit::Recorder::record(MAGNET, None, &trace, &["--all", "--host", &host]);
    let listener = magnet_testkit::run_in_netns(b, || std::net::TcpListener::bind((baddr, port)))
        .unwrap()
        .unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut v = Vec::new();
        s.read_to_end(&mut v).unwrap();
        v.len()
    });
    let mut c = magnet_testkit::run_in_netns(a, || std::net::TcpStream::connect((baddr, port)))
        .unwrap()
        .unwrap();
    c.write_all(&vec![4u8; 2 << 20]).unwrap();
    drop(c);
    assert_eq!(server.join().unwrap(), 2 << 20);
    rec.stop().success();
    let wire = cap.stop().unwrap();
    let from_b = format!("tcp.srcport == {port}");
    let sacks = tshark_fields(
        &wire,
        &format!("{from_b} && tcp.options.sack"),
        &["frame.number"],
    )
    .unwrap()
    .len();
    assert!(
        sacks > 0,
        "the receiver sent no SACK; the test proves nothing"
    );
    let out = tmp("sack.pcapng");
    let sel = format!("{}@{}", chain.end(2).name(), b.inode());
    pcap(&trace, &out, &["-i", &sel]);
    let lens = |f: &Path| -> Vec<String> {
        tshark_fields(f, &from_b, &["tcp.len"])
            .unwrap()
            .into_iter()
            .map(|r| r[0].clone())
            .collect()
    };
    let (got, want) = (lens(&out), lens(wire.path()));
    assert!(want.iter().all(|l| l == "0"), "tcpdump: {want:?}");
    // (Which frames is one_device_of_two_with_the_same_ifindex_and_name's
    // check. Behind a router the counts here differ: by one either way in
    // ~800 alone, by 36 of 880 beside the other tests of this file, not
    // understood yet. What is judged here is the lengths.)
    assert!(
        got.len() * 2 >= want.len(),
        "the receiver's frames: {} of tcpdump's {}",
        got.len(),
        want.len()
    );
    let with_data: Vec<&String> = got.iter().filter(|l| *l != "0").collect();
    assert!(
        with_data.is_empty(),
        "frames from a receiver with data: {with_data:?} ({sacks} SACKs)"
    );
}

/// The sender's own device behind a token bucket with a small queue: the
/// qdisc drops packets before the device ever sees them. They are in the
/// trace (ip and drop layers) but were on no wire: the pcapng of the sender's
/// device holds what tcpdump there saw, and no frame marked dropped.
#[test]
fn packets_a_qdisc_dropped_are_no_frames() {
    if !live_or_skip(
        "packets_a_qdisc_dropped_are_no_frames",
        &[Need::Btf, Need::Tool("tshark"), Need::Tool("tcpdump")],
    ) {
        return;
    }
    use std::io::{Read, Write};
    let (a, b) = (Netns::new().unwrap(), Netns::new().unwrap());
    let link = Veth::pair(Side::Ns(&a), Side::Ns(&b)).unwrap();
    link.a().tbf("20mbit", "8kb", "4ms").unwrap();
    let baddr = link.b().addr();
    let port = 25_000 + (std::process::id() % 20_000) as u16;
    let cap = Capture::start(Some(&a), link.a().name(), &["-s", "128", "tcp"]).unwrap();
    let trace = tmp("qdisc_drop.mgt");
    let host = baddr.to_string();
    let rec = magnet_testkit::Recorder::record(
        MAGNET,
        None,
        &trace,
        &["--all", "--host", &host, "--layers", "app,tcp,ip,dev,drop"],
    );
    let listener = magnet_testkit::run_in_netns(&b, || std::net::TcpListener::bind((baddr, port)))
        .unwrap()
        .unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut v = Vec::new();
        s.read_to_end(&mut v).unwrap();
        v.len()
    });
    let mut c = magnet_testkit::run_in_netns(&a, || std::net::TcpStream::connect((baddr, port)))
        .unwrap()
        .unwrap();
    c.write_all(&vec![6u8; 2 << 20]).unwrap();
    drop(c);
    assert_eq!(server.join().unwrap(), 2 << 20);
    rec.stop().success();
    let wire = cap.stop().unwrap();
    let out = tmp("qdisc_drop.pcapng");
    pcap(&trace, &out, &["--each-device"]);
    // (A frame dropped after a device saw it, by the receiver's TCP say, was on
    // the wire: its path names the device.)
    let never_sent = "frame.comment contains \" drop=\" && !(frame.comment contains \"dev_\")";
    let marked = tshark_fields(&out, never_sent, &["frame.number"])
        .unwrap()
        .len();
    let parse = magnet(&["parse", "--json", "--kind", "drop", trace.to_str().unwrap()]);
    let drops = String::from_utf8_lossy(&parse.stdout).lines().count();
    assert!(
        drops > 0,
        "the qdisc dropped nothing; the test proves nothing"
    );
    assert_eq!(
        marked, 0,
        "frames of packets dropped before a device ({drops} drops)"
    );
    let sel = format!("{}@{}", link.a().name(), a.inode());
    pcap(&trace, &out, &["-i", &sel]);
    let count = |f: &Path| {
        tshark_fields(f, &format!("tcp.port == {port}"), &["frame.number"])
            .unwrap()
            .len()
    };
    // No more than tcpdump saw there. (Fewer by well under 1 %: behind the
    // token bucket a few frames' device is not told apart yet.)
    let (got, want) = (count(&out), count(wire.path()));
    assert!(
        got <= want && got * 50 >= want * 49,
        "frames on {sel}: {got}, tcpdump's there {want}"
    );
}

/// A tun device (no link header) made after the recording started, as a VPN
/// or packetdrill makes one: `-i NAME` finds it by the name the END block
/// gives it, its interface block is raw IP, and each frame is as long as
/// tcpdump's on it (no made-up Ethernet header), IPv4 and IPv6.
#[test]
fn a_tun_device_made_during_the_recording_is_raw_ip_as_tcpdump_sees_it() {
    if !live_or_skip(
        "a_tun_device_made_during_the_recording_is_raw_ip_as_tcpdump_sees_it",
        &[
            Need::Btf,
            Need::Tool("tshark"),
            Need::Tool("tcpdump"),
            Need::Tool("python3"),
            Need::File("/dev/net/tun"),
        ],
    ) {
        return;
    }
    use std::io::BufRead;
    let ns = Netns::new().unwrap();
    let trace = tmp("tun.mgt");
    let rec = magnet_testkit::Recorder::record(MAGNET, None, &trace, &["--all"]);
    let tun = format!("mgt{}", std::process::id() % 100_000);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tun_echo.py");
    let mut echo = KillOnDrop(
        ns.command("python3")
            .arg(&script)
            .args(["serve", &tun])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut ready = String::new();
    std::io::BufReader::new(echo.0.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready.trim(), "ready", "tun_echo.py did not open {tun}");
    // Netns::new turns IPv6 off; this device carries both.
    ns.sysctl("net/ipv6/conf/all/disable_ipv6", "0").unwrap();
    ns.sysctl(&format!("net/ipv6/conf/{tun}/disable_ipv6"), "0")
        .unwrap();
    for args in [
        vec!["addr", "add", "10.211.0.1/24", "dev", &tun],
        vec!["addr", "add", "fd11::1/64", "dev", &tun, "nodad"],
        vec!["link", "set", &tun, "up"],
    ] {
        let st = ns.command("ip").args(&args).status().unwrap();
        assert!(st.success(), "ip {args:?}");
    }
    let cap = Capture::start(Some(&ns), &tun, &["udp"]).unwrap();
    for addr in ["10.211.0.2", "fd11::2"] {
        let o = ns
            .command("python3")
            .arg(&script)
            .args(["send", addr, "20"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let wire = cap.stop().unwrap();
    rec.stop().success();
    drop(echo);
    let out = tmp("tun.pcapng");
    let sel = format!("{tun}@{}", ns.inode());
    pcap(&trace, &out, &["-i", &sel]);
    let frames = |f: &Path| {
        let mut v: Vec<Vec<String>> =
            tshark_fields(f, "udp", &["frame.len", "ip.src", "ipv6.src", "udp.length"]).unwrap();
        v.sort();
        v
    };
    let (got, want) = (frames(&out), frames(wire.path()));
    assert_eq!(
        want.len(),
        80,
        "tcpdump on {tun}: 20 datagrams and answers, twice"
    );
    assert_eq!(got, want, "frames on {sel}: magnet's vs tcpdump's");
    let encap = tshark_fields(&out, "udp", &["frame.encap_type"]).unwrap();
    assert!(
        encap.iter().all(|r| r[0] == "7"),
        "raw IP (WTAP_ENCAP_RAW_IP, 7) on every frame: {encap:?}"
    );
    let desc = Command::new("tshark")
        .args([
            "-r",
            out.to_str().unwrap(),
            "-T",
            "fields",
            "-e",
            "frame.interface_description",
            "-c",
            "1",
        ])
        .output()
        .unwrap();
    let desc = String::from_utf8_lossy(&desc.stdout);
    assert!(desc.contains("made during the recording"), "{desc}");
}

/// A helper process that must not outlive its test, even one that panics.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
