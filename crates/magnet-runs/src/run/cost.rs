//! What a sampler run cost.

use serde::{Deserialize, Serialize};

/// What a sampler run cost, from attach to detach: the run time of its BPF
/// programs (the kernel's run-time statistics) and the sampler process's
/// CPU, per packet counted (in + out) and as a share of the machine's CPU
/// over the same span (all CPUs, busy and idle, /proc/stat).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunCost {
    /// Packets the run counted, in and out: the "per packet" denominator.
    pub packets: u64,
    /// Sum of `programs`' ns; absent when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_ns: Option<u64>,
    /// Why BPF run time was not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_not_measured: Option<String>,
    /// Each program: name, runs, ns (as the kernel counted them).
    #[serde(default)]
    pub programs: Vec<ProgramRun>,
    /// Set when the statistics were on for part of the run only (`sample
    /// --bpf-stats sampled`, past its first seconds): `bpf_ns` is then what
    /// they counted, and the per-packet figure and the share are of the
    /// estimate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_sampled: Option<magnet_common::bpf_stats::Sampled>,
    /// `bpf_ns / packets` (sampled: the estimate's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_ns_per_packet: Option<f64>,
    /// CPU time of the sampler process (user + system), ns.
    pub process_cpu_ns: u64,
    pub process_ns_per_packet: f64,
    /// The shares' denominator, ns (0: /proc/stat unreadable).
    pub machine_cpu_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf_share: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_share: Option<f64>,
}

/// One BPF program's runs and run time.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProgramRun {
    pub name: String,
    pub runs: u64,
    pub ns: u64,
    /// Sampled statistics: the whole run's runs and time, estimated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_runs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_ns: Option<u64>,
}

impl RunCost {
    /// The figures from what was measured (`bpf`: each program, or why not).
    pub fn new(
        packets: u64,
        bpf: Result<Vec<ProgramRun>, String>,
        process_cpu_ns: u64,
        machine_cpu_ns: u64,
    ) -> RunCost {
        let per = |n: u64, d: u64| if d == 0 { 0.0 } else { n as f64 / d as f64 };
        let share = |n: u64| (machine_cpu_ns > 0).then(|| per(n, machine_cpu_ns));
        let (programs, bpf_ns, bpf_not_measured) = match bpf {
            Ok(p) => {
                let total = p.iter().map(|p| p.ns).sum();
                (p, Some(total), None)
            }
            Err(why) => (Vec::new(), None, Some(why)),
        };
        RunCost {
            packets,
            bpf_ns,
            bpf_not_measured,
            programs,
            bpf_sampled: None,
            bpf_ns_per_packet: bpf_ns.map(|n| per(n, packets)),
            process_cpu_ns,
            process_ns_per_packet: per(process_cpu_ns, packets),
            machine_cpu_ns,
            bpf_share: bpf_ns.and_then(share),
            process_share: share(process_cpu_ns),
        }
    }

    /// The statistics were on for part of the run only: the programs'
    /// `estimated_runs` and `estimated_ns` are set (by the caller), and the
    /// per-packet figure and the share become their sum's.
    pub fn set_sampled(&mut self, mut sampled: magnet_common::bpf_stats::Sampled) {
        if self.bpf_ns.is_none() {
            return;
        }
        sampled.estimated_ns = self.programs.iter().filter_map(|p| p.estimated_ns).sum();
        let est = sampled.estimated_ns as f64;
        self.bpf_ns_per_packet = (self.packets > 0).then(|| est / self.packets as f64);
        self.bpf_share = (self.machine_cpu_ns > 0).then(|| est / self.machine_cpu_ns as f64);
        self.bpf_sampled = Some(sampled);
    }

    /// One line: what `magnet sample` prints after a run.
    pub fn line(&self) -> String {
        let pct = |s: Option<f64>| match s {
            Some(s) => format!("{:.3}%", s * 100.0),
            None => "share unknown".into(),
        };
        // No packets: a per-packet figure would be a made-up 0.
        let per_packet = |v: f64| {
            if self.packets == 0 {
                "no packets counted".to_string()
            } else {
                format!("{v:.0} ns per packet")
            }
        };
        let bpf = match (self.bpf_ns, &self.bpf_not_measured) {
            (Some(ns), _) if self.bpf_sampled.is_some() => {
                let s = self.bpf_sampled.as_ref().expect("checked");
                format!(
                    "BPF time: {:.2} ms estimated = {}, {} of the machine's CPU ({}; counted: {:.2} ms in {} runs; --bpf-stats full counts all)",
                    s.estimated_ns as f64 / 1e6,
                    per_packet(self.bpf_ns_per_packet.unwrap_or(0.0)),
                    pct(self.bpf_share),
                    s.how(),
                    ns as f64 / 1e6,
                    self.programs.iter().map(|p| p.runs).sum::<u64>(),
                )
            }
            (Some(ns), _) => format!(
                "BPF time: {:.2} ms in {} runs = {}, {} of the machine's CPU",
                ns as f64 / 1e6,
                self.programs.iter().map(|p| p.runs).sum::<u64>(),
                per_packet(self.bpf_ns_per_packet.unwrap_or(0.0)),
                pct(self.bpf_share)
            ),
            (None, why) => format!(
                "BPF time: not measured ({})",
                why.as_deref().unwrap_or("no reason given")
            ),
        };
        format!(
            "{bpf}; sampler CPU: {:.2} ms = {}, {} (of {} packets; shares of all CPUs' time, busy and idle, from attach to detach)",
            self.process_cpu_ns as f64 / 1e6,
            per_packet(self.process_ns_per_packet),
            pct(self.process_share),
            self.packets
        )
    }
}
