//! Delta-coded block payloads: block magic `MGBD`, format version 2.
//!
//! Consecutive records of one kind differ in a few 4-byte words — the time,
//! the packet id, a length — while the rest (cookie, ifindex, pid, flags,
//! addresses) repeats. So a record is written as the words that changed since
//! the previous record of its kind in the same block: a bulk TCP transfer's
//! 56-byte device records take 12–16 bytes this way. The state starts empty in
//! every block, so blocks stay independent: a damaged block loses only its own
//! records, and readers still decode blocks on separate threads.
//!
//! ```text
//! payload = record*
//! record  = tag:uleb128 body
//! tag     = len << 1 | delta
//! delta 0 : body = the record's len bytes as they are
//! delta 1 : body = kind:u8 mask[ceil(len/32)] word[4]*
//!           the previous record of `kind` in this block (it had the same
//!           len), with its 4-byte word i replaced by the next `word` for
//!           every set bit i of mask (bit i is bit i%8 of mask byte i/8)
//! ```
//!
//! A writer uses delta 1 only for a record whose length is a multiple of 4
//! and at most [`MAX_DELTA_LEN`] bytes, whose kind is below 256, and whose
//! kind's previous record in the block had the same length; anything else
//! (frames of `--snaplen`, the first record of a kind) is written raw.
//! Decoding yields the version-1 payload (`len:u32 record`)*, so everything
//! after the block reader is the same for both versions.

use crate::block::u16_at;

/// Longest record a writer delta-codes (the frames of `--snaplen` are longer
/// and mostly unlike each other).
pub const MAX_DELTA_LEN: usize = 256;
const KINDS: usize = 256;

/// The writer's side: the previous record of every kind in the current block.
pub struct DeltaEncoder {
    last: Box<[u8]>,
    last_len: [u16; KINDS],
}

impl Default for DeltaEncoder {
    fn default() -> Self {
        DeltaEncoder {
            last: vec![0u8; KINDS * MAX_DELTA_LEN].into_boxed_slice(),
            last_len: [0; KINDS],
        }
    }
}

impl DeltaEncoder {
    /// Forgets every previous record: call at the start of each block.
    pub fn reset(&mut self) {
        self.last_len = [0; KINDS];
    }

    /// Appends `rec`, coded against the previous record of its kind, to `out`.
    pub fn encode(&mut self, rec: &[u8], out: &mut Vec<u8>) {
        let len = rec.len();
        let kind = if len >= 10 {
            u16_at(rec, 8) as usize
        } else {
            KINDS
        };
        let codable = len % 4 == 0 && len <= MAX_DELTA_LEN && kind < KINDS;
        if !codable {
            put_uleb(out, (len as u64) << 1);
            out.extend_from_slice(rec);
            return;
        }
        let prev = &mut self.last[kind * MAX_DELTA_LEN..kind * MAX_DELTA_LEN + len];
        if self.last_len[kind] as usize != len {
            put_uleb(out, (len as u64) << 1);
            out.extend_from_slice(rec);
            prev.copy_from_slice(rec);
            self.last_len[kind] = len as u16;
            return;
        }
        put_uleb(out, ((len as u64) << 1) | 1);
        out.push(kind as u8);
        let words = len / 4;
        let mask_at = out.len();
        out.resize(mask_at + words.div_ceil(8), 0);
        for (w, (new, old)) in rec.chunks_exact(4).zip(prev.chunks_exact(4)).enumerate() {
            if new != old {
                out[mask_at + w / 8] |= 1 << (w % 8);
                out.extend_from_slice(new);
            }
        }
        prev.copy_from_slice(rec);
    }
}

/// Why a delta-coded payload did not decode, at which record of the block.
#[derive(Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub index: u32,
    pub reason: String,
}

/// Decodes a delta-coded payload into the version-1 layout, appended to `out`
/// (`len:u32 record` each). Returns the number of records. On an error, `out`
/// keeps every record decoded before the bad one.
pub fn decode_payload(payload: &[u8], out: &mut Vec<u8>) -> Result<u32, DecodeError> {
    // Where in `out` the previous record of each kind starts, and its length.
    let mut last = [(0usize, 0usize); KINDS];
    let mut pos = 0;
    let mut index = 0u32;
    let bad = |index, reason: String| Err(DecodeError { index, reason });
    while pos < payload.len() {
        let Some((tag, n)) = get_uleb(&payload[pos..]) else {
            return bad(index, "record tag runs past the end of the block".into());
        };
        pos += n;
        let Ok(len) = usize::try_from(tag >> 1) else {
            return bad(index, format!("record length {} is too large", tag >> 1));
        };
        if len > u32::MAX as usize {
            return bad(index, format!("record length {len} is too large"));
        }
        if tag & 1 == 0 {
            let Some(rec) = payload.get(pos..pos.saturating_add(len)) else {
                return bad(index, format!("record length {len} does not fit the block"));
            };
            out.extend_from_slice(&(len as u32).to_le_bytes());
            let start = out.len();
            out.extend_from_slice(rec);
            pos += len;
            // The same rule as the encoder's, or the two disagree on "previous".
            if len >= 10
                && len % 4 == 0
                && len <= MAX_DELTA_LEN
                && (u16_at(rec, 8) as usize) < KINDS
            {
                last[u16_at(rec, 8) as usize] = (start, len);
            }
        } else {
            let Some(&kind) = payload.get(pos) else {
                return bad(
                    index,
                    "delta record's kind runs past the end of the block".into(),
                );
            };
            pos += 1;
            let (prev, prev_len) = last[kind as usize];
            if prev_len == 0 || prev_len != len || len % 4 != 0 {
                return bad(
                    index,
                    format!("delta record of kind {kind} ({len} bytes) has no earlier record of that kind and length in its block"),
                );
            }
            let words = len / 4;
            let Some(mask) = payload.get(pos..pos + words.div_ceil(8)) else {
                return bad(
                    index,
                    "delta record's mask runs past the end of the block".into(),
                );
            };
            pos += mask.len();
            let changed: usize = mask.iter().map(|b| b.count_ones() as usize).sum();
            if payload.len() - pos < changed * 4 {
                return bad(
                    index,
                    "delta record's words run past the end of the block".into(),
                );
            }
            if mask.len() * 8 > words && mask[words / 8] >> (words % 8) != 0 {
                return bad(
                    index,
                    "delta record's mask names words past its length".into(),
                );
            }
            out.extend_from_slice(&(len as u32).to_le_bytes());
            let start = out.len();
            out.extend_from_within(prev..prev + len);
            // Visit only the set bits: most records change 2-4 words of 14+.
            let rec = &mut out[start..start + len];
            let mut words_in = payload[pos..pos + changed * 4].chunks_exact(4);
            for (byte, &bits) in mask.iter().enumerate() {
                let mut bits = bits;
                while bits != 0 {
                    let w = byte * 8 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let word = words_in.next().expect("counted above");
                    rec[w * 4..w * 4 + 4].copy_from_slice(word);
                }
            }
            pos += changed * 4;
            if u16_at(out, start + 8) != kind as u16 {
                out.truncate(start - 4);
                return bad(
                    index,
                    format!("delta record of kind {kind} decodes to another kind"),
                );
            }
            last[kind as usize] = (start, len);
        }
        index += 1;
    }
    Ok(index)
}

fn put_uleb(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// An unsigned LEB128 number and its length in bytes; `None` when it runs
/// past the end or past 64 bits.
fn get_uleb(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().enumerate().take(10) {
        v |= ((byte & 0x7f) as u64) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn rec(kind: u16, len: usize, fill: u8) -> Vec<u8> {
        let mut r = vec![fill; len];
        r[8..10].copy_from_slice(&kind.to_le_bytes());
        r
    }

    fn round_trip(records: &[Vec<u8>]) -> (Vec<u8>, Vec<u8>) {
        let mut enc = DeltaEncoder::default();
        let mut payload = Vec::new();
        for r in records {
            enc.encode(r, &mut payload);
        }
        let mut out = Vec::new();
        let n = decode_payload(&payload, &mut out).unwrap();
        assert_eq!(n as usize, records.len());
        let mut v1 = Vec::new();
        for r in records {
            v1.extend_from_slice(&(r.len() as u32).to_le_bytes());
            v1.extend_from_slice(r);
        }
        assert_eq!(out, v1);
        (payload, out)
    }

    #[test]
    fn a_repeated_record_takes_its_changed_words_only() {
        let a = rec(53, 56, 7);
        let mut b = a.clone();
        b[0] = 9; // time
        b[32] = 1; // packet id
        let (payload, _) = round_trip(&[a, b]);
        // raw: 1 tag + 56; delta: 1 tag + 1 kind + 2 mask + 2 words of 4
        assert_eq!(payload.len(), 57 + 1 + 1 + 2 + 8);
    }

    #[test]
    fn kinds_lengths_and_odd_records_mix() {
        let mut records = vec![
            rec(53, 56, 1),
            rec(21, 56, 2),
            rec(53, 56, 3),
            rec(21, 120, 4), // same kind, other length: raw
            rec(21, 61, 4),  // same kind, not codable: raw, and not "previous"
            rec(21, 120, 5),
            rec(54, 48 + 61, 6), // not a multiple of 4: raw
            rec(200, 300, 7),    // longer than MAX_DELTA_LEN: raw
            rec(300, 56, 8),     // kind above 255: raw
            vec![1, 2, 3],       // shorter than a header: raw
        ];
        records.push(rec(53, 56, 3));
        records.push(rec(21, 120, 9));
        round_trip(&records);
    }

    /// The format as the module's notes state it, word by word, written apart
    /// from the encoder: a faster encoder must write the same bytes.
    fn encode_as_specified(last: &mut HashMap<usize, Vec<u8>>, rec: &[u8], out: &mut Vec<u8>) {
        let len = rec.len();
        let kind = (len >= 10).then(|| u16_at(rec, 8) as usize);
        let codable = len % 4 == 0 && len <= MAX_DELTA_LEN && kind.is_some_and(|k| k < KINDS);
        let prev = kind.and_then(|k| last.get(&k)).filter(|p| p.len() == len);
        match prev {
            Some(prev) if codable => {
                put_uleb(out, ((len as u64) << 1) | 1);
                out.push(kind.unwrap() as u8);
                let mut mask = vec![0u8; (len / 4).div_ceil(8)];
                let mut words = Vec::new();
                for w in 0..len / 4 {
                    if rec[4 * w..4 * w + 4] != prev[4 * w..4 * w + 4] {
                        mask[w / 8] |= 1 << (w % 8);
                        words.extend_from_slice(&rec[4 * w..4 * w + 4]);
                    }
                }
                out.extend_from_slice(&mask);
                out.extend_from_slice(&words);
            }
            _ => {
                put_uleb(out, (len as u64) << 1);
                out.extend_from_slice(rec);
            }
        }
        if codable {
            last.insert(kind.unwrap(), rec.to_vec());
        }
    }

    proptest::proptest! {
        /// Records of a few kinds and lengths, each a copy of its kind's last
        /// with random words changed: the encoder writes exactly the bytes the
        /// format specifies, and they decode back to the records.
        #[test]
        fn the_encoder_writes_the_specified_bytes(
            steps in proptest::collection::vec(
                (0usize..5, 0usize..6, proptest::collection::vec(0usize..64, 0..12), proptest::num::u32::ANY),
                1..120,
            )
        ) {
            const LENS: [usize; 6] = [12, 56, 64, 120, 61, 256];
            let mut by_kind: HashMap<(usize, usize), Vec<u8>> = HashMap::new();
            let mut records = Vec::new();
            for (k, l, changed, v) in steps {
                let kind = [21u16, 53, 54, 255, 300][k];
                let len = LENS[l];
                let r = by_kind.entry((k, l)).or_insert_with(|| rec(kind, len, k as u8));
                for w in changed {
                    let at = (w * 4) % len;
                    if !(8..10).contains(&at) && at + 4 <= len {
                        r[at..at + 4].copy_from_slice(&v.to_le_bytes());
                    }
                }
                records.push(r.clone());
            }
            let (payload, _) = round_trip(&records);
            let mut want = Vec::new();
            let mut last = HashMap::new();
            for r in &records {
                encode_as_specified(&mut last, r, &mut want);
            }
            proptest::prop_assert_eq!(payload, want);
        }
    }

    #[test]
    fn damage_is_reported_at_its_record() {
        let mut enc = DeltaEncoder::default();
        let mut payload = Vec::new();
        enc.encode(&rec(53, 56, 1), &mut payload);
        let good = payload.len();
        enc.encode(&rec(53, 56, 2), &mut payload);
        // A delta record without its earlier record.
        let mut out = Vec::new();
        let e = decode_payload(&payload[good..], &mut out).unwrap_err();
        assert_eq!(e.index, 0);
        assert!(e.reason.contains("no earlier record"), "{}", e.reason);
        // Truncated words: the first record survives.
        let mut out = Vec::new();
        let e = decode_payload(&payload[..payload.len() - 1], &mut out).unwrap_err();
        assert_eq!(e.index, 1);
        assert_eq!(out.len(), 4 + 56);
        // A kind byte that disagrees with the record it names.
        let mut p = payload.clone();
        p[good + 1] = 21;
        assert!(decode_payload(&p, &mut Vec::new()).is_err());
        // A length past the end.
        assert!(decode_payload(&[0xff, 0x01], &mut Vec::new()).is_err());
        // A tag that never ends.
        assert!(decode_payload(&[0x80; 11], &mut Vec::new()).is_err());
    }
}
