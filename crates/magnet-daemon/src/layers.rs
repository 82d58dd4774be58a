//! The live layer table (`bpf/layers.h`, `bpf/layers.bpf.c`): per
//! connection, per layer and direction, units, bytes and histograms of
//! sizes and gaps, read from the `layers` map (an array: a connection's
//! table is in the slot of its record); and the same per cgroup.
//!
//! Layers: `app` (one unit per app call that moved bytes: the app part's
//! hooks), `ip` (one per IP packet: the cgroup_skb programs, only with
//! `packet_hooks = "always"`) and `tcp` (units and bytes only: the socket's
//! own data_segs and bytes counters, as the `wire` counters read them).
//! magnetd has no hook for `dev` (frames at the device): that row needs a
//! recording (`magnet record` + `magnet analyze`).
//!
//! Per cgroup: summed in user space, from the live connections' tables plus
//! those of connections magnetd reaped since it started (folded in at the
//! reap), so the kernel keeps one table per connection and nothing per
//! cgroup: a cgroup's table needs no lookup by cgroup on the hot path, and a
//! connection is attributed to the cgroup of its last caller, which is known
//! only at reading time.

use std::collections::BTreeMap;
use std::sync::Mutex;

use libbpf_rs::{MapCore, MapFlags, MapHandle};
use magnet_client::layers::LAYER_BUCKETS;
use magnet_client::{CgroupLayers, Connection, LayerRow};

use crate::skel::types;

/// The `layers` map and the tables of reaped connections, per cgroup.
pub struct LayerTables {
    map: MapHandle,
    reaped: Mutex<BTreeMap<u64, Vec<LayerRow>>>,
}

/// Most cgroups whose reaped connections are kept apart (about 3 KiB each).
const MAX_REAPED_CGROUPS: usize = 4096;

/// (name, unit) of the kernel's layers, in `struct mg_layers` order.
const KERNEL_LAYERS: [(&str, &str); 2] = [("app", "call"), ("ip", "packet")];
const DIRS: [&str; 2] = ["out", "in"];

fn trimmed(h: &[u32]) -> Vec<u64> {
    let n = h.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    h[..n].iter().map(|&c| u64::from(c)).collect()
}

/// The rows of one `struct mg_layers` (layers that saw units only), and
/// whether the peer's FIN arrived (TCP).
pub fn decode(raw: &[u8]) -> (Vec<LayerRow>, bool) {
    if raw.len() < std::mem::size_of::<types::mg_layers>() {
        return (Vec::new(), false);
    }
    // SAFETY: length checked; mg_layers is plain old data generated from
    // the BPF object's BTF, valid for any bit pattern.
    let t: types::mg_layers = unsafe { std::ptr::read_unaligned(raw.as_ptr().cast()) };
    let mut rows = Vec::new();
    for (li, (layer, unit)) in KERNEL_LAYERS.iter().enumerate() {
        for (di, dir) in DIRS.iter().enumerate() {
            let d = &t.d[li][di];
            if d.units == 0 {
                continue;
            }
            debug_assert_eq!(d.size_hist.len(), LAYER_BUCKETS);
            rows.push(LayerRow {
                layer: layer.to_string(),
                dir: dir.to_string(),
                unit: unit.to_string(),
                units: d.units,
                bytes: d.bytes,
                size_hist: trimmed(&d.size_hist),
                gap_hist: trimmed(&d.gap_hist),
                span_s: d.last_ns.saturating_sub(d.first_ns) as f64 / 1e9,
            });
        }
    }
    (rows, t.fin_in != 0)
}

/// The tcp rows of a connection whose wire counters are the socket's own
/// (units: data segments; bytes: payload bytes sent, retransmits included,
/// and received, without the FIN's sequence number, which bytes_received
/// counts once `fin_in`).
fn tcp_rows(c: &Connection, fin_in: bool) -> Vec<LayerRow> {
    if !matches!(c.wire.source.as_str(), "tcp_sock" | "tcp_info") {
        return Vec::new();
    }
    let w = &c.wire;
    [
        ("out", w.tx_data_segs, w.tx_bytes),
        (
            "in",
            w.rx_data_segs,
            w.rx_bytes.saturating_sub(u64::from(fin_in)),
        ),
    ]
    .into_iter()
    .filter(|&(_, units, _)| units > 0)
    .map(|(dir, units, bytes)| LayerRow {
        layer: "tcp".into(),
        dir: dir.into(),
        unit: "data segment".into(),
        units,
        bytes,
        ..LayerRow::default()
    })
    .collect()
}

/// Rows in the order `magnet analyze` prints them: app, tcp, ip; out, in.
fn ordered(mut rows: Vec<LayerRow>) -> Vec<LayerRow> {
    let rank = |r: &LayerRow| {
        let l = ["app", "tcp", "ip"].iter().position(|&n| n == r.layer);
        (l.unwrap_or(9), r.dir != "out")
    };
    rows.sort_by_key(rank);
    rows
}

impl LayerTables {
    pub(crate) fn new(map: MapHandle) -> LayerTables {
        LayerTables {
            map,
            reaped: Mutex::new(BTreeMap::new()),
        }
    }

    /// Every row of `c`'s table (in `slot`): the kernel's layers and tcp.
    fn rows(&self, c: &Connection, slot: u32) -> Vec<LayerRow> {
        let (mut rows, fin_in) = match self.map.lookup(&slot.to_ne_bytes(), MapFlags::ANY) {
            Ok(Some(raw)) => decode(&raw),
            _ => (Vec::new(), false),
        };
        rows.extend(tcp_rows(c, fin_in));
        ordered(rows)
    }

    /// Fills `c.layers` from its table in `slot` (after its wire counters
    /// are final).
    pub fn fill(&self, c: &mut Connection, slot: u32) {
        c.layers = self.rows(c, slot);
    }

    /// A record is being reaped: its table (in `slot`) joins its cgroup's
    /// reaped total and is cleared for the slot's next record.
    pub fn reap(&self, c: &Connection, slot: u32) {
        let rows = self.rows(c, slot);
        if let Ok(mut reaped) = self.reaped.lock() {
            // Bounded: past MAX_REAPED_CGROUPS cgroups, a new one's reaped
            // connections are summed under cgroup 0.
            let id = if reaped.len() >= MAX_REAPED_CGROUPS && !reaped.contains_key(&c.cgroup_id) {
                0
            } else {
                c.cgroup_id
            };
            add_rows(reaped.entry(id).or_default(), &rows);
        }
        let zero = vec![0u8; self.map.value_size() as usize];
        let _ = self.map.update(&slot.to_ne_bytes(), &zero, MapFlags::ANY);
    }

    /// Every cgroup's table: `conns` (filled, labelled) plus the reaped.
    pub fn cgroups(&self, conns: &[Connection]) -> Vec<CgroupLayers> {
        let mut by: BTreeMap<u64, CgroupLayers> = BTreeMap::new();
        if let Ok(reaped) = self.reaped.lock() {
            for (&id, rows) in reaped.iter() {
                let g = by.entry(id).or_default();
                g.cgroup_id = id;
                add_rows(&mut g.layers, rows);
            }
        }
        for c in conns {
            let g = by.entry(c.cgroup_id).or_default();
            g.cgroup_id = c.cgroup_id;
            g.connections += 1;
            if g.container.is_none() {
                g.container = c.container.clone();
            }
            add_rows(&mut g.layers, &c.layers);
        }
        by.into_values()
            .map(|mut g| {
                g.layers = ordered(g.layers);
                g
            })
            .collect()
    }
}

/// The API's answer to `cgroups`: root only (a cgroup's table sums every
/// uid's connections in it).
pub fn answer_cgroups(shared: &crate::daemon::Shared, uid: u32) -> magnet_client::Response {
    if uid != 0 {
        return magnet_client::Response::error("cgroups: only root may read every cgroup's table");
    }
    magnet_client::Response {
        ok: true,
        cgroups: Some(shared_cgroups(shared)),
        ..magnet_client::Response::default()
    }
}

/// Every cgroup's table, its connections labelled with their container.
pub(crate) fn shared_cgroups(shared: &crate::daemon::Shared) -> Vec<CgroupLayers> {
    let conns: Vec<Connection> = shared
        .reader
        .all()
        .into_iter()
        .map(|r| shared.label(r.conn))
        .collect();
    shared.reader.cgroup_layers(&conns)
}

/// Adds each row of `rows` into the row of `into` of its layer and direction.
fn add_rows(into: &mut Vec<LayerRow>, rows: &[LayerRow]) {
    for r in rows {
        match into
            .iter_mut()
            .find(|x| x.layer == r.layer && x.dir == r.dir)
        {
            Some(x) => x.add(r),
            None => into.push(r.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table as the kernel lays it out decodes to its rows; empty layers
    /// are left out; a short value decodes to nothing.
    #[test]
    fn decodes_the_kernel_layout() {
        let mut t: types::mg_layers = unsafe { std::mem::zeroed() };
        t.d[0][0].units = 3;
        t.d[0][0].bytes = 3000;
        t.d[0][0].size_hist[30] = 3;
        t.d[0][0].gap_hist[5] = 2;
        t.d[0][0].first_ns = 1_000;
        t.d[0][0].last_ns = 2_001_000;
        t.d[1][1].units = 1;
        t.d[1][1].bytes = 52;
        t.d[1][1].size_hist[4 * 4 + 2] = 1;
        t.fin_in = 1;
        let raw: &[u8] = unsafe {
            std::slice::from_raw_parts(
                (&t as *const types::mg_layers).cast(),
                std::mem::size_of::<types::mg_layers>(),
            )
        };
        let (rows, fin_in) = decode(raw);
        assert!(fin_in);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].layer.as_str(), rows[0].dir.as_str()),
            ("app", "out")
        );
        assert_eq!((rows[0].units, rows[0].bytes), (3, 3000));
        assert_eq!(rows[0].size_hist.len(), 31);
        assert_eq!(rows[0].gap_hist, vec![0, 0, 0, 0, 0, 2]);
        assert_eq!(rows[0].span_s, 0.002);
        assert_eq!((rows[1].layer.as_str(), rows[1].dir.as_str()), ("ip", "in"));
        assert!(decode(&raw[..100]).0.is_empty());
    }

    #[test]
    fn cgroup_rows_sum_live_and_reaped() {
        let row = |layer: &str, units| LayerRow {
            layer: layer.into(),
            dir: "out".into(),
            units,
            bytes: units * 10,
            size_hist: vec![0, units],
            ..LayerRow::default()
        };
        let mut a = vec![row("ip", 2)];
        add_rows(&mut a, &[row("app", 1), row("ip", 3)]);
        let a = ordered(a);
        assert_eq!(a[0].layer, "app");
        assert_eq!(
            (a[1].units, a[1].bytes, a[1].size_hist.clone()),
            (5, 50, vec![0, 5])
        );
    }
}
