//! Every benchmark under bench/ checks what it needs before it starts: with set-up
//! done (`scripts/setup.sh bench`, part of `--all`) the check passes, and a tool that
//! is missing is named in one line with the set-up part that installs it, instead of
//! a traceback halfway through a run. `BENCH_CHECK=1` stops a script right after its
//! check; `BENCH_HIDE` makes the check treat tools as missing (bench/lib.sh).

use std::path::{Path, PathBuf};
use std::process::Command;

fn bench_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench")
}

/// The scripts that take traffic, timers or tools from the host, with the tools their
/// check names (read from the script's own `bench_need` / `benchlib.need` line).
fn scripts() -> Vec<(PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(bench_dir()).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name == "lib.sh"
            || name == "benchlib.py"
            || !(name.ends_with(".sh") || name.ends_with(".py"))
        {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let need = text.lines().find_map(|l| {
            let l = l.trim();
            if let Some(rest) = l.strip_prefix("bench_need ") {
                Some(
                    rest.split_whitespace()
                        .skip(1)
                        .map(str::to_string)
                        .collect::<Vec<_>>(),
                )
            } else {
                l.strip_prefix("benchlib.need(").map(|rest| {
                    rest.trim_end_matches(')')
                        .split(',')
                        .skip(1)
                        .map(|t| t.trim().trim_matches(['\'', '"']).to_string())
                        .collect()
                })
            }
        });
        // Pure computations (no tools from the host) have no check.
        let uses_host_tools = [
            "iperf3",
            "tcpdump",
            "tshark",
            "ethtool",
            "bpftool",
            "/usr/bin/time",
            "ip netns",
        ]
        .iter()
        .any(|t| text.contains(t));
        match need {
            Some(tools) => out.push((p, tools)),
            None => assert!(
                !uses_host_tools,
                "{} uses host tools but has no bench_need/benchlib.need check",
                p.display()
            ),
        }
    }
    out.sort();
    assert!(
        out.len() >= 20,
        "expected the bench scripts, found {}",
        out.len()
    );
    out
}

fn run(script: &Path, envs: &[(&str, &str)]) -> std::process::Output {
    let mut c = if script.extension().is_some_and(|e| e == "py") {
        let mut c = Command::new("python3");
        c.arg(script);
        c
    } else {
        let mut c = Command::new("bash");
        c.arg(script);
        c
    };
    c.env("BENCH_CHECK", "1")
        .envs(envs.iter().copied())
        .output()
        .unwrap()
}

#[test]
fn each_bench_script_has_what_it_needs_after_set_up() {
    let live = std::env::var("MAGNET_REQUIRE_LIVE").is_ok_and(|v| v == "1");
    let mut missing = Vec::new();
    for (script, tools) in scripts() {
        let out = run(&script, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(0) {
            missing.push(format!("{}: {}", script.display(), err.trim()));
        } else {
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(said.contains("has"), "{}: {said}", script.display());
            assert!(!tools.is_empty(), "{}: an empty check", script.display());
        }
    }
    if !missing.is_empty() {
        let msg = format!(
            "bench tools missing (run scripts/setup.sh --all):\n{}",
            missing.join("\n")
        );
        if live {
            panic!("{msg}");
        }
        eprintln!("skip: {msg}");
    }
}

#[test]
fn a_missing_tool_is_named_in_one_line_with_its_set_up_part() {
    for (script, tools) in scripts() {
        let hidden = tools.join(" ");
        let out = run(&script, &[("BENCH_HIDE", &hidden)]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", script.display());
        let lines: Vec<_> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{}: not one line: {err}", script.display());
        for t in &tools {
            assert!(
                lines[0].contains(t.as_str()),
                "{}: {t} not named: {err}",
                script.display()
            );
        }
        assert!(
            lines[0].contains("scripts/setup.sh "),
            "{}: {err}",
            script.display()
        );
        assert!(
            out.stdout.is_empty(),
            "{}: went on after the check",
            script.display()
        );
    }
}
