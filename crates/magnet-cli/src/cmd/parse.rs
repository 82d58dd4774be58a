//! `magnet parse`: one line per event, in time order (MAGNeT's magnet-parse), or
//! JSON lines. The text form has a fixed column order for grep/awk:
//!
//! ```text
//! # time_s cpu pid tid layer kind field=value ...
//! 0.001234567 1 4242 4242 app app_send cookie=8193 asked=1000 ret=1000 ...
//! ```

use std::collections::HashSet;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use magnet_trace::print::{LinePrinter, TimeColumn};
use magnet_trace::{Event, KindIndex, RecordRef, ReorderBuffer};

use super::trace_input;
use magnet_common::units::parse_duration;

const AFTER_HELP: &str = "\
Times are seconds since the recording started (the trace's clock mapping turns them
into wall-clock time: --wall). Records reach the trace in ring-buffer order; parse
sorts them by time within a window of --window records.

Examples:
  magnet parse run.mgt | grep app_send
  magnet parse run.mgt --layer tcp --sock 8193 --since 1.5s --until 2s
  magnet parse run.mgt --json --kind dev_start_xmit | jq .len
  magnet parse run.mgt | awk '$6 == \"app_send\" { n++ } END { print n }'";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct ParseArgs {
    #[command(flatten)]
    input: super::trace_input::TraceArg,
    /// JSON lines instead of text.
    #[arg(long)]
    json: bool,
    /// Only these layers (app, tcp, ip, qdisc, dev, drop, sched, meta); repeatable or comma-separated.
    #[arg(long, visible_alias = "layers", value_delimiter = ',')]
    layer: Vec<String>,
    /// Only these kinds (e.g. app_send, tcp_rcv); repeatable or comma-separated.
    #[arg(long, visible_alias = "kinds", value_delimiter = ',')]
    kind: Vec<String>,
    /// Only events of this socket cookie (and its SOCK record).
    #[arg(long, value_name = "COOKIE")]
    sock: Option<u64>,
    /// Only events recorded in this process (tgid).
    #[arg(long)]
    pid: Option<u32>,
    /// Only events at or after this time since the recording started (e.g. 1.5s).
    #[arg(long, value_parser = parse_duration)]
    since: Option<Duration>,
    /// Only events before this time since the recording started.
    #[arg(long, value_parser = parse_duration)]
    until: Option<Duration>,
    /// Print wall-clock time (UTC, ns) instead of seconds since the start.
    #[arg(long)]
    wall: bool,
    /// Stop after this many events.
    #[arg(short = 'c', long)]
    count: Option<u64>,
    /// Records held back to sort by time (1 to 16777216).
    #[arg(long, default_value_t = 65536, value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    window: u64,
    /// Threads that format lines (default: one per core; 1 formats on the
    /// reading thread). The output is the same for every value.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=256))]
    threads: Option<u64>,
    /// Records per batch handed to a formatting thread (tests use small ones).
    #[arg(long, default_value_t = 2048, hide = true, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    batch: u64,
}

pub fn run(args: ParseArgs) -> Result<ExitCode> {
    let file = args.input.path();
    // A bar only while the lines go elsewhere than the terminal (`parse … > file`).
    let progress =
        trace_input::progress_wanted(args.input.quiet) && !std::io::stdout().is_terminal();
    let mut reader = trace_input::open(&file, progress)?;
    let header = reader.header().clone();
    let index = KindIndex::new(&header.catalog);
    check_names(&args, &header.catalog)?;
    let layers: HashSet<&str> = args.layer.iter().map(|s| s.as_str()).collect();
    let kinds: HashSet<&str> = args.kind.iter().map(|s| s.as_str()).collect();
    let start = header.clock.monotonic_ns;
    let since = args.since.map(|d| start + d.as_nanos() as u64);
    let until = args.until.map(|d| start + d.as_nanos() as u64);

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    // Lines are built in one buffer and written in large pieces.
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 17);
    if !args.json {
        writeln!(
            buf,
            "# magnet parse {} host={} kernel={}\n# {} cpu pid tid layer kind field=value ...",
            file.display(),
            magnet_common::text::escape(&header.host),
            magnet_common::text::escape(&header.kernel),
            if args.wall { "wall_ns" } else { "time_s" }
        )?;
    }
    let printer = LinePrinter::new(&header);
    let time = if args.wall {
        TimeColumn::Wall
    } else {
        TimeColumn::Relative
    };
    let threads = args.threads.map(|n| n as usize).unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_THREADS))
    });
    let filter = Filter {
        index: &index,
        layers: &layers,
        kinds: &kinds,
        sock: args.sock,
        pid: args.pid,
        since,
        until,
    };
    let style = Style {
        json: args.json,
        time,
    };
    let mut damaged = 0u64;
    let path = file.clone();
    let mut ordered = ReorderBuffer::new(&mut reader, args.window as usize);
    let mut on_damage = |e: &magnet_trace::TraceError| {
        damaged += 1;
        trace_input::warn(&path, e);
    };
    if threads <= 1 {
        serial(
            &mut ordered,
            &filter,
            &printer,
            style,
            args.count,
            &mut out,
            &mut buf,
            &mut on_damage,
        )?;
    } else {
        out.write_all(&buf)?;
        drop(out);
        parallel(
            &mut ordered,
            &filter,
            &printer,
            style,
            Split {
                threads,
                batch: args.batch as usize,
            },
            args.count,
            &mut on_damage,
        )?;
        out = stdout.lock();
    }
    drop(ordered);
    out.flush()?;
    trace_input::clear_progress();
    if reader.footer().is_none() && damaged == 0 && args.count.is_none() {
        eprintln!(
            "magnet: warning: {}: the trace has no END block (the recorder did not finish)",
            path.display()
        );
    }
    Ok(trace_input::exit_code(&reader))
}

/// `--kind` and `--layer` must name kinds and layers the trace has.
fn check_names(args: &ParseArgs, catalog: &magnet_trace::Catalog) -> Result<()> {
    for k in &args.kind {
        if catalog.by_name(k).is_none() {
            let names: Vec<_> = catalog.kinds.iter().map(|k| k.name.as_str()).collect();
            anyhow::bail!(
                "--kind {k}: no such kind in this trace (kinds: {})",
                names.join(", ")
            );
        }
    }
    for l in &args.layer {
        if !catalog.kinds.iter().any(|k| k.layer == *l) {
            let mut names: Vec<&str> = catalog.kinds.iter().map(|k| k.layer.as_str()).collect();
            names.sort_unstable();
            names.dedup();
            anyhow::bail!(
                "--layer {l}: no such layer in this trace (layers: {})",
                names.join(", ")
            );
        }
    }
    Ok(())
}

/// Reading, filtering and formatting on this thread: lines are built in
/// `buf` and written in pieces of 64 KiB.
#[allow(clippy::too_many_arguments)]
fn serial<R: std::io::Read>(
    ordered: &mut ReorderBuffer<'_, R>,
    filter: &Filter<'_>,
    printer: &LinePrinter<'_>,
    style: Style,
    count: Option<u64>,
    out: &mut dyn Write,
    buf: &mut Vec<u8>,
    on_damage: &mut dyn FnMut(&magnet_trace::TraceError),
) -> Result<()> {
    let mut printed = 0u64;
    while let Some(item) = ordered.next() {
        let rec = match item {
            Ok(r) => r,
            Err(e) => {
                on_damage(&e);
                continue;
            }
        };
        if !filter.keeps(&rec) {
            continue;
        }
        line(printer, &rec, style, buf);
        if buf.len() >= 1 << 16 {
            out.write_all(buf)?;
            buf.clear();
        }
        printed += 1;
        if count.is_some_and(|c| printed >= c) {
            break;
        }
    }
    out.write_all(buf)?;
    Ok(())
}

/// Most formatting threads by default.
const MAX_THREADS: usize = 8;

/// Which records are printed (decided on the reading thread, in time order).
struct Filter<'a> {
    index: &'a KindIndex<'a>,
    layers: &'a HashSet<&'a str>,
    kinds: &'a HashSet<&'a str>,
    sock: Option<u64>,
    pid: Option<u32>,
    since: Option<u64>,
    until: Option<u64>,
}

impl Filter<'_> {
    fn keeps(&self, rec: &RecordRef<'_>) -> bool {
        let ts = rec.ts_ns();
        if self.since.is_some_and(|s| ts < s) || self.until.is_some_and(|u| ts >= u) {
            return false;
        }
        if self.pid.is_some_and(|p| rec.pid() != p) {
            return false;
        }
        let Some(desc) = self.index.get(rec.kind()) else {
            // Unknown kinds are kept, shown by number, unless a filter names
            // what to keep.
            return self.layers.is_empty() && self.kinds.is_empty() && self.sock.is_none();
        };
        if !self.layers.is_empty() && !self.layers.contains(desc.layer.as_str()) {
            return false;
        }
        if !self.kinds.is_empty() && !self.kinds.contains(desc.name.as_str()) {
            return false;
        }
        if let Some(c) = self.sock {
            let ev = Event {
                bytes: rec.bytes,
                desc,
            };
            if ev.u64("cookie") != Some(c) {
                return false;
            }
        }
        true
    }
}

#[derive(Clone, Copy)]
struct Style {
    json: bool,
    time: TimeColumn,
}

/// Appends one record's line: the catalog's kinds as text or JSON, an unknown
/// kind by number.
fn line(printer: &LinePrinter<'_>, rec: &RecordRef<'_>, style: Style, buf: &mut Vec<u8>) {
    let known = if style.json {
        let at = buf.len();
        let known = printer.json(rec, buf);
        if known {
            super::json_out::tag_line(buf, at, super::json_out::PARSE);
        }
        known
    } else {
        printer.text(rec, style.time, buf)
    };
    if !known {
        let mut ib = itoa::Buffer::new();
        for (i, n) in [
            rec.ts_ns(),
            rec.cpu() as u64,
            rec.pid() as u64,
            rec.tid() as u64,
        ]
        .into_iter()
        .enumerate()
        {
            if i > 0 {
                buf.push(b' ');
            }
            buf.extend_from_slice(ib.format(n).as_bytes());
        }
        buf.extend_from_slice(b" ? kind");
        buf.extend_from_slice(ib.format(rec.kind()).as_bytes());
        buf.extend_from_slice(b" len=");
        buf.extend_from_slice(ib.format(rec.bytes.len()).as_bytes());
        buf.push(b'\n');
    }
}

/// How the formatting is shared out.
struct Split {
    /// Formatting threads.
    threads: usize,
    /// Records per batch.
    batch: usize,
}

/// Records copied out of the reorder window, in print order.
#[derive(Default)]
struct Batch {
    seq: u64,
    bytes: Vec<u8>,
    /// (start, end, block offset) in `bytes`.
    recs: Vec<(usize, usize, u64)>,
}

/// Reading, time order and filters stay on this thread; batches of kept
/// records go to `threads` formatting threads, and one writer thread puts
/// their text out in batch order, so the output is the one-thread output.
fn parallel<R: std::io::Read>(
    ordered: &mut ReorderBuffer<'_, R>,
    filter: &Filter<'_>,
    printer: &LinePrinter<'_>,
    style: Style,
    split: Split,
    count: Option<u64>,
    on_damage: &mut dyn FnMut(&magnet_trace::TraceError),
) -> Result<()> {
    use std::sync::mpsc::{channel, sync_channel};
    let Split {
        threads,
        batch: batch_len,
    } = split;
    use std::sync::Mutex;
    let (work_tx, work_rx) = sync_channel::<Batch>(threads * 2);
    // Each formatting thread holds the queue: when all have stopped, sending
    // to it fails instead of waiting.
    let work_rx = std::sync::Arc::new(Mutex::new(work_rx));
    let (done_tx, done_rx) = sync_channel::<(u64, Vec<u8>)>(threads * 2);
    // Spent buffers come back for reuse: batches to this thread, text to the
    // formatting threads.
    let (free_batch_tx, free_batch_rx) = channel::<Batch>();
    let (free_text_tx, free_text_rx) = channel::<Vec<u8>>();
    let free_text_rx = Mutex::new(free_text_rx);
    std::thread::scope(|s| -> Result<()> {
        for _ in 0..threads {
            let (work_rx, free_text_rx) = (work_rx.clone(), &free_text_rx);
            let (done_tx, free_batch_tx) = (done_tx.clone(), free_batch_tx.clone());
            s.spawn(move || {
                format_batches(
                    &work_rx,
                    free_text_rx,
                    &done_tx,
                    &free_batch_tx,
                    printer,
                    style,
                )
            });
        }
        drop((done_tx, free_batch_tx, work_rx));
        let writer = s.spawn(move || write_in_order(done_rx, free_text_tx));
        let mut printed = 0u64;
        let mut seq = 0u64;
        let mut batch = Batch::default();
        let send = |batch: &mut Batch, seq: &mut u64| -> bool {
            let fresh = free_batch_rx.try_recv().unwrap_or_default();
            let mut full = std::mem::replace(batch, fresh);
            batch.bytes.clear();
            batch.recs.clear();
            full.seq = *seq;
            *seq += 1;
            work_tx.send(full).is_ok()
        };
        let mut open = true;
        while let Some(item) = ordered.next() {
            let rec = match item {
                Ok(r) => r,
                Err(e) => {
                    on_damage(&e);
                    continue;
                }
            };
            if !filter.keeps(&rec) {
                continue;
            }
            let a = batch.bytes.len();
            batch.bytes.extend_from_slice(rec.bytes);
            batch.recs.push((a, batch.bytes.len(), rec.block_offset));
            printed += 1;
            if batch.recs.len() >= batch_len && !send(&mut batch, &mut seq) {
                // The writer stopped (its error is reported below).
                open = false;
                break;
            }
            if count.is_some_and(|c| printed >= c) {
                break;
            }
        }
        if open && !batch.recs.is_empty() {
            send(&mut batch, &mut seq);
        }
        drop(work_tx);
        writer.join().expect("the writer thread does not panic")?;
        Ok(())
    })
}

/// A formatting thread of [`parallel`]: takes batches off the shared
/// queue until it is closed (or the writer has stopped), formats them into
/// text buffers (reused where the writer gave one back), and hands the text
/// on with the batch's number.
fn format_batches(
    work_rx: &std::sync::Mutex<std::sync::mpsc::Receiver<Batch>>,
    free_text_rx: &std::sync::Mutex<std::sync::mpsc::Receiver<Vec<u8>>>,
    done_tx: &std::sync::mpsc::SyncSender<(u64, Vec<u8>)>,
    free_batch_tx: &std::sync::mpsc::Sender<Batch>,
    printer: &LinePrinter<'_>,
    style: Style,
) {
    loop {
        let next = work_rx.lock().expect("not poisoned").recv();
        let Ok(batch) = next else { return };
        let reuse = free_text_rx.lock().expect("not poisoned").try_recv();
        let mut text = reuse.unwrap_or_else(|_| Vec::with_capacity(batch.bytes.len() * 3));
        text.clear();
        for &(a, b, block_offset) in &batch.recs {
            let rec = RecordRef {
                bytes: &batch.bytes[a..b],
                block_offset,
            };
            line(printer, &rec, style, &mut text);
        }
        let seq = batch.seq;
        let _ = free_batch_tx.send(batch);
        if done_tx.send((seq, text)).is_err() {
            return;
        }
    }
}

/// The writer thread of [`parallel`]: puts the batches' text out in batch
/// order, whatever order the formatting threads finish in.
fn write_in_order(
    done_rx: std::sync::mpsc::Receiver<(u64, Vec<u8>)>,
    free_text_tx: std::sync::mpsc::Sender<Vec<u8>>,
) -> std::io::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut next = 0u64;
    let mut early = std::collections::BTreeMap::new();
    for (seq, text) in done_rx {
        early.insert(seq, text);
        while let Some(text) = early.remove(&next) {
            out.write_all(&text)?;
            let _ = free_text_tx.send(text);
            next += 1;
        }
    }
    out.flush()
}
