//! Progress bars: on a terminal every reader that can take long
//! draws one bar on stderr, driven by the bytes of the trace read; nothing of it
//! appears when stderr is not a terminal, nor with -q. The terminal is a pty made
//! by util-linux `script`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use magnet_testkit::{live_or_skip, Need, Netns};
use magnet_trace::emit::{synthetic_header, Emitter};
use magnet_trace::{kind, Footer, TraceWriter};

mod common;
use common::{magnet, tmp, MAGNET};

/// A trace of `n` LOST records, `progress-N.mgt` (each test its own file).
fn trace(n: u64) -> PathBuf {
    let e = Emitter::builtin();
    let mut w = TraceWriter::new(Vec::new(), &synthetic_header(0)).unwrap();
    for i in 0..n {
        w.push(e.record(kind::LOST, i * 1000).set("count", i).as_ref())
            .unwrap();
    }
    let p = tmp(&format!("progress-{n}.mgt"));
    std::fs::write(&p, w.finish(&Footer::default()).unwrap()).unwrap();
    p
}

/// `magnet ARGS` (then `rest`, shell words such as a redirection) on a pty:
/// everything the terminal received.
fn on_terminal(args: &[&str], rest: &str) -> String {
    on_terminal_as("", args, rest)
}

/// [`on_terminal`] with `prefix` (shell words) before `magnet`.
fn on_terminal_as(prefix: &str, args: &[&str], rest: &str) -> String {
    let have = Command::new("script").arg("--version").output();
    assert!(
        have.is_ok_and(|o| o.status.success()),
        "util-linux `script` is needed (Debian: bsdutils, an essential package)"
    );
    let cmd = format!("{prefix} {MAGNET} {} {rest}", args.join(" "));
    let out = Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .env("TERM", "xterm")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{cmd}: {text}");
    text
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_bar_on_a_terminal_none_on_a_pipe_or_with_q() {
    let t = trace(20_000);
    let size = std::fs::metadata(&t).unwrap().len();
    let out = tmp("progress-20000.out");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["info", s(&t)], ""),
        (vec!["analyze", s(&t)], ""),
        (vec!["report", s(&t), "-o", s(&out)], ""),
        (vec!["export", s(&t), "-f", "parquet", "-o", s(&out)], ""),
        (vec!["export", s(&t), "-f", "csv", "-o", "-"], "> /dev/null"),
        (vec!["parse", s(&t)], "> /dev/null"),
        (vec!["packets", s(&t)], ""),
        (vec!["pcap", s(&t), "-o", s(&out)], ""),
    ];
    for (args, rest) in &cases {
        let what = args.join(" ");
        // A terminal: the bar, naming the file, reaching the file's size.
        let seen = on_terminal(args, rest);
        assert!(
            seen.contains("magnet: reading progress-20000.mgt ["),
            "{what}: no bar on the terminal: {seen:?}"
        );
        let total = format!("/{}", indicatif::HumanBytes(size));
        assert!(seen.contains(&total), "{what}: no total {total}: {seen:?}");
        // -q: none.
        let mut quiet = args.clone();
        quiet.push("-q");
        let seen = on_terminal(&quiet, rest);
        assert!(!seen.contains("magnet: reading"), "{what} -q: {seen:?}");
        // Not a terminal: stderr holds what it held before the bars.
        let o = magnet(args);
        assert!(o.status.success(), "{what}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !err.contains("reading") && !err.contains('\r') && !err.contains('\x1b'),
            "{what}: stderr on a pipe: {err:?}"
        );
    }
}

#[test]
fn no_bar_on_the_terminal_the_output_goes_to() {
    let t = trace(1000);
    // parse and export -o - print to the terminal: a bar would be drawn through their lines.
    for args in [
        vec!["parse", s(&t)],
        vec!["export", s(&t), "-f", "csv", "-o", "-"],
    ] {
        let seen = on_terminal(&args, "");
        assert!(!seen.contains("magnet: reading"), "{args:?}: {seen:?}");
        assert!(seen.contains("lost"), "{args:?}: {seen:?}");
    }
}

#[test]
fn a_sample_run_shows_its_time_on_a_terminal() {
    if !live_or_skip("a_sample_run_shows_its_time_on_a_terminal", &[Need::Btf]) {
        return;
    }
    let ns = Netns::new().unwrap();
    let prefix = format!("ip netns exec {}", ns.name());
    let args = [
        "sample",
        "-i",
        "lo",
        "--interval",
        "1ms",
        "--samples",
        "400",
    ];
    let seen = on_terminal_as(&prefix, &args, "");
    assert!(seen.contains("magnet: sampling lo ["), "{seen:?}");
    // It moves with the clock (updated every 100 ms through a 400 ms run).
    let most = seen
        .split('%')
        .filter_map(|p| p.rsplit(' ').next()?.parse::<u32>().ok())
        .max();
    assert!(
        most.is_some_and(|m| m >= 50),
        "the bar did not move: {seen:?}"
    );
    let mut quiet = args.to_vec();
    quiet.push("-q");
    let seen = on_terminal_as(&prefix, &quiet, "");
    assert!(!seen.contains("magnet: sampling lo ["), "-q: {seen:?}");
    // Not a terminal: the lines it printed before, no bar.
    let o = ns.command(MAGNET).args(args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains('[') && !err.contains('\x1b'), "{err:?}");
}
