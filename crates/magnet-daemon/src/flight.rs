//! The flight recorder: the last seconds of full events, kept in memory and
//! written out on request (`magnet dump`, the API's `dump`) or on a trigger
//! (a retransmit burst, a drop reason).
//!
//! It reuses the recorder (`magnet_record::record`) as it is: back-to-back
//! recordings of `seconds / 2` each into a directory on tmpfs
//! (`/run/magnet/flight` by default — memory, not disk), keeping the two
//! newest complete segments and the one being written; older ones are
//! deleted. A segment also ends early at `max_bytes / 3`, so the recorder
//! holds at most about `max_bytes`. A dump ends the current segment (so it is
//! complete up to the request), copies the complete ones, and the next
//! segment starts at once. Between two segments the recorder
//! re-attaches: the gap (typically well under a second) is not covered, and
//! each segment's header says exactly when it started and ended.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use magnet_record::{RecordConfig, RunOptions, Target};

/// `[recorder]` in the config.
#[derive(Clone, Debug, PartialEq)]
pub struct FlightConfig {
    /// How far back a dump reaches (at least).
    pub seconds: Duration,
    /// Bound on what the segments hold together.
    pub max_bytes: u64,
    /// Where segments live (tmpfs).
    pub dir: PathBuf,
    /// Where triggered dumps go.
    pub dump_dir: PathBuf,
    /// Dump when the host retransmits more than this many segments in a second.
    pub trigger_retransmits_per_s: Option<u64>,
    /// Dump when the kernel drops a packet for one of these reasons.
    pub trigger_drop_reasons: Vec<String>,
    /// Dump when a connection's app→wire or wire→app latency sample reaches
    /// this (rounded down to the histogram's power-of-two microseconds).
    pub trigger_latency: Option<Duration>,
    /// Dump when an application lets data wait this long (docs/daemon.md,
    /// "App stall"): unread data with no read returning any, or written data
    /// of which nothing leaves.
    pub trigger_stall: Option<Duration>,
    /// Only connections with one of these local or remote ports count for
    /// the stall trigger (empty: all).
    pub trigger_stall_ports: Vec<u16>,
}

impl Default for FlightConfig {
    fn default() -> FlightConfig {
        FlightConfig {
            seconds: Duration::from_secs(10),
            max_bytes: 256 << 20,
            dir: PathBuf::from("/run/magnet/flight"),
            dump_dir: PathBuf::from("/var/lib/magnet/dumps"),
            trigger_retransmits_per_s: None,
            trigger_drop_reasons: Vec::new(),
            trigger_latency: None,
            trigger_stall: None,
            trigger_stall_ports: Vec::new(),
        }
    }
}

/// The recorder thread's shared state.
pub struct Flight {
    pub config: FlightConfig,
    /// Segments on disk, oldest first: (path, complete).
    segments: Mutex<Vec<(PathBuf, bool)>>,
    /// Events the kernel could not record, over all segments.
    pub lost: std::sync::atomic::AtomicU64,
    running: AtomicBool,
    /// The current segment's stop flag: a dump ends the segment so that it
    /// is complete up to the moment of the request.
    cut: Mutex<Option<Arc<AtomicBool>>>,
}

impl Flight {
    pub fn new(config: FlightConfig) -> Arc<Flight> {
        Arc::new(Flight {
            config,
            segments: Mutex::new(Vec::new()),
            lost: Default::default(),
            running: AtomicBool::new(false),
            cut: Mutex::new(None),
        })
    }

    /// Whether a segment is being recorded now (every hook attached).
    pub fn running(&self) -> bool {
        self.running.load(Ordering::Relaxed)
    }

    /// Records segment after segment until `stop`. Logs through `log`.
    pub fn run(self: &Arc<Self>, stop: Arc<AtomicBool>, log: &(dyn Fn(&str) + Send + Sync)) {
        if let Err(e) = std::fs::create_dir_all(&self.config.dir) {
            log(&format!(
                "flight recorder: {}: {e}",
                self.config.dir.display()
            ));
            return;
        }
        let seg_len = (self.config.seconds / 2).max(Duration::from_secs(1));
        let mut k = 0u64;
        let mut failures = 0;
        while !stop.load(Ordering::Relaxed) {
            k += 1;
            let path = self.config.dir.join(format!("segment-{k:06}.mgt"));
            self.segments
                .lock()
                .expect("segments lock")
                .push((path.clone(), false));
            let seg_stop = Arc::new(AtomicBool::new(false));
            let cap = self.config.max_bytes / 3;
            *self.cut.lock().expect("cut lock") = Some(seg_stop.clone());
            let (s2, outer) = (seg_stop.clone(), stop.clone());
            let opts = RunOptions {
                target: Target::All,
                duration: Some(seg_len),
                stop: seg_stop.clone(),
                progress: Some(Box::new(move |p| {
                    if p.bytes > cap || outer.load(Ordering::Relaxed) {
                        s2.store(true, Ordering::Relaxed);
                    }
                })),
                ready: Some(Box::new({
                    let me = self.clone();
                    move |_| me.running.store(true, Ordering::Relaxed)
                })),
                detached: Some(Box::new({
                    let me = self.clone();
                    move || me.running.store(false, Ordering::Relaxed)
                })),
            };
            let result = magnet_record::record(&RecordConfig::new(path.clone()), opts);
            self.running.store(false, Ordering::Relaxed);
            match result {
                Ok(summary) => {
                    failures = 0;
                    self.lost.fetch_add(
                        summary.lost_kernel + summary.dropped_user,
                        Ordering::Relaxed,
                    );
                    let mut segs = self.segments.lock().expect("segments lock");
                    if let Some(last) = segs.last_mut() {
                        last.1 = true;
                    }
                    // Keep the two newest complete segments (a dump may have
                    // cut the last one short); the next one is about to start.
                    while segs.len() > 2 {
                        let (old, _) = segs.remove(0);
                        let _ = std::fs::remove_file(old);
                    }
                }
                Err(e) => {
                    failures += 1;
                    log(&format!("flight recorder: {e:#}"));
                    let mut segs = self.segments.lock().expect("segments lock");
                    if let Some((p, _)) = segs.pop() {
                        let _ = std::fs::remove_file(p);
                    }
                    drop(segs);
                    if failures >= 3 {
                        log("flight recorder: giving up after 3 failures in a row");
                        return;
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        }
        for (p, _) in self.segments.lock().expect("segments lock").drain(..) {
            let _ = std::fs::remove_file(p);
        }
    }

    /// Writes what the recorder holds into `dir` (created): one trace file
    /// per segment, oldest first, up to now (the current segment is ended
    /// first, and the next one starts right after). Returns the files written.
    pub fn dump(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        let current = self
            .segments
            .lock()
            .expect("segments lock")
            .last()
            .filter(|(_, complete)| !complete)
            .map(|(p, _)| p.clone());
        if let Some(cur) = current {
            if let Some(flag) = self.cut.lock().expect("cut lock").as_ref() {
                flag.store(true, Ordering::Relaxed);
            }
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while std::time::Instant::now() < deadline {
                let done = self
                    .segments
                    .lock()
                    .expect("segments lock")
                    .iter()
                    .any(|(p, c)| *c && *p == cur);
                if done {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let segs: Vec<(PathBuf, bool)> = self
            .segments
            .lock()
            .expect("segments lock")
            .iter()
            .filter(|(_, complete)| *complete)
            .cloned()
            .collect();
        // The directory appears only once there is something to put in it;
        // each file appears whole (copied under a temporary name, renamed).
        std::fs::create_dir_all(dir)?;
        let mut out = Vec::new();
        for (i, (p, complete)) in segs.iter().enumerate() {
            let _ = complete;
            let name = format!("flight-{}.mgt", i + 1);
            let dst = dir.join(&name);
            let tmp = dir.join(format!(".{name}.partial"));
            match std::fs::copy(p, &tmp).and_then(|_| std::fs::rename(&tmp, &dst)) {
                Ok(()) => out.push(dst),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }
}
