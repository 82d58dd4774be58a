//! A recording from start to end: check the host, load and attach the programs
//! the layers need, start the target, drain the ring buffer into trace blocks
//! (written by a second thread), then detach, account for every lost event and
//! close the trace with its totals.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::BufWriter;
use std::mem::MaybeUninit;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, RingBufferBuilder};
use libbpf_rs::{NetfilterOpts, NFPROTO_IPV4, NFPROTO_IPV6};
use magnet_trace::block::BlockBuilder;
use magnet_trace::catalog::kind;
use magnet_trace::events::{CpuStats, Hdr, Lost};
use magnet_trace::{Catalog, ClockMap, Footer, Header, KindIndex, LayerSource, TraceWriter};

use crate::config::{Layer, RecordConfig};
use crate::probes::{self, Attach, Choice, PROBES};
use crate::skel::{OpenRecordSkel, RecordSkel, RecordSkelBuilder};

/// What to trace.
#[derive(Clone, Debug)]
pub enum Target {
    /// Everything on the host (subject to port/host filters).
    All,
    /// Run this command and trace it and its descendants.
    Command(Vec<OsString>),
    /// The processes in `Filters::pids` (and what they fork from now on).
    Pids,
}

/// Live numbers for a status line.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    pub elapsed: Duration,
    pub records: u64,
    pub bytes: u64,
    pub lost: u64,
}

/// Receives live numbers while recording.
pub type ProgressFn = Box<dyn FnMut(&Progress)>;

pub struct RunOptions {
    pub target: Target,
    pub duration: Option<Duration>,
    /// Set by the caller (signal handler) to end the recording.
    pub stop: Arc<AtomicBool>,
    /// Called about twice a second while recording.
    pub progress: Option<ProgressFn>,
    /// Called once every program is attached, before the target starts: from
    /// then on nothing is missed (scripts and tests wait for it).
    pub ready: Option<ReadyFn>,
}

/// Told which hooks feed each layer once recording has begun.
pub type ReadyFn = Box<dyn FnOnce(&[LayerSource])>;

/// What a finished recording did.
#[derive(Clone, Debug)]
pub struct Summary {
    pub records: u64,
    pub by_kind: BTreeMap<String, u64>,
    /// Events the kernel could not record (all of them are in LOST records).
    pub lost_kernel: u64,
    pub dropped_user: u64,
    /// Events that passed the filters, by kind (recorded + lost).
    pub generated: BTreeMap<String, u64>,
    pub bytes_written: u64,
    /// The recording's span: from the header's start time to the stop written
    /// in the END block (what `info` and `analyze` show as its duration).
    pub elapsed: Duration,
    pub end_reason: String,
    pub child_status: Option<ExitStatus>,
    pub layers: Vec<LayerSource>,
}

/// Refuses early, with what to do, when the host cannot record.
pub fn preflight() -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "recording needs root (it loads BPF programs: CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN); \
             run it with sudo"
        );
    }
    let btf = Path::new("/sys/kernel/btf/vmlinux");
    if !btf.exists() {
        bail!(
            "this kernel exposes no BTF ({} is missing); magnet needs a kernel built with \
             CONFIG_DEBUG_INFO_BTF=y (Linux 5.8 or later; most distributions enable it)",
            btf.display()
        );
    }
    Ok(())
}

fn clock_map() -> ClockMap {
    use nix::time::{clock_gettime, ClockId};
    let ns = |t: nix::sys::time::TimeSpec| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64;
    // Read monotonic on both sides of realtime and take the midpoint.
    let m1 = ns(clock_gettime(ClockId::CLOCK_MONOTONIC).expect("monotonic clock"));
    let r = ns(clock_gettime(ClockId::CLOCK_REALTIME).expect("realtime clock"));
    let m2 = ns(clock_gettime(ClockId::CLOCK_MONOTONIC).expect("monotonic clock"));
    ClockMap {
        monotonic_ns: m1 + (m2 - m1) / 2,
        realtime_ns: r,
    }
}

fn monotonic_now() -> u64 {
    use nix::time::{clock_gettime, ClockId};
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("monotonic clock");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// Names of the kernel enums that trace fields refer to, from this kernel's BTF
/// (drop reasons are renumbered between releases, so a trace keeps its own).
fn kernel_enums() -> BTreeMap<String, BTreeMap<String, String>> {
    use libbpf_rs::btf::{types::Enum, Btf};
    let mut out = BTreeMap::new();
    let Ok(btf) = Btf::from_vmlinux() else {
        return out;
    };
    if let Some(e) = btf.type_by_name::<Enum>("skb_drop_reason") {
        let names = e
            .iter()
            .filter_map(|m| {
                let name = m.name?.to_string_lossy();
                let short = name
                    .strip_prefix("SKB_DROP_REASON_")
                    .unwrap_or(&name)
                    .to_string();
                Some((m.value.to_string(), short))
            })
            .collect();
        out.insert("skb_drop_reason".to_string(), names);
    }
    out
}

fn host_header(config: &RecordConfig, target: &Target) -> Header {
    let uts = nix::sys::utsname::uname().ok();
    let host = uts
        .as_ref()
        .map(|u| u.nodename().to_string_lossy().into_owned())
        .unwrap_or_default();
    let kernel = uts
        .as_ref()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    let cpus = libbpf_rs::num_possible_cpus().unwrap_or(1) as u32;
    let mut h = Header::new(host, kernel, cpus, clock_map());
    let target = match target {
        Target::All => serde_json::json!("all"),
        Target::Command(c) => serde_json::json!({
            "command": c.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>()
        }),
        Target::Pids => serde_json::json!({ "pids": config.filters.pids }),
    };
    h.enums = kernel_enums();
    let mut settings = serde_json::to_value(config).expect("config serializes");
    settings["target"] = target;
    h.settings = settings;
    h
}

enum WriterMsg {
    Block(Vec<u8>, u32),
    Finish(Box<Footer>),
}

fn spawn_writer(
    path: &Path,
    header: &Header,
) -> Result<(SyncSender<WriterMsg>, JoinHandle<Result<u64>>)> {
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut w = TraceWriter::new(BufWriter::with_capacity(1 << 20, file), header)
        .with_context(|| format!("cannot write {}", path.display()))?;
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
struct Drain {
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
    fn push(&mut self, rec: &[u8]) {
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
        self.block.push(rec);
        self.records += 1;
        self.bytes += rec.len() as u64 + 4;
        if self.block.len() >= BLOCK_TARGET {
            self.flush();
        }
    }

    fn flush(&mut self) {
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

/// Per-CPU counters from the kernel (struct mg_cpu_stats).
struct KernelStats {
    unreported_lost: Vec<u64>,
    lost_total: u64,
    /// Events lost by kind; the kernel counts only loss (no per-event
    /// counter on the hot path), so generated = recorded + lost.
    lost_kind: Vec<u64>,
}

fn read_kernel_stats(map: &dyn MapCore) -> Result<KernelStats> {
    let key = 0u32.to_ne_bytes();
    let per_cpu = map
        .lookup_percpu(&key, MapFlags::ANY)?
        .ok_or_else(|| anyhow!("cpu_stats map is empty"))?;
    let mut s = KernelStats {
        unreported_lost: Vec::new(),
        lost_total: 0,
        lost_kind: vec![0; kind::MAX as usize],
    };
    for cpu in &per_cpu {
        // Little-endian hosts only (as the trace): native order is the views' order.
        let c = CpuStats::new_checked(cpu.as_slice()).ok_or_else(|| {
            anyhow!(
                "cpu_stats value is {} bytes, not {}",
                cpu.len(),
                CpuStats::<&[u8]>::SIZE
            )
        })?;
        s.unreported_lost.push(c.lost());
        s.lost_total += c.lost_total();
        for k in 0..kind::MAX as usize {
            s.lost_kind[k] += c.lost_kind(k);
        }
    }
    Ok(s)
}

/// A LOST record made in user space (reason 2: counted by the kernel but not
/// yet reported in the stream when the recording ended).
fn residual_lost_record(cpu: u16, count: u64) -> Vec<u8> {
    let mut r = vec![0u8; Lost::<&[u8]>::LEN];
    let mut l = Lost::new_checked(&mut r[..]).expect("LEN bytes");
    let mut h = l.hdr_mut();
    h.set_ts_ns(monotonic_now());
    h.set_kind(kind::LOST);
    h.set_cpu(cpu);
    l.set_count(count);
    l.set_lost_cpu(cpu as u32);
    l.set_reason(2);
    r
}

fn cgroup_id(path: &Path) -> Result<u64> {
    // A cgroup v2 directory's inode number is its id (bpf_get_current_cgroup_id).
    let md = std::fs::metadata(path)
        .with_context(|| format!("--cgroup {}: cannot stat", path.display()))?;
    if !md.is_dir() {
        bail!("--cgroup {}: not a directory (give a cgroup v2 path such as /sys/fs/cgroup/system.slice)", path.display());
    }
    Ok(md.ino())
}

/// The cgroup v2 root, for the cgroup link of `sock_cookie_at_create`: where
/// the hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on
/// hybrid hosts), or, in a mount namespace that hides it (`ip netns exec`
/// remounts /sys), a private mount made for the moment of attaching.
enum Cgroup2Root {
    Mounted(PathBuf),
    Private,
}

impl Cgroup2Root {
    fn find() -> Cgroup2Root {
        let found = std::fs::read_to_string("/proc/self/mountinfo")
            .ok()
            .and_then(|info| {
                info.lines().find_map(|l| {
                    let (pre, post) = l.split_once(" - ")?;
                    if post.split_whitespace().next()? != "cgroup2" {
                        return None;
                    }
                    let p = PathBuf::from(pre.split_whitespace().nth(4)?);
                    p.is_dir().then_some(p)
                })
            });
        found.map_or(Cgroup2Root::Private, Cgroup2Root::Mounted)
    }

    /// The root directory, opened (a cgroup link holds the cgroup itself, so
    /// a private mount is undone at once).
    fn open(&self) -> Result<std::fs::File> {
        match self {
            Cgroup2Root::Mounted(p) => std::fs::File::open(p)
                .with_context(|| format!("opening the cgroup v2 root {}", p.display())),
            Cgroup2Root::Private => {
                use nix::mount::{mount, umount2, MntFlags, MsFlags};
                let dir =
                    std::env::temp_dir().join(format!("magnet-cgroup2-{}", std::process::id()));
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                let opened = mount(
                    Some("cgroup2"),
                    &dir,
                    Some("cgroup2"),
                    MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                    None::<&str>,
                )
                .with_context(|| format!("mounting cgroup2 on {}", dir.display()))
                .and_then(|()| {
                    let f = std::fs::File::open(&dir)
                        .with_context(|| format!("opening {}", dir.display()));
                    let _ = umount2(&dir, MntFlags::MNT_DETACH);
                    f
                });
                let _ = std::fs::remove_dir(&dir);
                opened
            }
        }
    }
}

fn addr16(a: std::net::IpAddr) -> [u8; 16] {
    match a {
        std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        std::net::IpAddr::V6(v6) => v6.octets(),
    }
}

/// Descendants of `pid` that exist now (children forked later are followed in
/// the kernel).
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            // The ppid is the second field after the parenthesised comm.
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                continue;
            };
            if let Some(pp) = rest
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse::<u32>().ok())
            {
                parent_of.push((p, pp));
            }
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let cur = out[i];
        out.extend(
            parent_of
                .iter()
                .filter(|(_, pp)| *pp == cur)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    out
}

/// A netfilter link at `priority`, or the nearest free priority towards the
/// middle: the kernel allows one BPF program per priority and hook (EBUSY), and
/// another recorder (or another tool) may hold it.
fn attach_netfilter(
    prog: &libbpf_rs::ProgramMut<'_>,
    pf: i32,
    hooknum: i32,
    priority: i32,
) -> Result<Link> {
    let step = if priority > 0 { -1 } else { 1 };
    let mut last = None;
    for i in 0..64 {
        let opts = NetfilterOpts {
            protocol_family: pf,
            hooknum,
            priority: priority + i * step,
            ..Default::default()
        };
        match prog.attach_netfilter_with_opts(opts) {
            Ok(l) => return Ok(l),
            Err(e) if is_busy(&e) => last = Some(e),
            Err(e) => return Err(e.into()),
        }
    }
    Err(anyhow!(
        "no free netfilter priority near {priority}: {}",
        last.map(|e| e.to_string()).unwrap_or_default()
    ))
}

fn is_busy(e: &libbpf_rs::Error) -> bool {
    // libbpf-rs keeps the errno in an inner error that is not an io::Error in
    // the source chain; its alternate display does include "(os error N)".
    format!("{e:#}").contains(&format!("(os error {})", libc::EBUSY))
}

/// Whether a probe is wanted: its layer is selected and its kind enabled.
fn probe_on(config: &RecordConfig, probe: &probes::Probe) -> bool {
    let layer = probe.layer;
    config.layers.contains(&layer)
        && probe
            .kind
            .is_none_or(|k| config.kinds.enabled(k, probe.default_on))
}

/// libbpf's messages while loading, kept to name the program the kernel refused.
mod load_log {
    use std::sync::Mutex;

    use libbpf_rs::PrintLevel;

    static LOG: Mutex<Vec<String>> = Mutex::new(Vec::new());

    fn keep(_level: PrintLevel, msg: String) {
        if std::env::var_os("LIBBPF_DEBUG").is_some() {
            eprint!("{msg}");
        }
        if let Ok(mut l) = LOG.lock() {
            l.push(msg);
        }
    }

    /// Runs `f` with libbpf's messages captured (not printed unless
    /// LIBBPF_DEBUG is set), then restores the previous printer.
    pub fn capture<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
        let prev = libbpf_rs::set_print(Some((PrintLevel::Debug, keep)));
        let out = f();
        libbpf_rs::set_print(prev);
        let log = LOG
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default();
        (out, log)
    }

    /// `libbpf: prog 'NAME': failed to load: …` → NAME.
    pub fn failed_program(log: &[String]) -> Option<String> {
        log.iter().rev().find_map(|l| {
            let rest = l.split("prog '").nth(1)?;
            let (name, tail) = rest.split_once('\'')?;
            tail.contains("failed to load").then(|| name.to_string())
        })
    }

    /// The verifier's last word before its statistics line.
    pub fn verifier_reason(log: &[String]) -> Option<String> {
        let lines: Vec<&str> = log.iter().flat_map(|m| m.lines()).collect();
        let end = lines.iter().rposition(|l| l.starts_with("processed "))?;
        lines[..end]
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().to_string())
    }
}

/// A probe that cannot attach on this kernel. Optional ones (and those of
/// default layers) are left out with one line in the trace's layer notes (the
/// CLI prints them); a layer the user asked for by name fails with that line.
fn left_out(
    config: &RecordConfig,
    sources: &mut BTreeMap<Layer, LayerSource>,
    probe: &probes::Probe,
    why: &str,
) -> Result<()> {
    let layer = probe.layer;
    let what = match probe.kind {
        Some(k) => format!("{k} not recorded"),
        None => format!("{} left out", probe.name()),
    };
    if !probe.optional && config.layers_named {
        bail!(
            "layer {layer} cannot be recorded on this kernel ({}): {}: {why} \
             (leave the layer out of --layers, or see `magnet record --check`)",
            kernel_release(),
            probe.name()
        );
    }
    if let Some(src) = sources.get_mut(&layer) {
        src.missing.push(format!("{what}: {why}"));
    }
    Ok(())
}

fn kernel_release() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// One line of `magnet record --check`: the hook that will feed a kind on
/// this kernel, or why none can.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CheckLine {
    pub layer: String,
    pub kind: String,
    pub default_on: bool,
    pub hook: Option<String>,
    pub missing: Option<String>,
    /// A better hook this kernel has but whose program its verifier refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// What `magnet record` would attach on this kernel, for every kind of every
/// layer, and what the kernel offers: the chosen programs are loaded once, as
/// for a recording of a command or pids (`--all` may keep a hook a task filter
/// costs). Needs root (it probes attach types).
pub fn check() -> Result<(magnet_kernel::Features, Vec<CheckLine>)> {
    preflight()?;
    let kernel = probes::Kernel::detect().context("reading what this kernel offers")?;
    let plan = probes::plan(&kernel);
    // Load every chosen program once (nothing is attached): what the verifier
    // refuses moves on to its next hook, as it would when recording.
    let mut chosen: Vec<Choice> = plan.iter().filter(|c| c.hook.is_ok()).cloned().collect();
    let mut refused: BTreeMap<&str, String> = BTreeMap::new();
    let wanted = |chosen: &[Choice], name: &str| {
        chosen.iter().any(|c| {
            c.hook()
                .is_some_and(|h| h.progs.iter().any(|(p, _)| *p == name))
        })
    };
    let skel = load_with_fallback(
        &kernel,
        &mut chosen,
        |probe, why| {
            refused.insert(probe.name(), why.to_string());
            Ok(())
        },
        |open| {
            // As for `-- COMMAND` and `-p`: the task filters are what some
            // verifiers refuse (6.12: task storage in netfilter programs).
            let ro = open
                .maps
                .rodata_data
                .as_deref_mut()
                .expect("the object has read-only settings");
            ro.filter_tasks = true;
            ro.filter_pid = true;
            Ok(())
        },
        &wanted,
    )?;
    drop(skel);
    // Probes that moved on to a later hook: say which one was refused.
    let moved: BTreeMap<&str, String> = plan
        .iter()
        .filter_map(|c| {
            let first = c.hook.as_ref().ok()?;
            let now = chosen.iter().find(|d| std::ptr::eq(d.probe, c.probe))?;
            let later = now.hook.as_ref().ok()?;
            (later != first).then(|| {
                (
                    c.probe.name(),
                    format!(
                        "{} refused by this kernel's verifier",
                        probes::hook_name(&c.probe.hooks[*first])
                    ),
                )
            })
        })
        .collect();
    let lines = plan
        .into_iter()
        .map(|c| {
            let now = chosen.iter().find(|d| std::ptr::eq(d.probe, c.probe));
            CheckLine {
                layer: c.probe.layer.name().to_string(),
                kind: c.probe.name().to_string(),
                default_on: c.probe.default_on,
                hook: now.and_then(|d| d.hook()).map(probes::hook_name),
                refused: moved.get(c.probe.name()).cloned(),
                missing: match now {
                    Some(_) => None,
                    None => refused.get(c.probe.name()).cloned().or(c.hook.err()),
                },
            }
        })
        .collect();
    Ok((kernel.features, lines))
}

/// Whether tcp_rcv events are recorded (the tcp layer with its tcp_rcv kind).
fn tcp_rcv_on(config: &RecordConfig) -> bool {
    PROBES
        .iter()
        .find(|p| p.kind == Some("tcp_rcv"))
        .is_some_and(|p| probe_on(config, p))
}

/// The loaded object holding the programs of the `chosen` hooks (and the
/// support programs `wanted` names). A hook the table allows can still be
/// refused by this kernel's verifier (6.12 lets netfilter programs call fewer
/// helpers than 6.18): the program that failed is named in libbpf's log; its
/// probe moves on to its next hook the kernel has (or, with none left, goes to
/// `refused`) and the object is loaded again.
fn load_with_fallback(
    kernel: &probes::Kernel,
    chosen: &mut Vec<Choice>,
    mut refused: impl FnMut(&'static probes::Probe, &str) -> Result<()>,
    mut configure: impl FnMut(&mut OpenRecordSkel<'static>) -> Result<()>,
    wanted: &dyn Fn(&[Choice], &str) -> bool,
) -> Result<RecordSkel<'static>> {
    loop {
        // One small allocation per attempt, kept for the recording's life.
        let storage = Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = RecordSkelBuilder::default()
            .open(storage)
            .context("opening the BPF object failed")?;
        configure(&mut open)?;
        for mut prog in open.open_object_mut().progs_mut() {
            let name = prog.name().to_string_lossy().into_owned();
            prog.set_autoload(wanted(chosen, &name));
        }
        let (loaded, log) = load_log::capture(|| open.load());
        let e = match loaded {
            Ok(skel) => return Ok(skel),
            Err(e) => e,
        };
        let failed = load_log::failed_program(&log);
        let reason = load_log::verifier_reason(&log);
        let next = failed.as_deref().and_then(|prog| {
            chosen.iter().position(|c| {
                c.hook()
                    .is_some_and(|h| h.progs.iter().any(|(p, _)| *p == prog))
            })
        });
        let Some(i) = next else {
            let progs: Vec<String> = chosen
                .iter()
                .filter_map(|c| c.hook())
                .map(probes::hook_name)
                .collect();
            bail!(
                "loading the BPF programs failed on Linux {}: {e}{}{}\n\
                 hooks chosen for this kernel: {}; `magnet record --check` lists them; \
                 run with LIBBPF_DEBUG=1 to see the verifier log",
                kernel.features.release,
                failed
                    .map(|p| format!(" (program {p})"))
                    .unwrap_or_default(),
                reason.map(|r| format!(": {r}")).unwrap_or_default(),
                progs.join(", ")
            );
        };
        let c = chosen.remove(i);
        let from = c.hook.as_ref().map(|&h| h + 1).unwrap_or(0);
        let why = format!(
            "{}: the verifier refused {}: {}",
            probes::hook_name(c.hook().expect("chosen")),
            failed.as_deref().unwrap_or("?"),
            reason.as_deref().unwrap_or("see LIBBPF_DEBUG=1")
        );
        match (from..c.probe.hooks.len())
            .find(|&h| kernel.hook_missing(&c.probe.hooks[h]).is_none())
        {
            Some(h) => chosen.push(Choice {
                probe: c.probe,
                hook: Ok(h),
            }),
            None => {
                // Name every later candidate too, with what it lacks.
                let rest: Vec<String> = c.probe.hooks[from..]
                    .iter()
                    .filter_map(|h| {
                        let m = kernel.hook_missing(h)?;
                        Some(format!("{}: {m}", probes::hook_name(h)))
                    })
                    .collect();
                let why = std::iter::once(why)
                    .chain(rest)
                    .collect::<Vec<_>>()
                    .join("; ");
                refused(c.probe, &why)?
            }
        }
    }
}

/// Records until the target ends, the duration passes, or `stop` is set.
pub fn record(config: &RecordConfig, mut opts: RunOptions) -> Result<Summary> {
    preflight()?;
    for k in config.kinds.add.iter().chain(&config.kinds.remove) {
        let p = PROBES
            .iter()
            .find(|p| p.kind == Some(k.as_str()))
            .expect("parse_kinds checked the name");
        let layer = p.layer;
        if !config.layers.contains(&layer) {
            bail!("--kinds {k}: that kind is in layer {layer}, which is not selected (add it to --layers)");
        }
    }
    let catalog = Catalog::builtin();
    let index = KindIndex::new(&catalog);

    // ---- which hook feeds each probe on this kernel --------------------------
    let kernel = probes::Kernel::detect().context("reading what this kernel offers")?;
    let mut sources: BTreeMap<Layer, LayerSource> = BTreeMap::new();
    for layer in &config.layers {
        sources.insert(
            *layer,
            LayerSource {
                layer: layer.name().into(),
                hooks: vec![],
                missing: vec![],
            },
        );
    }
    let mut chosen: Vec<Choice> = Vec::new();
    for c in probes::plan(&kernel) {
        if !probe_on(config, c.probe) {
            continue;
        }
        match &c.hook {
            Ok(_) => chosen.push(c),
            Err(why) => left_out(config, &mut sources, c.probe, why)?,
        }
    }

    let filter_pids = matches!(opts.target, Target::Command(_)) || !config.filters.pids.is_empty();
    if let Target::Pids = opts.target {
        if config.filters.pids.is_empty() {
            bail!("no process given to trace (use -p PID, -- COMMAND or --all)");
        }
        for &p in &config.filters.pids {
            if !Path::new(&format!("/proc/{p}")).exists() {
                bail!("-p {p}: no such process");
            }
        }
    }
    let cgroup = config
        .filters
        .cgroup
        .as_deref()
        .map(cgroup_id)
        .transpose()?;
    let filter_tasks = filter_pids || config.filters.comm.is_some() || cgroup.is_some();

    // ---- open, configure, load -------------------------------------------
    let buffer = u32::try_from(config.buffer_bytes).map_err(|_| {
        anyhow!(
            "--buffer: {} MiB (sizes round up to a power of two) is more than a BPF ring \
             buffer holds; the maximum is 2GiB",
            config.buffer_bytes >> 20
        )
    })?;
    // The buffer is split into one ring per possible CPU (see `rings` in
    // record.bpf.c); each ring is a power of two of at least one page.
    let cpus = libbpf_rs::num_possible_cpus().context("counting CPUs")? as u32;
    let ring_bytes = (buffer / cpus.max(1)).max(4096).next_power_of_two();
    let packets = config.layers.iter().any(|l| l.follows_packets());
    let cgroup2_root = packets.then(Cgroup2Root::find);
    let in_hooks = |name: &str| {
        PROBES
            .iter()
            .flat_map(|p| p.hooks.iter())
            .any(|h| h.progs.iter().any(|(p, _)| *p == name))
    };
    let func_plan = crate::funcs::Plan::new(
        &config.funcs,
        &config.func_names,
        config.func_exits,
        &kernel.features,
    );
    let wanted = |chosen: &[Choice], name: &str| -> bool {
        if in_hooks(name) {
            return chosen.iter().any(|c| {
                c.hook()
                    .is_some_and(|h| h.progs.iter().any(|(p, _)| *p == name))
            });
        }
        match name {
            probes::FOLLOW_FORKS => filter_pids || config.layers.contains(&Layer::Sched),
            probes::PKT_FREE => packets && !config.layers.contains(&Layer::Drop),
            probes::PKT_CONSUME => packets,
            probes::FLOWS_AT_BIND => packets,
            probes::TCP_RX_SEG => tcp_rcv_on(config) && !config.layers.contains(&Layer::Dev),
            probes::COOKIE_AT_CREATE => packets,
            n => func_plan.wants(n),
        }
    };
    // A hook the table allows can still be refused by this kernel's verifier
    // (e.g. 6.12 lets netfilter programs call fewer helpers than 6.18): the
    // program that failed is named in libbpf's log; its probe moves on to its
    // next hook and the object is loaded again.
    let skel = load_with_fallback(
        &kernel,
        &mut chosen,
        |probe, why| left_out(config, &mut sources, probe, why),
        |open| {
            {
                let ro = open
                    .maps
                    .rodata_data
                    .as_deref_mut()
                    .expect("the object has read-only settings");
                ro.filter_tasks = filter_tasks;
                ro.func_exits = config.func_exits && !config.funcs.is_empty();
                ro.filter_pid = filter_pids;
                if let Some(comm) = &config.filters.comm {
                    if comm.len() > 15 {
                        bail!("--comm '{comm}': task names are at most 15 bytes (the kernel truncates longer ones)");
                    }
                    ro.filter_comm = true;
                    for (i, b) in comm.bytes().enumerate() {
                        ro.comm_filter[i] = b as i8;
                    }
                }
                ro.cgroup_filter = cgroup.unwrap_or(0);
                ro.port_filter = config.filters.port.unwrap_or(0);
                if let Some(h) = config.filters.host {
                    ro.filter_host = true;
                    ro.host_filter = addr16(h);
                }
                ro.tcp_state = config.tcp_state;
                ro.snaplen = config.snaplen.min(crate::config::SNAPLEN_MAX);
                // Received packets are attributed by flow: keep every announced
                // socket's flow when a layer sees packets.
                ro.track_all_flows = config.layers.iter().any(|l| l.follows_packets());
                ro.tcp_rx_other = tcp_rcv_on(config);
                ro.wakeup_bytes = config.wakeup_bytes;
                ro.record_fork = config.layers.contains(&Layer::Sched);
                ro.id_ring_index = cpus;
                ro.has_id_ring = true;
            }
            // One more ring after the CPUs' for identity (SOCK) records only.
            open.maps
                .rings
                .set_max_entries(cpus + 1)
                .context("sizing the ring array")?;
            // Wake the reader well before one CPU's ring fills.
            open.maps
                .rodata_data
                .as_deref_mut()
                .expect("the object has read-only settings")
                .wakeup_bytes = config.wakeup_bytes.min(ring_bytes as u64 / 8);
            Ok(())
        },
        &wanted,
    )?;
    let wanted = |name: &str| wanted(&chosen, name);

    let mut hooks_by_kind: BTreeMap<&str, String> = BTreeMap::new();

    // Time zero of the trace: taken before the first program is attached, so
    // that no event precedes it.
    let mut header = host_header(config, &opts.target);

    // ---- one ring per CPU ------------------------------------------------------
    let mut rings = Vec::with_capacity(cpus as usize + 1);
    for cpu in 0..=cpus {
        // The identity ring (index `cpus`) holds one 72-byte SOCK record per
        // socket: a fixed 256 KiB.
        let ring_bytes = if cpu == cpus { 256 * 1024 } else { ring_bytes };
        let opts = libbpf_sys::bpf_map_create_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as libbpf_sys::size_t,
            ..Default::default()
        };
        let ring = libbpf_rs::MapHandle::create(
            libbpf_rs::MapType::RingBuf,
            Some(format!("magnet_rb{cpu}")),
            0,
            0,
            ring_bytes,
            &opts,
        )
        .with_context(|| format!("creating the {ring_bytes}-byte ring buffer of CPU {cpu}"))?;
        let fd = std::os::fd::AsRawFd::as_raw_fd(&std::os::fd::AsFd::as_fd(&ring));
        skel.maps
            .rings
            .update(&cpu.to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
            .with_context(|| format!("installing the ring buffer of CPU {cpu}"))?;
        rings.push(ring);
    }

    // ---- attach ---------------------------------------------------------------
    let mut links: Vec<Link> = Vec::new();
    let object = skel.object();
    let mut netfilter_used = false;
    for c in &chosen {
        let probe = c.probe;
        let hook = c.hook().expect("only chosen probes");
        let mut hook_links = Vec::new();
        let mut failed = None;
        for (name, attach) in hook.progs {
            let prog = object
                .progs_mut()
                .find(|p| p.name() == *name)
                .ok_or_else(|| anyhow!("program {name} missing from the BPF object"))?;
            let attached: Result<Vec<Link>> = match attach {
                Attach::TpBtf { .. } | Attach::Fentry(_) | Attach::Fexit(_) => {
                    prog.attach().map(|l| vec![l]).map_err(Into::into)
                }
                Attach::Netfilter(hooknum) => {
                    // Observe last on the way out (final headers), first on the way in.
                    let out = *hooknum == libbpf_rs::NF_INET_LOCAL_OUT
                        || *hooknum == libbpf_rs::NF_INET_POST_ROUTING;
                    let priority = if out { i32::MAX - 1 } else { i32::MIN + 1 };
                    netfilter_used = true;
                    [NFPROTO_IPV4, NFPROTO_IPV6]
                        .into_iter()
                        .map(|pf| attach_netfilter(&prog, pf, *hooknum, priority))
                        .collect()
                }
            };
            match attached {
                Ok(ls) => hook_links.extend(ls),
                Err(e) => {
                    failed = Some(format!("{}: {e:#}", probes::attach_name(*attach)));
                    break;
                }
            }
        }
        let src = sources
            .get_mut(&probe.layer)
            .expect("source per selected layer");
        match failed {
            None => {
                links.extend(hook_links);
                let name = probes::hook_name(hook);
                if let Some(k) = probe.kind {
                    hooks_by_kind.insert(k, name.clone());
                }
                if !src.hooks.contains(&name) {
                    src.hooks.push(name);
                }
            }
            Some(why) => left_out(config, &mut sources, probe, &why)?,
        }
    }
    for name in [
        probes::FOLLOW_FORKS,
        probes::PKT_FREE,
        probes::PKT_CONSUME,
        probes::FLOWS_AT_BIND,
        probes::TCP_RX_SEG,
    ] {
        if !wanted(name) {
            continue;
        }
        let prog = object
            .progs_mut()
            .find(|p| p.name() == name)
            .expect("support program in object");
        links.push(
            prog.attach()
                .with_context(|| format!("attaching support program {name}"))?,
        );
    }
    // Sockets get their cookie when created (see sock_cookie_at_create): a
    // cgroup link on the v2 root, which every task is under.
    if let (true, Some(root)) = (wanted(probes::COOKIE_AT_CREATE), &cgroup2_root) {
        let prog = object
            .progs_mut()
            .find(|p| p.name() == probes::COOKIE_AT_CREATE)
            .expect("support program in object");
        let dir = root.open();
        let attached = dir
            .as_ref()
            .map_err(|e| anyhow!("{e:#}"))
            .and_then(|d| Ok(prog.attach_cgroup(std::os::fd::AsRawFd::as_raw_fd(d))?));
        match attached {
            Ok(l) => links.push(l),
            // Without it only a socket's very first packets lack their cookie.
            Err(e) => {
                if let Some(src) = sources
                    .iter_mut()
                    .find(|(l, _)| l.follows_packets())
                    .map(|(_, s)| s)
                {
                    src.missing.push(format!(
                        "cgroup/sock_create on the cgroup v2 root: {e:#} (a socket's first packets may lack its cookie)"
                    ));
                }
            }
        }
    }
    if config.layers.contains(&Layer::Sched) {
        if let Some(s) = sources.get_mut(&Layer::Sched) {
            s.hooks.push("tp_btf/sched_process_fork".into());
        }
    }
    let func_source = if config.funcs.is_empty() {
        None
    } else {
        let (src, flinks) = func_plan.attach(object, &mut header);
        links.extend(flinks);
        Some(src)
    };
    if netfilter_used {
        if let Some(s) = sources.get_mut(&Layer::Ip) {
            s.missing
                .push("netfilter hooks see only the recorder's network namespace".into());
        }
    }

    // The catalog names the hook that fed each kind on this kernel.
    for k in header.catalog.kinds.iter_mut() {
        if let Some(h) = hooks_by_kind.get(k.name.as_str()) {
            k.hook = h.clone();
        }
    }
    header.layers = sources.values().cloned().collect();
    header.layers.extend(func_source);
    let (tx, writer) = spawn_writer(&config.output, &header)?;

    if let Some(ready) = opts.ready.take() {
        ready(&header.layers);
    }

    // ---- start the target -------------------------------------------------------
    let traced = &skel.maps.traced_tgids;
    let one = [1u8];
    let mut child: Option<Child> = None;
    match &opts.target {
        Target::Command(argv) => {
            // Trace ourselves while forking: the kernel's fork hook then adds the
            // child before it runs a single instruction of the command.
            let me = std::process::id().to_ne_bytes();
            traced.update(&me, &one, MapFlags::ANY)?;
            let spawned = Command::new(&argv[0]).args(&argv[1..]).spawn();
            traced.delete(&me)?;
            match spawned {
                Ok(c) => child = Some(c),
                Err(e) => {
                    // Nothing was recorded: leave no header-only trace behind.
                    drop(tx);
                    let _ = writer.join();
                    let _ = std::fs::remove_file(&config.output);
                    return Err(anyhow::Error::new(e)
                        .context(format!("cannot run {}", argv[0].to_string_lossy())));
                }
            }
        }
        Target::Pids => {
            for &p in &config.filters.pids {
                for d in descendants(p) {
                    traced.update(&d.to_ne_bytes(), &one, MapFlags::ANY)?;
                }
            }
        }
        Target::All => {}
    }

    // ---- drain ---------------------------------------------------------------
    let drain = RefCell::new(Drain {
        block: BlockBuilder::with_capacity(BLOCK_TARGET + 4096),
        tx: tx.clone(),
        records: 0,
        bytes: 0,
        by_kind: vec![0; kind::MAX as usize],
        lost_in_stream: 0,
        dropped_user: 0,
        first_ts: 0,
        last_ts: 0,
        writer_gone: false,
    });
    let mut rb = RingBufferBuilder::new();
    for ring in &rings {
        rb.add(ring, |data: &[u8]| {
            drain.borrow_mut().push(data);
            0
        })?;
    }
    let rb = rb.build()?;

    let started = Instant::now();
    let mut last_progress = Instant::now();
    let mut last_flush = Instant::now();
    let mut child_status = None;
    let mut child_exited_at: Option<Instant> = None;
    let end_reason;
    loop {
        // Woken early when enough is queued; otherwise consume what is there.
        let _ = rb.poll(config.poll_interval);
        rb.consume()?;
        // At low rates blocks fill slowly: cut one at least every second so a
        // recorder that is killed loses at most the last second.
        if last_flush.elapsed() >= Duration::from_secs(1) {
            last_flush = Instant::now();
            drain.borrow_mut().flush();
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
        if let Some(c) = child.as_mut() {
            if child_status.is_none() {
                if let Some(st) = c.try_wait()? {
                    child_status = Some(st);
                    child_exited_at = Some(Instant::now());
                }
            }
            // Let the last packets and state changes of the exiting command
            // (FIN/ACK handshakes in softirq) reach the ring before stopping.
            if child_exited_at.is_some_and(|t| t.elapsed() >= Duration::from_millis(100)) {
                end_reason = "command exited".to_string();
                break;
            }
        }
        if let Some(cb) = opts.progress.as_mut() {
            if last_progress.elapsed() >= Duration::from_millis(500) {
                last_progress = Instant::now();
                let d = drain.borrow();
                let lost = read_kernel_stats(&skel.maps.cpu_stats)
                    .map(|s| s.lost_total)
                    .unwrap_or(0);
                cb(&Progress {
                    elapsed: started.elapsed(),
                    records: d.records,
                    bytes: d.bytes,
                    lost,
                });
            }
        }
    }

    // ---- stop: detach, drain the rest, account for loss ----------------------
    drop(links);
    rb.consume()?;
    drop(rb);
    let stats = read_kernel_stats(&skel.maps.cpu_stats)?;
    let mut d = drain.into_inner();
    for (cpu, &n) in stats.unreported_lost.iter().enumerate() {
        if n > 0 {
            let rec = residual_lost_record(cpu as u16, n);
            d.push(&rec);
        }
    }
    d.flush();
    if let Some(mut c) = child.take() {
        if child_status.is_none() {
            // Interrupted or out of time: the command keeps running on its own.
            child_status = c.try_wait()?;
        }
    }

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
        first_ts_ns: d.first_ts,
        last_ts_ns: d.last_ts,
        end_reason: end_reason.clone(),
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
    })
}
