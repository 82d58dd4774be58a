//! Hooks chosen per kernel, on this machine: `record --check` agrees with what
//! a recording attaches, a default layer whose hooks are missing is left out
//! with one line naming them, and a layer named in --layers fails with it.
//! Missing hooks are simulated with MAGNET_HOOKS_DENY (this kernel has every
//! tracepoint and no fentry); the real kernels are in the QEMU lab
//! (scripts/lab/matrix). About 2 s.

mod common;

use std::process::Command;

use common::{magnet_ok, tmp, MAGNET};
use magnet_testkit::live_or_skip;

fn record(deny: &str, layers: Option<&str>, out: &std::path::Path) -> std::process::Output {
    let mut c = Command::new(MAGNET);
    c.env("MAGNET_HOOKS_DENY", deny)
        .args(["record", "-q", "--json", "-o"])
        .arg(out);
    if let Some(l) = layers {
        c.args(["--layers", l]);
    }
    c.args(["--", MAGNET, "loadgen", "--udp", "20x100"]);
    c.output().expect("runs magnet")
}

/// The recorder's JSON summary (stdout: loadgen's line, then the summary)
/// and its ip layer's source.
fn summary_and_ip_layer(out: &std::process::Output) -> (serde_json::Value, serde_json::Value) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: serde_json::Value = stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    let ip = summary["layers"]
        .as_array()
        .and_then(|layers| layers.iter().find(|l| l["layer"] == "ip"))
        .cloned()
        .unwrap_or_else(|| panic!("no ip layer in {summary}"));
    (summary, ip)
}

#[test]
fn missing_hooks_leave_a_default_layer_out_and_fail_a_named_one() {
    if !live_or_skip(
        "missing_hooks_leave_a_default_layer_out_and_fail_a_named_one",
        &[],
    ) {
        return;
    }
    // The check names the hook of every default kind.
    let out = magnet_ok(["record", "--check", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let kinds = v["kinds"].as_array().unwrap();
    assert!(kinds.len() >= 12, "{kinds:?}");
    for k in kinds {
        assert!(
            k["hook"].is_string() || k["missing"].is_string(),
            "{k}: neither a hook nor a reason"
        );
    }
    let fentry = v["kernel"]["fentry"]["support"] == "yes";

    // Nothing denied: netfilter feeds the ip layer and nothing is missing;
    // where its hooks are (every namespace) is a note, not a missing hook.
    let path = tmp("hooks-all.mgt");
    let out = record("", None, &path);
    let (_, ip) = summary_and_ip_layer(&out);
    assert_eq!(ip["missing"], serde_json::json!([]), "{ip}");
    assert!(
        ip["notes"][0]
            .as_str()
            .is_some_and(|n| n.starts_with("netfilter hooks in every network namespace")),
        "{ip}"
    );
    let _ = std::fs::remove_file(&path);

    // Default layers, netfilter denied: on a kernel without fentry the ip kinds
    // are left out with a line; the recording still succeeds with 20 sends.
    let path = tmp("hooks-default.mgt");
    let out = record("netfilter", None, &path);
    let (summary, ip) = summary_and_ip_layer(&out);
    assert!(out.status.success(), "{summary}");
    assert_eq!(summary["by_kind"]["app_send"], 20, "{summary}");
    if fentry {
        assert_eq!(ip["hooks"][0], "fexit/__ip_local_out+fexit/__ip6_local_out");
    } else {
        assert!(ip["hooks"].as_array().unwrap().is_empty(), "{ip}");
        let missing: Vec<&str> = ip["missing"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        assert!(
            missing.iter().any(|m| m.starts_with(
                "ip_local_out not recorded: netfilter/LOCAL_OUT: netfilter/LOCAL_OUT denied by MAGNET_HOOKS_DENY"
            ) && m.contains("fexit/__ip_local_out+fexit/__ip6_local_out: no fentry/fexit")),
            "{missing:?}"
        );
        assert!(
            summary["by_kind"].get("ip_local_out").is_none(),
            "{summary}"
        );
    }
    let _ = std::fs::remove_file(&path);

    // The ip layer named, netfilter and fentry denied: fails with one line
    // naming the layer, the hooks and what each lacks; no trace is left.
    let path = tmp("hooks-named.mgt");
    let out = record("netfilter,fexit,fentry", Some("ip"), &path);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("layer ip cannot be recorded on this kernel")
            && lines[0].contains("netfilter/LOCAL_OUT: netfilter/LOCAL_OUT denied")
            && lines[0].contains(
                "fexit/__ip_local_out+fexit/__ip6_local_out: fexit/__ip_local_out denied"
            ),
        "{err}"
    );
    assert!(!path.exists(), "a failed recording left {}", path.display());
}

/// libbpf speaks only when asked. A second recorder of the ip layer beside a
/// first finds each netfilter hook's first priority taken (EBUSY) and moves
/// on to the next, as it should; libbpf logs each refusal. By default none of
/// that reaches the terminal (magnet's own lines only); with `-v` libbpf's
/// lines are shown.
#[test]
fn libbpf_lines_reach_the_terminal_only_with_v() {
    if !live_or_skip("libbpf_lines_reach_the_terminal_only_with_v", &[]) {
        return;
    }
    use std::io::{BufRead, BufReader};
    let check = magnet_ok(["record", "--check", "--json", "--layers", "ip"]);
    let v: serde_json::Value = serde_json::from_slice(&check).unwrap();
    let netfilter = v["kinds"].as_array().unwrap().iter().any(|k| {
        k["hook"]
            .as_str()
            .is_some_and(|h| h.starts_with("netfilter/"))
    });

    let first_out = tmp("libbpf-first.mgt");
    let mut first = Command::new(MAGNET)
        .args(["record", "--all", "--layers", "ip", "-d", "20s", "-o"])
        .arg(&first_out)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // its hooks are attached once it says it is recording
    let mut err = BufReader::new(first.stderr.take().unwrap());
    let mut line = String::new();
    while err.read_line(&mut line).unwrap() > 0 && !line.contains("magnet: recording ") {
        line.clear();
    }
    assert!(
        line.contains("magnet: recording "),
        "the first recorder never started"
    );

    let second = |verbose: bool| {
        let path = tmp("libbpf-second.mgt");
        let mut c = Command::new(MAGNET);
        if verbose {
            c.arg("-v");
        }
        let out = c
            .args(["record", "--all", "--layers", "ip", "-d", "300ms", "-o"])
            .arg(&path)
            .output()
            .unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let quiet = second(false);
    let loud = second(true);
    let _ = first.kill();
    let _ = first.wait();
    let _ = std::fs::remove_file(&first_out);

    assert!(
        quiet.lines().all(|l| l.starts_with("magnet: ")),
        "a line not magnet's own:\n{quiet}"
    );
    if netfilter {
        assert!(
            loud.lines()
                .any(|l| l.starts_with("libbpf: ") && l.contains("EBUSY")),
            "-v shows no libbpf line:\n{loud}"
        );
    }
}
