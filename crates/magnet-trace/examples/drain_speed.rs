//! The user-space cost of draining records into a trace, without the kernel
//! or a traffic generator as the limit: one thread does what the recorder's
//! drain does with each record it takes from the ring (checks the header,
//! counts the kind, appends it to a `BlockBuilder`, hands each ~256 KiB block
//! to the writer thread over a bounded channel) and a writer thread writes
//! the blocks with `TraceWriter`, as `magnet record` does. Records are
//! copies of the kinds' real sizes from the catalog, in a fixed mix.
//!
//! With TRACE, the records are those of a real recording (its first 1,000,000,
//! replayed in order as often as RECORDS needs, each with a new time): what
//! changes from one record of a kind to the next is then what a recording's
//! does (packet ids, lengths, sequence numbers), not only the time.
//!
//! usage: drain_speed [RECORDS] [OUT] [TRACE]   (defaults 20000000, /dev/null)
//!
//! Prints records per CPU-second of each thread (from
//! /proc/thread-self/schedstat, nanoseconds on a CPU) and per wall second.

use std::io::BufWriter;
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use magnet_trace::block::{u16_at, u64_at, BlockBuilder};
use magnet_trace::emit::synthetic_header;
use magnet_trace::emit::Emitter;
use magnet_trace::{kind, Catalog, Footer, TraceWriter};

/// Nanoseconds this thread has run on a CPU.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args
        .next()
        .map(|s| s.parse().expect("RECORDS is a number"))
        .unwrap_or(20_000_000);
    let out = args.next().unwrap_or_else(|| "/dev/null".into());
    let mix: Vec<Vec<u8>> = match args.next() {
        Some(trace) => {
            let f = std::fs::File::open(&trace).expect("open TRACE");
            let mut rd = magnet_trace::TraceReader::new(std::io::BufReader::new(f))
                .expect("TRACE is a trace");
            let mut v = Vec::new();
            while let Some(r) = rd.next_record_ref() {
                v.push(r.expect("TRACE reads").bytes.to_vec());
                if v.len() == 1_000_000 {
                    break;
                }
            }
            assert!(!v.is_empty(), "TRACE has no records");
            v
        }
        None => {
            let e = Emitter::builtin();
            // One record of each kind of the default layers (app, tcp, ip,
            // dev), at its catalog size.
            Catalog::builtin()
                .kinds
                .iter()
                .filter(|k| ["app", "tcp", "ip", "dev"].contains(&k.layer.as_str()))
                .map(|k| e.record(k.id, 1_000_000).into_bytes())
                .collect()
        }
    };
    let kinds = {
        let mut k: Vec<u16> = mix.iter().map(|r| u16_at(r, 8)).collect();
        k.sort_unstable();
        k.dedup();
        k.len()
    };
    let mean = mix.iter().map(Vec::len).sum::<usize>() as f64 / mix.len() as f64;
    let header = synthetic_header(1_000);
    let file = std::fs::File::create(&out).expect("create OUT");
    let mut w = TraceWriter::new(BufWriter::with_capacity(1 << 20, file), &header).unwrap();
    let (tx, rx) = sync_channel::<(Vec<u8>, u32)>(64);
    let writer = std::thread::spawn(move || {
        let c0 = thread_cpu_ns();
        for (b, n) in rx {
            w.write_encoded_block(&b, n).unwrap();
            w.flush().unwrap();
        }
        w.finish(&Footer::default()).unwrap();
        thread_cpu_ns() - c0
    });
    let t0 = Instant::now();
    let c0 = thread_cpu_ns();
    let mut block = BlockBuilder::with_capacity((256 << 10) + 4096);
    let mut by_kind = vec![0u64; kind::MAX as usize];
    let mut last_ts = 0u64;
    let mut rec = mix.clone();
    for i in 0..n {
        let r = &mut rec[(i % mix.len() as u64) as usize];
        // A new time per record, as the ring gives them.
        r[..8].copy_from_slice(&(1_000_000 + i).to_le_bytes());
        let k = u16_at(r, 8);
        by_kind[k as usize] += 1;
        last_ts = last_ts.max(u64_at(r, 0));
        block.push(r);
        if block.len() >= 256 << 10 {
            let c = block.count();
            tx.send((block.take_encoded(), c)).unwrap();
        }
    }
    if !block.is_empty() {
        let c = block.count();
        tx.send((block.take_encoded(), c)).unwrap();
    }
    let drain_ns = thread_cpu_ns() - c0;
    drop(tx);
    let writer_ns = writer.join().unwrap();
    let wall = t0.elapsed().as_secs_f64();
    assert_eq!(by_kind.iter().sum::<u64>(), n);
    std::hint::black_box(last_ts);
    let rate = |ns: u64| n as f64 / (ns as f64 / 1e9) / 1e6;
    println!(
        "drain_speed: {n} records ({kinds} kinds, {mean:.0} B mean) to {out}\n\
         drain thread:  {:.3} CPU-s  {:.2} M records/CPU-s  ({:.1} ns/record)\n\
         writer thread: {:.3} CPU-s  {:.2} M records/CPU-s\n\
         wall:          {wall:.3} s      {:.2} M records/s\n\
         goal: drain >= 5 M records/s on one core: {}",
        drain_ns as f64 / 1e9,
        rate(drain_ns),
        drain_ns as f64 / n as f64,
        writer_ns as f64 / 1e9,
        rate(writer_ns),
        n as f64 / wall / 1e6,
        if rate(drain_ns) >= 5.0 {
            "met"
        } else {
            "NOT met"
        }
    );
}
