//! Live test of the recorder's drain accounting: the summary's
//! `drain_cpu_seconds` is the drain thread's own CPU time, checked against the
//! kernel's per-thread counters in /proc, and the drain's capacity (records
//! per drain-CPU-second) is above the 5 M/s goal under a flood whose size the
//! test knows (release builds: `cargo test --release`). Runs ~5 s.

use std::path::Path;

use magnet_testkit::{live_or_skip, Need};

mod common;
use common::{magnet, tmp, MAGNET};

/// utime + stime of thread `tid`, in seconds, from a line
/// "TID UTIME STIME" the recorded command wrote.
fn thread_cpu(file: &Path, tid: &str) -> f64 {
    let text = std::fs::read_to_string(file).unwrap();
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(tid))
        .unwrap_or_else(|| panic!("{}: no thread {tid} in {text}", file.display()));
    let f: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    let hz = 100.0; // USER_HZ: /proc reports clock ticks of 1/100 s on Linux
    (f[0] + f[1]) / hz
}

#[test]
fn drain_cpu_time_agrees_with_proc_and_meets_the_capacity_goal() {
    if !live_or_skip(
        "drain_cpu_time_agrees_with_proc_and_meets_the_capacity_goal",
        &[Need::Btf],
    ) {
        return;
    }
    const CALLS: u64 = 200_000;
    let trace = tmp("drain.mgt");
    let (t0, t1) = (tmp("threads0.txt"), tmp("threads1.txt"));
    // The command (a child of the recorder) snapshots the recorder's threads
    // before and after a UDP flood on loopback: between the two, the recorder's
    // main thread does nothing but drain.
    let snap = "{ echo main $PPID; for t in /proc/$PPID/task/*; do echo ${t##*/} $(cut -d' ' -f14,15 $t/stat); done; }";
    let script = format!(
        "{snap} >{a}; {MAGNET} loadgen --udp {CALLS}x16 --flood >/dev/null; {snap} >{b}",
        a = t0.display(),
        b = t1.display()
    );
    let out = magnet(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--layers",
        "app,ip,dev",
        "--buffer",
        "32MiB",
        "--json",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert!(
        out.status.success(),
        "magnet record failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8_lossy(&out.stdout);
    let summary: serde_json::Value =
        serde_json::from_str(s.lines().rfind(|l| l.starts_with('{')).unwrap()).unwrap();
    // The workload's truth: every sendto() generated one app_send, none lost.
    assert_eq!(summary["generated"]["app_send"], CALLS, "{summary}");
    assert_eq!(summary["lost_kernel"], 0, "{summary}");
    let records = summary["records"].as_u64().unwrap();
    assert!(records >= 3 * CALLS, "app, ip and dev records: {summary}");

    let drain = summary["drain_cpu_seconds"].as_f64().unwrap();
    // The recorder's main thread has the process's id; its CPU over the flood
    // (ticks of 10 ms, so ±0.02 s) bounds the drain's from below; the drain also
    // runs before the first snapshot and ~0.1 s after the last (idle polls).
    let pid = std::fs::read_to_string(&t0)
        .unwrap()
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("main "))
        .expect("the recorder's pid")
        .trim()
        .to_string();
    let proc_delta = thread_cpu(&t1, &pid) - thread_cpu(&t0, &pid);
    assert!(drain > 0.0, "{summary}");
    assert!(
        drain >= proc_delta - 0.03 && drain <= proc_delta + 0.05,
        "drain_cpu_seconds {drain:.3} vs the main thread's CPU in /proc over the flood {proc_delta:.3}"
    );
    let capacity = records as f64 / drain;
    eprintln!(
        "drain: {records} records, {drain:.3} CPU-s ({capacity:.0} records per drain-CPU-second; /proc {proc_delta:.3} s)"
    );
    // The goal is for the release build (a debug build drains ~10x slower);
    // the test binary is built with the same profile as the magnet it runs.
    if !cfg!(debug_assertions) {
        assert!(
            capacity >= 5e6,
            "drain capacity {capacity:.0} records per CPU-second, goal >= 5 M"
        );
    }
    let _ = std::fs::remove_dir_all(trace.parent().unwrap());
}
