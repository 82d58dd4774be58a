//! The trace reader fuzzed for a bounded time from a stable test (so that every
//! `cargo test` fuzzes it a little), on a real recording: the release fixture (a `magnet
//! record` of three loopback connections with --tcp-state and sched), its
//! records and END block re-blocked into blocks of 5 to 60 records so that
//! damage has neighbours to spare. Each input is one kind of damage, and
//! what must hold is asserted, not only "no panic":
//!
//! - a flipped bit or byte anywhere after the header loses at most the
//!   records of the block it hit, is reported, and records missing while the
//!   END block is readable show in the totals;
//! - a block dropped: exactly its records are missing and the totals say so;
//!   a block repeated: read once, reported;
//! - a cut: exactly the records of the blocks before it, and reported;
//! - memory: the reader's peak heap stays under a bound set by the largest
//!   block, whatever a damaged length field says (up to 64 MiB).
//!
//! 3 s by default (MAGNET_FUZZ_SECS), and at least MIN_RUNS inputs however
//! slow the machine.

use std::ops::Range;
use std::time::{Duration, Instant};

use magnet_trace::{Footer, TraceError, TraceReader, TraceWriter};

/// Counts this thread's heap in use and its peak (the test reads on one
/// thread; other test threads do not disturb it).
#[global_allocator]
static ALLOC: magnet_testkit::heap::Counting = magnet_testkit::heap::Counting;

const MIN_RUNS: u64 = 300;

/// The re-blocked real trace and where everything is.
struct Corpus {
    bytes: Vec<u8>,
    header_end: usize,
    blocks: Vec<Range<usize>>,
    records: Vec<Vec<Vec<u8>>>,
    end: Range<usize>,
}

fn corpus() -> Corpus {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../magnet-cli/tests/fixtures/release-0.1.0.mgt"
    );
    let orig = std::fs::read(path).unwrap();
    let mut r = TraceReader::new(&orig[..]).unwrap();
    let mut all = Vec::new();
    while let Some(rec) = r.next_record() {
        all.push(rec.expect("the fixture is intact").bytes);
    }
    let header = r.header().clone();
    let footer: Footer = r.footer().expect("the fixture has its END block").clone();
    assert!(all.len() > 700, "{} records", all.len());
    let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
    let header_end = w.bytes_written() as usize;
    let (mut blocks, mut records) = (Vec::new(), Vec::new());
    let mut i = 0;
    let mut n = 5;
    while i < all.len() {
        let start = w.bytes_written() as usize;
        let take = n.min(all.len() - i);
        for rec in &all[i..i + take] {
            w.push(rec).unwrap();
        }
        w.flush_block().unwrap();
        blocks.push(start..w.bytes_written() as usize);
        records.push(all[i..i + take].to_vec());
        i += take;
        n = 5 + (n * 7 + 3) % 56;
    }
    let end_start = w.bytes_written() as usize;
    let bytes = w.finish(&footer).unwrap();
    let end = end_start..bytes.len();
    Corpus {
        bytes,
        header_end,
        blocks,
        records,
        end,
    }
}

struct Got {
    records: Vec<Vec<u8>>,
    errors: Vec<String>,
    totals: bool,
    footer: bool,
    peak: usize,
}

fn read(bytes: &[u8]) -> Got {
    let heap = magnet_testkit::heap::Span::start();
    let (mut records, mut errors, mut totals) = (Vec::new(), Vec::new(), false);
    let mut footer = false;
    if let Ok(mut r) = TraceReader::new(bytes) {
        while let Some(item) = r.next_record() {
            match item {
                Ok(rec) => records.push(rec.bytes),
                Err(e) => {
                    totals |= matches!(e, TraceError::Totals(_));
                    errors.push(e.to_string());
                }
            }
            assert!(errors.len() < 10_000, "the reader does not stop");
        }
        footer = r.footer().is_some();
    } else {
        errors.push("header".into());
    }
    // What the reader held at its peak, less what the caller keeps (the records).
    let kept: usize = records.iter().map(|r| r.capacity()).sum::<usize>()
        + records.capacity() * std::mem::size_of::<Vec<u8>>();
    let peak = heap.peak_above(kept);
    Got {
        records,
        errors,
        totals,
        footer,
        peak,
    }
}

fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    v.sort();
    v
}

/// Every record read was written and read once; the blocks not in `damaged` are whole.
fn loses_at_most(c: &Corpus, got: &Got, damaged: &[usize], what: &str) {
    let all = sorted(c.records.concat());
    let got_sorted = sorted(got.records.clone());
    for w in got_sorted.windows(2) {
        assert!(
            w[0] != w[1] || all.iter().filter(|r| **r == w[0]).count() > 1,
            "{what}: a record read twice"
        );
    }
    for r in &got_sorted {
        assert!(
            all.binary_search(r).is_ok(),
            "{what}: a record that was not written"
        );
    }
    for (i, block) in c.records.iter().enumerate() {
        if damaged.contains(&i) {
            continue;
        }
        for r in block {
            assert!(
                got_sorted.binary_search(r).is_ok(),
                "{what}: block {i} (undamaged) lost a record; errors {:?}",
                got.errors
            );
        }
    }
}

#[test]
fn fuzz_real_trace_bounded() {
    let secs: u64 = std::env::var("MAGNET_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let c = corpus();
    let total: usize = c.records.iter().map(Vec::len).sum();
    let largest = c.blocks.iter().map(|b| b.len()).max().unwrap();
    assert!(c.blocks.len() > 20, "{} blocks", c.blocks.len());
    // Intact: whole, silent.
    let got = read(&c.bytes);
    assert_eq!(got.records, c.records.concat());
    assert!(got.errors.is_empty(), "{:?}", got.errors);
    // The reader's own memory: its fixed buffers (1.6 MB measured intact), a
    // block and its decoded form a few times over, the header; never what a
    // damaged length field claims (64 MiB).
    let bound = (4 << 20) + 8 * largest + 4 * c.header_end;
    assert!(got.peak <= bound, "intact: peak {} > {bound}", got.peak);

    let mut s: u64 = 0x2545_F491_4F6C_DD1D;
    let mut rnd = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let block_of = |p: usize| c.blocks.iter().position(|b| b.contains(&p));
    let end = Instant::now() + Duration::from_secs(secs);
    let (mut runs, mut peak) = (0u64, 0usize);
    let mut kinds = [0u64; 5];
    while Instant::now() < end || runs < MIN_RUNS {
        let k = (rnd() % 5) as usize;
        kinds[k] += 1;
        let body = c.bytes.len() - c.header_end;
        match k {
            // A flip (bit or byte), anywhere after the header.
            0 | 1 => {
                let p = c.header_end + rnd() as usize % body;
                let mut b = c.bytes.clone();
                b[p] ^= if k == 0 { 1 << (rnd() % 8) } else { 0xff };
                // Length fields made large, as the worst case.
                if k == 1 && rnd() % 4 == 0 {
                    if let Some(i) = block_of(p) {
                        let at = c.blocks[i].start + 4;
                        b[at..at + 4].copy_from_slice(&(64u32 << 20).to_le_bytes());
                    }
                }
                let what = format!("flip at {p}");
                let got = read(&b);
                let damaged: Vec<usize> = block_of(p).into_iter().collect();
                loses_at_most(&c, &got, &damaged, &what);
                assert!(!got.errors.is_empty(), "{what}: unnoticed");
                if got.records.len() < total && got.footer {
                    assert!(
                        got.totals,
                        "{what}: records missing, totals silent: {:?}",
                        got.errors
                    );
                }
                peak = peak.max(got.peak);
                assert!(got.peak <= bound, "{what}: peak {} > {bound}", got.peak);
            }
            // A block dropped.
            2 => {
                let i = rnd() as usize % c.blocks.len();
                let mut b = c.bytes[..c.blocks[i].start].to_vec();
                b.extend_from_slice(&c.bytes[c.blocks[i].end..]);
                let got = read(&b);
                let what = format!("block {i} dropped");
                loses_at_most(&c, &got, &[i], &what);
                assert_eq!(got.records.len(), total - c.records[i].len(), "{what}");
                assert!(got.totals, "{what}: {:?}", got.errors);
                peak = peak.max(got.peak);
            }
            // A block repeated after itself or later.
            3 => {
                let i = rnd() as usize % c.blocks.len();
                let j = i + 1 + rnd() as usize % (c.blocks.len() - i);
                let at = if j < c.blocks.len() {
                    c.blocks[j].start
                } else {
                    c.end.start
                };
                let mut b = c.bytes[..at].to_vec();
                b.extend_from_slice(&c.bytes[c.blocks[i].clone()]);
                b.extend_from_slice(&c.bytes[at..]);
                let got = read(&b);
                let what = format!("block {i} repeated before byte {at}");
                assert_eq!(
                    sorted(got.records.clone()),
                    sorted(c.records.concat()),
                    "{what}"
                );
                assert!(
                    got.errors.iter().any(|e| e.contains("repeats the block")),
                    "{what}: {:?}",
                    got.errors
                );
                peak = peak.max(got.peak);
            }
            // A cut.
            _ => {
                let p = c.header_end + rnd() as usize % body;
                let got = read(&c.bytes[..p]);
                let whole = c.blocks.iter().take_while(|b| b.end <= p).count();
                let what = format!("cut at {p}");
                assert_eq!(got.records, c.records[..whole].concat(), "{what}");
                assert!(!got.errors.is_empty(), "{what}: unnoticed");
                peak = peak.max(got.peak);
            }
        }
        runs += 1;
    }
    eprintln!(
        "{runs} inputs in {secs} s (flip bit/byte, drop, repeat, cut: {kinds:?}); {} blocks, {total} records; reader's peak heap {peak} B (bound {bound} B)",
        c.blocks.len()
    );
}
