//! Time order. Each CPU has its own ring buffer and the recorder drains them in
//! turn, so records of different CPUs interleave out of time order by up to one
//! drain interval (about 10 ms), and within a CPU a program interrupted between
//! reading the clock and reserving its record lands after the interrupting one.
//! A bounded window of records is enough to emit them sorted by time.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::reader::Record;

/// Reorders an iterator of records by timestamp within `window` records.
pub struct TimeOrdered<I> {
    inner: I,
    heap: BinaryHeap<Reverse<(u64, u64, Keyed)>>,
    window: usize,
    seq: u64,
}

/// A record ordered by (ts, arrival) only.
#[derive(Debug)]
pub struct Keyed(pub Record);
impl PartialEq for Keyed {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Keyed {}
impl PartialOrd for Keyed {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Keyed {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

impl<I, E> TimeOrdered<I>
where
    I: Iterator<Item = Result<Record, E>>,
{
    pub fn new(inner: I, window: usize) -> Self {
        TimeOrdered {
            inner,
            heap: BinaryHeap::new(),
            window: window.max(1),
            seq: 0,
        }
    }
}

impl<I, E> Iterator for TimeOrdered<I>
where
    I: Iterator<Item = Result<Record, E>>,
{
    type Item = Result<Record, E>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.heap.len() < self.window {
            match self.inner.next() {
                Some(Ok(r)) => {
                    self.seq += 1;
                    self.heap.push(Reverse((r.ts_ns(), self.seq, Keyed(r))));
                }
                // Errors pass through at once, in stream position.
                Some(Err(e)) => return Some(Err(e)),
                None => break,
            }
        }
        self.heap.pop().map(|Reverse((_, _, Keyed(r)))| Ok(r))
    }
}
