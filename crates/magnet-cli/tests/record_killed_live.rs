//! A recorder killed (SIGKILL) at any moment leaves a trace: the header is in
//! the file before anything is loaded, so `magnet info` reads what is there
//! and says the trace was cut short (exit 1, docs/exit-codes.md). Killed at
//! 0.1 s, 0.3 s and 1 s (while the programs load: the header written first,
//! every layer "not attached") and 4 s (attached, in a debug build on an idle
//! host: the full header, with its hooks). Root, BPF; about 8 s.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{magnet, tmp, MAGNET};
use magnet_testkit::{live_or_skip, Need};

#[test]
fn a_recorder_killed_early_leaves_a_trace_that_reads_as_cut_short() {
    if !live_or_skip(
        "a_recorder_killed_early_leaves_a_trace_that_reads_as_cut_short",
        &[Need::Btf],
    ) {
        return;
    }
    for ms in [100u64, 300, 1000, 4000] {
        let trace = tmp(&format!("killed-{ms}.mgt"));
        let mut rec = Command::new(MAGNET)
            .args(["record", "-q", "--all", "-o", trace.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(ms));
        rec.kill().unwrap(); // SIGKILL
        rec.wait().unwrap();
        assert!(trace.exists(), "killed at {ms} ms: no file");
        let o = magnet(&["info", trace.to_str().unwrap()]);
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            o.status.code(),
            Some(1),
            "killed at {ms} ms: info {out}{err}"
        );
        assert!(
            out.contains("trace cut short at byte") && out.contains("no END block"),
            "killed at {ms} ms: {out}{err}"
        );
        let len = std::fs::metadata(&trace).unwrap().len();
        let attached = !out.contains("stopped before attaching");
        eprintln!("killed at {ms} ms: {len} bytes, hooks attached: {attached}");
    }
}
