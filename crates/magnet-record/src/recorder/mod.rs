//! A recording from start to end, in phases that each have a module:
//!
//! 1. [`host`]: can this host record (root, BTF), the clock pair, the header;
//! 2. [`targets`]: what is traced and which task filters the kernel applies;
//! 3. [`attach`]: which hook feeds each probe, loading and attaching, after
//!    [`snapshot`] has told the kernel which sockets of the traced tasks
//!    exist already;
//! 4. [`drain`]: rings to trace blocks (written by a second thread), then the
//!    stop: detach, drain the rest, account for every lost event, close the
//!    trace with its totals.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::process::ExitStatus;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use magnet_trace::LayerSource;

use crate::config::RecordConfig;
use crate::probes;

mod attach;
mod cost;
mod drain;
mod frames;
mod host;
mod kernel_maps;
mod snapshot;
mod targets;

pub use attach::{check, CheckLine};
pub use host::{preflight, PRIVILEGE};

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
    /// Called once the hooks are stopped (or detached), before the rest of
    /// the rings is drained and the END block written: from then on nothing
    /// new is recorded (magnetd's health says so at once, not when the file
    /// closes).
    pub detached: Option<DetachedFn>,
}

/// Told that recording has stopped (the hooks are gone).
pub type DetachedFn = Box<dyn FnOnce()>;

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
    /// CPU time of the drain thread (ring buffers to blocks): records per
    /// drain-CPU-second is the drain's capacity, whatever fed it.
    pub drain_cpu: Duration,
    /// What the recording cost (also in the END block).
    pub cost: magnet_trace::Cost,
}

/// Records until the target ends, the duration passes, or `stop` is set.
pub fn record(config: &RecordConfig, opts: RunOptions) -> Result<Summary, crate::Error> {
    host::preflight()?;
    Ok(run(config, opts)?)
}

/// Removes the trace unless the recording got as far as starting its target:
/// a recording that fails before that leaves no file behind (a killed one
/// leaves the header it had written).
struct RemoveUnlessStarted<'a>(Option<&'a std::path::Path>);

impl Drop for RemoveUnlessStarted<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn run(config: &RecordConfig, mut opts: RunOptions) -> Result<Summary> {
    attach::check_kinds(config)?;
    // The header is in the file before anything slow (BTF, loading the
    // programs, which takes a second): a recorder killed from here on leaves
    // a trace that reads as cut short.
    let early = drain::create_trace(&config.output, &host::early_header(config, &opts.target))?;
    let mut unstarted = RemoveUnlessStarted(Some(&config.output));
    let kernel = probes::Kernel::detect().context("reading what this kernel offers")?;
    let tasks = targets::Tasks::resolve(config, &opts.target)?;
    let mut plan = attach::Plan::new(config, &kernel, &tasks)?;
    let needs = attach::Needs::new(config, tasks, &kernel);
    // Functions asked for by name (--funcs) are like a layer named in
    // --layers: no function probes fails here, before recording.
    if let Some(why) = needs.funcs.why_not() {
        anyhow::bail!(
            "--funcs cannot be recorded: {why} (leave out --funcs, or see `magnet record --check`)"
        );
    }

    // The buffer is split into one ring per possible CPU (see `rings` in
    // record.bpf.c).
    let cpus = libbpf_rs::num_possible_cpus().context("counting CPUs")? as u32;
    let ring_bytes = drain::ring_bytes(config, cpus)?;
    let skel = attach::load(&kernel, &mut plan, &needs, cpus, ring_bytes)?;

    // Run-time statistics on before the first hook runs a program, and
    // before time zero: turning them on and reading every program's
    // counters takes milliseconds that must not open a gap between time
    // zero and the hooks (an oracle counting from time zero would see
    // packets the recorder was not yet attached for).
    let meter = cost::Meter::start(
        libbpf_rs::skel::Skel::object(&skel),
        config.no_bpf_stats,
        config.bpf_stats_sampled,
        config.bpf_stats_full,
    );
    // Time zero of the trace: taken before the first program is attached, so
    // that no event precedes it (and after loading, so that the recording's
    // span does not count the load).
    let mut header = host::header(config, &opts.target);
    let rings = drain::make_rings(&skel.maps.rings, cpus, ring_bytes)?;
    // Sockets the traced tasks hold already (a running server's listeners
    // and connections): known to the kernel before the first program runs.
    let (found, unlisted) = snapshot::take(config, &opts.target, &tasks)?;
    if let Some(line) = unlisted {
        if let Some(src) = plan.sources.values_mut().next() {
            src.missing.push(line);
        }
    }
    snapshot::install(&found, &skel.maps.socks, &skel.maps.traced_flows)?;
    let links = attach::attach(&mut plan, &needs, &skel, &mut header)?;
    let (tx, writer) = drain::spawn_writer(early, &config.output, &header)?;
    // Ready once every hook is attached and, for -p, the processes are in
    // the task filter (said before, a sender's first datagram could go out
    // between the line and its pid reaching the kernel, and was not
    // recorded); a command to run starts after the line.
    let command = matches!(opts.target, Target::Command(_));
    if command {
        if let Some(ready) = opts.ready.take() {
            ready(&header.layers);
        }
    }

    let child = match targets::start(&opts.target, config, &skel.maps.traced_tgids) {
        Ok(c) => c,
        Err(e) => {
            // Nothing was recorded: leave no header-only trace behind (the
            // writer is done with the file before it goes).
            drop(tx);
            let _ = writer.join();
            return Err(e);
        }
    };
    unstarted.0 = None;
    if let Some(ready) = opts.ready.take() {
        ready(&header.layers);
    }
    let mut opening = drain::Drain::new(tx.clone());
    for f in &found {
        opening.push(&snapshot::sock_record(f));
    }
    let drained = drain::run(
        config,
        &mut opts,
        &rings,
        drain::KernelMaps {
            cpu_stats: &skel.maps.cpu_stats,
            batches: &skel.maps.batches,
            stop: &skel.maps.data_stop,
        },
        opening,
        child,
        drain::Hooks { links, meter },
    )?;
    drain::finish(drained, header, tx, writer)
}
