//! magnetd's receive stages (the `receive_latency` part) against the same
//! packets timed by the receiving application itself with SO_TIMESTAMPING
//! (tests/fixtures/receive_stages.c): the kernel's receive stamp of each
//! message (SCM_TIMESTAMPING) to the return of the read that got it.
//!
//! Messages come from another network namespace over a veth pair, one every
//! GAP_MS, each one TCP segment; the receiver lets some wait in its socket's
//! queue on purpose (up to 20 ms) before reading each with one call.
//! magnetd's `device_to_read` must agree with the oracle's within one slot
//! (common::within_one_slot), with the same count; its `queue_to_read`
//! (which the oracle cannot see) counts the same messages and is never
//! later than `device_to_read`.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use magnet_testkit::{live_or_skip, Need, Netns, Side, Veth};
use serde_json::Value;

mod common;
use common::{build_fixture, http_get, slots, within_one_slot, Magnetd};

const MESSAGES: usize = 30;
const SIZE: usize = 1000;
const GAP_MS: u64 = 30;

/// Reads the oracle's next JSON line.
fn line_of(r: &mut impl BufRead) -> Value {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("the oracle said {line:?}: {e}"))
}

#[test]
fn receive_stages_agree_with_so_timestamping() {
    if !live_or_skip(
        "receive_stages_agree_with_so_timestamping",
        &[Need::Btf, Need::Tool("cc")],
    ) {
        return;
    }
    agree_with_so_timestamping("");
}

/// The receive stages' read runs in the app part's program (one program per
/// read for both): with the app part left out (as on a kernel that refuses
/// its send hook), that program still runs for the stages alone, and they
/// agree with the oracle as before.
#[test]
fn receive_stages_without_the_app_part() {
    if !live_or_skip(
        "receive_stages_without_the_app_part",
        &[Need::Btf, Need::Tool("cc")],
    ) {
        return;
    }
    agree_with_so_timestamping("tp_btf/sock_send_length");
}

/// magnetd (denied `deny`) times every data packet of a known transfer;
/// its receive stages equal SO_TIMESTAMPING's within one slot.
fn agree_with_so_timestamping(deny: &str) {
    // every data packet timed (the default times one in 16 per CPU)
    let d = Magnetd::start_denying("stage_hooks = \"always\"\nreceive_stages_every = 1\n", deny);
    let health = d.client().host().unwrap().health;
    if health.receive_latency != "rx_stamps" {
        eprintln!("skipped: no receive stages here ({:?})", health.fallbacks);
        return;
    }
    if !deny.is_empty() {
        assert!(!health.parts.contains_key("app"), "{health:?}");
    }
    let (a, b) = (Netns::new().unwrap(), Netns::new().unwrap());
    let link = Veth::pair(Side::Ns(&a), Side::Ns(&b)).unwrap();
    let bin = build_fixture("receive_stages");
    let port = 7000 + (std::process::id() % 1000) as u16;
    let mut recv = b
        .command(bin.to_str().unwrap())
        .args(["recv", &port.to_string()])
        .args([MESSAGES.to_string(), SIZE.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(recv.stdout.take().unwrap());
    line_of(&mut out); // listening
    let mut send = a
        .command(bin.to_str().unwrap())
        .args(["send", &link.b().addr().to_string(), &port.to_string()])
        .args([MESSAGES.to_string(), SIZE.to_string(), GAP_MS.to_string()])
        .spawn()
        .unwrap();
    let want = line_of(&mut out);
    let cookie = want["cookie"].as_u64().unwrap();
    let conn = d.client().connection(cookie).unwrap();
    drop(recv.stdin.take());
    let _ = recv.wait();
    let _ = send.wait();
    let got = conn.latency.receive.clone().expect("receive stages");
    assert_eq!(got.sample_every, 1, "{got:?}");
    assert_eq!(got.packets, MESSAGES as u64, "{got:?}");
    assert_eq!((got.unstamped, got.lost), (0, 0), "{got:?}");
    let theirs = slots(&want["device_to_read"]);
    eprintln!("magnetd {got:?}\nthe oracle {want}");
    // spread over slots, so that a stage measured between the wrong stamps
    // could not agree by luck
    assert!(
        theirs.iter().filter(|&&n| n > 0).count() >= 4,
        "the oracle's reads did not spread: {want}"
    );
    // one message may be stopped between the two clocks (the oracle's read
    // returns after magnetd's tracepoint) on a busy machine
    if let Some(why) = within_one_slot(&got.device_to_read, &theirs, 1) {
        panic!(
            "device_to_read: {why}: magnetd {:?}, the oracle {theirs:?}",
            got.device_to_read
        );
    }
    let cum = |h: &[u64], k: usize| h.iter().take(k + 1).sum::<u64>();
    for (stage, h) in got.named() {
        assert_eq!(cum(h, 64), MESSAGES as u64, "{stage}: {got:?}");
    }
    for k in 0..got.device_to_read.len() {
        assert!(
            cum(&got.queue_to_read, k) >= cum(&got.device_to_read, k),
            "queue_to_read later than device_to_read at slot {k}: {got:?}"
        );
    }
}

/// magnetd turns the kernel's receive stamps on itself: a connection whose
/// application never asks for them has its packets stamped too (unless the
/// stamps were off, `unstamped` would count them all: nothing else here asks
/// for stamps, on a host where no other program does).
#[test]
fn packets_are_stamped_without_the_application_asking() {
    if !live_or_skip(
        "packets_are_stamped_without_the_application_asking",
        &[Need::Btf],
    ) {
        return;
    }
    let d = Magnetd::start_with("stage_hooks = \"always\"\nreceive_stages_every = 1\n");
    if d.client().host().unwrap().health.receive_latency != "rx_stamps" {
        eprintln!("skipped: no receive stages here");
        return;
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut peer, _) = l.accept().unwrap();
    let mut buf = [0u8; 100];
    for _ in 0..5 {
        std::io::Write::write_all(&mut c, &buf).unwrap();
        std::io::Read::read_exact(&mut peer, &mut buf).unwrap();
    }
    let conn = d.client().connection_of(&peer).unwrap();
    let got = conn.latency.receive.expect("receive stages");
    assert_eq!((got.packets, got.unstamped, got.lost), (5, 0, 0), "{got:?}");
    for (stage, h) in got.named() {
        assert_eq!(h.iter().sum::<u64>(), 5, "{stage}: {got:?}");
    }
    // and per cgroup in /metrics (this test's cgroup: at least these 5)
    let (_, body) = http_get(d.http, "/metrics");
    let want = format!(
        "magnet_cgroup_receive_stage_seconds_count{{cgroup=\"{}\",",
        conn.cgroup_id
    );
    let counts: Vec<u64> = body
        .lines()
        .filter(|l| l.starts_with(&want))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    assert!(
        counts.len() == 3 && counts.iter().all(|&n| n >= 5),
        "{want}: {counts:?} in\n{body}"
    );
}
