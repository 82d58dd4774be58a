//! The capture reader fuzzed for a bounded time from a stable test, with
//! properties asserted, so that every `cargo test` fuzzes it a little (the round trip through
//! the writer is `fuzz_stable.rs`). Corpus: the pcapng fixtures here and the
//! real captures of magnet-rpc's tests (NFSv3/v4 over TCP from a Ganesha
//! server, RPCSEC_GSS), pcap and pcapng, both byte orders.
//!
//! - a cut keeps exactly the packets whose records end before it, and says so
//!   unless it falls between records;
//! - a flip inside one packet's bytes (classic pcap: the data has no framing)
//!   changes that packet only: every other packet reads the same;
//! - any flip keeps every packet whose record ends before the flipped byte;
//! - memory: the reader's peak heap stays within its 1 MiB buffer and the
//!   file, whatever a damaged length says (up to the 16 MiB record bound).
//!
//! 2 s by default (MAGNET_FUZZ_SECS), at least MIN_RUNS inputs.

use std::path::Path;
use std::time::{Duration, Instant};

use magnet_pcap::CaptureReader;

#[global_allocator]
static ALLOC: magnet_testkit::heap::Counting = magnet_testkit::heap::Counting;

const MIN_RUNS: u64 = 300;

/// (ts, data) of each packet, the end offset of each packet's record, whether
/// the read ended in an error, and the reader's peak heap beyond what it returned.
struct Read {
    pkts: Vec<(i64, Vec<u8>)>,
    ends: Vec<u64>,
    error: bool,
    peak: usize,
}

fn read(b: &[u8]) -> Read {
    let heap = magnet_testkit::heap::Span::start();
    let (mut pkts, mut ends, mut error) = (Vec::new(), Vec::new(), false);
    match CaptureReader::new(b, Path::new("fuzz")) {
        Ok(mut rd) => loop {
            match rd.next_packet() {
                None => break,
                Some(Ok(p)) => {
                    pkts.push((p.ts_ns, p.data.to_vec()));
                    ends.push(rd.offset());
                }
                Some(Err(_)) => {
                    error = true;
                    break;
                }
            }
            assert!(pkts.len() < 1_000_000);
        },
        Err(_) => error = true,
    }
    let kept: usize = pkts.iter().map(|p| p.1.capacity() + 32).sum::<usize>()
        + pkts.capacity() * 32
        + ends.capacity() * 8;
    let peak = heap.peak_above(kept);
    Read {
        pkts,
        ends,
        error,
        peak,
    }
}

/// Where each item (file header, block, record) of an intact capture ends.
fn item_ends(b: &[u8]) -> Vec<u64> {
    let mut rd = CaptureReader::new(b, Path::new("fuzz")).unwrap();
    let mut ends = Vec::new();
    while let Some(Ok(it)) = rd.next_item() {
        ends.push(it.offset + it.raw.len() as u64);
    }
    ends
}

fn corpus() -> Vec<(String, Vec<u8>)> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in [
        here.join("tests/data"),
        here.join("../magnet-rpc/tests/data"),
    ] {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
                out.push((
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn fuzz_capture_properties_bounded() {
    let secs: u64 = std::env::var("MAGNET_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let seeds: Vec<(String, Vec<u8>, Read, Vec<u64>)> = corpus()
        .into_iter()
        .map(|(n, b)| {
            let r = read(&b);
            let items = if r.error { Vec::new() } else { item_ends(&b) };
            (n, b, r, items)
        })
        // (the crafted fixtures that end in an error on purpose left out)
        .filter(|s| !s.2.error)
        .collect();
    assert!(seeds.len() >= 10, "{} seeds", seeds.len());
    assert!(seeds.iter().filter(|s| s.0.ends_with(".pcap")).count() >= 4);
    // The reader's buffer (1 MiB) plus the file, a few times over.
    let bound = |len: usize| (2 << 20) + 4 * len;
    let mut s: u64 = 0x9E37_79B9_7F4A_7C15 ^ 24;
    let mut rnd = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let end = Instant::now() + Duration::from_secs(secs);
    let (mut runs, mut peak, mut kinds) = (0u64, 0usize, [0u64; 4]);
    while Instant::now() < end || runs < MIN_RUNS {
        let (name, orig, whole, items) = &seeds[rnd() as usize % seeds.len()];
        let k = (rnd() % 4) as usize;
        kinds[k] += 1;
        let got;
        match k {
            // A cut.
            0 => {
                let p = rnd() as usize % (orig.len() + 1);
                got = read(&orig[..p]);
                let keep = whole.ends.iter().take_while(|&&e| e as usize <= p).count();
                assert_eq!(got.pkts, whole.pkts[..keep], "{name} cut at {p}");
                let between = p == orig.len() || items.contains(&(p as u64));
                assert!(got.error || between, "{name} cut at {p}: unnoticed");
            }
            // A flip inside one packet's data (classic pcap).
            1 if name.ends_with(".pcap") && !whole.pkts.is_empty() => {
                let i = rnd() as usize % whole.pkts.len();
                let len = whole.pkts[i].1.len();
                if len == 0 {
                    continue;
                }
                let at = whole.ends[i] as usize - len + rnd() as usize % len;
                let mut b = orig.clone();
                b[at] ^= 1 << (rnd() % 8);
                got = read(&b);
                assert!(
                    !got.error,
                    "{name}: a flip in packet {i}'s data broke the framing"
                );
                assert_eq!(got.pkts.len(), whole.pkts.len());
                for (j, (g, w)) in got.pkts.iter().zip(&whole.pkts).enumerate() {
                    assert_eq!(
                        g == w,
                        j != i,
                        "{name}: flip at {at} in packet {i}, packet {j}"
                    );
                }
            }
            // Any flip, or a length field made large: what came before is kept.
            _ => {
                let mut b = orig.clone();
                let at = rnd() as usize % b.len();
                if k == 3 && at + 4 <= b.len() {
                    let v = [u32::MAX, 16 << 20, (16 << 20) - 4, 1 << 20][rnd() as usize % 4];
                    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
                } else {
                    b[at] ^= 1 << (rnd() % 8);
                }
                got = read(&b);
                let keep = whole.ends.iter().take_while(|&&e| e as usize <= at).count();
                // (a flip in a file or section header may change how every
                // packet reads: the time resolution, the byte order)
                let before_first = whole.ends.first().is_none_or(|&e| at < e as usize);
                if !before_first {
                    assert!(
                        got.pkts.len() >= keep && got.pkts[..keep] == whole.pkts[..keep],
                        "{name}: change at {at} lost packets before it"
                    );
                }
            }
        }
        peak = peak.max(got.peak);
        assert!(
            got.peak <= bound(orig.len()),
            "{name} ({} B): peak {} B > {}",
            orig.len(),
            got.peak,
            bound(orig.len())
        );
        runs += 1;
    }
    eprintln!(
        "{runs} inputs in {secs} s over {} captures (cut, data flip, flip, length: {kinds:?}); reader's peak heap {peak} B",
        seeds.len()
    );
}
