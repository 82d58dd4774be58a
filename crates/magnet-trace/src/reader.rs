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

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::io::Read;

use crate::block::*;
use crate::catalog::{kind, Catalog, HEADER_LEN};
use crate::delta::decode_payload;
use crate::error::TraceError;
use crate::header::{Footer, Header};

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

    fn open(src: R, copy: Option<CopyFinder<R>>) -> Result<Self, TraceError> {
        let mut src = Source::new(src);
        let pre: [u8; PREAMBLE_LEN] = {
            let got = src.fill(PREAMBLE_LEN)?;
            if got.len() < PREAMBLE_LEN {
                if got.len() < MAGIC.len() || got[..8] != MAGIC[..] {
                    return Err(TraceError::NotATrace);
                }
                return Err(TraceError::Truncated {
                    offset: got.len() as u64,
                    reason: "inside the file preamble".into(),
                });
            }
            got[..PREAMBLE_LEN].try_into().expect("preamble")
        };
        // A magic a bit or two away from ours is ours, damaged: the blocks
        // that follow decide (without one, it is no trace).
        let magic_bits: u32 = pre[..8]
            .iter()
            .zip(MAGIC)
            .map(|(a, b)| (a ^ b).count_ones())
            .sum();
        if magic_bits > 2 {
            return Err(TraceError::NotATrace);
        }
        if u16_at(&pre, 10) == BOM.swap_bytes() {
            return Err(TraceError::ByteOrder);
        }
        let mut damage = Vec::new();
        if magic_bits > 0 {
            damage.push((0, "its magic is damaged".to_string()));
        }
        if u16_at(&pre, 10) != BOM {
            damage.push((10, "its byte-order mark is damaged".to_string()));
        }
        let claimed = u16_at(&pre, 8);
        let len = u32_at(&pre, 12) as usize;
        src.consume(PREAMBLE_LEN);
        let json = src.fill(len.min(MAX_HEADER_JSON))?;
        let (got, sum_ok) = (
            json.len(),
            json.len() >= len && crc(&json[..len]) == u32_at(&pre, 16),
        );
        let parsed = (len <= MAX_HEADER_JSON && sum_ok)
            .then(|| serde_json::from_slice::<Header>(&json[..len]).ok())
            .flatten();
        let (header, lost) = if let Some(header) = parsed {
            src.consume(len);
            (header, None)
        } else {
            // Where the header ends is unknown (its length may be the
            // damage): the blocks start at the first whole block after the
            // preamble.
            let why = if len > MAX_HEADER_JSON {
                format!("its length {len} exceeds the limit of {MAX_HEADER_JSON} bytes")
            } else if got < len {
                format!("its length {len} runs past the end of the file")
            } else if !sum_ok {
                "checksum mismatch".to_string()
            } else {
                "its JSON is not a header".to_string()
            };
            // The damaged bytes, for what still parses in them: as many as
            // the length says, at least 1 MiB (a length damaged smaller).
            let bytes = src.fill(len.clamp(1 << 20, MAX_HEADER_JSON))?.to_vec();
            let Some(first) = src.find_block()? else {
                return Err(if magic_bits > 0 {
                    TraceError::NotATrace
                } else if len <= MAX_HEADER_JSON && got < len {
                    TraceError::Truncated {
                        offset: (PREAMBLE_LEN + got) as u64,
                        reason: format!("inside the header ({got} of {len} bytes)"),
                    }
                } else {
                    TraceError::BadHeader {
                        offset: PREAMBLE_LEN as u64,
                        reason: format!("{why}, and no block follows it"),
                    }
                });
            };
            let region = &bytes[..(first as usize - PREAMBLE_LEN).min(bytes.len())];
            damage.push((PREAMBLE_LEN as u64, why));
            let copy = copy.and_then(|find| find(&mut src.inner));
            match copy {
                Some((h, at)) => {
                    damage.push((
                        at,
                        format!("restored from its copy in the END block (byte {at})"),
                    ));
                    (h, None)
                }
                None => {
                    let version = if (1..=VERSION).contains(&claimed) {
                        claimed
                    } else {
                        VERSION
                    };
                    let (h, lost) = salvage(region, version);
                    (h, Some(lost))
                }
            }
        };
        // The version: the preamble's, checked against the header's own
        // record of it (traces written before that record are versions 1
        // or 2, whatever a damaged preamble says).
        let version = match header.format {
            Some(f) if f == 0 || f > VERSION => return Err(TraceError::Version(f, VERSION)),
            Some(f) if f != claimed => {
                damage.push((
                    8,
                    format!("its format version says {claimed}, the header {f}; read as {f}"),
                ));
                f
            }
            Some(f) => f,
            None if (1..=VERSION).contains(&claimed) => claimed,
            None if lost.is_none() => {
                damage.push((
                    8,
                    format!(
                        "its format version {claimed} is damaged (the header is of a \
                         version-1 or -2 writer); read as {VERSION}"
                    ),
                ));
                VERSION
            }
            None => return Err(TraceError::Version(claimed, VERSION)),
        };
        let mut pending = VecDeque::new();
        if let Some((offset, _)) = damage.first() {
            let mut reason: Vec<String> = damage.iter().map(|(_, why)| why.clone()).collect();
            if let Some(lost) = &lost {
                reason.push(lost.describe(version));
            }
            pending.push_back(TraceError::DamagedHeader {
                offset: *offset,
                reason: reason.join("; "),
            });
        }
        let lost_at = lost_count_at(&header);
        Ok(TraceReader {
            src,
            header,
            header_salvaged: lost.is_some(),
            version,
            version_said: false,
            footer: None,
            payload: Vec::new(),
            block_offset: 0,
            pos: 0,
            index: 0,
            done: false,
            pending,
            held: None,
            ready: None,
            damaged_blocks: 0,
            damage: 0,
            seen: HashMap::new(),
            tally: Tally {
                records: 0,
                by_kind: vec![0; 1 << 16],
                lost: 0,
                lost_at,
            },
        })
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

    /// Loads the next block. Ok(false) at a clean end (END block, then the
    /// end of the file).
    fn next_block(&mut self) -> Result<bool, TraceError> {
        let at = self.src.offset;
        let got = self.src.fill(BLOCK_HEAD_LEN)?.len();
        if got < BLOCK_HEAD_LEN {
            self.src.consume(got);
            return Err(TraceError::Truncated {
                offset: at,
                reason: if got == 0 && self.footer.is_some() {
                    "no END block at the end (the one read was in the middle)".into()
                } else if got == 0 {
                    "no END block (the recorder did not finish)".into()
                } else {
                    format!("inside a block head ({got} of {BLOCK_HEAD_LEN} bytes)")
                },
            });
        }
        let head: [u8; BLOCK_HEAD_LEN] = self.src.avail()[..BLOCK_HEAD_LEN]
            .try_into()
            .expect("block head");
        let magic = &head[..4];
        if !is_magic(magic) {
            self.damaged_blocks += 1;
            let hint = Some(u32_at(&head, 4) as usize);
            return Err(self.resync(at, "bad block magic".into(), hint, None));
        }
        let len = u32_at(&head, 4) as usize;
        let count = u32_at(&head, 8);
        if len > MAX_BLOCK_PAYLOAD {
            self.damaged_blocks += 1;
            let why = format!("block length {len} exceeds the limit");
            return Err(self.resync(at, why, None, None));
        }
        let whole = BLOCK_HEAD_LEN + len;
        let got = self.src.fill(whole)?.len();
        if got < whole {
            // Cut inside this block, or its length is the damage: a whole
            // block further on says which.
            let payload = got - BLOCK_HEAD_LEN;
            let why = format!("its length {len} runs past the end of the file");
            let cut = TraceError::Truncated {
                offset: at,
                reason: format!("inside a block ({payload} of {len} payload bytes)"),
            };
            return Err(self.resync(at, why, None, Some(cut)));
        }
        let sum = u32_at(&head, 12);
        if crc(&self.src.avail()[BLOCK_HEAD_LEN..whole]) != sum {
            self.damaged_blocks += 1;
            // The length may be what was damaged: skip by it only to a
            // block that holds.
            let why = format!("checksum mismatch; its {count} records were skipped");
            return Err(self.resync(at, why, Some(len), None));
        }
        if magic == END_MAGIC {
            let json = &self.src.avail()[BLOCK_HEAD_LEN..whole];
            let footer = serde_json::from_slice(json);
            if self.header_salvaged {
                if let Some(copy) = header_copy(json) {
                    self.header = copy;
                    self.header_salvaged = false;
                }
            }
            self.src.consume(whole);
            self.footer = Some(footer.map_err(|e| TraceError::BadBlock {
                offset: at,
                reason: format!("invalid END block JSON: {e}"),
            })?);
            if count != 0 {
                self.pending.push_back(TraceError::BadBlock {
                    offset: at,
                    reason: format!("END block head counts {count} records, not 0"),
                });
            }
            if self.src.fill(1)?.is_empty() {
                return Ok(false);
            }
            return Err(TraceError::BadBlock {
                offset: at,
                reason: "an END block in the middle of the trace (blocks follow it); \
                         reading on"
                    .into(),
            });
        }
        if let Some(&first) = self.seen.get(&(sum, len as u32)) {
            self.src.consume(whole);
            self.damaged_blocks += 1;
            return Err(TraceError::BadBlock {
                offset: at,
                reason: format!(
                    "repeats the block at byte {first} (same length and checksum); \
                     its {count} records were skipped"
                ),
            });
        }
        self.seen.insert((sum, len as u32), at);
        if magic == DELTA_BLOCK_MAGIC && self.version < 2 && !self.version_said {
            // The block's own magic says how it is coded (and its checksum
            // holds): read it so, and say once that the version is wrong.
            self.version_said = true;
            self.pending.push_back(TraceError::BadBlock {
                offset: at,
                reason: format!(
                    "a delta-coded block (MGBD), which format version {} does not have: \
                     the version at byte 8 is wrong; blocks are read by their own magic",
                    self.version
                ),
            });
        }
        self.block_offset = at;
        self.pos = 0;
        self.index = 0;
        self.payload.clear();
        let body = &self.src.avail()[BLOCK_HEAD_LEN..whole];
        let held = if magic == DELTA_BLOCK_MAGIC {
            match decode_payload(body, &mut self.payload) {
                Ok(n) => Some(n),
                Err(e) => {
                    self.pending.push_back(TraceError::BadRecord {
                        offset: at,
                        index: e.index,
                        reason: format!("{}; rest of block skipped", e.reason),
                    });
                    None
                }
            }
        } else {
            self.payload.extend_from_slice(body);
            plain_count(body)
        };
        // The head's count is outside the checksum: the payload is right.
        if held.is_some_and(|n| n != count) {
            self.pending.push_back(TraceError::BadBlock {
                offset: at,
                reason: format!(
                    "its head counts {count} records, its payload holds {}",
                    held.unwrap_or(0)
                ),
            });
        }
        self.src.consume(whole);
        Ok(true)
    }

    /// After damage at `at`: find the next block. Where the damaged block's
    /// head says it ends (`len`, its payload length, when given) is taken
    /// only if a whole block with a good checksum starts there; else the
    /// reader scans on from the damaged block's next byte for a block magic
    /// whose block holds (a magic inside a frame's payload does not), so
    /// that later blocks are still read. Returns the error to report: `why`
    /// and the bytes skipped, or `cut` (else "no further block found") when
    /// no such block follows.
    fn resync(
        &mut self,
        at: u64,
        why: String,
        len: Option<usize>,
        cut: Option<TraceError>,
    ) -> TraceError {
        let found = match len.filter(|&l| l <= MAX_BLOCK_PAYLOAD) {
            Some(l) => match self.src.candidate_holds(BLOCK_HEAD_LEN + l) {
                Ok(true) => {
                    self.src.consume(BLOCK_HEAD_LEN + l);
                    Ok(Some(self.src.offset))
                }
                Ok(false) => self.src.scan(),
                Err(e) => Err(e),
            },
            None => self.src.scan(),
        };
        match found {
            Ok(Some(next)) => TraceError::BadBlock {
                offset: at,
                reason: format!(
                    "{why}; skipped {} bytes to the next whole block (byte {next})",
                    next - at
                ),
            },
            Ok(None) => {
                self.done = true;
                cut.unwrap_or_else(|| TraceError::BadBlock {
                    offset: at,
                    reason: format!("{why}; no further block found"),
                })
            }
            Err(e) => e,
        }
    }
}

/// Bytes looked at per step of a resynchronising scan.
const SCAN_CHUNK: usize = 64 << 10;

/// Records in a plain block's payload, when its framing walks exactly to
/// its end (else the records themselves report the damage).
fn plain_count(p: &[u8]) -> Option<u32> {
    let (mut at, mut n) = (0usize, 0u32);
    while at < p.len() {
        let len = p.get(at..at + 4).map(|b| u32_at(b, 0) as usize)?;
        at = at.checked_add(4 + len)?;
        n += 1;
    }
    (at == p.len()).then_some(n)
}

fn is_magic(x: &[u8]) -> bool {
    x == BLOCK_MAGIC || x == DELTA_BLOCK_MAGIC || x == END_MAGIC
}

/// What was read against the END block's totals: one line per kind (or
/// total) that does not add up. A footer with no totals at all (records 0,
/// nothing generated or lost: written by a tool, not the recorder) is not
/// checked.
fn totals_mismatch(f: &Footer, t: &Tally, catalog: &Catalog) -> Vec<String> {
    if f.records == 0 && f.lost_kernel == 0 && f.generated.is_empty() && f.recorded.is_empty() {
        return Vec::new();
    }
    let lost_name = catalog
        .get(kind::LOST)
        .map_or_else(|| "lost".to_string(), |d| d.name.clone());
    let mut read: BTreeMap<String, u64> = BTreeMap::new();
    for (k, &n) in t.by_kind.iter().enumerate().filter(|(_, n)| **n > 0) {
        let name = catalog
            .get(k as u16)
            .map_or_else(|| format!("kind{k}"), |d| d.name.clone());
        *read.entry(name).or_default() += n;
    }
    let diff = |r: u64, w: u64| {
        if r < w {
            format!("{} missing", w - r)
        } else {
            format!("{} more than written", r - w)
        }
    };
    let mut out = Vec::new();
    if !f.recorded.is_empty() {
        let names: BTreeSet<&String> = f.recorded.keys().chain(read.keys()).collect();
        for name in names {
            let r = read.get(name).copied().unwrap_or(0);
            let w = f.recorded.get(name).copied().unwrap_or(0);
            if r != w {
                out.push(format!(
                    "{name}: {r} records read, the END block counts {w} written ({})",
                    diff(r, w)
                ));
            }
        }
    } else if !f.generated.is_empty() {
        // Older traces: generated = recorded + lost, by kind; the loss is
        // known only in total.
        let names: BTreeSet<&String> = f
            .generated
            .keys()
            .chain(read.keys().filter(|n| **n != lost_name))
            .collect();
        let mut short = 0u64;
        for name in names {
            let r = read.get(name).copied().unwrap_or(0);
            let g = f.generated.get(name).copied().unwrap_or(0);
            if r > g {
                out.push(format!(
                    "{name}: {r} records read, more than the {g} the END block says were \
                     generated ({} too many)",
                    r - g
                ));
            } else if r < g && f.lost_kernel == 0 {
                out.push(format!(
                    "{name}: {r} records read of the {g} generated, and the kernel lost \
                     none ({} missing)",
                    g - r
                ));
            }
            short = short.saturating_add(g.saturating_sub(r));
        }
        if f.lost_kernel > 0 && short > f.lost_kernel {
            out.push(format!(
                "{short} generated events are not in the trace, more than the {} the \
                 kernel lost",
                f.lost_kernel
            ));
        }
    }
    if t.records != f.records && (f.recorded.is_empty() || out.is_empty()) {
        out.push(format!(
            "all kinds: {} records read, the END block counts {} written ({})",
            t.records,
            f.records,
            diff(t.records, f.records)
        ));
    }
    if t.lost != f.lost_kernel {
        out.push(format!(
            "{lost_name}: the LOST records count {} lost events, the END block {}",
            t.lost, f.lost_kernel
        ));
    }
    out
}

/// The byte source: a buffer over the reader that can hold a whole block
/// (so that a block is checked before it is consumed, and a scan can look at
/// a candidate block and go on from its next byte).
struct Source<R: Read> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
    eof: bool,
    /// File offset of `buf[pos]`.
    offset: u64,
}

impl<R: Read> Source<R> {
    fn new(inner: R) -> Self {
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
    fn avail(&self) -> &[u8] {
        &self.buf[self.pos..self.filled]
    }

    /// Buffers at least `n` bytes unless the source ends first; returns what
    /// is buffered (fewer than `n` only at the end).
    fn fill(&mut self, n: usize) -> Result<&[u8], TraceError> {
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

    fn consume(&mut self, n: usize) {
        let n = n.min(self.filled - self.pos);
        self.pos += n;
        self.offset += n as u64;
    }

    /// The offset of the first whole block at or after where the reader
    /// stands (consuming the bytes before it), or None (all consumed).
    fn find_block(&mut self) -> Result<Option<u64>, TraceError> {
        if self.candidate_holds(0)? {
            return Ok(Some(self.offset));
        }
        self.scan()
    }

    /// Consumes bytes up to the next block (its offset) or to the end of the
    /// file (None), starting one byte past where the reader stands.
    fn scan(&mut self) -> Result<Option<u64>, TraceError> {
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
    fn candidate_holds(&mut self, skip: usize) -> Result<bool, TraceError> {
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

/// Finds the copy of the header in the END block of a source that can seek
/// (and its offset), leaving the source where it was.
type CopyFinder<R> = fn(&mut R) -> Option<(Header, u64)>;

impl<R: Read + std::io::Seek> TraceReader<R> {
    /// [`TraceReader::new`] for a source that can seek (a file): a damaged
    /// header is restored from its copy in the END block before the first
    /// record, so that nothing of it is lost when the copy holds.
    pub fn new_seekable(src: R) -> Result<Self, TraceError> {
        Self::open(src, Some(header_copy_at_end::<R>))
    }
}

fn header_copy_at_end<R: Read + std::io::Seek>(src: &mut R) -> Option<(Header, u64)> {
    use std::io::SeekFrom;
    let back = src.stream_position().ok()?;
    let found = (|| {
        let end = src.seek(SeekFrom::End(0)).ok()?;
        // The END block is the last thing in the file: its head, the
        // footer's few hundred bytes and the copy, as long as the header
        // (tens of KiB; up to the header's limit).
        [1 << 20, 2 * MAX_HEADER_JSON + (1 << 20)]
            .into_iter()
            .map(|w| end.min(w as u64))
            .find_map(|window| {
                src.seek(SeekFrom::Start(end - window)).ok()?;
                let mut tail = Vec::with_capacity(window as usize);
                src.by_ref().take(window).read_to_end(&mut tail).ok()?;
                (0..tail.len().saturating_sub(BLOCK_HEAD_LEN - 1))
                    .rev()
                    .filter(|&i| &tail[i..i + 4] == END_MAGIC)
                    .find_map(|i| {
                        let len = u32_at(&tail, i + 4) as usize;
                        let json = tail.get(i + BLOCK_HEAD_LEN..)?;
                        (json.len() == len && crc(json) == u32_at(&tail, i + 12))
                            .then(|| header_copy(json))
                            .flatten()
                            .map(|h| (h, end - window + i as u64))
                    })
            })
    })();
    src.seek(SeekFrom::Start(back)).ok()?;
    found
}

/// The copy of the header an END block's JSON carries, if any.
fn header_copy(end_json: &[u8]) -> Option<Header> {
    let mut v: serde_json::Value = serde_json::from_slice(end_json).ok()?;
    serde_json::from_value(v.get_mut(HEADER_COPY)?.take()).ok()
}

/// What a header read from damaged bytes lacks.
struct Salvaged {
    /// Fields whose bytes do not parse: left empty.
    lost: Vec<&'static str>,
    /// Fields that parse, from bytes that failed their checksum.
    unchecked: Vec<&'static str>,
}

impl Salvaged {
    fn describe(&self, version: u16) -> String {
        let mut out = format!("records read with format version {version}'s own catalog");
        if !self.lost.is_empty() {
            out += &format!("; lost: {}", self.lost.join(", "));
        }
        if !self.unchecked.is_empty() {
            out += &format!("; kept as read, unchecked: {}", self.unchecked.join(", "));
        }
        out + " (the END block's copy of the header, in traces that have one, restores them \
                when the reader gets there)"
    }
}

/// A header from the bytes where a damaged one was: its catalog the one
/// `version` defines (the records' layout must not rest on damaged bytes),
/// every other field taken from the bytes where they still parse.
fn salvage(json: &[u8], version: u16) -> (Header, Salvaged) {
    // Its format record is not taken: the preamble's version stands.
    let mut h = Header::new(String::new(), String::new(), 0, Default::default());
    h.writer.clear();
    h.format = None;
    h.catalog = Catalog::of_version(version);
    let fields = serde_json::from_slice::<serde_json::Value>(json).unwrap_or_default();
    let mut s = Salvaged {
        lost: Vec::new(),
        unchecked: Vec::new(),
    };
    fn take<T: serde::de::DeserializeOwned>(
        fields: &serde_json::Value,
        name: &'static str,
        required: bool,
        into: &mut T,
        s: &mut Salvaged,
    ) {
        match fields.get(name).map(|v| T::deserialize(v)) {
            Some(Ok(v)) => {
                *into = v;
                s.unchecked.push(name);
            }
            None if !required => {}
            _ => s.lost.push(name),
        }
    }
    take(&fields, "writer", true, &mut h.writer, &mut s);
    take(&fields, "host", true, &mut h.host, &mut s);
    take(&fields, "kernel", true, &mut h.kernel, &mut s);
    take(&fields, "cpus", true, &mut h.cpus, &mut s);
    take(&fields, "clock", true, &mut h.clock, &mut s);
    take(&fields, "layers", true, &mut h.layers, &mut s);
    take(&fields, "settings", true, &mut h.settings, &mut s);
    take(&fields, "enums", false, &mut h.enums, &mut s);
    take(&fields, "interfaces", false, &mut h.interfaces, &mut s);
    (h, s)
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
