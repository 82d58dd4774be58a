//! Every JSON output names its schema first (docs/json.md), so a consumer can
//! tell outputs and their versions apart: each
//! top-level object, a document or a line of a stream, starts with
//! `"schema": "magnet.…/N"`, the name docs/json.md gives that output. Checked on
//! every `--json` output that needs no root: the 0.1.0 trace's info, analyze,
//! parse, packets and handshakes, and rpc/nfs of a recorded NFS capture.

use std::path::PathBuf;

mod common;
use common::magnet;

fn path(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(rel)
        .to_str()
        .unwrap()
        .to_string()
}

/// The top-level objects of an output: one document, or one per line.
fn objects(stdout: &[u8]) -> Vec<String> {
    let s = String::from_utf8(stdout.to_vec()).unwrap();
    if s.starts_with("{\n") {
        vec![s]
    } else {
        s.lines().map(str::to_string).collect()
    }
}

#[test]
fn every_json_output_leads_with_its_documented_schema() {
    let doc = std::fs::read_to_string(path("../../docs/json.md")).unwrap();
    let trace = path("tests/fixtures/release-0.1.0.mgt");
    let v3 = path("../magnet-rpc/tests/data/ganesha-v3-tcp.pcap");
    let cases: &[(&[&str], &str)] = &[
        (&["info", "--json", &trace], "magnet.info/1"),
        (&["analyze", "--json", &trace], "magnet.analyze/1"),
        (&["parse", "--json", &trace], "magnet.parse/1"),
        (&["packets", "--json", &trace], "magnet.packets/1"),
        (
            &["packets", "--handshake", "--json", &trace],
            "magnet.handshakes/1",
        ),
        (&["rpc", "--json", "-q", "-r", &v3], "magnet.rpc/1"),
        (&["nfs", "--json", "-r", &v3], "magnet.nfs/1"),
        (&["nfs", "--stats", "--json", "-r", &v3], "magnet.nfs/1"),
    ];
    for (args, schema) in cases {
        assert!(
            doc.contains(&format!("`{schema}`")),
            "docs/json.md does not list {schema}"
        );
        let out = magnet(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let objs = objects(&out.stdout);
        assert!(!objs.is_empty(), "{args:?}: no output");
        let lead = format!("\"schema\":\"{schema}\"");
        for o in &objs {
            let v: serde_json::Value =
                serde_json::from_str(o).unwrap_or_else(|e| panic!("{args:?}: {e}: {o}"));
            assert_eq!(v["schema"], *schema, "{args:?}: {o}");
            // First, as written (a reader can check it before parsing the rest).
            let compact: String = o.chars().filter(|c| !c.is_whitespace()).collect();
            assert!(
                compact.starts_with(&format!("{{{lead}")),
                "{args:?}: schema is not the first key: {}",
                &o[..o.len().min(120)]
            );
        }
    }
    // Every name the code uses is documented.
    let code = std::fs::read_to_string(path("src/cmd/json_out.rs")).unwrap();
    for name in code
        .lines()
        .filter_map(|l| l.split("&str = \"").nth(1))
        .map(|r| r.trim_end_matches("\";"))
    {
        assert!(
            doc.contains(&format!("`{name}`")),
            "docs/json.md lacks {name}"
        );
    }
}
