//! `magnet top` against a workload with known counts: a sender (started before
//! `top`, while magnetd runs) writes burst A, then, once `top` has taken its
//! first snapshot, burst B. `top`'s row for the sender's connection must hold
//! A + B bytes and calls in total, and B over its interval: rate × interval = B
//! exactly (the rates are differences of magnetd's counters). Filters (`-p`,
//! `--port`, `--comm`) keep that row alone; `--by pid` sums the process's
//! connections. Both are checked against the program's own counts.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use magnet_testkit::{live_or_skip, Need};
use serde_json::Value;

mod common;
use common::{free_port, Magnetd, MAGNET};

const SENDER: &str = "import socket,sys,threading
port = int(sys.argv[1])
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(('127.0.0.1', port)); l.listen(1)
def sink():
    c, _ = l.accept()
    while c.recv(65536): pass
threading.Thread(target=sink, daemon=True).start()
s = socket.create_connection(('127.0.0.1', port))
for _ in range(10): s.sendall(b'a' * 1000)     # burst A: 10 calls, 10,000 B
print('a', flush=True)
sys.stdin.readline()
for _ in range(25): s.sendall(b'b' * 4000)     # burst B: 25 calls, 100,000 B
print('b', flush=True)
sys.stdin.readline()
";

fn top(d: &Magnetd, args: &[&str]) -> Vec<Value> {
    let out = Command::new(MAGNET)
        .arg("top")
        .arg("--socket")
        .arg(d.socket())
        .args(["--json", "-c", "1"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn top_rates_and_totals_match_a_known_sender() {
    if !live_or_skip(
        "top_rates_and_totals_match_a_known_sender",
        &[Need::Btf, Need::Tool("python3")],
    ) {
        return;
    }
    let d = Magnetd::start();
    let port = free_port();
    let mut sender = Command::new("python3")
        .args(["-c", SENDER, &port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(sender.stdout.take().unwrap()).lines();
    let mut input = sender.stdin.take().unwrap();
    assert_eq!(lines.next().unwrap().unwrap(), "a");
    let pid = sender.id().to_string();
    let port_s = port.to_string();
    // top takes its first snapshot at once and its second after 3 s; burst B
    // goes out in between.
    let sock = d.socket();
    let top_run = std::thread::spawn({
        let pid = pid.clone();
        let port_s = port_s.clone();
        move || {
            let out = Command::new(MAGNET)
                .arg("top")
                .arg("--socket")
                .arg(&sock)
                .args([
                    "--json",
                    "-c",
                    "1",
                    "--interval",
                    "3s",
                    "-p",
                    &pid,
                    "--port",
                    &port_s,
                    "--sort",
                    "tx",
                ])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).to_string()
        }
    });
    std::thread::sleep(Duration::from_millis(1500));
    writeln!(input).unwrap();
    assert_eq!(lines.next().unwrap().unwrap(), "b");
    let out = top_run.join().unwrap();
    let u: Value = serde_json::from_str(out.lines().next().expect("one update")).unwrap();
    assert_eq!(u["schema"], "magnet.top/1");
    // magnetd's default stage_hooks: the stage columns sample its windows
    // (100 ms of every 2 s), as its health says
    let h = d.client().host().unwrap().health;
    assert_eq!(h.stage_hooks, "sampled", "{h:?}");
    let stage_mode = u["stage_mode"].as_str().unwrap();
    assert!(
        stage_mode.starts_with("sampled ") && stage_mode.ends_with('%'),
        "{u:#}"
    );
    let rows = u["rows"].as_array().unwrap();
    // The sender's end first (sorted by tx); the sink's end, same process, sends nothing.
    let r = &rows[0];
    assert_eq!(r["pid"].as_u64().unwrap().to_string(), pid, "{u:#}");
    assert_eq!(r["total_tx_bytes"], 110_000, "{r:#}");
    assert_eq!(r["total_tx_calls"], 35, "{r:#}");
    let secs = u["interval_s"].as_f64().unwrap();
    let burst_b = r["app_tx_bytes_per_s"].as_f64().unwrap() * secs;
    assert!(
        (burst_b - 100_000.0).abs() < 0.5,
        "rate × interval = {burst_b}, want 100,000: {r:#}"
    );
    let calls_b = r["app_tx_calls_per_s"].as_f64().unwrap() * secs;
    assert!(
        (calls_b - 25.0).abs() < 0.01,
        "calls over the interval {calls_b}: {r:#}"
    );
    // The layer table over the same interval: burst B's calls and bytes at
    // the app layer exactly; TCP sent at least those bytes (its bytes_sent
    // counts retransmissions too) in data segments, per call as many as it made.
    let layer = |l: &str, d: &str| {
        r["layers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["layer"] == l && x["dir"] == d)
            .cloned()
            .unwrap_or_else(|| panic!("no {l} {d} row: {r:#}"))
    };
    let app = layer("app", "out");
    assert!(
        (app["units_per_s"].as_f64().unwrap() * secs - 25.0).abs() < 0.01
            && (app["bytes_per_s"].as_f64().unwrap() * secs - 100_000.0).abs() < 0.5,
        "app out over the interval: {app:#}"
    );
    let tcp = layer("tcp", "out");
    let tcp_units = tcp["units_per_s"].as_f64().unwrap() * secs;
    assert!(
        tcp["bytes_per_s"].as_f64().unwrap() * secs >= 100_000.0 - 0.5 && tcp_units >= 1.0,
        "tcp out over the interval: {tcp:#}"
    );
    assert!(
        (tcp["units_per_call"].as_f64().unwrap() - tcp_units / 25.0).abs() < 0.01,
        "tcp segments per call: {tcp:#}"
    );
    // The send path: timed by the kernel's TX timestamp callbacks where
    // magnetd says it has them (the connection was made after it started),
    // else no stamped sends.
    let method = d.client().host().unwrap().health.send_latency;
    assert_eq!(r["send_method"], method.as_str(), "{r:#}");
    let stamped = r["stages"]["stamped_sends"].as_u64().unwrap();
    if method == "tx_timestamps" {
        assert!(
            (1..=35).contains(&stamped) && r["stages"]["send_to_ack_p99_us"].as_u64().is_some(),
            "35 send calls, each stamped unless its last byte merged into the next's: {r:#}"
        );
    } else {
        assert_eq!(stamped, 0, "{r:#}");
    }
    assert!(
        rows.iter()
            .all(|x| x["pid"].as_u64().unwrap().to_string() == pid),
        "-p keeps the sender's rows only: {u:#}"
    );
    assert_eq!(
        rows.len(),
        2,
        "--port keeps the two ends of the one connection: {u:#}"
    );

    // Per process: both ends summed; by comm the same; an unknown pid keeps nothing.
    let by_pid = top(&d, &["--interval", "200ms", "--by", "pid", "-p", &pid]);
    let p = &by_pid[0]["rows"][0];
    assert_eq!(
        (
            p["key"].as_str().unwrap(),
            p["connections"].as_u64().unwrap()
        ),
        (pid.as_str(), 2),
        "{p:#}"
    );
    assert_eq!(p["total_tx_bytes"], 110_000);
    assert_eq!(
        p["total_rx_bytes"], 110_000,
        "the sink read all of it: {p:#}"
    );
    let none = top(&d, &["--interval", "200ms", "-p", "1"]);
    assert!(none[0]["rows"].as_array().unwrap().is_empty());

    // The text table names the connection and its peer.
    let text = Command::new(MAGNET)
        .arg("top")
        .arg("--socket")
        .arg(d.socket())
        .args([
            "--batch",
            "-c",
            "1",
            "--interval",
            "200ms",
            "--port",
            &port_s,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert!(
        text.lines().nth(1).unwrap().starts_with("CONNECTION"),
        "{text}"
    );
    assert!(
        text.lines().next().unwrap().contains(", stages sampled "),
        "{text}"
    );
    for (view, column) in [("layers", "TCP OUT"), ("stages", "S>A p99")] {
        let out = Command::new(MAGNET)
            .arg("top")
            .arg("--socket")
            .arg(d.socket())
            .args(["--batch", "-c", "1", "--interval", "200ms", "--view", view])
            .args(["--port", &port_s])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.lines().nth(1).unwrap().contains(column) && text.contains(&format!(":{port}")),
            "--view {view}: {text}"
        );
    }

    writeln!(input).unwrap();
    let _ = sender.wait();
}

#[test]
fn top_without_magnetd_says_so_in_one_line() {
    let out = Command::new(MAGNET)
        .args(["top", "-c", "1", "--socket", "/nonexistent/magnetd.sock"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("magnet daemon"), "{err}");
}
