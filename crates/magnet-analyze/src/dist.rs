//! Distributions with bounded memory: exact while few distinct values are seen,
//! then coarsened to a fixed number of significant bits, so that a trace of any
//! length needs at most `LIMIT` buckets per distribution.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Distinct buckets kept before values are coarsened.
const LIMIT: usize = 4096;

/// A distribution of `u64` values (bytes, nanoseconds).
#[derive(Clone, Debug)]
pub struct Dist {
    counts: BTreeMap<u64, u64>,
    n: u64,
    sum: u128,
    /// For the variance only: f64 is plenty, and cannot overflow.
    sum_sq: f64,
    min: u64,
    max: u64,
    /// Significant bits kept per value; 64 = exact.
    bits: u32,
}

impl Default for Dist {
    fn default() -> Self {
        Dist {
            counts: BTreeMap::new(),
            n: 0,
            sum: 0,
            sum_sq: 0.0,
            min: u64::MAX,
            max: 0,
            bits: 64,
        }
    }
}

fn bucket(v: u64, bits: u32) -> u64 {
    let width = 64 - v.leading_zeros();
    if width <= bits {
        v
    } else {
        let drop = width - bits;
        (v >> drop) << drop
    }
}

impl Dist {
    pub fn add(&mut self, v: u64) {
        self.n += 1;
        self.sum += v as u128;
        self.sum_sq += (v as f64) * (v as f64);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        *self.counts.entry(bucket(v, self.bits)).or_default() += 1;
        while self.counts.len() > LIMIT && self.bits > 4 {
            self.bits = if self.bits == 64 { 16 } else { self.bits - 1 };
            let old = std::mem::take(&mut self.counts);
            for (k, c) in old {
                *self.counts.entry(bucket(k, self.bits)).or_default() += c;
            }
        }
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// Whether percentiles are exact (false once values were coarsened).
    pub fn exact(&self) -> bool {
        self.bits == 64
    }

    /// Nearest-rank percentile: the smallest value with at least `p`% of the
    /// values at or below it. Exact until the distribution is coarsened; after
    /// that the bucket's lower bound (relative error below 2^-(bits-1)).
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((p / 100.0) * self.n as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (&k, &c) in &self.counts {
            seen += c;
            if seen >= rank {
                return Some(k.clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }

    pub fn stats(&self) -> Option<Stats> {
        if self.n == 0 {
            return None;
        }
        let mean = self.sum as f64 / self.n as f64;
        let var = (self.sum_sq / self.n as f64 - mean * mean).max(0.0);
        Some(Stats {
            count: self.n,
            mean,
            median: self.percentile(50.0).unwrap_or(0),
            p99: self.percentile(99.0).unwrap_or(0),
            min: self.min,
            max: self.max,
            cv: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
            exact: self.exact(),
        })
    }

    /// Counts in `n` equal-width bins from min to max, for plotting.
    pub fn histogram(&self, n: usize) -> Vec<(u64, u64)> {
        if self.n == 0 || n == 0 {
            return Vec::new();
        }
        let width = ((self.max - self.min) / n as u64).max(1);
        let mut bins: Vec<(u64, u64)> = (0..n as u64).map(|i| (self.min + i * width, 0)).collect();
        for (&k, &c) in &self.counts {
            let i = (((k.max(self.min) - self.min) / width) as usize).min(n - 1);
            bins[i].1 += c;
        }
        while bins.last().is_some_and(|b| b.1 == 0) {
            bins.pop();
        }
        bins
    }

    /// Counts in `per_decade` logarithmic bins per power of ten. Each (possibly
    /// coarsened) bucket counts in the bin of its value, so a bin edge can be
    /// off by the bucket's relative error (< 0.1 %).
    pub fn log_histogram(&self, per_decade: u32) -> LogHist {
        let per_decade = per_decade.max(1);
        let mut h = LogHist {
            per_decade,
            ..LogHist::default()
        };
        for (&k, &c) in &self.counts {
            let v = k.clamp(self.min, self.max);
            if v == 0 {
                h.zeros += c;
                continue;
            }
            let i = log_bin(v, per_decade);
            match h.bins.last_mut() {
                Some(b) if b.0 == i => b.1 += c,
                _ => h.bins.push((i, c)),
            }
        }
        h
    }
}

/// Counts on a logarithmic axis: bin `i` holds the values in
/// `[10^(i/per_decade), 10^((i+1)/per_decade))`; zeros are counted apart (they
/// have no logarithm). For plots whose values span decades (latencies of 14 µs
/// and 11 ms in one distribution).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LogHist {
    pub per_decade: u32,
    /// `(i, count)` for every bin that holds values, ascending.
    pub bins: Vec<(i32, u64)>,
    pub zeros: u64,
}

/// The log bin of `v` (> 0): the largest `i` with `10^(i/k) <= v`.
fn log_bin(v: u64, k: u32) -> i32 {
    let k = k as f64;
    let edge = |i: i32| 10f64.powf(i as f64 / k);
    let mut i = ((v as f64).log10() * k).floor() as i32;
    while edge(i + 1) <= v as f64 {
        i += 1;
    }
    while edge(i) > v as f64 {
        i -= 1;
    }
    i
}

/// Summary of a distribution. Sizes are bytes, intervals and latencies
/// nanoseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub count: u64,
    pub mean: f64,
    pub median: u64,
    pub p99: u64,
    pub min: u64,
    pub max: u64,
    /// Coefficient of variation (standard deviation / mean): 0 for a perfectly
    /// regular stream.
    pub cv: f64,
    /// False when the percentiles come from coarsened buckets.
    pub exact: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_percentiles() {
        let mut d = Dist::default();
        for v in 1..=100 {
            d.add(v);
        }
        let s = d.stats().unwrap();
        assert_eq!(
            (s.count, s.median, s.p99, s.min, s.max),
            (100, 50, 99, 1, 100)
        );
        assert_eq!(s.mean, 50.5);
        assert!(s.exact);
    }

    #[test]
    fn constant_has_zero_cv() {
        let mut d = Dist::default();
        for _ in 0..10 {
            d.add(10240);
        }
        let s = d.stats().unwrap();
        assert_eq!(
            (s.mean, s.median, s.p99, s.cv),
            (10240.0, 10240, 10240, 0.0)
        );
    }

    /// Bins are decades split in `per_decade`, edges exact at powers of ten.
    #[test]
    fn log_histogram_bins() {
        let mut d = Dist::default();
        for v in [0, 1, 9, 10, 99, 100, 1000, 1000, 14_000, 11_600_000] {
            d.add(v);
        }
        let h = d.log_histogram(1);
        assert_eq!(h.zeros, 1);
        assert_eq!(h.bins, vec![(0, 2), (1, 2), (2, 1), (3, 2), (4, 1), (7, 1)]);
        let h = d.log_histogram(10);
        // 14 000 is in [10^4.1, 10^4.2) = [12 589, 15 849).
        assert!(h.bins.contains(&(41, 1)), "{:?}", h.bins);
        assert_eq!(h.bins.iter().map(|b| b.1).sum::<u64>() + h.zeros, 10);
        assert_eq!(log_bin(1000, 10), 30);
        assert_eq!(log_bin(999, 10), 29);
        assert_eq!(Dist::default().log_histogram(10).bins, vec![]);
    }

    #[test]
    fn coarsens_with_bounded_buckets() {
        let mut d = Dist::default();
        for v in 0..200_000u64 {
            d.add(1_000_000 + v * 7);
        }
        assert!(d.counts.len() <= LIMIT);
        assert!(!d.exact());
        let s = d.stats().unwrap();
        let true_median = 1_000_000 + 99_999 * 7;
        let rel = (s.median as f64 - true_median as f64).abs() / true_median as f64;
        assert!(rel < 0.002, "median {} vs {true_median}", s.median);
        assert_eq!(s.mean, 1_000_000.0 + 199_999.0 * 7.0 / 2.0);
    }
}
