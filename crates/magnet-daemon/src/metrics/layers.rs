//! The layer table's families (see [`crate::layers`]): per selected
//! connection and per cgroup, each layer's units and bytes (counters) and
//! its size and gap histograms (real Prometheus histograms: cumulative
//! `_bucket` with `le`, `_sum`, `_count`).

use magnet_client::layers::{layer_bucket_bounds, GAP_UNIT_NS, LAYER_BUCKETS};
use magnet_client::{CgroupLayers, Connection, LayerRow};

use super::Out;

/// Most cgroups written (the rest are left out; the API has them all).
pub(super) const MAX_CGROUP_SERIES: usize = 256;

/// One histogram: cumulative `_bucket` for each of `n` buckets whose `le`
/// `le(i)` gives (a bucket without one is counted only in `+Inf`), `+Inf`,
/// `_sum` when known, `_count`. Every finite `le` is written, empty or not,
/// so each is a series from the first scrape on (histogram_quantile needs
/// them all).
pub(super) fn write_buckets(
    o: &mut Out,
    name: &str,
    base: &[(&str, &str)],
    counts: &[u64],
    n: usize,
    le: &dyn Fn(usize) -> Option<f64>,
    sum: Option<f64>,
) {
    let bucket = format!("{name}_bucket");
    let mut cumulative = 0u64;
    for i in 0..n {
        cumulative += counts.get(i).copied().unwrap_or(0);
        if let Some(le) = le(i) {
            let le = format!("{le:e}");
            let mut l = base.to_vec();
            l.push(("le", le.as_str()));
            o.sample(&bucket, &l, cumulative);
        }
    }
    // A count is a count: whatever lies past the last bucket lands in +Inf.
    let total: u64 = counts.iter().sum();
    let mut l = base.to_vec();
    l.push(("le", "+Inf"));
    o.sample(&bucket, &l, total);
    if let Some(s) = sum {
        o.sample(&format!("{name}_sum"), base, s);
    }
    o.sample(&format!("{name}_count"), base, total);
}

/// Sizes are whole bytes: bucket [low, high) holds the values <= high - 1.
fn size_le(i: usize) -> Option<f64> {
    layer_bucket_bounds(i).1.map(|h| (h - 1) as f64)
}

/// Gaps are counted in GAP_UNIT_NS units, rounded down: bucket [low, high)
/// holds gaps below high units.
fn gap_le(i: usize) -> Option<f64> {
    layer_bucket_bounds(i)
        .1
        .map(|h| (h * GAP_UNIT_NS) as f64 / 1e9)
}

/// The layer families: name, type, unit, help.
const FAMILIES: [(&str, &str, Option<&str>, &str); 4] = [
    (
        "layer_units",
        "counter",
        None,
        "Units of this layer and direction: app calls that moved bytes, tcp data segments (the socket's data_segs_out/in), ip packets (only with packet_hooks always).",
    ),
    (
        "layer_bytes",
        "counter",
        Some("bytes"),
        "Bytes of those units: app bytes moved, tcp payload (bytes_sent with retransmits / bytes_received), ip bytes with headers.",
    ),
    (
        "layer_size_bytes",
        "histogram",
        Some("bytes"),
        "Unit sizes (app, ip): log2 buckets with 4 linear sub-buckets per power of two.",
    ),
    (
        "layer_gap_seconds",
        "histogram",
        Some("seconds"),
        "Time between consecutive units of this layer and direction (app, ip): log2 buckets of 1.024 us with 4 linear sub-buckets.",
    ),
];

/// One family's series for one table (`base`: whose table it is).
fn write_rows(o: &mut Out, prefix: &str, family: &str, base: &[(&str, &str)], rows: &[LayerRow]) {
    let name = format!("{prefix}_{family}");
    for r in rows {
        let mut l = base.to_vec();
        l.push(("layer", r.layer.as_str()));
        l.push(("direction", r.dir.as_str()));
        match family {
            "layer_units" => o.sample(&format!("{name}_total"), &l, r.units),
            "layer_bytes" => o.sample(&format!("{name}_total"), &l, r.bytes),
            // tcp keeps no histograms: no series rather than empty ones
            _ if r.size_hist.is_empty() => {}
            "layer_size_bytes" => write_buckets(
                o,
                &name,
                &l,
                &r.size_hist,
                LAYER_BUCKETS,
                &size_le,
                Some(r.bytes as f64),
            ),
            _ => write_buckets(
                o,
                &name,
                &l,
                &r.gap_hist,
                LAYER_BUCKETS,
                &gap_le,
                Some(r.span_s),
            ),
        }
    }
}

/// The layer families of the selected connections (`base_of`: their
/// identity labels, as the other per-connection families have them).
pub(super) fn write_connection_layers<'a>(
    o: &mut Out,
    selected: &'a [Connection],
    base_of: &dyn Fn(&'a Connection) -> Vec<(&'static str, String)>,
) {
    for (family, kind, unit, help) in FAMILIES {
        o.family(&format!("magnet_connection_{family}"), kind, unit, help);
        for c in selected {
            let owned = base_of(c);
            let base: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
            write_rows(o, "magnet_connection", family, &base, &c.layers);
        }
    }
}

/// The layer families per cgroup (at most [`MAX_CGROUP_SERIES`] cgroups).
pub(super) fn write_cgroup_layers(o: &mut Out, cgroups: &[CgroupLayers]) {
    for (family, kind, unit, help) in FAMILIES {
        o.family(&format!("magnet_cgroup_{family}"), kind, unit, help);
        for g in cgroups.iter().take(MAX_CGROUP_SERIES) {
            let id = g.cgroup_id.to_string();
            let base = [
                ("cgroup", id.as_str()),
                ("container", g.container.as_deref().unwrap_or("")),
            ];
            write_rows(o, "magnet_cgroup", family, &base, &g.layers);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cumulative buckets, +Inf, _sum and _count as histogram_quantile
    /// reads them; le of a size bucket is its largest whole byte.
    #[test]
    fn a_size_histogram_is_cumulative_with_sum_and_count() {
        let mut o = Out(String::new());
        let mut hist = vec![0u64; 38];
        hist[37] = 2; // 1280..1535 B
        hist[4] = 1; // 4 B
        let row = LayerRow {
            layer: "ip".into(),
            dir: "out".into(),
            units: 3,
            bytes: 3000,
            size_hist: hist,
            gap_hist: vec![0, 2],
            span_s: 0.5,
            ..LayerRow::default()
        };
        write_rows(&mut o, "m", "layer_size_bytes", &[("cgroup", "7")], &[row]);
        let t = &o.0;
        let n = |le: &str| {
            let key = format!("m_layer_size_bytes_bucket{{cgroup=\"7\",layer=\"ip\",direction=\"out\",le=\"{le}\"}} ");
            t.lines()
                .find_map(|l| l.strip_prefix(key.as_str()))
                .unwrap_or_else(|| panic!("no le {le} in {t}"))
                .to_string()
        };
        assert_eq!(n("3e0"), "0");
        assert_eq!(n("4e0"), "1");
        assert_eq!(n("1.279e3"), "1");
        assert_eq!(n("1.535e3"), "3");
        assert_eq!(n("+Inf"), "3");
        assert!(t.contains(
            "m_layer_size_bytes_sum{cgroup=\"7\",layer=\"ip\",direction=\"out\"} 3000\n"
        ));
        assert!(
            t.contains("m_layer_size_bytes_count{cgroup=\"7\",layer=\"ip\",direction=\"out\"} 3\n")
        );
        assert_eq!(t.matches("_bucket{").count(), LAYER_BUCKETS);
    }
}
