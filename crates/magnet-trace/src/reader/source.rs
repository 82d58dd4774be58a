//! The reader's byte source.

use std::io::Read;

use crate::block::*;
use crate::error::TraceError;

/// Bytes looked at per step of a resynchronising scan.
const SCAN_CHUNK: usize = 64 << 10;

pub(super) fn is_magic(x: &[u8]) -> bool {
    x == BLOCK_MAGIC || x == DELTA_BLOCK_MAGIC || x == END_MAGIC
}

/// The byte source: a buffer over the reader that can hold a whole block
/// (so that a block is checked before it is consumed, and a scan can look at
/// a candidate block and go on from its next byte).
pub(super) struct Source<R: Read> {
    pub(super) inner: R,
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
    eof: bool,
    /// File offset of `buf[pos]`.
    pub(super) offset: u64,
}

impl<R: Read> Source<R> {
    pub(super) fn new(inner: R) -> Self {
        Source {
            inner,
            buf: vec![0; 1 << 20],
            pos: 0,
            filled: 0,
            eof: false,
            offset: 0,
        }
    }

    /// The bytes buffered and not yet consumed.
    pub(super) fn avail(&self) -> &[u8] {
        &self.buf[self.pos..self.filled]
    }

    /// Buffers at least `n` bytes unless the source ends first; returns what
    /// is buffered (fewer than `n` only at the end).
    pub(super) fn fill(&mut self, n: usize) -> Result<&[u8], TraceError> {
        while self.filled - self.pos < n && !self.eof {
            if self.pos + n > self.buf.len() {
                self.buf.copy_within(self.pos..self.filled, 0);
                self.filled -= self.pos;
                self.pos = 0;
            }
            if self.filled == self.buf.len() {
                // Full and still short of `n`: grow by doubling as the bytes
                // arrive, not at once to what a (maybe damaged) length field
                // asks: a 64 MiB length in a short file costs the file.
                let want = (self.buf.len() * 2).min((self.pos + n).next_multiple_of(1 << 20));
                self.buf.resize(want, 0);
            }
            match self.inner.read(&mut self.buf[self.filled..]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.filled += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(TraceError::Io {
                        offset: self.offset + (self.filled - self.pos) as u64,
                        source,
                    })
                }
            }
        }
        Ok(self.avail())
    }

    pub(super) fn consume(&mut self, n: usize) {
        let n = n.min(self.filled - self.pos);
        self.pos += n;
        self.offset += n as u64;
    }

    /// The offset of the first whole block at or after where the reader
    /// stands (consuming the bytes before it), or None (all consumed).
    pub(super) fn find_block(&mut self) -> Result<Option<u64>, TraceError> {
        if self.candidate_holds(0)? {
            return Ok(Some(self.offset));
        }
        self.scan()
    }

    /// Consumes bytes up to the next block (its offset) or to the end of the
    /// file (None), starting one byte past where the reader stands.
    pub(super) fn scan(&mut self) -> Result<Option<u64>, TraceError> {
        self.consume(1);
        loop {
            let window = self.fill(SCAN_CHUNK)?;
            if window.len() < 4 {
                let n = window.len();
                self.consume(n);
                return Ok(None);
            }
            let Some(i) = window.windows(4).position(is_magic) else {
                let n = window.len() - 3;
                self.consume(n);
                continue;
            };
            self.consume(i);
            if self.candidate_holds(0)? {
                return Ok(Some(self.offset));
            }
            self.consume(1);
        }
    }

    /// Whether a whole block with a good checksum starts `skip` bytes past
    /// where the reader stands.
    pub(super) fn candidate_holds(&mut self, skip: usize) -> Result<bool, TraceError> {
        let head = self.fill(skip + BLOCK_HEAD_LEN)?;
        let Some(head) = head.get(skip..skip + BLOCK_HEAD_LEN) else {
            return Ok(false);
        };
        let len = u32_at(head, 4) as usize;
        // The writer's END block has a zero record count.
        if !is_magic(&head[..4])
            || len > MAX_BLOCK_PAYLOAD
            || (&head[..4] == END_MAGIC && u32_at(head, 8) != 0)
        {
            return Ok(false);
        }
        let sum = u32_at(head, 12);
        let at = skip + BLOCK_HEAD_LEN;
        let block = self.fill(at + len)?;
        Ok(block.get(at..at + len).is_some_and(|p| crc(p) == sum))
    }
}
