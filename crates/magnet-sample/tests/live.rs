//! Live tests of the sampler: real tc programs on veth pairs between network
//! namespaces made here, with traffic whose truth is known. Need root and BTF;
//! skipped otherwise (a failure with MAGNET_REQUIRE_LIVE=1).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use magnet_sample::{sample, Metric, Run, SampleConfig, Started};
use magnet_testkit::{live_or_skip, run_in_netns, Need, Netns, Side, Veth};

static NEVER: AtomicBool = AtomicBool::new(false);

/// Starts a sampler inside `ns` on its own thread; returns once it is attached.
fn start(ns: &Netns, cfg: SampleConfig) -> (Started, JoinHandle<Run>) {
    let (tx, rx) = mpsc::channel();
    let ns = ns.clone();
    let h = std::thread::spawn(move || {
        let iface = cfg.iface.clone();
        run_in_netns(&ns, move || {
            sample(&cfg, &NEVER, &mut |s| {
                let _ = tx.send(s.clone());
            })
        })
        .expect("entering the namespace")
        .unwrap_or_else(|e| panic!("sampling {iface}: {e}"))
    });
    let started = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("sampler did not start");
    (started, h)
}

fn cfg(iface: &str, interval: Duration, samples: u32) -> SampleConfig {
    SampleConfig::new(iface, interval, samples)
}

fn live(name: &str) -> bool {
    live_or_skip(name, &[Need::Btf, Need::Tool("tc")])
}

fn pct(a: u64, b: u64) -> f64 {
    (a as f64 - b as f64).abs() / b.max(1) as f64 * 100.0
}

#[test]
fn byte_totals_match_interface_counters() {
    if !live("byte_totals_match_interface_counters") {
        return;
    }
    let (na, nb) = (Netns::new().unwrap(), Netns::new().unwrap());
    let link = Veth::pair(Side::Ns(&na), Side::Ns(&nb)).unwrap();
    let (a, b) = (link.a(), link.b());
    let listener = run_in_netns(&nb, || TcpListener::bind((b.addr(), 5001)))
        .unwrap()
        .unwrap();
    let before = a.counters().unwrap();
    let (_, h) = start(&na, cfg(a.name(), Duration::from_millis(1), 1500));

    // 8 MB from A to B, 1 MB back, then close: all inside the 1.5 s run.
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let mut got = 0;
        while got < 8 << 20 {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0);
            got += n;
        }
        s.write_all(&vec![7u8; 1 << 20]).unwrap();
    });
    let mut c = run_in_netns(&na, || TcpStream::connect((b.addr(), 5001)))
        .unwrap()
        .unwrap();
    let chunk = vec![1u8; 1 << 16];
    for _ in 0..128 {
        c.write_all(&chunk).unwrap();
    }
    let mut back = Vec::new();
    c.read_to_end(&mut back).unwrap();
    assert_eq!(back.len(), 1 << 20);
    server.join().unwrap();
    drop(c);

    let run = h.join().unwrap();
    let d = a.counters().unwrap().since(&before);
    assert!(run.meta.complete);
    assert_eq!(run.len(), 1500);
    let (rin, rout) = (run.total(Metric::InBytes), run.total(Metric::OutBytes));
    eprintln!(
        "sampler in {rin} out {rout} ({} / {} pkts); counters rx {} tx {} ({} / {} pkts); attach {}",
        run.total(Metric::InPackets),
        run.total(Metric::OutPackets),
        d.rx_bytes,
        d.tx_bytes,
        d.rx_packets,
        d.tx_packets,
        run.meta.attach
    );
    assert!(d.tx_bytes > 8 << 20 && d.rx_bytes > 1 << 20, "{d:?}");
    assert!(
        pct(rout, d.tx_bytes) <= 0.1,
        "egress {rout} vs tx_bytes {}",
        d.tx_bytes
    );
    assert!(
        pct(rin, d.rx_bytes) <= 0.1,
        "ingress {rin} vs rx_bytes {}",
        d.rx_bytes
    );
    // One flow (plus nothing else on the link): one connection while it is active.
    let busy: Vec<usize> = (0..run.len())
        .filter(|&i| run.get(Metric::OutBytes)[i] > 0)
        .collect();
    assert!(busy.iter().all(|&i| run.connections[i] <= 1));
    assert!(busy.iter().any(|&i| run.connections[i] == 1));
}
