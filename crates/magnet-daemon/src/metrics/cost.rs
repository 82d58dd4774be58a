//! What magnetd costs: its programs' run time and its own CPU.

use super::Out;

/// What magnetd costs: each program's run count and run time (the kernel's
/// run-time statistics, on since magnetd started; no series when the kernel
/// refused them, `magnet_bpf_stats_enabled` 0), magnetd's own CPU, both per
/// event (`events`: `magnet_events_total`) and as a share of the machine's
/// CPU time since the start (`machine_ns`: all CPUs, busy and idle).
pub(super) fn cost(
    o: &mut Out,
    bpf: &Result<Vec<crate::summaries::ProgramTime>, String>,
    on_ratio: Option<f64>,
    events: u64,
    process_ns: u64,
    machine_ns: Option<u64>,
) {
    let per = |n: u64, d: u64| if d == 0 { 0.0 } else { n as f64 / d as f64 };
    o.family(
        "magnet_bpf_stats_enabled",
        "gauge",
        None,
        "1 when the kernel counts the run time of magnetd's BPF programs (BPF_ENABLE_STATS or kernel.bpf_stats_enabled); 0: not measured (magnetd's log says why).",
    );
    o.sample("magnet_bpf_stats_enabled", &[], u8::from(bpf.is_ok()));
    if let (Ok(_), Some(r)) = (bpf, on_ratio) {
        o.family(
            "magnet_bpf_stats_on_ratio",
            "gauge",
            Some("ratio"),
            "Share of magnetd's life the kernel's run-time statistics were on: 1 = every run counted (bpf_stats = true); below 1 (bpf_stats = \"sampled\") the magnet_bpf_* run and time series past the first 2 s are estimates, the windows' counts scaled to the time between them.",
        );
        o.sample("magnet_bpf_stats_on_ratio", &[], r);
    }
    o.family(
        "magnet_daemon_cpu_seconds",
        "counter",
        Some("seconds"),
        "CPU time (user + system) of the magnetd process, all threads.",
    );
    o.sample(
        "magnet_daemon_cpu_seconds_total",
        &[],
        process_ns as f64 / 1e9,
    );
    o.family(
        "magnet_daemon_cpu_ns_per_event",
        "gauge",
        None,
        "magnetd's CPU time divided by magnet_events_total, ns.",
    );
    o.sample(
        "magnet_daemon_cpu_ns_per_event",
        &[],
        per(process_ns, events),
    );
    let total = bpf
        .as_ref()
        .ok()
        .map(|p| p.iter().map(|p| p.ns).sum::<u64>());
    if let Ok(progs) = bpf {
        o.family(
            "magnet_bpf_run_seconds",
            "counter",
            Some("seconds"),
            "Run time of each of magnetd's BPF programs since magnetd started (bpf_prog_info.run_time_ns; estimated past the first 2 s when magnet_bpf_stats_on_ratio < 1).",
        );
        for p in progs {
            o.sample(
                "magnet_bpf_run_seconds_total",
                &[("program", &p.name)],
                p.ns as f64 / 1e9,
            );
        }
        o.family(
            "magnet_bpf_runs",
            "counter",
            None,
            "Runs of each of magnetd's BPF programs since magnetd started (bpf_prog_info.run_cnt; estimated past the first 2 s when magnet_bpf_stats_on_ratio < 1).",
        );
        for p in progs {
            o.sample("magnet_bpf_runs_total", &[("program", &p.name)], p.runs);
        }
        o.family(
            "magnet_bpf_skipped_runs",
            "counter",
            None,
            "Runs of each of magnetd's BPF programs the kernel skipped because the program was already running on that CPU (bpf_prog_info.recursion_misses): what they would have counted is missing.",
        );
        for p in progs {
            o.sample(
                "magnet_bpf_skipped_runs_total",
                &[("program", &p.name)],
                p.skipped,
            );
        }
        o.family(
            "magnet_bpf_ns_per_event",
            "gauge",
            None,
            "Run time of all of magnetd's BPF programs divided by magnet_events_total, ns.",
        );
        o.sample(
            "magnet_bpf_ns_per_event",
            &[],
            per(total.unwrap_or(0), events),
        );
    }
    if let Some(m) = machine_ns.filter(|&m| m > 0) {
        o.family(
            "magnet_cpu_share_ratio",
            "gauge",
            Some("ratio"),
            "Share of the machine's CPU time since magnetd started (all CPUs, busy and idle, /proc/stat): part=bpf its BPF programs' run time, part=daemon its process's CPU.",
        );
        if let Some(t) = total {
            o.sample("magnet_cpu_share_ratio", &[("part", "bpf")], per(t, m));
        }
        o.sample(
            "magnet_cpu_share_ratio",
            &[("part", "daemon")],
            per(process_ns, m),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_families_per_program_and_totals() {
        use crate::summaries::ProgramTime;
        let progs = vec![
            ProgramTime {
                name: "app_send".into(),
                runs: 10,
                ns: 3_000,
                skipped: 2,
            },
            ProgramTime {
                name: "drop".into(),
                runs: 0,
                ns: 0,
                skipped: 0,
            },
        ];
        let mut o = Out(String::new());
        cost(
            &mut o,
            &Ok(progs),
            Some(0.25),
            100,
            2_000_000_000,
            Some(4_000_000_000),
        );
        let t = o.0;
        for want in [
            "magnet_bpf_stats_enabled 1\n",
            "magnet_bpf_stats_on_ratio 0.25\n",
            "# UNIT magnet_bpf_stats_on_ratio ratio\n",
            "magnet_bpf_run_seconds_total{program=\"app_send\"} 0.000003\n",
            "magnet_bpf_run_seconds_total{program=\"drop\"} 0\n",
            "magnet_bpf_runs_total{program=\"app_send\"} 10\n",
            "magnet_bpf_skipped_runs_total{program=\"app_send\"} 2\n",
            "magnet_bpf_ns_per_event 30\n",
            "magnet_daemon_cpu_seconds_total 2\n",
            "magnet_daemon_cpu_ns_per_event 20000000\n",
            "magnet_cpu_share_ratio{part=\"bpf\"} 0.00000075\n",
            "magnet_cpu_share_ratio{part=\"daemon\"} 0.5\n",
            "# UNIT magnet_bpf_run_seconds seconds\n",
            "# UNIT magnet_cpu_share_ratio ratio\n",
        ] {
            assert!(t.contains(want), "{want} in\n{t}");
        }
        // OpenMetrics: a family with a unit has a name that ends with it
        // (Prometheus refuses the whole scrape otherwise).
        for l in t.lines().filter_map(|l| l.strip_prefix("# UNIT ")) {
            let (name, unit) = l.split_once(' ').unwrap();
            assert!(name.ends_with(&format!("_{unit}")), "{l}");
        }
        // Not measured: no per-program series, never zeros that look measured.
        let mut o = Out(String::new());
        cost(&mut o, &Err("refused".into()), None, 100, 1, None);
        assert!(o.0.contains("magnet_bpf_stats_enabled 0\n"));
        assert!(!o.0.contains("magnet_bpf_run_seconds_total"));
        assert!(!o.0.contains("magnet_cpu_share_ratio"));
        assert!(!o.0.contains("magnet_bpf_stats_on_ratio"));
    }
}
