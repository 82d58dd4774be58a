//! How the reader opens a trace: the preamble, the header, and what is
//! left of a damaged header (restored from the END block's copy where the
//! source can seek, else salvaged field by field).

use std::collections::{HashMap, VecDeque};
use std::io::Read;

use super::source::Source;
use super::{lost_count_at, Tally, TraceReader};
use crate::block::*;
use crate::catalog::Catalog;
use crate::error::TraceError;
use crate::header::Header;

/// The preamble's fields, and what of it is damaged (offset, why).
struct Preamble {
    /// The format version it claims.
    claimed: u16,
    /// The header's length and checksum.
    header_len: usize,
    header_sum: u32,
    /// Its magic is a bit or two away from ours.
    magic_damaged: bool,
    damage: Vec<(u64, String)>,
}

impl<R: Read> TraceReader<R> {
    pub(super) fn open(src: R, copy: Option<CopyFinder<R>>) -> Result<Self, TraceError> {
        let mut src = Source::new(src);
        let mut pre = read_preamble(&mut src)?;
        let (header, lost) = read_header(&mut src, &mut pre, copy)?;
        let version = format_version(&header, &mut pre, lost.is_some())?;
        let mut pending = VecDeque::new();
        if let Some((offset, _)) = pre.damage.first() {
            let mut reason: Vec<String> = pre.damage.iter().map(|(_, why)| why.clone()).collect();
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
}

/// Reads and consumes the preamble. Errors only for what is no trace at
/// all: too short, a magic more than two bits from ours, a big-endian writer.
fn read_preamble<R: Read>(src: &mut Source<R>) -> Result<Preamble, TraceError> {
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
    src.consume(PREAMBLE_LEN);
    Ok(Preamble {
        claimed: u16_at(&pre, 8),
        header_len: u32_at(&pre, 12) as usize,
        header_sum: u32_at(&pre, 16),
        magic_damaged: magic_bits > 0,
        damage,
    })
}

/// Reads the header after the preamble: the header itself when its
/// checksum and JSON hold, else [`recover_header`].
fn read_header<R: Read>(
    src: &mut Source<R>,
    pre: &mut Preamble,
    copy: Option<CopyFinder<R>>,
) -> Result<(Header, Option<Salvaged>), TraceError> {
    let len = pre.header_len;
    let json = src.fill(len.min(MAX_HEADER_JSON))?;
    let (got, sum_ok) = (
        json.len(),
        json.len() >= len && crc(&json[..len]) == pre.header_sum,
    );
    let parsed = (len <= MAX_HEADER_JSON && sum_ok)
        .then(|| serde_json::from_slice::<Header>(&json[..len]).ok())
        .flatten();
    if let Some(header) = parsed {
        src.consume(len);
        return Ok((header, None));
    }
    let why = if len > MAX_HEADER_JSON {
        format!("its length {len} exceeds the limit of {MAX_HEADER_JSON} bytes")
    } else if got < len {
        format!("its length {len} runs past the end of the file")
    } else if !sum_ok {
        "checksum mismatch".to_string()
    } else {
        "its JSON is not a header".to_string()
    };
    recover_header(src, pre, copy, got, why)
}

/// A header in place of a damaged one (`got` of its bytes were there, and
/// `why` says what is wrong): the END block's copy where `copy` finds one,
/// else what [`salvage`] makes of the damaged bytes. Where the header ends
/// is unknown (its length may be the damage): the blocks start at the
/// first whole block after the preamble, and without one it is no trace.
fn recover_header<R: Read>(
    src: &mut Source<R>,
    pre: &mut Preamble,
    copy: Option<CopyFinder<R>>,
    got: usize,
    why: String,
) -> Result<(Header, Option<Salvaged>), TraceError> {
    let len = pre.header_len;
    // The damaged bytes, for what still parses in them: as many as
    // the length says, at least 1 MiB (a length damaged smaller).
    let bytes = src.fill(len.clamp(1 << 20, MAX_HEADER_JSON))?.to_vec();
    let Some(first) = src.find_block()? else {
        return Err(if pre.magic_damaged {
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
    pre.damage.push((PREAMBLE_LEN as u64, why));
    if let Some((h, at)) = copy.and_then(|find| find(&mut src.inner)) {
        pre.damage.push((
            at,
            format!("restored from its copy in the END block (byte {at})"),
        ));
        return Ok((h, None));
    }
    let version = if (1..=VERSION).contains(&pre.claimed) {
        pre.claimed
    } else {
        VERSION
    };
    let (h, lost) = salvage(region, version);
    Ok((h, Some(lost)))
}

/// The version: the preamble's, checked against the header's own record
/// of it (traces written before that record are versions 1 or 2, whatever
/// a damaged preamble says). `salvaged`: the header was made from damaged
/// bytes, so it cannot vouch for a version.
fn format_version(header: &Header, pre: &mut Preamble, salvaged: bool) -> Result<u16, TraceError> {
    let claimed = pre.claimed;
    Ok(match header.format {
        Some(f) if f == 0 || f > VERSION => return Err(TraceError::Version(f, VERSION)),
        Some(f) if f != claimed => {
            pre.damage.push((
                8,
                format!("its format version says {claimed}, the header {f}; read as {f}"),
            ));
            f
        }
        Some(f) => f,
        None if (1..=VERSION).contains(&claimed) => claimed,
        None if !salvaged => {
            pre.damage.push((
                8,
                format!(
                    "its format version {claimed} is damaged (the header is of a \
                     version-1 or -2 writer); read as {VERSION}"
                ),
            ));
            VERSION
        }
        None => return Err(TraceError::Version(claimed, VERSION)),
    })
}

/// Finds the copy of the header in the END block of a source that can seek
/// (and its offset), leaving the source where it was.
type CopyFinder<R> = fn(&mut R) -> Option<(Header, u64)>;

impl<R: Read + std::io::Seek> TraceReader<R> {
    /// [`TraceReader::new`] for a source that can seek (a file): a damaged
    /// header is restored from its copy in the END block before the first
    /// record, so that nothing of it is lost when the copy holds; and the
    /// devices the END block lists as made during the recording join the
    /// header's, so that their frames have names from the first one on.
    pub fn new_seekable(mut src: R) -> Result<Self, TraceError> {
        let later = end_json_at_end(&mut src)
            .map(|(json, _)| later_interfaces(&json))
            .unwrap_or_default();
        let mut reader = Self::open(src, Some(header_copy_at_end::<R>))?;
        reader.header.add_later_interfaces(later);
        Ok(reader)
    }
}

fn header_copy_at_end<R: Read + std::io::Seek>(src: &mut R) -> Option<(Header, u64)> {
    let (json, offset) = end_json_at_end(src)?;
    Some((header_copy(&json)?, offset))
}

/// The JSON of the last whole END block of a source that can seek, and the
/// block's offset, leaving the source where it was.
fn end_json_at_end<R: Read + std::io::Seek>(src: &mut R) -> Option<(Vec<u8>, u64)> {
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
                            .then(|| (json.to_vec(), end - window + i as u64))
                    })
            })
    })();
    src.seek(SeekFrom::Start(back)).ok()?;
    found
}

/// The devices an END block's JSON lists as made during the recording.
fn later_interfaces(end_json: &[u8]) -> Vec<crate::header::Interface> {
    let mut v: serde_json::Value = match serde_json::from_slice(end_json) {
        Ok(v) => v,
        Err(_) => return Vec::new(),
    };
    v.get_mut("interfaces_later")
        .map(serde_json::Value::take)
        .and_then(|l| serde_json::from_value(l).ok())
        .unwrap_or_default()
}

/// The copy of the header an END block's JSON carries, if any.
pub(super) fn header_copy(end_json: &[u8]) -> Option<Header> {
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
