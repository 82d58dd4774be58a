//! Reads a trace block by block. Damage never panics: a block whose checksum
//! fails is reported and skipped (the reader resynchronises on the next block
//! magic), and a file cut short yields everything up to its last whole block and
//! then one `Truncated` error saying where it ended.

use std::io::{BufReader, Read};

use crate::block::*;
use crate::catalog::HEADER_LEN;
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
    offset: u64,
    header: Header,
    footer: Option<Footer>,
    payload: Vec<u8>,
    block_offset: u64,
    pos: usize,
    index: u32,
    done: bool,
    /// A delta-coded block's raw payload (decoded into `payload`).
    coded: Vec<u8>,
    /// A delta-coded block that failed to decode part way: reported after
    /// the records before the damage.
    pending: Option<TraceError>,
    /// Blocks skipped because they were damaged.
    pub damaged_blocks: u64,
}

enum Fill {
    Full,
    Eof { got: usize },
}

impl<R: Read> TraceReader<R> {
    pub fn new(src: R) -> Result<Self, TraceError> {
        let mut src = Source {
            inner: BufReader::with_capacity(1 << 20, src),
            back: Vec::new(),
            back_pos: 0,
        };
        let mut pre = [0u8; PREAMBLE_LEN];
        match read_full(&mut src, &mut pre, 0)? {
            Fill::Full => {}
            Fill::Eof { got } if got < MAGIC.len() || pre[..8] != MAGIC[..] => {
                return Err(TraceError::NotATrace)
            }
            Fill::Eof { got } => {
                return Err(TraceError::Truncated {
                    offset: got as u64,
                    reason: "inside the file preamble".into(),
                })
            }
        }
        if &pre[..8] != MAGIC {
            return Err(TraceError::NotATrace);
        }
        let version = u16_at(&pre, 8);
        // Every version up to this build's reads: the header carries the
        // catalog the trace was written with, so older layouts decode by it.
        if version == 0 || version > VERSION {
            return Err(TraceError::Version(version, VERSION));
        }
        if u16_at(&pre, 10) != BOM {
            return Err(TraceError::ByteOrder);
        }
        let len = u32_at(&pre, 12) as usize;
        if len > MAX_HEADER_JSON {
            return Err(TraceError::BadHeader {
                offset: 12,
                reason: format!("header length {len} exceeds the limit of {MAX_HEADER_JSON} bytes"),
            });
        }
        let mut json = vec![0u8; len];
        if let Fill::Eof { got } = read_full(&mut src, &mut json, PREAMBLE_LEN as u64)? {
            return Err(TraceError::Truncated {
                offset: (PREAMBLE_LEN + got) as u64,
                reason: format!("inside the header ({got} of {len} bytes)"),
            });
        }
        if crc(&json) != u32_at(&pre, 16) {
            return Err(TraceError::BadHeader {
                offset: PREAMBLE_LEN as u64,
                reason: "checksum mismatch".into(),
            });
        }
        let header: Header = serde_json::from_slice(&json).map_err(|e| TraceError::BadHeader {
            offset: PREAMBLE_LEN as u64,
            reason: format!("invalid header JSON: {e}"),
        })?;
        Ok(TraceReader {
            src,
            offset: (PREAMBLE_LEN + len) as u64,
            header,
            footer: None,
            payload: Vec::new(),
            block_offset: 0,
            pos: 0,
            index: 0,
            done: false,
            coded: Vec::new(),
            pending: None,
            damaged_blocks: 0,
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
        self.offset
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

    /// The next record's place in the current block's payload.
    fn next_raw(&mut self) -> Option<Result<(usize, usize), TraceError>> {
        loop {
            if self.pos < self.payload.len() {
                return Some(self.record_in_block());
            }
            if let Some(e) = self.pending.take() {
                return Some(Err(e));
            }
            if self.done {
                return None;
            }
            match self.next_block() {
                Ok(true) => continue,
                Ok(false) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    if !e.is_recoverable() {
                        self.done = true;
                    }
                    return Some(Err(e));
                }
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
        Ok((start, len))
    }

    /// Loads the next block. Ok(false) at a clean end (END block).
    fn next_block(&mut self) -> Result<bool, TraceError> {
        let at = self.offset;
        let mut head = [0u8; BLOCK_HEAD_LEN];
        match read_full(&mut self.src, &mut head, at)? {
            Fill::Full => {}
            Fill::Eof { got: 0 } => {
                return Err(TraceError::Truncated {
                    offset: at,
                    reason: "no END block (the recorder did not finish)".into(),
                })
            }
            Fill::Eof { got } => {
                self.offset += got as u64;
                return Err(TraceError::Truncated {
                    offset: at,
                    reason: format!("inside a block head ({got} of {BLOCK_HEAD_LEN} bytes)"),
                });
            }
        }
        let magic = &head[..4];
        if magic != BLOCK_MAGIC && magic != DELTA_BLOCK_MAGIC && magic != END_MAGIC {
            self.offset += BLOCK_HEAD_LEN as u64;
            return Err(self.resync(at, &head, "bad block magic"));
        }
        let len = u32_at(&head, 4) as usize;
        if len > MAX_BLOCK_PAYLOAD {
            self.offset += BLOCK_HEAD_LEN as u64;
            return Err(self.resync(at, &head, &format!("block length {len} exceeds the limit")));
        }
        self.offset += BLOCK_HEAD_LEN as u64;
        let mut payload = std::mem::take(&mut self.payload);
        payload.clear();
        payload.resize(len, 0);
        if let Fill::Eof { got } = read_full(&mut self.src, &mut payload, self.offset)? {
            self.offset += got as u64;
            return Err(TraceError::Truncated {
                offset: at,
                reason: format!("inside a block ({got} of {len} payload bytes)"),
            });
        }
        self.offset += len as u64;
        if crc(&payload) != u32_at(&head, 12) {
            self.damaged_blocks += 1;
            self.payload = payload;
            self.payload.clear();
            self.pos = 0;
            return Err(TraceError::BadBlock {
                offset: at,
                reason: format!(
                    "checksum mismatch; its {} records were skipped",
                    u32_at(&head, 8)
                ),
            });
        }
        if magic == END_MAGIC {
            let footer = serde_json::from_slice(&payload).map_err(|e| TraceError::BadBlock {
                offset: at,
                reason: format!("invalid END block JSON: {e}"),
            })?;
            self.footer = Some(footer);
            return Ok(false);
        }
        self.block_offset = at;
        self.pos = 0;
        self.index = 0;
        if magic == DELTA_BLOCK_MAGIC {
            let mut decoded = std::mem::replace(&mut self.coded, payload);
            decoded.clear();
            if let Err(e) = decode_payload(&self.coded, &mut decoded) {
                self.pending = Some(TraceError::BadRecord {
                    offset: at,
                    index: e.index,
                    reason: format!("{}; rest of block skipped", e.reason),
                });
            }
            self.payload = decoded;
        } else {
            self.payload = payload;
        }
        Ok(true)
    }

    /// After damage in a block head: scan forward for the next block magic so
    /// that later blocks are still read. Returns the error to report.
    fn resync(&mut self, at: u64, head: &[u8; BLOCK_HEAD_LEN], why: &str) -> TraceError {
        self.damaged_blocks += 1;
        // Window of the last 4 bytes seen; start with the head after its first byte.
        let mut window: Vec<u8> = head[1..].to_vec();
        let mut skipped = 1u64;
        loop {
            if let Some(i) = find_magic(&window) {
                // Bytes before the magic are skipped; the magic and what follows
                // it in `window` must be re-read: push them back by buffering.
                let rest = window.split_off(i);
                skipped += i as u64;
                self.offset = at + skipped;
                self.src.push_back(rest);
                return TraceError::BadBlock {
                    offset: at,
                    reason: format!("{why}; skipped {skipped} bytes to the next block"),
                };
            }
            let keep = window.len().saturating_sub(3);
            skipped += keep as u64;
            window.drain(..keep);
            let mut buf = [0u8; 4096];
            match self.src.read(&mut buf) {
                Ok(0) | Err(_) => {
                    self.done = true;
                    self.offset = at + skipped + window.len() as u64;
                    return TraceError::BadBlock {
                        offset: at,
                        reason: format!("{why}; no further block found"),
                    };
                }
                Ok(n) => window.extend_from_slice(&buf[..n]),
            }
        }
    }
}

fn find_magic(w: &[u8]) -> Option<usize> {
    w.windows(4)
        .position(|x| x == BLOCK_MAGIC || x == DELTA_BLOCK_MAGIC || x == END_MAGIC)
}

/// The byte source: a buffered reader with room to push bytes back after a
/// resynchronising scan has read past a block magic.
struct Source<R: Read> {
    inner: BufReader<R>,
    back: Vec<u8>,
    back_pos: usize,
}

impl<R: Read> Read for Source<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.back_pos < self.back.len() {
            let n = buf.len().min(self.back.len() - self.back_pos);
            buf[..n].copy_from_slice(&self.back[self.back_pos..self.back_pos + n]);
            self.back_pos += n;
            return Ok(n);
        }
        self.inner.read(buf)
    }
}

impl<R: Read> Source<R> {
    fn push_back(&mut self, bytes: Vec<u8>) {
        let mut v = bytes;
        v.extend_from_slice(&self.back[self.back_pos..]);
        self.back = v;
        self.back_pos = 0;
    }
}

/// Reads until `buf` is full or the source ends.
fn read_full<R: Read>(src: &mut R, buf: &mut [u8], offset: u64) -> Result<Fill, TraceError> {
    let mut got = 0;
    while got < buf.len() {
        match src.read(&mut buf[got..]) {
            Ok(0) => return Ok(Fill::Eof { got }),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => {
                return Err(TraceError::Io {
                    offset: offset + got as u64,
                    source,
                })
            }
        }
    }
    Ok(Fill::Full)
}
