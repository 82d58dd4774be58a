//! Writes a trace: preamble and header first, then blocks, then the END block
//! with the run's totals. Blocks are whole or absent, so a recorder killed
//! mid-run leaves a file that reads up to its last complete block. The END
//! block also carries a copy of the header, from which a reader restores a
//! header damaged at the start of the file.

use std::io::Write;

use crate::block::{encode_end, encode_preamble, BlockBuilder, DEFAULT_BLOCK_TARGET, HEADER_COPY};
use crate::error::TraceError;
use crate::header::{Footer, Header};

pub struct TraceWriter<W: Write> {
    out: W,
    offset: u64,
    block: BlockBuilder,
    records: u64,
    /// The header as written at the start, copied into the END block.
    header: serde_json::Value,
}

impl<W: Write> TraceWriter<W> {
    pub fn new(mut out: W, header: &Header) -> Result<Self, TraceError> {
        let header = serde_json::to_value(header).expect("header serializes");
        let json = serde_json::to_vec(&header).expect("header serializes");
        let pre = encode_preamble(&json);
        out.write_all(&pre)
            .map_err(|source| TraceError::Io { offset: 0, source })?;
        Ok(TraceWriter {
            out,
            offset: pre.len() as u64,
            block: BlockBuilder::with_capacity(DEFAULT_BLOCK_TARGET + 4096),
            records: 0,
            header,
        })
    }

    /// Adds one record; the block is written out when it reaches its target size.
    pub fn push(&mut self, record: &[u8]) -> Result<(), TraceError> {
        self.block.push(record);
        self.records += 1;
        if self.block.len() >= DEFAULT_BLOCK_TARGET {
            self.flush_block()?;
        }
        Ok(())
    }

    /// Writes an already encoded block (from a `BlockBuilder` on another thread).
    pub fn write_encoded_block(&mut self, block: &[u8], records: u32) -> Result<(), TraceError> {
        self.write_bytes(block)?;
        self.records += records as u64;
        Ok(())
    }

    pub fn flush_block(&mut self) -> Result<(), TraceError> {
        if self.block.is_empty() {
            return Ok(());
        }
        let enc = self.block.take_encoded();
        self.write_bytes(&enc)
    }

    fn write_bytes(&mut self, bytes: &[u8]) -> Result<(), TraceError> {
        self.out.write_all(bytes).map_err(|source| TraceError::Io {
            offset: self.offset,
            source,
        })?;
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Pushes what was written so far to the output (so that a reader, or a
    /// crash, sees every whole block).
    pub fn flush(&mut self) -> Result<(), TraceError> {
        let offset = self.offset;
        self.out
            .flush()
            .map_err(|source| TraceError::Io { offset, source })
    }

    /// The output as written so far, without an END block (a trace cut short).
    pub fn into_inner(self) -> W {
        self.out
    }

    pub fn records(&self) -> u64 {
        self.records
    }

    pub fn bytes_written(&self) -> u64 {
        self.offset
    }

    /// Writes the last block and the END block, flushes, and returns the output.
    pub fn finish(mut self, footer: &Footer) -> Result<W, TraceError> {
        self.flush_block()?;
        let mut json = serde_json::to_value(footer).expect("footer serializes");
        if let Some(fields) = json.as_object_mut() {
            fields.insert(HEADER_COPY.into(), std::mem::take(&mut self.header));
        }
        let end = encode_end(&serde_json::to_vec(&json).expect("footer serializes"));
        self.write_bytes(&end)?;
        let offset = self.offset;
        self.out
            .flush()
            .map_err(|source| TraceError::Io { offset, source })?;
        Ok(self.out)
    }
}
