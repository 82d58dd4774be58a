//! What a recording cost, as the END block keeps it (`cost`) and `record` and
//! `info` show it: the BPF programs' run time (the kernel's run-time
//! statistics) and the recorder's own CPU, per event and as a share of the
//! machine's CPU time over the recording. Traces written before it existed
//! have none: readers say "cost not recorded".

use serde::{Deserialize, Serialize};

/// One BPF program's run time over the recording.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProgramCost {
    pub name: String,
    /// Times it ran.
    pub runs: u64,
    /// Time it ran, ns.
    pub ns: u64,
    /// `ns / runs` (0 when it never ran).
    pub ns_per_run: f64,
    /// Times the kernel skipped it because it was already running on that
    /// CPU (`recursion_misses`): its events of those times are missing.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped: u64,
    /// Sampled statistics (`Cost::bpf_sampled`): the whole recording's runs
    /// and time, the full part as counted and the windows' part scaled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_runs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_ns: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl ProgramCost {
    pub fn new(name: String, runs: u64, ns: u64) -> ProgramCost {
        ProgramCost {
            name,
            runs,
            ns,
            ns_per_run: if runs == 0 {
                0.0
            } else {
                ns as f64 / runs as f64
            },
            skipped: 0,
            estimated_runs: None,
            estimated_ns: None,
        }
    }
}

pub use magnet_common::bpf_stats::Sampled;

/// The recording's cost. Shares are of `machine_cpu_ns`: the CPU time of
/// every CPU of the machine, busy and idle (/proc/stat's `cpu` line), from
/// the first hook attached to the last one detached, i.e. that span times
/// the number of online CPUs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// Records the trace holds (LOST and SOCK records included): the
    /// "per event" denominator.
    pub events: u64,
    /// Total run time of the recorder's BPF programs, ns (the sum of
    /// `programs`); absent when it was not measured (`bpf_not_measured`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_ns: Option<u64>,
    /// Why BPF run time was not measured (the kernel refused run-time
    /// statistics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_not_measured: Option<String>,
    /// Every loaded program, the most costly first (those that never ran too),
    /// as the kernel counted them (what bpftool shows).
    #[serde(default)]
    pub programs: Vec<ProgramCost>,
    /// Set when the statistics were on for part of the recording only
    /// (`--bpf-stats sampled`): then
    /// `bpf_ns` is what they counted, and the per-event figure and the share
    /// are of `bpf_sampled.estimated_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_sampled: Option<Sampled>,
    /// `bpf_ns / events` (sampled: the estimate's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_ns_per_event: Option<f64>,
    /// CPU time (user + system) of the drain thread (rings to blocks), ns.
    pub drain_cpu_ns: u64,
    pub drain_ns_per_event: f64,
    /// CPU time of the whole recorder process over the same span (drain,
    /// writer and main thread: all of its user-space cost), ns.
    pub process_cpu_ns: u64,
    pub process_ns_per_event: f64,
    /// The denominator of the shares, ns (0: /proc/stat unreadable, no shares).
    pub machine_cpu_ns: u64,
    /// `bpf_ns / machine_cpu_ns` (sampled: the estimate's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_share: Option<f64>,
    /// `process_cpu_ns / machine_cpu_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_share: Option<f64>,
    /// Runs the kernel skipped, every program's `skipped` summed: events
    /// missing from the trace that no LOST record counts. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped_runs: u64,
    /// Why the recorder's records went to the ring one at a time instead
    /// of in per-CPU batches (a kernel that may preempt its programs: safe,
    /// and each record costs more); absent when they were batched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_records: Option<String>,
}

// The ratios are quotients of integers with a non-zero divisor, never NaN:
// equality is total (the END block's `Footer` compares as `Eq`).
impl Eq for ProgramCost {}
impl Eq for Cost {}

fn per(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        n as f64 / d as f64
    }
}

impl Cost {
    /// Builds the figures from what was measured: `bpf` is every program's
    /// (name, runs, ns), or why it was not measured.
    pub fn new(
        events: u64,
        bpf: Result<Vec<(String, u64, u64)>, String>,
        drain_cpu_ns: u64,
        process_cpu_ns: u64,
        machine_cpu_ns: u64,
    ) -> Cost {
        let share = |n: u64| (machine_cpu_ns > 0).then(|| per(n, machine_cpu_ns));
        let (programs, bpf_ns, bpf_not_measured) = match bpf {
            Ok(progs) => {
                let mut programs: Vec<ProgramCost> = progs
                    .into_iter()
                    .map(|(name, runs, ns)| ProgramCost::new(name, runs, ns))
                    .collect();
                programs.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.name.cmp(&b.name)));
                let total = programs.iter().map(|p| p.ns).sum::<u64>();
                (programs, Some(total), None)
            }
            Err(why) => (Vec::new(), None, Some(why)),
        };
        Cost {
            events,
            bpf_ns,
            bpf_not_measured,
            programs,
            bpf_sampled: None,
            bpf_ns_per_event: bpf_ns.map(|n| per(n, events)),
            drain_cpu_ns,
            drain_ns_per_event: per(drain_cpu_ns, events),
            process_cpu_ns,
            process_ns_per_event: per(process_cpu_ns, events),
            machine_cpu_ns,
            bpf_share: bpf_ns.and_then(share),
            process_share: share(process_cpu_ns),
            skipped_runs: 0,
            direct_records: None,
        }
    }

    /// The statistics were on for part of the recording only: each
    /// program's estimate (name, runs, ns) for the whole recording, and the
    /// per-event figure and the share become their sum's.
    pub fn set_sampled(&mut self, mut sampled: Sampled, estimates: &[(String, u64, u64)]) {
        if self.bpf_ns.is_none() {
            return;
        }
        for (name, runs, ns) in estimates {
            if let Some(p) = self.programs.iter_mut().find(|p| &p.name == name) {
                p.estimated_runs = Some(*runs);
                p.estimated_ns = Some(*ns);
            }
        }
        sampled.estimated_ns = self.programs.iter().filter_map(|p| p.estimated_ns).sum();
        let est = sampled.estimated_ns;
        self.bpf_ns_per_event = Some(per(est, self.events));
        self.bpf_share = (self.machine_cpu_ns > 0).then(|| per(est, self.machine_cpu_ns));
        self.bpf_sampled = Some(sampled);
    }

    /// Records the runs the kernel skipped, by program name (those not in
    /// `programs` are left out: not measured).
    pub fn set_skipped(&mut self, skipped: &[(String, u64)]) {
        for (name, n) in skipped {
            if let Some(p) = self.programs.iter_mut().find(|p| &p.name == name) {
                p.skipped = *n;
            }
        }
        self.skipped_runs = self.programs.iter().map(|p| p.skipped).sum();
    }

    /// The warning skipped runs call for, if any (one line, no prefix).
    pub fn skipped_line(&self) -> Option<String> {
        if self.skipped_runs == 0 {
            return None;
        }
        let mut by: Vec<&ProgramCost> = self.programs.iter().filter(|p| p.skipped > 0).collect();
        by.sort_by(|a, b| b.skipped.cmp(&a.skipped).then_with(|| a.name.cmp(&b.name)));
        let list: Vec<String> = by
            .iter()
            .map(|p| format!("{} {}", p.name, p.skipped))
            .collect();
        Some(format!(
            "the kernel skipped {} runs of the programs (already running on that CPU: bpf_prog_info.recursion_misses): their events are missing, and no LOST record counts them ({})",
            self.skipped_runs,
            list.join(", ")
        ))
    }

    /// The cost in a few lines (no prefix), with the `top` most costly
    /// programs; what `record` prints at the end and `info` shows.
    pub fn lines(&self, top: usize) -> Vec<String> {
        let ms = |ns: u64| format!("{:.2} ms", ns as f64 / 1e6);
        let pct = |s: Option<f64>| match s {
            Some(s) => format!("{:.3}%", s * 100.0),
            None => "share unknown".into(),
        };
        // With no record in the trace there is no per-event figure: "0 ns
        // per event" would read as free.
        let per_event = |ns: f64| match self.events {
            0 => "no events to share it".to_string(),
            _ => format!("{ns:.0} ns per event"),
        };
        let mut out = Vec::new();
        match (self.bpf_ns, &self.bpf_not_measured) {
            (Some(ns), _) => {
                let ran = self.programs.iter().filter(|p| p.runs > 0).count();
                let runs: u64 = self.programs.iter().map(|p| p.runs).sum();
                let counted = format!(
                    "{} in {runs} runs of {ran} programs ({} loaded)",
                    ms(ns),
                    self.programs.len()
                );
                match &self.bpf_sampled {
                    None => out.push(format!(
                        "BPF time: {counted} = {}, {} of the machine's CPU",
                        per_event(self.bpf_ns_per_event.unwrap_or(0.0)),
                        pct(self.bpf_share)
                    )),
                    Some(s) => out.push(format!(
                        "BPF time: {} estimated = {}, {} of the machine's CPU ({}; counted: {counted}; --bpf-stats full counts all)",
                        ms(s.estimated_ns),
                        per_event(self.bpf_ns_per_event.unwrap_or(0.0)),
                        pct(self.bpf_share),
                        s.how(),
                    )),
                }
            }
            (None, why) => out.push(format!(
                "BPF time: not measured ({})",
                why.as_deref().unwrap_or("no reason given")
            )),
        }
        out.push(format!(
            "drain CPU: {} = {}; recorder process CPU (drain, writer, main): {} = {}, {} of the machine's CPU",
            ms(self.drain_cpu_ns),
            per_event(self.drain_ns_per_event),
            ms(self.process_cpu_ns),
            per_event(self.process_ns_per_event),
            pct(self.process_share)
        ));
        if self.machine_cpu_ns > 0 {
            out.push(format!(
                "(per event: of the {} records in the trace; shares: of all CPUs' time, busy and idle, /proc/stat, from attach to detach: {:.2} CPU-seconds)",
                self.events,
                self.machine_cpu_ns as f64 / 1e9
            ));
        } else {
            out.push(format!(
                "(per event: of the {} records in the trace; no shares: /proc/stat was not readable)",
                self.events
            ));
        }
        let top: Vec<String> = self
            .programs
            .iter()
            .filter(|p| p.runs > 0)
            .take(top)
            .map(|p| {
                format!(
                    "{} {} ({} runs, {:.0} ns/run)",
                    p.name,
                    ms(p.ns),
                    p.runs,
                    p.ns_per_run
                )
            })
            .collect();
        if !top.is_empty() {
            out.push(format!("top programs: {}", top.join(", ")));
        }
        if let Some(why) = &self.direct_records {
            out.push(format!(
                "records went to the ring one at a time, not in per-CPU batches: {why}"
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_add_up() {
        let c = Cost::new(
            1000,
            Ok(vec![
                ("a".into(), 10, 5_000),
                ("b".into(), 0, 0),
                ("c".into(), 40, 20_000),
            ]),
            300_000,
            500_000,
            10_000_000,
        );
        assert_eq!(c.bpf_ns, Some(25_000));
        assert_eq!(c.bpf_ns_per_event, Some(25.0));
        assert_eq!(c.drain_ns_per_event, 300.0);
        assert_eq!(c.process_ns_per_event, 500.0);
        assert_eq!(c.bpf_share, Some(0.0025));
        assert_eq!(c.process_share, Some(0.05));
        let names: Vec<&str> = c.programs.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["c", "a", "b"]);
        assert_eq!(c.programs[0].ns_per_run, 500.0);
        let text = c.lines(5).join("\n");
        assert!(text.contains("BPF time: 0.03 ms in 50 runs of 2 programs (3 loaded) = 25 ns per event, 0.250% of the machine's CPU"), "{text}");
        assert!(
            text.contains("drain CPU: 0.30 ms = 300 ns per event"),
            "{text}"
        );
        assert!(
            text.contains(
                "top programs: c 0.02 ms (40 runs, 500 ns/run), a 0.01 ms (10 runs, 500 ns/run)"
            ),
            "{text}"
        );
        // What the END block keeps reads back the same.
        let back: Cost = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn records_written_one_at_a_time_are_said_and_kept() {
        let mut c = Cost::new(10, Ok(vec![("a".into(), 10, 5_000)]), 1, 1, 1);
        assert!(!c.lines(5).iter().any(|l| l.contains("one at a time")));
        assert!(serde_json::to_value(&c)
            .unwrap()
            .get("direct_records")
            .is_none());
        c.direct_records = Some("this kernel may preempt (full)".into());
        let last = c.lines(5).pop().unwrap();
        assert_eq!(
            last,
            "records went to the ring one at a time, not in per-CPU batches: this kernel may preempt (full)"
        );
        let back: Cost = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn skipped_runs_are_summed_and_named() {
        let mut c = Cost::new(
            10,
            Ok(vec![("a".into(), 10, 5_000), ("b".into(), 4, 100)]),
            1,
            1,
            1,
        );
        assert_eq!(c.skipped_line(), None);
        assert!(serde_json::to_value(&c)
            .unwrap()
            .get("skipped_runs")
            .is_none());
        c.set_skipped(&[("a".into(), 2), ("b".into(), 3), ("gone".into(), 9)]);
        assert_eq!(c.skipped_runs, 5);
        let line = c.skipped_line().unwrap();
        assert!(
            line.contains("skipped 5 runs") && line.ends_with("(b 3, a 2)"),
            "{line}"
        );
        let back: Cost = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn a_sampled_run_gives_its_estimate_per_event_and_as_a_share() {
        let mut c = Cost::new(
            1000,
            Ok(vec![("a".into(), 10, 5_000), ("b".into(), 40, 20_000)]),
            300_000,
            500_000,
            10_000_000,
        );
        c.set_sampled(
            Sampled {
                full_ns: 2_000_000_000,
                windows: 25,
                windows_ns: 500_000_000,
                sampled_span_ns: 5_000_000_000,
                estimated_ns: 0,
                ..Default::default()
            },
            &[("a".into(), 30, 15_000), ("b".into(), 170, 85_000)],
        );
        assert_eq!(c.bpf_sampled.as_ref().unwrap().estimated_ns, 100_000);
        assert_eq!(
            (c.programs[0].estimated_runs, c.programs[0].estimated_ns),
            (Some(170), Some(85_000))
        );
        // What the kernel counted stays what bpftool shows.
        assert_eq!(c.bpf_ns, Some(25_000));
        assert_eq!(c.bpf_ns_per_event, Some(100.0));
        assert_eq!(c.bpf_share, Some(0.01));
        let text = c.lines(5).join("\n");
        assert!(
            text.starts_with("BPF time: 0.10 ms estimated = 100 ns per event, 1.000% of the machine's CPU (the kernel's statistics were on for the first 2.0 s, then in 25 windows, 10.0% of the next 5.0 s; counted: 0.03 ms in 50 runs of 2 programs (2 loaded);"),
            "{text}"
        );
        let back: Cost = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
        // Not measured: nothing to estimate.
        let mut off = Cost::new(10, Err("off".into()), 1, 1, 1);
        off.set_sampled(Sampled::default(), &[]);
        assert_eq!((off.bpf_sampled, off.bpf_share), (None, None));
    }

    #[test]
    fn no_events_is_no_per_event_figure() {
        let c = Cost::new(
            0,
            Ok(vec![("a".into(), 10, 5_000)]),
            300_000,
            500_000,
            10_000_000,
        );
        let text = c.lines(5).join("\n");
        assert!(!text.contains("ns per event"), "{text}");
        assert!(text.contains("= no events to share it"), "{text}");
    }

    #[test]
    fn not_measured_says_why_and_guesses_nothing() {
        let c = Cost::new(10, Err("the kernel refused".into()), 100, 200, 0);
        assert_eq!(
            (c.bpf_ns, c.bpf_ns_per_event, c.bpf_share),
            (None, None, None)
        );
        let text = c.lines(5).join("\n");
        assert!(
            text.starts_with("BPF time: not measured (the kernel refused)"),
            "{text}"
        );
        assert!(text.contains("no shares"), "{text}");
        let json = serde_json::to_value(&c).unwrap();
        assert!(json.get("bpf_ns").is_none());
        assert_eq!(json["bpf_not_measured"], "the kernel refused");
    }
}
