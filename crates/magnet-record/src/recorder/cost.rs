//! What the recording costs: the kernel's run-time statistics for the
//! recorder's own programs (held on from before the first hook is attached
//! to after the last is detached), the recorder process's CPU and the
//! machine's CPU over the same span (`magnet_kernel::cost::Meter`).

use magnet_kernel::cost;
use magnet_trace::Cost;

/// Started before the first hook is attached.
pub(super) struct Meter(cost::Meter);

/// Read once the hooks are detached.
pub(super) struct Measured(cost::Measured);

impl Meter {
    /// `object`'s programs are loaded; statistics are turned on here, before
    /// any is attached (a program that is not attached does not run), unless
    /// `stats_off` (record --no-bpf-stats); for the whole recording, or with
    /// `sampled` (--bpf-stats sampled) past its first seconds in windows.
    pub(super) fn start(object: &libbpf_rs::Object, stats_off: bool, sampled: bool) -> Meter {
        let stats = cost::run_time_stats_unless(stats_off.then_some("--no-bpf-stats"));
        let plan = if sampled {
            cost::StatsPlan::SAMPLED
        } else {
            cost::StatsPlan::Full
        };
        Meter(cost::Meter::start_with(stats, plan, object))
    }

    pub(super) fn stop(self) -> Measured {
        Measured(self.0.stop())
    }
}

impl Measured {
    pub(super) fn cost(self, events: u64, drain_cpu_ns: u64) -> Cost {
        let m = self.0;
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
                estimated_ns: 0,
            };
            (s, estimates)
        });
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
