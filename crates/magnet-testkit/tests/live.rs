//! Live tests of the kit itself: each builds a topology, sends real TCP across it, and
//! checks that teardown leaves nothing behind. Skipped unless root (`live_or_skip`; with
//! `MAGNET_REQUIRE_LIVE=1` a skip is a failure).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;

use magnet_testkit::{
    iface_counters, live_or_skip, qdisc_available, run_in_netns, tshark_fields, Capture, Chain,
    Need, Netns, Rack, Side, Veth,
};

/// Listens on `addr` inside `ns`, connects from the caller's thread (wherever it is),
/// and checks a few bytes go across and back.
fn tcp_roundtrip(listen_ns: &Netns, addr: SocketAddr, client_ns: Option<&Netns>) {
    let listener = run_in_netns(listen_ns, || TcpListener::bind(addr))
        .unwrap()
        .unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = [0u8; 5];
        s.read_exact(&mut buf).unwrap();
        s.write_all(&buf).unwrap();
    });
    let talk = move || {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"hello").unwrap();
        let mut buf = [0u8; 5];
        c.read_exact(&mut buf).unwrap();
        buf
    };
    let echoed = match client_ns {
        Some(ns) => run_in_netns(ns, talk).unwrap(),
        None => talk(),
    };
    assert_eq!(&echoed, b"hello");
    server.join().unwrap();
}

fn netns_exists(name: &str) -> bool {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.split_whitespace().next() == Some(name))
}

fn root_link_exists(name: &str) -> bool {
    std::path::Path::new("/sys/class/net").join(name).exists()
}

#[test]
fn root_to_ns_pair_carries_tcp_and_is_torn_down() {
    if !live_or_skip("root_to_ns_pair_carries_tcp_and_is_torn_down", &[]) {
        return;
    }
    let ns = Netns::new().unwrap();
    let name = ns.name().to_string();
    let link = Veth::pair(Side::Root, Side::Ns(&ns)).unwrap();
    let root_if = link.a().name().to_string();
    assert!(root_if.len() <= 15);
    assert_ne!(link.a().addr(), link.b().addr());
    assert!(link.subnet().contains(link.b().addr()));
    assert!(link.a().ifindex() > 0 && link.b().ifindex() > 0);
    assert!(root_link_exists(&root_if));

    let before = link.b().counters().unwrap();
    tcp_roundtrip(&ns, link.b().sock(7001), None);
    let added = link.b().counters().unwrap().since(&before);
    // Handshake, data both ways, FIN exchange: at least a few packets each way.
    assert!(added.rx_packets >= 3 && added.tx_packets >= 3, "{added:?}");
    assert!(added.rx_bytes > 5 && added.tx_bytes > 5, "{added:?}");

    drop(link);
    drop(ns);
    assert!(!netns_exists(&name), "{name} left behind");
    assert!(!root_link_exists(&root_if), "{root_if} left behind");
}

#[test]
fn ns_to_ns_pair_and_teardown_on_panic() {
    if !live_or_skip("ns_to_ns_pair_and_teardown_on_panic", &[]) {
        return;
    }
    let (a, b) = (Netns::new().unwrap(), Netns::new().unwrap());
    let link = Veth::pair(Side::Ns(&a), Side::Ns(&b)).unwrap();
    tcp_roundtrip(&b, link.b().sock(7002), Some(&a));

    // The ifindex is the one seen inside the namespace.
    let idx = run_in_netns(&a, || nix::net::if_::if_nametoindex(link.a().name()))
        .unwrap()
        .unwrap();
    assert_eq!(idx, link.a().ifindex());

    // A test that panics still tears down: Drop runs while unwinding.
    let names = std::sync::Mutex::new(Vec::new());
    let r = std::panic::catch_unwind(|| {
        let ns = Netns::new().unwrap();
        let _l = Veth::pair(Side::Root, Side::Ns(&ns)).unwrap();
        names.lock().unwrap().push(ns.name().to_string());
        panic!("test failure");
    });
    assert!(r.is_err());
    for n in names.lock().unwrap().iter() {
        assert!(!netns_exists(n), "{n} left behind after panic");
    }
}

#[test]
fn chain_routes_end_to_end() {
    if !live_or_skip("chain_routes_end_to_end", &[]) {
        return;
    }
    let chain = Chain::new(4).unwrap();
    let names: Vec<String> = chain.hosts.iter().map(|h| h.name().to_string()).collect();
    // D listens on its address; A connects across B and C.
    tcp_roundtrip(
        chain.host(3),
        SocketAddr::new(chain.addr(3).into(), 7003),
        Some(chain.host(0)),
    );
    // And the other way, to a relay-side address of A.
    tcp_roundtrip(
        chain.host(0),
        SocketAddr::new(chain.addr(0).into(), 7004),
        Some(chain.host(3)),
    );
    drop(chain);
    for n in &names {
        assert!(!netns_exists(n), "{n} left behind");
    }
}

#[test]
fn rack_senders_reach_receiver_through_bridge() {
    if !live_or_skip("rack_senders_reach_receiver_through_bridge", &[]) {
        return;
    }
    let rack = Rack::new(3).unwrap();
    let senders = rack.senders();
    assert_eq!(senders.len(), 3);
    let rx = rack.receiver();
    for (i, s) in senders.iter().enumerate() {
        assert_eq!(s.subnet(), rx.subnet());
        tcp_roundtrip(rx.netns().unwrap(), rx.sock(7010 + i as u16), s.netns());
    }
    // The switch forwarded to the receiver's port.
    let port = rack.port(3).counters().unwrap();
    assert!(port.tx_packets >= 9, "{port:?}");
}

#[test]
fn capture_sees_exactly_one_syn_and_tshark_decodes_it() {
    if !live_or_skip(
        "capture_sees_exactly_one_syn_and_tshark_decodes_it",
        &[
            Need::Tool("tcpdump"),
            Need::Tool("tshark"),
            Need::Tool("ethtool"),
            Need::Tool("tc"),
        ],
    ) {
        return;
    }
    let ns = Netns::new().unwrap();
    let link = Veth::pair(Side::Root, Side::Ns(&ns)).unwrap();
    link.b().offloads_off().unwrap();
    link.b().tbf("100mbit", "64kb", "50ms").unwrap();
    let shown = iface_counters(Some(&ns), link.b().name()).unwrap();
    assert_eq!(shown, link.b().counters().unwrap());
    let qd = Command::new("tc")
        .args(["-n", ns.name(), "qdisc", "show", "dev", link.b().name()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&qd.stdout).contains("tbf"));

    let cap = Capture::start(Some(&ns), link.b().name(), &["tcp", "port", "7020"]).unwrap();
    tcp_roundtrip(&ns, link.b().sock(7020), None);
    let pcap = cap.stop().unwrap();
    assert_eq!(pcap.dropped_by_kernel, Some(0));
    // Everything the filter took is in the file: stop() let tcpdump drain its ring.
    assert_eq!(pcap.captured, pcap.received_by_filter);

    let syns = tshark_fields(
        &pcap,
        "tcp.flags.syn==1 && tcp.flags.ack==0",
        &["ip.src", "ip.dst", "tcp.dstport"],
    )
    .unwrap();
    assert_eq!(
        syns,
        vec![vec![
            link.a().addr().to_string(),
            link.b().addr().to_string(),
            "7020".to_string()
        ]]
    );
    // Both 5-byte payloads (request and echo) are in the file.
    let data = tshark_fields(&pcap, "tcp.len > 0", &["tcp.len"]).unwrap();
    assert_eq!(data, vec![vec!["5".to_string()], vec!["5".to_string()]]);
    let path = pcap.path().to_path_buf();
    drop(pcap);
    assert!(!path.exists() || std::env::var("MAGNET_KEEP_CAPTURES").is_ok());
}

#[test]
fn netem_works_or_fails_clearly() {
    if !live_or_skip("netem_works_or_fails_clearly", &[Need::Tool("tc")]) {
        return;
    }
    let ns = Netns::new().unwrap();
    let link = Veth::pair(Side::Root, Side::Ns(&ns)).unwrap();
    // The development kernel is built without netem, so tests must not depend on it
    // (CI would fail their skip); the helper then says why instead of half-working.
    if qdisc_available("netem") {
        link.a().netem(&["delay", "5ms"]).unwrap();
        tcp_roundtrip(&ns, link.b().sock(7030), None);
    } else {
        let err = link.a().netem(&["delay", "5ms"]).unwrap_err().to_string();
        assert!(err.contains("netem") && err.contains("unknown"), "{err}");
    }
}

#[test]
fn skip_rule_reports_missing_tool() {
    // Runs everywhere: a tool that cannot exist makes any caller skip (or panic in CI).
    let required = std::env::var("MAGNET_REQUIRE_LIVE").as_deref() == Ok("1");
    let r = std::panic::catch_unwind(|| {
        live_or_skip(
            "skip_rule_reports_missing_tool",
            &[Need::Tool("no-such-tool-xyz")],
        )
    });
    match r {
        Ok(ran) => assert!(!ran && !required),
        Err(_) => assert!(required),
    }
}
