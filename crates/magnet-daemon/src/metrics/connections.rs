//! The per-connection families, only for the connections `[metrics]`
//! selects.

use super::Out;
use crate::daemon::Shared;
use crate::summaries::Record;
use magnet_client::Connection;

/// The connections `[metrics]` selects (by port or container), at most
/// `max_connection_series`, labelled.
pub(super) fn selected_connections(shared: &Shared, records: Vec<Record>) -> Vec<Connection> {
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
    selected
}

/// The per-connection families of the selected connections.
pub(super) fn write_connections(o: &mut Out, selected: &[Connection], app: bool) {
    for (name, kind, unit, help) in CONNECTION_FAMILIES {
        if !app && name.starts_with("magnet_connection_app_") {
            continue;
        }
        o.family(name, kind, unit, help);
        for c in selected {
            write_connection(o, name, c);
        }
    }
}

/// The labels that name a connection in every per-connection family.
pub(super) fn identity(c: &Connection) -> Vec<(&'static str, String)> {
    vec![
        ("cookie", c.cookie.to_string()),
        ("protocol", c.protocol.clone()),
        ("local", c.local.clone()),
        ("remote", c.remote.clone()),
        ("comm", c.comm.clone()),
        ("uid", c.uid.to_string()),
        ("container", c.container.clone().unwrap_or_default()),
    ]
}

/// The series of family `name` for one connection.
fn write_connection(o: &mut Out, name: &str, c: &Connection) {
    let owned = identity(c);
    let base: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
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
        "magnet_connection_app_to_wire_seconds" => {
            write_histogram(o, name, &base, &c.latency.app_to_wire);
        }
        "magnet_connection_wire_to_app_seconds" => {
            write_histogram(o, name, &base, &c.latency.wire_to_app);
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

/// Buckets of the latency histograms: magnetd's log2-µs slots, slot i holding
/// [2^i, 2^(i+1)) µs (slot 0 everything under 2 µs), so bucket i's upper bound
/// is 2^(i+1) µs. Every slot is written, empty or not, so that each `le` is a
/// series from the first scrape on (histogram_quantile needs them all).
const LATENCY_SLOTS: usize = 32;

/// One latency histogram as OpenMetrics writes it: cumulative `_bucket`s up to
/// `+Inf`, and `_count`. No `_sum`: magnetd keeps slots, not the samples' sum.
pub(super) fn write_histogram(o: &mut Out, name: &str, base: &[(&str, &str)], slots: &[u64]) {
    let le = |i: usize| Some((1u64 << (i + 1)) as f64 / 1e6);
    super::layers::write_buckets(o, name, base, slots, LATENCY_SLOTS, &le, None);
}

/// The per-connection families: name, type, unit, help.
const CONNECTION_FAMILIES: [(&str, &str, Option<&str>, &str); 7] = [
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
        "magnet_connection_app_to_wire_seconds",
        "histogram",
        Some("seconds"),
        "From the return of a send call to its last byte leaving through IP (sampled as the API's latency.app_to_wire; buckets of log2 microseconds).",
    ),
    (
        "magnet_connection_wire_to_app_seconds",
        "histogram",
        Some("seconds"),
        "From the arrival of unread data to the recv call that returned it (sampled as the API's latency.wire_to_app; buckets of log2 microseconds).",
    ),
    (
        "magnet_connection_srtt_seconds",
        "gauge",
        Some("seconds"),
        "Smoothed RTT (tcp_sock srtt_us) when read, or at close.",
    ),
];
