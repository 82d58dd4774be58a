//! When the sampled programs were attached (`packet_hooks = "sampled"`,
//! `stage_hooks = "sampled"`: both keep the same windows): a bounded log of
//! the windows, from which every answer says what fraction of a connection's
//! life its latency histograms and its stages cover, and what attaching and
//! detaching cost.
//!
//! Times are CLOCK_MONOTONIC nanoseconds, the clock of `bpf_ktime_get_ns`
//! that the connection records use.

use std::collections::VecDeque;
use std::time::Duration;

use crate::config::{PacketHooks, StageHooks};

/// Windows kept in the log (at the default 2 s period, the last 2.3 hours);
/// time before the oldest one is counted at the nominal window/period.
pub const LOG_WINDOWS: usize = 4096;

/// The windows so far and what switching cost.
#[derive(Debug)]
pub struct WindowLog {
    pub mode: PacketHooks,
    /// When the stage programs are attached.
    pub stage_mode: StageHooks,
    /// When the log starts (magnetd attached its programs).
    pub started_ns: u64,
    /// Closed windows, oldest first: (attached at, detached at).
    log: VecDeque<(u64, u64)>,
    /// The window open now, since.
    open_since: Option<u64>,
    /// Windows opened since start.
    pub windows: u64,
    /// Windows that could not be opened (attach failed).
    pub failures: u64,
    /// Time spent creating the two links, and destroying them.
    pub attach_total: Duration,
    pub detach_total: Duration,
    pub attach_max: Duration,
    pub detach_max: Duration,
}

impl WindowLog {
    pub fn new(mode: PacketHooks, stage_mode: StageHooks, now_ns: u64) -> WindowLog {
        WindowLog {
            mode,
            stage_mode,
            started_ns: now_ns,
            log: VecDeque::new(),
            open_since: None,
            windows: 0,
            failures: 0,
            attach_total: Duration::ZERO,
            detach_total: Duration::ZERO,
            attach_max: Duration::ZERO,
            detach_max: Duration::ZERO,
        }
    }

    /// The programs were attached at `at_ns`; creating the links took `cost`.
    pub fn opened(&mut self, at_ns: u64, cost: Duration) {
        self.open_since = Some(at_ns);
        self.windows += 1;
        self.attach_total += cost;
        self.attach_max = self.attach_max.max(cost);
    }

    /// The programs stopped watching at `at_ns`; destroying the links took `cost`.
    pub fn closed(&mut self, at_ns: u64, cost: Duration) {
        if let Some(s) = self.open_since.take() {
            if self.log.len() == LOG_WINDOWS {
                self.log.pop_front();
            }
            self.log.push_back((s, at_ns.max(s)));
        }
        self.detach_total += cost;
        self.detach_max = self.detach_max.max(cost);
    }

    /// Whether the per-packet programs are attached now.
    pub fn is_open(&self) -> bool {
        match self.mode {
            PacketHooks::Always => true,
            PacketHooks::Off => false,
            PacketHooks::Sampled { .. } => self.open_since.is_some(),
        }
    }

    /// The fraction of [from_ns, to_ns] during which the per-packet programs
    /// were attached: 1 with "always", 0 with "off".
    pub fn coverage(&self, from_ns: u64, to_ns: u64) -> f64 {
        match self.mode {
            PacketHooks::Always => 1.0,
            PacketHooks::Off => 0.0,
            PacketHooks::Sampled { window, period } => self.covered(window, period, from_ns, to_ns),
        }
    }

    /// The fraction of [from_ns, to_ns] during which the stage programs were
    /// attached: 1 with "always".
    pub fn stage_coverage(&self, from_ns: u64, to_ns: u64) -> f64 {
        match self.stage_mode {
            StageHooks::Always => 1.0,
            StageHooks::Sampled { window, period } => self.covered(window, period, from_ns, to_ns),
        }
    }

    /// The fraction of [from_ns, to_ns] inside the logged windows, whose
    /// nominal schedule is `window` in every `period`.
    fn covered(&self, window: Duration, period: Duration, from_ns: u64, to_ns: u64) -> f64 {
        let from = from_ns.max(self.started_ns);
        if to_ns <= from {
            return 0.0;
        }
        let overlap = |(s, e): (u64, u64)| e.min(to_ns).saturating_sub(s.max(from));
        let mut covered: u64 = self.log.iter().map(|&w| overlap(w)).sum();
        if let Some(s) = self.open_since {
            covered += overlap((s, to_ns));
        }
        // The log's oldest window dropped: count what came before it at the
        // nominal fraction.
        if self.log.len() == LOG_WINDOWS {
            let oldest = self.log.front().map_or(to_ns, |w| w.0);
            if from < oldest {
                let nominal = window.as_secs_f64() / period.as_secs_f64();
                covered += ((oldest.min(to_ns) - from) as f64 * nominal) as u64;
            }
        }
        (covered as f64 / (to_ns - from) as f64).clamp(0.0, 1.0)
    }

    /// Seconds spent creating and destroying the windows' links.
    pub fn switch_seconds(&self) -> f64 {
        (self.attach_total + self.detach_total).as_secs_f64()
    }

    /// One line for the log at stop: how many windows and what they cost.
    pub fn summary(&self) -> String {
        let mean = |t: Duration| {
            if self.windows == 0 {
                0.0
            } else {
                t.as_secs_f64() * 1e6 / self.windows as f64
            }
        };
        format!(
            "sampling windows: {} opened ({} failed); attaching their links took {:.0} us on \
             average (max {:.0} us), destroying them {:.0} us (max {:.0} us)",
            self.windows,
            self.failures,
            mean(self.attach_total),
            self.attach_max.as_secs_f64() * 1e6,
            mean(self.detach_total),
            self.detach_max.as_secs_f64() * 1e6
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn sampled() -> PacketHooks {
        PacketHooks::Sampled {
            window: Duration::from_millis(100),
            period: Duration::from_secs(1),
        }
    }

    #[test]
    fn coverage_counts_the_windows_inside_the_span() {
        let mut w = WindowLog::new(sampled(), StageHooks::Always, 0);
        // windows [0,100) [1000,1100) [2000,2100) ms, the last still open
        for k in 0..3u64 {
            w.opened(k * 1000 * MS, Duration::from_micros(300));
            if k < 2 {
                w.closed((k * 1000 + 100) * MS, Duration::from_micros(100));
            }
        }
        assert!(w.is_open());
        assert_eq!(w.coverage(0, 2000 * MS), 0.1);
        // half of the first window, none of the second
        assert_eq!(w.coverage(50 * MS, 1000 * MS), 50.0 / 950.0);
        // the open window counts up to `to`
        assert_eq!(w.coverage(2000 * MS, 2050 * MS), 1.0);
        assert_eq!(w.coverage(500 * MS, 500 * MS), 0.0);
        assert_eq!(w.stage_coverage(0, 2000 * MS), 1.0);
        assert_eq!(w.windows, 3);
        assert!(
            w.summary().contains("3 opened (0 failed)"),
            "{}",
            w.summary()
        );
        assert_eq!(
            WindowLog::new(PacketHooks::Always, StageHooks::Always, 0).coverage(0, 5),
            1.0
        );
        assert_eq!(
            WindowLog::new(PacketHooks::Off, StageHooks::Always, 0).coverage(0, 5),
            0.0
        );
    }

    #[test]
    fn stage_windows_are_counted_whatever_the_packet_mode() {
        // packet programs off, stage programs in windows of 100 ms every 1 s
        let stages = StageHooks::Sampled {
            window: Duration::from_millis(100),
            period: Duration::from_secs(1),
        };
        let mut w = WindowLog::new(PacketHooks::Off, stages, 0);
        w.opened(0, Duration::ZERO);
        w.closed(100 * MS, Duration::ZERO);
        w.opened(1000 * MS, Duration::ZERO);
        assert!(!w.is_open(), "the packet programs are off");
        assert_eq!(w.coverage(0, 1050 * MS), 0.0);
        assert_eq!(w.stage_coverage(0, 2000 * MS), 1100.0 / 2000.0);
        assert_eq!(w.stage_coverage(100 * MS, 1000 * MS), 0.0);
    }

    #[test]
    fn a_full_log_counts_older_time_at_the_nominal_fraction() {
        let mut w = WindowLog::new(sampled(), StageHooks::Always, 0);
        for k in 0..(LOG_WINDOWS as u64 + 10) {
            w.opened(k * 1000 * MS, Duration::ZERO);
            w.closed((k * 1000 + 100) * MS, Duration::ZERO);
        }
        let end = (LOG_WINDOWS as u64 + 10) * 1000 * MS;
        let c = w.coverage(0, end);
        assert!((c - 0.1).abs() < 1e-6, "{c}");
    }
}
