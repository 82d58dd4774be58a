//! `magnet analyze` and `magnet report` as a user runs them, on trace files
//! written here (no root needed): JSON and text agree with what was written,
//! bad arguments and damaged files give clear messages.

use std::path::PathBuf;

use magnet_trace::emit::{synthetic_trace, Emitter};
use magnet_trace::{kind, Footer};

mod common;
use common::magnet;

const T0: u64 = 5_000_000_000;
const MS: u64 = 1_000_000;

fn dir() -> PathBuf {
    common::tmp("")
}

/// Socket 9: 20 sends of 1000 bytes, 5 ms apart; socket 10 (a listener) nothing.
fn records(e: &Emitter) -> Vec<Vec<u8>> {
    let mut v = vec![e
        .record(kind::SOCK, T0)
        .pid(77)
        .tid(77)
        .set("cookie", 10)
        .set("protocol", 6)
        .set("sport", 80)
        .into_bytes()];
    for i in 0..20 {
        v.push(
            e.record(kind::APP_SEND, T0 + MS + i * 5 * MS)
                .pid(77)
                .tid(77)
                .set("cookie", 9)
                .set("asked", 1000)
                .set("ret", 1000)
                .set("protocol", 6)
                .into_bytes(),
        );
    }
    v
}

fn write_trace(name: &str, cut: usize) -> PathBuf {
    let path = dir().join(name);
    let mut bytes = synthetic_trace(T0, records(&Emitter::builtin()), Some(&Footer::default()));
    bytes.truncate(bytes.len() - cut);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = magnet(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The recording's duration and its LOST rows, through the binary: `info` and
/// `analyze` show one
/// duration (the recording's span from the END block), `info` shows what the
/// kernel generated per kind, and the row a LOST region touches says so in
/// text, JSON and the report.
#[test]
fn one_duration_generated_counts_and_rows_touched_by_loss() {
    let e = Emitter::builtin();
    let mut recs = records(&e);
    // 3 events lost on CPU 0 between the 10th and 11th send.
    recs.insert(
        11,
        e.record(kind::LOST, T0 + 48 * MS)
            .set("count", 3)
            .set("lost_cpu", 0)
            .into_bytes(),
    );
    let mut generated = std::collections::BTreeMap::new();
    generated.insert("app_send".to_string(), 23);
    generated.insert("sock".to_string(), 1);
    let footer = Footer {
        records: 22,
        lost_kernel: 3,
        generated,
        end_mono_ns: T0 + 1_121_000_000,
        end_reason: "command exited".into(),
        ..Footer::default()
    };
    let path = dir().join("lost.mgt");
    std::fs::write(&path, synthetic_trace(T0, &recs, Some(&footer))).unwrap();
    let p = path.to_str().unwrap();

    let info = json(&["info", p, "--json"]);
    assert_eq!(info["duration_s"].as_f64(), Some(1.121));
    assert_eq!(info["kinds"]["app_send"]["events"].as_u64(), Some(20));
    assert_eq!(info["kinds"]["app_send"]["generated"].as_u64(), Some(23));
    let text = String::from_utf8(magnet(&["info", p]).stdout).unwrap();
    assert!(text.contains("duration  1.121000 s"), "{text}");
    let row = text.lines().find(|l| l.starts_with("app_send")).unwrap();
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>()[..5],
        ["app_send", "app", "20", "23", "3"]
    );

    let a = json(&["analyze", p, "--json"]);
    assert_eq!(a["trace"]["duration_s"].as_f64(), Some(1.121));
    let c = &a["connections"][0];
    assert_eq!(c["lost_in_span"].as_u64(), Some(3));
    assert_eq!(c["modulation"][0]["lost_in_span"].as_u64(), Some(3));
    assert_eq!(c["modulation"][0]["unit"].as_str(), Some("call"));
    let text = String::from_utf8(magnet(&["analyze", p]).stdout).unwrap();
    assert!(text.contains("recorded for 1.121 s"), "{text}");
    let row = text
        .lines()
        .find(|l| l.trim_start().starts_with("app   out"))
        .unwrap();
    assert!(row.ends_with("LOST 3 nearby"), "{row}");

    let html = path.with_extension("html");
    let out = magnet(&["report", p, "-o", html.to_str().unwrap()]);
    assert!(out.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("data-key=\"9.app.out.lost_in_span\" data-value=\"3\""));
    assert!(page.contains("data-key=\"trace.duration_s\" data-value=\"1.121\""));
    assert!(page.contains("<tr class=lostrow><td class=l>app</td>"));
}

/// Three LOST records of 2^63 events each: `info`, `analyze` (text and JSON)
/// and `report` all show the total as the largest u64, not wrapped to 2^63.
#[test]
fn lost_totals_saturate_in_every_command() {
    let e = Emitter::builtin();
    let recs: Vec<Vec<u8>> = (1..=3)
        .map(|i| {
            e.record(kind::LOST, T0 + i * MS)
                .set("count", 1 << 63)
                .into_bytes()
        })
        .collect();
    let footer = Footer {
        records: 3,
        lost_kernel: u64::MAX,
        end_mono_ns: T0 + 10 * MS,
        end_reason: "command exited".into(),
        ..Footer::default()
    };
    let path = dir().join("lost-2-63.mgt");
    std::fs::write(&path, synthetic_trace(T0, &recs, Some(&footer))).unwrap();
    let p = path.to_str().unwrap();
    let max = u64::MAX.to_string();

    assert_eq!(
        json(&["info", p, "--json"])["lost_events"].as_u64(),
        Some(u64::MAX)
    );
    let a = json(&["analyze", p, "--json"]);
    assert_eq!(a["trace"]["lost_events"].as_u64(), Some(u64::MAX));
    let text = String::from_utf8(magnet(&["analyze", p]).stdout).unwrap();
    assert!(text.contains(&format!("{max} events lost")), "{text}");
    let html = path.with_extension("html");
    let out = magnet(&["report", p, "-o", html.to_str().unwrap()]);
    assert!(out.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(&format!(
            "data-key=\"trace.lost_events\" data-value=\"{max}\""
        )),
        "{page}"
    );
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

    // Cut inside the END block: analysed up to the cut, with a warning, and
    // exit 1 (what it shows is incomplete: docs/exit-codes.md).
    let cut = write_trace("c.mgt", 5);
    let out = magnet(&["analyze", cut.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("warning"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["trace"]["complete"], false);
    assert_eq!(j["connections"][0]["app"]["sent_calls"], 20);

    let not = common::tmp("not.mgt");
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

/// `magnet info run.mgt | head -1`: a reader that goes away early ends the
/// readers quietly (as it ends cat or grep), never with a panic message.
#[test]
fn readers_end_quietly_on_a_closed_pipe() {
    use std::os::unix::process::ExitStatusExt;
    let path = write_trace("pipe.mgt", 0);
    let path = path.to_str().unwrap();
    for args in [
        vec!["info", path],
        vec!["parse", path],
        vec!["analyze", path],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader); // every write now meets a closed pipe
        let out = std::process::Command::new(common::MAGNET)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(writer)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "magnet {args:?}: {err}");
        assert!(
            out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
            "magnet {args:?} ended with {:?}: {err}",
            out.status
        );
    }
}
