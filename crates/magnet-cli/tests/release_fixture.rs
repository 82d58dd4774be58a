//! A trace written by release 0.1.0 (format version 1, before the delta-coded
//! blocks of version 2: `magnet record --layers all --kinds all --tcp-state
//! --snaplen 96` of a 100,000-byte loopback transfer, 759 records) still reads and analyzes
//! exactly as that release read it. The expected outputs next to it were
//! written by the 0.1.0 binary itself, before anything changed; a change to
//! the record model, the reader or the printers that alters one byte of them
//! fails here. (No root needed; runs in well under a second.) One change was
//! made to them on purpose, by regenerating and checking that nothing else
//! moved: the `"schema"` key every JSON output leads with (docs/json.md), and
//! analyze's retransmission counts named as nstat and ss name them
//! (`retrans_segs`, `retrans_skbs`, `bytes_retrans`, `retrans_failed` for
//! `retransmits`), and beside them `retrans_busy` (tries the kernel put off).

use std::path::PathBuf;

mod common;
use common::magnet;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

const TRACE: &str = "release-0.1.0.mgt";

fn run(args: &[&str]) -> String {
    let trace = fixture(TRACE);
    let mut all: Vec<&str> = args.to_vec();
    let t = trace.to_str().unwrap();
    all.push(t);
    let out = magnet(&all);
    assert!(
        out.status.success(),
        "magnet {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn expected(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

/// Compares line by line so that a failure names the first line that differs.
fn same(what: &str, got: &str, want: &str) {
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "{what}: line {} differs", i + 1);
    }
    assert_eq!(
        got.lines().count(),
        want.lines().count(),
        "{what}: line count"
    );
}

/// The first line of `parse` names the file as given; the rest must match.
fn without_first_line(s: &str) -> &str {
    s.split_once('\n').map(|(_, rest)| rest).unwrap_or("")
}

#[test]
fn parse_text_is_unchanged() {
    let got = run(&["parse"]);
    let want = expected("release-0.1.0.parse.txt");
    assert!(got.starts_with("# magnet parse "));
    same("parse", without_first_line(&got), without_first_line(&want));
    assert_eq!(want.lines().count(), 761, "759 records + 2 comment lines");
}

#[test]
fn parse_json_is_unchanged() {
    same(
        "parse --json",
        &run(&["parse", "--json"]),
        &expected("release-0.1.0.parse.jsonl"),
    );
}

#[test]
fn info_is_unchanged() {
    let got = run(&["info", "--json"]);
    let mut v: serde_json::Value = serde_json::from_str(&got).unwrap();
    v["file"] = "FIXTURE".into();
    let want: serde_json::Value =
        serde_json::from_str(&expected("release-0.1.0.info.json")).unwrap();
    assert_eq!(v, want);
    assert_eq!(v["records"], 759);
}

#[test]
fn analyze_is_unchanged() {
    let got: serde_json::Value =
        serde_json::from_str(&run(&["analyze", "--json", "--all"])).unwrap();
    let want: serde_json::Value =
        serde_json::from_str(&expected("release-0.1.0.analyze.json")).unwrap();
    assert_eq!(got, want);
}
