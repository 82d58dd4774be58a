//! The self-describing trace header: who wrote the trace, on which host and
//! kernel, how to turn its timestamps into wall-clock time, what each record
//! means (the catalog), and with which settings it was recorded.

use serde::{Deserialize, Serialize};

use crate::catalog::Catalog;

/// Maps the kernel's CLOCK_MONOTONIC (record timestamps) to wall-clock time:
/// both clocks were read back to back when recording started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockMap {
    pub monotonic_ns: u64,
    pub realtime_ns: u64,
}

impl ClockMap {
    /// Wall-clock nanoseconds since the Unix epoch for a record timestamp.
    pub fn to_realtime(&self, ts_ns: u64) -> i128 {
        self.realtime_ns as i128 + (ts_ns as i128 - self.monotonic_ns as i128)
    }
}

/// Which kernel hook fed a layer, and whether it attached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerSource {
    pub layer: String,
    pub hooks: Vec<String>,
    /// Hooks wanted but not attached, each with the reason.
    #[serde(default)]
    pub missing: Vec<String>,
    /// What else a reader should know about where the hooks are (e.g. in
    /// which network namespaces): nothing missing, said in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The format version, as in the preamble: a second, checksummed record
    /// of it, so that a damaged version field is noticed. Absent in traces
    /// written before it existed (all of them versions 1 or 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<u16>,
    /// Version of magnet that wrote the trace.
    pub writer: String,
    pub host: String,
    pub kernel: String,
    pub cpus: u32,
    pub clock: ClockMap,
    /// `little` (only little-endian hosts write traces).
    pub byte_order: String,
    pub catalog: Catalog,
    pub layers: Vec<LayerSource>,
    /// The recorder's settings (layers, filters, buffer size …), as given.
    pub settings: serde_json::Value,
    /// Names of kernel enum values, read from the recording kernel's BTF (they
    /// differ between kernels): table -> value (decimal string) -> name.
    #[serde(default)]
    pub enums: std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
    /// Network interfaces when the recording started, in every network namespace
    /// the recorder could enter: device events carry only an ifindex, and these
    /// give it a name (`magnet pcap` names its interface blocks with them).
    /// A reader of a file adds those the END block lists as made during the
    /// recording ([`Footer::interfaces_later`], marked `later`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<Interface>,
}

/// A network interface of some network namespace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface {
    /// The namespace's inode number (as in /proc/PID/ns/net and SOCK records).
    pub netns: u64,
    pub ifindex: u32,
    pub name: String,
    /// Made during the recording (from the END block), not there at its start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub later: bool,
}

impl Header {
    /// Adds devices made during the recording (the END block's
    /// [`Footer::interfaces_later`]), marked `later`, each once.
    pub fn add_later_interfaces(&mut self, later: Vec<Interface>) {
        for mut i in later {
            let known = self
                .interfaces
                .iter()
                .any(|k| (k.netns, k.ifindex, &k.name) == (i.netns, i.ifindex, &i.name));
            if !known {
                i.later = true;
                self.interfaces.push(i);
            }
        }
    }

    /// The name of interface `ifindex`, when the trace knows it and no two
    /// namespaces give that ifindex different names (device events carry no
    /// namespace).
    pub fn interface_name(&self, ifindex: u32) -> Option<&str> {
        let mut names = self
            .interfaces
            .iter()
            .filter(|i| i.ifindex == ifindex)
            .map(|i| i.name.as_str());
        let first = names.next()?;
        names.all(|n| n == first).then_some(first)
    }
}

impl Header {
    /// The name of a field's value, when its catalog entry points at an enum table
    /// this trace carries.
    pub fn value_name(&self, field: &crate::FieldDesc, value: u64) -> Option<&str> {
        self.enums
            .get(field.names.as_ref()?)?
            .get(&value.to_string())
            .map(String::as_str)
    }
}

impl Header {
    /// A header for this build's catalog; callers fill in the rest.
    pub fn new(host: String, kernel: String, cpus: u32, clock: ClockMap) -> Header {
        Header {
            format: Some(crate::block::VERSION),
            writer: format!("magnet {}", env!("CARGO_PKG_VERSION")),
            host,
            kernel,
            cpus,
            clock,
            byte_order: "little".to_string(),
            catalog: Catalog::builtin(),
            layers: Vec::new(),
            settings: serde_json::Value::Null,
            enums: Default::default(),
            interfaces: Vec::new(),
        }
    }
}

/// Totals the recorder writes at the end of a run (the END block).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Footer {
    /// Records written to the trace (LOST records included).
    pub records: u64,
    /// Events the kernel could not record because the ring buffer was full.
    pub lost_kernel: u64,
    /// Records user space received but could not keep (malformed, unknown).
    pub dropped_user: u64,
    /// Events that passed the kernel filters, by kind name (recorded + lost).
    #[serde(default)]
    pub generated: std::collections::BTreeMap<String, u64>,
    /// Records written, by kind name (LOST records included; they sum to
    /// `records`). Absent in traces written before it existed: a reader then
    /// checks each kind against `generated` only.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub recorded: std::collections::BTreeMap<String, u64>,
    pub first_ts_ns: u64,
    pub last_ts_ns: u64,
    /// CLOCK_MONOTONIC when the recording stopped (0 in traces written before
    /// this field existed). With `Header::clock` it gives the recording's span,
    /// the one duration every command shows ([`crate::summary::recording_span_ns`]).
    #[serde(default)]
    pub end_mono_ns: u64,
    /// Why the recording ended (`command exited`, `duration`, `SIGINT` …).
    pub end_reason: String,
    /// What the recording cost (BPF run time, the recorder's CPU); absent in
    /// traces written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<crate::cost::Cost>,
    /// Network interfaces made during the recording (a tun device a test
    /// opens, a container's veth), as the recorder found them in its scans
    /// (every second or so): device events on them get a name. Absent in
    /// traces written before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces_later: Vec<Interface>,
}
