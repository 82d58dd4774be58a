//! `magnet top`'s view: what changed between two snapshots of magnetd's
//! connections, one row per connection (or per process, command or cgroup),
//! with each layer's rate, units per call, retransmissions and the latency
//! quantiles of magnetd's histograms.
//!
//! The snapshots are magnetd's own answers ([`magnet_client::Connection`]);
//! nothing here talks to magnetd, so the whole view is tested with made-up
//! snapshots, and the live test compares its totals with a known workload.

use std::collections::BTreeMap;

use magnet_client::Connection;
use serde::Serialize;

mod views;
pub use views::{LayerRate, StageQuantiles, View};

/// What a row stands for (`magnet top --by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Group {
    #[value(name = "conn")]
    Connection,
    Pid,
    Comm,
    Cgroup,
}

/// The column rows are sorted by, largest first (`magnet top --sort`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SortKey {
    /// App bytes per second, both directions.
    Rate,
    Tx,
    Rx,
    Calls,
    Retrans,
    /// The larger p99 of the two latency histograms.
    Latency,
    /// Total app bytes since magnetd first saw it.
    Total,
}

/// Which connections count, as `record`'s filters name them.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    pub pids: Vec<u32>,
    pub comms: Vec<String>,
    /// Either end's port.
    pub port: Option<u16>,
    /// Either end's address, as magnetd writes it (`10.0.0.1`, `fd00::1`).
    pub host: Option<String>,
    pub cgroup: Option<u64>,
    /// Keep closed connections (they stay in magnetd's table a while).
    pub closed: bool,
}

fn addr_of(end: &str) -> &str {
    let host = end.rsplit_once(':').map_or(end, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

fn port_of(end: &str) -> Option<u16> {
    end.rsplit_once(':').and_then(|(_, p)| p.parse().ok())
}

impl Filter {
    pub fn keeps(&self, c: &Connection) -> bool {
        (self.closed || c.open)
            && (self.pids.is_empty() || self.pids.contains(&c.pid))
            && (self.comms.is_empty() || self.comms.contains(&c.comm))
            && self
                .port
                .is_none_or(|p| port_of(&c.local) == Some(p) || port_of(&c.remote) == Some(p))
            && self
                .host
                .as_deref()
                .is_none_or(|h| addr_of(&c.local) == h || addr_of(&c.remote) == h)
            && self.cgroup.is_none_or(|g| c.cgroup_id == g)
    }
}

/// One line of the view: counts over the interval (`*_per_s`) and since magnetd
/// first saw the connection (`total_*`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Row {
    /// The cookie, pid, comm or cgroup id the row stands for.
    pub key: String,
    /// Connections in the row.
    pub connections: usize,
    pub pid: u32,
    pub comm: String,
    pub protocol: String,
    pub local: String,
    pub remote: String,
    pub open: bool,
    /// App layer: bytes and calls per second, each way.
    pub app_tx_bytes_per_s: f64,
    pub app_rx_bytes_per_s: f64,
    pub app_tx_calls_per_s: f64,
    pub app_rx_calls_per_s: f64,
    /// Wire: segments per second each way (`wire.source` says what counted them).
    pub wire_tx_segs_per_s: f64,
    pub wire_rx_segs_per_s: f64,
    /// Segments per app call over the interval (TCP's coalescing or splitting).
    pub tx_segs_per_call: Option<f64>,
    pub rx_segs_per_call: Option<f64>,
    pub retransmits: u64,
    pub drops: u64,
    pub srtt_us: u32,
    pub cwnd: u32,
    /// Quantiles of magnetd's latency histograms since the connection began
    /// (log2 µs buckets: each value is its bucket's upper bound, so it is
    /// exact to within one bucket); `None` with no sample.
    pub app_to_wire_p50_us: Option<u64>,
    pub app_to_wire_p99_us: Option<u64>,
    pub wire_to_app_p50_us: Option<u64>,
    pub wire_to_app_p99_us: Option<u64>,
    pub total_tx_bytes: u64,
    pub total_rx_bytes: u64,
    pub total_tx_calls: u64,
    pub total_rx_calls: u64,
    pub wire_source: String,
    /// The live layer table over the interval (`--view layers`).
    pub layers: Vec<LayerRate>,
    /// How the send path is timed: `tx_timestamps`, `sampled` or `off`
    /// (comma-separated when a row's connections differ).
    pub send_method: String,
    /// The send path in stages, since the connections began (`--view stages`).
    pub stages: StageQuantiles,
}

/// The `q` quantile (0..=1) of a log2-µs histogram (`counts[i]`: samples in
/// [2^i, 2^(i+1)) µs, `counts[0]` below 2 µs), as its bucket's upper bound.
pub fn quantile_us(counts: &[u64], q: f64) -> Option<u64> {
    let n: u64 = counts.iter().sum();
    if n == 0 {
        return None;
    }
    let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
    let mut seen = 0;
    for (i, c) in counts.iter().enumerate() {
        seen += c;
        if seen >= rank {
            return Some(1u64 << (i + 1).min(63));
        }
    }
    None
}

fn add_hist(into: &mut Vec<u64>, h: &[u64]) {
    if into.len() < h.len() {
        into.resize(h.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(h) {
        *a += b;
    }
}

/// What one connection did over the interval: counts in `now` minus `before`
/// (a connection not in `before` is new: all of it).
#[derive(Default)]
struct Acc {
    conns: usize,
    first: Option<Connection>,
    d_tx: u64,
    d_rx: u64,
    d_txc: u64,
    d_rxc: u64,
    d_txs: u64,
    d_rxs: u64,
    retrans: u64,
    drops: u64,
    a2w: Vec<u64>,
    w2a: Vec<u64>,
    tot: [u64; 4],
    open: bool,
    views: views::LayerAcc,
}

impl Acc {
    fn add(&mut self, now: &Connection, before: Option<&Connection>) {
        let z = Connection::default();
        let b = before.unwrap_or(&z);
        let d = |n: u64, o: u64| n.saturating_sub(o);
        self.conns += 1;
        self.d_tx += d(now.app.tx_bytes, b.app.tx_bytes);
        self.d_rx += d(now.app.rx_bytes, b.app.rx_bytes);
        self.d_txc += d(now.app.tx_calls, b.app.tx_calls);
        self.d_rxc += d(now.app.rx_calls, b.app.rx_calls);
        self.d_txs += d(now.wire.tx_segs, b.wire.tx_segs);
        self.d_rxs += d(now.wire.rx_segs, b.wire.rx_segs);
        self.retrans += d(now.retransmits, b.retransmits);
        self.drops += d(now.drops, b.drops);
        add_hist(&mut self.a2w, &now.latency.app_to_wire);
        add_hist(&mut self.w2a, &now.latency.wire_to_app);
        for (t, v) in self.tot.iter_mut().zip([
            now.app.tx_bytes,
            now.app.rx_bytes,
            now.app.tx_calls,
            now.app.rx_calls,
        ]) {
            *t += v;
        }
        self.open |= now.open;
        self.views.add(now, before);
        if self.first.is_none() {
            self.first = Some(now.clone());
        }
    }

    fn row(self, key: String, secs: f64) -> Row {
        let c = self.first.unwrap_or_default();
        let per_s = |v: u64| if secs > 0.0 { v as f64 / secs } else { 0.0 };
        let per_call = |segs: u64, calls: u64| (calls > 0).then(|| segs as f64 / calls as f64);
        let one = self.conns == 1;
        Row {
            key,
            connections: self.conns,
            pid: c.pid,
            comm: c.comm.clone(),
            protocol: c.protocol.clone(),
            local: if one { c.local.clone() } else { String::new() },
            remote: if one { c.remote.clone() } else { String::new() },
            open: self.open,
            app_tx_bytes_per_s: per_s(self.d_tx),
            app_rx_bytes_per_s: per_s(self.d_rx),
            app_tx_calls_per_s: per_s(self.d_txc),
            app_rx_calls_per_s: per_s(self.d_rxc),
            wire_tx_segs_per_s: per_s(self.d_txs),
            wire_rx_segs_per_s: per_s(self.d_rxs),
            tx_segs_per_call: per_call(self.d_txs, self.d_txc),
            rx_segs_per_call: per_call(self.d_rxs, self.d_rxc),
            retransmits: self.retrans,
            drops: self.drops,
            srtt_us: if one { c.tcp.srtt_us } else { 0 },
            cwnd: if one { c.tcp.cwnd } else { 0 },
            app_to_wire_p50_us: quantile_us(&self.a2w, 0.5),
            app_to_wire_p99_us: quantile_us(&self.a2w, 0.99),
            wire_to_app_p50_us: quantile_us(&self.w2a, 0.5),
            wire_to_app_p99_us: quantile_us(&self.w2a, 0.99),
            total_tx_bytes: self.tot[0],
            total_rx_bytes: self.tot[1],
            total_tx_calls: self.tot[2],
            total_rx_calls: self.tot[3],
            wire_source: c.wire.source.clone(),
            layers: self.views.layer_rates(secs),
            send_method: self.views.method(),
            stages: self.views.stage_quantiles(),
        }
    }
}

/// The view's rows: `now` against `before` (the snapshot `secs` earlier),
/// filtered, grouped and sorted (largest first), at most `limit` (0: all).
pub fn rows(
    before: &[Connection],
    now: &[Connection],
    secs: f64,
    group: Group,
    filter: &Filter,
    sort: SortKey,
    limit: usize,
) -> Vec<Row> {
    let prev: BTreeMap<u64, &Connection> = before.iter().map(|c| (c.cookie, c)).collect();
    let mut groups: BTreeMap<String, Acc> = BTreeMap::new();
    for c in now.iter().filter(|c| filter.keeps(c)) {
        let key = match group {
            Group::Connection => c.cookie.to_string(),
            Group::Pid => c.pid.to_string(),
            Group::Comm => c.comm.clone(),
            Group::Cgroup => c
                .container
                .clone()
                .unwrap_or_else(|| c.cgroup_id.to_string()),
        };
        groups
            .entry(key)
            .or_default()
            .add(c, prev.get(&c.cookie).copied());
    }
    let mut out: Vec<Row> = groups.into_iter().map(|(k, a)| a.row(k, secs)).collect();
    let score = |r: &Row| -> f64 {
        match sort {
            SortKey::Rate => r.app_tx_bytes_per_s + r.app_rx_bytes_per_s,
            SortKey::Tx => r.app_tx_bytes_per_s,
            SortKey::Rx => r.app_rx_bytes_per_s,
            SortKey::Calls => r.app_tx_calls_per_s + r.app_rx_calls_per_s,
            SortKey::Retrans => r.retransmits as f64,
            SortKey::Latency => r.app_to_wire_p99_us.max(r.wire_to_app_p99_us).unwrap_or(0) as f64,
            SortKey::Total => (r.total_tx_bytes + r.total_rx_bytes) as f64,
        }
    };
    out.sort_by(|a, b| {
        score(b)
            .total_cmp(&score(a))
            .then_with(|| a.key.cmp(&b.key))
    });
    if limit > 0 {
        out.truncate(limit);
    }
    out
}

fn rate(bytes_per_s: f64) -> String {
    magnet_common::units::bps(Some(bytes_per_s * 8.0))
}

fn us(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), |v| magnet_common::units::dur(v as f64 * 1e3))
}

fn ratio(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2}"))
}

/// The table as `magnet top` prints it: a header, then one line per row;
/// `width` cuts each line (0: no cut).
pub fn render(rows: &[Row], group: Group, view: View, width: usize) -> String {
    let who = match group {
        Group::Connection => "CONNECTION",
        Group::Pid => "PID",
        Group::Comm => "COMM",
        Group::Cgroup => "CGROUP",
    };
    let mut s = format!("{who:<44} {:>7} {:<15}", "PID", "COMM");
    s.push_str(&match view {
        View::Main => format!(
            " {:>10} {:>10} {:>8} {:>8} {:>6} {:>6} {:>5} {:>9} {:>9} {:>9} {:>9} {:>7}",
            "APP TX",
            "APP RX",
            "CALLS/s",
            "SEGS/s",
            "SEG/TC",
            "SEG/RC",
            "RETR",
            "A>W p50",
            "A>W p99",
            "W>A p50",
            "W>A p99",
            "SRTT"
        ),
        View::Layers => views::layers_header(),
        View::Stages => views::stages_header(),
    });
    s.push('\n');
    for r in rows {
        let name = match group {
            Group::Connection => format!(
                "{} {} > {}{}",
                r.protocol,
                r.local,
                r.remote,
                if r.open { "" } else { " (closed)" }
            ),
            _ => format!("{} ({} conn)", r.key, r.connections),
        };
        let mut line = format!(
            "{:<44} {:>7} {:<15}",
            magnet_common::text::escape(&name),
            r.pid,
            magnet_common::text::escape(&r.comm),
        );
        line.push_str(&match view {
            View::Main => main_cells(r),
            View::Layers => views::layers_cells(&r.layers),
            View::Stages => views::stages_cells(&r.send_method, &r.stages),
        });
        if width > 0 && line.chars().count() > width {
            s.extend(line.chars().take(width));
        } else {
            s.push_str(&line);
        }
        s.push('\n');
    }
    s
}

/// The main view's cells after a row's name, PID and COMM.
fn main_cells(r: &Row) -> String {
    format!(
        " {:>10} {:>10} {:>8.0} {:>8.0} {:>6} {:>6} {:>5} {:>9} {:>9} {:>9} {:>9} {:>7}",
        rate(r.app_tx_bytes_per_s),
        rate(r.app_rx_bytes_per_s),
        r.app_tx_calls_per_s + r.app_rx_calls_per_s,
        r.wire_tx_segs_per_s + r.wire_rx_segs_per_s,
        ratio(r.tx_segs_per_call),
        ratio(r.rx_segs_per_call),
        r.retransmits,
        us(r.app_to_wire_p50_us),
        us(r.app_to_wire_p99_us),
        us(r.wire_to_app_p50_us),
        us(r.wire_to_app_p99_us),
        if r.srtt_us > 0 {
            magnet_common::units::dur(r.srtt_us as f64 * 1e3)
        } else {
            "-".into()
        },
    )
}

/// The latency histograms' method, as magnetd names it, for the header.
pub fn latency_mode(now: &[Connection]) -> String {
    let modes: std::collections::BTreeSet<&str> = now
        .iter()
        .map(|c| c.latency.mode.as_str())
        .filter(|m| !m.is_empty())
        .collect();
    modes.into_iter().collect::<Vec<_>>().join(",")
}

/// What the stage columns (`--view stages`) sample, from each connection's
/// `stage_coverage`: `"always"`, or `"sampled N%"` with the median share of
/// the connections' lives the stage programs were attached (magnetd's
/// `stage_hooks`); empty without connections.
pub fn stage_mode(now: &[Connection]) -> String {
    let mut cov: Vec<f64> = now.iter().map(|c| c.latency.stage_coverage).collect();
    if cov.is_empty() {
        return String::new();
    }
    if cov.iter().all(|&c| c >= 1.0) {
        return "always".into();
    }
    cov.sort_by(f64::total_cmp);
    format!("sampled {:.0}%", cov[cov.len() / 2] * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_mode_is_the_median_coverage_or_always() {
        let with = |cov: &[f64]| {
            let conns: Vec<Connection> = cov
                .iter()
                .map(|&c| {
                    let mut x = Connection::default();
                    x.latency.stage_coverage = c;
                    x
                })
                .collect();
            stage_mode(&conns)
        };
        assert_eq!(with(&[]), "");
        assert_eq!(with(&[1.0, 1.0]), "always");
        assert_eq!(with(&[0.05, 0.06, 1.0]), "sampled 6%");
        assert_eq!(with(&[0.049]), "sampled 5%");
    }

    fn conn(cookie: u64, pid: u32, comm: &str, tx: u64, txc: u64, segs: u64) -> Connection {
        let mut c = Connection {
            cookie,
            pid,
            comm: comm.into(),
            protocol: "tcp".into(),
            local: "10.0.0.1:5000".into(),
            remote: format!("10.0.0.2:{}", 40000 + cookie),
            open: true,
            ..Default::default()
        };
        c.app.tx_bytes = tx;
        c.app.tx_calls = txc;
        c.wire.tx_segs = segs;
        c
    }

    #[test]
    fn rates_are_the_difference_over_the_interval() {
        let before = [conn(1, 10, "a", 1000, 10, 20)];
        let now = [conn(1, 10, "a", 3000, 30, 60), conn(2, 11, "b", 500, 5, 5)];
        let r = rows(
            &before,
            &now,
            2.0,
            Group::Connection,
            &Filter::default(),
            SortKey::Tx,
            0,
        );
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].key, "1");
        assert_eq!(r[0].app_tx_bytes_per_s, 1000.0);
        assert_eq!(r[0].app_tx_calls_per_s, 10.0);
        assert_eq!(r[0].tx_segs_per_call, Some(2.0));
        assert_eq!(r[0].total_tx_bytes, 3000);
        // new since the last snapshot: all of it
        assert_eq!(r[1].app_tx_bytes_per_s, 250.0);
    }

    #[test]
    fn grouping_sums_and_filters_keep_what_they_name() {
        let now = [
            conn(1, 10, "a", 100, 1, 1),
            conn(2, 10, "a", 200, 1, 1),
            conn(3, 12, "b", 50, 1, 1),
        ];
        let r = rows(
            &[],
            &now,
            1.0,
            Group::Pid,
            &Filter::default(),
            SortKey::Total,
            0,
        );
        assert_eq!(
            (r[0].key.as_str(), r[0].connections, r[0].total_tx_bytes),
            ("10", 2, 300)
        );
        let f = Filter {
            comms: vec!["b".into()],
            ..Default::default()
        };
        let r = rows(&[], &now, 1.0, Group::Connection, &f, SortKey::Rate, 0);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].key, "3");
        let f = Filter {
            port: Some(40002),
            ..Default::default()
        };
        assert_eq!(
            rows(&[], &now, 1.0, Group::Connection, &f, SortKey::Rate, 0)[0].key,
            "2"
        );
        let f = Filter {
            host: Some("10.0.0.9".into()),
            ..Default::default()
        };
        assert!(rows(&[], &now, 1.0, Group::Connection, &f, SortKey::Rate, 0).is_empty());
        let mut closed = conn(4, 13, "c", 1, 1, 1);
        closed.open = false;
        assert!(rows(
            &[],
            &[closed.clone()],
            1.0,
            Group::Connection,
            &Filter::default(),
            SortKey::Rate,
            0
        )
        .is_empty());
        let f = Filter {
            closed: true,
            ..Default::default()
        };
        assert_eq!(
            rows(&[], &[closed], 1.0, Group::Connection, &f, SortKey::Rate, 0).len(),
            1
        );
    }

    #[test]
    fn quantiles_are_bucket_upper_bounds() {
        assert_eq!(quantile_us(&[], 0.5), None);
        assert_eq!(quantile_us(&[0, 0, 0], 0.5), None);
        // 10 samples below 2 us, 90 in [8, 16) us
        let h = [10, 0, 0, 90];
        assert_eq!(quantile_us(&h, 0.05), Some(2));
        assert_eq!(quantile_us(&h, 0.5), Some(16));
        assert_eq!(quantile_us(&h, 0.99), Some(16));
    }

    #[test]
    fn hostile_names_are_escaped_in_the_table() {
        let now = [conn(1, 10, "a\x1b[2Jb", 1, 1, 1)];
        let r = rows(
            &[],
            &now,
            1.0,
            Group::Connection,
            &Filter::default(),
            SortKey::Rate,
            0,
        );
        let t = render(&r, Group::Connection, View::Main, 0);
        assert!(!t.contains('\x1b'), "{t:?}");
        assert_eq!(t.lines().count(), 2);
    }
}
