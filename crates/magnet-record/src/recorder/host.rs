//! Host preflight and clocks: whether this host can record at all, the clock
//! pair that maps record timestamps to wall-clock time, and the trace header
//! that describes the host, its kernel and the recording's settings.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Result};
use magnet_trace::{ClockMap, Header};

use super::Target;
use crate::config::RecordConfig;

/// Refuses early, with what to do, when the host cannot record.
pub fn preflight() -> Result<()> {
    if !nix::unistd::geteuid().is_root() {
        bail!(
            "recording needs root (it loads BPF programs: CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN); \
             run it with sudo"
        );
    }
    let btf = Path::new("/sys/kernel/btf/vmlinux");
    if !btf.exists() {
        bail!(
            "this kernel exposes no BTF ({} is missing); magnet needs a kernel built with \
             CONFIG_DEBUG_INFO_BTF=y (Linux 5.8 or later; most distributions enable it)",
            btf.display()
        );
    }
    Ok(())
}

pub(super) fn clock_map() -> ClockMap {
    use nix::time::{clock_gettime, ClockId};
    let ns = |t: nix::sys::time::TimeSpec| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64;
    // Read monotonic on both sides of realtime and take the midpoint.
    let m1 = ns(clock_gettime(ClockId::CLOCK_MONOTONIC).expect("monotonic clock"));
    let r = ns(clock_gettime(ClockId::CLOCK_REALTIME).expect("realtime clock"));
    let m2 = ns(clock_gettime(ClockId::CLOCK_MONOTONIC).expect("monotonic clock"));
    ClockMap {
        monotonic_ns: m1 + (m2 - m1) / 2,
        realtime_ns: r,
    }
}

pub(super) fn monotonic_now() -> u64 {
    use nix::time::{clock_gettime, ClockId};
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("monotonic clock");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// Names of the kernel enums that trace fields refer to, from this kernel's BTF
/// (drop reasons are renumbered between releases, so a trace keeps its own).
fn kernel_enums() -> BTreeMap<String, BTreeMap<String, String>> {
    use libbpf_rs::btf::{types::Enum, Btf};
    let mut out = BTreeMap::new();
    let Ok(btf) = Btf::from_vmlinux() else {
        return out;
    };
    if let Some(e) = btf.type_by_name::<Enum>("skb_drop_reason") {
        let names = e
            .iter()
            .filter_map(|m| {
                let name = m.name?.to_string_lossy();
                let short = name
                    .strip_prefix("SKB_DROP_REASON_")
                    .unwrap_or(&name)
                    .to_string();
                Some((m.value.to_string(), short))
            })
            .collect();
        out.insert("skb_drop_reason".to_string(), names);
    }
    out
}

pub(super) fn kernel_release() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The trace header: host, kernel, clock pair (time zero of the trace), the
/// kernel enums trace fields refer to, and the settings as given.
pub(super) fn header(config: &RecordConfig, target: &Target) -> Header {
    let uts = nix::sys::utsname::uname().ok();
    let host = uts
        .as_ref()
        .map(|u| u.nodename().to_string_lossy().into_owned())
        .unwrap_or_default();
    let kernel = uts
        .as_ref()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    let cpus = libbpf_rs::num_possible_cpus().unwrap_or(1) as u32;
    let mut h = Header::new(host, kernel, cpus, clock_map());
    let target = match target {
        Target::All => serde_json::json!("all"),
        Target::Command(c) => serde_json::json!({
            "command": c.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>()
        }),
        Target::Pids => serde_json::json!({ "pids": config.filters.pids }),
    };
    h.enums = kernel_enums();
    let mut settings = serde_json::to_value(config).expect("config serializes");
    settings["target"] = target;
    h.settings = settings;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_pair_is_read_back_to_back() {
        let a = monotonic_now();
        let c = clock_map();
        let b = monotonic_now();
        assert!(a <= c.monotonic_ns && c.monotonic_ns <= b);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i128;
        // The mapping puts "now" within a second of the system clock.
        assert!((c.to_realtime(monotonic_now()) - now).abs() < 1_000_000_000);
    }

    #[test]
    fn the_header_keeps_the_target_and_settings() {
        let config = RecordConfig::new("x.mgt".into());
        let h = header(&config, &Target::Command(vec!["true".into()]));
        assert_eq!(h.settings["target"]["command"][0], "true");
        assert_eq!(h.settings["output"], "x.mgt");
        assert!(h.cpus >= 1);
        assert_eq!(h.catalog, magnet_trace::Catalog::builtin());
    }
}
