//! Time order, cheaply. Records reach the trace in ring-buffer order, a few
//! microseconds apart from timestamp order across CPUs. Instead of a heap over
//! the whole window (a pop per record), records are sorted in batches: with
//! `2 × window` records buffered, a stable sort (linear on nearly sorted input)
//! puts them in order and the first `window` are released. A record displaced by
//! less than `window` positions still comes out in its place.
//!
//! The records' bytes are kept in two large buffers, not one allocation each:
//! new records go into one while the other still holds the previous batch, and
//! the records come out of them nearly in the order they were read, so the
//! analysis reads memory almost sequentially.

use magnet_trace::RecordRef;

/// Where one pending record's bytes are.
#[derive(Clone, Copy, Debug)]
struct Entry {
    ts: u64,
    arena: usize,
    start: usize,
    len: usize,
    block_offset: u64,
}

/// Sorts records from `source` in batches. `source` appends the next record's
/// bytes to the buffer it is given and returns its block offset (`None` at the
/// end).
pub struct Batched<F> {
    source: F,
    window: usize,
    arenas: [Vec<u8>; 2],
    /// The arena new records go into.
    cur: usize,
    pending: Vec<Entry>,
    ready: Vec<Entry>,
    next: usize,
    done: bool,
}

impl<F, E> Batched<F>
where
    F: FnMut(&mut Vec<u8>) -> Option<Result<u64, E>>,
{
    pub fn new(source: F, window: usize) -> Self {
        Batched {
            source,
            window: window.max(1),
            arenas: [Vec::new(), Vec::new()],
            cur: 0,
            pending: Vec::new(),
            ready: Vec::new(),
            next: 0,
            done: false,
        }
    }

    /// The next record in time order (errors pass through at once, in stream
    /// position).
    pub fn pull(&mut self) -> Option<Result<RecordRef<'_>, E>> {
        loop {
            if let Some(&e) = self.ready.get(self.next) {
                self.next += 1;
                return Some(Ok(RecordRef {
                    bytes: &self.arenas[e.arena][e.start..e.start + e.len],
                    block_offset: e.block_offset,
                }));
            }
            if self.done && self.pending.is_empty() {
                return None;
            }
            if !self.done && self.pending.len() < 2 * self.window {
                self.switch_arena();
            }
            while !self.done && self.pending.len() < 2 * self.window {
                let arena = &mut self.arenas[self.cur];
                let start = arena.len();
                match (self.source)(arena) {
                    Some(Ok(block_offset)) => {
                        let len = arena.len() - start;
                        let ts = if len >= 8 {
                            u64::from_le_bytes(arena[start..start + 8].try_into().expect("8"))
                        } else {
                            0
                        };
                        self.pending.push(Entry {
                            ts,
                            arena: self.cur,
                            start,
                            len,
                            block_offset,
                        });
                    }
                    Some(Err(e)) => return Some(Err(e)),
                    None => self.done = true,
                }
            }
            self.pending.sort_by_key(|e| e.ts);
            let n = if self.done {
                self.pending.len()
            } else {
                self.window
            };
            self.ready.clear();
            self.ready.extend(self.pending.drain(..n));
            self.next = 0;
        }
    }

    /// Before new records are read (every earlier record handed out): the
    /// other arena becomes the one to fill, its still-pending records moved to
    /// the current one first.
    fn switch_arena(&mut self) {
        let (cur, other) = (self.cur, 1 - self.cur);
        if self.pending.iter().all(|e| e.arena == cur) {
            if self.pending.is_empty() {
                self.arenas[cur].clear();
            }
            self.arenas[other].clear();
        } else {
            let [a0, a1] = &mut self.arenas;
            let (to, from) = if cur == 0 { (a0, &*a1) } else { (a1, &*a0) };
            for e in self.pending.iter_mut().filter(|e| e.arena == other) {
                let start = to.len();
                to.extend_from_slice(&from[e.start..e.start + e.len]);
                *e = Entry {
                    arena: cur,
                    start,
                    ..*e
                };
            }
            self.arenas[other].clear();
        }
        self.cur = other;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use magnet_trace::Record;

    fn rec(ts: u64) -> Record {
        let mut bytes = vec![0u8; 24];
        bytes[..8].copy_from_slice(&ts.to_le_bytes());
        Record {
            bytes,
            block_offset: 0,
        }
    }

    /// A source over records given in advance.
    fn source<E>(
        recs: Vec<Result<Record, E>>,
    ) -> impl FnMut(&mut Vec<u8>) -> Option<Result<u64, E>> {
        let mut it = recs.into_iter();
        move |out| {
            Some(it.next()?.map(|r| {
                out.extend_from_slice(&r.bytes);
                r.block_offset
            }))
        }
    }

    #[test]
    fn sorts_records_displaced_by_less_than_the_window() {
        // 0..1000 with every pair of blocks of 5 swapped (displacement < 10).
        let mut ts: Vec<u64> = (0..1000).collect();
        for c in ts.chunks_mut(10) {
            c.rotate_left(5);
        }
        let input = ts.into_iter().map(|t| Ok::<_, ()>(rec(t))).collect();
        let mut b = Batched::new(source(input), 10);
        let mut out = Vec::new();
        while let Some(r) = b.pull() {
            out.push(r.unwrap().ts_ns());
        }
        assert_eq!(out, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn errors_pass_through_and_equal_times_keep_their_order() {
        let mut a = rec(5);
        a.block_offset = 1;
        let mut b = rec(5);
        b.block_offset = 2;
        let input = vec![Ok(rec(7)), Ok(a), Err("bad"), Ok(b), Ok(rec(1))];
        let mut batched = Batched::new(source(input), 2);
        let mut out: Vec<Result<(u64, u64), &str>> = Vec::new();
        while let Some(r) = batched.pull() {
            out.push(r.map(|r| (r.ts_ns(), r.block_offset)));
        }
        assert_eq!(
            out,
            vec![Err("bad"), Ok((1, 0)), Ok((5, 1)), Ok((5, 2)), Ok((7, 0))]
        );
    }
}
