//! The OpenMetrics text served at `/metrics`.
//!
//! Names follow Prometheus conventions: `magnet_` prefix, base units
//! (bytes, seconds), `_total` on counters, direction as a label.
//!
//! | family | labels | what |
//! |---|---|---|
//! | `magnet_app_bytes_total`, `magnet_app_calls_total` | direction | send/recv calls of all sockets (IPv4/IPv6) |
//! | `magnet_wire_bytes_total`, `magnet_wire_packets_total`, `magnet_wire_segments_total` | direction | IP packets of all sockets (only with `packet_hooks = "always"`) |
//! | `magnet_interface_bytes_total`, `magnet_interface_packets_total` | interface, direction | the interfaces' own counters (/proc/net/dev of magnetd's netns), at most 256 interfaces |
//! | `magnet_packet_hooks_attached`, `magnet_packet_hooks_coverage_ratio`, `magnet_packet_hooks_windows_total`, `magnet_packet_hooks_switch_seconds_total` | mode | when the per-packet programs ran: what the latency histograms (API) are a sample of |
//! | `magnet_tcp_retransmits_total` | — | tcp_retransmit_skb |
//! | `magnet_tcp_counter_read_failures_total` | — | failed reads of the TCP sockets' own counters |
//! | `magnet_drops_total` | reason | kfree_skb by reason (at most 256 reasons) |
//! | `magnet_connections` | state | tracked connections (open / closed, not yet reaped) |
//! | `magnet_events_total`, `magnet_lost_events_total`, `magnet_connection_map_full_total`, `magnet_connection_map_entries`, `magnet_connection_map_capacity`, `magnet_connections_created_total` | — | magnetd's health |
//! | `magnet_connection_*` | cookie, protocol, local, remote, comm, uid, container | per connection, **only** for connections selected by `[metrics]` (ports, containers), at most `max_connection_series` connections |
//! | `magnet_sample_runs_total`, `magnet_sample_last_*` | interface, interval | the sampler under the daemon: runs stored, last run's totals and peaks, its BPF ns per packet |
//! | `magnet_bpf_stats_enabled`, `magnet_bpf_run_seconds_total`, `magnet_bpf_runs_total`, `magnet_bpf_ns_per_event`, `magnet_daemon_cpu_seconds_total`, `magnet_daemon_cpu_ns_per_event`, `magnet_cpu_share_ratio` | program (per-program families), part (`bpf`, `daemon`) | what magnetd costs: its programs' run time and runs (the kernel's run-time statistics), its process's CPU, per event and as a share of the machine's CPU since it started |
//!
//! Cardinality: host families have at most 2 series each (direction), drops
//! at most 256, interfaces at most 2 × 256; per-connection families at most
//! `max_connection_series` × 2.

use std::fmt::Write;

use crate::config::PacketHooks;
use crate::daemon::Shared;

fn esc(v: &str) -> String {
    let mut o = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o
}

fn labels(pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", esc(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

struct Out(String);

impl Out {
    fn family(&mut self, name: &str, kind: &str, unit: Option<&str>, help: &str) {
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
        if let Some(u) = unit {
            let _ = writeln!(self.0, "# UNIT {name} {u}");
        }
        let _ = writeln!(self.0, "# HELP {name} {help}");
    }
    fn sample(&mut self, name: &str, l: &[(&str, &str)], v: impl std::fmt::Display) {
        let _ = writeln!(self.0, "{name}{} {v}", labels(l));
    }
}

/// The whole exposition, `# EOF` included.
pub fn render(shared: &Shared) -> String {
    let host = shared.host();
    let mut o = Out(String::new());

    // A part left out (the kernel refused its hooks: /health says which) has
    // no series, not zeros.
    let app = shared.reader.has_part("app");
    if app {
        o.family("magnet_app_bytes", "counter", Some("bytes"), "Bytes applications sent and received through IPv4/IPv6 sockets (sock_send_length/sock_recv_length).");
        o.sample(
            "magnet_app_bytes_total",
            &[("direction", "tx")],
            host.app.tx_bytes,
        );
        o.sample(
            "magnet_app_bytes_total",
            &[("direction", "rx")],
            host.app.rx_bytes,
        );
        o.family(
            "magnet_app_calls",
            "counter",
            None,
            "Send and receive calls on IPv4/IPv6 sockets.",
        );
        o.sample(
            "magnet_app_calls_total",
            &[("direction", "tx")],
            host.app.tx_calls,
        );
        o.sample(
            "magnet_app_calls_total",
            &[("direction", "rx")],
            host.app.rx_calls,
        );
    }
    // Host wire totals come from the per-packet programs only, and only when
    // they see every packet: otherwise the families are left out rather than
    // served as zeros or as a part of the packets (the interfaces' own
    // counters below are exact in every mode).
    let hooks = shared
        .config
        .read()
        .map(|c| c.packet_hooks)
        .unwrap_or(PacketHooks::DEFAULT);
    if hooks == PacketHooks::Always {
        o.family(
            "magnet_wire_bytes",
            "counter",
            Some("bytes"),
            "IP bytes of the host's packets (cgroup_skb hooks at the cgroup v2 root).",
        );
        o.sample(
            "magnet_wire_bytes_total",
            &[("direction", "tx")],
            host.wire.tx_bytes,
        );
        o.sample(
            "magnet_wire_bytes_total",
            &[("direction", "rx")],
            host.wire.rx_bytes,
        );
        o.family(
            "magnet_wire_packets",
            "counter",
            None,
            "IP packets handed down by sockets (tx, before GSO) and segments received (rx).",
        );
        o.sample(
            "magnet_wire_packets_total",
            &[("direction", "tx")],
            host.wire.tx_packets,
        );
        o.sample(
            "magnet_wire_packets_total",
            &[("direction", "rx")],
            host.wire.rx_segs,
        );
        o.family(
            "magnet_wire_segments",
            "counter",
            None,
            "Wire segments sent (GSO segments of the packets handed down).",
        );
        o.sample(
            "magnet_wire_segments_total",
            &[("direction", "tx")],
            host.wire.tx_segs,
        );
    }
    o.family(
        "magnet_interface_bytes",
        "counter",
        Some("bytes"),
        "Bytes through each interface of magnetd's network namespace, the interface's own counters (/proc/net/dev; link-layer headers included on most drivers).",
    );
    for (name, i) in &host.interfaces {
        o.sample(
            "magnet_interface_bytes_total",
            &[("interface", name), ("direction", "tx")],
            i.tx_bytes,
        );
        o.sample(
            "magnet_interface_bytes_total",
            &[("interface", name), ("direction", "rx")],
            i.rx_bytes,
        );
    }
    o.family(
        "magnet_interface_packets",
        "counter",
        None,
        "Packets through each interface of magnetd's network namespace (/proc/net/dev).",
    );
    for (name, i) in &host.interfaces {
        o.sample(
            "magnet_interface_packets_total",
            &[("interface", name), ("direction", "tx")],
            i.tx_packets,
        );
        o.sample(
            "magnet_interface_packets_total",
            &[("interface", name), ("direction", "rx")],
            i.rx_packets,
        );
    }
    let mode = [("mode", hooks.name())];
    o.family(
        "magnet_packet_hooks_attached",
        "gauge",
        None,
        "1 while the per-packet programs (cgroup_skb, for the latency histograms) are attached, else 0 (packet_hooks sampled: only during windows).",
    );
    o.sample(
        "magnet_packet_hooks_attached",
        &mode,
        u8::from(host.health.packet_hooks_attached),
    );
    o.family(
        "magnet_packet_hooks_coverage_ratio",
        "gauge",
        None,
        "Fraction of the time since magnetd started during which the per-packet programs were attached: the API's latency histograms are samples taken over this fraction (1 with packet_hooks always, 0 with off).",
    );
    o.sample(
        "magnet_packet_hooks_coverage_ratio",
        &mode,
        format!("{:.6}", host.health.packet_coverage),
    );
    let (switch_s, windows) = shared
        .reader
        .windows
        .lock()
        .map(|w| (w.switch_seconds(), w.windows))
        .unwrap_or_default();
    o.family(
        "magnet_packet_hooks_windows",
        "counter",
        None,
        "Sampling windows opened (the per-packet links created) since magnetd started.",
    );
    o.sample("magnet_packet_hooks_windows_total", &mode, windows);
    o.family(
        "magnet_packet_hooks_switch_seconds",
        "counter",
        Some("seconds"),
        "Time magnetd spent creating and destroying the per-packet links (the cost of sampling windows).",
    );
    o.sample(
        "magnet_packet_hooks_switch_seconds_total",
        &mode,
        format!("{switch_s:.6}"),
    );
    o.family(
        "magnet_tcp_retransmits",
        "counter",
        None,
        "TCP retransmissions (tcp_retransmit_skb).",
    );
    o.sample("magnet_tcp_retransmits_total", &[], host.retransmits);
    o.family(
        "magnet_tcp_counter_read_failures",
        "counter",
        None,
        "Reads of the TCP sockets' own counters (the bpf_sk_storage_map iterator) that failed: the TCP wire counters served then were those of the previous read.",
    );
    o.sample(
        "magnet_tcp_counter_read_failures_total",
        &[],
        shared.reader.refresh_failures(),
    );
    o.family(
        "magnet_drops",
        "counter",
        None,
        "Packets the kernel dropped, by drop reason (kfree_skb).",
    );
    for (reason, n) in &host.drop_reasons {
        o.sample("magnet_drops_total", &[("reason", reason)], n);
    }

    let records = shared.reader.all();
    let open = records.iter().filter(|r| r.conn.open).count();
    o.family(
        "magnet_connections",
        "gauge",
        None,
        "Connections magnetd holds a summary of.",
    );
    o.sample("magnet_connections", &[("state", "open")], open);
    o.sample(
        "magnet_connections",
        &[("state", "closed")],
        records.len() - open,
    );

    o.family(
        "magnet_events",
        "counter",
        None,
        "Hook invocations that updated a summary (magnetd's own work).",
    );
    o.sample("magnet_events_total", &[], host.health.events);
    cost(
        &mut o,
        &shared.reader.bpf_time(),
        host.health.events,
        magnet_kernel::cost::process_cpu_ns(),
        shared.reader.machine_cpu_ns(),
    );
    o.family("magnet_lost_events", "counter", None, "Full events the flight recorder could not keep (ring full); the summaries themselves keep no event stream.");
    o.sample("magnet_lost_events_total", &[], host.health.lost);
    o.family(
        "magnet_connections_created",
        "counter",
        None,
        "Connection records created.",
    );
    o.sample(
        "magnet_connections_created_total",
        &[],
        host.health.connections_created,
    );
    o.family(
        "magnet_connection_map_full",
        "counter",
        None,
        "Connections not tracked because the connection map was full (raise max_connections).",
    );
    o.sample(
        "magnet_connection_map_full_total",
        &[],
        host.health.map_full,
    );
    o.family(
        "magnet_connection_map_entries",
        "gauge",
        None,
        "Entries in the connection map.",
    );
    o.sample(
        "magnet_connection_map_entries",
        &[],
        host.health.map_entries,
    );
    o.family(
        "magnet_connection_map_capacity",
        "gauge",
        None,
        "Size of the connection map (max_connections).",
    );
    o.sample(
        "magnet_connection_map_capacity",
        &[],
        host.health.map_capacity,
    );

    // ---- per connection, only where asked ----------------------------------
    let (ports, containers, max) = shared
        .config
        .read()
        .map(|c| {
            (
                c.metrics.connection_ports.clone(),
                c.metrics.connection_containers.clone(),
                c.metrics.max_connection_series,
            )
        })
        .unwrap_or_default();
    let port_of = |ep: &str| ep.rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
    let mut selected = Vec::new();
    if !ports.is_empty() || !containers.is_empty() {
        for r in records {
            if selected.len() >= max {
                break;
            }
            let by_port = port_of(&r.conn.local).is_some_and(|p| ports.contains(&p))
                || port_of(&r.conn.remote).is_some_and(|p| ports.contains(&p));
            let c = shared.label(r.conn);
            let by_container = c
                .container
                .as_deref()
                .is_some_and(|id| containers.iter().any(|w| id.starts_with(w.as_str())));
            if by_port || by_container {
                selected.push(c);
            }
        }
    }
    let fams: [(&str, &str, Option<&str>, &str); 5] = [
        (
            "magnet_connection_app_bytes",
            "counter",
            Some("bytes"),
            "Bytes this connection's application sent/received.",
        ),
        (
            "magnet_connection_app_calls",
            "counter",
            None,
            "Send/receive calls on this connection.",
        ),
        (
            "magnet_connection_wire_bytes",
            "counter",
            Some("bytes"),
            "TCP: payload bytes, the socket's own counters (tx bytes_sent, retransmits included; rx bytes_received, the FIN included); other protocols: IP bytes of its packets, only with packet_hooks always (no series otherwise).",
        ),
        (
            "magnet_connection_retransmits",
            "counter",
            None,
            "TCP retransmissions of this connection.",
        ),
        (
            "magnet_connection_srtt_seconds",
            "gauge",
            Some("seconds"),
            "Smoothed RTT (tcp_sock srtt_us) when read, or at close.",
        ),
    ];
    for (name, kind, unit, help) in fams {
        if !app && name.starts_with("magnet_connection_app_") {
            continue;
        }
        o.family(name, kind, unit, help);
        for c in &selected {
            let cookie = c.cookie.to_string();
            let uid = c.uid.to_string();
            let base = [
                ("cookie", cookie.as_str()),
                ("protocol", c.protocol.as_str()),
                ("local", c.local.as_str()),
                ("remote", c.remote.as_str()),
                ("comm", c.comm.as_str()),
                ("uid", uid.as_str()),
                ("container", c.container.as_deref().unwrap_or("")),
            ];
            let with = |d: &'static str| {
                let mut l = base.to_vec();
                l.push(("direction", d));
                l
            };
            match name {
                "magnet_connection_app_bytes" => {
                    o.sample(
                        "magnet_connection_app_bytes_total",
                        &with("tx"),
                        c.app.tx_bytes,
                    );
                    o.sample(
                        "magnet_connection_app_bytes_total",
                        &with("rx"),
                        c.app.rx_bytes,
                    );
                }
                "magnet_connection_app_calls" => {
                    o.sample(
                        "magnet_connection_app_calls_total",
                        &with("tx"),
                        c.app.tx_calls,
                    );
                    o.sample(
                        "magnet_connection_app_calls_total",
                        &with("rx"),
                        c.app.rx_calls,
                    );
                }
                "magnet_connection_wire_bytes" if c.wire.source == "absent" => {}
                "magnet_connection_wire_bytes" => {
                    o.sample(
                        "magnet_connection_wire_bytes_total",
                        &with("tx"),
                        c.wire.tx_bytes,
                    );
                    o.sample(
                        "magnet_connection_wire_bytes_total",
                        &with("rx"),
                        c.wire.rx_bytes,
                    );
                }
                "magnet_connection_retransmits" => {
                    o.sample("magnet_connection_retransmits_total", &base, c.retransmits);
                }
                _ => {
                    o.sample(
                        "magnet_connection_srtt_seconds",
                        &base,
                        f64::from(c.tcp.srtt_us) / 1e6,
                    );
                }
            }
        }
    }

    // ---- the sampler ------------------------------------------------------------
    if let Ok(s) = shared.sampler.lock() {
        if let Some(iface) = &s.iface {
            o.family(
                "magnet_sample_runs",
                "counter",
                None,
                "Sampler runs stored by the daemon.",
            );
            o.sample("magnet_sample_runs_total", &[("interface", iface)], s.runs);
            if let Some(last) = &s.last {
                let l = [
                    ("interface", iface.as_str()),
                    ("interval", last.interval.as_str()),
                ];
                o.family(
                    "magnet_sample_last_bytes",
                    "gauge",
                    Some("bytes"),
                    "Bytes in the last stored run, by direction.",
                );
                o.sample(
                    "magnet_sample_last_bytes",
                    &[l[0], l[1], ("direction", "in")],
                    last.in_bytes,
                );
                o.sample(
                    "magnet_sample_last_bytes",
                    &[l[0], l[1], ("direction", "out")],
                    last.out_bytes,
                );
                o.family(
                    "magnet_sample_last_peak_bytes",
                    "gauge",
                    Some("bytes"),
                    "Largest one-bucket byte count in the last stored run (burst size).",
                );
                o.sample(
                    "magnet_sample_last_peak_bytes",
                    &[l[0], l[1], ("direction", "in")],
                    last.in_peak,
                );
                o.sample(
                    "magnet_sample_last_peak_bytes",
                    &[l[0], l[1], ("direction", "out")],
                    last.out_peak,
                );
                o.family(
                    "magnet_sample_last_busy_buckets",
                    "gauge",
                    None,
                    "Buckets of the last stored run with any ingress traffic.",
                );
                o.sample("magnet_sample_last_busy_buckets", &l, last.in_busy);
                if let Some(ns) = last.bpf_ns_per_packet {
                    o.family(
                        "magnet_sample_last_bpf_ns_per_packet",
                        "gauge",
                        None,
                        "BPF run time of the sampler's programs per packet counted, ns, in the last stored run.",
                    );
                    o.sample("magnet_sample_last_bpf_ns_per_packet", &l, ns);
                }
            }
        }
    }
    o.0.push_str("# EOF\n");
    o.0
}

/// What magnetd costs: each program's run count and run time (the kernel's
/// run-time statistics, on since magnetd started; no series when the kernel
/// refused them, `magnet_bpf_stats_enabled` 0), magnetd's own CPU, both per
/// event (`events`: `magnet_events_total`) and as a share of the machine's
/// CPU time since the start (`machine_ns`: all CPUs, busy and idle).
fn cost(
    o: &mut Out,
    bpf: &Result<Vec<crate::summaries::ProgramTime>, String>,
    events: u64,
    process_ns: u64,
    machine_ns: Option<u64>,
) {
    let per = |n: u64, d: u64| if d == 0 { 0.0 } else { n as f64 / d as f64 };
    o.family(
        "magnet_bpf_stats_enabled",
        "gauge",
        None,
        "1 when the kernel counts the run time of magnetd's BPF programs (BPF_ENABLE_STATS or kernel.bpf_stats_enabled); 0: not measured (magnetd's log says why).",
    );
    o.sample("magnet_bpf_stats_enabled", &[], u8::from(bpf.is_ok()));
    o.family(
        "magnet_daemon_cpu_seconds",
        "counter",
        Some("seconds"),
        "CPU time (user + system) of the magnetd process, all threads.",
    );
    o.sample(
        "magnet_daemon_cpu_seconds_total",
        &[],
        process_ns as f64 / 1e9,
    );
    o.family(
        "magnet_daemon_cpu_ns_per_event",
        "gauge",
        None,
        "magnetd's CPU time divided by magnet_events_total, ns.",
    );
    o.sample(
        "magnet_daemon_cpu_ns_per_event",
        &[],
        per(process_ns, events),
    );
    let total = bpf
        .as_ref()
        .ok()
        .map(|p| p.iter().map(|p| p.ns).sum::<u64>());
    if let Ok(progs) = bpf {
        o.family(
            "magnet_bpf_run_seconds",
            "counter",
            Some("seconds"),
            "Run time of each of magnetd's BPF programs since magnetd started (bpf_prog_info.run_time_ns).",
        );
        for p in progs {
            o.sample(
                "magnet_bpf_run_seconds_total",
                &[("program", &p.name)],
                p.ns as f64 / 1e9,
            );
        }
        o.family(
            "magnet_bpf_runs",
            "counter",
            None,
            "Runs of each of magnetd's BPF programs since magnetd started (bpf_prog_info.run_cnt).",
        );
        for p in progs {
            o.sample("magnet_bpf_runs_total", &[("program", &p.name)], p.runs);
        }
        o.family(
            "magnet_bpf_ns_per_event",
            "gauge",
            None,
            "Run time of all of magnetd's BPF programs divided by magnet_events_total, ns.",
        );
        o.sample(
            "magnet_bpf_ns_per_event",
            &[],
            per(total.unwrap_or(0), events),
        );
    }
    if let Some(m) = machine_ns.filter(|&m| m > 0) {
        o.family(
            "magnet_cpu_share_ratio",
            "gauge",
            Some("ratio"),
            "Share of the machine's CPU time since magnetd started (all CPUs, busy and idle, /proc/stat): part=bpf its BPF programs' run time, part=daemon its process's CPU.",
        );
        if let Some(t) = total {
            o.sample("magnet_cpu_share_ratio", &[("part", "bpf")], per(t, m));
        }
        o.sample(
            "magnet_cpu_share_ratio",
            &[("part", "daemon")],
            per(process_ns, m),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_families_per_program_and_totals() {
        use crate::summaries::ProgramTime;
        let progs = vec![
            ProgramTime {
                name: "app_send".into(),
                runs: 10,
                ns: 3_000,
            },
            ProgramTime {
                name: "drop".into(),
                runs: 0,
                ns: 0,
            },
        ];
        let mut o = Out(String::new());
        cost(&mut o, &Ok(progs), 100, 2_000_000_000, Some(4_000_000_000));
        let t = o.0;
        for want in [
            "magnet_bpf_stats_enabled 1\n",
            "magnet_bpf_run_seconds_total{program=\"app_send\"} 0.000003\n",
            "magnet_bpf_run_seconds_total{program=\"drop\"} 0\n",
            "magnet_bpf_runs_total{program=\"app_send\"} 10\n",
            "magnet_bpf_ns_per_event 30\n",
            "magnet_daemon_cpu_seconds_total 2\n",
            "magnet_daemon_cpu_ns_per_event 20000000\n",
            "magnet_cpu_share_ratio{part=\"bpf\"} 0.00000075\n",
            "magnet_cpu_share_ratio{part=\"daemon\"} 0.5\n",
            "# UNIT magnet_bpf_run_seconds seconds\n",
            "# UNIT magnet_cpu_share_ratio ratio\n",
        ] {
            assert!(t.contains(want), "{want} in\n{t}");
        }
        // OpenMetrics: a family with a unit has a name that ends with it
        // (Prometheus refuses the whole scrape otherwise).
        for l in t.lines().filter_map(|l| l.strip_prefix("# UNIT ")) {
            let (name, unit) = l.split_once(' ').unwrap();
            assert!(name.ends_with(&format!("_{unit}")), "{l}");
        }
        // Not measured: no per-program series, never zeros that look measured.
        let mut o = Out(String::new());
        cost(&mut o, &Err("refused".into()), 100, 1, None);
        assert!(o.0.contains("magnet_bpf_stats_enabled 0\n"));
        assert!(!o.0.contains("magnet_bpf_run_seconds_total"));
        assert!(!o.0.contains("magnet_cpu_share_ratio"));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(labels(&[("a", "x\"y\\z\n")]), "{a=\"x\\\"y\\\\z\\n\"}");
        assert_eq!(labels(&[]), "");
    }
}
