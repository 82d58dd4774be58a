//! Live tests of `magnet record` (root, real BPF, real traffic between network
//! namespaces). Every assertion is against a truth the test controls: the number
//! and size of send() calls made by `magnet loadgen`, a tcpdump capture on the
//! peer, the veth's ifindex, the kernel's own event counters.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use magnet_testkit::{live_or_skip, tshark_fields, Capture, Need, Netns, Recorder, Side, Veth};
use magnet_trace::{kind, Event, KindIndex, TraceReader};

mod common;
use common::{magnet, tmp, MAGNET};

/// A decoded event: kind name, header values and named fields.
#[derive(Debug, Clone)]
struct Ev {
    kind: String,
    kind_id: u16,
    ts: u64,
    pid: u32,
    fields: BTreeMap<String, magnet_trace::Value>,
}

impl Ev {
    fn u(&self, f: &str) -> u64 {
        self.fields
            .get(f)
            .and_then(|v| v.as_u64())
            .unwrap_or_else(|| panic!("{}: no field {f}", self.kind))
    }
    fn i(&self, f: &str) -> i64 {
        self.fields
            .get(f)
            .and_then(|v| v.as_i64())
            .unwrap_or_else(|| panic!("{}: no field {f}", self.kind))
    }
    fn addr(&self, f: &str) -> IpAddr {
        match self.fields.get(f) {
            Some(magnet_trace::Value::Addr(a)) => *a,
            other => panic!("{}: {f} is {other:?}", self.kind),
        }
    }
}

fn read_trace(path: &Path) -> (Vec<Ev>, magnet_trace::Footer) {
    let mut r = TraceReader::new(std::fs::File::open(path).unwrap()).unwrap();
    let header = r.header().clone();
    let index = KindIndex::new(&header.catalog);
    let mut out = Vec::new();
    while let Some(rec) = r.next_record() {
        let rec = rec.expect("an intact trace");
        let desc = index.get(rec.kind()).expect("known kind");
        let ev = Event {
            bytes: &rec.bytes,
            desc,
        };
        out.push(Ev {
            kind: desc.name.clone(),
            kind_id: rec.kind(),
            ts: rec.ts_ns(),
            pid: rec.pid(),
            fields: ev.fields().map(|(n, v)| (n.to_string(), v)).collect(),
        });
    }
    out.sort_by_key(|e| e.ts);
    (
        out,
        r.footer().cloned().expect("the trace has an END block"),
    )
}

/// Starts `magnet record ARGS --json` in the background and returns once it says
/// its programs are attached, so traffic made next is recorded (no sleeping).
fn start_recording(args: &[&str]) -> Recorder {
    let mut cmd = Command::new(MAGNET);
    cmd.arg("record")
        .args(args)
        .arg("--json")
        .stdout(Stdio::piped());
    Recorder::start(cmd)
}

/// Waits for a recording started by `start_recording` and returns its summary.
fn finish_recording(rec: Recorder) -> serde_json::Value {
    let out = rec.wait().success();
    serde_json::from_str(
        out.stdout
            .lines()
            .rfind(|l| l.starts_with('{'))
            .expect("summary"),
    )
    .unwrap()
}

/// `start_recording` of the whole host, narrowed to one port, for 1.5 s.
fn start_port_recording(path: &Path, layers: &str, port: u16) -> Recorder {
    let port = port.to_string();
    start_recording(&[
        "-o",
        path.to_str().unwrap(),
        "--all",
        "--layers",
        layers,
        "--port",
        &port,
        "--duration",
        "1500ms",
    ])
}

fn json_stdout(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "magnet failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8_lossy(&out.stdout);
    // `record --json` prints the workload's line first (loadgen), then the summary.
    let lines: Vec<&str> = s.lines().filter(|l| l.starts_with('{')).collect();
    serde_json::from_str(lines.last().expect("a JSON line")).unwrap()
}

fn loadgen_line(out: &Output) -> serde_json::Value {
    let s = String::from_utf8_lossy(&out.stdout);
    let line = s
        .lines()
        .find(|l| l.contains("\"tcp\"") || l.contains("\"udp\""))
        .expect("loadgen JSON line");
    serde_json::from_str(line).unwrap()
}

const TCP_N: u64 = 50;
const TCP_S: u64 = 1000;
const UDP_M: u64 = 30;
const UDP_U: u64 = 200;

#[test]
fn known_workload_across_namespaces() {
    if !live_or_skip(
        "known_workload_across_namespaces",
        &[Need::Btf, Need::Tool("tcpdump"), Need::Tool("tshark")],
    ) {
        return;
    }
    let ns = Netns::new().unwrap();
    let link = Veth::pair(Side::Root, Side::Ns(&ns)).unwrap();
    let (a, b) = (link.a(), link.b());
    let cap = Capture::start(b.netns(), b.name(), &["ip"]).unwrap();
    let trace = tmp("known.mgt");
    let out = magnet(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--layers",
        "app,tcp,ip,dev",
        "--tcp-state",
        "--json",
        "--",
        MAGNET,
        "loadgen",
        "--tcp",
        &format!("{TCP_N}x{TCP_S}"),
        "--udp",
        &format!("{UDP_M}x{UDP_U}"),
        "--netns",
        ns.name(),
        "--peer-addr",
        &b.addr().to_string(),
        "--port",
        "7311",
    ]);
    let summary = json_stdout(&out);
    let load = loadgen_line(&out);
    let pcap = cap.stop().unwrap();
    let (evs, footer) = read_trace(&trace);
    assert_eq!(summary["lost_kernel"], 0);
    assert_eq!(footer.lost_kernel, 0);

    // ---- app: exactly N sends of S bytes over TCP, M of U over UDP --------------
    let app_send: Vec<&Ev> = evs.iter().filter(|e| e.kind_id == kind::APP_SEND).collect();
    let tcp_sends: Vec<&&Ev> = app_send.iter().filter(|e| e.u("protocol") == 6).collect();
    let udp_sends: Vec<&&Ev> = app_send.iter().filter(|e| e.u("protocol") == 17).collect();
    assert_eq!(tcp_sends.len() as u64, TCP_N, "TCP send events");
    assert_eq!(udp_sends.len() as u64, UDP_M, "UDP send events");
    assert!(tcp_sends
        .iter()
        .all(|e| e.i("ret") == TCP_S as i64 && e.i("asked") == TCP_S as i64));
    assert!(udp_sends
        .iter()
        .all(|e| e.i("ret") == UDP_U as i64 && e.i("asked") == UDP_U as i64));
    // The receiving side (a thread of the same process in the peer namespace).
    let recv_sum = |proto: u64| -> i64 {
        evs.iter()
            .filter(|e| e.kind_id == kind::APP_RECV && e.u("protocol") == proto && e.i("ret") > 0)
            .map(|e| e.i("ret"))
            .sum()
    };
    assert_eq!(recv_sum(6), (TCP_N * TCP_S) as i64, "TCP bytes received");
    assert_eq!(recv_sum(17), (UDP_M * UDP_U) as i64, "UDP bytes received");

    // ---- tcp: the sender's connection carries its 5-tuple ------------------------
    let local: std::net::SocketAddr = load["tcp"]["local"].as_str().unwrap().parse().unwrap();
    let remote: std::net::SocketAddr = load["tcp"]["remote"].as_str().unwrap().parse().unwrap();
    let cookie = tcp_sends[0].u("cookie");
    assert!(
        tcp_sends.iter().all(|e| e.u("cookie") == cookie),
        "one connection, one cookie"
    );
    let states: Vec<&Ev> = evs
        .iter()
        .filter(|e| e.kind_id == kind::TCP_STATE && e.u("cookie") == cookie)
        .collect();
    let est = states
        .iter()
        .find(|e| e.fields["newstate"].to_string() == "ESTABLISHED")
        .expect("the sender's SYN_SENT -> ESTABLISHED");
    assert_eq!(est.u("sport"), local.port() as u64);
    assert_eq!(est.u("dport"), remote.port() as u64);
    assert_eq!(est.addr("saddr"), local.ip());
    assert_eq!(est.addr("daddr"), remote.ip());
    let sock = evs
        .iter()
        .find(|e| e.kind_id == kind::SOCK && e.u("cookie") == cookie)
        .expect("SOCK record");
    assert_eq!(sock.addr("daddr"), remote.ip());

    // ---- --tcp-state: write_seq advanced by exactly N*S --------------------------
    let fin = states
        .iter()
        .find(|e| e.fields["newstate"].to_string() == "FIN_WAIT1")
        .expect("the sender's ESTABLISHED -> FIN_WAIT1");
    let advanced = (fin.u("write_seq") as u32).wrapping_sub(est.u("write_seq") as u32);
    assert_eq!(
        advanced as u64,
        TCP_N * TCP_S,
        "write_seq(FIN_WAIT1) - write_seq(ESTABLISHED)"
    );
    // From ESTABLISHED on (before it the sequence space is not chosen yet):
    // snd_una <= snd_nxt <= write_seq, and snd_nxt never goes back (mod 2^32).
    let mut last_nxt: Option<u32> = None;
    let checked = evs.iter().filter(|e| {
        e.ts >= est.ts && e.u_opt("cookie") == Some(cookie) && e.fields.contains_key("snd_nxt")
    });
    for e in checked {
        let (una, nxt, wseq) = (
            e.u("snd_una") as u32,
            e.u("snd_nxt") as u32,
            e.u("write_seq") as u32,
        );
        assert!(nxt.wrapping_sub(una) <= wseq.wrapping_sub(una), "{e:?}");
        if let Some(l) = last_nxt {
            assert!(
                (nxt.wrapping_sub(l) as i32) >= 0,
                "snd_nxt went back: {l} -> {nxt}"
            );
        }
        last_nxt = Some(nxt);
    }

    // ---- dev: the veth's ifindex --------------------------------------------------
    let xmits: Vec<&Ev> = evs
        .iter()
        .filter(|e| e.kind_id == kind::DEV_START_XMIT && e.u("cookie") == cookie)
        .collect();
    assert!(!xmits.is_empty(), "the sender's packets reach the driver");
    assert!(
        xmits.iter().all(|e| e.u("ifindex") == a.ifindex() as u64),
        "dev events carry the veth's ifindex {}",
        a.ifindex()
    );
    let rx_in_ns = evs
        .iter()
        .filter(|e| e.kind_id == kind::DEV_RX && e.u("ifindex") == b.ifindex() as u64)
        .count();
    assert!(
        rx_in_ns > 0,
        "packets received on the peer's veth (ifindex {} in its namespace)",
        b.ifindex()
    );
    // Every datagram is attributed on receive too, including those that arrive
    // before the receiver's first recv() (its flow is known from bind()): to
    // the receiving socket, which also tells them from frames of another
    // test's namespace whose veth has the same ifindex there (dev records
    // carry no namespace).
    let udp_receiver = evs
        .iter()
        .find(|e| e.kind_id == kind::APP_RECV && e.u("protocol") == 17)
        .expect("the UDP receiver's calls")
        .u("cookie");
    let udp_rx = evs
        .iter()
        .filter(|e| {
            e.kind_id == kind::DEV_RX
                && e.u("ifindex") == b.ifindex() as u64
                && e.u("cookie") == udp_receiver
                // The frame: Ethernet header included, as on transmit.
                && e.u("len") == UDP_U + 28 + 14
        })
        .count();
    assert_eq!(
        udp_rx as u64, UDP_M,
        "UDP datagrams received on the peer's veth"
    );

    // ---- ip: identification numbers equal those on the wire ---------------------
    let a_ip = IpAddr::V4(a.addr());
    let b_ip = IpAddr::V4(b.addr());
    let ours: BTreeSet<u64> = evs
        .iter()
        .filter(|e| {
            e.kind_id == kind::IP_LOCAL_OUT && e.addr("saddr") == a_ip && e.addr("daddr") == b_ip
        })
        .map(|e| e.u("ip_id"))
        .collect();
    let wire_rows = tshark_fields(
        &*pcap,
        &format!("ip.src=={} && ip.dst=={}", a.addr(), b.addr()),
        &["ip.id"],
    )
    .unwrap();
    let wire: BTreeSet<u64> = wire_rows
        .iter()
        .map(|r| u64::from_str_radix(r[0].trim_start_matches("0x"), 16).unwrap())
        .collect();
    assert!(
        wire.len() as u64 >= UDP_M,
        "the capture holds the datagrams ({} ids)",
        wire.len()
    );
    assert_eq!(ours, wire, "IP ids at LOCAL_OUT vs on the wire at the peer");

    // ---- identity: one packet, one id, across ip and dev -------------------------
    let outs: Vec<&Ev> = evs
        .iter()
        .filter(|e| {
            e.kind_id == kind::IP_LOCAL_OUT && e.addr("saddr") == a_ip && e.addr("daddr") == b_ip
        })
        .collect();
    let ids: BTreeSet<u64> = outs.iter().map(|e| e.u("pkt_id")).collect();
    assert_eq!(
        ids.len(),
        outs.len(),
        "every packet born at LOCAL_OUT gets its own id"
    );
    let at_driver: BTreeSet<u64> = evs
        .iter()
        .filter(|e| e.kind_id == kind::DEV_START_XMIT && e.u("ifindex") == a.ifindex() as u64)
        .map(|e| e.u("pkt_id"))
        .collect();
    let received: BTreeSet<u64> = evs
        .iter()
        .filter(|e| e.kind_id == kind::DEV_RX && e.u("ifindex") == b.ifindex() as u64)
        .map(|e| e.u("pkt_id"))
        .collect();
    assert!(
        ids.is_subset(&at_driver),
        "each packet keeps its id down to the veth's driver"
    );
    assert!(
        ids.is_subset(&received),
        "and across the veth into the peer's namespace"
    );
}

impl Ev {
    fn u_opt(&self, f: &str) -> Option<u64> {
        self.fields.get(f).and_then(|v| v.as_u64())
    }
}

/// A process that is not traced, making traffic while a recording runs.
fn noise(secs: u32) -> std::process::Child {
    Command::new(MAGNET)
        .args([
            "loadgen",
            "--tcp",
            &format!("{}x100", secs * 200),
            "--interval",
            "5ms",
        ])
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn filters_keep_other_processes_out_and_all_lets_them_in() {
    if !live_or_skip(
        "filters_keep_other_processes_out_and_all_lets_them_in",
        &[Need::Btf],
    ) {
        return;
    }
    // Long enough to outlast the filtered recording and the --all one on a
    // loaded host (it is killed at the end).
    let mut bg = noise(8);
    let bg_pid = bg.id();
    std::thread::sleep(std::time::Duration::from_millis(200));

    let filtered = tmp("filtered.mgt");
    let out = magnet(&[
        "record",
        "-o",
        filtered.to_str().unwrap(),
        "--json",
        "--",
        MAGNET,
        "loadgen",
        "--tcp",
        "20x500",
    ]);
    let load = loadgen_line(&out);
    let traced_pid = load["pid"].as_u64().unwrap() as u32;
    json_stdout(&out);
    let (evs, _) = read_trace(&filtered);
    let app: Vec<&Ev> = evs
        .iter()
        .filter(|e| e.kind_id == kind::APP_SEND || e.kind_id == kind::APP_RECV)
        .collect();
    assert!(
        app.iter().all(|e| e.pid == traced_pid),
        "only the traced command's app events"
    );
    assert_eq!(
        app.iter().filter(|e| e.kind_id == kind::APP_SEND).count(),
        20
    );
    // Packet events in softirq carry whichever task was interrupted, so look at
    // sockets instead: every socket in the trace is one the command used.
    let announced: BTreeSet<u64> = evs
        .iter()
        .filter(|e| e.kind_id == kind::SOCK)
        .map(|e| e.u("cookie"))
        .collect();
    assert!(evs
        .iter()
        .filter(|e| e.kind_id == kind::SOCK)
        .all(|e| e.pid == traced_pid));
    for e in &evs {
        if let Some(c) = e.u_opt("cookie").filter(|&c| c != 0) {
            assert!(announced.contains(&c), "event of an untraced socket: {e:?}");
        }
    }
    assert!(
        !evs.iter()
            .any(|e| e.pid == bg_pid && e.kind_id == kind::TCP_SENDMSG),
        "no tcp_sendmsg of the untraced process"
    );

    let all = tmp("all.mgt");
    let out = magnet(&[
        "record",
        "-o",
        all.to_str().unwrap(),
        "--all",
        "--layers",
        "app",
        "--duration",
        "1s",
        "--json",
    ]);
    json_stdout(&out);
    let (evs, _) = read_trace(&all);
    let from_bg = evs
        .iter()
        .filter(|e| e.kind_id == kind::APP_SEND && e.pid == bg_pid)
        .count();
    assert!(
        from_bg > 50,
        "--all records the other process too ({from_bg} sends in 1 s at 200/s)"
    );
    let _ = bg.kill();
    let _ = bg.wait();
}

#[test]
fn forced_overflow_is_counted_in_place_and_in_total() {
    if !live_or_skip(
        "forced_overflow_is_counted_in_place_and_in_total",
        &[Need::Btf],
    ) {
        return;
    }
    const CALLS: u64 = 20_000;
    let trace = tmp("overflow.mgt");
    let out = magnet(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--layers",
        "app",
        "--buffer",
        "8KiB",
        "--json",
        "--",
        MAGNET,
        "loadgen",
        "--udp",
        &format!("{CALLS}x16"),
        "--flood",
    ]);
    let summary = json_stdout(&out);
    let (evs, footer) = read_trace(&trace);
    let lost = summary["lost_kernel"].as_u64().unwrap();
    assert!(
        lost > 0,
        "an 8 KiB ring must overflow under a flood: {summary}"
    );
    assert_eq!(footer.lost_kernel, lost);
    // LOST records sit in the stream and add up to the total.
    let lost_recs: Vec<&Ev> = evs.iter().filter(|e| e.kind_id == kind::LOST).collect();
    assert!(
        lost_recs.iter().any(|e| e.u("reason") == 0),
        "some LOST records were written in place by the kernel"
    );
    assert_eq!(lost_recs.iter().map(|e| e.u("count")).sum::<u64>(), lost);
    // recorded + lost == generated (the kernel counts every event that passed the filters).
    let recorded = evs.iter().filter(|e| e.kind_id != kind::LOST).count() as u64;
    let generated: u64 = footer.generated.values().sum();
    assert_eq!(
        recorded + lost,
        generated,
        "recorded {recorded} + lost {lost} vs generated {generated}"
    );
    // And the kernel's count is the workload's truth: one send event per sendto().
    assert_eq!(footer.generated.get("app_send").copied(), Some(CALLS));
    // The END block's per-kind totals add up with what is read: info finds
    // nothing missing under loss (the totals are what damage is checked
    // against), exit 0.
    assert_eq!(footer.recorded.values().sum::<u64>(), footer.records);
    let stderr = magnet(&["info", trace.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&stderr.stdout);
    assert!(text.contains(&format!("lost      {lost} events")), "{text}");
    assert!(!text.contains("damage"), "{text}");
    assert_eq!(stderr.status.code(), Some(0), "{text}");
}

#[test]
fn without_root_or_btf_the_error_says_what_is_missing() {
    if !live_or_skip(
        "without_root_or_btf_the_error_says_what_is_missing",
        &[Need::Tool("setpriv"), Need::Tool("unshare")],
    ) {
        return;
    }
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            MAGNET,
            "record",
            "--all",
            "-o",
            "/tmp/x.mgt",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("needs root") && err.contains("sudo"), "{err}");

    // Hide BTF in a private mount namespace.
    let out = Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            &format!(
                "mount -t tmpfs none /sys/kernel/btf && exec {MAGNET} record --all -o /tmp/x.mgt"
            ),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("no BTF") && err.contains("CONFIG_DEBUG_INFO_BTF"),
        "{err}"
    );
}

#[test]
fn recording_works_without_tracefs() {
    if !live_or_skip(
        "recording_works_without_tracefs",
        &[Need::Btf, Need::Tool("unshare")],
    ) {
        return;
    }
    let trace = tmp("notracefs.mgt");
    let script = format!(
        "for m in /sys/kernel/tracing /sys/kernel/debug/tracing /sys/kernel/debug; do umount -l $m 2>/dev/null; done; \
         if [ -e /sys/kernel/tracing/trace ]; then echo tracefs still mounted >&2; exit 99; fi; \
         exec {MAGNET} record -o {} --json -- {MAGNET} loadgen --tcp 10x100",
        trace.display()
    );
    let out = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .output()
        .unwrap();
    json_stdout(&out);
    let (evs, _) = read_trace(&trace);
    assert_eq!(
        evs.iter().filter(|e| e.kind_id == kind::APP_SEND).count(),
        10
    );
}

#[test]
fn pid_comm_port_and_host_filters_select_what_they_say() {
    if !live_or_skip(
        "pid_comm_port_and_host_filters_select_what_they_say",
        &[Need::Btf],
    ) {
        return;
    }
    // Two paced workloads (20 s, killed at the end) on fixed ports; each filter
    // must keep exactly what it names.
    let spawn = |port: &str| {
        Command::new(MAGNET)
            .args([
                "loadgen",
                "--tcp",
                "4000x100",
                "--interval",
                "5ms",
                "--port",
                port,
            ])
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut one = spawn("7421");
    let mut two = spawn("7422");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let run = |name: &str, extra: &[&str]| {
        let path = tmp(name);
        let mut args = vec![
            "record",
            "-o",
            path.to_str().unwrap(),
            "--layers",
            "app,tcp,ip,dev",
            "--duration",
            "700ms",
            "--json",
        ];
        args.extend_from_slice(extra);
        json_stdout(&magnet(&args));
        read_trace(&path).0
    };
    let ports = |evs: &[Ev]| -> BTreeSet<u64> {
        evs.iter()
            .filter(|e| e.kind_id == kind::SOCK)
            .flat_map(|e| [e.u("sport"), e.u("dport")])
            .collect()
    };
    let one_pid = one.id().to_string();

    let by_pid = run("pid.mgt", &["-p", &one_pid]);
    let sends = by_pid
        .iter()
        .filter(|e| e.kind_id == kind::APP_SEND)
        .count();
    assert!(
        sends > 20,
        "-p records the process ({sends} sends in 0.7 s at 200/s)"
    );
    assert!(by_pid
        .iter()
        .filter(|e| e.kind_id == kind::APP_SEND)
        .all(|e| e.pid == one.id()));
    assert!(
        !ports(&by_pid).contains(&7422),
        "-p keeps the other workload's sockets out"
    );

    let by_port = run("port.mgt", &["--all", "--port", "7422"]);
    let app: Vec<&Ev> = by_port
        .iter()
        .filter(|e| e.kind_id == kind::APP_SEND)
        .collect();
    assert!(
        app.len() > 20 && app.iter().all(|e| e.pid == two.id()),
        "--port 7422 keeps only that flow's sends"
    );
    let ip: Vec<&Ev> = by_port
        .iter()
        .filter(|e| e.kind_id == kind::IP_LOCAL_OUT)
        .collect();
    assert!(
        !ip.is_empty()
            && ip
                .iter()
                .all(|e| e.u("sport") == 7422 || e.u("dport") == 7422)
    );

    let by_host = run("host.mgt", &["--all", "--host", "127.0.0.2"]);
    assert_eq!(
        by_host
            .iter()
            .filter(|e| e.kind_id == kind::APP_SEND)
            .count(),
        0,
        "no traffic to 127.0.0.2"
    );

    let by_comm = run("comm.mgt", &["--comm", "magnet"]);
    let pids: BTreeSet<u32> = by_comm
        .iter()
        .filter(|e| e.kind_id == kind::APP_SEND)
        .map(|e| e.pid)
        .collect();
    assert!(
        pids.contains(&one.id()) && pids.contains(&two.id()),
        "--comm magnet keeps both: {pids:?}"
    );
    let by_other_comm = run("comm2.mgt", &["--comm", "no-such-task"]);
    assert_eq!(
        by_other_comm
            .iter()
            .filter(|e| e.kind_id == kind::APP_SEND)
            .count(),
        0
    );

    for c in [&mut one, &mut two] {
        let _ = c.kill();
        let _ = c.wait();
    }
}

#[test]
fn sigterm_ends_a_recording_cleanly_and_a_cut_trace_reads_its_prefix() {
    if !live_or_skip(
        "sigterm_ends_a_recording_cleanly_and_a_cut_trace_reads_its_prefix",
        &[Need::Btf],
    ) {
        return;
    }
    let path = tmp("sigterm.mgt");
    let mut bg = noise(3);
    let mut cmd = Command::new(MAGNET);
    cmd.args([
        "record",
        "-o",
        path.to_str().unwrap(),
        "--all",
        "--layers",
        "app,tcp",
        "--json",
    ])
    .stdout(Stdio::piped());
    // SIGTERM 800 ms after the recorder says it records, not after it was
    // started: a signal during the load ends the recording before its first
    // event (CI: a loaded VM took over 800 ms to attach; 1-3 records).
    let out = Recorder::start(cmd).stop_after(std::time::Duration::from_millis(800));
    assert!(out.status.success(), "magnet record failed: {}", out.stderr);
    let summary: serde_json::Value = serde_json::from_str(
        out.stdout
            .lines()
            .rfind(|l| l.starts_with('{'))
            .expect("a JSON line"),
    )
    .unwrap();
    assert_eq!(summary["end_reason"], "interrupted");
    let (evs, footer) = read_trace(&path);
    assert_eq!(footer.end_reason, "interrupted");
    assert_eq!(evs.len() as u64, footer.records);
    assert!(footer.records > 10, "{footer:?}");
    let _ = bg.kill();
    let _ = bg.wait();

    // The same trace without its last byte (the END block is cut): info says it
    // ended uncleanly, parse prints every record and warns; both exit 1 (what
    // they show is incomplete: docs/exit-codes.md).
    let bytes = std::fs::read(&path).unwrap();
    let cut = tmp("cut.mgt");
    std::fs::write(&cut, &bytes[..bytes.len() - 1]).unwrap();
    let info = magnet(&["info", cut.to_str().unwrap()]);
    assert_eq!(info.status.code(), Some(1));
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(
        text.contains("NOT CLEANLY") && text.contains("cut short at byte"),
        "{text}"
    );
    assert!(
        text.contains(&format!("records   {}", footer.records)),
        "{text}"
    );
    let parse = magnet(&["parse", cut.to_str().unwrap()]);
    assert_eq!(parse.status.code(), Some(1));
    let lines = String::from_utf8_lossy(&parse.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .count() as u64;
    assert_eq!(lines, footer.records);
    let err = String::from_utf8_lossy(&parse.stderr);
    assert!(err.contains("cut short at byte"), "{err}");
    // Cut inside the data (half way between the header's end and the END
    // block's start: not inside the ~22 KB header, which a short recording may
    // not double, nor inside the END block, which carries a copy of it): a
    // readable prefix (possibly empty), a warning, exit 1.
    let data_start = TraceReader::new(std::fs::File::open(&path).unwrap())
        .unwrap()
        .offset() as usize;
    let end_block = bytes.windows(4).rposition(|w| w == b"MGND").unwrap();
    std::fs::write(&cut, &bytes[..(data_start + end_block) / 2]).unwrap();
    let parse = magnet(&["parse", cut.to_str().unwrap()]);
    assert_eq!(parse.status.code(), Some(1));
    let lines = String::from_utf8_lossy(&parse.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .count() as u64;
    assert!(lines < footer.records);
    assert!(String::from_utf8_lossy(&parse.stderr).contains("cut short at byte"));

    // parse --json and info agree on counts.
    let json = magnet(&[
        "parse",
        path.to_str().unwrap(),
        "--json",
        "--kind",
        "app_send",
    ]);
    let n = String::from_utf8_lossy(&json.stdout).lines().count();
    let info: serde_json::Value =
        serde_json::from_slice(&magnet(&["info", path.to_str().unwrap(), "--json"]).stdout)
            .unwrap();
    assert_eq!(
        info["kinds"]["app_send"]["events"].as_u64().unwrap_or(0),
        n as u64
    );
}

#[test]
fn a_killed_recorder_leaves_a_readable_trace() {
    if !live_or_skip("a_killed_recorder_leaves_a_readable_trace", &[Need::Btf]) {
        return;
    }
    let path = tmp("killed.mgt");
    let mut bg = noise(4);
    let mut rec = Command::new(MAGNET)
        .args([
            "record",
            "-o",
            path.to_str().unwrap(),
            "--all",
            "--layers",
            "app",
            "-q",
        ])
        .spawn()
        .unwrap();
    // Blocks are cut at least once a second: after 2.5 s some are on disk.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    rec.kill().unwrap();
    rec.wait().unwrap();
    let _ = bg.kill();
    let _ = bg.wait();
    let info = magnet(&["info", path.to_str().unwrap(), "--json"]);
    assert_eq!(info.status.code(), Some(1), "{info:?}");
    let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(v["complete"], false);
    let sends = v["kinds"]["app_send"]["events"].as_u64().unwrap_or(0);
    assert!(
        sends >= 100,
        "about a second of a 200/s workload survives the kill: {sends}"
    );
    assert!(
        v["damage"][0].as_str().unwrap().contains("cut short"),
        "{v}"
    );
}

#[test]
fn drops_carry_the_kernels_reason_by_name() {
    if !live_or_skip("drops_carry_the_kernels_reason_by_name", &[Need::Btf]) {
        return;
    }
    // Datagrams to a port nobody listens on are dropped with reason NO_SOCKET.
    const PORT: u16 = 7993;
    let path = tmp("drops.mgt");
    let rec = start_port_recording(&path, "drop", PORT);
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..5 {
        sock.send_to(b"nobody home", ("127.0.0.1", PORT)).unwrap();
    }
    finish_recording(rec);
    let out = magnet(&["parse", path.to_str().unwrap(), "--json", "--kind", "drop"]);
    let drops: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let no_socket = drops
        .iter()
        .filter(|d| d["reason_name"] == "NO_SOCKET")
        .count();
    assert_eq!(no_socket, 5, "{drops:?}");
    let text = magnet(&["parse", path.to_str().unwrap(), "--kind", "drop"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("reason=NO_SOCKET"));
}

#[test]
fn port_filter_judges_unconnected_udp_sends_by_their_destination() {
    if !live_or_skip(
        "port_filter_judges_unconnected_udp_sends_by_their_destination",
        &[Need::Btf],
    ) {
        return;
    }
    const PORT: u16 = 7994;
    let path = tmp("udp-port.mgt");
    let rec = start_port_recording(&path, "app", PORT);
    let rx = std::net::UdpSocket::bind(("127.0.0.1", PORT)).unwrap();
    // One unconnected socket sends to the filtered port and to another one:
    // only the first kind of call belongs in the trace.
    let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let other = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut buf = [0u8; 64];
    for _ in 0..10 {
        tx.send_to(&[7u8; 33], ("127.0.0.1", PORT)).unwrap();
        tx.send_to(&[9u8; 44], other.local_addr().unwrap()).unwrap();
        assert_eq!(rx.recv(&mut buf).unwrap(), 33);
        assert_eq!(other.recv(&mut buf).unwrap(), 44);
    }
    finish_recording(rec);
    let (evs, _) = read_trace(&path);
    let sends: Vec<&Ev> = evs.iter().filter(|e| e.kind_id == kind::APP_SEND).collect();
    assert_eq!(sends.len(), 10, "{sends:?}");
    assert!(sends.iter().all(|e| e.i("ret") == 33));
    let recvs = evs
        .iter()
        .filter(|e| e.kind_id == kind::APP_RECV && e.i("ret") == 33)
        .count();
    assert_eq!(recvs, 10);
    assert!(!evs
        .iter()
        .any(|e| e.kind_id == kind::APP_RECV && e.i("ret") == 44));
}

#[test]
fn cgroup_filter_keeps_exactly_the_cgroups_tasks() {
    if !live_or_skip(
        "cgroup_filter_keeps_exactly_the_cgroups_tasks",
        &[Need::Btf, Need::Tool("sh")],
    ) {
        return;
    }
    let Some(root) = magnet_kernel::cgroup::root() else {
        assert!(
            std::env::var("MAGNET_REQUIRE_LIVE").as_deref() != Ok("1"),
            "no cgroup2 mount"
        );
        eprintln!("SKIP cgroup_filter_keeps_exactly_the_cgroups_tasks: no cgroup2 mount");
        return;
    };
    let cg = root.join(format!("magnet-test-{}", std::process::id()));
    std::fs::create_dir_all(&cg).unwrap();
    let path = tmp("cgroup.mgt");
    let cg_arg = cg.to_str().unwrap().to_string();
    let rec = start_recording(&[
        "-o",
        path.to_str().unwrap(),
        "--cgroup",
        &cg_arg,
        "--layers",
        "app",
        "--duration",
        "2s",
    ]);
    // Inside the cgroup: 12 sends of 300 B. Outside it, at the same time: 40 more.
    let mut outside = Command::new(MAGNET)
        .args(["loadgen", "--tcp", "40x100", "--interval", "10ms"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let inside = Command::new("sh")
        .args([
            "-c",
            &format!(
                "echo $$ > {}/cgroup.procs && exec {MAGNET} loadgen --tcp 12x300",
                cg.display()
            ),
        ])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(inside.success());
    outside.wait().unwrap();
    finish_recording(rec);
    let _ = std::fs::remove_dir(&cg);
    let (evs, _) = read_trace(&path);
    let sends: Vec<&Ev> = evs.iter().filter(|e| e.kind_id == kind::APP_SEND).collect();
    assert_eq!(sends.len(), 12, "exactly the cgroup's sends");
    assert!(sends.iter().all(|e| e.i("ret") == 300));
    assert!(!sends.iter().any(|e| e.pid == outside.id()));
}

#[test]
fn ipv6_connections_and_packets_are_decoded() {
    if !live_or_skip("ipv6_connections_and_packets_are_decoded", &[Need::Btf]) {
        return;
    }
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        assert!(
            std::env::var("MAGNET_REQUIRE_LIVE").as_deref() != Ok("1"),
            "no IPv6 loopback"
        );
        eprintln!("SKIP ipv6_connections_and_packets_are_decoded: no IPv6 loopback");
        return;
    }
    const PORT: u16 = 7995;
    let path = tmp("v6.mgt");
    let rec = start_port_recording(&path, "app,tcp,ip,dev", PORT);
    let listener = std::net::TcpListener::bind(("::1", PORT)).unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut s, &mut buf).unwrap();
        buf.len()
    });
    let mut c = std::net::TcpStream::connect(("::1", PORT)).unwrap();
    for _ in 0..5 {
        std::io::Write::write_all(&mut c, &[1u8; 100]).unwrap();
    }
    drop(c);
    assert_eq!(server.join().unwrap(), 500);
    finish_recording(rec);
    let (evs, _) = read_trace(&path);
    let v6: IpAddr = "::1".parse().unwrap();
    let sends: Vec<&Ev> = evs.iter().filter(|e| e.kind_id == kind::APP_SEND).collect();
    assert_eq!(sends.len(), 5);
    assert!(sends
        .iter()
        .all(|e| e.u("family") == 10 && e.i("ret") == 100));
    let socks: Vec<&Ev> = evs.iter().filter(|e| e.kind_id == kind::SOCK).collect();
    assert!(
        socks
            .iter()
            .any(|e| e.addr("daddr") == v6 && e.u("dport") == PORT as u64),
        "{socks:?}"
    );
    let outs: Vec<&Ev> = evs
        .iter()
        .filter(|e| e.kind_id == kind::IP_LOCAL_OUT)
        .collect();
    assert!(!outs.is_empty());
    assert!(outs
        .iter()
        .all(|e| e.u("version") == 6 && e.addr("saddr") == v6 && e.u("protocol") == 6));
    // The 500 payload bytes appear at LOCAL_OUT towards the port: tot_len - 40 (IPv6)
    // - 32 (TCP header with timestamps) for every packet after the SYN.
    let data: u64 = outs
        .iter()
        .filter(|e| e.u("dport") == PORT as u64 && e.u("tcp_flags") & 0x02 == 0)
        .map(|e| e.u("tot_len") - 40 - 32)
        .sum();
    assert_eq!(data, 500, "payload at LOCAL_OUT");
}

#[test]
fn comm_filter_selects_scheduler_events_too() {
    if !live_or_skip("comm_filter_selects_scheduler_events_too", &[Need::Btf]) {
        return;
    }
    // loadgen's receiver thread names itself loadgen-rx: only its switches,
    // wake-ups and receives belong in the trace.
    let path = tmp("sched-comm.mgt");
    let rec = start_recording(&[
        "-o",
        path.to_str().unwrap(),
        "--comm",
        "loadgen-rx",
        "--layers",
        "app,sched",
        "--duration",
        "1500ms",
    ]);
    let out = magnet(&["loadgen", "--tcp", "40x100", "--interval", "5ms"]);
    assert!(out.status.success());
    finish_recording(rec);
    let (evs, _) = read_trace(&path);
    let comm = |e: &Ev, f: &str| e.fields.get(f).map(|v| v.to_string()).unwrap_or_default();
    let switches: Vec<&Ev> = evs
        .iter()
        .filter(|e| e.kind_id == kind::SCHED_SWITCH)
        .collect();
    assert!(
        switches.len() >= 10,
        "a receiver woken 40 times switches in and out: {}",
        switches.len()
    );
    assert!(switches
        .iter()
        .all(|e| comm(e, "prev_comm") == "loadgen-rx" || comm(e, "next_comm") == "loadgen-rx"));
    let wakeups: Vec<&Ev> = evs
        .iter()
        .filter(|e| e.kind_id == kind::SCHED_WAKEUP)
        .collect();
    assert!(wakeups.iter().all(|e| comm(e, "comm") == "loadgen-rx"));
    assert!(
        evs.iter().filter(|e| e.kind_id == kind::APP_SEND).count() == 0,
        "the sender thread is not loadgen-rx"
    );
    assert!(evs.iter().any(|e| e.kind_id == kind::APP_RECV));
}

/// Records wait in their CPU's batch (record.bpf.c, "per-CPU batches") until
/// it fills, ages, or the CPU's tick sends it: five events and then silence
/// must still reach the disk before the one-second block cut, so a recorder
/// killed 2.5 s later has them all. Without the tick they would sit in the
/// batch and the killed trace would have none.
#[test]
fn a_quiet_cpus_last_records_survive_a_kill() {
    if !live_or_skip("a_quiet_cpus_last_records_survive_a_kill", &[Need::Btf]) {
        return;
    }
    const SENDS: u64 = 5;
    let port: u16 = 20000 + (std::process::id() % 20000) as u16;
    let path = tmp("quiet-kill.mgt");
    let rec = start_recording(&[
        "-o",
        path.to_str().unwrap(),
        "--all",
        "--layers",
        "app",
        "--port",
        &port.to_string(),
        "--duration",
        "30s",
    ]);
    let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for _ in 0..SENDS {
        sock.send_to(b"quiet", ("127.0.0.1", port)).unwrap();
    }
    // Until the sends are on disk (the batch tick pushes a quiet CPU's last
    // records within milliseconds, the drain cuts a block every second:
    // about 1 s; up to 10 s on a loaded host), then the kill.
    let on_disk = || {
        let o = magnet(&["info", path.to_str().unwrap(), "--json"]);
        serde_json::from_slice::<serde_json::Value>(&o.stdout)
            .ok()
            .and_then(|v| v["kinds"]["app_send"]["events"].as_u64())
            .unwrap_or(0)
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    while on_disk() < SENDS && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    rec.kill();
    let info = magnet(&["info", path.to_str().unwrap(), "--json"]);
    // A trace with no END block is damaged input (docs/exit-codes.md: 1), read
    // up to the cut and said so.
    assert_eq!(info.status.code(), Some(1), "{info:?}");
    let v: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(v["complete"], false, "killed, so no END block: {v}");
    assert!(
        v["damage"].to_string().contains("cut short"),
        "the cut is named: {v}"
    );
    assert_eq!(
        v["kinds"]["app_send"]["events"].as_u64().unwrap_or(0),
        SENDS,
        "every send of a CPU gone quiet is on disk: {v}"
    );
    let _ = std::fs::remove_file(&path);
}

/// A port closed and bound again by a new socket within one recording: the
/// received datagrams of each socket carry its own cookie. The recorder keeps a
/// per-CPU cache of flow lookups in front of its flow table; the new socket's
/// flow must replace the old one there too. The workload runs on one CPU, so a
/// stale cache entry would give every datagram of the second socket the first
/// socket's cookie.
#[test]
fn a_port_bound_again_gives_its_datagrams_the_new_socket() {
    if !live_or_skip(
        "a_port_bound_again_gives_its_datagrams_the_new_socket",
        &[Need::Btf],
    ) {
        return;
    }
    const N: usize = 20;
    const M: usize = 30;
    let port: u16 = 20000 + ((std::process::id() + 7) % 20000) as u16;
    let path = tmp("port-again.mgt");
    let rec = start_port_recording(&path, "app,dev", port);
    std::thread::spawn(move || {
        magnet_testkit::pin_current_thread(magnet_testkit::first_allowed_cpu());
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut buf = [0u8; 256];
        for n in [N, M] {
            let rx = std::net::UdpSocket::bind(("127.0.0.1", port)).unwrap();
            // bind() made the socket's flow known (flow_sys_exit): n + 1
            // datagrams, each received before the next is sent.
            for _ in 0..=n {
                tx.send_to(&[5u8; 100], ("127.0.0.1", port)).unwrap();
                assert_eq!(rx.recv(&mut buf).unwrap(), 100);
            }
        }
    })
    .join()
    .unwrap();
    finish_recording(rec);
    let (evs, _) = read_trace(&path);
    let recv_cookies: Vec<u64> = evs
        .iter()
        .filter(|e| e.kind_id == kind::APP_RECV && e.i("ret") == 100)
        .map(|e| e.u("cookie"))
        .collect();
    assert_eq!(recv_cookies.len(), N + M + 2, "{recv_cookies:?}");
    let (c1, c2) = (recv_cookies[0], recv_cookies[N + 1]);
    assert_ne!(c1, c2, "two sockets: {recv_cookies:?}");
    assert!(recv_cookies[..=N].iter().all(|&c| c == c1));
    assert!(recv_cookies[N + 1..].iter().all(|&c| c == c2));
    let mut by_cookie: BTreeMap<u64, usize> = BTreeMap::new();
    for e in evs.iter().filter(|e| e.kind_id == kind::DEV_RX) {
        *by_cookie.entry(e.u("cookie")).or_default() += 1;
    }
    let want = BTreeMap::from([(c1, N + 1), (c2, M + 1)]);
    assert_eq!(by_cookie, want, "dev_rx records per cookie");
    let _ = std::fs::remove_file(&path);
}

/// Flows learnt at bind(): a UDP receiver that binds, is sent five datagrams
/// and only then reads them has every one attributed to it on receive (its
/// dev_rx records carry its cookie), at bind()'s own syscall tracepoints
/// and, where tracefs lacks them (MAGNET_HOOKS_DENY=tracepoint), at every
/// syscall's exit. With both denied the recording says in one line that
/// such packets are not attributed, and none is: the check can fail.
#[test]
fn datagrams_before_the_first_recv_are_attributed_from_bind() {
    if !live_or_skip(
        "datagrams_before_the_first_recv_are_attributed_from_bind",
        &[Need::Btf, Need::Tool("python3")],
    ) {
        return;
    }
    const SCRIPT: &str = "import socket, time\n\
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
        rx.bind(('127.0.0.1', 0))\n\
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
        for _ in range(5): tx.sendto(b'x' * 100, rx.getsockname())\n\
        time.sleep(0.2)\n\
        for _ in range(5): rx.recv(200)\n";
    // Without syscall tracepoints the app calls' own fallback is
    // tp_btf/sys_exit too, so flows at bind cannot be denied alone: the
    // third case needs a kernel whose tracefs lists them.
    let tracefs = magnet_kernel::tracefs::event_missing("syscalls/sys_exit_bind").is_none();
    for (deny, want) in [
        ("", 5),
        ("tracepoint", 5),
        ("tracepoint/syscalls/sys_exit_bind,tp_btf/sys_exit", 0),
    ] {
        if want == 0 && !tracefs {
            eprintln!(
                "no syscall tracepoints: flows at bind cannot be denied without the app calls"
            );
            continue;
        }
        let path = tmp("bind-first.mgt");
        let out = Command::new(MAGNET)
            .env("MAGNET_HOOKS_DENY", deny)
            .args(["record", "-o"])
            .arg(&path)
            .args(["--layers", "app,dev", "--", "python3", "-c", SCRIPT])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{deny}: {err}");
        let (evs, _) = read_trace(&path);
        let receiver = evs
            .iter()
            .find(|e| e.kind_id == kind::APP_RECV)
            .unwrap_or_else(|| panic!("{deny}: no recv in the trace: {err}"))
            .u("cookie");
        let attributed = evs
            .iter()
            .filter(|e| {
                e.kind_id == kind::DEV_RX
                    && e.u("cookie") == receiver
                    && e.u("len") == 100 + 28 + 14
            })
            .count();
        assert_eq!(attributed, want, "{deny:?}: {err}");
        let said =
            err.contains("flows_at_bind left out") && err.contains("are not attributed to it");
        assert_eq!(said, want == 0, "{deny:?}: {err}");
        let _ = std::fs::remove_file(&path);
    }
}

/// Records written one at a time (what the recorder does on a kernel that may
/// preempt its programs, batch.bpf.c "Direct records"; forced here with
/// MAGNET_DIRECT_RECORDS, since this host may not preempt) are the same
/// records as the per-CPU batches': a UDP workload over loopback, whose every
/// layer counts each datagram once, recorded both ways. The lab's 6.12 guest
/// booted with preempt=full checks the detection (scripts/lab/preempt.sh).
#[test]
fn records_written_one_at_a_time_equal_the_batched_ones() {
    if !live_or_skip(
        "records_written_one_at_a_time_equal_the_batched_ones",
        &[Need::Btf],
    ) {
        return;
    }
    const N: u64 = 2000;
    let record = |direct: &str| {
        let trace = tmp(&format!("direct-{direct}.mgt"));
        let out = Command::new(MAGNET)
            .args([
                "record",
                "-o",
                trace.to_str().unwrap(),
                "--layers",
                "app,ip,dev",
            ])
            .args([
                "--json",
                "--",
                MAGNET,
                "loadgen",
                "--udp",
                &format!("{N}x100"),
            ])
            .env("MAGNET_DIRECT_RECORDS", direct)
            .stdin(Stdio::null())
            .output()
            .expect("run magnet record");
        json_stdout(&out)
    };
    for (direct, why) in [("0", None), ("1", Some("MAGNET_DIRECT_RECORDS=1"))] {
        let s = record(direct);
        assert_eq!(s["lost_kernel"], 0, "direct {direct}: {s}");
        assert_eq!(s["dropped_user"], 0, "direct {direct}: {s}");
        for k in [
            "app_send",
            "app_recv",
            "ip_local_out",
            "ip_local_in",
            "dev_start_xmit",
            "dev_rx",
        ] {
            assert_eq!(
                s["by_kind"][k], N,
                "{k} with MAGNET_DIRECT_RECORDS={direct}: {s}"
            );
        }
        assert_eq!(s["cost"]["direct_records"].as_str(), why, "{s}");
    }
}
