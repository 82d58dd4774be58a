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
/// The estimate scales what ran from the first drain pass past this many
/// records to the first part's end, not from the start: the start (hooks
/// attached, the command not yet sending) has runs without records that the
/// rest does not repeat, and counting from it put 8 % more runs per record
/// into the estimate (16 cores, iperf3, 2026-11-30).
const MARK_RECORDS: u64 = 1_000;

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
    /// Where the first part's estimate starts (after [`MARK_RECORDS`]), if
    /// read; `mark_read`: tried once.
    mark: Option<Mark>,
    mark_read: bool,
}

/// The first part as of the drain pass that passed [`MARK_RECORDS`].
struct Mark {
    /// Records by kind since the opening sockets.
    records: Vec<u64>,
    /// Each program's counters since the start (the order of the meter's).
    progs: Vec<cost::ProgRun>,
    /// Since the start, ns.
    ns: u64,
}

/// Read once the hooks are detached.
pub(super) struct Measured {
    measured: cost::Measured,
    opening: Vec<u64>,
    first: Option<Vec<u64>>,
    mark: Option<Mark>,
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
            mark: None,
            mark_read: false,
        }
    }

    /// Called by the drain as it goes, with the records written so far by
    /// kind: ends the first part once it is long enough.
    pub(super) fn tick(&mut self, by_kind: &[u64]) {
        let Some(since) = self.first_since else {
            return;
        };
        let opening = self.opening.get_or_insert_with(|| by_kind.to_vec());
        // Called at every drain pass: the sum without a vector of its own.
        let records = by_kind
            .iter()
            .sum::<u64>()
            .saturating_sub(opening.iter().sum());
        let on = since.elapsed();
        if records >= MARK_RECORDS && !self.mark_read {
            self.mark_read = true;
            self.mark = self.meter.read_counting().map(|(progs, ns)| Mark {
                records: since_opening(by_kind, opening),
                progs,
                ns,
            });
        }
        if on < FIRST_FOR || (records < FIRST_RECORDS && on < FIRST_AT_MOST) {
            return;
        }
        self.first_since = None;
        if self.meter.end_counting() {
            self.first = Some(since_opening(by_kind, opening));
        }
    }

    pub(super) fn stop(self) -> Measured {
        Measured {
            measured: self.meter.stop(),
            opening: self.opening.unwrap_or_default(),
            first: self.first,
            mark: self.mark,
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

/// How much more a program ran after its first part than in the counted
/// stretch of it from the mark to its end, from what it makes: the records
/// of its own kinds (`kinds`) in that stretch (`first` less `base`, the
/// records at the mark: zeros without one) and after it (`total` less
/// `first`); where it made none in the stretch (a program that keeps state,
/// a kind that did not occur), every kind's; the timer's program, and a run
/// whose stretch wrote nothing, by time (`times`: the mark's, the first
/// part's end and the whole span, ns since the start). Never below 0: the
/// first part is counted.
fn rest_ratio(
    name: &str,
    kinds: &[usize],
    base: &[u64],
    first: &[u64],
    total: &[u64],
    times: (u64, u64, u64),
) -> f64 {
    let sum = |v: &[u64], ks: &mut dyn Iterator<Item = usize>| -> u64 {
        ks.map(|k| v.get(k).copied().unwrap_or(0)).sum()
    };
    let between = |later: &[u64], earlier: &[u64], ks: &[usize]| {
        sum(later, &mut ks.iter().copied()).saturating_sub(sum(earlier, &mut ks.iter().copied()))
    };
    let (mark_ns, counted_ns, span_ns) = times;
    let by_time = if counted_ns > mark_ns {
        span_ns.saturating_sub(counted_ns) as f64 / (counted_ns - mark_ns) as f64
    } else {
        0.0
    };
    if name == TIMER_PROGRAM {
        return by_time;
    }
    let every: Vec<usize> = (0..first.len().max(total.len())).collect();
    for ks in [kinds, &every[..]] {
        let stretch = between(first, base, ks);
        if stretch > 0 {
            return between(total, first, ks) as f64 / stretch as f64;
        }
    }
    by_time
}

/// A program's runs or ns over the whole run: the first part's count, and
/// what it counted past the mark (`at_mark`: 0 without one) times `rest`
/// ([`rest_ratio`]).
fn estimate(counted: u64, at_mark: u64, rest: f64) -> u64 {
    counted + (counted.saturating_sub(at_mark) as f64 * rest).round() as u64
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
                // A mark taken late in the first part (a slow start, the
                // first records in the part's last pass) leaves too short a
                // stretch to scale from: then the whole part is.
                let first_records: u64 = first.iter().sum();
                let mark = self
                    .mark
                    .filter(|mark| mark.records.iter().sum::<u64>() * 2 <= first_records);
                let (base, mark_ns) = match &mark {
                    Some(mark) => (mark.records.clone(), mark.ns),
                    None => (vec![], 0),
                };
                let estimates: Vec<(String, u64, u64)> = m
                    .bpf
                    .iter()
                    .flatten()
                    .enumerate()
                    .map(|(i, (name, r))| {
                        let rest = rest_ratio(
                            name,
                            &kinds_of(name),
                            &base,
                            first,
                            &total,
                            (mark_ns, counted_ns, span_ns.max(counted_ns)),
                        );
                        let at_mark = mark
                            .as_ref()
                            .and_then(|mark| mark.progs.get(i))
                            .copied()
                            .unwrap_or_default();
                        (
                            name.clone(),
                            estimate(r.run_cnt, at_mark.run_cnt, rest),
                            estimate(r.run_time_ns, at_mark.run_time_ns, rest),
                        )
                    })
                    .collect();
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
        // kinds 0 and 1; 2 s of 10 s counted, no mark
        let times = (0, 2_000_000_000, 10_000_000_000);
        let first = [1_000, 4_000];
        let total = [8_000, 6_000];
        let rest = |name, kinds: &[usize], first: &[u64], total: &[u64]| {
            rest_ratio(name, kinds, &[], first, total, times)
        };
        // its own kind: 7 more, whatever the other kind did
        assert_eq!(rest("tcp_sendmsg", &[0], &first, &total), 7.0);
        assert_eq!(rest("app", &[0, 1], &first, &total), 1.8);
        // no kind of its own: every kind's
        assert_eq!(rest("flow_enter_tp", &[], &first, &total), 1.8);
        // its kind did not occur in the first part: every kind's
        assert_eq!(rest("x", &[2], &first, &total), 1.8);
        // the timer: by time
        assert_eq!(rest(TIMER_PROGRAM, &[0], &first, &total), 4.0);
        // nothing written in the first part: by time
        assert_eq!(rest("x", &[0], &[0, 0], &total), 4.0);
        // never below what was counted
        assert_eq!(rest("x", &[0], &[10, 0], &[5, 0]), 0.0);
        // without a mark, the whole first part scaled by total / first
        assert_eq!(estimate(100, 0, 7.0), 800);
    }

    /// With a mark, only the stretch from the mark to the first part's end
    /// is scaled: the start's runs without records are not repeated.
    #[test]
    fn the_first_part_is_scaled_from_its_mark() {
        let base = [500, 0];
        let first = [1_000, 4_000];
        let total = [8_000, 6_000];
        // marked at 1 s, counted to 2 s, 10 s in all
        let times = (1_000_000_000, 2_000_000_000, 10_000_000_000);
        let rest = rest_ratio("tcp_sendmsg", &[0], &base, &first, &total, times);
        assert_eq!(rest, 14.0);
        // 40 runs before the mark (the idle start), 60 in the stretch
        assert_eq!(estimate(100, 40, rest), 100 + 60 * 14);
        assert_eq!(
            rest_ratio(TIMER_PROGRAM, &[0], &base, &first, &total, times),
            8.0
        );
        // every kind's: 4,500 in the stretch, 9,000 after
        assert_eq!(rest_ratio("x", &[], &base, &first, &total, times), 2.0);
    }

    #[test]
    fn records_since_the_opening_sockets() {
        assert_eq!(since_opening(&[5, 10, 3], &[5, 2]), vec![0, 8, 3]);
    }
}
