//! Loopback runs: no privileges needed. The counts are asserted exactly.

use std::time::{Duration, Instant};

use magnet_loadgen::{run, Calls, Error, LoadSpec, Peer};

#[test]
fn tcp_and_udp_counts_are_exact() {
    let spec = LoadSpec {
        tcp: Some(Calls {
            count: 100,
            size: 1000,
        }),
        udp: Some(Calls {
            count: 50,
            size: 200,
        }),
        ..LoadSpec::default()
    };
    let s = run(&spec).unwrap();
    assert_eq!(s.pid, std::process::id());
    assert_eq!(s.netns, None);

    let tcp = s.tcp.unwrap();
    assert_eq!(tcp.calls, 100);
    assert_eq!(tcp.bytes_sent, 100_000);
    assert_eq!(tcp.bytes_received, 100_000);
    assert!(tcp.recv_calls >= 1 && tcp.recv_calls <= 100_000);
    assert_eq!(tcp.remote.ip().to_string(), "127.0.0.1");
    assert_eq!(tcp.local.ip().to_string(), "127.0.0.1");
    assert_ne!(tcp.sender_tid, tcp.receiver_tid);

    let udp = s.udp.unwrap();
    assert_eq!((udp.calls, udp.failed_calls), (50, 0));
    assert_eq!(udp.bytes_sent, 10_000);
    assert_eq!(udp.datagrams_received, 50);
    assert_eq!(udp.recv_calls, 50);
    assert_eq!(udp.bytes_received, 10_000);
    assert_eq!(udp.local.ip().to_string(), "127.0.0.1");
}

#[test]
fn large_sends_complete_whole() {
    // 1 MiB per call is far beyond the socket buffer: each blocking send() must still
    // move all of it in one call.
    let spec = LoadSpec {
        tcp: Some(Calls {
            count: 8,
            size: 1 << 20,
        }),
        ..LoadSpec::default()
    };
    let tcp = run(&spec).unwrap().tcp.unwrap();
    assert_eq!((tcp.calls, tcp.bytes_received), (8, 8 << 20));
    assert!(tcp.recv_calls >= 32, "256 KiB reads: {}", tcp.recv_calls);
}

#[test]
fn max_size_datagrams_arrive_whole() {
    let spec = LoadSpec {
        udp: Some(Calls {
            count: 20,
            size: 65507,
        }),
        // Without root the receive buffer is capped by net.core.rmem_max (a few such
        // datagrams); pacing lets the receiver keep up.
        interval: Some(Duration::from_millis(2)),
        ..LoadSpec::default()
    };
    let udp = run(&spec).unwrap().udp.unwrap();
    assert_eq!(udp.datagrams_received, 20);
    assert_eq!(udp.bytes_received, 20 * 65507);
}

#[test]
fn interval_paces_calls() {
    let spec = LoadSpec {
        tcp: Some(Calls {
            count: 5,
            size: 10_000,
        }),
        interval: Some(Duration::from_millis(20)),
        ..LoadSpec::default()
    };
    let t = Instant::now();
    let tcp = run(&spec).unwrap().tcp.unwrap();
    // Calls at 0, 20, 40, 60, 80 ms.
    assert!(
        t.elapsed() >= Duration::from_millis(80),
        "{:?}",
        t.elapsed()
    );
    assert!(tcp.elapsed_us >= 80_000);
    assert_eq!(tcp.bytes_received, 50_000);
}

#[test]
fn duration_caps_calls_and_summary_says_how_many() {
    let spec = LoadSpec {
        udp: Some(Calls {
            count: 1000,
            size: 100,
        }),
        interval: Some(Duration::from_millis(10)),
        duration: Some(Duration::from_millis(55)),
        ..LoadSpec::default()
    };
    let udp = run(&spec).unwrap().udp.unwrap();
    // Due at 0, 10, …, 50 ms: six calls fit in 55 ms.
    assert_eq!(udp.calls, 6);
    assert_eq!(udp.datagrams_received, 6);
}

#[test]
fn flood_counts_every_sendto() {
    let spec = LoadSpec {
        udp: Some(Calls {
            count: 20_000,
            size: 16,
        }),
        flood: true,
        ..LoadSpec::default()
    };
    let udp = run(&spec).unwrap().udp.unwrap();
    assert_eq!(udp.calls + udp.failed_calls, 20_000);
    assert!(udp.datagrams_received <= udp.calls);
    assert_eq!(udp.bytes_received, udp.datagrams_received * 16);
}

#[test]
fn fixed_port_is_used_for_both_protocols() {
    // Pick a port that is free now; TCP and UDP each bind it in turn.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let spec = LoadSpec {
        tcp: Some(Calls { count: 1, size: 1 }),
        udp: Some(Calls { count: 1, size: 1 }),
        port,
        ..LoadSpec::default()
    };
    let s = run(&spec).unwrap();
    assert_eq!(s.tcp.unwrap().remote.port(), port);
    assert_eq!(s.udp.unwrap().remote.port(), port);
}

#[test]
fn errors_name_the_cause() {
    assert!(matches!(run(&LoadSpec::default()), Err(Error::Nothing)));
    let spec = LoadSpec {
        tcp: Some(Calls { count: 1, size: 1 }),
        peer: Peer::Netns {
            netns: "magnet-no-such-netns".into(),
            addr: "10.200.0.1".parse().unwrap(),
        },
        ..LoadSpec::default()
    };
    let err = run(&spec).unwrap_err();
    assert!(
        err.to_string().contains("/run/netns/magnet-no-such-netns"),
        "{err}"
    );
}

#[test]
fn summary_serialises_to_one_json_line() {
    let spec = LoadSpec {
        tcp: Some(Calls { count: 3, size: 10 }),
        ..LoadSpec::default()
    };
    let json = serde_json::to_string(&run(&spec).unwrap()).unwrap();
    assert!(!json.contains('\n'));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["tcp"]["calls"], 3);
    assert_eq!(v["tcp"]["bytes_received"], 30);
    assert!(v["tcp"]["remote"]
        .as_str()
        .unwrap()
        .starts_with("127.0.0.1:"));
    assert!(v["udp"].is_null());
}
