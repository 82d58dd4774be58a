//! Host preflight and clocks: whether this host can record at all, the clock
//! pair that maps record timestamps to wall-clock time, and the trace header
//! that describes the host, its kernel and the recording's settings.

use magnet_trace::{ClockMap, Header, LayerSource};
use std::collections::BTreeMap;

use super::Target;
use crate::config::RecordConfig;

/// What recording needs root for, said when it is missing.
pub const PRIVILEGE: magnet_host::Privilege = magnet_host::Privilege {
    what: "recording",
    needs: "it loads BPF programs: CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN",
};

/// Refuses early, with what to do, when the host cannot record.
pub fn preflight() -> Result<(), crate::Error> {
    magnet_host::preflight(PRIVILEGE).map_err(crate::Error::Host)
}

pub(super) fn clock_map() -> ClockMap {
    let p = magnet_host::clock::clock_pair();
    ClockMap {
        monotonic_ns: p.monotonic_ns,
        realtime_ns: p.realtime_ns,
    }
}

pub(super) use magnet_host::clock::monotonic_ns as monotonic_now;
pub(super) use magnet_host::kernel_release;

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

/// What a recorder stopped before its hooks were attached says of each layer
/// (the header written first, which the full one replaces once they are).
pub(super) const NOT_ATTACHED: &str =
    "not attached: the recorder stopped before attaching its hooks (nothing was recorded)";

/// The header written before anything is loaded, so that a recorder killed
/// at any moment leaves a trace that reads as cut short: host, kernel, clock
/// pair, the settings, and each layer asked for as not attached. Nothing in it
/// takes long (no BTF, no network namespaces).
pub(super) fn early_header(config: &RecordConfig, target: &Target) -> Header {
    let host = magnet_host::host_name();
    let kernel = kernel_release();
    let cpus = libbpf_rs::num_possible_cpus().unwrap_or(1) as u32;
    let mut h = Header::new(host, kernel, cpus, clock_map());
    let target = match target {
        Target::All => serde_json::json!("all"),
        Target::Command(c) => serde_json::json!({
            "command": c.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>()
        }),
        Target::Pids => serde_json::json!({ "pids": config.filters.pids }),
    };
    let mut settings = serde_json::to_value(config).expect("config serializes");
    settings["target"] = target;
    h.settings = settings;
    h.layers = config
        .layers
        .iter()
        .map(|l| LayerSource {
            layer: l.name().into(),
            hooks: vec![],
            missing: vec![NOT_ATTACHED.into()],
            notes: vec![],
        })
        .collect();
    h
}

/// The trace header: host, kernel, clock pair (time zero of the trace), the
/// kernel enums trace fields refer to, the interfaces, and the settings as
/// given; attaching fills in the layers and hooks.
pub(super) fn header(config: &RecordConfig, target: &Target) -> Header {
    let mut h = early_header(config, target);
    h.layers.clear();
    h.enums = kernel_enums();
    h.interfaces = crate::netdevs::all_interfaces();
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
        assert!(h.layers.is_empty());
    }

    #[test]
    fn the_early_header_names_every_layer_as_not_attached() {
        let config = RecordConfig::new("x.mgt".into());
        let h = early_header(&config, &Target::All);
        assert_eq!(h.settings["target"], "all");
        assert_eq!(h.layers.len(), config.layers.len());
        assert!(h
            .layers
            .iter()
            .all(|l| l.hooks.is_empty() && l.missing == [NOT_ATTACHED]));
    }
}
