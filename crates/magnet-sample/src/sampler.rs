//! One run on one interface: load the tc programs (sized for this run), attach
//! them on ingress and egress (TCX links, or clsact filters where the kernel
//! has no TCX), pick the start (now, or a wall-clock instant for runs
//! synchronised across hosts), wait for the last bucket, detach, and sum the
//! per-CPU counters into a [`Run`].

use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, ProgramAttachType, TcHook, TC_EGRESS, TC_INGRESS};

use magnet_kernel::plan::{self, Attach, Candidate, Direction, Part, Plan, Refusals};

use crate::skel::{types, SampleSkelBuilder};
use crate::Error;
use magnet_runs::run::{Metric, Run, RunMeta, FORMAT_VERSION};
use magnet_runs::sketch;

/// When bucket 0 begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// As soon as the programs are attached.
    Now,
    /// At this wall-clock instant (CLOCK_REALTIME), which must be in the future.
    At(SystemTime),
}

/// How the tc programs are attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AttachMode {
    /// TCX links where the kernel has them (6.6+), clsact filters otherwise.
    #[default]
    Auto,
    /// Classic clsact filters even where TCX exists (what Linux < 6.6 gets):
    /// for tests of that path, and for tools that only see clsact filters.
    Clsact,
}

/// What to sample.
#[derive(Clone, Debug)]
pub struct SampleConfig {
    pub iface: String,
    pub interval: Duration,
    pub samples: u32,
    /// TCP traffic whose socket's smoothed RTT is below this is "short RTT".
    pub rtt_threshold: Duration,
    /// Look up the socket of each TCP packet to split bytes by RTT class.
    pub rtt_split: bool,
    pub start: Start,
    /// Seed of the connection sketch's hash.
    pub sketch_seed: u64,
    /// Host name written into the run (default: the UTS node name).
    pub host: Option<String>,
    pub attach: AttachMode,
    /// Turn the kernel's run-time statistics on for the run, so that it says
    /// what its programs cost (host-wide while on: every BPF program reads
    /// the clock twice more per run).
    pub bpf_stats: bool,
    /// Hold them on for the run's first seconds and then a tenth of the time,
    /// the rest estimated (`sample --bpf-stats sampled`), instead of throughout.
    pub bpf_stats_sampled: bool,
}

impl SampleConfig {
    pub fn new(iface: &str, interval: Duration, samples: u32) -> SampleConfig {
        SampleConfig {
            iface: iface.to_string(),
            interval,
            samples,
            rtt_threshold: Duration::from_millis(5),
            rtt_split: true,
            start: Start::Now,
            sketch_seed: 0,
            host: None,
            attach: AttachMode::Auto,
            bpf_stats: true,
            bpf_stats_sampled: false,
        }
    }

    /// Checks the numbers before anything is loaded.
    pub fn validate(&self) -> Result<(), Error> {
        let bad = |s: String| Err(Error::Config(s));
        if self.interval < Duration::from_micros(1) {
            return bad(format!(
                "interval {:?} is too short (at least 1us)",
                self.interval
            ));
        }
        if self.samples == 0 || self.samples > 1_000_000 {
            return bad(format!("{} samples: give 1 to 1000000", self.samples));
        }
        if self.iface.is_empty() {
            return bad("no interface given".into());
        }
        Ok(())
    }
}

/// Memory the kernel holds for a run: the per-CPU bucket array (plus the
/// fixed-size flow table for retransmission detection, not counted here).
pub fn footprint_bytes(samples: u32, cpus: u32) -> u64 {
    u64::from(samples) * std::mem::size_of::<types::mg_bucket>() as u64 * u64::from(cpus)
}

/// Told to the caller once the programs are attached and the start is fixed.
#[derive(Clone, Debug)]
pub struct Started {
    pub start_realtime_ns: u64,
    pub end_realtime_ns: u64,
    pub attach: &'static str,
    pub ifindex: u32,
    /// What killed earlier runs had left and this one removed (one line per
    /// run; crate::stale).
    pub cleaned: Vec<String>,
}

/// (monotonic, realtime) read together; monotonic is the BPF clock.
fn clock_pair() -> (u64, u64) {
    let p = magnet_host::clock::clock_pair();
    (p.monotonic_ns, p.realtime_ns)
}

fn ifindex(iface: &str) -> Result<u32, Error> {
    nix::net::if_::if_nametoindex(iface).map_err(|e| {
        Error::Config(format!(
            "-i {iface}: no such interface in this network namespace ({e})"
        ))
    })
}

/// Bytes of link header in front of IP at tc: 14 for Ethernet-like devices
/// (and loopback), 0 for L3 devices (tun, wireguard, ipip).
fn link_header_len(iface: &str) -> u32 {
    // SAFETY: plain ioctl on a throwaway socket with a zeroed, NUL-terminated ifreq.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return 14;
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in iface.bytes().take(libc::IFNAMSIZ - 1).enumerate() {
            ifr.ifr_name[i] = b as libc::c_char;
        }
        let rc = libc::ioctl(fd, libc::SIOCGIFHWADDR, &mut ifr);
        libc::close(fd);
        if rc != 0 {
            return 14;
        }
        match ifr.ifr_ifru.ifru_hwaddr.sa_family {
            libc::ARPHRD_ETHER | libc::ARPHRD_LOOPBACK => 14,
            libc::ARPHRD_NONE | libc::ARPHRD_TUNNEL | libc::ARPHRD_TUNNEL6 | libc::ARPHRD_IPGRE => {
                0
            }
            _ => 14,
        }
    }
}

fn netns_inode() -> u32 {
    std::fs::metadata("/proc/thread-self/ns/net")
        .map(|m| m.ino() as u32)
        .unwrap_or(0)
}

enum Attached {
    Tcx(#[allow(dead_code)] Vec<Link>),
    Clsact {
        hooks: Vec<TcHook>,
        /// The clsact qdisc this run created (None: it was there before, and
        /// stays after the run).
        qdisc: Option<ClsactQdisc>,
        /// The owner file naming these filters (crate::stale), if written.
        owner: Option<(PathBuf, crate::stale::Owner)>,
    },
}

impl Drop for Attached {
    fn drop(&mut self) {
        if let Attached::Clsact {
            hooks,
            qdisc,
            owner,
        } = self
        {
            for h in hooks {
                let _ = h.detach();
            }
            let me = owner.as_ref().map(|(_, o)| o.clone());
            if let Some(q) = qdisc.take() {
                // Another sampler still uses the qdisc: it inherits it (and
                // removes it when it is the last one).
                let heir = me
                    .as_ref()
                    .and_then(|o| crate::stale::heir(o.netns, o.ifindex, o.pid));
                match heir {
                    Some(h) => crate::stale::inherit_qdisc(&h),
                    // Someone else's filters on it since we made it: theirs now.
                    None if me
                        .as_ref()
                        .is_some_and(|o| crate::stale::foreign_filters(o.ifindex, &[])) => {}
                    None => {
                        let _ = q.destroy();
                    }
                }
            }
            if let Some((path, _)) = owner.take() {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

use magnet_host::attach::attach_tcx;
pub use magnet_host::attach::ClsactQdisc;

/// The group of the sampler's parts (the first column of `sample --check`).
pub const GROUP: &str = "sample";

/// The sampler's parts, each with its candidate hooks best first
/// (magnet_kernel::plan).
pub const PARTS: &[Part] = &[
    Part {
        name: "retransmits",
        group: GROUP,
        feeds: "retransmits per bucket",
        candidates: &[Candidate::progs(&[(
            "sample_tcp_retransmit",
            Attach::TpBtf {
                tp: "tcp_retransmit_skb",
                args: None,
            },
        )])],
        optional: false,
        default_on: true,
    },
    Part {
        name: "packets",
        group: GROUP,
        feeds: "bytes and packets per bucket",
        candidates: &[
            // TCX links (Linux 6.6+).
            Candidate::progs(&[
                ("sample_ingress", Attach::Tcx(Direction::Ingress)),
                ("sample_egress", Attach::Tcx(Direction::Egress)),
            ]),
            // Classic clsact filters, observing at the lowest priority
            // number we can get so others still run after us.
            Candidate::progs(&[
                ("sample_ingress", Attach::Clsact(Direction::Ingress)),
                ("sample_egress", Attach::Clsact(Direction::Egress)),
            ]),
        ],
        optional: false,
        default_on: true,
    },
];

/// The sampler's hooks with `attach` (`--clsact` passes TCX over), not
/// denied by `MAGNET_HOOKS_DENY` and not lacking by `lacks` (None: the kernel
/// has it, or it is found out by trying).
pub fn plan(attach: AttachMode, lacks: &dyn Fn(Attach) -> Option<String>) -> Plan {
    let mut refused = Refusals::new();
    if attach == AttachMode::Clsact {
        refused.insert(("packets", 0), "--clsact".to_string());
    }
    plan::choose(PARTS, lacks, &refused)
}

/// What `magnet sample` would attach on this kernel (`sample --check`): the
/// plan, with TCX asked of the kernel's BTF and the tracepoint of its BTF.
pub fn check(attach: AttachMode) -> Result<Plan, Error> {
    let btf = magnet_kernel::KernelBtf::load().map_err(|e| Error::Host(e.to_string()))?;
    let features = magnet_kernel::Features::detect(&btf);
    let lacks = |a: Attach| match a {
        Attach::TpBtf { tp, .. } => btf
            .tracepoint(tp)
            .is_none()
            .then(|| format!("this kernel has no tracepoint {tp}")),
        Attach::Tcx(_) => (!features.tcx.is_yes()).then(|| features.tcx.reason().to_string()),
        _ => None,
    };
    Ok(plan(attach, &lacks))
}

/// What sampling needs root for, said when it is missing.
pub const PRIVILEGE: magnet_host::Privilege = magnet_host::Privilege {
    what: "sampling",
    needs: "it loads BPF programs and attaches them to the interface's tc hooks: \
            CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN",
};

/// Samples one run. Blocks until the last bucket has passed or `stop` is set
/// (then the run holds the buckets completed so far and `complete` is false).
pub fn sample(
    config: &SampleConfig,
    stop: &AtomicBool,
    on_started: &mut dyn FnMut(&Started),
) -> Result<Run, Error> {
    config.validate()?;
    magnet_host::preflight(PRIVILEGE).map_err(|e| Error::Host(e.to_string()))?;
    let ifindex = ifindex(&config.iface)?;
    let interval_ns = config.interval.as_nanos() as u64;
    let mut storage = MaybeUninit::uninit();
    // Run-time statistics on before the programs are loaded and attached.
    let stats =
        magnet_kernel::cost::run_time_stats_unless((!config.bpf_stats).then_some("--no-bpf-stats"));
    let mut skel = load(&mut storage, config, ifindex, interval_ns)?;

    // What killed clsact-mode runs left in this namespace goes first.
    let netns = netns_inode();
    let cleaned = crate::stale::clean(netns);
    let stats_plan = if config.bpf_stats_sampled {
        magnet_kernel::cost::StatsPlan::SAMPLED
    } else {
        magnet_kernel::cost::StatsPlan::Full
    };
    let meter = magnet_kernel::cost::Meter::start_with(
        stats,
        stats_plan,
        libbpf_rs::skel::Skel::object(&skel),
    );
    // What is tried: MAGNET_HOOKS_DENY and --clsact decide before the kernel.
    let hooks = plan(config.attach, &|_| None);
    if let Some(why) = hooks.left_out().into_iter().next() {
        return Err(Error::Host(format!("sampling cannot run: {why}")));
    }
    let rxmit_link = skel
        .progs
        .sample_tcp_retransmit
        .attach()
        .map_err(|e| Error::bpf("attaching tp_btf/tcp_retransmit_skb", e))?;
    // TCX where chosen, clsact where the kernel refuses it (no TCX before 6.6).
    let tcx = match hooks.get("packets").and_then(|c| c.chosen.as_ref().ok()) {
        Some(0) => Some((
            attach_tcx(&skel.progs.sample_ingress, ifindex),
            attach_tcx(&skel.progs.sample_egress, ifindex),
        )),
        _ => None,
    };
    let attached = match tcx {
        Some((Ok(i), Ok(e))) => Attached::Tcx(vec![i, e]),
        tcx => {
            drop(tcx);
            attach_clsact(&skel, config, ifindex, netns)?
        }
    };
    let attach_kind = match attached {
        Attached::Tcx(_) => "tcx",
        Attached::Clsact { .. } => "clsact",
    };

    let (start_mono, start_real) = start_times(config.start)?;
    let run_ns = interval_ns * u64::from(config.samples);
    {
        let bss = skel
            .maps
            .bss_data
            .as_deref_mut()
            .expect("the object has a .bss");
        // SAFETY: the .bss is mmapped and read by the BPF programs; a volatile
        // write makes the store happen here, not later.
        unsafe { std::ptr::write_volatile(&mut bss.start_ns, start_mono) };
    }
    on_started(&Started {
        start_realtime_ns: start_real,
        end_realtime_ns: start_real + run_ns,
        attach: attach_kind,
        ifindex,
        cleaned,
    });
    let completed = wait(config.samples, interval_ns, start_mono, stop);
    drop(attached);
    drop(rxmit_link);
    let measured = meter.stop();

    let mut run = Run::zeroed(
        RunMeta {
            format_version: FORMAT_VERSION,
            host: config.host.clone().unwrap_or_else(host_name),
            iface: config.iface.clone(),
            ifindex,
            kernel: nix::sys::utsname::uname()
                .map(|u| u.release().to_string_lossy().into_owned())
                .unwrap_or_default(),
            interval_ns,
            samples: config.samples,
            start_realtime_ns: start_real,
            cpus: libbpf_rs::num_possible_cpus().unwrap_or(1) as u32,
            attach: attach_kind.to_string(),
            rtt_threshold_us: config.rtt_threshold.as_micros().min(u32::MAX as u128) as u32,
            sketch_seed: config.sketch_seed,
            complete: completed == config.samples,
            cost: None,
        },
        completed as usize,
    );
    read_buckets(&skel.maps.buckets, &mut run, completed)?;
    let packets = run.total(Metric::InPackets) + run.total(Metric::OutPackets);
    run.meta.cost = Some(run_cost(measured, packets));
    Ok(run)
}

/// Opens the sampler's object, sets this run's read-only settings and the
/// bucket array's size, and loads it.
fn load<'obj>(
    storage: &'obj mut MaybeUninit<libbpf_rs::OpenObject>,
    config: &SampleConfig,
    ifindex: u32,
    interval_ns: u64,
) -> Result<crate::skel::SampleSkel<'obj>, Error> {
    let mut open = SampleSkelBuilder::default()
        .open(storage)
        .map_err(|e| Error::bpf("opening the sampler's BPF object", e))?;
    {
        let ro = open
            .maps
            .rodata_data
            .as_deref_mut()
            .expect("the object has read-only settings");
        ro.interval_ns = interval_ns;
        ro.nsamples = config.samples;
        ro.l2_len = link_header_len(&config.iface);
        ro.rtt_threshold_us = config.rtt_threshold.as_micros().min(u32::MAX as u128) as u32;
        ro.rtt_split = config.rtt_split;
        ro.sketch_seed = config.sketch_seed;
        ro.target_ifindex = ifindex;
        ro.target_netns = netns_inode();
    }
    open.maps
        .buckets
        .set_max_entries(config.samples)
        .map_err(|e| Error::bpf("sizing the bucket array", e))?;
    open.progs
        .sample_ingress
        .set_attach_type(ProgramAttachType::TcxIngress);
    open.progs
        .sample_egress
        .set_attach_type(ProgramAttachType::TcxEgress);
    open.load().map_err(|e| {
        Error::bpf("loading the sampler's BPF programs (needs Linux 6.4+ with BTF; magnet -v shows the verifier's log)", e)
    })
}

/// No TCX (Linux < 6.6): classic clsact filters, observing at the lowest
/// priority number we can get so others still run after us. The qdisc is
/// removed after the run only if this run made it: our own qdisc if we make
/// it, or one a sampler made before us and bequeathed (see crate::stale).
fn attach_clsact(
    skel: &crate::skel::SampleSkel<'_>,
    config: &SampleConfig,
    ifindex: u32,
    netns: u32,
) -> Result<Attached, Error> {
    let qdisc = ClsactQdisc::create(ifindex).map_err(|e| {
        Error::Host(format!(
            "creating the clsact qdisc on {}: {e}",
            config.iface
        ))
    })?;
    let made_qdisc = qdisc.is_some();
    let mut attached = Attached::Clsact {
        hooks: Vec::new(),
        qdisc,
        owner: None,
    };
    // Each run its own handle (its pid): runs side by side add
    // filters instead of replacing each other's.
    let handle = std::process::id();
    // Name what we are about to attach before attaching it, so that
    // a run after a SIGKILL of this one removes exactly that (tc
    // filters outlive their process).
    if let Attached::Clsact { owner, .. } = &mut attached {
        let o = crate::stale::Owner {
            pid: std::process::id(),
            start_time: crate::stale::start_time(std::process::id()).unwrap_or(0),
            netns,
            ifindex,
            handle,
            made_qdisc,
            ingress_prog: crate::stale::prog_id(skel.progs.sample_ingress.as_fd()),
            egress_prog: crate::stale::prog_id(skel.progs.sample_egress.as_fd()),
        };
        let path = o.write().map_err(|e| {
            Error::Host(format!(
                "writing {}: {e} (needed to clean up after a run killed by SIGKILL)",
                crate::stale::state_dir().display()
            ))
        })?;
        *owner = Some((path, o));
    }
    for (prog, point) in [
        (&skel.progs.sample_ingress, TC_INGRESS),
        (&skel.progs.sample_egress, TC_EGRESS),
    ] {
        let mut h = TcHook::new(prog.as_fd());
        h.ifindex(ifindex as i32)
            .replace(true)
            .handle(handle)
            .priority(crate::stale::PRIORITY)
            .attach_point(point);
        let h = h
            .attach()
            .map_err(|e| Error::bpf(format!("attaching the tc filter on {}", config.iface), e))?;
        if let Attached::Clsact { hooks, .. } = &mut attached {
            hooks.push(h);
        }
    }
    Ok(attached)
}

/// Where bucket 0 begins, on the monotonic clock and the real-time clock.
fn start_times(start: Start) -> Result<(u64, u64), Error> {
    let (mono, real) = clock_pair();
    Ok(match start {
        Start::Now => (mono, real),
        Start::At(at) => {
            let at_ns = at
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
            if at_ns <= real {
                return Err(Error::Config(format!(
                    "--at is {:.3}s in the past; give a time in the future",
                    (real - at_ns) as f64 / 1e9
                )));
            }
            (mono + (at_ns - real), at_ns)
        }
    })
}

/// Waits for the last bucket to pass, or for `stop`; returns the buckets
/// completed.
fn wait(samples: u32, interval_ns: u64, start_mono: u64, stop: &AtomicBool) -> u32 {
    let end_mono = start_mono + interval_ns * u64::from(samples);
    loop {
        let now = magnet_host::clock::monotonic_ns();
        if now >= end_mono {
            return samples;
        }
        if stop.load(Ordering::Relaxed) {
            return (now.saturating_sub(start_mono) / interval_ns) as u32;
        }
        std::thread::sleep(Duration::from_nanos((end_mono - now).min(20_000_000)));
    }
}

/// Sums the per-CPU counters of the first `completed` buckets into `run`,
/// and estimates each bucket's connections from its sketch.
fn read_buckets<M: MapCore>(map: &M, run: &mut Run, completed: u32) -> Result<(), Error> {
    let nfields = Metric::ALL.len();
    for i in 0..completed {
        let per_cpu = map
            .lookup_percpu(&i.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| Error::bpf(format!("reading bucket {i}"), e))?
            .ok_or_else(|| Error::Host(format!("bucket {i} missing from the counter array")))?;
        let mut sk = [0u64; 2];
        for cpu in &per_cpu {
            let at =
                |k: usize| u64::from_ne_bytes(cpu[k * 8..k * 8 + 8].try_into().expect("8 bytes"));
            for (f, series) in run.series.iter_mut().enumerate() {
                series[i as usize] += at(f);
            }
            sk[0] |= at(nfields);
            sk[1] |= at(nfields + 1);
        }
        run.sketch.as_mut().expect("zeroed run has a sketch")[i as usize] = sk;
        run.connections[i as usize] = sketch::estimate(sk);
    }
    Ok(())
}

/// The run's cost from what the meter read and the packets counted.
fn run_cost(m: magnet_kernel::cost::Measured, packets: u64) -> magnet_runs::RunCost {
    let w = m.windows.as_ref();
    let bpf = m.bpf.map(|progs| {
        progs
            .into_iter()
            .enumerate()
            .map(|(i, (name, r))| magnet_runs::ProgramRun {
                name,
                runs: r.run_cnt,
                ns: r.run_time_ns,
                // the windows' programs are the measured ones, in order
                estimated_runs: w.map(|w| w.estimated_runs(i)),
                estimated_ns: w.map(|w| w.estimated_ns(i)),
            })
            .collect()
    });
    let mut cost = magnet_runs::RunCost::new(packets, bpf, m.process_cpu_ns, m.machine_cpu_ns);
    if let Some(w) = w {
        cost.set_sampled(magnet_runs::Sampled {
            full_ns: w.full_ns,
            windows: w.windows,
            windows_ns: w.windows_ns,
            sampled_span_ns: w.sampled_span_ns,
            estimated_ns: 0,
            ..Default::default()
        });
    }
    cost
}

fn host_name() -> String {
    nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// TCX first; `--clsact` (or a kernel without TCX) moves the packets
    /// part to clsact filters, with one line saying why.
    #[test]
    fn tcx_first_then_clsact() {
        if std::env::var_os(magnet_kernel::deny::VAR).is_some() {
            eprintln!("skipped: MAGNET_HOOKS_DENY is set");
            return;
        }
        let p = plan(AttachMode::Auto, &|_| None);
        assert_eq!(
            p.summary(),
            "retransmits=tp_btf/tcp_retransmit_skb packets=tcx/ingress+tcx/egress"
        );
        let p = plan(AttachMode::Clsact, &|_| None);
        assert_eq!(
            p.fallbacks(),
            ["packets through clsact/ingress+clsact/egress: tcx/ingress+tcx/egress: --clsact"]
        );
        let no_tcx = |a: Attach| matches!(a, Attach::Tcx(_)).then(|| "no TCX".to_string());
        let p = plan(AttachMode::Auto, &no_tcx);
        assert_eq!(
            p.used("packets").map(Candidate::name).as_deref(),
            Some("clsact/ingress+clsact/egress")
        );
        assert!(p.left_out().is_empty());
    }

    #[test]
    fn bucket_layout_matches_metric_order() {
        assert_eq!(size_of::<types::mg_bucket>(), (Metric::ALL.len() + 2) * 8);
        let offs = [
            offset_of!(types::mg_bucket, in_bytes),
            offset_of!(types::mg_bucket, out_bytes),
            offset_of!(types::mg_bucket, in_packets),
            offset_of!(types::mg_bucket, out_packets),
            offset_of!(types::mg_bucket, in_ce_bytes),
            offset_of!(types::mg_bucket, in_ce_packets),
            offset_of!(types::mg_bucket, in_rxmit_bytes),
            offset_of!(types::mg_bucket, out_rxmit_bytes),
            offset_of!(types::mg_bucket, in_rxmit_packets),
            offset_of!(types::mg_bucket, out_rxmit_packets),
            offset_of!(types::mg_bucket, in_short_rtt_bytes),
            offset_of!(types::mg_bucket, in_long_rtt_bytes),
            offset_of!(types::mg_bucket, out_short_rtt_bytes),
            offset_of!(types::mg_bucket, out_long_rtt_bytes),
            offset_of!(types::mg_bucket, tcp_rxmit_events),
        ];
        for (m, off) in Metric::ALL.iter().zip(offs) {
            assert_eq!(*m as usize * 8, off, "{m:?}");
        }
        assert_eq!(offset_of!(types::mg_bucket, conn), Metric::ALL.len() * 8);
        assert_eq!(footprint_bytes(2000, 2), 2000 * 136 * 2);
    }

    #[test]
    fn config_is_checked() {
        let mut c = SampleConfig::new("eth0", Duration::from_micros(100), 2000);
        assert!(c.validate().is_ok());
        c.samples = 0;
        assert!(c.validate().unwrap_err().to_string().contains("0 samples"));
    }
}
