//! `magnet sample show/plot/merge` on Meta's gzip'd data-set files
//! (`*.txt.gz`, one JSON object): read as runs; a file without
//! `ingressBytes` is reported and left out of a merge, not fatal. No root.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

fn magnet() -> Command {
    Command::new(env!("CARGO_BIN_EXE_magnet"))
}

fn gz(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text.as_bytes()).unwrap();
    std::fs::write(&p, e.finish().unwrap()).unwrap();
    p
}

fn host(name: &str, ingress: &[u64]) -> String {
    let n = ingress.len();
    let z = vec![0u64; n];
    serde_json::json!({
        "server_hostname": name, "sampling_freq": 1000,
        "ingressBytes": ingress, "egressBytes": z, "inRxmitBytes": z, "outRxmitBytes": z,
        "inCongestionExperiencedBytes": z, "connections": z,
        "burst_result": {"note": "kept by Meta's tooling, ignored here"}
    })
    .to_string()
}

#[test]
fn gzipped_meta_files_show_plot_and_merge() {
    let d = tempfile::tempdir().unwrap();
    let a = gz(
        d.path(),
        "rack1-host1.txt.gz",
        &host("h1", &[100, 0, 300, 0]),
    );
    let b = gz(
        d.path(),
        "rack1-host2.txt.gz",
        &host("h2", &[0, 200, 0, 400]),
    );
    let bad = gz(
        d.path(),
        "rack1-meta.txt.gz",
        r#"{"rack": "r1", "hosts": 2}"#,
    );

    let out = magnet().args(["sample", "show"]).arg(&a).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("400"),
        "total ingress bytes 400 not shown:\n{text}"
    );

    let svg = d.path().join("h1.svg");
    let out = magnet()
        .args(["sample", "plot"])
        .arg(&a)
        .arg("-o")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));

    let merged = d.path().join("rack.json");
    let out = magnet()
        .args(["sample", "merge"])
        .arg(&a)
        .arg(&bad)
        .arg(&b)
        .arg("-o")
        .arg(&merged)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("rack1-meta.txt.gz") && err.contains("no ingressBytes"),
        "{err}"
    );
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&merged).unwrap()).unwrap();
    let text = m.to_string();
    assert!(text.contains("h1") && text.contains("h2"), "{text}");
    assert!(!text.contains("rack1-meta"), "{text}");

    // Only bad files: an error, exit 2.
    let out = magnet()
        .args(["sample", "merge"])
        .arg(&bad)
        .arg("-o")
        .arg(&merged)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
