//! What the recording costs: the kernel's run-time statistics for the
//! recorder's own programs (held on from before the first hook is attached
//! to after the last is detached), the recorder process's CPU and the
//! machine's CPU over the same span.

use std::os::fd::{AsFd, OwnedFd};

use magnet_kernel::cost::{self, ProgRun, RunTimeStats};
use magnet_trace::Cost;

/// Started before the first hook is attached.
pub(super) struct Meter {
    /// Run-time statistics on, with every loaded program and its counters at
    /// the start (subtracted at the end: whatever ran before, e.g. while
    /// stats were on through the sysctl, is not this recording's); or why not.
    bpf: Result<(RunTimeStats, Vec<(String, OwnedFd, ProgRun)>), String>,
    process0: u64,
    machine0: Option<u64>,
}

/// Read once the hooks are detached.
pub(super) struct Measured {
    bpf: Result<Vec<(String, u64, u64)>, String>,
    process_cpu_ns: u64,
    machine_cpu_ns: u64,
}

impl Meter {
    pub(super) fn start(object: &libbpf_rs::Object) -> Meter {
        let bpf = cost::enable_run_time_stats().and_then(|on| {
            let mut progs = Vec::new();
            for (name, fd) in cost::loaded_programs(object) {
                let run = cost::prog_run(fd.as_fd()).map_err(|e| format!("{name}: {e}"))?;
                progs.push((name, fd, run));
            }
            Ok((on, progs))
        });
        Meter {
            bpf,
            process0: cost::process_cpu_ns(),
            machine0: cost::machine_cpu_ns().ok(),
        }
    }

    /// Reads the counters again (the programs no longer run) and lets the
    /// statistics go off.
    pub(super) fn stop(self) -> Measured {
        let machine1 = cost::machine_cpu_ns().ok();
        let process_cpu_ns = cost::process_cpu_ns().saturating_sub(self.process0);
        let bpf = self.bpf.and_then(|(on, progs)| {
            let out = progs
                .iter()
                .map(|(name, fd, at_start)| {
                    let now = cost::prog_run(fd.as_fd()).map_err(|e| format!("{name}: {e}"))?;
                    let d = now.since(at_start);
                    Ok((name.clone(), d.run_cnt, d.run_time_ns))
                })
                .collect::<Result<Vec<_>, String>>();
            drop(on);
            out
        });
        Measured {
            bpf,
            process_cpu_ns,
            machine_cpu_ns: match (self.machine0, machine1) {
                (Some(a), Some(b)) => b.saturating_sub(a),
                _ => 0,
            },
        }
    }
}

impl Measured {
    pub(super) fn cost(self, events: u64, drain_cpu_ns: u64) -> Cost {
        Cost::new(
            events,
            self.bpf,
            drain_cpu_ns,
            self.process_cpu_ns,
            self.machine_cpu_ns,
        )
    }
}
