//! Damage loses at most the damaged block, and whatever cannot be seen block
//! by block is caught by the END block's totals.
//!
//! The traces are written by `TraceWriter` with the recorder's kinds (app
//! sends, TCP receives, LOST records, `--snaplen` frames whose bytes carry
//! block magics and heads as frames of a trace being copied would) and a
//! footer with the recorder's totals; each is then damaged: a flipped bit or
//! byte anywhere after the header (magics, length fields, checksums, counts,
//! payloads, the END block), a block dropped, repeated, moved, the END block
//! moved into the middle, and mixtures of these (the bounded fuzz at the end).

use std::collections::BTreeMap;
use std::ops::Range;

use magnet_trace::block::{encode_end, encode_preamble, BlockBuilder, BLOCK_HEAD_LEN, HEADER_COPY};
use magnet_trace::emit::{synthetic_header, Emitter};
use magnet_trace::{
    kind, summarize, Catalog, Footer, Header, TraceError, TraceReader, TraceWriter,
};
use proptest::prelude::*;

/// A trace and where everything in it is.
struct Built {
    bytes: Vec<u8>,
    header_end: usize,
    /// Data blocks (head included), in file order.
    blocks: Vec<Range<usize>>,
    /// The records of each data block, as written.
    records: Vec<Vec<Vec<u8>>>,
    end: Range<usize>,
}

impl Built {
    fn all(&self) -> Vec<Vec<u8>> {
        self.records.iter().flatten().cloned().collect()
    }
}

fn name(k: u16) -> String {
    Catalog::builtin().get(k).unwrap().name.clone()
}

/// Bytes a frame might carry: the head and first `n` bytes of a real block
/// (of other records), with its magic, a plausible length and its true
/// checksum; the whole block when `n` is larger.
fn planted(e: &Emitter, n: usize) -> Vec<u8> {
    let mut b = BlockBuilder::plain(0);
    for i in 0..20 {
        b.push(
            &e.record(kind::APP_SEND, 7_000 + i)
                .set("cookie", 99)
                .into_bytes(),
        );
    }
    let mut block = b.take_encoded();
    block.truncate(n.min(block.len()));
    block
}

/// `sizes[i]` records in block i; every fourth record a frame whose payload
/// carries a planted block head when `plant`, every 13th a LOST record.
fn build(sizes: &[usize], plant: bool) -> Built {
    let e = Emitter::builtin();
    let mut w = TraceWriter::new(Vec::new(), &header()).unwrap();
    let mut records = Vec::new();
    let mut ts = 2_000u64;
    let mut recorded: BTreeMap<String, u64> = BTreeMap::new();
    let mut lost = 0u64;
    for &n in sizes {
        let mut block = Vec::new();
        for i in 0..n {
            ts += 1_000;
            let r = match i % 13 {
                12 => {
                    lost += 3;
                    e.record(kind::LOST, ts).set("count", 3).into_bytes()
                }
                _ if i % 4 == 3 => {
                    let mut tail = if plant {
                        planted(&e, 100 + (ts as usize % 300))
                    } else {
                        Vec::new()
                    };
                    tail.extend((0..64).map(|j| (ts as u8).wrapping_mul(j)));
                    let mut r = e
                        .record(kind::FRAME, ts)
                        .set("pkt_id", ts)
                        .set("len", 1500)
                        .set("caplen", tail.len() as u64)
                        .into_bytes();
                    r.extend_from_slice(&tail);
                    r
                }
                _ if i % 2 == 0 => e
                    .record(kind::APP_SEND, ts)
                    .pid(42)
                    .set("cookie", 7)
                    .set("ret", ts % 1000)
                    .into_bytes(),
                _ => e
                    .record(kind::TCP_RCV, ts)
                    .set("cookie", 7)
                    .set("seq", ts)
                    .into_bytes(),
            };
            *recorded
                .entry(name(u16::from_le_bytes([r[8], r[9]])))
                .or_default() += 1;
            w.push(&r).unwrap();
            block.push(r);
        }
        w.flush_block().unwrap();
        records.push(block);
    }
    let mut generated: BTreeMap<String, u64> = recorded.clone();
    generated.remove(&name(kind::LOST));
    *generated.entry(name(kind::APP_SEND)).or_default() += lost;
    let footer = Footer {
        records: records.iter().map(|b| b.len() as u64).sum(),
        lost_kernel: lost,
        generated,
        recorded,
        end_reason: "test".into(),
        ..Footer::default()
    };
    let bytes = w.finish(&footer).unwrap();
    let header_end = TraceReader::new(&bytes[..]).unwrap().offset() as usize;
    let mut blocks = Vec::new();
    let mut at = header_end;
    while &bytes[at..at + 4] != b"MGND" {
        let len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        blocks.push(at..at + BLOCK_HEAD_LEN + len);
        at += BLOCK_HEAD_LEN + len;
    }
    let end = at..bytes.len();
    assert_eq!(blocks.len(), sizes.iter().filter(|&&n| n > 0).count());
    let records = records.into_iter().filter(|b| !b.is_empty()).collect();
    Built {
        bytes,
        header_end,
        blocks,
        records,
        end,
    }
}

/// The header of the traces here: the synthetic one, with drop-reason
/// names as a recorder reads them from the kernel's BTF.
fn header() -> Header {
    let mut h = synthetic_header(1_000);
    let names = [(2, "NOT_SPECIFIED"), (3, "NO_SOCKET"), (5, "TCP_CSUM")];
    h.enums.insert(
        "skb_drop_reason".into(),
        names
            .iter()
            .map(|(v, n)| (v.to_string(), n.to_string()))
            .collect(),
    );
    h
}

/// The trace as a magnet before the header's copies wrote it: no `format`
/// in the header, no copy of it in the END block.
fn old_style(b: &Built) -> Built {
    let mut h: serde_json::Value = serde_json::to_value(header()).unwrap();
    h.as_object_mut().unwrap().remove("format");
    let mut out = encode_preamble(&serde_json::to_vec(&h).unwrap());
    let header_end = out.len();
    let shift = out.len() as isize - b.header_end as isize;
    out.extend_from_slice(&b.bytes[b.header_end..b.end.start]);
    let mut f: serde_json::Value =
        serde_json::from_slice(&b.bytes[b.end.start + BLOCK_HEAD_LEN..]).unwrap();
    f.as_object_mut().unwrap().remove(HEADER_COPY);
    let end_at = out.len();
    out.extend_from_slice(&encode_end(&serde_json::to_vec(&f).unwrap()));
    let moved =
        |r: &Range<usize>| (r.start as isize + shift) as usize..(r.end as isize + shift) as usize;
    Built {
        header_end,
        blocks: b.blocks.iter().map(moved).collect(),
        records: b.records.clone(),
        end: end_at..out.len(),
        bytes: out,
    }
}

struct Read {
    records: Vec<Vec<u8>>,
    errors: Vec<TraceError>,
    footer: Option<Footer>,
    damage: u64,
    /// The reader's header after the last record.
    header: Header,
}

fn read(bytes: &[u8]) -> Read {
    read_with(TraceReader::new(bytes).expect("the header is intact"))
}

fn read_with<R: std::io::Read>(mut r: TraceReader<R>) -> Read {
    let (mut records, mut errors) = (Vec::new(), Vec::new());
    while let Some(item) = r.next_record() {
        match item {
            Ok(rec) => records.push(rec.bytes),
            Err(e) => errors.push(e),
        }
        assert!(errors.len() < 10_000, "the reader does not stop");
    }
    Read {
        records,
        errors,
        footer: r.footer().cloned(),
        damage: r.damage(),
        header: r.header().clone(),
    }
}

fn has(errors: &[TraceError], what: &str) -> bool {
    errors.iter().any(|e| e.to_string().contains(what))
}

fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    v.sort();
    v
}

/// Every record read was written, none twice, and every block other than
/// `spared` (the damaged ones) was read whole.
fn loses_at_most(b: &Built, got: &Read, damaged: &[usize]) -> Result<(), TestCaseError> {
    let all = sorted(b.all());
    let got_sorted = sorted(got.records.clone());
    for w in got_sorted.windows(2) {
        prop_assert!(w[0] != w[1], "a record read twice");
    }
    for r in &got_sorted {
        prop_assert!(
            all.binary_search(r).is_ok(),
            "a record that was not written"
        );
    }
    for (i, block) in b.records.iter().enumerate() {
        if damaged.contains(&i) {
            continue;
        }
        for r in block {
            prop_assert!(
                got_sorted.binary_search(r).is_ok(),
                "block {i} (undamaged) lost a record; errors: {:?}",
                got.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>()
            );
        }
    }
    Ok(())
}

#[test]
fn an_intact_trace_reads_whole_and_adds_up() {
    let b = build(&[30, 17, 40, 5], true);
    let got = read(&b.bytes);
    assert!(got.errors.is_empty(), "{:?}", got.errors);
    assert_eq!(got.records, b.all());
    assert_eq!(got.damage, 0);
    assert!(got.footer.is_some());
}

/// Finding 1: a flip that makes a block's length larger used to swallow every
/// later block and the END block ("recorder killed").
#[test]
fn a_larger_length_loses_only_its_block() {
    let b = build(&[30, 30, 30, 30, 30], false);
    let mut bytes = b.bytes.clone();
    let at = b.blocks[1].start + 4 + 2; // bit 17 of block 1's length: +128 KiB
    bytes[at] ^= 0x02;
    let got = read(&bytes);
    let mut want = b.all();
    want.drain(30..60);
    assert_eq!(got.records, want);
    assert!(got.footer.is_some(), "the END block is still read");
    let first = got.errors[0].to_string();
    assert!(
        first.contains("runs past the end of the file") || first.contains("checksum mismatch"),
        "{first}"
    );
    assert!(
        first.contains(&format!("(byte {})", b.blocks[2].start)),
        "{first}"
    );
    // The totals name what the damage cost, per kind.
    assert!(has(&got.errors, "app_send: "), "{:?}", got.errors);
    assert!(got.damage >= 2);
}

/// Finding 2: after a bad magic the scan passes over magics inside frames
/// (their blocks' checksums do not hold).
#[test]
fn a_planted_magic_is_not_taken_for_a_block() {
    let b = build(&[40, 40, 40, 40], true);
    let mut bytes = b.bytes.clone();
    bytes[b.blocks[1].start] = b'X';
    let got = read(&bytes);
    let mut want = b.all();
    want.drain(40..80);
    assert_eq!(got.records, want, "{:?}", got.errors);
    assert!(got.errors[0].to_string().contains("bad block magic"));
}

/// A frame can carry a whole block with a good checksum (a small trace
/// copied over the network): damage in the frame's block still loses only
/// that block, because its length is followed when a block holds there.
#[test]
fn a_whole_block_inside_a_frame_is_passed_over() {
    let e = Emitter::builtin();
    let inner = planted(&e, usize::MAX);
    let frame = |ts: u64| {
        let mut r = e
            .record(kind::FRAME, ts)
            .set("caplen", inner.len() as u64)
            .into_bytes();
        r.extend_from_slice(&inner);
        r
    };
    let mut w = TraceWriter::new(Vec::new(), &synthetic_header(1_000)).unwrap();
    let recs: Vec<Vec<u8>> = (0..9u64)
        .map(|i| match i % 3 {
            1 => frame(10_000 + i),
            _ => e.record(kind::TCP_RCV, 10_000 + i).into_bytes(),
        })
        .collect();
    for (i, r) in recs.iter().enumerate() {
        w.push(r).unwrap();
        if i % 3 == 2 {
            w.flush_block().unwrap();
        }
    }
    let bytes = w
        .finish(&Footer {
            records: 9,
            ..Footer::default()
        })
        .unwrap();
    let start = TraceReader::new(&bytes[..]).unwrap().offset() as usize;
    let second =
        start + 16 + u32::from_le_bytes(bytes[start + 4..start + 8].try_into().unwrap()) as usize;
    for damage in [second + 20, second] {
        // A flip in the frame's bytes before the planted block; then the magic.
        let mut d = bytes.clone();
        d[damage] ^= 0x40;
        let got = read(&d);
        let mut want = recs.clone();
        want.drain(3..6);
        assert_eq!(got.records, want, "{:?}", got.errors);
    }
}

/// Finding 3: a block dropped: the totals say which kinds lost how many.
#[test]
fn a_dropped_block_is_reported_per_kind() {
    let b = build(&[26, 26, 26], false);
    let mut bytes = b.bytes.clone();
    bytes.drain(b.blocks[1].clone());
    let got = read(&bytes);
    assert_eq!(got.records.len(), 52);
    let mut per_kind: BTreeMap<String, u64> = BTreeMap::new();
    for r in &b.records[1] {
        *per_kind
            .entry(name(u16::from_le_bytes([r[8], r[9]])))
            .or_default() += 1;
    }
    let totals: Vec<String> = got
        .errors
        .iter()
        .filter(|e| matches!(e, TraceError::Totals(_)))
        .map(|e| e.to_string())
        .collect();
    for (k, n) in &per_kind {
        assert!(
            totals
                .iter()
                .any(|t| t.contains(&format!("{k}: ")) && t.contains(&format!("({n} missing)"))),
            "{k} {n}: {totals:?}"
        );
    }
    // The LOST records in the dropped block are missing from the loss too.
    assert!(has(
        &got.errors,
        "the LOST records count 12 lost events, the END block 18"
    ));
    assert_eq!(got.damage as usize, got.errors.len());
}

/// Finding 3: a repeated block is skipped and said so.
#[test]
fn a_duplicated_block_is_skipped_and_reported() {
    let b = build(&[20, 20, 20], false);
    let mut bytes = b.bytes.clone();
    let copy = bytes[b.blocks[0].clone()].to_vec();
    let at = b.blocks[2].start;
    bytes.splice(at..at, copy);
    let got = read(&bytes);
    assert_eq!(got.records, b.all());
    assert_eq!(got.errors.len(), 1, "{:?}", got.errors);
    assert!(has(
        &got.errors,
        &format!("repeats the block at byte {}", b.blocks[0].start)
    ));
}

/// Finding 3: an END block in the middle no longer ends the reading silently.
#[test]
fn an_end_block_in_the_middle_is_noticed() {
    let b = build(&[20, 20, 20], false);
    let mut bytes = b.bytes.clone();
    let end = bytes[b.end.clone()].to_vec();
    bytes.truncate(b.end.start);
    let at = b.blocks[1].start;
    bytes.splice(at..at, end);
    let got = read(&bytes);
    assert_eq!(got.records, b.all());
    assert!(
        has(&got.errors, "END block in the middle"),
        "{:?}",
        got.errors
    );
    assert!(
        has(&got.errors, "no END block at the end"),
        "{:?}",
        got.errors
    );
}

fn find(bytes: &[u8], what: &[u8]) -> usize {
    bytes.windows(what.len()).position(|w| w == what).unwrap()
}

/// One bit flipped inside a drop reason's name in the header's JSON: the
/// header's checksum fails, and every record is still read. The reader says
/// so in one line; the END block's copy restores the header (before the
/// first record when the file can seek, at the END block when not).
#[test]
fn a_flipped_bit_in_the_header_costs_no_record() {
    let b = build(&[30, 17, 40], true);
    let mut bytes = b.bytes.clone();
    let at = find(&bytes, b"NO_SOCKET") + 3;
    bytes[at] ^= 0x01;

    let got = read(&bytes);
    assert_eq!(got.records, b.all());
    assert_eq!(got.errors.len(), 1, "{:?}", got.errors);
    assert!(
        matches!(got.errors[0], TraceError::DamagedHeader { offset: 20, .. }),
        "{:?}",
        got.errors
    );
    assert!(got.errors[0].to_string().starts_with(
        "header at byte 20: checksum mismatch; records read with format version 2's own catalog"
    ));
    assert_eq!(got.header, header(), "restored from the END block's copy");
    assert_eq!(got.damage, 1);

    let r = TraceReader::new_seekable(std::io::Cursor::new(&bytes[..])).unwrap();
    assert_eq!(r.header(), &header(), "restored before the first record");
    let got = read_with(r);
    assert_eq!(got.records, b.all());
    assert_eq!(
        got.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        [format!(
            "header at byte 20: checksum mismatch; restored from its copy in the END block \
             (byte {})",
            b.end.start
        )]
    );
}

/// A trace written before the header's copy existed: the same flip costs
/// only the fields it touched (kept as read, and said to be unchecked), and
/// the catalog is the one its format version defines.
#[test]
fn a_flipped_bit_in_an_old_header_costs_no_record() {
    let b = old_style(&build(&[30, 17, 40], true));
    assert!(TraceReader::new(&b.bytes[..])
        .unwrap()
        .header()
        .format
        .is_none());
    let mut bytes = b.bytes.clone();
    let at = find(&bytes, b"NO_SOCKET") + 3;
    bytes[at] ^= 0x01;
    let got = read_with(TraceReader::new_seekable(std::io::Cursor::new(&bytes[..])).unwrap());
    assert_eq!(got.records, b.all());
    assert_eq!(got.errors.len(), 1, "{:?}", got.errors);
    let line = got.errors[0].to_string();
    assert!(
        line.contains(
            "checksum mismatch; records read with format version 2's own catalog; \
             kept as read, unchecked: writer, host, kernel, cpus, clock, layers, settings, enums"
        ),
        "{line}"
    );
    assert_eq!(got.header.host, "h");
    assert_eq!(got.header.catalog, Catalog::builtin());
    assert_eq!(got.header.enums["skb_drop_reason"]["3"], "NO_ROCKET");

    // A flip that breaks the JSON loses its fields, not the records.
    let mut bytes = b.bytes.clone();
    assert_eq!(bytes[b.header_end - 1], b'}');
    bytes[b.header_end - 1] ^= 0x01;
    let got = read(&bytes);
    assert_eq!(got.records, b.all());
    assert!(has(
        &got.errors,
        "lost: writer, host, kernel, cpus, clock, layers, settings"
    ));
}

/// Byte 8 (the format version) set from 2 to 1: version 1 has no
/// delta-coded blocks. The header's own record of the version names the
/// mismatch; in a trace without it, the first delta-coded block does.
/// Either way the blocks are read by their own magic, and the damage counts.
#[test]
fn a_changed_format_version_is_named() {
    let b = build(&[20, 20, 20], false);
    let mut bytes = b.bytes.clone();
    assert_eq!(bytes[8], 2);
    bytes[8] = 1;
    let got = read(&bytes);
    assert_eq!(got.records, b.all());
    assert_eq!(
        got.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        ["header at byte 8: its format version says 1, the header 2; read as 2"]
    );

    let o = old_style(&b);
    let mut bytes = o.bytes.clone();
    bytes[8] = 1;
    let got = read(&bytes);
    assert_eq!(got.records, b.all());
    assert_eq!(
        got.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        [format!(
            "block at byte {}: a delta-coded block (MGBD), which format version 1 does not \
             have: the version at byte 8 is wrong; blocks are read by their own magic",
            o.blocks[0].start
        )]
    );
    assert_eq!(got.damage, 1);
}

/// 100,000 empty blocks (each a repeat of the first) are one line, not
/// 99,999: the first one's offset, how many more, where the last is.
#[test]
fn a_hundred_thousand_empty_blocks_are_one_line() {
    let b = build(&[20, 20], false);
    let empty = BlockBuilder::plain(0).take_encoded();
    assert_eq!(empty.len(), BLOCK_HEAD_LEN);
    let at = b.blocks[1].start;
    let mut bytes = b.bytes.clone();
    bytes.splice(at..at, empty.repeat(100_000));
    let got = read(&bytes);
    assert_eq!(got.records, b.all());
    assert_eq!(
        got.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        [format!(
            "block at byte {}: repeats the block at byte {at} (same length and checksum); its 0 \
             records were skipped (and 99998 more like it, the last at byte {})",
            at + 16,
            at + 16 * 99_999
        )]
    );
    assert_eq!(got.damage, 1);
}

/// Finding 5: LOST counts do not wrap.
#[test]
fn lost_counts_saturate() {
    let e = Emitter::builtin();
    let recs = [
        e.record(kind::LOST, 2_000)
            .set("count", 1 << 63)
            .into_bytes(),
        e.record(kind::LOST, 3_000)
            .set("count", 1 << 63)
            .into_bytes(),
        e.record(kind::LOST, 4_000).set("count", 5).into_bytes(),
    ];
    let footer = Footer {
        records: 3,
        lost_kernel: 5,
        ..Footer::default()
    };
    let bytes = magnet_trace::emit::synthetic_trace(1_000, recs, Some(&footer));
    let info = summarize(&mut TraceReader::new(&bytes[..]).unwrap());
    assert_eq!(info.lost_events, u64::MAX);
    assert!(
        info.damage
            .iter()
            .any(|d| d.contains(&format!("count {} lost events, the END block 5", u64::MAX))),
        "{:?}",
        info.damage
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// One flipped bit or byte anywhere after the header (magic, length,
    /// count, checksum, payload, END block): at most its own block is lost,
    /// and the damage is reported.
    #[test]
    fn a_flip_loses_at_most_its_block(
        sizes in proptest::collection::vec(1usize..40, 2..7),
        pos in any::<prop::sample::Index>(),
        bit in 0u8..8,
        whole_byte in any::<bool>(),
        plant in any::<bool>(),
    ) {
        let b = build(&sizes, plant);
        let mut bytes = b.bytes.clone();
        let p = b.header_end + pos.index(bytes.len() - b.header_end);
        bytes[p] ^= if whole_byte { 0xff } else { 1 << bit };
        let got = read(&bytes);
        let damaged: Vec<usize> = b.blocks.iter().position(|r| r.contains(&p)).into_iter().collect();
        loses_at_most(&b, &got, &damaged)?;
        prop_assert!(!got.errors.is_empty(), "a flip at {} went unnoticed", p);
        prop_assert_eq!(got.damage as usize, got.errors.len());
        if got.records.len() < b.all().len() && got.footer.is_some() {
            prop_assert!(
                got.errors.iter().any(|e| matches!(e, TraceError::Totals(_))),
                "records missing, totals silent: {:?}", got.errors
            );
        }
    }

    /// One flipped bit anywhere in the preamble or the header JSON, in a
    /// trace with the header's copy and in one written before it, read from
    /// a file or a stream: every record is read (as many as the END block
    /// counts), the damage is one line, and with the copy the header is
    /// whole again.
    #[test]
    fn a_flip_in_the_header_loses_no_record(
        sizes in proptest::collection::vec(1usize..30, 1..5),
        pos in any::<prop::sample::Index>(),
        bit in 0u8..8,
        old in any::<bool>(),
        seekable in any::<bool>(),
    ) {
        let b = build(&sizes, true);
        let b = if old { old_style(&b) } else { b };
        let mut bytes = b.bytes.clone();
        let p = pos.index(b.header_end);
        bytes[p] ^= 1 << bit;
        let got = if seekable {
            read_with(TraceReader::new_seekable(std::io::Cursor::new(&bytes[..])).unwrap())
        } else {
            read(&bytes)
        };
        prop_assert_eq!(got.records.len() as u64, got.footer.as_ref().unwrap().records);
        prop_assert_eq!(&got.records, &b.all());
        prop_assert_eq!(got.errors.len(), 1, "flip at {}: {:?}", p, got.errors);
        let first_is_header = matches!(got.errors[0], TraceError::DamagedHeader { .. });
        prop_assert!(first_is_header, "{:?}", got.errors);
        if !old {
            prop_assert_eq!(&got.header, &header());
        }
    }

    /// Whole blocks dropped, repeated or moved (checksums all hold): no
    /// record is lost that is still in the file, none is read twice, and a
    /// dropped block shows in the totals.
    #[test]
    fn whole_block_damage_is_caught(
        sizes in proptest::collection::vec(1usize..30, 3..7),
        op in 0u8..4,
        i in any::<prop::sample::Index>(),
        j in any::<prop::sample::Index>(),
    ) {
        let b = build(&sizes, true);
        let n = b.blocks.len();
        let (i, j) = (i.index(n), j.index(n));
        let mut parts: Vec<Vec<u8>> = b.blocks.iter().map(|r| b.bytes[r.clone()].to_vec()).collect();
        let end = b.bytes[b.end.clone()].to_vec();
        let mut lost = Vec::new();
        match op {
            0 => {
                parts.remove(i);
                lost.push(i);
            }
            1 => {
                let c = parts[i].clone();
                parts.insert(j, c);
            }
            2 => parts.swap(i, j),
            _ => parts.insert(i, end.clone()),
        }
        let mut bytes = b.bytes[..b.header_end].to_vec();
        for p in &parts {
            bytes.extend_from_slice(p);
        }
        if op != 3 {
            bytes.extend_from_slice(&end);
        }
        let got = read(&bytes);
        loses_at_most(&b, &got, &lost)?;
        prop_assert_eq!(got.records.len(), b.all().len() - lost.iter().map(|&l| b.records[l].len()).sum::<usize>());
        match op {
            0 => prop_assert!(got.errors.iter().any(|e| matches!(e, TraceError::Totals(_)))),
            1 => prop_assert!(has(&got.errors, "repeats the block")),
            3 => prop_assert!(has(&got.errors, "END block in the middle")),
            _ => {}
        }
    }

    /// The bounded fuzz (a few seconds): several kinds of damage at once,
    /// cuts included. Never a panic or a hang; every record read was written
    /// and read once; any change to the bytes is reported unless it only
    /// reorders whole blocks.
    #[test]
    fn fuzz_mixed_damage(
        sizes in proptest::collection::vec(1usize..30, 1..6),
        edits in proptest::collection::vec((0u8..5, any::<prop::sample::Index>(), any::<u8>()), 1..5),
    ) {
        let b = build(&sizes, true);
        let mut bytes = b.bytes.clone();
        for (what, at, v) in edits {
            let body = bytes.len().saturating_sub(b.header_end).max(1);
            let p = (b.header_end + at.index(body)).min(bytes.len());
            match what {
                0 if p < bytes.len() => bytes[p] ^= v | 1,
                1 => bytes.truncate(p),
                2 => {
                    let r = p..(p + v as usize).min(bytes.len());
                    bytes.drain(r);
                }
                3 => {
                    let c: Vec<u8> = bytes[p..(p + v as usize * 16).min(bytes.len())].to_vec();
                    bytes.splice(p..p, c);
                }
                _ => bytes.splice(p..p, b"MGBD\x10\0\0\0\x01\0\0\0\0\0\0\0".iter().copied()).for_each(drop),
            }
        }
        let got = read(&bytes);
        loses_at_most(&b, &got, &(0..b.blocks.len()).collect::<Vec<_>>())?;
        if bytes != b.bytes {
            prop_assert!(!got.errors.is_empty() || sorted(got.records.clone()) == sorted(b.all()));
        }
    }
}
