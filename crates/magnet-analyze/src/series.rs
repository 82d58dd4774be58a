//! Per layer and direction: the units a layer saw, accumulated into counts,
//! distributions and (for plots) decimated marks.

use crate::dist::Dist;

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
        if let Some(m) = &mut self.marks {
            m.push(Mark {
                ts,
                size: size.min(u32::MAX as u64) as u32,
            });
        }
    }
}
