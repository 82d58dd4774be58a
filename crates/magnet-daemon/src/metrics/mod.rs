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
//! | `magnet_stage_hooks_coverage_ratio` | mode | when the stage programs ran: what the send and receive stage histograms are a sample of |
//! | `magnet_tcp_retransmits_total` | — | tcp_retransmit_skb |
//! | `magnet_tcp_counter_read_failures_total` | — | failed reads of the TCP sockets' own counters |
//! | `magnet_drops_total` | reason | kfree_skb by reason (at most 256 reasons) |
//! | `magnet_connections` | state | tracked connections (open / closed, not yet reaped) |
//! | `magnet_events_total`, `magnet_lost_events_total`, `magnet_connection_map_full_total`, `magnet_connection_map_entries`, `magnet_connection_map_capacity`, `magnet_connections_created_total` | — | magnetd's health |
//! | `magnet_connection_*` | cookie, protocol, local, remote, comm, uid, container | per connection, **only** for connections selected by `[metrics]` (ports, containers), at most `max_connection_series` connections |
//! | `magnet_connection_app_to_wire_seconds`, `magnet_connection_wire_to_app_seconds` | the same, `le` | the latency histograms of those connections (log2 µs buckets, `histogram_quantile` reads them) |
//! | `magnet_connection_layer_units_total`, `magnet_connection_layer_bytes_total` | the same, layer, direction | the live layer table of those connections (layer `app`, `tcp`, `ip`; direction `out`, `in`) |
//! | `magnet_connection_layer_size_bytes`, `magnet_connection_layer_gap_seconds` | the same, `le` | its unit sizes and gaps between units (`app`, `ip`): histograms with `_sum` and `_count`, log2 buckets with 4 sub-buckets (96 `le` each) |
//! | `magnet_cgroup_layer_units_total`, `magnet_cgroup_layer_bytes_total`, `magnet_cgroup_layer_size_bytes`, `magnet_cgroup_layer_gap_seconds` | cgroup, container, layer, direction (`le`) | the same per cgroup v2 id (the last caller's), live connections plus those reaped since magnetd started; at most 256 cgroups |
//! | `magnet_connection_send_latency_method` | the same, `method` (`tx_timestamps`, `sampled`, `off`) | 1: how that connection's send path is timed |
//! | `magnet_connection_send_stage_seconds` | the same, `stage` (`to_qdisc`, `qdisc_to_device`, `device_to_ack`, `send_to_ack`), `le` | the send path of one send call in `send_stages_every` in stages, from the kernel's TX timestamp callbacks (connections with method `tx_timestamps`) |
//! | `magnet_connection_receive_stage_seconds` | the same, `stage` (`device_to_queue`, `queue_to_read`, `device_to_read`), `le` | a sample of the connection's TCP data packets (one in `receive_stages_every` per CPU) through the receive path: the kernel's receive stamp, TCP queueing it, the read that returned it |
//! | `magnet_cgroup_receive_stage_seconds` | cgroup, container, stage, `le` | the receive stages summed per cgroup (the last caller's), reaped connections included; at most 256 cgroups |
//! | `magnet_cgroup_send_stage_seconds` | cgroup, container, stage, `le` | the same summed per cgroup (the last caller's), reaped connections included; at most 256 cgroups |
//! | `magnet_sample_runs_total`, `magnet_sample_last_*` | interface, interval | the sampler under the daemon: runs stored, last run's totals and peaks, its BPF ns per packet |
//! | `magnet_bpf_stats_enabled`, `magnet_bpf_stats_on_ratio`, `magnet_bpf_run_seconds_total`, `magnet_bpf_runs_total`, `magnet_bpf_ns_per_event`, `magnet_daemon_cpu_seconds_total`, `magnet_daemon_cpu_ns_per_event`, `magnet_cpu_share_ratio` | program (per-program families), part (`bpf`, `daemon`) | what magnetd costs: its programs' run time and runs (the kernel's run-time statistics), its process's CPU, per event and as a share of the machine's CPU since it started |
//!
//! Cardinality: host families have at most 2 series each (direction), drops
//! at most 256, interfaces at most 2 × 256; per-connection families at most
//! `max_connection_series` × 2, the latency histograms 34 series per connection each
//! (the send stages 4 × 34), the layer histograms 98 series per layer and direction
//! (2 layers × 2 directions × 2 histograms per connection or cgroup: about 800 series each).

use std::fmt::Write;

use crate::config::PacketHooks;
use crate::daemon::Shared;

mod connections;
mod cost;
mod host;
mod layers;
mod stages;

use connections::{selected_connections, write_connections};
use host::{
    write_app, write_health, write_interfaces, write_packet_hooks, write_sampler,
    write_tcp_and_drops, write_wire,
};

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

/// The whole exposition, `# EOF` included: the families in the order of the
/// table above, each written by its own function.
pub fn render(shared: &Shared) -> String {
    let host = shared.host();
    let mut o = Out(String::new());
    // A part left out (the kernel refused its hooks: /health says which) has
    // no series, not zeros.
    let app = shared.reader.has_part("app");
    if app {
        write_app(&mut o, &host);
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
        write_wire(&mut o, &host);
    }
    write_interfaces(&mut o, &host);
    write_packet_hooks(&mut o, shared, &host, hooks);
    write_tcp_and_drops(&mut o, shared, &host);
    let records = shared.reader.all();
    write_health(&mut o, shared, &host, &records);
    let labelled: Vec<_> = records
        .iter()
        .map(|r| shared.label(r.conn.clone()))
        .collect();
    let cgroups = shared.reader.cgroup_layers(&labelled);
    let cgroup_stages = shared.reader.cgroup_stages(records.iter().map(|r| &r.conn));
    let cgroup_receive = shared
        .reader
        .cgroup_receive(records.iter().map(|r| &r.conn));
    let selected = selected_connections(shared, records);
    write_connections(&mut o, &selected, app);
    layers::write_connection_layers(&mut o, &selected, &connections::identity);
    layers::write_cgroup_layers(&mut o, &cgroups);
    stages::write_stages(&mut o, &selected);
    stages::write_receive_stages(&mut o, &selected);
    stages::write_cgroup_stages(&mut o, shared, &cgroup_stages);
    stages::write_cgroup_receive(&mut o, shared, &cgroup_receive);
    write_sampler(&mut o, shared);
    o.0.push_str("# EOF\n");
    o.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(labels(&[("a", "x\"y\\z\n")]), "{a=\"x\\\"y\\\\z\\n\"}");
        assert_eq!(labels(&[]), "");
    }
}
