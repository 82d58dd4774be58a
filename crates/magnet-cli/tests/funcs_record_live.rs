//! `record --funcs` on this host. Where the kernel has no function probes
//! (6.18 here: no kprobes, no kprobe-multi; or `MAGNET_HOOKS_DENY=kprobe`)
//! the recorder fails before recording, with one line, as for a layer named
//! in --layers that cannot be recorded: no trace, the command never runs;
//! where it has them, the SYN's path holds the functions of the transmit path
//! in order, from `__tcp_transmit_skb <- tcp_connect` on the queued skb
//! through its clone. ~2 s. (Debian's 6.1 and 6.12 are exercised in the QEMU
//! lab: docs/funcs.md.)

mod common;

use std::process::{Command, Stdio};

use common::{magnet, tmp, MAGNET};
use magnet_testkit::{live_or_skip, Need};

/// `record --funcs auto -- touch MARKER` under `deny` (MAGNET_HOOKS_DENY,
/// empty: none): its output, the trace's path and the marker's.
fn record_funcs(
    deny: &str,
    name: &str,
) -> (std::process::Output, std::path::PathBuf, std::path::PathBuf) {
    let trace = tmp(&format!("{name}.mgt"));
    let marker = tmp(&format!("{name}.ran"));
    let _ = std::fs::remove_file(&trace);
    let _ = std::fs::remove_file(&marker);
    let mut c = Command::new(MAGNET);
    c.env_remove("MAGNET_HOOKS_DENY");
    if !deny.is_empty() {
        c.env("MAGNET_HOOKS_DENY", deny);
    }
    let out = c
        .args(["record", "-q", "-o"])
        .arg(&trace)
        .args(["--layers", "app,tcp", "--funcs", "auto", "--", "touch"])
        .arg(&marker)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (out, trace, marker)
}

/// The failure: exit 2 (a missing kernel feature), one line naming --funcs and why, nothing recorded
/// and the command not run.
fn assert_fails_before_recording(
    out: &std::process::Output,
    trace: &std::path::Path,
    marker: &std::path::Path,
) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(
            "magnet: error: --funcs cannot be recorded: no kprobes or kprobe-multi on this kernel"
        ),
        "{stderr}"
    );
    assert!(
        stderr
            .trim_end()
            .ends_with("(leave out --funcs, or see `magnet record --check`)"),
        "{stderr}"
    );
    assert!(!trace.exists(), "a trace was written");
    assert!(!marker.exists(), "the command ran");
}

#[test]
fn funcs_without_function_probes_fail_before_recording() {
    if !live_or_skip(
        "funcs_without_function_probes_fail_before_recording",
        &[Need::Btf],
    ) {
        return;
    }
    // As a kernel without kprobes (and so without kprobe-multi) would.
    let (out, trace, marker) = record_funcs("kprobe", "denied");
    assert_fails_before_recording(&out, &trace, &marker);
    assert!(String::from_utf8_lossy(&out.stderr).contains("denied by MAGNET_HOOKS_DENY=kprobe"));
    // Without --funcs the same recording records (the denial is about
    // function probes only).
    let out = Command::new(MAGNET)
        .env("MAGNET_HOOKS_DENY", "kprobe")
        .args(["record", "-q", "-o"])
        .arg(&trace)
        .args(["--layers", "app,tcp", "--", "touch"])
        .arg(&marker)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(trace.exists() && marker.exists());
    // Recorded without ip: the trace says that it has no tcp out rows.
    let info = magnet(&["info", trace.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(text.contains("no tcp out rows"), "{text}");
}

#[test]
fn funcs_auto_records_or_says_why_not() {
    if !live_or_skip("funcs_auto_records_or_says_why_not", &[Need::Btf]) {
        return;
    }
    let trace = tmp("funcs.mgt");
    let out = magnet(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--layers",
        "app,tcp,ip,dev",
        "--funcs",
        "auto",
        "--",
        MAGNET,
        "loadgen",
        "--tcp",
        "4x300",
        "--port",
        "7323",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        // No function probes here: the failure before recording, and the
        // kernel does lack kprobes (no kprobe PMU).
        let (out, trace, marker) = record_funcs("", "plain");
        assert_fails_before_recording(&out, &trace, &marker);
        assert!(
            !std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists(),
            "{stderr}"
        );
        return;
    }
    let info: serde_json::Value =
        serde_json::from_slice(&magnet(&["info", trace.to_str().unwrap(), "--json"]).stdout)
            .unwrap();
    // The layers record whatever happens to the function probes: 4 sends of 300 B.
    assert_eq!(info["kinds"]["app_send"]["events"], 4, "{info}");
    let func = info["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["layer"] == "func")
        .expect("a func source in the header")
        .clone();
    assert!(!func["hooks"].as_array().unwrap().is_empty(), "{func}");
    let funcs_recorded = info["kinds"]["func"]["events"].as_u64().unwrap_or(0);
    // Function probes: the SYN's path, in order.
    assert!(funcs_recorded > 0, "{info}");
    let hs: serde_json::Value = serde_json::from_slice(
        &magnet(&["packets", trace.to_str().unwrap(), "--handshake", "--json"]).stdout,
    )
    .unwrap();
    let syn = hs["handshakes"][0][0]["pkt_id"].as_u64().unwrap();
    let p: serde_json::Value = serde_json::from_slice(
        &magnet(&[
            "packets",
            trace.to_str().unwrap(),
            "--pkt",
            &syn.to_string(),
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    let whats: Vec<&str> = p["packets"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["layer"] == "func")
        .map(|s| s["what"].as_str().unwrap())
        .collect();
    let names: Vec<String> = p["packets"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["layer"] == "func")
        .map(|s| {
            s["what"]
                .as_str()
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    let at = |f: &str| {
        names
            .iter()
            .position(|n| n == f)
            .unwrap_or_else(|| panic!("{f} in {names:?}"))
    };
    // The write-queue skb's transmit (its clone is the packet) comes first.
    let connect = whats
        .iter()
        .position(|w| *w == "__tcp_transmit_skb <- tcp_connect")
        .unwrap_or_else(|| panic!("__tcp_transmit_skb <- tcp_connect in {whats:?}"));
    assert!(connect < at("skb_clone"));
    assert!(at("skb_clone") < at("__ip_queue_xmit"));
    assert!(at("__ip_queue_xmit") < at("ip_output"));
    assert!(at("ip_output") < at("dev_hard_start_xmit"));
}

/// `magnet funcs --check` prints the plan `record --funcs` follows, from the
/// planner every `--check` shares: one row per part of funcs.bpf.c, each
/// with the probe this kernel allows or, in one line, every probe refused and
/// why. The kernel's own answer is checked against its kprobe PMU; with
/// kprobes denied every part is refused on any kernel, and `record --funcs`
/// fails for the same reason.
#[test]
fn funcs_check_names_the_probe_or_why_none() {
    if !live_or_skip("funcs_check_names_the_probe_or_why_none", &[Need::Btf]) {
        return;
    }
    let parts = |deny: &str| {
        let out = common::magnet_ok_denying(&["funcs", "--check", "--json"], deny);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["schema"], "magnet.funcs.check/1", "{v}");
        let parts = v["parts"].as_array().unwrap().clone();
        let names: Vec<&str> = parts.iter().map(|p| p["part"].as_str().unwrap()).collect();
        assert_eq!(names, ["entry", "exit", "copies", "no_skb"], "{v}");
        parts
    };
    let base = std::env::var("MAGNET_HOOKS_DENY").unwrap_or_default();
    let entry = parts(&base)[0].clone();
    let kprobes = std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists();
    if kprobes && base.is_empty() {
        let hook = entry["hook"].as_str().unwrap_or_default();
        assert!(hook == "kprobe_multi/*" || hook == "kprobe/*", "{entry}");
    } else if !kprobes {
        // This host's 6.18: no kprobe PMU, so neither kprobes nor
        // kprobe-multi; the one line names both.
        assert!(entry["hook"].is_null(), "{entry}");
        let why = entry["missing"].as_str().unwrap();
        assert!(
            why.starts_with("no function entry records (kprobe_multi/*: "),
            "{why}"
        );
        assert!(why.contains("; kprobe/*: no kprobes"), "{why}");
    }

    for p in parts(&format!("{base},kprobe")) {
        assert!(p["hook"].is_null(), "{p}");
        let why = p["missing"].as_str().unwrap();
        assert!(why.contains("denied by MAGNET_HOOKS_DENY="), "{p}");
        assert!(!why.contains('\n'), "{p}");
    }
    let out = Command::new(MAGNET)
        .env("MAGNET_HOOKS_DENY", "kprobe")
        .args(["funcs", "--check"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["group", "part", "hook"]
    );
    assert!(lines[1].starts_with("funcs  entry "), "{text}");
    assert!(
        lines[1].contains("cannot be used: no function entry records"),
        "{text}"
    );
    assert_eq!(lines.len(), 6, "{text}");
    assert!(
        lines[5].starts_with("record --funcs cannot run on this kernel"),
        "{text}"
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
