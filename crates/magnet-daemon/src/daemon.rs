//! The run loop: attach, serve, reap, reload on SIGHUP, detach on stop.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, UNIX_EPOCH};

use magnet_client::Connection;
use magnet_runs::store::Store;

use crate::config::{Config, PacketHooks, SampleSettings};
use crate::container::Resolver;
use crate::flight::Flight;
use crate::summaries::{self, Reader};
use crate::triggers::Triggers;
use crate::Error;

/// Set by the caller's signal handlers.
#[derive(Clone, Default)]
pub struct Control {
    /// SIGINT/SIGTERM: detach everything and return.
    pub stop: Arc<AtomicBool>,
    /// SIGHUP: re-read the config file.
    pub reload: Arc<AtomicBool>,
}

/// What every server thread shares.
pub struct Shared {
    pub reader: Reader,
    pub config: RwLock<Config>,
    pub stop: Arc<AtomicBool>,
    pub flight: Option<Arc<Flight>>,
    /// Clients of the Unix socket and of HTTP, each its own.
    pub unix_slots: crate::slots::Slots,
    pub http_slots: crate::slots::Slots,
    pub sampler: Mutex<SamplerState>,
    containers: Mutex<Resolver>,
    log: Box<dyn Fn(&str) + Send + Sync>,
}

/// The sampler under the daemon, as /metrics shows it.
#[derive(Default)]
pub struct SamplerState {
    pub iface: Option<String>,
    pub runs: u64,
    pub last: Option<LastRun>,
}

pub struct LastRun {
    pub interval: String,
    pub in_bytes: u64,
    pub out_bytes: u64,
    pub in_peak: u64,
    pub out_peak: u64,
    pub in_busy: u64,
    /// The run's BPF time per packet counted, ns (None: not measured, or
    /// no packet counted).
    pub bpf_ns_per_packet: Option<f64>,
}

impl Shared {
    pub fn log(&self, msg: &str) {
        (self.log)(msg)
    }

    /// Adds the container id named by the connection's cgroup.
    pub fn label(&self, mut c: Connection) -> Connection {
        if let Ok(mut r) = self.containers.lock() {
            c.container = r.container_of(c.cgroup_id).map(|c| c.id);
        }
        c
    }

    /// Host totals with the flight recorder's losses.
    pub fn host(&self) -> magnet_client::Host {
        let mut h = self.reader.host();
        if let Some(f) = &self.flight {
            h.health.lost = f.lost.load(Ordering::Relaxed);
            h.health.recorder_running = f.running();
        }
        h
    }

    /// The sampler's run store, if one is configured.
    pub fn store(&self) -> Option<Store> {
        let dir = self.config.read().ok()?.sample.as_ref()?.store.clone();
        Store::open(&dir).ok()
    }
}

/// Binds the Unix socket, removing one a dead magnetd left behind (a live
/// one answering there is an error).
///
/// The socket never shows at `path` with any mode but `mode`: it is bound in
/// a private directory (0700) next to `path`, given its mode there, then
/// renamed into place (a chmod by path after bind would leave a window where
/// the socket has the umask's mode, and a directory others may write could
/// swap the path under it).
fn bind_unix(path: &Path, mode: u32) -> Result<UnixListener, Error> {
    let io = |source| Error::Io {
        path: path.display().to_string(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.exists() {
        std::fs::create_dir_all(&dir).map_err(io)?;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755));
    }
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(Error::Host(format!(
                "{}: another magnetd is answering there; stop it first or set `socket` elsewhere",
                path.display()
            )));
        }
        std::fs::remove_file(path).map_err(io)?;
    }
    let private = dir.join(format!(".magnetd-bind.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&private);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&private)
        .map_err(|source| Error::Io {
            path: private.display().to_string(),
            source,
        })?;
    let tmp = private.join("s");
    let bound = (|| {
        let l = UnixListener::bind(&tmp)?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
        std::fs::rename(&tmp, path)?;
        Ok(l)
    })();
    let _ = std::fs::remove_file(&tmp);
    let _ = std::fs::remove_dir(&private);
    bound.map_err(io)
}

/// Runs scheduled sampler runs until `stop` (its own flag: a reload stops
/// the sampler alone; shutdown sets it too).
fn sampler_loop(shared: Arc<Shared>, s: SampleSettings, stop: Arc<AtomicBool>) {
    use magnet_common::units::{format_duration, now_ns};
    use magnet_runs::schedule::Schedule;
    use magnet_sample::{sample, Metric, SampleConfig, Start};
    let samples = 2000;
    // The daemon's `bpf_stats`: its sampler runs turn the statistics on too.
    let bpf_stats = shared
        .config
        .read()
        .map(|c| c.bpf_stats)
        .unwrap_or(crate::config::BpfStats::Full);
    let Ok(sched) = Schedule::parse(&s.schedule) else {
        return;
    };
    let store = match Store::open(&s.store) {
        Ok(st) => st,
        Err(e) => {
            shared.log(&format!("sampler: {e}"));
            return;
        }
    };
    if let Ok(mut st) = shared.sampler.lock() {
        st.iface = Some(s.interface.clone());
    }
    shared.log(&format!(
        "sampler: {} every {} into {}",
        s.interface,
        format_duration(sched.every),
        s.store.display()
    ));
    while !stop.load(Ordering::Relaxed) {
        for planned in sched.next_cycle(now_ns(), samples) {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let mut cfg = SampleConfig::new(&s.interface, planned.interval, samples);
            cfg.bpf_stats = bpf_stats != crate::config::BpfStats::Off;
            cfg.bpf_stats_sampled = bpf_stats == crate::config::BpfStats::Sampled;
            cfg.start = Start::At(UNIX_EPOCH + Duration::from_nanos(planned.start_ns));
            match sample(&cfg, &stop, &mut |st| {
                for line in &st.cleaned {
                    shared.log(&format!("sampler: {line}"));
                }
            }) {
                Ok(run) => {
                    if let Err(e) = store.save(&run) {
                        shared.log(&format!("sampler: {e}"));
                        continue;
                    }
                    if let Some(r) = s.retain {
                        let _ = store.retain(r, now_ns());
                    }
                    let g = |m: Metric| run.get(m);
                    if let Ok(mut st) = shared.sampler.lock() {
                        st.runs += 1;
                        st.last = Some(LastRun {
                            interval: format_duration(planned.interval),
                            in_bytes: run.total(Metric::InBytes),
                            out_bytes: run.total(Metric::OutBytes),
                            in_peak: g(Metric::InBytes).iter().copied().max().unwrap_or(0),
                            out_peak: g(Metric::OutBytes).iter().copied().max().unwrap_or(0),
                            in_busy: g(Metric::InBytes).iter().filter(|&&b| b > 0).count() as u64,
                            bpf_ns_per_packet: run
                                .meta
                                .cost
                                .as_ref()
                                .filter(|c| c.packets > 0)
                                .and_then(|c| c.bpf_ns_per_packet),
                        });
                    }
                }
                Err(magnet_sample::Error::Config(msg)) if msg.contains("in the past") => {}
                Err(e) => {
                    shared.log(&format!(
                        "sampler: {}: {e}; retrying next cycle",
                        s.interface
                    ));
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        }
    }
}

/// Runs magnetd until `control.stop`. `config_path` is re-read on SIGHUP.
/// `ready` is called once everything is attached and listening.
pub fn run(
    config: Config,
    config_path: Option<PathBuf>,
    control: &Control,
    log: Box<dyn Fn(&str) + Send + Sync>,
    ready: &mut dyn FnMut(),
) -> Result<(), Error> {
    let (mut attached, reader) = summaries::attach(
        config.max_connections,
        config.packet_hooks,
        config.stage_hooks,
        config.app_calls,
        config.stages_every,
        config.bpf_stats,
    )?;
    log_attached(&attached, &reader, &config, &log);
    let unix = match &config.socket {
        Some(p) => Some(bind_unix(p, config.socket_mode)?),
        None => None,
    };
    let http = match config.http {
        Some(a) => Some(std::net::TcpListener::bind(a).map_err(|source| Error::Io {
            path: format!("http {a}"),
            source,
        })?),
        None => None,
    };
    let socket_path = config.socket.clone();
    let shared = Arc::new(Shared {
        reader,
        containers: Mutex::new(Resolver::new(&attached.cgroup_root)),
        config: RwLock::new(config.clone()),
        stop: Arc::new(AtomicBool::new(false)),
        flight: config.recorder.clone().map(Flight::new),
        unix_slots: Default::default(),
        http_slots: Default::default(),
        sampler: Mutex::new(SamplerState::default()),
        log,
    });
    let mut threads = serve(&shared, unix, http, socket_path.as_deref());
    let mut sampler = config.sample.as_ref().map(|s| Sampler::start(&shared, s));
    if let Some(t) = start_flight(&shared) {
        threads.push(t);
    }
    ready();
    let mut trig = Triggers::new(&shared);
    let mut window = PacketWindow::new();
    let mut last_reap = Instant::now();
    while !control.stop.load(Ordering::Relaxed) {
        let mut nap = Duration::from_millis(100);
        if let Some((w, period)) = attached.windows() {
            nap = nap.min(window.step(&mut attached, &shared, w, period));
        }
        std::thread::sleep(nap);
        if control.reload.swap(false, Ordering::SeqCst) {
            reload(&shared, config_path.as_deref(), &mut sampler);
        }
        if last_reap.elapsed() >= Duration::from_secs(1) {
            last_reap = Instant::now();
            reap(&shared);
            trig.check(&shared);
        }
    }
    if attached.windows().is_some() {
        attached.close_window();
        if let Ok(w) = shared.reader.windows.lock() {
            shared.log(&w.summary());
        }
    }
    shared.log("stopping: detaching every hook");
    shared.stop.store(true, Ordering::SeqCst);
    for t in threads {
        let _ = t.join();
    }
    if let Some(s) = sampler {
        s.stop();
    }
    drop(attached);
    if let Some(p) = socket_path {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

/// Says what was attached: what was left out or fell back, whether BPF
/// time is measured, and one line with the hooks and the packet hooks' mode.
fn log_attached(
    attached: &summaries::Attached,
    reader: &Reader,
    config: &Config,
    log: &dyn Fn(&str),
) {
    let fmt = magnet_common::units::format_duration;
    for line in attached.plan.left_out() {
        log(&line);
    }
    for line in attached.plan.fallbacks() {
        log(&line);
    }
    match reader.bpf_time() {
        Err(why) => log(&format!("BPF time: not measured ({why})")),
        Ok(_) if reader.bpf_stats_sampled() => log(
            "BPF time: bpf_stats = \"sampled\": the kernel's run-time statistics on for the first 2 s, \
             then 50 ms in every 500 ms; the magnet_bpf_* series past that are estimates \
             (magnet_bpf_stats_on_ratio)",
        ),
        Ok(_) => {}
    }
    if let crate::config::StageHooks::Sampled { window, period } = attached.stage_hooks {
        log(&format!(
            "stage_hooks sampled: {} attached for {} of every {}: stages timed in those windows \
             (and each connection's first send call)",
            attached.windowed().collect::<Vec<_>>().join(" and "),
            fmt(window),
            fmt(period)
        ));
    }
    log(&format!(
        "attached {} hooks ({}; {}); connection map holds {}",
        attached.link_count(),
        attached.plan.summary(),
        match attached.packet_hooks {
            PacketHooks::Always => format!("cgroup_skb on {}", attached.cgroup_root.display()),
            PacketHooks::Sampled { window, period } => format!(
                "packet_hooks sampled: cgroup_skb on {} for {} of every {}: latency histograms \
                 sampled, no host or non-TCP wire counts",
                attached.cgroup_root.display(),
                fmt(window),
                fmt(period)
            ),
            PacketHooks::Off => "packet_hooks off: no latency histograms, \
                 no host or non-TCP wire counts"
                .to_string(),
        },
        config.max_connections
    ));
}

/// Starts the threads that answer on the Unix socket and over HTTP.
fn serve(
    shared: &Arc<Shared>,
    unix: Option<UnixListener>,
    http: Option<std::net::TcpListener>,
    socket_path: Option<&Path>,
) -> Vec<std::thread::JoinHandle<()>> {
    let mut threads = Vec::new();
    if let Some(l) = unix {
        let sh = shared.clone();
        threads.push(std::thread::spawn(move || crate::api::serve(l, sh)));
        shared.log(&format!(
            "answering on {}",
            socket_path
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ));
    }
    if let Some(l) = http {
        if let Ok(a) = l.local_addr() {
            shared.log(&format!("serving http://{a}/metrics"));
        }
        let sh = shared.clone();
        threads.push(std::thread::spawn(move || crate::http::serve(l, sh)));
    }
    threads
}

/// Starts the flight recorder's thread, if one is configured, and waits
/// (up to 30 s) until its first segment records, so a dump has something.
fn start_flight(shared: &Arc<Shared>) -> Option<std::thread::JoinHandle<()>> {
    let f = shared.flight.clone()?;
    let (sh, f2) = (shared.clone(), f.clone());
    shared.log(&format!(
        "flight recorder: last {} s in {} (at most {} MiB)",
        f.config.seconds.as_secs(),
        f.config.dir.display(),
        f.config.max_bytes >> 20
    ));
    let thread = std::thread::spawn(move || {
        let log = |m: &str| sh.log(m);
        f2.run(sh.stop.clone(), &log)
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f.running() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(thread)
}

/// The sampler's thread and its own stop switch (a reload restarts it
/// alone).
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Sampler {
    fn start(shared: &Arc<Shared>, s: &SampleSettings) -> Sampler {
        let sh = shared.clone();
        let s2 = s.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::spawn(move || sampler_loop(sh, s2, st));
        Sampler { stop, thread }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.thread.join();
    }
}

/// Sampled packet hooks: the per-packet links exist from `open_at` for
/// `window`, then not until `open_at + period` (a fixed rate; a late start
/// skips ahead).
struct PacketWindow {
    open_at: Instant,
    close_at: Option<Instant>,
    failures_logged: u64,
}

impl PacketWindow {
    fn new() -> PacketWindow {
        PacketWindow {
            open_at: Instant::now(),
            close_at: None,
            failures_logged: 0,
        }
    }

    /// Opens or closes the window when it is time; returns how long until
    /// the next change.
    fn step(
        &mut self,
        attached: &mut summaries::Attached,
        shared: &Shared,
        window: Duration,
        period: Duration,
    ) -> Duration {
        let now = Instant::now();
        match self.close_at {
            Some(t) if now >= t => {
                attached.close_window();
                self.close_at = None;
            }
            None if now >= self.open_at => {
                match attached.open_window() {
                    Ok(_) => self.close_at = Some(Instant::now() + window),
                    Err(e) => {
                        // said once, then every 100th time
                        if self.failures_logged % 100 == 0 {
                            shared.log(&format!(
                                "sampling window not opened (retried every {}): {e}",
                                magnet_common::units::format_duration(period)
                            ));
                        }
                        self.failures_logged += 1;
                    }
                }
                self.open_at += period;
                if self.open_at <= now {
                    self.open_at = now + period;
                }
            }
            _ => {}
        }
        let next = self.close_at.unwrap_or(self.open_at);
        next.saturating_duration_since(Instant::now())
    }
}

/// SIGHUP: re-reads the config file. What is bound or attached at start
/// (listeners, map sizes, packet hooks, the flight recorder) keeps its old
/// value; the sampler restarts with new settings.
fn reload(shared: &Arc<Shared>, config_path: Option<&Path>, sampler: &mut Option<Sampler>) {
    let Some(p) = config_path else {
        shared.log("SIGHUP: no config file to re-read");
        return;
    };
    let new = match Config::load(p) {
        Err(e) => {
            shared.log(&format!("reload failed, keeping the old config: {e}"));
            return;
        }
        Ok(new) => new,
    };
    let old = shared.config.read().map(|c| c.clone()).unwrap_or_default();
    if new.http != old.http
        || new.socket != old.socket
        || new.max_connections != old.max_connections
        || new.packet_hooks != old.packet_hooks
        || new.stage_hooks != old.stage_hooks
        || new.app_calls != old.app_calls
        || new.stages_every != old.stages_every
        || new.bpf_stats != old.bpf_stats
    {
        shared.log(
            "reload: http, socket, max_connections, app_calls, bpf_stats, *_stages_every, stage_hooks and packet_hooks/packet_window/packet_period change only on restart",
        );
    }
    if new.sample != old.sample {
        shared.log("reload: the sampler's settings change after its current cycle is stopped");
        if let Some(s) = sampler.take() {
            s.stop();
        }
        if let Some(s) = &new.sample {
            *sampler = Some(Sampler::start(shared, s));
        }
    }
    if let Ok(mut c) = shared.config.write() {
        let (http, socket, max, rec, hooks, stage_hooks) = (
            c.http,
            c.socket.clone(),
            c.max_connections,
            c.recorder.clone(),
            c.packet_hooks,
            c.stage_hooks,
        );
        *c = new;
        c.packet_hooks = hooks;
        c.stage_hooks = stage_hooks;
        c.http = http;
        c.socket = socket;
        c.max_connections = max;
        c.recorder = rec;
    }
    shared.log(&format!("reloaded {}", p.display()));
}

/// Forgets connections closed or idle longer than the config says, and
/// resolves the containers of their cgroups while those still exist: a
/// container that has exited keeps its label (the resolver caches what it
/// found).
fn reap(shared: &Shared) {
    let (closed, idle) = shared
        .config
        .read()
        .map(|c| (c.retain_closed, c.idle))
        .unwrap_or((Duration::from_secs(60), Duration::from_secs(600)));
    let cgroups = shared.reader.reap(closed, idle);
    if let Ok(mut r) = shared.containers.lock() {
        for id in cgroups {
            r.container_of(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    /// A watcher stat()ing the path as fast as it can never sees the socket
    /// with a mode other than the one asked for (a chmod after bind shows
    /// the umask's mode first), and nothing is left beside it.
    #[test]
    fn the_socket_never_shows_another_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.sock");
        let stop = Arc::new(AtomicBool::new(false));
        let (p2, s2) = (path.clone(), stop.clone());
        let watcher = std::thread::spawn(move || {
            let mut seen = std::collections::BTreeSet::new();
            while !s2.load(Ordering::Relaxed) {
                if let Ok(m) = std::fs::symlink_metadata(&p2) {
                    if m.file_type().is_socket() {
                        seen.insert(m.permissions().mode() & 0o777);
                    }
                }
            }
            seen
        });
        for _ in 0..5000 {
            let l = bind_unix(&path, 0o600).unwrap();
            drop(l);
            std::fs::remove_file(&path).unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        let seen = watcher.join().unwrap();
        assert!(
            seen.iter().all(|&m| m == 0o600),
            "modes seen: {:?}",
            seen.iter().map(|m| format!("{m:o}")).collect::<Vec<_>>()
        );
        let l = bind_unix(&path, 0o640).unwrap();
        let m = std::fs::symlink_metadata(&path).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o640);
        UnixStream::connect(&path).unwrap();
        drop(l);
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("m.sock")]);
    }
}
