//! Reads a trace block by block. Damage never panics and loses no more than
//! the damaged block: a block whose checksum fails is reported and skipped, and
//! its length field is not trusted (it may be the damage): the reader scans on
//! from the block's next byte for a block magic whose block's checksum holds. A
//! file cut short yields everything up to its last whole block and then one
//! `Truncated` error saying where it ended. Whole-block damage that checksums
//! cannot see (a block dropped or repeated, an END block in the middle) is
//! reported too: a block that repeats an earlier one byte for byte is skipped,
//! and at the end what was read is compared with the END block's totals, one
//! `Totals` error per kind that does not add up.

use std::collections::{HashMap, VecDeque};
use std::io::Read;

use crate::block::*;
use crate::catalog::{kind, HEADER_LEN};
use crate::error::TraceError;
use crate::header::{Footer, Header};

mod blocks;
mod open;
mod source;
mod totals;

use source::Source;
use totals::totals_mismatch;

/// One record as written by the kernel, with where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub bytes: Vec<u8>,
    /// Byte offset of the block that holds the record.
    pub block_offset: u64,
}

impl Record {
    pub fn ts_ns(&self) -> u64 {
        u64_at(&self.bytes, 0)
    }
    pub fn kind(&self) -> u16 {
        u16_at(&self.bytes, 8)
    }
    pub fn cpu(&self) -> u16 {
        u16_at(&self.bytes, 10)
    }
    pub fn pid(&self) -> u32 {
        u32_at(&self.bytes, 12)
    }
    pub fn tid(&self) -> u32 {
        u32_at(&self.bytes, 16)
    }
    pub fn flags(&self) -> u32 {
        u32_at(&self.bytes, 20)
    }
}

impl Record {
    /// The record borrowed.
    pub fn view(&self) -> RecordRef<'_> {
        RecordRef {
            bytes: &self.bytes,
            block_offset: self.block_offset,
        }
    }
}

/// One record borrowed from a buffer that holds many (a reader's batch).
#[derive(Clone, Copy, Debug)]
pub struct RecordRef<'a> {
    pub bytes: &'a [u8],
    /// Byte offset of the block that holds the record.
    pub block_offset: u64,
}

impl RecordRef<'_> {
    pub fn ts_ns(&self) -> u64 {
        u64_at(self.bytes, 0)
    }
    pub fn kind(&self) -> u16 {
        u16_at(self.bytes, 8)
    }
    pub fn cpu(&self) -> u16 {
        u16_at(self.bytes, 10)
    }
    pub fn pid(&self) -> u32 {
        u32_at(self.bytes, 12)
    }
    pub fn tid(&self) -> u32 {
        u32_at(self.bytes, 16)
    }
    pub fn flags(&self) -> u32 {
        u32_at(self.bytes, 20)
    }
}

pub struct TraceReader<R: Read> {
    src: Source<R>,
    header: Header,
    /// The header was read from damaged bytes: the END block's copy, when
    /// the reader gets there, replaces it.
    header_salvaged: bool,
    /// The format version the reader goes by (the preamble's, checked).
    version: u16,
    /// Whether a block the version does not allow was reported (once).
    version_said: bool,
    footer: Option<Footer>,
    payload: Vec<u8>,
    block_offset: u64,
    pos: usize,
    index: u32,
    done: bool,
    /// Errors to report before the next block: a delta-coded block that failed
    /// to decode part way (after the records before the damage), and at the
    /// end the totals that do not add up.
    pending: VecDeque<TraceError>,
    /// An error being held while more of its kind follow in a row (they are
    /// reported as one), with their count and the last one's offset.
    held: Option<(TraceError, u64, u64)>,
    /// A record found after a held error, returned at the next call.
    ready: Option<(usize, usize)>,
    /// Blocks skipped because they were damaged.
    pub damaged_blocks: u64,
    /// Errors reported so far (damage of every kind, a cut included).
    damage: u64,
    /// (checksum, length) of every data block read, with its offset: a block
    /// that repeats one byte for byte is a copy (no two real blocks share
    /// their records' timestamps).
    seen: HashMap<(u32, u32), u64>,
    tally: Tally,
}

/// What was read, for the comparison with the END block's totals.
struct Tally {
    records: u64,
    by_kind: Vec<u64>,
    /// The LOST records' counts, summed without wrapping.
    lost: u64,
    /// Where a LOST record keeps its count (the trace's own catalog says).
    lost_at: Option<usize>,
}

impl<R: Read> TraceReader<R> {
    /// Reads the preamble and header. A damaged header costs only what it
    /// damaged: the records are read anyway (with the catalog the format
    /// version defines), the first error [`TraceReader::next_record`]
    /// returns says in one line what was lost, and the END block's copy of
    /// the header restores it when the reader gets there. Errors here only
    /// for what is no trace at all: another file, an unsupported version, a
    /// big-endian writer, a header with no block after it.
    pub fn new(src: R) -> Result<Self, TraceError> {
        Self::open(src, None)
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The END block's totals; `None` until the reader reached it, and for a
    /// trace whose recorder did not finish.
    pub fn footer(&self) -> Option<&Footer> {
        self.footer.as_ref()
    }

    /// Byte offset the reader has consumed up to.
    pub fn offset(&self) -> u64 {
        self.src.offset
    }

    /// How many errors the reader has reported: damage it stepped over, a cut,
    /// totals that do not add up. A command that read a trace with damage
    /// exits with code 1 (docs/exit-codes.md) after printing what it read.
    pub fn damage(&self) -> u64 {
        self.damage
    }

    pub fn next_record(&mut self) -> Option<Result<Record, TraceError>> {
        Some(self.next_raw()?.map(|(at, len)| Record {
            bytes: self.payload[at..at + len].to_vec(),
            block_offset: self.block_offset,
        }))
    }

    /// [`TraceReader::next_record`], with the record's bytes appended to `out`
    /// instead of a buffer of its own: returns the offset of the record's
    /// block. Readers that keep many records (to sort them) keep them in one
    /// buffer this way.
    pub fn append_record(&mut self, out: &mut Vec<u8>) -> Option<Result<u64, TraceError>> {
        Some(self.next_raw()?.map(|(at, len)| {
            out.extend_from_slice(&self.payload[at..at + len]);
            self.block_offset
        }))
    }

    /// [`TraceReader::next_record`], borrowed from the reader's block buffer
    /// (valid until the next call).
    pub fn next_record_ref(&mut self) -> Option<Result<RecordRef<'_>, TraceError>> {
        Some(self.next_raw()?.map(|(at, len)| RecordRef {
            bytes: &self.payload[at..at + len],
            block_offset: self.block_offset,
        }))
    }

    /// The next record's place in the current block's payload. Errors of one
    /// kind in a row (the same words, whatever the numbers: 100,000 empty
    /// blocks, each a repeat of the first) come out as one
    /// [`TraceError::Repeated`] that keeps the first one's offset.
    fn next_raw(&mut self) -> Option<Result<(usize, usize), TraceError>> {
        let r = loop {
            if let Some(at) = self.ready.take() {
                break Some(Ok(at));
            }
            match self.next_raw_inner() {
                Some(Err(e)) if e.is_recoverable() => {
                    let offset = e.offset().unwrap_or(0);
                    match &mut self.held {
                        Some((first, more, last)) if same_kind(first, &e) => {
                            *more += 1;
                            *last = offset;
                        }
                        held => {
                            if let Some(out) = held.replace((e, 0, offset)) {
                                break Some(Err(repeated(out)));
                            }
                        }
                    }
                }
                other => {
                    if let Some(out) = self.held.take() {
                        match other {
                            Some(Ok(at)) => self.ready = Some(at),
                            Some(Err(e)) => self.pending.push_front(e),
                            None => {}
                        }
                        break Some(Err(repeated(out)));
                    }
                    break other;
                }
            }
        };
        if let Some(Err(_)) = r {
            self.damage += 1;
        }
        r
    }

    fn next_raw_inner(&mut self) -> Option<Result<(usize, usize), TraceError>> {
        loop {
            if self.pos < self.payload.len() {
                return Some(self.record_in_block());
            }
            if let Some(e) = self.pending.pop_front() {
                return Some(Err(e));
            }
            if self.done {
                return None;
            }
            match self.next_block() {
                Ok(true) => continue,
                Ok(false) => self.finish(true),
                Err(e) => {
                    if !e.is_recoverable() {
                        // A cut is the end of what there is to read: the
                        // totals still say what is missing (when an END
                        // block was met in the middle).
                        self.finish(matches!(e, TraceError::Truncated { .. }));
                    }
                    return Some(Err(e));
                }
            }
        }
    }

    /// Nothing more to read: queue what does not add up.
    fn finish(&mut self, check: bool) {
        self.done = true;
        if !check {
            return;
        }
        if let Some(f) = &self.footer {
            for line in totals_mismatch(f, &self.tally, &self.header.catalog) {
                self.pending.push_back(TraceError::Totals(line));
            }
        }
    }

    fn record_in_block(&mut self) -> Result<(usize, usize), TraceError> {
        let p = &self.payload;
        let index = self.index;
        let bad = |reason: String| TraceError::BadRecord {
            offset: self.block_offset,
            index,
            reason,
        };
        if self.pos + 4 > p.len() {
            self.pos = p.len();
            return Err(bad("record length runs past the end of the block".into()));
        }
        let len = u32_at(p, self.pos) as usize;
        let start = self.pos + 4;
        if len < HEADER_LEN || start + len > p.len() {
            self.pos = p.len();
            return Err(bad(format!(
                "record length {len} does not fit the block; rest of block skipped"
            )));
        }
        self.pos = start + len;
        self.index += 1;
        let t = &mut self.tally;
        t.records += 1;
        let k = u16_at(p, start + 8);
        t.by_kind[k as usize] += 1;
        if k == kind::LOST {
            if let Some(n) = t.lost_at.and_then(|at| lost_count(&p[start..], at)) {
                t.lost = crate::summary::lost_total([t.lost, n]);
            }
        }
        Ok((start, len))
    }
}

/// Where a LOST record keeps its count, as the trace's own catalog says
/// (None where the catalog has no 8-byte `count`).
pub(crate) fn lost_count_at(header: &Header) -> Option<usize> {
    header
        .catalog
        .get(kind::LOST)
        .and_then(|k| k.field("count"))
        .filter(|f| f.ty.size() == 8)
        .map(|f| f.offset as usize)
}

/// The count of a LOST record (`record` from its first byte), None where
/// the record is too short to hold it.
pub(crate) fn lost_count(record: &[u8], at: usize) -> Option<u64> {
    let b = record.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

/// Whether two errors are of one kind: the same words, whatever the numbers.
fn same_kind(a: &TraceError, b: &TraceError) -> bool {
    let words = |e: &TraceError| {
        let mut t = e.to_string();
        t.retain(|c| !c.is_ascii_digit());
        t
    };
    std::mem::discriminant(a) == std::mem::discriminant(b) && words(a) == words(b)
}

/// A held error, with the count of those like it that followed.
fn repeated((first, more, last): (TraceError, u64, u64)) -> TraceError {
    if more == 0 {
        return first;
    }
    TraceError::Repeated {
        first: Box::new(first),
        more,
        last,
    }
}
