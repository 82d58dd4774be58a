//! docs/exit-codes.md, checked: every subcommand's code on bad input (2,
//! with one `magnet: error:` line for input it could not use), and on
//! SIGINT/SIGTERM (root: 128+N for work with its own end cut short, 0 for
//! work that runs until stopped). The interrupt tests run in a network
//! namespace of their own. About 12 s in all.

use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use magnet_testkit::{live_or_skip, Need, Netns};

fn magnet() -> Command {
    Command::new(env!("CARGO_BIN_EXE_magnet"))
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.mgt");
    std::fs::write(&junk, b"not a trace at all").unwrap();
    let junk = junk.to_str().unwrap();
    let bad_conf = dir.path().join("bad.toml");
    std::fs::write(&bad_conf, "max_connections = \"many\"\n").unwrap();
    let bad_conf = bad_conf.to_str().unwrap();
    // Arguments clap rejects, and arguments that name nothing: 2 and one line.
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/release-0.1.0.mgt"
    );
    for args in [
        &["record", "-d", "ten", "--all"][..],
        &["record", "--buffer", "12parsecs", "--all"],
        &["record", "--no-such-flag"],
        &["record", "--cgroup", "/nonexistent/cg", "--", "true"],
        &["record", "--cgroup", "/tmp", "--", "true"],
        &["record", "--buffer", "18446744073709551615", "--all"],
        &["record", "--buffer", "1000000000000", "--all"],
        &["record", "--buffer", "1k", "--all"],
        &["loadgen", "--tcp", "10x1q"],
        &["loadgen", "--tcp", "1x1000000000000"],
        &["loadgen", "--tcp", "2x10", "--interval", "3fortnights"],
        &["sample", "-i", "lo", "--interval", "x"],
        &["parse", "--since", "yesterday", "x.mgt"],
        &["parse", fixture, "--layer", "nosuch"],
        &["parse", fixture, "--kind", "nosuch"],
        &["parse"],
        &["info", "a.mgt", "-r", "b.mgt"],
        &["rpc", "-r", "x.pcap", "--reply-timeout", "soon"],
        &["export", fixture, "-T", "xml", "-o", "-"],
        &["completions", "tcsh"],
        &["no-such-subcommand"],
        &[],
        &["parse", "--threads", "18446744073709551615", "x.mgt"],
        &["parse", "--threads", "4294967296", "x.mgt"],
        &["parse", "--threads", "100000", "x.mgt"],
        &["parse", "--threads", "0", "x.mgt"],
        &["parse", "--window", "0", "x.mgt"],
        &["funcs", "--pointer-depth", "100000"],
    ] {
        let out = magnet().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(
            err.starts_with("magnet: error: ") && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    // Input the command could not use: 2 and exactly one line.
    for args in [
        &["info", junk][..],
        &["parse", junk],
        &["analyze", junk],
        &["report", "-o", "/nonexistent/r.html", junk],
        &["packets", junk],
        &["pcap", junk, "-o", "/nonexistent/x.pcap"],
        &["rpc", "-r", "/nonexistent.pcap"],
        &["nfs", "-r", "/nonexistent.pcap"],
        &["sample", "show", "/nonexistent.json"],
        &["sample", "ls", "--store", "/nonexistent/h7store"],
        &[
            "sample",
            "show",
            "--store",
            "/nonexistent/h7store",
            "latest",
        ],
        &["sample", "-i", "lo", "--at", "@99999999999"],
        &["daemon", "--config", "/nonexistent.toml"],
        &["daemon", "--config", bad_conf],
        &[
            "dump",
            "-o",
            "/nonexistent/out",
            "--socket",
            "/nonexistent.sock",
        ],
    ] {
        let out = magnet().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("magnet: error: ") && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    // Reading a store that is not there does not make one.
    assert!(!std::path::Path::new("/nonexistent").exists());
}

/// Files read whole stop at a cap: `/dev/zero` is one line naming the file and
/// the cap, exit 2, not all memory.
#[test]
fn endless_inputs_stop_at_their_cap() {
    for (args, cap) in [
        (&["sample", "show", "/dev/zero"][..], "1 GiB (a run"),
        (
            &["funcs", "--btf", "/dev/zero", "--list"],
            "1 GiB (a BTF file",
        ),
        (
            &["funcs", "--available", "/dev/zero", "--list"],
            "256 MiB (a function listing",
        ),
        (&["daemon", "--config", "/dev/zero"], "1 MiB (a config file"),
    ] {
        let out = magnet().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("magnet: error: /dev/zero: larger than ") && err.contains(cap),
            "{args:?}: {err}"
        );
    }
}

/// Starts `cmd`, waits until its stderr says `ready` (or `after`), sends
/// `sig`, and returns its status.
fn interrupt(
    mut cmd: Command,
    ready: Option<&str>,
    after: Duration,
    sig: i32,
) -> std::process::ExitStatus {
    // The table is about default dispositions: a test run started in the
    // background of a non-interactive shell inherits SIGINT/SIGQUIT ignored.
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let want = ready.map(String::from);
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            if want.as_deref().is_some_and(|w| line.contains(w)) {
                let _ = tx.send(());
            }
        }
    });
    if ready.is_some() {
        rx.recv_timeout(Duration::from_secs(30))
            .expect("the command did not get ready");
    }
    std::thread::sleep(after);
    // SAFETY: signalling our own child by pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if Instant::now() >= deadline {
            // Leave nothing running for the tests after this one.
            let _ = child.kill();
            let _ = child.wait();
            panic!("did not stop on signal {sig}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn interrupts_exit_as_the_table_says() {
    if !live_or_skip("interrupts_exit_as_the_table_says", &[Need::Btf]) {
        return;
    }
    let ns = Netns::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let in_ns = |args: &[&str]| {
        let mut c = ns.command(env!("CARGO_BIN_EXE_magnet"));
        c.args(args);
        c
    };
    let out = |name: &str| dir.path().join(name).display().to_string();

    // sample: a run of N buckets cut short → 128+N (the partial run is written).
    let sample = [
        "sample",
        "-i",
        "lo",
        "--interval",
        "1ms",
        "--samples",
        "60000",
    ];
    let mut a = sample.to_vec();
    let o1 = out("s1.json");
    a.extend(["-o", &o1]);
    let st = interrupt(in_ns(&a), Some("sampling lo"), Duration::ZERO, libc::SIGINT);
    assert_eq!(st.code(), Some(130), "{st:?}");
    assert!(
        std::path::Path::new(&o1).exists(),
        "the partial run is written"
    );
    let st = interrupt(
        in_ns(&sample),
        Some("sampling lo"),
        Duration::ZERO,
        libc::SIGTERM,
    );
    assert_eq!(st.code(), Some(143), "{st:?}");

    // record -- CMD: the command's status; cut short by a signal → 128+N.
    let r1 = out("r1.mgt");
    let st = magnet()
        .args(["record", "-q", "-o", &r1, "--", "sh", "-c", "exit 3"])
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(3));
    let st = magnet()
        .args(["record", "-q", "-o", &r1, "--", "sh", "-c", "kill -TERM $$"])
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(143), "a command killed by SIGTERM");
    let pidfile = out("sleep.pid");
    let script = format!("echo $$ > {pidfile}; exec sleep 30");
    let st = interrupt(
        {
            let mut c = magnet();
            c.args(["record", "-q", "-o", &r1, "--", "sh", "-c", &script]);
            c
        },
        None,
        Duration::from_secs(3),
        libc::SIGINT,
    );
    assert_eq!(st.code(), Some(130), "{st:?}");
    // The command keeps running on its own (documented); end it.
    if let Ok(pid) = std::fs::read_to_string(&pidfile) {
        let pid: i32 = pid.trim().parse().unwrap();
        // SAFETY: the sleep this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }

    // record --all without -d runs until stopped → 0.
    let r2 = out("r2.mgt");
    let st = interrupt(
        {
            let mut c = in_ns(&["record", "-q", "--all", "--layers", "app", "-o", &r2]);
            c.arg("--port").arg("1");
            c
        },
        None,
        Duration::from_secs(3),
        libc::SIGTERM,
    );
    assert_eq!(st.code(), Some(0), "{st:?}");

    // loadgen has no handler: it dies by the signal (a shell says 130).
    let st = interrupt(
        {
            let mut c = in_ns(&["loadgen", "--tcp", "100000x1k", "--interval", "10ms"]);
            c.stdout(Stdio::null());
            c
        },
        None,
        Duration::from_millis(500),
        libc::SIGINT,
    );
    assert_eq!(st.signal(), Some(libc::SIGINT), "{st:?}");
}

/// SIGHUP and SIGQUIT end `record` as SIGTERM does (exit
/// 0, an END block), and a recorder killed as soon as it is ready leaves a
/// trace that reads as cut short: the header is on disk at once.
#[test]
fn hangup_quit_and_kill_leave_a_readable_trace() {
    if !live_or_skip("hangup_quit_and_kill_leave_a_readable_trace", &[Need::Btf]) {
        return;
    }
    let ns = Netns::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let record = |out: &str| {
        let mut c = ns.command(env!("CARGO_BIN_EXE_magnet"));
        c.args([
            "record", "--all", "--layers", "app", "--port", "1", "-o", out,
        ]);
        c
    };
    for (sig, name) in [(libc::SIGHUP, "hup"), (libc::SIGQUIT, "quit")] {
        let out = dir.path().join(format!("{name}.mgt"));
        let out = out.to_str().unwrap();
        let st = interrupt(
            record(out),
            Some("recording"),
            Duration::from_millis(300),
            sig,
        );
        assert_eq!(st.code(), Some(0), "{name}: {st:?}");
        let info = magnet().args(["info", out, "--json"]).output().unwrap();
        assert_eq!(info.status.code(), Some(0), "{name}: {info:?}");
        let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        assert_eq!(v["complete"], true, "{name}: the END block is written");
    }
    let out = dir.path().join("killed.mgt");
    let out = out.to_str().unwrap();
    let st = interrupt(
        record(out),
        Some("recording"),
        Duration::ZERO,
        libc::SIGKILL,
    );
    assert_eq!(st.signal(), Some(libc::SIGKILL));
    let info = magnet().args(["info", out]).output().unwrap();
    let text = String::from_utf8_lossy(&info.stdout);
    // A trace cut short: exit 1 (incomplete), never "not a magnet trace".
    assert_eq!(info.status.code(), Some(1), "{info:?}");
    assert!(
        text.contains("NOT CLEANLY") && text.contains("cut short"),
        "{text}"
    );
}
