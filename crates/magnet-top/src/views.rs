//! The two views beside the main one (`magnet top --view`): the live layer
//! table (each layer's units and bytes per second, units per app call) and
//! the send path in stages (quantiles of the TX-timestamp histograms).

use std::collections::BTreeMap;

use magnet_client::{Connection, ReceiveStages, SendStages};
use serde::Serialize;

use crate::{quantile_us, rate, us};

/// What `magnet top` shows (`--view`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum View {
    /// App rates, segments per call, retransmissions, the sampled latency.
    Main,
    /// The layer table: units and bytes per second per layer, units per call.
    Layers,
    /// The send path in stages (TX timestamp callbacks, Linux 6.15+).
    Stages,
}

/// One layer in one direction over the interval.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct LayerRate {
    /// `app`, `tcp` or `ip`.
    pub layer: String,
    /// `out` or `in`.
    pub dir: String,
    pub units_per_s: f64,
    pub bytes_per_s: f64,
    /// This layer's units per app call the same way (none for app, or
    /// without calls in the interval).
    pub units_per_call: Option<f64>,
}

/// Stage quantiles (µs, each its log2 bucket's upper bound) of the send
/// path since the connection began, with the send calls stamped.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct StageQuantiles {
    pub stamped_sends: u64,
    pub to_qdisc_p50_us: Option<u64>,
    pub to_qdisc_p99_us: Option<u64>,
    pub qdisc_to_device_p50_us: Option<u64>,
    pub qdisc_to_device_p99_us: Option<u64>,
    pub device_to_ack_p50_us: Option<u64>,
    pub device_to_ack_p99_us: Option<u64>,
    pub send_to_ack_p50_us: Option<u64>,
    pub send_to_ack_p99_us: Option<u64>,
    /// The receive path's sampled data packets whose read was seen.
    pub received_packets: u64,
    pub device_to_queue_p50_us: Option<u64>,
    pub device_to_queue_p99_us: Option<u64>,
    pub queue_to_read_p50_us: Option<u64>,
    pub queue_to_read_p99_us: Option<u64>,
    pub device_to_read_p50_us: Option<u64>,
    pub device_to_read_p99_us: Option<u64>,
}

/// The layer and stage sums of a row's connections.
#[derive(Default)]
pub(crate) struct LayerAcc {
    /// (layer, dir) → (units, bytes) over the interval.
    deltas: BTreeMap<(String, String), (u64, u64)>,
    stages: SendStages,
    receive: ReceiveStages,
    methods: std::collections::BTreeSet<String>,
}

fn add_hist(into: &mut Vec<u64>, h: &[u64]) {
    if into.len() < h.len() {
        into.resize(h.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(h) {
        *a += b;
    }
}

impl LayerAcc {
    pub(crate) fn add(&mut self, now: &Connection, before: Option<&Connection>) {
        for r in &now.layers {
            let old = before
                .and_then(|b| {
                    b.layers
                        .iter()
                        .find(|o| o.layer == r.layer && o.dir == r.dir)
                })
                .map_or((0, 0), |o| (o.units, o.bytes));
            let e = self
                .deltas
                .entry((r.layer.clone(), r.dir.clone()))
                .or_default();
            e.0 += r.units.saturating_sub(old.0);
            e.1 += r.bytes.saturating_sub(old.1);
        }
        if let Some(s) = &now.latency.stages {
            self.stages.sends += s.sends;
            self.stages.unmatched += s.unmatched;
            add_hist(&mut self.stages.to_qdisc, &s.to_qdisc);
            add_hist(&mut self.stages.qdisc_to_device, &s.qdisc_to_device);
            add_hist(&mut self.stages.device_to_ack, &s.device_to_ack);
            add_hist(&mut self.stages.send_to_ack, &s.send_to_ack);
        }
        if let Some(r) = &now.latency.receive {
            self.receive.packets += r.packets;
            add_hist(&mut self.receive.device_to_queue, &r.device_to_queue);
            add_hist(&mut self.receive.queue_to_read, &r.queue_to_read);
            add_hist(&mut self.receive.device_to_read, &r.device_to_read);
        }
        if !now.latency.method.is_empty() {
            self.methods.insert(now.latency.method.clone());
        }
    }

    /// Per layer and direction, in the table's order (app, tcp, ip; out, in).
    pub(crate) fn layer_rates(&self, secs: f64) -> Vec<LayerRate> {
        let per_s = |v: u64| if secs > 0.0 { v as f64 / secs } else { 0.0 };
        let mut out = Vec::new();
        for layer in ["app", "tcp", "ip"] {
            for dir in ["out", "in"] {
                let Some(&(units, bytes)) = self.deltas.get(&(layer.into(), dir.into())) else {
                    continue;
                };
                let calls = self
                    .deltas
                    .get(&("app".into(), dir.into()))
                    .map_or(0, |c| c.0);
                out.push(LayerRate {
                    layer: layer.into(),
                    dir: dir.into(),
                    units_per_s: per_s(units),
                    bytes_per_s: per_s(bytes),
                    units_per_call: (layer != "app" && calls > 0)
                        .then(|| units as f64 / calls as f64),
                });
            }
        }
        out
    }

    pub(crate) fn stage_quantiles(&self) -> StageQuantiles {
        let s = &self.stages;
        StageQuantiles {
            stamped_sends: s.sends,
            to_qdisc_p50_us: quantile_us(&s.to_qdisc, 0.5),
            to_qdisc_p99_us: quantile_us(&s.to_qdisc, 0.99),
            qdisc_to_device_p50_us: quantile_us(&s.qdisc_to_device, 0.5),
            qdisc_to_device_p99_us: quantile_us(&s.qdisc_to_device, 0.99),
            device_to_ack_p50_us: quantile_us(&s.device_to_ack, 0.5),
            device_to_ack_p99_us: quantile_us(&s.device_to_ack, 0.99),
            send_to_ack_p50_us: quantile_us(&s.send_to_ack, 0.5),
            send_to_ack_p99_us: quantile_us(&s.send_to_ack, 0.99),
            received_packets: self.receive.packets,
            device_to_queue_p50_us: quantile_us(&self.receive.device_to_queue, 0.5),
            device_to_queue_p99_us: quantile_us(&self.receive.device_to_queue, 0.99),
            queue_to_read_p50_us: quantile_us(&self.receive.queue_to_read, 0.5),
            queue_to_read_p99_us: quantile_us(&self.receive.queue_to_read, 0.99),
            device_to_read_p50_us: quantile_us(&self.receive.device_to_read, 0.5),
            device_to_read_p99_us: quantile_us(&self.receive.device_to_read, 0.99),
        }
    }

    /// The send-path methods of the row's connections (`tx_timestamps`,
    /// `sampled`, `off`), comma-separated.
    pub(crate) fn method(&self) -> String {
        self.methods.iter().cloned().collect::<Vec<_>>().join(",")
    }
}

fn ratio(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2}"))
}

/// The layer view's header and one row's cells after its name, PID and COMM.
pub(crate) fn layers_header() -> String {
    let mut h = String::new();
    for (l, d) in [
        ("APP", "OUT"),
        ("TCP", "OUT"),
        ("IP", "OUT"),
        ("APP", "IN"),
        ("TCP", "IN"),
        ("IP", "IN"),
    ] {
        let name = format!("{l} {d}");
        h.push_str(&format!(" {:>10} {:>8}", name, "UNITS/s"));
        if l != "APP" {
            h.push_str(&format!(" {:>6}", "/CALL"));
        }
    }
    h
}

pub(crate) fn layers_cells(rates: &[LayerRate]) -> String {
    let mut s = String::new();
    for (l, d) in [
        ("app", "out"),
        ("tcp", "out"),
        ("ip", "out"),
        ("app", "in"),
        ("tcp", "in"),
        ("ip", "in"),
    ] {
        let r = rates.iter().find(|r| r.layer == l && r.dir == d);
        let (bytes, units) = r.map_or(("-".to_string(), "-".to_string()), |r| {
            (rate(r.bytes_per_s), format!("{:.0}", r.units_per_s))
        });
        s.push_str(&format!(" {bytes:>10} {units:>8}"));
        if l != "app" {
            s.push_str(&format!(" {:>6}", ratio(r.and_then(|r| r.units_per_call))));
        }
    }
    s
}

pub(crate) fn stages_header() -> String {
    format!(
        " {:<13} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "METHOD",
        "SENDS",
        "Q p99",
        "DEV p99",
        "ACK p99",
        "S>A p50",
        "S>A p99",
        "RX PKTS",
        "D>Q p99",
        "Q>R p99",
        "D>R p50",
        "D>R p99"
    )
}

pub(crate) fn stages_cells(method: &str, q: &StageQuantiles) -> String {
    format!(
        " {:<13} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9}",
        if method.is_empty() { "-" } else { method },
        q.stamped_sends,
        us(q.to_qdisc_p99_us),
        us(q.qdisc_to_device_p99_us),
        us(q.device_to_ack_p99_us),
        us(q.send_to_ack_p50_us),
        us(q.send_to_ack_p99_us),
        q.received_packets,
        us(q.device_to_queue_p99_us),
        us(q.queue_to_read_p99_us),
        us(q.device_to_read_p50_us),
        us(q.device_to_read_p99_us),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use magnet_client::LayerRow;

    fn with_layers(rows: &[(&str, &str, u64, u64)]) -> Connection {
        Connection {
            layers: rows
                .iter()
                .map(|&(l, d, u, b)| LayerRow {
                    layer: l.into(),
                    dir: d.into(),
                    units: u,
                    bytes: b,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn layer_rates_are_the_interval_difference_and_units_per_call_follow_the_direction() {
        let before = with_layers(&[("app", "out", 10, 10_000), ("ip", "out", 30, 11_000)]);
        let now = with_layers(&[
            ("app", "out", 30, 30_000),
            ("ip", "out", 90, 33_000),
            ("ip", "in", 40, 2_000),
        ]);
        let mut acc = LayerAcc::default();
        acc.add(&now, Some(&before));
        let r = acc.layer_rates(2.0);
        let get = |l: &str, d: &str| r.iter().find(|x| x.layer == l && x.dir == d).unwrap();
        assert_eq!(get("app", "out").units_per_s, 10.0);
        assert_eq!(get("app", "out").bytes_per_s, 10_000.0);
        assert_eq!(get("app", "out").units_per_call, None);
        assert_eq!(get("ip", "out").units_per_s, 30.0);
        assert_eq!(get("ip", "out").units_per_call, Some(3.0));
        // no app calls in: no ratio, the rate still shows
        assert_eq!(get("ip", "in").units_per_call, None);
        assert_eq!(get("ip", "in").units_per_s, 20.0);
        assert!(r.iter().all(|x| x.layer != "tcp"));
    }

    #[test]
    fn stage_quantiles_sum_the_rows_connections() {
        let mut a = Connection::default();
        a.latency.method = "tx_timestamps".into();
        a.latency.stages = Some(SendStages {
            sends: 3,
            to_qdisc: vec![3],
            send_to_ack: vec![0, 0, 0, 3],
            ..Default::default()
        });
        let mut b = a.clone();
        b.latency.stages.as_mut().unwrap().to_qdisc = vec![0, 0, 0, 0, 0, 0, 0, 97];
        b.latency.stages.as_mut().unwrap().sends = 97;
        let mut acc = LayerAcc::default();
        acc.add(&a, None);
        acc.add(&b, None);
        let q = acc.stage_quantiles();
        assert_eq!(q.stamped_sends, 100);
        assert_eq!(q.to_qdisc_p50_us, Some(256));
        assert_eq!(q.send_to_ack_p99_us, Some(16));
        assert_eq!(q.qdisc_to_device_p50_us, None);
        assert_eq!(acc.method(), "tx_timestamps");
        assert_eq!(q.received_packets, 0);
        assert_eq!(q.device_to_read_p99_us, None);
        let mut c = Connection::default();
        c.latency.receive = Some(ReceiveStages {
            packets: 4,
            device_to_read: vec![0, 4],
            queue_to_read: vec![4],
            ..Default::default()
        });
        acc.add(&c, None);
        let q = acc.stage_quantiles();
        assert_eq!(q.received_packets, 4);
        assert_eq!(q.device_to_read_p50_us, Some(4));
        assert_eq!(q.queue_to_read_p99_us, Some(2));
    }
}
