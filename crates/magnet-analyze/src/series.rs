//! Per layer and direction: the units a layer saw, accumulated into counts,
//! distributions and (for plots) decimated marks.

use crate::dist::Dist;
use crate::model::TimeBins;

/// Most time bins per layer and direction (see [`TimeBinAcc`]).
pub(crate) const TIME_BINS: usize = 4096;

/// Keeps every `stride`-th point, doubling the stride when `cap` is reached.
#[derive(Clone, Debug)]
pub(crate) struct Decimator<T> {
    pub points: Vec<T>,
    pub stride: u64,
    seen: u64,
    cap: usize,
}

impl<T> Decimator<T> {
    pub fn new(cap: usize) -> Self {
        Decimator {
            points: Vec::new(),
            stride: 1,
            seen: 0,
            cap: cap.max(2),
        }
    }

    pub fn push(&mut self, p: T) {
        if self.seen % self.stride == 0 {
            self.points.push(p);
            if self.points.len() >= self.cap {
                let mut i = 0;
                self.points.retain(|_| {
                    i += 1;
                    i % 2 == 1
                });
                self.stride *= 2;
            }
        }
        self.seen += 1;
    }
}

/// Bytes, units and the smallest and largest unit per time bin from the first
/// unit on. Bins start 1 µs wide; when more than `cap` would be needed, pairs
/// merge and the width doubles, so a layer of any length keeps at most `cap`
/// bins and at least `cap / 2` over its span. Exact: every unit counts.
#[derive(Clone, Debug)]
pub(crate) struct TimeBinAcc {
    origin: Option<u64>,
    width: u64,
    cap: usize,
    bins: Vec<Bin>,
}

#[derive(Clone, Copy, Debug, Default)]
struct Bin {
    bytes: u64,
    units: u64,
    min: u32,
    max: u32,
}

impl Bin {
    fn merge(&mut self, o: &Bin) {
        if o.units == 0 {
            return;
        }
        self.min = if self.units == 0 {
            o.min
        } else {
            self.min.min(o.min)
        };
        self.max = self.max.max(o.max);
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.units += o.units;
    }
}

impl TimeBinAcc {
    pub fn new(cap: usize) -> Self {
        TimeBinAcc {
            origin: None,
            width: 1000,
            cap: cap.max(2),
            bins: Vec::new(),
        }
    }

    pub fn add(&mut self, ts: u64, size: u64) {
        let origin = *self.origin.get_or_insert(ts);
        let rel = ts.saturating_sub(origin);
        let mut i = rel / self.width;
        while i >= self.cap as u64 {
            self.bins = self
                .bins
                .chunks(2)
                .map(|c| {
                    let mut b = c[0];
                    if let Some(o) = c.get(1) {
                        b.merge(o);
                    }
                    b
                })
                .collect();
            self.width *= 2;
            i = rel / self.width;
        }
        let i = i as usize;
        if self.bins.len() <= i {
            self.bins.resize(i + 1, Bin::default());
        }
        let size = size.min(u32::MAX as u64) as u32;
        self.bins[i].merge(&Bin {
            bytes: size as u64,
            units: 1,
            min: size,
            max: size,
        });
    }

    pub fn finish(self, origin: u64) -> TimeBins {
        let b = &self.bins;
        TimeBins {
            from_s: crate::secs(self.origin.unwrap_or(origin), origin),
            width_ns: self.width,
            bytes: b.iter().map(|b| b.bytes).collect(),
            units: b.iter().map(|b| b.units).collect(),
            min: b.iter().map(|b| b.min).collect(),
            max: b.iter().map(|b| b.max).collect(),
        }
    }
}

/// A unit's mark for the plots: when it was seen and how big it was.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mark {
    pub ts: u64,
    pub size: u32,
}

/// The units of one layer in one direction.
#[derive(Clone, Debug)]
pub(crate) struct LayerAcc {
    pub units: u64,
    pub bytes: u64,
    pub size: Dist,
    pub interval: Dist,
    pub first: Option<u64>,
    pub last: u64,
    pub marks: Option<Decimator<Mark>>,
    pub bins: Option<TimeBinAcc>,
}

impl LayerAcc {
    /// `series`: the cap of the plot marks, when they are kept.
    pub fn new(series: Option<usize>) -> Self {
        LayerAcc {
            units: 0,
            bytes: 0,
            size: Dist::default(),
            interval: Dist::default(),
            first: None,
            last: 0,
            marks: series.map(Decimator::new),
            bins: series.map(|_| TimeBinAcc::new(TIME_BINS)),
        }
    }

    pub fn unit(&mut self, ts: u64, size: u64) {
        if self.first.is_none() {
            self.first = Some(ts);
        } else {
            self.interval.add(ts.saturating_sub(self.last));
        }
        self.last = ts.max(self.last);
        self.units += 1;
        self.bytes = self.bytes.saturating_add(size);
        self.size.add(size);
        if let Some(b) = &mut self.bins {
            b.add(ts, size);
        }
        if let Some(m) = &mut self.marks {
            m.push(Mark {
                ts,
                size: size.min(u32::MAX as u64) as u32,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every unit counts; the width doubles past the cap, merging neighbours.
    #[test]
    fn time_bins_stay_bounded_and_exact() {
        let mut b = TimeBinAcc::new(8);
        // 1 µs bins; units at 0, 3.5 and 7.9 µs fit 8 bins.
        for (t, s) in [(100_000, 10), (103_500, 20), (107_900, 5)] {
            b.add(t, s);
        }
        assert_eq!(b.width, 1000);
        // 20 µs needs 21 bins: width 4 µs (bins 0..5).
        b.add(120_000, 1448);
        let t = b.finish(0);
        assert_eq!(t.from_s, 0.0001);
        assert_eq!(t.width_ns, 4000);
        assert_eq!(t.bytes, vec![30, 5, 0, 0, 0, 1448]);
        assert_eq!(t.units, vec![2, 1, 0, 0, 0, 1]);
        assert_eq!(t.min, vec![10, 5, 0, 0, 0, 1448]);
        assert_eq!(t.max, vec![20, 5, 0, 0, 0, 1448]);
    }
}
