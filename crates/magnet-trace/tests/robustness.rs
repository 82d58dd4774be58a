//! A trace cut at any byte or with any byte flipped gives its readable prefix and
//! a clear error, never a panic; an intact trace round-trips exactly.

use magnet_trace::{ClockMap, Footer, Header, Record, TraceError, TraceReader, TraceWriter};
use proptest::prelude::*;

/// A record of `len` bytes with a recognisable header.
fn record(i: u64, len: usize) -> Vec<u8> {
    let mut r = vec![0u8; len];
    r[0..8].copy_from_slice(&(1_000 + i).to_le_bytes());
    r[8..10].copy_from_slice(&10u16.to_le_bytes());
    r[12..16].copy_from_slice(&(i as u32).to_le_bytes());
    for (j, b) in r[24..].iter_mut().enumerate() {
        *b = (i as u8).wrapping_add(j as u8);
    }
    r
}

/// A trace with `n` records spread over several blocks.
fn trace(n: u64) -> (Vec<u8>, Vec<Vec<u8>>) {
    let header = Header::new(
        "test-host".into(),
        "6.18.0".into(),
        2,
        ClockMap {
            monotonic_ns: 5,
            realtime_ns: 7,
        },
    );
    let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
    let mut recs = Vec::new();
    for i in 0..n {
        let r = record(i, 24 + (i as usize % 7) * 8);
        w.push(&r).unwrap();
        if i % 50 == 49 {
            w.flush_block().unwrap(); // several blocks even in a small trace
        }
        recs.push(r);
    }
    let footer = Footer {
        records: n,
        end_reason: "test".into(),
        ..Default::default()
    };
    (w.finish(&footer).unwrap(), recs)
}

fn read_all(bytes: &[u8]) -> (Result<Vec<Record>, TraceError>, Vec<TraceError>, bool) {
    let mut r = match TraceReader::new(bytes) {
        Ok(r) => r,
        Err(e) => return (Err(e), vec![], false),
    };
    let mut ok = Vec::new();
    let mut errs = Vec::new();
    while let Some(item) = r.next_record() {
        match item {
            Ok(rec) => ok.push(rec),
            Err(e) => errs.push(e),
        }
    }
    (Ok(ok), errs, r.footer().is_some())
}

#[test]
fn round_trip_is_exact() {
    let (bytes, recs) = trace(500);
    let (got, errs, footer) = read_all(&bytes);
    assert!(errs.is_empty(), "{errs:?}");
    assert!(footer);
    let got: Vec<Vec<u8>> = got.unwrap().into_iter().map(|r| r.bytes).collect();
    assert_eq!(got, recs);
    let r = TraceReader::new(&bytes[..]).unwrap();
    assert_eq!(r.header().host, "test-host");
    assert_eq!(r.header().clock.realtime_ns, 7);
}

#[test]
fn truncated_at_every_byte_reads_a_prefix() {
    let (bytes, recs) = trace(120);
    for cut in 0..bytes.len() {
        let (got, errs, footer) = read_all(&bytes[..cut]);
        match got {
            // Too short for a header: the error must say so, not panic.
            Err(e) => assert!(
                matches!(e, TraceError::NotATrace | TraceError::Truncated { .. }),
                "cut {cut}: {e}"
            ),
            Ok(got) => {
                assert!(!footer, "cut {cut}: a cut trace has no footer");
                // What was read is exactly a prefix of what was written.
                for (a, b) in got.iter().zip(&recs) {
                    assert_eq!(&a.bytes, b, "cut {cut}");
                }
                assert!(got.len() <= recs.len());
                assert_eq!(errs.len(), 1, "cut {cut}: {errs:?}");
                assert!(
                    matches!(errs[0], TraceError::Truncated { .. }),
                    "cut {cut}: {}",
                    errs[0]
                );
            }
        }
    }
}

#[test]
fn a_damaged_block_is_skipped_and_later_blocks_still_read() {
    let (mut bytes, recs) = trace(200); // 4 blocks of 50
    let r = TraceReader::new(&bytes[..]).unwrap();
    // The second block starts after the first block's head and 50 framed records.
    let first_block_len: usize = 16 + recs[..50].iter().map(|r| 4 + r.len()).sum::<usize>();
    let inside_second = r.offset() as usize + first_block_len + 16 + 100;
    drop(r);
    bytes[inside_second] ^= 0xff;
    let (got, errs, footer) = read_all(&bytes);
    let got = got.unwrap();
    assert!(footer);
    assert_eq!(got.len(), 150, "one block of 50 skipped");
    // The damage, then what it cost against the END block's totals.
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(
        errs[1]
            .to_string()
            .contains("150 records read, the END block counts 200 written (50 missing)"),
        "{}",
        errs[1]
    );
    assert!(
        errs[0].to_string().contains("checksum mismatch"),
        "{}",
        errs[0]
    );
    assert_eq!(got[0].bytes, recs[0]);
    assert_eq!(got[50].bytes, recs[100]);
}

#[test]
fn not_a_trace_says_so() {
    let e = TraceReader::new(&b"hello world, this is not a trace at all"[..])
        .err()
        .unwrap();
    assert_eq!(e.to_string(), "not a magnet trace (bad magic at byte 0)");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn flipped_bytes_never_panic(pos in 0usize..20_000, xor in 1u8..=255, n in 1u64..300) {
        let (mut bytes, recs) = trace(n);
        let pos = pos % bytes.len();
        bytes[pos] ^= xor;
        let (got, _errs, _footer) = read_all(&bytes);
        if let Ok(got) = got {
            // Every record returned intact is one that was written (a flip may land
            // in a block the checksum then rejects, never in a returned record).
            for g in &got {
                prop_assert!(recs.contains(&g.bytes));
            }
        }
    }

    #[test]
    fn random_bytes_after_a_valid_header_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let (bytes, _) = trace(0);
        let header_end = TraceReader::new(&bytes[..]).unwrap().offset() as usize;
        let mut b = bytes[..header_end].to_vec();
        b.extend_from_slice(&tail);
        let _ = read_all(&b);
    }
}

/// Version 2 writes delta-coded blocks; a reader must read them and the plain
/// blocks of version 1 alike, also mixed in one file, and a delta block whose
/// checksum holds but whose records do not decode must give back the records
/// before the damage, one error, and then the next block.
mod delta_blocks {
    use super::*;
    use magnet_trace::block::{BlockBuilder, BLOCK_HEAD_LEN, DELTA_BLOCK_MAGIC};
    use magnet_trace::delta::decode_payload;

    fn header() -> Header {
        Header::new("h".into(), "6.18.0".into(), 2, ClockMap::default())
    }

    #[test]
    fn plain_and_delta_blocks_in_one_file_read_the_same() {
        let recs: Vec<Vec<u8>> = (0..300).map(|i| record(i, 56)).collect();
        let mut w = TraceWriter::new(Vec::new(), &header()).unwrap();
        for (i, chunk) in recs.chunks(100).enumerate() {
            let mut b = if i == 1 {
                BlockBuilder::plain(0)
            } else {
                BlockBuilder::default()
            };
            chunk.iter().for_each(|r| b.push(r));
            w.write_encoded_block(&b.take_encoded(), chunk.len() as u32)
                .unwrap();
        }
        let bytes = w.finish(&Footer::default()).unwrap();
        let (got, errs, footer) = read_all(&bytes);
        let got: Vec<Vec<u8>> = got.unwrap().into_iter().map(|r| r.bytes).collect();
        assert_eq!(got, recs);
        assert!(errs.is_empty() && footer);
    }

    #[test]
    fn repeated_records_take_a_fraction_of_their_size() {
        // Same kind, time and one id word changing: the shape of packet records.
        let mut plain = BlockBuilder::plain(0);
        let mut delta = BlockBuilder::default();
        for i in 0..1000u64 {
            let mut r = vec![0x5au8; 56];
            r[0..8].copy_from_slice(&(1_000_000 + 700 * i).to_le_bytes());
            r[8..10].copy_from_slice(&53u16.to_le_bytes());
            r[32..40].copy_from_slice(&(0xabc_0000 + i).to_le_bytes());
            plain.push(&r);
            delta.push(&r);
        }
        // tag + kind + 2 mask bytes + the time's and the id's low words
        assert_eq!(delta.len(), 57 + 999 * (1 + 1 + 2 + 8));
        assert_eq!(plain.len(), 1000 * 60);
    }

    #[test]
    fn a_delta_block_that_does_not_decode_keeps_its_prefix() {
        let recs: Vec<Vec<u8>> = (0..20).map(|i| record(i, 56)).collect();
        let mut first = BlockBuilder::default();
        recs[..10].iter().for_each(|r| first.push(r));
        let first = first.take_encoded();
        // Cut the payload after record 4 and append a delta record of a kind
        // that has no earlier record; then fix the checksum so only the
        // decoder can notice.
        let mut payload = Vec::new();
        let mut b = BlockBuilder::default();
        recs[..5].iter().for_each(|r| b.push(r));
        payload.extend_from_slice(&b.take_encoded()[BLOCK_HEAD_LEN..]);
        payload.extend_from_slice(&[(56 << 1 | 1) as u8, 0x11, 0, 0]);
        let mut broken = Vec::new();
        broken.extend_from_slice(DELTA_BLOCK_MAGIC);
        broken.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        broken.extend_from_slice(&6u32.to_le_bytes());
        broken.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        broken.extend_from_slice(&payload);
        let mut w = TraceWriter::new(Vec::new(), &header()).unwrap();
        w.write_encoded_block(&broken, 6).unwrap();
        w.write_encoded_block(&first, 10).unwrap();
        let bytes = w.finish(&Footer::default()).unwrap();
        let (got, errs, footer) = read_all(&bytes);
        let got: Vec<Vec<u8>> = got.unwrap().into_iter().map(|r| r.bytes).collect();
        assert_eq!(got[..5], recs[..5]);
        assert_eq!(got[5..], recs[..10]);
        assert_eq!(errs.len(), 1, "{errs:?}");
        let msg = errs[0].to_string();
        assert!(msg.starts_with("record 5 of block at byte "), "{msg}");
        assert!(msg.contains("no earlier record of that kind"), "{msg}");
        assert!(footer);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn any_payload_decodes_or_says_why(payload in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut out = Vec::new();
            if let Err(e) = decode_payload(&payload, &mut out) {
                prop_assert!(!e.reason.is_empty());
            }
        }
    }
}
