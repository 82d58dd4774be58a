//! What the recording costs: the kernel's run-time statistics for the
//! recorder's own programs (held on from before the first hook is attached
//! to after the last is detached), the recorder process's CPU and the
//! machine's CPU over the same span (`magnet_kernel::cost::Meter`).
//!
//! By default (`--bpf-stats first`) the statistics go off once the recording
//! has run [`FIRST_FOR`] and written [`FIRST_RECORDS`] records (or after
//! [`FIRST_AT_MOST`]): while they are on, every BPF program on the host reads
//! the clock twice a run, which on a 16-core machine cost four MTU-sized
//! streams a fifth of their throughput with empty programs (BENCHMARKS.md).
//! The rest of the run's BPF time is estimated per program from what it
//! makes: its counted runs and time scaled by the records of its own kinds
//! (all kinds' for a program that writes none; the per-CPU timer's program,
//! which runs by time, by time). One scale for every program (all records)
//! was 57 % off for a loadgen whose records per call changed as it ran.
//! Turning them off is one flip of the kernel's static key, as `full` makes
//! at its end; `sampled` makes ten a second.

use magnet_kernel::cost;
use magnet_trace::Cost;

/// `--bpf-stats first`: the statistics stay on at least this long…
const FIRST_FOR: std::time::Duration = std::time::Duration::from_secs(2);
/// …and until this many records were written…
const FIRST_RECORDS: u64 = 10_000;
/// …but no longer than this.
const FIRST_AT_MOST: std::time::Duration = std::time::Duration::from_secs(30);

/// The recorder's program that runs on a per-CPU timer, not per event: its
/// time past the first part is scaled by time.
const TIMER_PROGRAM: &str = crate::probes::BATCH_TICK;

/// Started before the first hook is attached.
pub(super) struct Meter {
    meter: cost::Meter,
    /// `--bpf-stats first`, until the statistics went off.
    first_since: Option<std::time::Instant>,
    /// Records by kind written before the first tick: the sockets found at
    /// the start (one record each, however many the host holds), not the
    /// hooks' work.
    opening: Option<Vec<u64>>,
    /// Records by kind the hooks wrote until the statistics went off.
    first: Option<Vec<u64>>,
}

/// Read once the hooks are detached.
pub(super) struct Measured {
    measured: cost::Measured,
    opening: Vec<u64>,
    first: Option<Vec<u64>>,
}

impl Meter {
    /// `object`'s programs are loaded; statistics are turned on here, before
    /// any is attached (a program that is not attached does not run), unless
    /// `stats_off` (record --no-bpf-stats); for the whole recording, or with
    /// `sampled` (--bpf-stats sampled) past its first seconds in windows.
    /// With neither `sampled` nor `full`: on until [`Meter::tick`] ends
    /// the first part.
    pub(super) fn start(
        object: &libbpf_rs::Object,
        stats_off: bool,
        sampled: bool,
        full: bool,
    ) -> Meter {
        let stats = cost::run_time_stats_unless(stats_off.then_some("--no-bpf-stats"));
        let plan = if sampled {
            cost::StatsPlan::SAMPLED
        } else {
            cost::StatsPlan::Full
        };
        Meter {
            meter: cost::Meter::start_with(stats, plan, object),
            first_since: (!sampled && !full && !stats_off).then(std::time::Instant::now),
            opening: None,
            first: None,
        }
    }

    /// Called by the drain as it goes, with the records written so far by
    /// kind: ends the first part once it is long enough.
    pub(super) fn tick(&mut self, by_kind: &[u64]) {
        let Some(since) = self.first_since else {
            return;
        };
        let opening = self.opening.get_or_insert_with(|| by_kind.to_vec());
        let written: Vec<u64> = since_opening(by_kind, opening);
        let records: u64 = written.iter().sum();
        let on = since.elapsed();
        if on < FIRST_FOR || (records < FIRST_RECORDS && on < FIRST_AT_MOST) {
            return;
        }
        self.first_since = None;
        if self.meter.end_counting() {
            self.first = Some(written);
        }
    }

    pub(super) fn stop(self) -> Measured {
        Measured {
            measured: self.meter.stop(),
            opening: self.opening.unwrap_or_default(),
            first: self.first,
        }
    }
}

/// Records by kind written since `opening` (kinds `opening` lacks: all).
fn since_opening(by_kind: &[u64], opening: &[u64]) -> Vec<u64> {
    by_kind
        .iter()
        .enumerate()
        .map(|(k, n)| n.saturating_sub(opening.get(k).copied().unwrap_or(0)))
        .collect()
}

/// How much longer than its first part a program ran, from what it makes:
/// the records of its own kinds (`kinds`), written in the first part and in
/// all; where it makes none there (a program that keeps state, a kind that
/// did not occur), every kind's; the timer's program, and a run whose first
/// part wrote nothing, by time. Never below 1: the first part is counted.
fn first_factor(
    name: &str,
    kinds: &[usize],
    first: &[u64],
    total: &[u64],
    span_ns: (u64, u64),
) -> f64 {
    let sum = |v: &[u64], ks: &mut dyn Iterator<Item = usize>| -> u64 {
        ks.map(|k| v.get(k).copied().unwrap_or(0)).sum()
    };
    let (counted_ns, total_ns) = span_ns;
    let by_time = if counted_ns > 0 {
        total_ns as f64 / counted_ns as f64
    } else {
        1.0
    };
    let factor = if name == TIMER_PROGRAM {
        by_time
    } else {
        let own = sum(first, &mut kinds.iter().copied());
        let all = sum(first, &mut (0..first.len()));
        if own > 0 {
            sum(total, &mut kinds.iter().copied()) as f64 / own as f64
        } else if all > 0 {
            sum(total, &mut (0..total.len())) as f64 / all as f64
        } else {
            by_time
        }
    };
    factor.max(1.0)
}

impl Measured {
    /// `by_kind`: the trace's records by kind; `kinds_of`: the kinds a
    /// program writes (for `--bpf-stats first`'s estimate).
    pub(super) fn cost(
        self,
        events: u64,
        drain_cpu_ns: u64,
        by_kind: &[u64],
        kinds_of: &dyn Fn(&str) -> Vec<usize>,
    ) -> Cost {
        let m = self.measured;
        let span_ns = m.span_ns;
        let skipped: Vec<(String, u64)> = m
            .bpf
            .iter()
            .flatten()
            .map(|(name, r)| (name.clone(), r.recursion_misses))
            .collect();
        // The windows' programs are the measured ones, in the same order.
        let sampled = m.windows.as_ref().map(|w| {
            let estimates: Vec<(String, u64, u64)> = m
                .bpf
                .iter()
                .flatten()
                .enumerate()
                .map(|(i, (name, _))| (name.clone(), w.estimated_runs(i), w.estimated_ns(i)))
                .collect();
            let s = magnet_trace::Sampled {
                full_ns: w.full_ns,
                windows: w.windows,
                windows_ns: w.windows_ns,
                sampled_span_ns: w.sampled_span_ns,
                ..Default::default()
            };
            (s, estimates)
        });
        // --bpf-stats first, in a run that outlasted its first part.
        let first = match (m.counted_ns, &self.first) {
            (Some(counted_ns), Some(first)) => {
                let total = since_opening(by_kind, &self.opening);
                let estimates: Vec<(String, u64, u64)> = m
                    .bpf
                    .iter()
                    .flatten()
                    .map(|(name, r)| {
                        let f = first_factor(
                            name,
                            &kinds_of(name),
                            first,
                            &total,
                            (counted_ns, span_ns.max(counted_ns)),
                        );
                        let scaled = |n: u64| (n as f64 * f).round() as u64;
                        (name.clone(), scaled(r.run_cnt), scaled(r.run_time_ns))
                    })
                    .collect();
                let first_records = first.iter().sum();
                let s = magnet_trace::Sampled {
                    full_ns: counted_ns,
                    sampled_span_ns: span_ns.saturating_sub(counted_ns),
                    full_records: first_records,
                    ..Default::default()
                };
                Some((s, estimates))
            }
            _ => None,
        };
        let sampled = sampled.or(first);
        let bpf = m.bpf.map(|progs| {
            progs
                .into_iter()
                .map(|(name, r)| (name, r.run_cnt, r.run_time_ns))
                .collect()
        });
        let mut cost = Cost::new(
            events,
            bpf,
            drain_cpu_ns,
            m.process_cpu_ns,
            m.machine_cpu_ns,
        );
        cost.set_skipped(&skipped);
        cost.direct_records = super::attach::direct_records();
        if let Some((s, estimates)) = sampled {
            cost.set_sampled(s, &estimates);
        }
        cost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_part_scales_by_own_kinds_then_all_then_time() {
        // kinds 0 and 1; 2 s of 10 s counted
        let span = (2_000_000_000, 10_000_000_000);
        let first = [1_000, 4_000];
        let total = [8_000, 6_000];
        // its own kind: 8x, whatever the other kind did
        assert_eq!(first_factor("tcp_sendmsg", &[0], &first, &total, span), 8.0);
        assert_eq!(first_factor("app", &[0, 1], &first, &total, span), 2.8);
        // no kind of its own: every kind's
        assert_eq!(
            first_factor("flow_enter_tp", &[], &first, &total, span),
            2.8
        );
        // its kind did not occur in the first part: every kind's
        assert_eq!(first_factor("x", &[2], &first, &total, span), 2.8);
        // the timer: by time
        assert_eq!(first_factor(TIMER_PROGRAM, &[0], &first, &total, span), 5.0);
        // nothing written in the first part: by time
        assert_eq!(first_factor("x", &[0], &[0, 0], &total, span), 5.0);
        // never below what was counted
        assert_eq!(first_factor("x", &[0], &[10, 0], &[5, 0], span), 1.0);
    }

    #[test]
    fn records_since_the_opening_sockets() {
        assert_eq!(since_opening(&[5, 10, 3], &[5, 2]), vec![0, 8, 3]);
    }
}
