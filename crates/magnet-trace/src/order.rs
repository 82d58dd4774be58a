//! Time order. Each CPU has its own ring buffer and the recorder drains them in
//! turn, so records of different CPUs interleave out of time order by up to one
//! drain interval (about 10 ms), and within a CPU a program interrupted between
//! reading the clock and reserving its record lands after the interrupting one.
//! A bounded window of records is enough to emit them sorted by time.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

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
/// records are appended, packed, to reusable chunks in arrival order, and the
/// runs and heap hold keys (time, arrival, where the bytes are). The order is
/// the same as `TimeOrdered`'s (time, then arrival, within the window); records
/// are lent out one at a time (`next` borrows until the next call), so reading
/// allocates nothing once the window is full.
///
/// Why so: a record's bytes are written where the previous one's ended (no
/// stride to waste, sequential stores), a key says where they are (no table
/// of slots to look up at random), and the records of one run (one CPU's ring)
/// come back out in the order they went in, so reading them walks memory
/// forward. (128-byte slots in one arena, reused last-freed first, cost a
/// third of Parquet export's CPU time in cache misses.) A chunk is reused when
/// its last record has been lent out; a record that stays in the window for
/// long (a time far ahead of the others) would pin its chunk, so past a bound
/// on the chunks the oldest pinned chunk's records are moved to buffers of
/// their own and the chunk reused.
pub struct ReorderBuffer<'r, R: std::io::Read> {
    reader: &'r mut crate::reader::TraceReader<R>,
    /// Runs of records that arrived in time order (one per CPU's ring, in
    /// practice), each sorted by construction; what fits no run goes to the
    /// heap. The window's next record is the least of the runs' fronts and the
    /// heap's top.
    runs: Vec<VecDeque<Key>>,
    heap: BinaryHeap<Reverse<Key>>,
    held: usize,
    store: Store,
    /// The record lent out by the last `next`, let go by the following one.
    lent: Option<Key>,
    window: usize,
    seq: u64,
    done: bool,
}

/// A held record: ordered by (time, arrival) only.
#[derive(Clone, Copy, Debug)]
struct Key {
    ts: u64,
    seq: u64,
    block_offset: u64,
    loc: Loc,
}

impl PartialEq for Key {
    fn eq(&self, o: &Self) -> bool {
        (self.ts, self.seq) == (o.ts, o.seq)
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.ts, self.seq).cmp(&(o.ts, o.seq))
    }
}

/// Where a held record's bytes are: `len` bytes at `at` in chunk `chunk`, or
/// (`chunk` [`SPILLED`]) in spill buffer `at`.
#[derive(Clone, Copy, Debug)]
struct Loc {
    chunk: u32,
    at: u32,
    len: u32,
}

const SPILLED: u32 = u32::MAX;

/// The held records' bytes.
struct Store {
    /// Records' bytes, packed in arrival order (`chunk_bytes` each, one
    /// allocation per chunk, reused: no buffer per record, which fragments the
    /// heap for the caller's allocations: Parquet export paid 30 % more CPU in
    /// malloc with a `Vec` per record).
    chunks: Vec<Chunk>,
    /// Chunks with no record held, to fill next.
    idle: Vec<u32>,
    /// The chunk being filled.
    filling: u32,
    /// Chunks started so far (a chunk's age).
    started: u64,
    chunk_bytes: usize,
    max_chunks: usize,
    /// Records longer than a chunk, and those moved out of a pinned chunk.
    spill: Vec<Vec<u8>>,
    spill_free: Vec<u32>,
}

struct Chunk {
    data: Vec<u8>,
    /// Records in the chunk still held (or lent).
    live: u32,
    /// When the chunk was last started (`Store::started`).
    age: u64,
}

impl Chunk {
    fn new(bytes: usize) -> Chunk {
        Chunk {
            data: Vec::with_capacity(bytes),
            live: 0,
            age: 0,
        }
    }
}

impl Store {
    fn new(chunk_bytes: usize, max_chunks: usize) -> Store {
        Store {
            chunks: vec![Chunk::new(chunk_bytes)],
            idle: Vec::new(),
            filling: 0,
            started: 0,
            chunk_bytes,
            max_chunks: max_chunks.max(2),
            spill: Vec::new(),
            spill_free: Vec::new(),
        }
    }

    /// A copy of `bytes` in a spill buffer.
    fn spill(&mut self, bytes: &[u8]) -> Loc {
        let i = self.spill_free.pop().unwrap_or_else(|| {
            self.spill.push(Vec::new());
            (self.spill.len() - 1) as u32
        });
        let b = &mut self.spill[i as usize];
        b.clear();
        b.extend_from_slice(bytes);
        Loc {
            chunk: SPILLED,
            at: i,
            len: bytes.len() as u32,
        }
    }

    /// Lets go of a held record: its chunk may be reused.
    #[inline]
    fn release(&mut self, loc: Loc) {
        if loc.chunk == SPILLED {
            self.spill_free.push(loc.at);
            return;
        }
        let chunk = &mut self.chunks[loc.chunk as usize];
        chunk.live -= 1;
        if chunk.live == 0 && loc.chunk != self.filling {
            self.idle.push(loc.chunk);
        }
    }

    #[inline]
    fn bytes(&self, loc: Loc) -> &[u8] {
        if loc.chunk == SPILLED {
            &self.spill[loc.at as usize]
        } else {
            let at = loc.at as usize;
            &self.chunks[loc.chunk as usize].data[at..at + loc.len as usize]
        }
    }

    /// Room for `len` more bytes in the chunk being filled: another chunk when
    /// it is full (the full one is reused once its records are gone). Returns
    /// the chunk to move out (the keys that point into it), if one had to be.
    #[inline]
    fn room(&mut self, len: usize) -> Option<u32> {
        let f = self.filling as usize;
        if self.chunks[f].data.len() + len <= self.chunk_bytes {
            return None;
        }
        let mut evict = None;
        if self.chunks[f].live > 0 {
            if let Some(c) = self.idle.pop() {
                self.filling = c;
            } else if self.chunks.len() < self.max_chunks {
                self.chunks.push(Chunk::new(self.chunk_bytes));
                self.filling = (self.chunks.len() - 1) as u32;
            } else {
                // Every other chunk holds records: the oldest is moved out.
                let oldest = (0..self.chunks.len() as u32)
                    .filter(|&c| c != self.filling)
                    .min_by_key(|&c| self.chunks[c as usize].age)
                    .expect("at least two chunks");
                evict = Some(oldest);
            }
        }
        if evict.is_none() {
            self.start_filling();
        }
        evict
    }

    fn start_filling(&mut self) {
        self.started += 1;
        let f = &mut self.chunks[self.filling as usize];
        f.data.clear();
        f.age = self.started;
    }

    /// A held record's bytes moved out of chunk `c` to a spill buffer.
    fn move_out(&mut self, c: u32, loc: &mut Loc) {
        if loc.chunk != c {
            return;
        }
        let at = loc.at as usize;
        let i = self.spill_free.pop().unwrap_or_else(|| {
            self.spill.push(Vec::new());
            (self.spill.len() - 1) as u32
        });
        let (data, b) = (&self.chunks[c as usize].data, &mut self.spill[i as usize]);
        b.clear();
        b.extend_from_slice(&data[at..at + loc.len as usize]);
        *loc = Loc {
            chunk: SPILLED,
            at: i,
            len: loc.len,
        };
        self.chunks[c as usize].live -= 1;
    }

    /// Appends `bytes` to the chunk being filled (there is room).
    #[inline]
    fn append(&mut self, bytes: &[u8]) -> Loc {
        let c = &mut self.chunks[self.filling as usize];
        let at = c.data.len();
        c.data.extend_from_slice(bytes);
        c.live += 1;
        Loc {
            chunk: self.filling,
            at: at as u32,
            len: bytes.len() as u32,
        }
    }
}

impl<'r, R: std::io::Read> ReorderBuffer<'r, R> {
    pub fn new(reader: &'r mut crate::reader::TraceReader<R>, window: usize) -> Self {
        // Twice what a window of 128-byte records needs, and at least 1 MiB.
        let max_bytes = (window.max(1) * 256).max(1 << 20);
        Self::with_chunks(reader, window, Self::CHUNK, max_bytes / Self::CHUNK)
    }

    fn with_chunks(
        reader: &'r mut crate::reader::TraceReader<R>,
        window: usize,
        chunk_bytes: usize,
        max_chunks: usize,
    ) -> Self {
        ReorderBuffer {
            reader,
            runs: Vec::new(),
            heap: BinaryHeap::new(),
            held: 0,
            store: Store::new(chunk_bytes, max_chunks),
            lent: None,
            window: window.max(1),
            seq: 0,
            done: false,
        }
    }

    /// Bytes per chunk.
    const CHUNK: usize = 64 << 10;

    /// Most runs kept; the heap takes what fits none of them.
    const MAX_RUNS: usize = 16;

    fn hold(&mut self, key: Key) {
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
            None if self.runs.len() < Self::MAX_RUNS => self.runs.push(VecDeque::from([key])),
            None => self.heap.push(Reverse(key)),
        }
    }

    fn take(&mut self) -> Option<Key> {
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

    /// The held records of chunk `c` moved to spill buffers, so that the
    /// chunk can be filled again.
    fn move_out(&mut self, c: u32) {
        for r in &mut self.runs {
            for k in r.iter_mut() {
                self.store.move_out(c, &mut k.loc);
            }
        }
        let mut keys = std::mem::take(&mut self.heap).into_vec();
        for Reverse(k) in &mut keys {
            self.store.move_out(c, &mut k.loc);
        }
        // The keys' order is unchanged: the heap stays a heap.
        self.heap = BinaryHeap::from(keys);
        debug_assert_eq!(self.store.chunks[c as usize].live, 0);
        self.store.filling = c;
        self.store.start_filling();
    }

    /// The next record in time order; errors pass through at once, in stream
    /// position, as in [`TimeOrdered`].
    #[allow(clippy::should_implement_trait)] // a lending iterator: not `Iterator`
    pub fn next(
        &mut self,
    ) -> Option<Result<crate::reader::RecordRef<'_>, crate::error::TraceError>> {
        if let Some(k) = self.lent.take() {
            self.store.release(k.loc);
        }
        while !self.done && self.held < self.window {
            match self.reader.next_record_ref() {
                Some(Ok(rec)) => {
                    let (ts, block_offset, len) = (rec.ts_ns(), rec.block_offset, rec.bytes.len());
                    let loc = if len > self.store.chunk_bytes {
                        self.store.spill(rec.bytes)
                    } else {
                        match self.store.room(len) {
                            None => self.store.append(rec.bytes),
                            Some(c) => {
                                // `rec` borrows the reader's block: copied out
                                // first, as moving a chunk out needs all of `self`.
                                let copy = rec.bytes.to_vec();
                                self.move_out(c);
                                self.store.append(&copy)
                            }
                        }
                    };
                    self.seq += 1;
                    let seq = self.seq;
                    self.hold(Key {
                        ts,
                        seq,
                        block_offset,
                        loc,
                    });
                }
                Some(Err(e)) => return Some(Err(e)),
                None => self.done = true,
            }
        }
        let k = self.take()?;
        self.lent = Some(k);
        Some(Ok(crate::reader::RecordRef {
            bytes: self.store.bytes(k.loc),
            block_offset: k.block_offset,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::{synthetic_trace, Emitter};
    use crate::kind;
    use crate::{Footer, Records, TraceReader};

    /// Same records, same order as `TimeOrdered`, for windows from 1 to more
    /// than the trace, with out-of-order and equal timestamps, records that stay
    /// in the window to the end (times far ahead), and records shorter and
    /// longer than a chunk; with the default chunks and with chunks so small
    /// and few that records are moved out of pinned chunks all the time.
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
            let mut ts = 1_000_000 + (i / 2) * 10 - (x >> 60) * 37;
            // A few far ahead: held until the end, pinning their chunk.
            if i % 401 == 5 {
                ts += 1 << 40;
            }
            let mut r = e.record(kind::DEV_RX, ts).tid(i as u32).into_bytes();
            // Some longer than a small chunk (kept in a buffer of their own).
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
            for chunks in [None, Some((256, 2)), Some((300, 3)), Some((4096, 4))] {
                let mut b = TraceReader::new(&bytes[..]).unwrap();
                let mut ro = match chunks {
                    None => ReorderBuffer::new(&mut b, window),
                    Some((size, n)) => ReorderBuffer::with_chunks(&mut b, window, size, n),
                };
                let mut got = Vec::new();
                while let Some(r) = ro.next() {
                    got.push(r.unwrap().bytes.to_vec());
                }
                assert_eq!(got.len(), 3000);
                assert!(got == want, "window {window}, chunks {chunks:?}");
                let held: usize = ro.store.chunks.iter().map(|c| c.data.capacity()).sum();
                assert!(ro.store.chunks.iter().all(|c| c.live == 0));
                if chunks == Some((4096, 4)) && window == 5000 {
                    // Records of at most 400 bytes: spilled only when moved out.
                    assert!(!ro.store.spill.is_empty(), "no chunk was moved out");
                }
                let most = ro.store.max_chunks * ro.store.chunk_bytes;
                assert!(held <= most, "{held} bytes in chunks, more than {most}");
            }
        }
    }
}
