//! Time order, cheaply. Records reach the trace in ring-buffer order, a few
//! microseconds apart from timestamp order across CPUs. Instead of a heap over
//! the whole window (a pop per record), records are sorted in batches: with
//! `2 × window` records buffered, a stable sort (linear on nearly sorted input)
//! puts them in order and the first `window` are released. A record displaced by
//! less than `window` positions still comes out in its place.

use magnet_trace::Record;

pub struct Batched<I> {
    inner: I,
    window: usize,
    pending: Vec<Record>,
    ready: std::vec::IntoIter<Record>,
    done: bool,
}

impl<I, E> Batched<I>
where
    I: Iterator<Item = Result<Record, E>>,
{
    pub fn new(inner: I, window: usize) -> Self {
        Batched {
            inner,
            window: window.max(1),
            pending: Vec::new(),
            ready: Vec::new().into_iter(),
            done: false,
        }
    }
}

impl<I, E> Iterator for Batched<I>
where
    I: Iterator<Item = Result<Record, E>>,
{
    type Item = Result<Record, E>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.ready.next() {
                return Some(Ok(r));
            }
            if self.done && self.pending.is_empty() {
                return None;
            }
            while !self.done && self.pending.len() < 2 * self.window {
                match self.inner.next() {
                    Some(Ok(r)) => self.pending.push(r),
                    // Errors pass through at once, in stream position.
                    Some(Err(e)) => return Some(Err(e)),
                    None => self.done = true,
                }
            }
            self.pending.sort_by_key(|r| r.ts_ns());
            let n = if self.done {
                self.pending.len()
            } else {
                self.window
            };
            let rest = self.pending.split_off(n);
            let batch = std::mem::replace(&mut self.pending, rest);
            self.ready = batch.into_iter();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ts: u64) -> Record {
        let mut bytes = vec![0u8; 24];
        bytes[..8].copy_from_slice(&ts.to_le_bytes());
        Record {
            bytes,
            block_offset: 0,
        }
    }

    #[test]
    fn sorts_records_displaced_by_less_than_the_window() {
        // 0..1000 with every pair of blocks of 5 swapped (displacement < 10).
        let mut ts: Vec<u64> = (0..1000).collect();
        for c in ts.chunks_mut(10) {
            c.rotate_left(5);
        }
        let input = ts.into_iter().map(|t| Ok::<_, ()>(rec(t)));
        let out: Vec<u64> = Batched::new(input, 10)
            .map(|r| r.unwrap().ts_ns())
            .collect();
        assert_eq!(out, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn errors_pass_through_and_equal_times_keep_their_order() {
        let mut a = rec(5);
        a.block_offset = 1;
        let mut b = rec(5);
        b.block_offset = 2;
        let input = vec![Ok(rec(7)), Ok(a), Err("bad"), Ok(b), Ok(rec(1))];
        let out: Vec<Result<(u64, u64), &str>> = Batched::new(input.into_iter(), 2)
            .map(|r| r.map(|r| (r.ts_ns(), r.block_offset)))
            .collect();
        assert_eq!(
            out,
            vec![Err("bad"), Ok((1, 0)), Ok((5, 1)), Ok((5, 2)), Ok((7, 0))]
        );
    }
}
