//! What BPF programs and the process that loaded them cost: the kernel's
//! per-program run time (`bpf_prog_info.run_time_ns` / `run_cnt`, counted
//! only while run-time statistics are on), this process's CPU time, and the
//! machine's CPU time (the denominator of "share of the run's CPU").

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use libbpf_rs::AsRawLibbpf;

/// Run-time statistics held on: while this lives the kernel counts every
/// program's run time and runs. Dropping it lets the kernel stop counting
/// (unless the sysctl or another holder keeps them on).
pub struct RunTimeStats {
    /// The fd `BPF_ENABLE_STATS` returned; `None` when the sysctl had them on
    /// already and the call was refused.
    _fd: Option<OwnedFd>,
    /// How the statistics are on, in words.
    pub how: &'static str,
}

const SYSCTL: &str = "/proc/sys/kernel/bpf_stats_enabled";

/// Turns BPF run-time statistics on (`bpf(BPF_ENABLE_STATS,
/// BPF_STATS_RUN_TIME)`, Linux 5.8+), or finds them on already
/// (`kernel.bpf_stats_enabled=1`). The error says why they are off (an older
/// kernel, no privilege), in a few words.
pub fn enable_run_time_stats() -> Result<RunTimeStats, String> {
    // As a kernel without them (MAGNET_HOOKS_DENY=bpf_stats): the refusal
    // path, testable on any kernel.
    if let Some(why) = crate::deny::denied("bpf_stats") {
        return Err(why);
    }
    // SAFETY: a plain syscall wrapper; a non-negative return is a new fd.
    let ret = unsafe { libbpf_sys::bpf_enable_stats(libbpf_sys::BPF_STATS_RUN_TIME) };
    if ret >= 0 {
        // SAFETY: `ret` is a new file descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(ret) };
        return Ok(RunTimeStats {
            _fd: Some(fd),
            how: "BPF_ENABLE_STATS",
        });
    }
    let errno = if ret == -1 {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    } else {
        -ret
    };
    if sysctl_on() {
        return Ok(RunTimeStats {
            _fd: None,
            how: "kernel.bpf_stats_enabled=1",
        });
    }
    Err(format!(
        "the kernel refused BPF_ENABLE_STATS: {} (errno {errno}; Linux 5.8+ and CAP_SYS_ADMIN needed), and kernel.bpf_stats_enabled is 0",
        std::io::Error::from_raw_os_error(errno)
    ))
}

/// The statistics as a run asked for them: on (`enable_run_time_stats`), or,
/// when `left_off_by` names the switch that said no (`--no-bpf-stats`,
/// `bpf_stats = false`), the reason every cost line then gives for its
/// missing BPF time.
pub fn run_time_stats_unless(left_off_by: Option<&str>) -> Result<RunTimeStats, String> {
    match left_off_by {
        Some(switch) => Err(format!(
            "{switch}: the kernel's run-time statistics were left off"
        )),
        None => enable_run_time_stats(),
    }
}

fn sysctl_on() -> bool {
    std::fs::read_to_string(SYSCTL).is_ok_and(|s| s.trim() == "1")
}

/// Whether something other than process `except` keeps the statistics on:
/// the sysctl, or a process holding a `BPF_ENABLE_STATS` fd (its
/// /proc/PID/fd link reads `anon_inode:bpf-stats`). In words, or None.
pub fn stats_held_by_others(except: u32) -> Option<String> {
    if sysctl_on() {
        return Some("kernel.bpf_stats_enabled=1".into());
    }
    for proc in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = proc.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == except {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(proc.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == "anon_inode:bpf-stats")
            {
                return Some(format!("process {pid} holds a BPF_ENABLE_STATS fd"));
            }
        }
    }
    None
}

/// How long the statistics stay on: the whole run, or the first `full` of
/// it and then windows of `window`, one at a random time in each stretch of
/// `window / duty`. While they are on every BPF program on the host reads the clock
/// twice a run (on a VM's paravirtual clock a sixth to a third of what a
/// recording costs per small packet); sampled, the run pays that a tenth of
/// the time and its BPF time past `full` is estimated from the windows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StatsPlan {
    Full,
    Sampled {
        full: std::time::Duration,
        window: std::time::Duration,
        duty: f64,
    },
}

impl StatsPlan {
    /// `--bpf-stats sampled`: exact for the first 2 s (a short run is measured
    /// whole), then 20 ms windows, 10 % of the time. Each window flips the
    /// kernel's `bpf_stats_enabled_key` on and off (text patching at every
    /// inlined program run): a QEMU/TCG guest's 6.12 kernel once took an int3
    /// Oops in `__perf_event_overflow` while a recording did, so this is opt-in.
    pub const SAMPLED: StatsPlan = StatsPlan::Sampled {
        full: std::time::Duration::from_secs(2),
        window: std::time::Duration::from_millis(20),
        duty: 0.10,
    };

    /// magnetd's `bpf_stats = "sampled"`: the same share of the time in
    /// longer windows, 50 ms in every 500 ms (four flips of the key a
    /// second, where a recording's windows make ten), for a daemon's life.
    pub const DAEMON_SAMPLED: StatsPlan = StatsPlan::Sampled {
        full: std::time::Duration::from_secs(2),
        window: std::time::Duration::from_millis(50),
        duty: 0.10,
    };
}

/// One program's counters as the kernel has them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProgRun {
    /// The kernel's id of the program (global: what bpftool shows).
    pub id: u32,
    /// Times the program ran while statistics were on.
    pub run_cnt: u64,
    /// Time it ran, ns, while statistics were on.
    pub run_time_ns: u64,
    /// Times the kernel did not run it because it was already running on
    /// that CPU (`recursion_misses`, 5.12+; counted whether statistics are
    /// on or not): events it would have made are missing, and no loss
    /// counter of ours saw them.
    pub recursion_misses: u64,
}

impl ProgRun {
    /// What ran between `earlier` and `self` (same program).
    pub fn since(&self, earlier: &ProgRun) -> ProgRun {
        ProgRun {
            id: self.id,
            run_cnt: self.run_cnt.saturating_sub(earlier.run_cnt),
            run_time_ns: self.run_time_ns.saturating_sub(earlier.run_time_ns),
            recursion_misses: self
                .recursion_misses
                .saturating_sub(earlier.recursion_misses),
        }
    }
}

/// Reads a loaded program's counters (`bpf_prog_get_info_by_fd`).
pub fn prog_run(fd: BorrowedFd<'_>) -> Result<ProgRun, String> {
    let mut info = libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of::<libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: `info` is a zeroed bpf_prog_info of `len` bytes; no pointer
    // fields are set, so the kernel writes only into it.
    let ret = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) };
    if ret != 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!("reading the program's info: {e}"));
    }
    Ok(ProgRun {
        id: info.id,
        run_cnt: info.run_cnt,
        run_time_ns: info.run_time_ns,
        recursion_misses: info.recursion_misses,
    })
}

/// The loaded programs of a libbpf object, by name, each with a duplicate of
/// its fd (so the list outlives borrows of the object; the programs stay
/// loaded as long as a duplicate is open). Programs not loaded (autoload
/// off, left out) are skipped.
pub fn loaded_programs(object: &libbpf_rs::Object) -> Vec<(String, OwnedFd)> {
    let mut out = Vec::new();
    for prog in object.progs() {
        // SAFETY: the program pointer is valid for the object's life.
        let fd = unsafe { libbpf_sys::bpf_program__fd(prog.as_libbpf_object().as_ptr()) };
        if fd < 0 {
            continue;
        }
        // SAFETY: `fd` is open for the object's life; it is duplicated at once.
        let dup = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned();
        if let Ok(dup) = dup {
            out.push((prog.name().to_string_lossy().into_owned(), dup));
        }
    }
    out
}

/// A loaded program, a duplicate of its fd, and its counters at the start.
type Watched = (String, OwnedFd, ProgRun);

/// Every watched program's counters now, in the watched order.
fn read_all(fds: &[BorrowedFd<'_>]) -> Vec<ProgRun> {
    fds.iter()
        .map(|fd| prog_run(*fd).unwrap_or_default())
        .collect()
}

fn add_since(acc: &mut [ProgRun], now: &[ProgRun], earlier: &[ProgRun]) {
    for ((a, n), e) in acc.iter_mut().zip(now).zip(earlier) {
        let d = n.since(e);
        a.run_cnt += d.run_cnt;
        a.run_time_ns += d.run_time_ns;
    }
}

/// What the statistics' windows measured past the first, full part.
#[derive(Clone, Debug, Default)]
pub struct Windows {
    /// From the start to the first window's sampling, ns: statistics on
    /// throughout.
    pub full_ns: u64,
    /// Each program's runs and time counted in that full part.
    pub full: Vec<ProgRun>,
    /// Windows taken after it, and their time on, ns.
    pub windows: u64,
    pub windows_ns: u64,
    /// Each program's runs and time counted inside the windows (not what
    /// another holder of the statistics had counted between them).
    pub in_windows: Vec<ProgRun>,
    /// From the end of the full part to the end of the run, ns.
    pub sampled_span_ns: u64,
}

impl Windows {
    /// The whole run's BPF time of program `i`, ns: its full part, plus its
    /// time in the windows scaled to the sampled span.
    pub fn estimated_ns(&self, i: usize) -> u64 {
        self.estimate(i, |r| r.run_time_ns)
    }

    /// The same for its runs.
    pub fn estimated_runs(&self, i: usize) -> u64 {
        self.estimate(i, |r| r.run_cnt)
    }

    fn estimate(&self, i: usize, of: impl Fn(&ProgRun) -> u64) -> u64 {
        let full = self.full.get(i).map_or(0, &of);
        let win = self.in_windows.get(i).map_or(0, &of) as f64;
        let rest = if self.windows_ns > 0 {
            win * self.sampled_span_ns as f64 / self.windows_ns as f64
        } else if self.full_ns > 0 {
            // stopped before a window: the full part's rate carries on
            full as f64 * self.sampled_span_ns as f64 / self.full_ns as f64
        } else {
            0.0
        };
        full + rest.round() as u64
    }
}

/// The thread that turns the statistics on and off (StatsPlan::Sampled).
struct Sampler {
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<Windows>,
}

/// A small generator for the windows' random gaps (xorshift64*): windows at
/// times no workload can be in step with.
fn next_random(state: &mut u64) -> f64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
}

/// Where window `k` of a sampled run starts: at a random place in its slot
/// (stratified: one window per slot of `slot`, so the count of windows in
/// any stretch is nearly fixed and no periodic load can fall in step).
fn window_start(
    sampled_from: std::time::Instant,
    slot: std::time::Duration,
    window: std::time::Duration,
    k: u32,
    rng: &mut u64,
) -> std::time::Instant {
    sampled_from + slot * k + (slot.saturating_sub(window)).mul_f64(next_random(rng))
}

/// One window: the statistics turned on for `window` (or until `wait` says
/// the run ended), every program's counters read before and after. Returns
/// what the programs counted in it, the time it was on (ns: from about the
/// middle of the enabling call to about the middle of the disabling one),
/// and whether the run ended.
fn one_window(
    fds: &[BorrowedFd<'_>],
    window: std::time::Duration,
    wait: &dyn Fn(std::time::Duration) -> bool,
) -> (Vec<ProgRun>, Vec<ProgRun>, u64, bool) {
    use std::time::Instant;
    let before = read_all(fds);
    let t0 = Instant::now();
    let held = enable_run_time_stats();
    let t1 = Instant::now();
    let ended = wait(window);
    let t2 = Instant::now();
    drop(held);
    let t3 = Instant::now();
    let after = read_all(fds);
    let on_ns = ((t2 - t0) + (t3 - t1)).as_nanos() as u64 / 2;
    (before, after, on_ns, ended)
}

impl Sampler {
    /// Holds `on` for `full`, then lets the statistics go off and turns them
    /// on for `window` at a time, `duty` of the time.
    fn spawn(
        on: RunTimeStats,
        fds: Vec<OwnedFd>,
        full: std::time::Duration,
        window: std::time::Duration,
        duty: f64,
    ) -> std::io::Result<Sampler> {
        use std::sync::mpsc::RecvTimeoutError;
        use std::time::{Duration, Instant};
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let start = Instant::now();
        let thread = std::thread::Builder::new()
            .name("magnet-bpf-stats".into())
            .spawn(move || {
                let fds: Vec<BorrowedFd<'_>> = fds.iter().map(|f| f.as_fd()).collect();
                let at_start = read_all(&fds);
                // true: the run ended (stop sent, or the meter gone)
                let wait = |d: Duration| {
                    !matches!(stopped.recv_timeout(d), Err(RecvTimeoutError::Timeout))
                };
                let mut w = Windows {
                    in_windows: vec![ProgRun::default(); fds.len()],
                    ..Windows::default()
                };
                if wait(full) {
                    // the run ended within the full part: all of it measured
                    return w;
                }
                let full_end = read_all(&fds);
                drop(on);
                let sampled_from = Instant::now();
                w.full_ns = (sampled_from - start).as_nanos() as u64;
                w.full = full_end
                    .iter()
                    .zip(&at_start)
                    .map(|(n, e)| n.since(e))
                    .collect();
                // Stratified: one window in each slot of window / duty, at a
                // random place in it. The count of windows in any stretch of
                // the run is then nearly fixed (a steady load's estimate is
                // off by about one window's worth), and a periodic load
                // cannot fall in step with them.
                let slot = window.div_f64(duty);
                let mut rng = (start.elapsed().as_nanos() as u64) | 1;
                for k in 0u32.. {
                    let at = window_start(sampled_from, slot, window, k, &mut rng);
                    if wait(at.saturating_duration_since(Instant::now())) {
                        break;
                    }
                    let (before, after, on_ns, ended) = one_window(&fds, window, &wait);
                    w.windows += 1;
                    w.windows_ns += on_ns;
                    add_since(&mut w.in_windows, &after, &before);
                    if ended {
                        break;
                    }
                }
                w.sampled_span_ns = sampled_from.elapsed().as_nanos() as u64;
                w
            })?;
        Ok(Sampler { stop, thread })
    }

    fn finish(self) -> Windows {
        let _ = self.stop.send(());
        self.thread.join().unwrap_or_default()
    }
}

/// The statistics sampled for a loader that runs for days (magnetd), whose
/// counters must only ever grow: on for the first `full`, then for `window`
/// at a random time in each slot of `window / duty`. Each window's counts,
/// scaled to its slot, are added to the totals when it closes, so the
/// totals are exact for the full part and estimates after it, at most one
/// slot behind.
pub struct LiveSampler {
    state: std::sync::Arc<std::sync::Mutex<LiveTotals>>,
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What [`LiveSampler::totals`] gives.
#[derive(Clone, Debug, Default)]
pub struct LiveTotals {
    /// Each program's runs and run time since the start (counted in the full
    /// part, estimated after it) and its skipped runs (counted always).
    pub programs: Vec<ProgRun>,
    /// Time the statistics were on, and time since the start, ns.
    pub on_ns: u64,
    pub span_ns: u64,
    /// Windows taken after the full part.
    pub windows: u64,
}

/// `delta`'s runs and time scaled from `on_ns` to `slot_ns` (a window's
/// counts standing for its slot).
pub fn scaled(delta: &ProgRun, on_ns: u64, slot_ns: u64) -> ProgRun {
    let f = if on_ns == 0 {
        0.0
    } else {
        slot_ns as f64 / on_ns as f64
    };
    ProgRun {
        id: delta.id,
        run_cnt: (delta.run_cnt as f64 * f).round() as u64,
        run_time_ns: (delta.run_time_ns as f64 * f).round() as u64,
        recursion_misses: delta.recursion_misses,
    }
}

impl LiveSampler {
    /// Holds `on` for `full`, then samples as [`StatsPlan::Sampled`] says;
    /// `fds` are the programs' (duplicates), in the order of
    /// [`LiveTotals::programs`], counted from their load.
    pub fn spawn(
        on: RunTimeStats,
        fds: Vec<OwnedFd>,
        plan: StatsPlan,
    ) -> std::io::Result<LiveSampler> {
        use std::sync::mpsc::RecvTimeoutError;
        use std::time::{Duration, Instant};
        let StatsPlan::Sampled { full, window, duty } = plan else {
            return Err(std::io::Error::other(
                "LiveSampler needs StatsPlan::Sampled",
            ));
        };
        let slot = window.div_f64(duty.clamp(0.001, 1.0));
        let start = Instant::now();
        // Counted from the programs' load (their counters start at 0 then).
        let at_start: Vec<ProgRun> = read_all(&fds.iter().map(|f| f.as_fd()).collect::<Vec<_>>())
            .iter()
            .map(|r| ProgRun {
                id: r.id,
                ..ProgRun::default()
            })
            .collect();
        let state = std::sync::Arc::new(std::sync::Mutex::new(LiveTotals {
            programs: at_start
                .iter()
                .map(|r| ProgRun {
                    id: r.id,
                    ..ProgRun::default()
                })
                .collect(),
            ..LiveTotals::default()
        }));
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let shared = state.clone();
        let thread = std::thread::Builder::new()
            .name("magnet-bpf-stats".into())
            .spawn(move || {
                let fds: Vec<BorrowedFd<'_>> = fds.iter().map(|f| f.as_fd()).collect();
                let wait = |d: Duration| {
                    !matches!(stopped.recv_timeout(d), Err(RecvTimeoutError::Timeout))
                };
                let publish = |f: &dyn Fn(&mut LiveTotals)| {
                    if let Ok(mut t) = shared.lock() {
                        f(&mut t);
                        t.span_ns = start.elapsed().as_nanos() as u64;
                    }
                };
                // The full part: the counters as they are, every half second.
                let mut on = Some(on);
                while start.elapsed() < full {
                    let ended = wait(
                        full.saturating_sub(start.elapsed())
                            .min(Duration::from_millis(500)),
                    );
                    let now = read_all(&fds);
                    publish(&|t| {
                        for ((p, n), e) in t.programs.iter_mut().zip(&now).zip(&at_start) {
                            *p = n.since(e);
                        }
                        t.on_ns = start.elapsed().as_nanos() as u64;
                    });
                    if ended {
                        return;
                    }
                }
                drop(on.take());
                let sampled_from = Instant::now();
                let mut rng = (start.elapsed().as_nanos() as u64) | 1;
                for k in 0u32.. {
                    let at = window_start(sampled_from, slot, window, k, &mut rng);
                    if wait(at.saturating_duration_since(Instant::now())) {
                        return;
                    }
                    let (before, after, on_ns, ended) = one_window(&fds, window, &wait);
                    publish(&|t| {
                        for ((p, a), b) in t.programs.iter_mut().zip(&after).zip(&before) {
                            let d = scaled(&a.since(b), on_ns, slot.as_nanos() as u64);
                            p.run_cnt += d.run_cnt;
                            p.run_time_ns += d.run_time_ns;
                            p.recursion_misses = a.recursion_misses.saturating_sub(
                                at_start
                                    .iter()
                                    .find(|s| s.id == a.id)
                                    .map_or(0, |s| s.recursion_misses),
                            );
                        }
                        t.on_ns += on_ns;
                        t.windows += 1;
                    });
                    if ended {
                        return;
                    }
                }
            })?;
        Ok(LiveSampler {
            state,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The totals so far.
    pub fn totals(&self) -> LiveTotals {
        self.state.lock().map(|t| t.clone()).unwrap_or_default()
    }
}

impl Drop for LiveSampler {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a run of a loader costs, from [`Meter::start`] (before the first
/// hook is attached) to [`Meter::stop`] (after the last is detached): its own
/// programs' runs and run time, its process's CPU, and the machine's CPU.
pub struct Meter {
    /// Run-time statistics on, with every loaded program and its counters at
    /// the start (subtracted at the end: whatever ran before, e.g. while the
    /// sysctl had statistics on, is not this run's); or why not.
    bpf: Result<(Option<RunTimeStats>, Vec<Watched>), String>,
    /// StatsPlan::Sampled: the thread that holds the statistics.
    sampler: Option<Sampler>,
    /// After [`Meter::end_counting`]: each program's counters when the
    /// statistics went off, and how long they had been on, ns.
    counted: Option<(Vec<ProgRun>, u64)>,
    /// This meter's own `BPF_ENABLE_STATS` fd is the only thing keeping the
    /// statistics on, as found at the start: dropping it turns them off.
    /// Found once there because it reads every process's fds, which
    /// [`Meter::end_counting`] must not do on a drain thread.
    holds_alone: bool,
    started: std::time::Instant,
    process0: u64,
    machine0: Option<u64>,
}

/// What [`Meter::stop`] read.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Each loaded program's (name, runs and ns over the run), or why BPF
    /// time was not measured.
    pub bpf: Result<Vec<(String, ProgRun)>, String>,
    /// With StatsPlan::Sampled past its full part: what the windows
    /// measured, and the whole run's estimate from them.
    pub windows: Option<Windows>,
    /// After [`Meter::end_counting`]: how long the statistics were on, ns
    /// (`bpf` counts that part; skipped runs are counted to the end).
    pub counted_ns: Option<u64>,
    /// From [`Meter::start`] to [`Meter::stop`], ns.
    pub span_ns: u64,
    /// The process's CPU time over the run, ns.
    pub process_cpu_ns: u64,
    /// The machine's CPU time (all CPUs, busy and idle) over the run, ns; 0
    /// when /proc/stat was unreadable.
    pub machine_cpu_ns: u64,
}

impl Meter {
    /// Reads the counters of `object`'s loaded programs; `stats` is what
    /// [`enable_run_time_stats`] returned (called before loading, so that
    /// the kernel counts from the first run).
    pub fn start(stats: Result<RunTimeStats, String>, object: &libbpf_rs::Object) -> Meter {
        Meter::start_with(stats, StatsPlan::Full, object)
    }

    /// The same, holding the statistics as `plan` says. Sampled, but where
    /// something else keeps them on anyway (the sysctl, another process's
    /// fd), the run is measured whole: sampling would save nothing.
    pub fn start_with(
        stats: Result<RunTimeStats, String>,
        plan: StatsPlan,
        object: &libbpf_rs::Object,
    ) -> Meter {
        let mut sampler = None;
        let holds_alone = stats.as_ref().is_ok_and(|on| {
            on.how == "BPF_ENABLE_STATS" && stats_held_by_others(std::process::id()).is_none()
        });
        let bpf = stats.and_then(|on| {
            let mut progs = Vec::new();
            for (name, fd) in loaded_programs(object) {
                let run = prog_run(fd.as_fd()).map_err(|e| format!("{name}: {e}"))?;
                progs.push((name, fd, run));
            }
            let StatsPlan::Sampled { full, window, duty } = plan else {
                return Ok((Some(on), progs));
            };
            if !holds_alone {
                return Ok((Some(on), progs));
            }
            let fds = progs
                .iter()
                .map(|(_, fd, _)| fd.try_clone())
                .collect::<std::io::Result<Vec<_>>>()
                .map_err(|e| format!("duplicating the programs' fds: {e}"))?;
            sampler = Some(
                Sampler::spawn(on, fds, full, window, duty.clamp(0.001, 1.0))
                    .map_err(|e| format!("starting the statistics' sampler: {e}"))?,
            );
            Ok((None, progs))
        });
        Meter {
            bpf,
            sampler,
            counted: None,
            holds_alone,
            started: std::time::Instant::now(),
            process0: process_cpu_ns(),
            machine0: machine_cpu_ns().ok(),
        }
    }

    /// Ends the counting before the run ends (`record --bpf-stats first`):
    /// reads every program's counters and lets the statistics go off, so the
    /// rest of the run pays no clock reads. Done only where this meter holds
    /// them alone through its own `BPF_ENABLE_STATS` fd, as found at the
    /// start (held by the sysctl or another process, they stay on anyway and
    /// the run is counted whole), and only once. Returns whether it ended them.
    pub fn end_counting(&mut self) -> bool {
        if self.counted.is_some() || self.sampler.is_some() || !self.holds_alone {
            return false;
        }
        let Ok((on @ Some(_), progs)) = &mut self.bpf else {
            return false;
        };
        let now: Vec<ProgRun> = progs
            .iter()
            .map(|(_, fd, _)| prog_run(fd.as_fd()).unwrap_or_default())
            .collect();
        *on = None;
        let ns = self.started.elapsed().as_nanos() as u64;
        self.counted = Some((now, ns));
        true
    }

    /// While this meter counts every run (held on, not sampled, not yet
    /// ended): each program's counters since the start, in the order of
    /// [`Measured::bpf`], and the ns since the start. One system call per
    /// program.
    pub fn read_counting(&self) -> Option<(Vec<ProgRun>, u64)> {
        if self.counted.is_some() || self.sampler.is_some() {
            return None;
        }
        let Ok((Some(_), progs)) = &self.bpf else {
            return None;
        };
        let now = progs
            .iter()
            .map(|(_, fd, at_start)| prog_run(fd.as_fd()).map(|r| r.since(at_start)))
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        Some((now, self.started.elapsed().as_nanos() as u64))
    }

    /// Reads every counter again and lets the statistics go off.
    pub fn stop(self) -> Measured {
        let windows = self.sampler.map(Sampler::finish).filter(|w| w.full_ns > 0);
        let machine1 = machine_cpu_ns().ok();
        let process_cpu_ns = process_cpu_ns().saturating_sub(self.process0);
        let counted = self.counted;
        let bpf = self.bpf.and_then(|(_on, progs)| {
            progs
                .iter()
                .enumerate()
                .map(|(i, (name, fd, at_start))| {
                    let mut now = prog_run(fd.as_fd()).map_err(|e| format!("{name}: {e}"))?;
                    if let Some((at_end, _)) = &counted {
                        // runs and time as counted when the statistics went
                        // off; skipped runs are counted whether on or not
                        let c = at_end.get(i).copied().unwrap_or_default();
                        now.run_cnt = c.run_cnt;
                        now.run_time_ns = c.run_time_ns;
                    }
                    Ok((name.clone(), now.since(at_start)))
                })
                .collect()
        });
        Measured {
            bpf,
            windows,
            counted_ns: counted.map(|(_, ns)| ns),
            span_ns: self.started.elapsed().as_nanos() as u64,
            process_cpu_ns,
            machine_cpu_ns: match (self.machine0, machine1) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => 0,
            },
        }
    }
}

/// CPU time (user + system) of this whole process so far, ns
/// (`getrusage(RUSAGE_SELF)`): every thread, the drain and the writer included.
pub fn process_cpu_ns() -> u64 {
    // SAFETY: getrusage writes one rusage, which `ru` is.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU time of the calling thread so far, ns (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `ts` is.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The machine's CPU time so far, all CPUs, busy and idle, ns: the first
/// line of /proc/stat (user, nice, system, idle, iowait, irq, softirq,
/// steal; guest time is already in user and nice) in clock ticks, times the
/// tick. Over a run, the difference is wall time × online CPUs.
pub fn machine_cpu_ns() -> Result<u64, String> {
    let text = std::fs::read_to_string("/proc/stat").map_err(|e| format!("/proc/stat: {e}"))?;
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = if hz > 0 { hz as u64 } else { 100 };
    let ticks = parse_proc_stat_ticks(&text).ok_or("/proc/stat: no cpu line")?;
    Ok(ticks.saturating_mul(1_000_000_000 / hz))
}

/// The sum of the first eight fields of /proc/stat's `cpu` line.
pub fn parse_proc_stat_ticks(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    (fields.len() >= 4).then(|| fields.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_stands_for_its_slot() {
        let d = ProgRun {
            id: 7,
            run_cnt: 50,
            run_time_ns: 12_345,
            recursion_misses: 2,
        };
        let s = scaled(&d, 50_000_000, 500_000_000);
        assert_eq!(
            (s.id, s.run_cnt, s.run_time_ns, s.recursion_misses),
            (7, 500, 123_450, 2)
        );
        // a window that was never on stands for nothing
        assert_eq!(scaled(&d, 0, 500_000_000).run_cnt, 0);
    }

    #[test]
    fn proc_stat_sums_busy_and_idle_without_guest() {
        let t = "cpu  10 1 5 100 2 3 4 5 7 9\ncpu0 5 0 2 50 1 1 2 2 3 4\nintr 1\n";
        assert_eq!(
            parse_proc_stat_ticks(t),
            Some(10 + 1 + 5 + 100 + 2 + 3 + 4 + 5)
        );
        // An old kernel's four fields.
        assert_eq!(parse_proc_stat_ticks("cpu 1 2 3 4\n"), Some(10));
        assert_eq!(parse_proc_stat_ticks("intr 1\n"), None);
        assert_eq!(parse_proc_stat_ticks("cpu 1 x 3 4\n"), None);
    }

    #[test]
    fn since_subtracts_what_ran_before() {
        let a = ProgRun {
            id: 7,
            run_cnt: 10,
            run_time_ns: 1000,
            recursion_misses: 1,
        };
        let b = ProgRun {
            id: 7,
            run_cnt: 15,
            run_time_ns: 1600,
            recursion_misses: 3,
        };
        assert_eq!(
            b.since(&a),
            ProgRun {
                id: 7,
                run_cnt: 5,
                run_time_ns: 600,
                recursion_misses: 2,
            }
        );
    }

    #[test]
    fn own_cpu_clocks_move() {
        let (p, t) = (process_cpu_ns(), thread_cpu_ns());
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(process_cpu_ns() > p && thread_cpu_ns() > t);
        assert!(machine_cpu_ns().unwrap() > 0);
    }

    #[test]
    fn windows_scale_to_the_sampled_span() {
        let run = |ns| ProgRun {
            run_time_ns: ns,
            ..ProgRun::default()
        };
        let w = Windows {
            full_ns: 2_000_000_000,
            full: vec![run(1_000), run(0)],
            windows: 10,
            windows_ns: 200_000_000,
            in_windows: vec![run(50), run(7)],
            sampled_span_ns: 2_000_000_000,
        };
        // 200 ms of 2 s sampled: ten times what the windows counted.
        assert_eq!(w.estimated_ns(0), 1_000 + 500);
        assert_eq!(w.estimated_ns(1), 70);
        assert_eq!(w.estimated_ns(9), 0);
        assert_eq!(w.estimated_runs(0), 0);
        // Stopped before the first window: the full part's rate goes on.
        let early = Windows {
            windows: 0,
            windows_ns: 0,
            sampled_span_ns: 100_000_000,
            ..w
        };
        assert_eq!(early.estimated_ns(0), 1_000 + 50);
    }

    #[test]
    fn random_gaps_stay_in_unit_range() {
        let mut state = 12345u64 | 1;
        let xs: Vec<f64> = (0..10_000).map(|_| next_random(&mut state)).collect();
        assert!(xs.iter().all(|x| (0.0..1.0).contains(x)));
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }

    #[test]
    fn statistics_left_off_name_the_switch() {
        let e = run_time_stats_unless(Some("--no-bpf-stats"))
            .err()
            .expect("left off");
        assert_eq!(
            e,
            "--no-bpf-stats: the kernel's run-time statistics were left off"
        );
    }
}
