//! The app layer is what the application asked and got:
//! one app call per system call or io_uring request, with the bytes it asked
//! for and its result, whatever the kernel does inside (sendfile() and
//! splice() send once per pipe's worth, sendmmsg() once per message, an
//! io_uring send is tried again inside the kernel after EAGAIN, a zero-copy
//! send posts a notification after its result).
//!
//! Oracles: strace (`-ff -yy -s 64`: each call on a socket, its size asked and its
//! return) and the programs' own counts: tests/fixtures/app_calls.c prints
//! its calls, bytes asked, bytes done and failures; nginx and iperf3 are
//! programs nobody here wrote, traced by strace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use magnet_testkit::{live_or_skip, wait_listening, Need, Netns, Recorder, Server};
use serde_json::Value;

mod common;
use common::strace::{
    magnet_calls, same_as_strace, strace, strace_attach, strace_calls, strace_prefix, sum_of, term,
    Calls,
};
use common::{tmp, Magnetd, MAGNET};

/// `magnet record --layers app ARGS` started, returned once it records.
fn record(trace: &Path, args: &[&str]) -> Recorder {
    let mut all = vec!["--layers", "app"];
    all.extend_from_slice(args);
    Recorder::record(MAGNET, None, trace, &all)
}

/// tests/fixtures/app_calls.c, built once per test binary.
fn app_calls_bin() -> PathBuf {
    common::build_fixture_with("app_calls", &["-luring"])
}

/// The program's own counts: `send calls=N asked=B ret=B failed=N`.
fn own_counts(stdout: &str) -> BTreeMap<&'static str, Calls> {
    let mut m = BTreeMap::new();
    for l in stdout.lines() {
        let dir = match l.split(' ').next() {
            Some("send") => "send",
            Some("recv") => "recv",
            _ => continue,
        };
        let f = |k: &str| sum_of(l, &format!(" {k}="));
        m.insert(
            dir,
            Calls {
                calls: f("calls") as u64,
                asked: f("asked"),
                ret: f("ret") as u64,
                failed: f("failed") as u64,
            },
        );
    }
    m
}

fn live(name: &str, tools: &[&'static str]) -> bool {
    let mut needs = vec![
        Need::Btf,
        Need::Tool("strace"),
        Need::Tool("cc"),
        Need::File("/usr/include/liburing.h"),
    ];
    needs.extend(tools.iter().map(|t| Need::Tool(t)));
    live_or_skip(name, &needs)
}

/// Runs app_calls MODE N under strace inside `magnet record -- ...` and
/// compares the trace's calls with strace's and the program's own.
fn fixture_case(mode: &str, n: u32, strace_sees_sends: bool) {
    fixture_case_in(mode, n, strace_sees_sends, "", false)
}

/// The app layer's first hook in `trace` (`magnet info --json`).
fn app_calls_hook(trace: &Path) -> String {
    let out = Command::new(MAGNET)
        .args(["info", "--json"])
        .arg(trace)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let app = v["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["layer"] == "app")
        .cloned()
        .unwrap_or_else(|| panic!("no app layer source in {v}"));
    app["hooks"][0].as_str().unwrap_or_default().to_string()
}

/// [`fixture_case`] with the recorder's hooks `deny` refused
/// (MAGNET_HOOKS_DENY; "" refuses none), recording the command (a task
/// filter) or, with `all`, the whole host while it runs: the calls must not
/// change.
fn fixture_case_in(mode: &str, n: u32, strace_sees_sends: bool, deny: &str, all: bool) {
    let name = format!("{mode}{deny}{}", if all { "-all" } else { "" }).replace('/', "_");
    let trace = tmp(&format!("{name}.mgt"));
    let prefix = strace_prefix(&name);
    let st = strace(None, &prefix);
    let out = if all {
        let mut cmd = Command::new(MAGNET);
        cmd.env("MAGNET_HOOKS_DENY", deny)
            .args(["record", "--all", "--layers", "app", "-o"])
            .arg(&trace)
            .stdout(Stdio::null());
        let rec = Recorder::start(cmd);
        let out = Command::new(st.get_program())
            .args(st.get_args())
            .arg(app_calls_bin())
            .args([mode, &n.to_string()])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        rec.stop();
        out
    } else {
        Command::new(MAGNET)
            .env("MAGNET_HOOKS_DENY", deny)
            .args(["record", "-q", "-o"])
            .arg(&trace)
            .args(["--layers", "app", "--"])
            .arg(st.get_program())
            .args(st.get_args())
            .arg(app_calls_bin())
            .args([mode, &n.to_string()])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{mode}: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let own = own_counts(&stdout);
    let traced = strace_calls(&prefix);
    let mut got = magnet_calls(&trace);
    if all {
        // The whole host: the fixture's processes are those strace saw.
        got.retain(|(pid, _), _| traced.keys().any(|(p, _)| p == pid));
    }
    // Without task filters, where the kernel has bpf_task_pt_regs, only
    // the calls that reach their socket many times have programs at their
    // start and exit; else the socket calls' own tracepoints where tracefs
    // lists them; else (or denied) every system call's start and end.
    let hook = app_calls_hook(&trace);
    let tracefs = magnet_kernel::tracefs::event_missing("syscalls/sys_enter_sendto").is_none();
    let regs = magnet_kernel::KernelBtf::load()
        .unwrap()
        .has_enum_value("bpf_func_id", "BPF_FUNC_task_pt_regs");
    if !tracefs || deny.starts_with("tracepoint") {
        assert_eq!(hook, "tp_btf/sys_enter+tp_btf/sys_exit", "{mode} {deny}");
    } else if all && regs && deny.is_empty() {
        assert!(
            hook.starts_with(
                "tracepoint/syscalls/sys_enter_{sendfile64,splice,sendmmsg,recvmmsg}+"
            ),
            "{mode}: {hook}"
        );
    } else {
        assert!(
            hook.starts_with("tracepoint/syscalls/sys_enter_{read,write,"),
            "{mode} {deny}: {hook}"
        );
    }
    for dir in ["send", "recv"] {
        let want = own[dir];
        assert!(want.calls > 0, "{mode}: {stdout}");
        // One process sends and another receives: which is which, from strace.
        let of = |m: &BTreeMap<(u32, &'static str), Calls>| -> Vec<(u32, Calls)> {
            m.iter()
                .filter(|((_, d), _)| *d == dir)
                .map(|((p, _), c)| (*p, *c))
                .collect()
        };
        let mine = of(&got);
        assert_eq!(mine.len(), 1, "{mode} {dir}: calls of one process: {got:?}");
        let (pid, mine) = mine[0];
        assert_eq!(
            mine, want,
            "{mode} {dir}: the trace's calls vs the program's own"
        );
        if dir == "recv" || strace_sees_sends {
            let theirs = traced.get(&(pid, dir)).copied().unwrap_or_default();
            assert_eq!(
                mine.calls, theirs.calls,
                "{mode} {dir}: calls vs strace {traced:?}"
            );
            assert_eq!(mine.ret, theirs.ret, "{mode} {dir}: bytes vs strace");
            assert_eq!(mine.failed, theirs.failed, "{mode} {dir}: failed vs strace");
            if theirs.asked >= 0 {
                assert_eq!(mine.asked, theirs.asked, "{mode} {dir}: asked vs strace");
            }
        } else {
            // io_uring: no socket syscall of the sender's for strace to see.
            assert_eq!(traced.get(&(pid, dir)), None, "{mode} {dir}: {traced:?}");
        }
        eprintln!("{mode} {dir}: {mine:?}");
    }
    let _ = std::fs::remove_dir_all(prefix.parent().unwrap());
    let _ = std::fs::remove_file(&trace);
}

/// One test per mode of the fixture: `fixture_case(MODE, N, strace sees the sends)`.
macro_rules! fixture_tests {
    ($($(#[$doc:meta])* $name:ident: $mode:literal, $n:literal, $sees:literal;)*) => {$(
        $(#[$doc])*
        #[test]
        fn $name() {
            if live(stringify!($name), &[]) {
                fixture_case($mode, $n, $sees);
            }
        }
    )*};
}

fixture_tests! {
    /// writev(): one call of 3 iovecs is one app call asking their sum.
    app_calls_writev_is_one_call_asking_the_iovecs_sum: "writev", 200, true;
    /// sendmsg() of 2 iovecs with MSG_NOSIGNAL, read by recvmsg() into 2:
    /// each asks its iovecs' sum.
    app_calls_sendmsg_and_recvmsg_ask_their_iovecs_sum: "msg", 200, true;
    /// sendfile() of 1 MiB: the kernel sends once per pipe's worth inside.
    app_calls_sendfile_is_one_call_per_syscall: "sendfile", 16, true;
    /// splice() from a TCP socket into a pipe (a proxy's zero-copy read): each is
    /// an app call, though it never passes sock_recvmsg.
    app_calls_splice_from_a_socket_is_one_call_per_syscall: "splice", 200, true;
    /// sendmmsg()/recvmmsg() of 8 messages: one call each, bytes summed.
    app_calls_mmsg_is_one_call_per_syscall: "mmsg", 200, true;
    /// io_uring SEND on a full non-blocking socket: one call per request, none
    /// for the kernel's EAGAIN attempts inside.
    app_calls_io_uring_send_is_one_call_per_request: "uring", 300, false;
    /// io_uring SEND_ZC: one call per request, not per CQE (its notification).
    app_calls_io_uring_send_zc_is_one_call_per_request: "uring_zc", 300, false;
    /// io_uring SEND_ZC as liburing's send-zerocopy example sends (registered
    /// file and buffer, 8 per submit), on a ring whose completion queue
    /// overflows: a result that goes to the overflow list is a call too.
    app_calls_io_uring_send_zc_overflowing_ring_is_one_call_per_request: "uring_zc_batch", 2000, false;
    /// io_uring SEND with IOSQE_ASYNC: sent by an io-wq worker thread, still one
    /// call per request, none from the worker's attempts.
    app_calls_io_uring_async_send_is_one_call_per_request: "uring_async", 300, false;
}

/// Where the kernel has no syscall tracepoints (MAGNET_HOOKS_DENY=tracepoint
/// acts as such a kernel), the recorder's app calls come from every system
/// call's start and end, and are the same: the modes whose calls differ most
/// in their arguments (iovecs, sendfile's count, splice's fd and length, the
/// mmsg arrays).
#[test]
fn app_calls_at_every_syscall_without_syscall_tracepoints() {
    if !live(
        "app_calls_at_every_syscall_without_syscall_tracepoints",
        &[],
    ) {
        return;
    }
    for mode in ["writev", "sendfile", "splice", "mmsg"] {
        fixture_case_in(mode, 50, true, "tracepoint", false);
    }
}

/// `--all` (no task filter): a call that reaches its socket once is
/// recorded whole at its socket's send or recv, from its registers, with
/// programs at the start and exit of only sendfile, splice and the mmsg
/// pair; and, that denied (as a kernel without bpf_task_pt_regs), at every
/// socket call's own tracepoints. The same calls as strace's and the
/// program's own either way: every call whose arguments differ (iovecs in
/// writev and in sendmsg's and recvmsg's msghdr, their flags, read's and
/// write's length, sendfile's count, splice's fd and length, the mmsg
/// arrays).
#[test]
fn app_calls_with_all_are_whole_at_their_socket() {
    if !live("app_calls_with_all_are_whole_at_their_socket", &[]) {
        return;
    }
    for deny in ["", magnet_record::probes::TASK_PT_REGS] {
        for mode in ["writev", "msg", "sendfile", "splice", "mmsg"] {
            fixture_case_in(mode, 50, true, deny, true);
        }
    }
}

/// Under `ip netns exec` (a mount namespace of its own, with a fresh /sys
/// and no tracefs) the recorder mounts tracefs there and says so, and the
/// app calls are at the syscall tracepoints, not at every system call of
/// the host.
#[test]
fn app_calls_under_ip_netns_exec_are_at_the_syscall_tracepoints() {
    if !live(
        "app_calls_under_ip_netns_exec_are_at_the_syscall_tracepoints",
        &["ip"],
    ) {
        return;
    }
    if magnet_kernel::tracefs::event_missing("syscalls/sys_enter_sendto").is_some() {
        eprintln!("no syscall tracepoints on this kernel: nothing to mount tracefs for");
        return;
    }
    let ns = Netns::new().unwrap();
    let mounted = |ns: &str| {
        Command::new("ip")
            .args([
                "netns",
                "exec",
                ns,
                "test",
                "-d",
                "/sys/kernel/tracing/events",
            ])
            .status()
            .unwrap()
            .success()
    };
    let before = mounted(ns.name());
    let trace = tmp("netns-exec.mgt");
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            ns.name(),
            MAGNET,
            "record",
            "--layers",
            "app",
            "-o",
        ])
        .arg(&trace)
        .args(["--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.contains("tracefs was not mounted in this mount namespace"),
        !before,
        "{err}"
    );
    let hook = app_calls_hook(&trace);
    assert!(hook.starts_with("tracepoint/syscalls/"), "{hook}: {err}");
    let _ = std::fs::remove_file(&trace);
}

/// iperf3 -Z (sendfile) as its client: the trace's calls are strace's.
#[test]
fn app_calls_iperf3_zerocopy_client_matches_strace() {
    if !live(
        "app_calls_iperf3_zerocopy_client_matches_strace",
        &["iperf3"],
    ) {
        return;
    }
    let ns = Netns::new().unwrap();
    let port = "7721";
    let dir = tmp("iperf3");
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = ns.command("iperf3");
    cmd.args(["-s", "-p", port]).stdout(Stdio::null());
    let server = Server::spawn(cmd, &dir);
    wait_listening(&ns, 7721);
    let trace = tmp("iperf3.mgt");
    let prefix = strace_prefix("iperf3");
    let rec = record(&trace, &["--comm", "iperf3"]);
    let out = strace(Some(&ns), &prefix)
        .args(["iperf3", "-c", "127.0.0.1", "-p", port, "-Z", "-n", "64M"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "iperf3 -c: {out:?}");
    drop(server);
    rec.stop();
    // The client: the process strace followed that sent most.
    let traced = strace_calls(&prefix);
    let (&(pid, _), sends) = traced
        .iter()
        .filter(|((_, d), _)| *d == "send")
        .max_by_key(|(_, c)| c.ret)
        .expect("strace saw the client's sends");
    assert!(sends.ret >= 64 << 20, "{traced:?}");
    same_as_strace("iperf3 -Z client", pid, &prefix, &trace);
}

/// nginx with sendfile on, already running, recorded with `--comm nginx`: its
/// worker's calls are strace's, call for call (sendfile, writev, recv), their
/// failures (EAGAIN) included.
#[test]
fn app_calls_nginx_sendfile_worker_matches_strace() {
    if !live(
        "app_calls_nginx_sendfile_worker_matches_strace",
        &["nginx", "curl"],
    ) {
        return;
    }
    let ns = Netns::new().unwrap();
    let port = 7722u16;
    let dir = tmp("nginx");
    std::fs::create_dir_all(&dir).unwrap();
    for i in 0..3 {
        let body: Vec<u8> = (0..(4 << 20) + i * 1000)
            .map(|j| (j * 7 + i) as u8)
            .collect();
        std::fs::write(dir.join(format!("f{i}.bin")), body).unwrap();
    }
    let mut cmd = magnet_testkit::nginx(&ns, &dir, &format!("127.0.0.1:{port} sndbuf=64k"));
    cmd.stdout(Stdio::null());
    let nginx = Server::spawn(cmd, &dir);
    wait_listening(&ns, port);
    std::thread::sleep(Duration::from_millis(200));
    let master = nginx.id();
    let worker: u32 = std::fs::read_to_string(format!("/proc/{master}/task/{master}/children"))
        .unwrap()
        .split_whitespace()
        .next()
        .expect("nginx's worker")
        .parse()
        .unwrap();
    let trace = tmp("nginx.mgt");
    let prefix = strace_prefix("nginx");
    let rec = record(&trace, &["--comm", "nginx"]);
    let mut strace = strace_attach(&prefix, worker);
    // A slow reader (curl --limit-rate) fills the socket: nginx's sendfile()
    // returns short and then EAGAIN, and it waits for the socket in epoll.
    let urls: Vec<String> = (0..3)
        .map(|i| format!("http://127.0.0.1:{port}/f{i}.bin"))
        .collect();
    let out = ns
        .command("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-o",
            "/dev/null",
            "-o",
            "/dev/null",
        ])
        .args(["--limit-rate", "20M"])
        .args(&urls)
        .output()
        .unwrap();
    assert!(out.status.success(), "curl: {out:?}");
    std::thread::sleep(Duration::from_millis(300));
    term(&strace);
    let _ = strace.wait();
    rec.stop();
    drop(nginx);
    let traced = strace_calls(&prefix);
    let sends = traced.get(&(worker, "send")).copied().unwrap_or_default();
    let body: u64 = 3 * (4 << 20) + 3000;
    assert!(sends.ret > body, "strace: {traced:?}");
    assert!(
        sends.failed > 0,
        "no EAGAIN: the case lost its point: {traced:?}"
    );
    same_as_strace("nginx worker", worker, &prefix, &trace);
}

/// A kernel without io_uring's request tracepoints (5.10; made so here with
/// MAGNET_HOOKS_DENY): the recording says in one line that io_uring's calls
/// are left out, and has none of them, neither whole nor as the kernel's
/// attempts inside; the receiver's syscalls are still its calls, exactly.
#[test]
fn app_calls_io_uring_left_out_in_one_line_without_its_tracepoints() {
    if !live(
        "app_calls_io_uring_left_out_in_one_line_without_its_tracepoints",
        &[],
    ) {
        return;
    }
    let trace = tmp("uring-denied.mgt");
    let out = Command::new(MAGNET)
        .env("MAGNET_HOOKS_DENY", "tp_btf/io_uring_submit_req")
        .arg("record")
        .arg("-o")
        .arg(&trace)
        .args(["--layers", "app", "--"])
        .arg(app_calls_bin())
        .args(["uring", "50"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let notes: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("app_uring_submit left out"))
        .collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(notes[0].contains("io_uring_submit_req"), "{stderr}");
    let own = own_counts(&stdout);
    let got = magnet_calls(&trace);
    let sends: Vec<_> = got.iter().filter(|((_, d), _)| *d == "send").collect();
    assert!(sends.is_empty(), "{got:?}");
    let recvs: Vec<Calls> = got
        .iter()
        .filter(|((_, d), _)| *d == "recv")
        .map(|(_, c)| *c)
        .collect();
    assert_eq!(recvs, vec![own["recv"]], "{stdout}");
    let _ = std::fs::remove_file(&trace);
}

/// A recv blocked when the recording starts (a server attached to while it
/// waits) is still its call when it returns: its size asked unknown (-1),
/// its result exact; the calls after it are whole.
#[test]
fn app_calls_a_recv_blocked_before_the_recording_is_kept() {
    use std::io::{Read, Write};
    if !live("app_calls_a_recv_blocked_before_the_recording_is_kept", &[]) {
        return;
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut tx = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut rx, _) = l.accept().unwrap();
    let (tx_port, rx_port) = (
        tx.local_addr().unwrap().port(),
        rx.local_addr().unwrap().port(),
    );
    let reader = std::thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        let a = rx.read(&mut buf).unwrap();
        let b = rx.read(&mut buf).unwrap();
        (a, b)
    });
    std::thread::sleep(Duration::from_millis(200));
    let trace = tmp("blocked.mgt");
    let rec = record(&trace, &["-p", &std::process::id().to_string()]);
    tx.write_all(&[1u8; 1000]).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    tx.write_all(&[2u8; 2000]).unwrap();
    assert_eq!(reader.join().unwrap(), (1000, 2000));
    rec.stop();
    let out = Command::new(MAGNET)
        .args(["parse", "--json", "--kind", "sock,app_recv,app_send"])
        .arg(&trace)
        .output()
        .unwrap();
    let evs: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    // `-p` follows this process's children too (other tests' programs):
    // only this pair's sockets.
    let ports = [tx_port, rx_port];
    let mine: Vec<&Value> = evs
        .iter()
        .filter(|v| v["kind"] == "sock")
        .filter(|v| ports.iter().any(|&p| v["sport"] == p) && v["dport"] != 0)
        .map(|v| &v["cookie"])
        .collect();
    assert_eq!(mine.len(), 2, "this pair's sockets: {mine:?}");
    let mut got: Vec<(String, i64, i64)> = evs
        .iter()
        .filter(|v| v["kind"] != "sock" && mine.contains(&&v["cookie"]))
        .map(|v| {
            (
                v["kind"].as_str().unwrap().to_string(),
                v["asked"].as_i64().unwrap(),
                v["ret"].as_i64().unwrap(),
            )
        })
        .collect();
    got.sort();
    // The first recv began before the recording: its length from its
    // registers (no program saw its start).
    let want = [
        ("app_recv", 65536, 1000),
        ("app_recv", 65536, 2000),
        ("app_send", 1000, 1000),
        ("app_send", 2000, 2000),
    ]
    .map(|(k, a, r)| (k.to_string(), a, r));
    assert_eq!(got, want);
    let _ = std::fs::remove_file(&trace);
}

/// Runs app_calls MODE N under strace while magnetd runs and compares
/// magnetd's per-connection call counts (a failed call is a call) of the
/// sending and the receiving process with the program's own and strace's.
fn daemon_case(d: &Magnetd, mode: &str, n: u32, strace_sees_sends: bool) {
    let prefix = strace_prefix(&format!("daemon-{}-{mode}", d.http));
    let out = strace(None, &prefix)
        .arg(app_calls_bin())
        .args([mode, &n.to_string()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{mode}: {stdout}");
    let own = own_counts(&stdout);
    let traced = strace_calls(&prefix);
    // The pids: strace's files (sender and receiver each have one).
    let conns = d.client().connections().unwrap();
    let pids: Vec<u32> = traced.keys().map(|(p, _)| *p).collect();
    let of = |pid: u32, dir: &str| -> u64 {
        conns
            .iter()
            .filter(|c| c.pid == pid && c.protocol != "unix")
            .map(|c| {
                if dir == "send" {
                    c.app.tx_calls
                } else {
                    c.app.rx_calls
                }
            })
            .sum()
    };
    for dir in ["send", "recv"] {
        let want = own[dir];
        assert!(want.calls > 0, "{mode}: {stdout}");
        // the process that made this direction's calls: strace's, or (an
        // io_uring sender, which strace sees no socket call of) the other
        let pid = traced
            .keys()
            .find(|(_, d)| *d == dir)
            .map(|(p, _)| *p)
            .or_else(|| {
                let other = traced.keys().find(|(_, d)| *d != dir)?.0;
                std::fs::read_dir(prefix.parent().unwrap())
                    .unwrap()
                    .filter_map(|e| {
                        let n = e.ok()?.file_name().to_string_lossy().into_owned();
                        n.strip_prefix("s.")?.parse::<u32>().ok()
                    })
                    .find(|p| *p != other)
            })
            .unwrap_or_else(|| panic!("{mode} {dir}: no pid in {traced:?} ({pids:?})"));
        let got = of(pid, dir);
        assert_eq!(
            got,
            want.calls,
            "{mode} {dir}: magnetd's calls vs the program's own {want:?}; {:?}",
            conns.iter().filter(|c| c.pid == pid).collect::<Vec<_>>()
        );
        if dir == "recv" || strace_sees_sends {
            let theirs = traced.get(&(pid, dir)).copied().unwrap_or_default();
            assert_eq!(got, theirs.calls, "{mode} {dir}: magnetd's calls vs strace");
        }
        eprintln!("magnetd {mode} {dir}: {got} calls ({want:?})");
        layer_table_case(&conns, pid, dir, &want, mode);
    }
    let _ = std::fs::remove_dir_all(prefix.parent().unwrap());
}

/// The live layer table's app row of `pid`'s connections in `dir`: one unit
/// per call that moved bytes (a sendfile() of 1 MiB is one unit of 1 MiB,
/// summed at its sys_exit; an io_uring send one of its result), so its bytes
/// are the program's own and its units the calls less the failed ones and
/// at most one read at the end of the stream (0 bytes: no unit).
fn layer_table_case(
    conns: &[magnet_client::Connection],
    pid: u32,
    dir: &str,
    want: &Calls,
    mode: &str,
) {
    let row_dir = if dir == "send" { "out" } else { "in" };
    let rows: Vec<_> = conns
        .iter()
        .filter(|c| c.pid == pid && c.protocol != "unix")
        .flat_map(|c| c.layers.iter())
        .filter(|r| r.layer == "app" && r.dir == row_dir)
        .collect();
    let units: u64 = rows.iter().map(|r| r.units).sum();
    let bytes: u64 = rows.iter().map(|r| r.bytes).sum();
    let sizes: u64 = rows.iter().flat_map(|r| r.size_hist.iter()).sum();
    let moved = want.calls - want.failed;
    eprintln!("magnetd {mode} {dir}: layer table {units} units, {bytes} B");
    assert_eq!(bytes, want.ret, "{mode} {dir}: layer table bytes {rows:?}");
    assert!(
        units <= moved && units + 1 >= moved && sizes == units,
        "{mode} {dir}: {units} units ({sizes} sized) for {moved} calls that did not fail: {rows:?}"
    );
}

/// magnetd counts app calls as the recorder does: one per system call
/// (sendfile() of 1 MiB: 1, not 16; writev(): 1; sendmmsg() of 8: 1) and per
/// io_uring request
/// (a send retried after EAGAIN inside the kernel: 1, not failed ones too).
#[test]
fn magnetd_app_calls_are_one_per_syscall_or_request() {
    if !live("magnetd_app_calls_are_one_per_syscall_or_request", &[]) {
        return;
    }
    let d = Magnetd::start();
    daemon_case(&d, "sendfile", 16, true);
    daemon_case(&d, "writev", 200, true);
    daemon_case(&d, "mmsg", 200, true);
    daemon_case(&d, "uring", 300, false);
    daemon_case(&d, "uring_zc", 300, false);
    daemon_case(&d, "uring_async", 300, false);
    let h = d.client().host().unwrap();
    // the syscall exit tracepoints where tracefs lists them, else every
    // system call's exit
    let tracepoints = magnet_daemon::summaries::SYSCALL_EXITS.iter().all(|a| {
        let magnet_kernel::plan::Attach::Tracepoint(tp) = *a else {
            return false;
        };
        magnet_kernel::tracefs::event_missing(tp).is_none()
            && magnet_kernel::deny::denied(&magnet_kernel::plan::attach_name(*a)).is_none()
    });
    let want = if tracepoints {
        magnet_daemon::summaries::APP_CALLS_AT_EXIT
    } else {
        magnet_daemon::summaries::APP_CALLS_AT_SYS_EXIT
    };
    assert_eq!(
        h.health.parts.get("app").map(String::as_str),
        Some(want),
        "{:?}",
        h.health
    );
}

/// Where the kernel has no syscall exit tracepoints (denied here, as a
/// kernel without CONFIG_FTRACE_SYSCALLS or without tracefs mounted would
/// be), magnetd counts the same calls at every system call's exit and says
/// so in /health: the counts stay one per system call.
#[test]
fn magnetd_app_calls_at_every_sys_exit_without_syscall_tracepoints() {
    if !live(
        "magnetd_app_calls_at_every_sys_exit_without_syscall_tracepoints",
        &[],
    ) {
        return;
    }
    let d = Magnetd::start_denying("", "tracepoint/syscalls/sys_exit_sendmmsg");
    let h = d.client().host().unwrap();
    assert_eq!(
        h.health.parts.get("app").map(String::as_str),
        Some(magnet_daemon::summaries::APP_CALLS_AT_SYS_EXIT),
        "{:?}",
        h.health
    );
    assert!(
        h.health.fallbacks.iter().any(|f| f.starts_with(&format!(
            "app through {}: {}: tracepoint/syscalls/sys_exit_sendmmsg denied by",
            magnet_daemon::summaries::APP_CALLS_AT_SYS_EXIT,
            magnet_daemon::summaries::APP_CALLS_AT_EXIT
        ))),
        "{:?}",
        h.health
    );
    daemon_case(&d, "sendfile", 16, true);
    daemon_case(&d, "mmsg", 200, true);
}
