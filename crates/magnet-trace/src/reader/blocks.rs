//! How the reader loads blocks: a data block's checks, the END block, and
//! the resynchronisation after damage.

use std::io::Read;

use super::open::header_copy;
use super::source::is_magic;
use super::TraceReader;
use crate::block::*;
use crate::delta::decode_payload;
use crate::error::TraceError;

/// A block head whose block is whole and checksummed.
#[derive(Clone, Copy)]
struct BlockHead {
    magic: [u8; 4],
    /// Payload length.
    len: usize,
    /// Records the head counts (outside the checksum).
    count: u32,
    sum: u32,
}

impl BlockHead {
    /// Head and payload.
    fn whole(&self) -> usize {
        BLOCK_HEAD_LEN + self.len
    }
}

impl<R: Read> TraceReader<R> {
    /// Loads the next block. Ok(false) at a clean end (END block, then the
    /// end of the file).
    pub(super) fn next_block(&mut self) -> Result<bool, TraceError> {
        let at = self.src.offset;
        let block = self.whole_block(at)?;
        if &block.magic == END_MAGIC {
            return self.read_end_block(at, &block);
        }
        self.load_data_block(at, &block)?;
        Ok(true)
    }

    /// The block at `at`, buffered whole with its checksum checked (and not
    /// yet consumed). Damage found here has the reader resynchronised
    /// already: the error says what was skipped.
    fn whole_block(&mut self, at: u64) -> Result<BlockHead, TraceError> {
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
        let magic: [u8; 4] = head[..4].try_into().expect("block magic");
        if !is_magic(&magic) {
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
        Ok(BlockHead {
            magic,
            len,
            count,
            sum,
        })
    }

    /// Reads and consumes the END block: the footer, and the header's copy
    /// where the header was salvaged. Ok(false) when the file ends after it.
    fn read_end_block(&mut self, at: u64, block: &BlockHead) -> Result<bool, TraceError> {
        let (count, whole) = (block.count, block.whole());
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
        Err(TraceError::BadBlock {
            offset: at,
            reason: "an END block in the middle of the trace (blocks follow it); \
                     reading on"
                .into(),
        })
    }

    /// Makes a data block's records the ones to read (decoding a
    /// delta-coded one) and consumes it; a block that repeats an earlier one
    /// is skipped, and what the head says wrongly is queued.
    fn load_data_block(&mut self, at: u64, block: &BlockHead) -> Result<(), TraceError> {
        let BlockHead {
            magic,
            len,
            count,
            sum,
        } = *block;
        let whole = block.whole();
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
        if &magic == DELTA_BLOCK_MAGIC && self.version < 2 && !self.version_said {
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
        let held = if &magic == DELTA_BLOCK_MAGIC {
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
        Ok(())
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
