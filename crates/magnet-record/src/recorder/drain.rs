//! Drain: one ring buffer per CPU (and one for identity records), a loop that
//! moves records into checksummed blocks for the writer thread until the
//! recording ends, then the stop: detach, drain the rest, account for every
//! event the kernel could not record, and close the trace with its totals.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Seek};
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use libbpf_rs::{MapCore, MapFlags, MapHandle, RingBufferBuilder};
use magnet_trace::block::BlockBuilder;
use magnet_trace::catalog::kind;
use magnet_trace::events::{Hdr, Lost};
use magnet_trace::{Footer, Header, KindIndex, TraceWriter};

use super::host::monotonic_now;
use super::kernel_maps::{read_batches, read_kernel_stats, residual_lost_record, KernelStats};
use super::{Progress, RunOptions, Summary};
use crate::config::RecordConfig;

/// Bytes of each CPU's ring: the buffer split over the possible CPUs, each a
/// power of two of at least one page.
pub(super) fn ring_bytes(config: &RecordConfig, cpus: u32) -> Result<u32> {
    let buffer = u32::try_from(config.buffer_bytes).map_err(|_| {
        anyhow!(
            "--buffer: {} MiB (sizes round up to a power of two) is more than a BPF ring \
             buffer holds; the maximum is 2GiB",
            config.buffer_bytes >> 20
        )
    })?;
    Ok((buffer / cpus.max(1)).max(4096).next_power_of_two())
}

/// One ring per CPU plus the identity ring (index `cpus`), installed in the
/// object's ring array.
pub(super) fn make_rings(
    rings_map: &dyn MapCore,
    cpus: u32,
    ring_bytes: u32,
) -> Result<Vec<MapHandle>> {
    let mut rings = Vec::with_capacity(cpus as usize + 1);
    for cpu in 0..=cpus {
        // The identity ring (index `cpus`) holds one 72-byte SOCK record per
        // socket: a fixed 256 KiB.
        let ring_bytes = if cpu == cpus { 256 * 1024 } else { ring_bytes };
        let opts = libbpf_sys::bpf_map_create_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as libbpf_sys::size_t,
            ..Default::default()
        };
        let ring = MapHandle::create(
            libbpf_rs::MapType::RingBuf,
            Some(format!("magnet_rb{cpu}")),
            0,
            0,
            ring_bytes,
            &opts,
        )
        .with_context(|| format!("creating the {ring_bytes}-byte ring buffer of CPU {cpu}"))?;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&std::os::fd::AsFd::as_fd(&ring));
        rings_map
            .update(&cpu.to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
            .with_context(|| format!("installing the ring buffer of CPU {cpu}"))?;
        rings.push(ring);
    }
    Ok(rings)
}

/// What the drain leaves when the recording has stopped.
pub(super) struct Drained {
    pub drain: Drain,
    pub stats: KernelStats,
    pub end_reason: String,
    pub child_status: Option<ExitStatus>,
    /// CPU time of the drain thread from its first poll to the last record.
    pub drain_cpu: Duration,
    /// BPF run time and the recorder's CPU, read once the hooks were gone.
    pub measured: super::cost::Measured,
    /// Devices made during the recording, for the END block.
    pub later_devices: Vec<magnet_trace::Interface>,
}

/// CPU time this thread has used (CLOCK_THREAD_CPUTIME_ID): what the drain
/// costs, apart from the writer thread and whatever else the host runs.
fn thread_cpu() -> Duration {
    Duration::from_nanos(magnet_kernel::cost::thread_cpu_ns())
}

/// The attached hooks and the meter of their cost, read once they are gone.
pub(super) struct Hooks<'a> {
    pub links: super::attach::Links<'a>,
    pub meter: super::cost::Meter,
}

/// The per-CPU maps read besides the rings: loss counters and batches.
pub(super) struct KernelMaps<'a> {
    pub cpu_stats: &'a dyn MapCore,
    pub batches: &'a dyn MapCore,
    /// `mg_stopped` (prog.h): set at the end, every program returns at once.
    pub stop: &'a dyn MapCore,
}

/// Drains the rings into blocks until the target ends, the duration passes,
/// `stop` is set or the writer fails; then stops the programs (or detaches
/// them, see [`stop_programs`]), drains what is left and adds LOST records
/// for counts the kernel had not reported.
/// `drain` may hold records made in user space that open the trace (the SOCK
/// records of the sockets found at the start).
pub(super) fn run(
    config: &RecordConfig,
    opts: &mut RunOptions,
    rings: &[MapHandle],
    kernel: KernelMaps<'_>,
    drain: Drain,
    child: Option<Child>,
    hooks: Hooks<'_>,
) -> Result<Drained> {
    let Hooks {
        mut links,
        mut meter,
    } = hooks;
    let drain = RefCell::new(drain);
    let mut rb = RingBufferBuilder::new();
    for ring in rings {
        rb.add(ring, |data: &[u8]| {
            drain.borrow_mut().push_ring(data);
            0
        })?;
    }
    let rb = rb.build()?;

    let started = Instant::now();
    let cpu_at_start = thread_cpu();
    let mut last_progress = Instant::now();
    let mut last_flush = Instant::now();
    let mut child = ChildWatch::new(child);
    let end_reason;
    loop {
        // Woken early when enough is queued; otherwise consume what is there.
        let _ = rb.poll(config.poll_interval);
        rb.consume()?;
        meter.tick(&drain.borrow().by_kind);
        // At low rates blocks fill slowly: cut one at least every second so a
        // recorder that is killed loses at most the last second.
        if last_flush.elapsed() >= Duration::from_secs(1) {
            last_flush = Instant::now();
            drain.borrow_mut().flush();
            links.follow_new_namespaces();
        }
        if drain.borrow().writer_gone {
            end_reason = "the trace writer failed".to_string();
            break;
        }
        if opts.stop.load(Ordering::Relaxed) {
            end_reason = "interrupted".to_string();
            break;
        }
        if let Some(d) = opts.duration {
            if started.elapsed() >= d {
                end_reason = format!("duration {:?} reached", d);
                break;
            }
        }
        if child.exited_a_while_ago()? {
            end_reason = "command exited".to_string();
            break;
        }
        if let Some(cb) = opts.progress.as_mut() {
            if last_progress.elapsed() >= Duration::from_millis(500) {
                last_progress = Instant::now();
                report_progress(cb, started, &drain.borrow(), &kernel);
            }
        }
    }

    // Stop: the programs stopped (or detached), drain the rest, account for
    // loss.
    let later_devices = links.later_devices();
    if stop_programs(kernel.stop) {
        links.release_in_background();
    } else {
        drop(links);
    }
    if let Some(detached) = opts.detached.take() {
        detached();
    }
    rb.consume()?;
    drop(rb);
    let mut d = drain.into_inner();
    let stats = drain_leftovers(&mut d, &kernel)?;
    let drain_cpu = thread_cpu().saturating_sub(cpu_at_start);
    let measured = meter.stop();
    let child_status = child.status()?;

    Ok(Drained {
        drain: d,
        stats,
        end_reason,
        child_status,
        drain_cpu,
        measured,
        later_devices,
    })
}

/// Ends the recording without waiting for the links' release: sets
/// `mg_stopped`, after which every program returns at its entry, then waits
/// one RCU grace period (`membarrier(MEMBARRIER_CMD_GLOBAL)`: the programs
/// run inside RCU read-side sections), after which none that read the flag
/// before it was set is still running. From then on nothing touches the
/// batches and loss counts read next, and the links can be released
/// elsewhere (1–2 s with the syscall tracepoints, see
/// magnet_host::attach::detach_in_background). False where either step
/// failed (a kernel without membarrier, or with nohz_full CPUs, refuses
/// it): the links are then released here first, as before.
fn stop_programs(stop: &dyn MapCore) -> bool {
    const MEMBARRIER_CMD_GLOBAL: libc::c_long = 1;
    if stop
        .update(&0u32.to_ne_bytes(), &1u32.to_ne_bytes(), MapFlags::ANY)
        .is_err()
    {
        return false;
    }
    // SAFETY: a system call with integer arguments only.
    unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0 }
}

/// The command the recording follows (`magnet record -- CMD`), if any, and
/// when it exited.
struct ChildWatch {
    child: Option<Child>,
    status: Option<ExitStatus>,
    exited_at: Option<Instant>,
}

impl ChildWatch {
    fn new(child: Option<Child>) -> ChildWatch {
        ChildWatch {
            child,
            status: None,
            exited_at: None,
        }
    }

    /// Whether the command exited long enough ago for the recording to stop.
    fn exited_a_while_ago(&mut self) -> Result<bool> {
        let Some(c) = self.child.as_mut() else {
            return Ok(false);
        };
        if self.status.is_none() {
            if let Some(st) = c.try_wait()? {
                self.status = Some(st);
                self.exited_at = Some(Instant::now());
            }
        }
        // Let the last packets and state changes of the exiting command
        // (FIN/ACK handshakes in softirq) reach the ring before stopping.
        Ok(self
            .exited_at
            .is_some_and(|t| t.elapsed() >= Duration::from_millis(100)))
    }

    /// The command's exit status, if it has exited.
    fn status(mut self) -> Result<Option<ExitStatus>> {
        if let Some(mut c) = self.child.take() {
            if self.status.is_none() {
                // Interrupted or out of time: the command keeps running on its own.
                self.status = c.try_wait()?;
            }
        }
        Ok(self.status)
    }
}

/// Says how the recording goes: time, records, bytes, and what the kernel
/// lost so far.
fn report_progress(
    cb: &mut dyn FnMut(&Progress),
    started: Instant,
    d: &Drain,
    kernel: &KernelMaps<'_>,
) {
    let lost = read_kernel_stats(kernel.cpu_stats)
        .map(|s| s.lost_total)
        .unwrap_or(0);
    cb(&Progress {
        elapsed: started.elapsed(),
        records: d.records,
        bytes: d.bytes,
        lost,
    });
}

/// After the programs are detached: what each CPU's batch still holds, and
/// a LOST record per CPU for losses the kernel counted but had not
/// reported in the rings. Returns the kernel's final counts.
fn drain_leftovers(d: &mut Drain, kernel: &KernelMaps<'_>) -> Result<KernelStats> {
    // No program runs any more: the batches are final.
    for batch in read_batches(kernel.batches)? {
        d.push_ring(&batch);
    }
    let stats = read_kernel_stats(kernel.cpu_stats)?;
    for (cpu, &n) in stats.unreported_lost.iter().enumerate() {
        if n > 0 {
            let rec = residual_lost_record(cpu as u16, n);
            d.push(&rec);
        }
    }
    d.flush();
    Ok(stats)
}

/// Closes the trace: the END block with the run's totals, then waits for the
/// writer. Returns what the recording did.
pub(super) fn finish(
    drained: Drained,
    header: Header,
    tx: SyncSender<WriterMsg>,
    writer: JoinHandle<Result<u64>>,
) -> Result<Summary> {
    let Drained {
        drain: d,
        stats,
        end_reason,
        child_status,
        drain_cpu,
        measured,
        later_devices,
    } = drained;
    let kinds_of = |prog: &str| -> Vec<usize> {
        crate::probes::kinds_written_by(prog)
            .iter()
            .filter_map(|k| header.catalog.by_name(k).map(|d| d.id as usize))
            .collect()
    };
    let cost = measured.cost(
        d.records,
        drain_cpu.as_nanos() as u64,
        &d.by_kind,
        &kinds_of,
    );
    let index = KindIndex::new(&header.catalog);
    let name = |k: usize| {
        index
            .get(k as u16)
            .map(|d| d.name.clone())
            .unwrap_or_else(|| format!("kind{k}"))
    };
    let by_kind: BTreeMap<String, u64> = d
        .by_kind
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(k, &n)| (name(k), n))
        .collect();
    // Generated = recorded + lost, by kind (LOST records are the stream's own).
    let generated: BTreeMap<String, u64> = stats
        .lost_kind
        .iter()
        .zip(&d.by_kind)
        .enumerate()
        .filter(|&(k, _)| k != kind::LOST as usize)
        .map(|(k, (&lost, &rec))| (k, lost + rec))
        .filter(|&(_, n)| n > 0)
        .map(|(k, n)| (name(k), n))
        .collect();
    // The recording's span (start: the header's clock, stop: now) is the one
    // duration `record`, `info` and `analyze` show.
    let end_mono_ns = monotonic_now();
    let span = Duration::from_nanos(end_mono_ns.saturating_sub(header.clock.monotonic_ns));
    let footer = Footer {
        end_mono_ns,
        records: d.records,
        lost_kernel: stats.lost_total,
        dropped_user: d.dropped_user,
        generated: generated.clone(),
        recorded: by_kind.clone(),
        first_ts_ns: d.first_ts,
        last_ts_ns: d.last_ts,
        end_reason: end_reason.clone(),
        cost: Some(cost.clone()),
        interfaces_later: later_devices,
    };
    let writer_failed = d.writer_gone;
    let _ = tx.send(WriterMsg::Finish(Box::new(footer)));
    drop(tx);
    drop(d.tx);
    let bytes = writer
        .join()
        .map_err(|_| anyhow!("the trace writer thread panicked"))?;
    let bytes = match (bytes, writer_failed) {
        (Ok(b), false) => b,
        (Err(e), _) => return Err(e.context(format!("{} records could not be saved", d.records))),
        (Ok(_), true) => bail!("the trace writer stopped early"),
    };

    Ok(Summary {
        records: d.records,
        by_kind,
        lost_kernel: stats.lost_total,
        dropped_user: d.dropped_user,
        generated,
        bytes_written: bytes,
        elapsed: span,
        end_reason,
        child_status,
        layers: header.layers,
        drain_cpu,
        cost,
    })
}

pub(super) enum WriterMsg {
    Block(Vec<u8>, u32),
    Finish(Box<Footer>),
}

/// Creates the trace and writes `early` into it before anything is loaded: a
/// recorder killed from then on leaves a trace that reads as cut short, not
/// no file at all. Written straight to the file (no buffer): it is in the
/// file when this returns.
pub(super) fn create_trace(path: &Path, early: &Header) -> Result<File> {
    let mut file =
        File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    TraceWriter::new(&mut file, early)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(file)
}

/// Writes the full header over the early one in `file` (from
/// [`create_trace`], nothing written after it), then starts the writer
/// thread. The full header is one write at offset 0 and longer than the early
/// one (it adds hooks, enums, interfaces): the file goes from one whole header
/// to the other. Were it ever shorter, the early one's tail is cut off after.
pub(super) fn spawn_writer(
    mut file: File,
    path: &Path,
    header: &Header,
) -> Result<(SyncSender<WriterMsg>, JoinHandle<Result<u64>>)> {
    let cannot = || format!("cannot write {}", path.display());
    let early_len = file.stream_position().with_context(cannot)?;
    file.rewind().with_context(cannot)?;
    let tail = file.try_clone().with_context(cannot)?;
    let mut w =
        TraceWriter::new(BufWriter::with_capacity(1 << 20, file), header).with_context(cannot)?;
    w.flush().with_context(cannot)?;
    let len = w.bytes_written();
    if len < early_len {
        tail.set_len(len).with_context(cannot)?;
    }
    // Blocks queue here while the disk is slow; when the queue is full the
    // drain waits, the ring fills, and the kernel counts what it drops.
    let (tx, rx): (SyncSender<WriterMsg>, Receiver<WriterMsg>) = sync_channel(64);
    let path = path.to_path_buf();
    let handle = std::thread::Builder::new()
        .name("magnet-writer".into())
        .spawn(move || {
            for msg in rx {
                match msg {
                    WriterMsg::Block(b, n) => w
                        .write_encoded_block(&b, n)
                        .and_then(|()| w.flush())
                        .with_context(|| format!("writing {}", path.display()))?,
                    WriterMsg::Finish(footer) => {
                        let bytes = w.bytes_written();
                        w.finish(&footer)
                            .with_context(|| format!("finishing {}", path.display()))?;
                        return Ok(bytes);
                    }
                }
            }
            Err(anyhow!(
                "recording ended without closing {}",
                path.display()
            ))
        })?;
    Ok((tx, handle))
}

/// The drain's state, shared between the ring-buffer callback and the loop.
pub(super) struct Drain {
    block: BlockBuilder,
    tx: SyncSender<WriterMsg>,
    records: u64,
    bytes: u64,
    by_kind: Vec<u64>,
    /// Sum of the LOST records' counts: equals the kernel's total at the end.
    lost_in_stream: u64,
    dropped_user: u64,
    first_ts: u64,
    last_ts: u64,
    writer_gone: bool,
}

const BLOCK_TARGET: usize = 256 << 10;

impl Drain {
    pub(super) fn new(tx: SyncSender<WriterMsg>) -> Drain {
        Drain {
            block: BlockBuilder::with_capacity(BLOCK_TARGET + 4096),
            tx,
            records: 0,
            bytes: 0,
            by_kind: vec![0; kind::MAX as usize],
            lost_in_stream: 0,
            dropped_user: 0,
            first_ts: 0,
            last_ts: 0,
            writer_gone: false,
        }
    }

    /// One item of a ring: a single record, or a batch of them (record.bpf.c,
    /// "per-CPU batches": 8 zero bytes, then per record a u32 size, a u32
    /// zero and the record padded to 8 bytes). A batch that does not parse
    /// to its end counts the rest as dropped in user space.
    pub(super) fn push_ring(&mut self, data: &[u8]) {
        if data.len() < 8 || data[..8] != [0u8; 8] {
            self.push(data);
            return;
        }
        let mut off = 8;
        while off < data.len() {
            let Some(size) = data
                .get(off..off + 4)
                .map(|b| u32::from_ne_bytes(b.try_into().expect("4 bytes")) as usize)
            else {
                self.dropped_user += 1;
                return;
            };
            let start = off + 8;
            let Some(rec) = data.get(start..start + size).filter(|_| size > 0) else {
                self.dropped_user += 1;
                return;
            };
            self.push(rec);
            off = start + size.next_multiple_of(8);
        }
    }

    pub(super) fn push(&mut self, rec: &[u8]) {
        let Some(hdr) = Hdr::new_checked(rec) else {
            self.dropped_user += 1;
            return;
        };
        let kind = hdr.kind();
        if kind >= kind::MAX {
            self.dropped_user += 1;
            return;
        }
        let ts = hdr.ts_ns();
        if self.first_ts == 0 || ts < self.first_ts {
            self.first_ts = ts;
        }
        self.last_ts = self.last_ts.max(ts);
        if kind == kind::LOST {
            if let Some(lost) = Lost::new_checked(rec) {
                self.lost_in_stream += lost.count();
            }
        }
        self.by_kind[kind as usize] += 1;
        let before = self.block.len();
        self.block.push(rec);
        self.records += 1;
        // What the record adds to the file, delta-coded.
        self.bytes += (self.block.len() - before) as u64;
        if self.block.len() >= BLOCK_TARGET {
            self.flush();
        }
    }

    pub(super) fn flush(&mut self) {
        if self.block.is_empty() || self.writer_gone {
            return;
        }
        let n = self.block.count();
        let enc = self.block.take_encoded();
        if self.tx.send(WriterMsg::Block(enc, n)).is_err() {
            self.writer_gone = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::kernel_maps::{batch_bytes, BATCH_BYTES, BATCH_DATA_AT, BATCH_LEN_AT};
    use magnet_trace::events::Sock;

    fn rec(kind: u16, ts: u64, len: usize) -> Vec<u8> {
        let mut r = vec![0u8; len];
        let mut h = Hdr::new_checked(&mut r[..]).unwrap();
        h.set_kind(kind);
        h.set_ts_ns(ts);
        r
    }

    #[test]
    fn the_drain_counts_keeps_and_drops() {
        let (tx, rx) = sync_channel(4);
        let mut d = Drain::new(tx);
        d.push(&rec(kind::SOCK, 50, Sock::<&[u8]>::LEN));
        d.push(&rec(kind::SOCK, 20, Sock::<&[u8]>::LEN));
        d.push(&[0u8; 10]); // shorter than a header
        d.push(&rec(kind::MAX, 30, 24)); // no such kind
        d.push(&residual_lost_record(1, 7));
        d.push(&residual_lost_record(0, 5));
        assert_eq!(d.records, 4);
        assert_eq!(d.dropped_user, 2);
        assert_eq!(d.by_kind[kind::SOCK as usize], 2);
        assert_eq!(d.by_kind[kind::LOST as usize], 2);
        assert_eq!(d.lost_in_stream, 12);
        assert_eq!(d.first_ts, 20);
        // Delta-coded: what the block holds, less than the records as they are.
        assert_eq!(d.bytes, d.block.len() as u64);
        assert!(d.bytes < 2 * (80 + 4) + 2 * (40 + 4), "{}", d.bytes);
        d.flush();
        match rx.try_recv().unwrap() {
            WriterMsg::Block(_, n) => assert_eq!(n, 4),
            WriterMsg::Finish(_) => panic!("a block first"),
        }
    }

    /// A batch as record.bpf.c sends it: a zero word, then per record its
    /// size, a zero word and the record padded to 8 bytes.
    fn batch(recs: &[Vec<u8>]) -> Vec<u8> {
        let mut b = vec![0u8; 8];
        for r in recs {
            b.extend_from_slice(&(r.len() as u32).to_ne_bytes());
            b.extend_from_slice(&[0; 4]);
            b.extend_from_slice(r);
            b.resize(b.len().next_multiple_of(8), 0xee);
        }
        b
    }

    #[test]
    fn batches_split_into_their_records_and_single_records_pass() {
        let (tx, rx) = sync_channel(4);
        let mut d = Drain::new(tx);
        let a = rec(kind::SOCK, 10, Sock::<&[u8]>::LEN);
        let l = residual_lost_record(1, 3);
        let odd = rec(kind::SOCK, 30, Sock::<&[u8]>::LEN + 4); // padded in the batch
        d.push_ring(&batch(&[a.clone(), l.clone(), odd.clone()]));
        d.push_ring(&a); // a record sent alone
        assert_eq!((d.records, d.dropped_user), (4, 0));
        assert_eq!(d.by_kind[kind::SOCK as usize], 3);
        assert_eq!(d.lost_in_stream, 3);
        assert_eq!(d.bytes, d.block.len() as u64);
        // A batch cut inside a record: what parsed stays, the rest is dropped.
        let mut cut = batch(&[a.clone(), a.clone()]);
        cut.truncate(cut.len() - 10);
        d.push_ring(&cut);
        assert_eq!((d.records, d.dropped_user), (5, 1));
        // A size of zero would loop forever: dropped instead.
        let mut zero = batch(std::slice::from_ref(&a));
        zero.extend_from_slice(&[0u8; 16]);
        d.push_ring(&zero);
        assert_eq!((d.records, d.dropped_user), (6, 2));
        d.flush();
        match rx.try_recv().unwrap() {
            WriterMsg::Block(_, n) => assert_eq!(n, 6),
            WriterMsg::Finish(_) => panic!("a block first"),
        }
    }

    #[test]
    fn a_cpus_leftover_batch_is_read_from_its_map_value() {
        let recs = batch(&[rec(kind::SOCK, 10, Sock::<&[u8]>::LEN)]);
        let mut value = vec![0u8; BATCH_DATA_AT + 8192 + 1024];
        value[BATCH_LEN_AT..BATCH_LEN_AT + 4].copy_from_slice(&(recs.len() as u32).to_ne_bytes());
        value[BATCH_DATA_AT..BATCH_DATA_AT + recs.len()].copy_from_slice(&recs);
        assert_eq!(batch_bytes(&value), Some(recs));
        // Empty (0 or just the marker) or impossible lengths give nothing.
        for len in [0u32, 8, BATCH_BYTES as u32 + 1] {
            value[BATCH_LEN_AT..BATCH_LEN_AT + 4].copy_from_slice(&len.to_ne_bytes());
            assert_eq!(batch_bytes(&value), None, "len {len}");
        }
        assert_eq!(batch_bytes(&value[..3]), None);
    }

    #[test]
    fn residual_lost_records_read_back() {
        let r = residual_lost_record(3, 99);
        let l = Lost::new_checked(&r[..]).unwrap();
        assert_eq!((l.count(), l.lost_cpu(), l.reason()), (99, 3, 2));
        assert_eq!((l.hdr().kind(), l.hdr().cpu()), (kind::LOST, 3));
        assert!(l.hdr().ts_ns() > 0);
    }

    #[test]
    fn rings_split_the_buffer() {
        let mut c = RecordConfig::new("x.mgt".into());
        c.buffer_bytes = 32 << 20;
        assert_eq!(ring_bytes(&c, 2).unwrap(), 16 << 20);
        assert_eq!(
            ring_bytes(&c, 3).unwrap(),
            16 << 20,
            "rounded up to a power of two"
        );
        c.buffer_bytes = 1024;
        assert_eq!(ring_bytes(&c, 8).unwrap(), 4096, "at least a page");
        c.buffer_bytes = 8 << 30;
        assert!(ring_bytes(&c, 2)
            .unwrap_err()
            .to_string()
            .contains("maximum is 2GiB"));
    }
}
