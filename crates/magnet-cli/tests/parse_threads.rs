//! `magnet parse` formats on several threads; its output must be byte for
//! byte the one-thread output (`--threads 1`, the reading thread formats
//! every line), with the same warnings, on a real trace and on a damaged
//! one. Small batches (`--batch`) make the formatting threads finish out of
//! order, so the writer's reordering is what is tested. No root; under a
//! second.

use std::path::{Path, PathBuf};

use magnet_trace::block::BlockBuilder;
use magnet_trace::{Footer, TraceReader, TraceWriter};

mod common;
use common::{magnet, tmp};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/release-0.1.0.mgt")
}

/// The real trace (recorded by magnet 0.1.0, 759 records in one block)
/// rewritten in blocks of `per` records, so that damage hits some blocks only.
fn reblocked(per: usize) -> (Vec<u8>, Vec<u64>) {
    let f = std::fs::File::open(fixture()).unwrap();
    let mut r = TraceReader::new(f).unwrap();
    let mut recs = Vec::new();
    while let Some(rec) = r.next_record() {
        recs.push(rec.unwrap().bytes);
    }
    let footer: Footer = r.footer().cloned().expect("the fixture has an END block");
    assert_eq!(recs.len(), 759);
    let mut w = TraceWriter::new(Vec::new(), r.header()).unwrap();
    let mut starts = Vec::new();
    for chunk in recs.chunks(per) {
        let mut b = BlockBuilder::default();
        for rec in chunk {
            b.push(rec);
        }
        starts.push(w.bytes_written());
        w.write_encoded_block(&b.take_encoded(), chunk.len() as u32)
            .unwrap();
    }
    (w.finish(&footer).unwrap(), starts)
}

fn run(trace: &Path, extra: &[&str], threads: &str, batch: &str) -> (Vec<u8>, String) {
    let t = trace.to_str().unwrap();
    let mut args = vec!["parse", t, "--threads", threads, "--batch", batch];
    args.extend_from_slice(extra);
    let out = magnet(&args);
    // 1: a damaged trace, printed as far as it reads (docs/exit-codes.md).
    let damaged = trace.to_str().unwrap().contains("damaged");
    assert_eq!(
        out.status.code(),
        Some(damaged as i32),
        "magnet {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.stdout, String::from_utf8(out.stderr).unwrap())
}

/// Every option set: threads 2 and 5, batches of 1, 7 and 100 records,
/// against one thread.
fn same_as_one_thread(trace: &Path, want_lines: usize) {
    let sets: [&[&str]; 7] = [
        &[],
        &["--json"],
        &["--window", "1"],
        &["--window", "16", "--json"],
        &["--layer", "tcp,dev"],
        &["--wall", "-c", "301"],
        &["--json", "--kind", "tcp_rcv"],
    ];
    for extra in sets {
        let (one, one_err) = run(trace, extra, "1", "1");
        if extra.is_empty() {
            // The header's two lines and one line per record.
            assert_eq!(one.iter().filter(|&&b| b == b'\n').count(), want_lines);
        }
        for (threads, batch) in [("2", "1"), ("2", "7"), ("5", "7"), ("5", "100")] {
            let (got, err) = run(trace, extra, threads, batch);
            assert!(
                got == one,
                "{}: {extra:?} with {threads} threads, batch {batch}: output differs from one thread",
                trace.display()
            );
            assert_eq!(err, one_err, "{extra:?}: warnings differ");
        }
    }
}

#[test]
fn a_real_trace_prints_the_same_on_every_thread_count() {
    let (bytes, _) = reblocked(40);
    let path = tmp("reblocked.mgt");
    std::fs::write(&path, &bytes).unwrap();
    same_as_one_thread(&path, 2 + 759);
    same_as_one_thread(&fixture(), 2 + 759);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_damaged_trace_prints_the_same_on_every_thread_count() {
    let (mut bytes, starts) = reblocked(40);
    // Block 3: a payload byte flipped (checksum fails, its 40 records skipped).
    bytes[starts[3] as usize + 100] ^= 0x55;
    // Block 7: its magic broken (the reader scans to block 8).
    bytes[starts[7] as usize] = b'X';
    // Cut inside block 18 (of 19): no END block.
    bytes.truncate(starts[18] as usize + 300);
    let path = tmp("damaged.mgt");
    std::fs::write(&path, &bytes).unwrap();
    let (_, err) = run(&path, &[], "1", "1");
    assert_eq!(err.lines().count(), 3, "three damage warnings: {err}");
    // 759 records, less blocks 3 and 7 (40 each) and the cut 18 (the last
    // 39).
    same_as_one_thread(&path, 2 + 759 - 40 - 40 - 39);
    std::fs::remove_file(&path).unwrap();
}
