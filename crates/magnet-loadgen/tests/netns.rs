//! Live runs into a peer network namespace (receiver thread `setns`'d there, sender in
//! the root namespace), checked against interface counters and a tshark decode.

use magnet_loadgen::{run, Calls, LoadSpec, Peer};
use magnet_testkit::{live_or_skip, run_in_netns, tshark_fields, Capture, Need, Netns, Side, Veth};

#[test]
fn netns_peer_exact_counts_match_wire() {
    if !live_or_skip(
        "netns_peer_exact_counts_match_wire",
        &[Need::Tool("tcpdump"), Need::Tool("tshark")],
    ) {
        return;
    }
    let ns = Netns::new().unwrap();
    let link = Veth::pair(Side::Root, Side::Ns(&ns)).unwrap();
    let peer = link.b();
    let port = 7100;
    let cap = Capture::start(peer.netns(), peer.name(), &["udp", "or", "tcp"]).unwrap();
    let before = peer.counters().unwrap();

    let spec = LoadSpec {
        tcp: Some(Calls {
            count: 100,
            size: 1000,
        }),
        udp: Some(Calls {
            count: 50,
            size: 200,
        }),
        peer: Peer::Netns {
            netns: ns.name().to_string(),
            addr: peer.addr(),
        },
        port,
        ..LoadSpec::default()
    };
    let s = run(&spec).unwrap();
    let added = peer.counters().unwrap().since(&before);
    let pcap = cap.stop().unwrap();

    assert_eq!(s.netns.as_deref(), Some(ns.name()));
    let tcp = s.tcp.unwrap();
    assert_eq!(
        (tcp.calls, tcp.bytes_sent, tcp.bytes_received),
        (100, 100_000, 100_000)
    );
    assert_eq!(tcp.local.ip(), link.a().addr());
    assert_eq!(tcp.remote.to_string(), format!("{}:{port}", peer.addr()));
    let udp = s.udp.unwrap();
    assert_eq!(
        (udp.calls, udp.datagrams_received, udp.bytes_received),
        (50, 50, 10_000)
    );
    assert_eq!(udp.local.ip(), link.a().addr());

    // The payload really crossed the link: the namespace side received at least the
    // application bytes plus headers.
    assert!(added.rx_bytes >= 110_000, "{added:?}");

    // The wire agrees: exactly 50 datagrams of 200 bytes to the port, and the TCP
    // payload toward the peer sums to 100 000 bytes.
    let dgrams = tshark_fields(&pcap, &format!("udp.dstport=={port}"), &["udp.length"]).unwrap();
    assert_eq!(dgrams, vec![vec!["208".to_string()]; 50]);
    let segs = tshark_fields(
        &pcap,
        &format!("tcp.dstport=={port} && tcp.len>0"),
        &["tcp.len"],
    )
    .unwrap();
    let total: u64 = segs.iter().map(|r| r[0].parse::<u64>().unwrap()).sum();
    assert_eq!(total, 100_000);
}

#[test]
fn sender_in_callers_namespace_receiver_in_peer() {
    if !live_or_skip("sender_in_callers_namespace_receiver_in_peer", &[]) {
        return;
    }
    // An ns↔ns link, loadgen called from a thread inside `a`: the peer address exists
    // only inside `b`, so the receiver must have bound there, and the sender's source
    // address is `a`'s end.
    let (a, b) = (Netns::new().unwrap(), Netns::new().unwrap());
    let link = Veth::pair(Side::Ns(&a), Side::Ns(&b)).unwrap();
    let spec = LoadSpec {
        tcp: Some(Calls {
            count: 10,
            size: 5000,
        }),
        udp: Some(Calls {
            count: 10,
            size: 500,
        }),
        peer: Peer::Netns {
            netns: b.name().to_string(),
            addr: link.b().addr(),
        },
        ..LoadSpec::default()
    };
    let s = run_in_netns(&a, || run(&spec)).unwrap().unwrap();
    let tcp = s.tcp.unwrap();
    assert_eq!(tcp.bytes_received, 50_000);
    assert_eq!(tcp.local.ip(), link.a().addr());
    let udp = s.udp.unwrap();
    assert_eq!(udp.datagrams_received, 10);
    assert_eq!(udp.local.ip(), link.a().addr());
    assert!(link.b().counters().unwrap().rx_packets >= 20);
}
