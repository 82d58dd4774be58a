//! The clock between a capture and a trace: offset, drift, and the interface
//! the capture sits on, from the frames whose footprint names one packet.

use std::collections::HashMap;

use magnet_trace::catalog::kind;

use super::nearest_hop;
use crate::kernel::KPacket;

fn median(v: &mut [i64]) -> Option<i64> {
    if v.is_empty() {
        return None;
    }
    let m = v.len() / 2;
    Some(*v.select_nth_unstable(m).1)
}

/// A kernel packet as the clock estimate sees it: its device hops (the first on
/// each interface, in hop order) and the times of all its hops.
#[derive(Debug, Clone, Default)]
pub(crate) struct CalPacket {
    dev: Vec<(u32, i64)>,
    hops: Vec<i64>,
}

impl CalPacket {
    pub(crate) fn of(p: &KPacket) -> CalPacket {
        let mut dev: Vec<(u32, i64)> = Vec::new();
        for h in &p.hops {
            if matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX)
                && !dev.iter().any(|d| d.0 == h.ifindex)
            {
                dev.push((h.ifindex, h.ts_ns));
            }
        }
        CalPacket {
            dev,
            hops: p.hops.iter().map(|h| h.ts_ns).collect(),
        }
    }
}

/// The clock between a capture and a trace, and where the capture sits.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Calib {
    pub(crate) offset: i64,
    /// ns per ns.
    pub(crate) drift: f64,
    t_mid: i64,
    pub(crate) capture_if: Option<u32>,
    pub(crate) samples: u64,
}

impl Calib {
    /// Trace time of a capture time.
    pub(crate) fn corr(&self, ts: i64) -> i64 {
        let o = self.offset as f64 + self.drift * (ts - self.offset - self.t_mid) as f64;
        ts - o.round() as i64
    }

    pub(crate) fn drift_ppm(&self) -> f64 {
        (self.drift * 1e6 * 1000.0).round() / 1000.0
    }

    /// The hop a frame is compared with: the packet's on the capture's interface,
    /// else its nearest.
    pub(crate) fn ref_hop(&self, p: &KPacket, t: i64) -> Option<(usize, i64)> {
        p.hops
            .iter()
            .enumerate()
            .filter(|(_, h)| {
                Some(h.ifindex) == self.capture_if
                    && matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX)
            })
            .map(|(i, h)| (i, h.ts_ns))
            .min_by_key(|&(_, ts)| (ts - t).abs())
            .or_else(|| nearest_hop(p, t))
    }
}

/// The clock offset and drift from the frames whose footprint names one kernel
/// packet (capture time, that packet), in capture order.
pub(crate) fn calibrate(unique: &[(i64, &CalPacket)]) -> Calib {
    // Where the capture sits: the interface whose device hops keep the steadiest
    // distance to the frames (smallest mean absolute deviation among interfaces
    // that a quarter of the unique matches crossed). Its median is the offset.
    let mut per_if: HashMap<u32, Vec<(i64, i64)>> = HashMap::new();
    for &(ts, p) in unique {
        for &(ifx, h) in &p.dev {
            per_if.entry(ifx).or_default().push((h, ts - h));
        }
    }
    let mut best: Option<(i64, usize, u32)> = None; // (deviation, MAX - count, ifindex)
    for (&ifx, v) in &per_if {
        if v.len() * 4 < unique.len() {
            continue;
        }
        let mut d: Vec<i64> = v.iter().map(|s| s.1).collect();
        let med = median(&mut d).unwrap_or(0);
        // Mean absolute deviation from the median: robust enough, and it still
        // tells apart two interfaces a few hundred nanoseconds apart.
        let mad = v
            .iter()
            .map(|s| (s.1 - med).unsigned_abs() as u128)
            .sum::<u128>()
            / v.len() as u128;
        let key = (mad as i64, usize::MAX - v.len(), ifx);
        if best.is_none_or(|b| key < b) {
            best = Some(key);
        }
    }
    let capture_if = best.map(|b| b.2);
    let samples: Vec<(i64, i64)> = match capture_if {
        Some(ifx) => per_if.remove(&ifx).unwrap_or_default(),
        // No device hops: each packet's hop nearest to a first estimate.
        None => {
            let mut d0: Vec<i64> = unique
                .iter()
                .filter_map(|&(ts, p)| Some(ts - *p.hops.first()?))
                .collect();
            let first = median(&mut d0).unwrap_or(0);
            unique
                .iter()
                .filter_map(|&(ts, p)| {
                    let t = ts - first;
                    let h = *p.hops.iter().min_by_key(|&&h| (h - t).abs())?;
                    Some((h, ts - h))
                })
                .collect()
        }
    };
    let mut d1: Vec<i64> = samples.iter().map(|s| s.1).collect();
    let offset = median(&mut d1).unwrap_or(0);
    // Drift only when the samples span a second or more: over less, the jitter
    // between hops and capture (microseconds) would swamp it.
    let lo = samples.iter().map(|s| s.0).min().unwrap_or(0);
    let hi = samples.iter().map(|s| s.0).max().unwrap_or(0);
    let drift = if hi - lo >= 1_000_000_000 {
        slope(&samples)
    } else {
        0.0
    };
    let t_mid = samples.get(samples.len() / 2).map_or(0, |s| s.0);
    Calib {
        offset,
        drift,
        t_mid,
        capture_if,
        samples: samples.len() as u64,
    }
}

/// Least-squares slope of y over x (ns per ns); 0 with fewer than two distinct x.
fn slope(pts: &[(i64, i64)]) -> f64 {
    if pts.len() < 2 {
        return 0.0;
    }
    let x0 = pts[0].0;
    let y0 = pts[0].1;
    let n = pts.len() as f64;
    let (mut sx, mut sy, mut sxx, mut sxy) = (0f64, 0f64, 0f64, 0f64);
    for &(x, y) in pts {
        let x = (x - x0) as f64;
        let y = (y - y0) as f64;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    let den = n * sxx - sx * sx;
    if den.abs() < 1e-9 {
        0.0
    } else {
        (n * sxy - sx * sy) / den
    }
}
