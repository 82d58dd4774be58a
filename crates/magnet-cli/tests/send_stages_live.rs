//! magnetd's send stages (the `stack_latency` part: the kernel's TX timestamp
//! callbacks, Linux 6.15+) against the same sends timed by the application
//! itself with SO_TIMESTAMPING (tests/fixtures/send_stages.c), and the
//! fallback when the callbacks are denied.
//!
//! Agreement "within one bucket", precisely: both count the same sends in
//! every stage, and with C(k) the number of sends in slots 0..=k (cumulative),
//! for every k: C_magnetd(k) >= C_oracle(k-1) and C_oracle(k) >= C_magnetd(k-1).
//! That holds exactly when the two sorted lists of samples can be paired so
//! that the slots of each pair differ by at most one, but for one send of
//! the 36 (an interrupt between the two stamps of one event on a busy
//! machine), or two for the stages that start at the call (and none of
//! those may be later than the oracle's: see the test). The oracle's
//! `to_qdisc` (and `send_to_ack`) start before its send() call, magnetd's at
//! the call's first pass through TCP's copy loop: the system call's entry
//! (under a microsecond; a log2 slot k is 2^k µs wide, so this moves a
//! sample by at most one slot) is in the first and not in the second.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use magnet_client::{Client, SendStages};
use magnet_testkit::{live_or_skip, Need, Netns, Recorder};
use serde_json::Value;

mod common;
use common::{
    build_fixture, free_port, http_get, magnetd_conf, slots, within_one_slot, Magnetd, MAGNET,
    MAGNETD_READY,
};

/// tests/fixtures/send_stages.c, built.
/// One of these tests' magnetds at a time: each attaches its sock_ops
/// program to the root cgroup, and a magnetd that times every send makes
/// the kernel stamp every socket's sends, so another magnetd running then
/// gets the callbacks of sends it did not time (its `unmatched` counts them).
fn one_magnetd_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn oracle_bin() -> std::path::PathBuf {
    build_fixture("send_stages")
}

/// Sends made by the oracle one at a time: sizes from 100 B to 1 MB in
/// turn, behind a 100 Mbit/s token bucket, so the stages spread over many
/// slots.
const SENDS: usize = 36;

/// Then bursts of three calls in flight together, the first two corked
/// (MSG_MORE): only the third's last byte is stamped (for both), so the
/// stamps must be matched to their call by that byte (tskey), not by order.
const BURSTS: usize = 6;

/// Why some of magnetd's samples are later than the oracle's (in slots:
/// fewer samples up to some slot), for a stage the oracle starts earlier
/// (before the system call) and ends at the same stamp.
fn later_than_oracle(magnetd: &[u64], oracle: &[u64]) -> Option<String> {
    let cum = |h: &[u64], k: usize| h.iter().take(k + 1).sum::<u64>();
    (0..magnetd.len().max(oracle.len()))
        .find(|&k| cum(magnetd, k) < cum(oracle, k))
        .map(|k| {
            format!(
                "later than the oracle's: {} samples up to slot {k}, the oracle {}",
                cum(magnetd, k),
                cum(oracle, k)
            )
        })
}

/// Every send of a connection made after magnetd started is in its stages,
/// each stage within one slot of SO_TIMESTAMPING's on the same sends.
#[test]
fn send_stages_agree_with_so_timestamping() {
    let _one = one_magnetd_at_a_time();
    if !live_or_skip(
        "send_stages_agree_with_so_timestamping",
        &[
            Need::Btf,
            Need::Tool("cc"),
            Need::Tool("chrt"),
            Need::Tool("tc"),
            Need::Qdisc("tbf"),
        ],
    ) {
        return;
    }
    // every send call timed (the default times one in 16)
    let d = Magnetd::start_with("stage_hooks = \"always\"\nsend_stages_every = 1\n");
    let health = d.client().host().unwrap().health;
    if health.send_latency != "tx_timestamps" {
        eprintln!(
            "skipped: no TX timestamp callbacks here ({:?})",
            health.fallbacks
        );
        return;
    }
    let ns = Netns::new().unwrap();
    // each send its own segment: no corking behind the qdisc
    ns.sysctl("net/ipv4/tcp_autocorking", "0").unwrap();
    magnet_testkit::tbf(Some(&ns), "lo", "100mbit", "100kb", "1s").unwrap();
    let bin = oracle_bin();
    // real-time priority: fewer preemptions between its clock read and the
    // system call (it never spins: it blocks in poll and read)
    let mut oracle = ns
        .command("chrt")
        .args(["-f", "10"])
        .arg(&bin)
        .arg(SENDS.to_string())
        .arg(BURSTS.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(oracle.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let want: Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("the oracle said {line:?}: {e}"));
    let cookie = want["cookie"].as_u64().unwrap();
    let conn = d.client().connection(cookie).unwrap();
    drop(oracle.stdin.take());
    let _ = oracle.wait();
    assert_eq!(conn.latency.method, "tx_timestamps", "{conn:?}");
    let got: SendStages = conn.latency.stages.clone().expect("stages");
    let (calls, stamped) = (
        want["calls"].as_u64().unwrap(),
        want["stamped"].as_u64().unwrap(),
    );
    assert_eq!(calls, (SENDS + 3 * BURSTS) as u64, "{want}");
    assert!(
        stamped < calls,
        "the bursts' corked calls were stamped: nothing here needs the tskey: {want}"
    );
    assert_eq!(got.sends, calls, "{got:?}");
    assert_eq!(got.sample_every, 1, "{got:?}");
    assert_eq!(got.unmatched, 0, "{got:?}");
    // The sends spread (so a stage measured between the wrong stamps could
    // not agree by luck): send_to_ack over at least four slots.
    let spread = slots(&want["stages"]["send_to_ack"])
        .iter()
        .filter(|&&n| n > 0)
        .count();
    assert!(spread >= 4, "the oracle's sends did not spread: {want}");
    let mut bad = Vec::new();
    for (stage, mine) in got.named() {
        let theirs = slots(&want["stages"][stage]);
        // The two stamps of one event (magnetd's in the callback, the
        // kernel's for the application just after it) are a few hundred ns
        // apart, unless an interrupt (or the hypervisor) comes between
        // them: one send of SENDS is let through. The stages that start at
        // the call: the oracle's clock is read before it, in user space,
        // where the scheduler may also stop the oracle for a while on a
        // busy machine: two, and none may come out later than the oracle's.
        let from_call = stage == "to_qdisc" || stage == "send_to_ack";
        let why = within_one_slot(mine, &theirs, if from_call { 2 } else { 1 }).or_else(|| {
            from_call
                .then(|| later_than_oracle(mine, &theirs))
                .flatten()
        });
        if let Some(why) = why {
            bad.push(format!(
                "{stage}: {why}: magnetd {mine:?}, the oracle {theirs:?}"
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// With sock_ops denied (as on a kernel without the callbacks), magnetd
/// starts, says in one line that send latency is the sampled app_to_wire,
/// and /health and each connection name that method.
#[test]
fn denied_tx_timestamps_fall_back_to_sampled() {
    let _one = one_magnetd_at_a_time();
    if !live_or_skip("denied_tx_timestamps_fall_back_to_sampled", &[Need::Btf]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let conf = magnetd_conf(dir.path(), free_port(), "");
    let mut cmd = Command::new(MAGNET);
    cmd.args(["daemon", "--config"])
        .arg(&conf)
        .env(magnet_kernel::deny::VAR, "sock_ops")
        .stdout(Stdio::null());
    let proc = Recorder::start_until(cmd, MAGNETD_READY);
    let mut client = Client::connect(&dir.path().join("magnetd.sock")).unwrap();
    let health = client.host().unwrap().health;
    assert_eq!(health.send_latency, "sampled", "{health:?}");
    assert_eq!(
        health.parts.get("stack_latency").map(String::as_str),
        Some("sampled")
    );
    let line = "stack_latency through sampled: sock_ops+tp_btf/tcp_sendmsg_locked: \
                sock_ops denied by MAGNET_HOOKS_DENY=sock_ops";
    assert_eq!(
        health.fallbacks.iter().filter(|l| *l == line).count(),
        1,
        "{:?}",
        health.fallbacks
    );
    // a connection made now is timed the sampled way
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (_peer, _) = l.accept().unwrap();
    std::io::Write::write_all(&mut c, b"hello").unwrap();
    let conn = client.connection_of(&c).unwrap();
    assert_eq!(conn.latency.method, "sampled", "{conn:?}");
    assert!(conn.latency.stages.is_none(), "{conn:?}");
    let ended = proc.stop_after(std::time::Duration::ZERO);
    let said: Vec<&str> = ended.stderr.lines().filter(|l| l.contains(line)).collect();
    assert_eq!(said.len(), 1, "{}", ended.stderr);
    assert!(!ended.stderr.contains("libbpf"), "{}", ended.stderr);
}

/// A connection established under an earlier magnetd keeps its socket's
/// setting: after a restart its sends are timed again.
#[test]
fn a_restart_times_connections_established_before_it() {
    let _one = one_magnetd_at_a_time();
    if !live_or_skip(
        "a_restart_times_connections_established_before_it",
        &[Need::Btf],
    ) {
        return;
    }
    let first = Magnetd::start_with("stage_hooks = \"always\"\nsend_stages_every = 1\n");
    if first.client().host().unwrap().health.send_latency != "tx_timestamps" {
        eprintln!("skipped: no TX timestamp callbacks here");
        return;
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut peer, _) = l.accept().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while std::io::Read::read(&mut peer, &mut buf).unwrap_or(0) > 0 {}
    });
    drop(first);
    let d = Magnetd::start_with("stage_hooks = \"always\"\nsend_stages_every = 1\n");
    for _ in 0..3 {
        std::io::Write::write_all(&mut c, &[7u8; 1000]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut client = d.client();
    let mut conn = client.connection_of(&c).unwrap();
    for _ in 0..100 {
        let acked = conn
            .latency
            .stages
            .as_ref()
            .map_or(0, |s| s.send_to_ack.iter().sum());
        if acked >= 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        conn = client.connection_of(&c).unwrap();
    }
    assert_eq!(conn.latency.method, "tx_timestamps", "{conn:?}");
    let s = conn.latency.stages.expect("stages");
    assert_eq!(s.sends, 3, "{s:?}");
    for (stage, slots) in s.named() {
        assert_eq!(slots.iter().sum::<u64>(), 3, "{stage}: {s:?}");
    }
    drop(c);
    reader.join().unwrap();
}

/// With `send_stages_every = 4` one send call in four is timed, the first
/// included: 5 of 20, each through every stage, and the API says 4.
#[test]
fn one_send_call_in_n_is_timed() {
    let _one = one_magnetd_at_a_time();
    if !live_or_skip("one_send_call_in_n_is_timed", &[Need::Btf]) {
        return;
    }
    let d = Magnetd::start_with("stage_hooks = \"always\"\nsend_stages_every = 4\n");
    if d.client().host().unwrap().health.send_latency != "tx_timestamps" {
        eprintln!("skipped: no TX timestamp callbacks here");
        return;
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    c.set_nodelay(true).unwrap();
    let (mut peer, _) = l.accept().unwrap();
    let mut buf = [7u8; 1000];
    for _ in 0..20 {
        // each call's data read (and so acked) before the next
        std::io::Write::write_all(&mut c, &buf).unwrap();
        std::io::Read::read_exact(&mut peer, &mut buf).unwrap();
    }
    let mut client = d.client();
    let mut s = None;
    for _ in 0..100 {
        s = client.connection_of(&c).unwrap().latency.stages;
        if s.as_ref()
            .is_some_and(|s| s.send_to_ack.iter().sum::<u64>() >= 5)
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let s = s.expect("stages");
    assert_eq!((s.sends, s.sample_every, s.unmatched), (5, 4, 0), "{s:?}");
    for (stage, slots) in s.named() {
        assert_eq!(slots.iter().sum::<u64>(), 5, "{stage}: {s:?}");
    }
}

/// With `stage_hooks = "sampled"` (the default) the stage programs run only
/// in the sampling windows: of 150 round trips spread over 3 s (every call
/// and packet timed inside a window), about the windows' share is timed on
/// each side, plus each connection's first send call; every send timed in a
/// window gets all its stamps, also when the window closed before its ACK.
/// With the stage programs attached all the time (the feature missing) all
/// 150 would be timed.
#[test]
fn sampled_stage_hooks_time_only_in_windows() {
    let _one = one_magnetd_at_a_time();
    if !live_or_skip("sampled_stage_hooks_time_only_in_windows", &[Need::Btf]) {
        return;
    }
    let d = Magnetd::start_with(
        "send_stages_every = 1\nreceive_stages_every = 1\npacket_window = \"100ms\"\npacket_period = \"1s\"\n",
    );
    let health = d.client().host().unwrap().health;
    assert_eq!(health.stage_hooks, "sampled", "{health:?}");
    let (tx, rx) = (
        health.send_latency == "tx_timestamps",
        health.receive_latency == "rx_stamps",
    );
    if !tx && !rx {
        eprintln!("skipped: neither stage part runs here: {health:?}");
        return;
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    c.set_nodelay(true).unwrap();
    let (mut peer, _) = l.accept().unwrap();
    const CALLS: u64 = 150;
    let mut buf = [7u8; 1000];
    for _ in 0..CALLS {
        // each call's data read (and so acked) before the next
        std::io::Write::write_all(&mut c, &buf).unwrap();
        std::io::Read::read_exact(&mut peer, &mut buf).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut client = d.client();
    let (mc, mp) = (
        client.connection_of(&c).unwrap(),
        client.connection_of(&peer).unwrap(),
    );
    let cov = mc.latency.stage_coverage;
    eprintln!(
        "stage coverage {cov:.3}; sends timed {:?}; packets timed {:?}",
        mc.latency.stages.as_ref().map(|s| s.sends),
        mp.latency.receive.as_ref().map(|r| r.packets)
    );
    // 0.1 nominal; a loaded host keeps windows open a little longer
    assert!(cov > 0.03 && cov < 0.4, "stage coverage {cov}: {mc:?}");
    let most = ((cov + 0.15) * CALLS as f64) as u64 + 1;
    if tx {
        let s = mc.latency.stages.clone().expect("send stages");
        assert!(
            s.sends >= 2 && s.sends <= most,
            "{} of {CALLS} sends timed at stage coverage {cov:.3} (at most {most}): {s:?}",
            s.sends
        );
        assert_eq!(s.unmatched, 0, "{s:?}");
        for (stage, slots) in s.named() {
            assert_eq!(slots.iter().sum::<u64>(), s.sends, "{stage}: {s:?}");
        }
    }
    if rx {
        let r = mp.latency.receive.clone().expect("receive stages");
        assert!(
            r.packets >= 1 && r.packets <= most,
            "{} of {CALLS} packets timed at stage coverage {cov:.3} (at most {most}): {r:?}",
            r.packets
        );
    }
    let h = d.client().host().unwrap().health;
    assert!(h.stage_coverage > 0.03 && h.stage_coverage < 0.4, "{h:?}");
    let (_, metrics) = http_get(d.http, "/metrics");
    assert!(
        metrics.contains("magnet_stage_hooks_coverage_ratio{mode=\"sampled\"} 0."),
        "{metrics}"
    );
}
