//! The byte layout of a trace, without I/O: file header and blocks.
//!
//! ```text
//! file   = preamble header-json block* end?
//! preamble (20 bytes) = "MAGNETTR" version:u16 bom:u16 json_len:u32 json_crc:u32
//! block  (16-byte head) = magic payload_len:u32 count:u32 crc32(payload):u32, payload
//! "MGBK" payload = (len:u32 record[len])*   each record starts with the 24-byte header
//! "MGBD" payload = delta-coded records (version 2; see `delta`)
//! end    = "MGND" json_len:u32 0:u32 crc32(json):u32, footer json
//! ```
//! All integers little-endian. docs/FORMAT.md is the full description.

use crate::delta::DeltaEncoder;

pub const MAGIC: &[u8; 8] = b"MAGNETTR";
/// Version 2 added delta-coded blocks (`MGBD`); readers read 1 and 2.
pub const VERSION: u16 = 2;
pub const BOM: u16 = 0x0102;
pub const PREAMBLE_LEN: usize = 20;
pub const BLOCK_MAGIC: &[u8; 4] = b"MGBK";
pub const DELTA_BLOCK_MAGIC: &[u8; 4] = b"MGBD";
pub const END_MAGIC: &[u8; 4] = b"MGND";
pub const BLOCK_HEAD_LEN: usize = 16;
/// Largest payload a reader accepts: guards allocation against a corrupt length.
pub const MAX_BLOCK_PAYLOAD: usize = 64 << 20;
/// The END block JSON's key for the copy of the header (readers that do not
/// know it ignore it, as any key a footer does not define).
pub const HEADER_COPY: &str = "header";
/// Largest header JSON a reader accepts.
pub const MAX_HEADER_JSON: usize = 16 << 20;
/// Blocks are cut at about this size by the writer.
pub const DEFAULT_BLOCK_TARGET: usize = 256 << 10;

pub fn crc(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

pub fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}

pub fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Accumulates records into one block payload. The recorder's drain fills it
/// and hands finished blocks to a writer thread. Blocks are delta-coded
/// (`MGBD`, a third of the bytes of a plain block on packet records) unless
/// built with [`BlockBuilder::plain`].
pub struct BlockBuilder {
    payload: Vec<u8>,
    count: u32,
    delta: Option<DeltaEncoder>,
}

impl Default for BlockBuilder {
    fn default() -> Self {
        BlockBuilder::with_capacity(0)
    }
}

impl BlockBuilder {
    pub fn with_capacity(bytes: usize) -> Self {
        BlockBuilder {
            payload: Vec::with_capacity(bytes),
            count: 0,
            delta: Some(DeltaEncoder::default()),
        }
    }

    /// A builder of version-1 blocks (`MGBK`: every record as it is).
    pub fn plain(bytes: usize) -> Self {
        BlockBuilder {
            delta: None,
            ..BlockBuilder::with_capacity(bytes)
        }
    }

    pub fn push(&mut self, record: &[u8]) {
        match &mut self.delta {
            Some(enc) => enc.encode(record, &mut self.payload),
            None => {
                self.payload
                    .extend_from_slice(&(record.len() as u32).to_le_bytes());
                self.payload.extend_from_slice(record);
            }
        }
        self.count += 1;
    }

    /// Bytes of payload so far, as they will be written.
    pub fn len(&self) -> usize {
        self.payload.len()
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    /// The encoded block (head + payload); the builder is left empty for reuse.
    pub fn take_encoded(&mut self) -> Vec<u8> {
        let mut out = Vec::with_capacity(BLOCK_HEAD_LEN + self.payload.len());
        match &mut self.delta {
            Some(enc) => {
                out.extend_from_slice(DELTA_BLOCK_MAGIC);
                enc.reset();
            }
            None => out.extend_from_slice(BLOCK_MAGIC),
        }
        out.extend_from_slice(&(self.payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&crc(&self.payload).to_le_bytes());
        out.extend_from_slice(&self.payload);
        self.payload.clear();
        self.count = 0;
        out
    }
}

/// The preamble and header JSON.
pub fn encode_preamble(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(PREAMBLE_LEN + json.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&BOM.to_le_bytes());
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc(json).to_le_bytes());
    out.extend_from_slice(json);
    out
}

pub fn encode_end(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(BLOCK_HEAD_LEN + json.len());
    out.extend_from_slice(END_MAGIC);
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&crc(json).to_le_bytes());
    out.extend_from_slice(json);
    out
}
