//! The live layer table: per connection (and per cgroup), per layer and
//! direction, units, bytes and log-linear histograms of unit sizes and of the
//! gaps between units — what `magnet analyze` prints per connection from a
//! recording (MAGNeT's Table III), kept by magnetd in the kernel.
//!
//! Buckets: log2 with 4 linear sub-buckets per power of two. A value `v`
//! below 4 is bucket `v`; above, bucket `4 (e - 1) + ((v >> (e - 2)) & 3)`
//! with `e = floor(log2 v)`, so every bucket is at most 25 % of its lower
//! bound wide. The last bucket ([`LAYER_BUCKETS`] − 1) also holds every larger
//! value. Sizes are bytes; gaps are counted in units of [`GAP_UNIT_NS`] ns.

use serde::{Deserialize, Serialize};

/// Buckets per histogram (the BPF side's `MG_LAYER_BUCKETS`).
pub const LAYER_BUCKETS: usize = 96;

/// The gap histograms' unit: 1024 ns (the BPF side's `MG_GAP_SHIFT` = 10).
pub const GAP_UNIT_NS: u64 = 1024;

/// The bucket of `v` (in the histogram's unit).
pub fn layer_bucket(v: u64) -> usize {
    if v < 4 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros() as u64;
    let b = (4 * (e - 1) + ((v >> (e - 2)) & 3)) as usize;
    b.min(LAYER_BUCKETS - 1)
}

/// The values bucket `b` holds: `[low, high)`; `high` is `None` for the
/// last bucket, which holds everything from `low` up.
pub fn layer_bucket_bounds(b: usize) -> (u64, Option<u64>) {
    let (low, high) = if b < 4 {
        (b as u64, b as u64 + 1)
    } else {
        let shift = b as u64 / 4 - 1;
        let sub = b as u64 % 4;
        ((4 + sub) << shift, (5 + sub) << shift)
    };
    (low, (b + 1 < LAYER_BUCKETS).then_some(high))
}

/// One layer in one direction.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct LayerRow {
    /// `"app"`, `"tcp"` or `"ip"`.
    pub layer: String,
    /// `"out"` (sent) or `"in"` (received).
    pub dir: String,
    /// `"call"`, `"data segment"` or `"packet"`.
    pub unit: String,
    pub units: u64,
    /// app: bytes the calls moved; tcp: payload bytes (the socket's
    /// bytes_sent / bytes_received); ip: IP bytes, headers included.
    pub bytes: u64,
    /// Units per size bucket (bytes), trailing empty buckets left out;
    /// empty where the layer keeps no histogram (tcp).
    #[serde(default)]
    pub size_hist: Vec<u64>,
    /// Gaps between consecutive units per bucket (units of
    /// [`GAP_UNIT_NS`] ns), trailing empty buckets left out; one fewer than
    /// the units (none for tcp).
    #[serde(default)]
    pub gap_hist: Vec<u64>,
    /// Seconds from the first unit to the last (the gaps' sum).
    #[serde(default)]
    pub span_s: f64,
}

impl LayerRow {
    /// Adds `o` (same layer and direction) into this row: counts and
    /// histograms sum, spans sum (the gaps' total stays a sum of gaps).
    pub fn add(&mut self, o: &LayerRow) {
        self.units += o.units;
        self.bytes += o.bytes;
        add_hist(&mut self.size_hist, &o.size_hist);
        add_hist(&mut self.gap_hist, &o.gap_hist);
        self.span_s += o.span_s;
    }
}

fn add_hist(a: &mut Vec<u64>, b: &[u64]) {
    if a.len() < b.len() {
        a.resize(b.len(), 0);
    }
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// One cgroup's layer table: its live connections' rows plus those of its
/// connections magnetd has reaped since it started (so the counts only grow,
/// unless a connection's last caller moves to another cgroup).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct CgroupLayers {
    pub cgroup_id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Connections with a table now (live or closed, not yet reaped).
    pub connections: u64,
    pub layers: Vec<LayerRow>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value lands in the bucket whose bounds hold it, buckets are
    /// contiguous, and the sub-buckets are a quarter of their power of two.
    #[test]
    fn buckets_are_contiguous_and_hold_their_values() {
        let mut prev_high = 0;
        for b in 0..LAYER_BUCKETS {
            let (low, high) = layer_bucket_bounds(b);
            assert_eq!(low, prev_high, "bucket {b}");
            assert_eq!(layer_bucket(low), b);
            match high {
                Some(h) => {
                    assert_eq!(layer_bucket(h - 1), b);
                    assert!((h - low) * 4 <= low.max(4), "bucket {b} too wide");
                    prev_high = h;
                }
                None => assert_eq!(layer_bucket(u64::MAX), b),
            }
        }
        assert_eq!(layer_bucket(1448), 4 * 9 + 1); // 1448 = (4 + 1.66..) << 8
        assert_eq!(layer_bucket_bounds(37), (1280, Some(1536)));
    }
}
