//! `magnet packets` and `magnet export` read through the reorder buffer
//! (records in reusable slots) instead of `TimeOrdered` (a heap of owned
//! records). The expected files next to the 0.1.0 trace were written by the
//! build before the change (commit faf3b43, TimeOrdered), with a window of 8
//! records (which reorders: its export differs from the default window's)
//! and the default window; the output must be the same bytes. No root; well
//! under a second. (`packets --json` has since been wrapped in
//! `{"schema": "magnet.packets/1", "packets": …}`, docs/json.md; the list inside
//! is the same bytes.)

use std::path::PathBuf;

mod common;
use common::magnet;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn stdout_of(args: &[&str]) -> Vec<u8> {
    let trace = fixture("release-0.1.0.mgt");
    let mut all = args.to_vec();
    all.push(trace.to_str().unwrap());
    let out = magnet(&all);
    assert!(
        out.status.success(),
        "magnet {all:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn same(got: &[u8], want_file: &str) {
    let want = std::fs::read(fixture(want_file)).unwrap();
    let line = got
        .split(|&b| b == b'\n')
        .zip(want.split(|&b| b == b'\n'))
        .position(|(g, w)| g != w);
    assert!(
        got == want,
        "{want_file}: differs (first at line {:?}; {} against {} bytes)",
        line.map(|l| l + 1),
        got.len(),
        want.len()
    );
}

#[test]
fn packets_print_what_time_ordered_printed() {
    same(
        &stdout_of(&["packets", "--window", "8"]),
        "timeordered-w8.packets.txt",
    );
    same(
        &stdout_of(&["packets", "--json", "--window", "8"]),
        "timeordered-w8.packets.json",
    );
}

#[test]
fn exports_are_what_time_ordered_exported() {
    // The two windows order the trace differently.
    assert_ne!(
        std::fs::read(fixture("timeordered-w8.export.csv")).unwrap(),
        std::fs::read(fixture("timeordered-w65536.export.csv")).unwrap()
    );
    for w in ["8", "65536"] {
        for f in ["csv", "perfetto"] {
            same(
                &stdout_of(&["export", "-f", f, "--window", w, "-o", "-"]),
                &format!("timeordered-w{w}.export.{f}"),
            );
        }
    }
}
