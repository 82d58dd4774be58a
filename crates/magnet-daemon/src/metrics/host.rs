//! The host's families: applications, the wire, interfaces, the per-packet
//! hooks, TCP and drops, magnetd's health, and the sampler under it.

use super::cost::cost;
use super::Out;
use crate::config::PacketHooks;
use crate::daemon::Shared;
use crate::summaries::Record;
use magnet_client::Host;

/// What applications sent and received (sock_send_length/sock_recv_length).
pub(super) fn write_app(o: &mut Out, host: &Host) {
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

/// IP packets of all sockets, from the per-packet programs.
pub(super) fn write_wire(o: &mut Out, host: &Host) {
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

/// The interfaces' own counters (/proc/net/dev of magnetd's netns).
pub(super) fn write_interfaces(o: &mut Out, host: &Host) {
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
}

/// When the per-packet programs ran: what the latency histograms are a
/// sample of.
pub(super) fn write_packet_hooks(o: &mut Out, shared: &Shared, host: &Host, hooks: PacketHooks) {
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
    o.family(
        "magnet_stage_hooks_coverage_ratio",
        "gauge",
        None,
        "Fraction of the time since magnetd started during which the stage programs (the start of each send call, TCP's receive of each data segment) were attached: the send and receive stage histograms sample this fraction (1 with stage_hooks always).",
    );
    o.sample(
        "magnet_stage_hooks_coverage_ratio",
        &[("mode", host.health.stage_hooks.as_str())],
        format!("{:.6}", host.health.stage_coverage),
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
}

/// TCP retransmissions, failed reads of the sockets' counters, and drops by
/// reason.
pub(super) fn write_tcp_and_drops(o: &mut Out, shared: &Shared, host: &Host) {
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
}

/// The connections held, magnetd's own events and cost, and its maps.
pub(super) fn write_health(o: &mut Out, shared: &Shared, host: &Host, records: &[Record]) {
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
        o,
        &shared.reader.bpf_time(),
        shared.reader.bpf_stats_on_ratio(),
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
}

/// The sampler under the daemon: runs stored, the last run's totals.
pub(super) fn write_sampler(o: &mut Out, shared: &Shared) {
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
}
