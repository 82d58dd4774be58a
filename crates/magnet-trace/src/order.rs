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

/// [`TimeOrdered`] over a reader without a buffer per record: the window's
/// records live in reusable slots and the heap holds (time, arrival, slot).
/// The order is the same as `TimeOrdered`'s (time, then arrival, within the
/// window); records are lent out one at a time (`next` borrows until the next
/// call), so reading allocates nothing once the window is full.
pub struct ReorderBuffer<'r, R: std::io::Read> {
    reader: &'r mut crate::reader::TraceReader<R>,
    /// Runs of records that arrived in time order (one per CPU's ring, in
    /// practice), each sorted by construction; what fits no run goes to the
    /// heap. The window's next record is the least of the runs' fronts and the
    /// heap's top.
    runs: Vec<std::collections::VecDeque<(u64, u64, u32)>>,
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    held: usize,
    /// Per slot: the record's length and block offset, and its bytes when
    /// they do not fit the slot's place in `arena`.
    slots: Vec<Slot>,
    /// `STRIDE` bytes per slot: one allocation for the window's records, not
    /// one per slot (thousands of small buffers fragment the heap for the
    /// caller's allocations: Parquet export paid 30 % more CPU in malloc).
    arena: Vec<u8>,
    free: Vec<u32>,
    /// The slot lent out by the last `next`, freed by the following one.
    lent: Option<u32>,
    window: usize,
    seq: u64,
    done: bool,
}

impl<'r, R: std::io::Read> ReorderBuffer<'r, R> {
    pub fn new(reader: &'r mut crate::reader::TraceReader<R>, window: usize) -> Self {
        ReorderBuffer {
            reader,
            runs: Vec::new(),
            heap: BinaryHeap::new(),
            held: 0,
            slots: Vec::new(),
            arena: Vec::new(),
            free: Vec::new(),
            lent: None,
            window: window.max(1),
            seq: 0,
            done: false,
        }
    }

    /// Bytes of a record kept in the arena; longer ones get a buffer of their own.
    const STRIDE: usize = 128;

    /// Most runs kept; the heap takes what fits none of them.
    const MAX_RUNS: usize = 16;

    fn hold(&mut self, key: (u64, u64, u32)) {
        self.held += 1;
        // The run whose last key is the greatest not above this one.
        let mut best: Option<usize> = None;
        for (i, r) in self.runs.iter().enumerate() {
            let back = r.back().expect("runs are never empty");
            if *back <= key && best.is_none_or(|b| self.runs[b].back() < Some(back)) {
                best = Some(i);
            }
        }
        match best {
            Some(i) => self.runs[i].push_back(key),
            None if self.runs.len() < Self::MAX_RUNS => {
                self.runs.push(std::collections::VecDeque::from([key]))
            }
            None => self.heap.push(Reverse(key)),
        }
    }

    fn take(&mut self) -> Option<(u64, u64, u32)> {
        let mut best: Option<usize> = None;
        for (i, r) in self.runs.iter().enumerate() {
            let front = r.front().expect("runs are never empty");
            if best.is_none_or(|b| self.runs[b].front() > Some(front)) {
                best = Some(i);
            }
        }
        let from_heap = match (best, self.heap.peek()) {
            (None, None) => return None,
            (None, Some(_)) => true,
            (Some(_), None) => false,
            (Some(b), Some(Reverse(h))) => h < self.runs[b].front().expect("not empty"),
        };
        self.held -= 1;
        if from_heap {
            return self.heap.pop().map(|Reverse(k)| k);
        }
        let b = best.expect("a run");
        let k = self.runs[b].pop_front();
        if self.runs[b].is_empty() {
            self.runs.swap_remove(b);
        }
        k
    }

    /// The next record in time order; errors pass through at once, in stream
    /// position, as in [`TimeOrdered`].
    #[allow(clippy::should_implement_trait)] // a lending iterator: not `Iterator`
    pub fn next(
        &mut self,
    ) -> Option<Result<crate::reader::RecordRef<'_>, crate::error::TraceError>> {
        if let Some(s) = self.lent.take() {
            self.free.push(s);
        }
        while !self.done && self.held < self.window {
            let slot = match self.free.pop() {
                Some(s) => s,
                None => {
                    self.slots.push(Slot::default());
                    self.arena.resize(self.slots.len() * Self::STRIDE, 0);
                    (self.slots.len() - 1) as u32
                }
            };
            match self.reader.next_record_ref() {
                Some(Ok(rec)) => {
                    let s = &mut self.slots[slot as usize];
                    s.len = rec.bytes.len();
                    s.block_offset = rec.block_offset;
                    s.spill.clear();
                    if rec.bytes.len() <= Self::STRIDE {
                        let at = slot as usize * Self::STRIDE;
                        self.arena[at..at + rec.bytes.len()].copy_from_slice(rec.bytes);
                    } else {
                        s.spill.extend_from_slice(rec.bytes);
                    }
                    self.seq += 1;
                    let ts = rec.ts_ns();
                    self.hold((ts, self.seq, slot));
                }
                Some(Err(e)) => {
                    self.free.push(slot);
                    return Some(Err(e));
                }
                None => {
                    self.free.push(slot);
                    self.done = true;
                }
            }
        }
        let (_, _, slot) = self.take()?;
        self.lent = Some(slot);
        let s = &self.slots[slot as usize];
        let bytes = if s.len <= Self::STRIDE {
            let at = slot as usize * Self::STRIDE;
            &self.arena[at..at + s.len]
        } else {
            &s.spill[..]
        };
        Some(Ok(crate::reader::RecordRef {
            bytes,
            block_offset: s.block_offset,
        }))
    }
}

/// Where a held record is.
#[derive(Default)]
struct Slot {
    len: usize,
    block_offset: u64,
    /// The bytes of a record longer than the arena's stride.
    spill: Vec<u8>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::{synthetic_trace, Emitter};
    use crate::kind;
    use crate::{Footer, Records, TraceReader};

    /// Same records, same order as `TimeOrdered`, for windows from 1 to more
    /// than the trace, with out-of-order and equal timestamps, and records
    /// shorter and longer than the arena's stride.
    #[test]
    fn the_reorder_buffer_orders_as_time_ordered_does() {
        let e = Emitter::builtin();
        let mut recs = Vec::new();
        let mut x: u64 = 12345;
        for i in 0..3000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Pairs share a time; up to ~55 records out of order.
            let ts = 1_000_000 + (i / 2) * 10 - (x >> 60) * 37;
            let mut r = e.record(kind::DEV_RX, ts).tid(i as u32).into_bytes();
            // Some longer than the arena's stride (kept in a buffer of their own).
            if i % 7 == 0 {
                r.resize(100 + (i as usize % 300), i as u8);
            }
            recs.push(r);
        }
        let bytes = synthetic_trace(1_000, recs, Some(&Footer::default()));
        for window in [1, 2, 7, 100, 5000] {
            let mut a = TraceReader::new(&bytes[..]).unwrap();
            let want: Vec<Vec<u8>> = TimeOrdered::new(Records(&mut a), window)
                .map(|r| r.unwrap().bytes)
                .collect();
            let mut b = TraceReader::new(&bytes[..]).unwrap();
            let mut ro = ReorderBuffer::new(&mut b, window);
            let mut got = Vec::new();
            while let Some(r) = ro.next() {
                got.push(r.unwrap().bytes.to_vec());
            }
            assert_eq!(got.len(), 3000);
            assert!(got == want, "window {window}");
        }
    }
}
