//! `magnet analyze` and `magnet report` as a user runs them, on trace files
//! written here (no root needed): JSON and text agree with what was written,
//! bad arguments and damaged files give clear messages.

use std::path::PathBuf;

use magnet_trace::{kind, Catalog, ClockMap, Footer, Header, TraceWriter};

mod common;
use common::magnet;

fn rec(k: u16, ts: u64, fields: &[(&str, u64)]) -> Vec<u8> {
    let c = Catalog::builtin();
    let d = c.get(k).unwrap();
    let mut b = vec![0u8; d.size as usize];
    b[0..8].copy_from_slice(&ts.to_le_bytes());
    b[8..10].copy_from_slice(&k.to_le_bytes());
    b[12..16].copy_from_slice(&77u32.to_le_bytes());
    b[16..20].copy_from_slice(&77u32.to_le_bytes());
    for (n, v) in fields {
        let f = d.field(n).unwrap();
        let o = f.offset as usize;
        let w = f.ty.size() as usize;
        b[o..o + w].copy_from_slice(&v.to_le_bytes()[..w]);
    }
    b
}

/// Socket 9: 20 sends of 1000 bytes, 5 ms apart; socket 10 (a listener) nothing.
fn write_trace(name: &str, cut: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("magnet-analyze-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let t0 = 5_000_000_000;
    let header = Header::new(
        "h".into(),
        "6.18".into(),
        1,
        ClockMap {
            monotonic_ns: t0,
            realtime_ns: 0,
        },
    );
    let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
    w.push(&rec(
        kind::SOCK,
        t0,
        &[("cookie", 10), ("protocol", 6), ("sport", 80)],
    ))
    .unwrap();
    for i in 0..20 {
        let f = [
            ("cookie", 9),
            ("asked", 1000),
            ("ret", 1000),
            ("protocol", 6),
        ];
        w.push(&rec(kind::APP_SEND, t0 + 1_000_000 + i * 5_000_000, &f))
            .unwrap();
    }
    let mut bytes = w.finish(&Footer::default()).unwrap();
    bytes.truncate(bytes.len() - cut);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn json_and_text_tell_what_was_written() {
    let t = write_trace("a.mgt", 0);
    let out = magnet(&["analyze", t.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let conns = j["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 1, "the listener moved no data: {conns:?}");
    let app = &conns[0]["modulation"][0];
    assert_eq!(
        (app["layer"].as_str(), app["dir"].as_str()),
        (Some("app"), Some("out"))
    );
    assert_eq!(
        (app["units"].as_u64(), app["bytes"].as_u64()),
        (Some(20), Some(20_000))
    );
    assert_eq!(app["interval_ns"]["median"].as_u64(), Some(5_000_000));
    assert_eq!(app["interval_ns"]["cv"].as_f64(), Some(0.0));
    assert_eq!(conns[0]["pids"][0].as_u64(), Some(77));

    let all = magnet(&["analyze", t.to_str().unwrap(), "--json", "--all"]);
    let j: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    assert_eq!(j["connections"].as_array().unwrap().len(), 2);

    let text = String::from_utf8(magnet(&["analyze", t.to_str().unwrap()]).stdout).unwrap();
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("app   out"))
        .expect("app row");
    assert!(
        row.contains(" 20 ") && row.contains("20000") && row.contains("5.000ms"),
        "{row}"
    );
}

#[test]
fn unknown_socket_and_damaged_files() {
    let t = write_trace("b.mgt", 0);
    let out = magnet(&["analyze", t.to_str().unwrap(), "--sock", "12345"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--sock 12345: no such socket"));

    // Cut inside the END block: analysed up to the cut, with a warning.
    let cut = write_trace("c.mgt", 5);
    let out = magnet(&["analyze", cut.to_str().unwrap(), "--json"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("warning"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["trace"]["complete"], false);
    assert_eq!(j["connections"][0]["app"]["sent_calls"], 20);

    let not =
        std::env::temp_dir().join(format!("magnet-analyze-cli-{}/not.mgt", std::process::id()));
    std::fs::write(&not, b"hello").unwrap();
    let out = magnet(&["analyze", not.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not.mgt"));
}

#[test]
fn report_page_carries_the_numbers() {
    let t = write_trace("d.mgt", 0);
    let html = t.with_extension("html");
    let out = magnet(&["report", t.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("data-key=\"9.app.out.units\" data-value=\"20\""));
    assert!(page.contains("data-key=\"9.app.out.interval_ns.median\" data-value=\"5000000\""));
    assert!(page.contains("<script id=analysis type=\"application/json\">"));
    assert!(page.contains("data-chosen=\"0\""));
    let out = magnet(&[
        "report",
        t.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--sock",
        "4",
    ]);
    assert_eq!(out.status.code(), Some(2));
}
