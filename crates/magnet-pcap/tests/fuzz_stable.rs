//! The cargo-fuzz target (fuzz/fuzz_targets/capture.rs) driven from a stable test for
//! a bounded time: mutations of the fixtures (bit flips, byte sets, cuts, splices of
//! length fields), 2 s by default (MAGNET_FUZZ_SECS to change), and at least
//! MIN_RUNS inputs however slow the machine (a loaded CI host must not make the
//! test judge its own speed).

use std::time::{Duration, Instant};

#[test]
fn fuzz_capture_bounded() {
    let secs: u64 = std::env::var("MAGNET_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "pcapng"))
        .map(|e| std::fs::read(e.path()).unwrap())
        .collect();
    seeds.sort();
    assert!(seeds.len() >= 8);
    // xorshift: reproducible without a dependency.
    let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let end = Instant::now() + Duration::from_secs(secs);
    let mut runs = 0u64;
    let mut packets = 0usize;
    const MIN_RUNS: u64 = 200;
    while Instant::now() < end || runs < MIN_RUNS {
        let mut b = seeds[rnd() as usize % seeds.len()].clone();
        for _ in 0..1 + rnd() % 4 {
            let n = b.len().max(1);
            let i = rnd() as usize % n;
            match rnd() % 5 {
                0 if !b.is_empty() => b[i] ^= 1 << (rnd() % 8),
                1 if !b.is_empty() => b[i] = [0, 0xff, 12, 16, 0x80 | 63][rnd() as usize % 5],
                2 => b.truncate(i),
                3 if i + 4 <= b.len() => {
                    let v = [12u32, 16, 20, 28, 32, u32::MAX, 0x7fff_fffc][rnd() as usize % 7];
                    b[i..i + 4].copy_from_slice(&v.to_le_bytes());
                }
                _ => b.insert(i.min(b.len()), rnd() as u8),
            }
        }
        packets += magnet_pcap::fuzzing::capture(&b);
        runs += 1;
    }
    eprintln!("{runs} inputs, {packets} packets in {secs} s");
    assert!(runs >= MIN_RUNS);
}
