//! What a recording is asked to do: layers, optional state, filters, buffer.

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;

/// A layer of the stack that can be recorded (see `magnet_trace::catalog::LAYERS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    App,
    Tcp,
    Ip,
    Qdisc,
    Dev,
    Drop,
    Sched,
}

impl Layer {
    pub const ALL: [Layer; 7] = [
        Layer::App,
        Layer::Tcp,
        Layer::Ip,
        Layer::Qdisc,
        Layer::Dev,
        Layer::Drop,
        Layer::Sched,
    ];
    pub const DEFAULT: [Layer; 4] = [Layer::App, Layer::Tcp, Layer::Ip, Layer::Dev];

    pub fn name(self) -> &'static str {
        match self {
            Layer::App => "app",
            Layer::Tcp => "tcp",
            Layer::Ip => "ip",
            Layer::Qdisc => "qdisc",
            Layer::Dev => "dev",
            Layer::Drop => "drop",
            Layer::Sched => "sched",
        }
    }

    /// Layers whose events carry packet ids (and so need the skb free hooks).
    pub fn follows_packets(self) -> bool {
        matches!(
            self,
            Layer::Tcp | Layer::Ip | Layer::Qdisc | Layer::Dev | Layer::Drop
        )
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Layer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Layer::ALL
            .iter()
            .copied()
            .find(|l| l.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Layer::ALL.iter().map(|l| l.name()).collect();
                format!("unknown layer '{s}' (layers: {})", names.join(", "))
            })
    }
}

/// Parses `app,tcp,ip` (or `all`).
pub fn parse_layers(s: &str) -> Result<BTreeSet<Layer>, String> {
    if s.trim() == "all" {
        return Ok(Layer::ALL.into_iter().collect());
    }
    let set: BTreeSet<Layer> = s
        .split(',')
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .map(Layer::from_str)
        .collect::<Result<_, _>>()?;
    if set.is_empty() {
        return Err("no layer given".into());
    }
    Ok(set)
}

/// Which events to keep. Task filters (pids, comm, cgroup) all apply when
/// given; port and host filters narrow further by the flow's addresses.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Filters {
    /// Trace these processes and every process they fork from now on.
    pub pids: Vec<u32>,
    pub comm: Option<String>,
    pub cgroup: Option<PathBuf>,
    pub port: Option<u16>,
    pub host: Option<IpAddr>,
    /// Only events in this network namespace (its inode number, as
    /// /proc/PID/ns/net names it): packets where they are seen, sockets and
    /// tasks by their own namespace. `None`: every namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netns: Option<u64>,
}

impl Filters {
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty()
            && self.comm.is_none()
            && self.cgroup.is_none()
            && self.port.is_none()
            && self.host.is_none()
            && self.netns.is_none()
    }
}

/// Adjustments to the default kinds of the selected layers (`--kinds`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct KindSelection {
    /// Every kind of the selected layers.
    pub all: bool,
    pub add: BTreeSet<String>,
    pub remove: BTreeSet<String>,
}

impl KindSelection {
    /// Whether a probe writing `kind` (on by default or not) records.
    pub fn enabled(&self, kind: &str, default_on: bool) -> bool {
        (self.all || default_on || self.add.contains(kind)) && !self.remove.contains(kind)
    }
}

/// Parses `--kinds`: `all`, or a list of `+KIND` (add one that is off by
/// default) and `-KIND` (leave one out).
pub fn parse_kinds(s: &str) -> Result<KindSelection, String> {
    let mut sel = KindSelection::default();
    let known: Vec<&str> = crate::probes::PROBES
        .iter()
        .filter_map(crate::probes::kind)
        .collect();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if part == "all" {
            sel.all = true;
            continue;
        }
        let (add, name) = match part.as_bytes()[0] {
            b'+' => (true, &part[1..]),
            b'-' => (false, &part[1..]),
            _ => {
                return Err(format!(
                    "--kinds: '{part}' needs a + (add) or - (remove) in front, or use 'all'"
                ))
            }
        };
        if !known.contains(&name) {
            return Err(format!(
                "--kinds: unknown kind '{name}' (kinds: {})",
                known.join(", ")
            ));
        }
        if add {
            sel.add.insert(name.to_string());
        } else {
            sel.remove.insert(name.to_string());
        }
    }
    Ok(sel)
}

/// What to record (the target, `-- CMD` or `--all`, is given to `Recorder::run`).
#[derive(Clone, Debug, Serialize)]
pub struct RecordConfig {
    pub layers: BTreeSet<Layer>,
    /// The layers were named by the user (`--layers`): one that cannot be
    /// recorded on this kernel is an error, not a note.
    #[serde(default)]
    pub layers_named: bool,
    /// Which kinds of those layers (defaults leave a few per-packet ones out).
    pub kinds: KindSelection,
    /// Append MAGNeT's TCP snapshot to every tcp event.
    pub tcp_state: bool,
    /// record --no-bpf-stats: leave the kernel's run-time statistics off
    /// (they are host-wide: every BPF program pays two clock reads a run while
    /// they are on); the cost line then has no BPF time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_bpf_stats: bool,
    /// record --bpf-stats sampled: the statistics on for the recording's
    /// first seconds and then a tenth of the time (the estimate's windows)
    /// instead of throughout.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bpf_stats_sampled: bool,
    /// record --bpf-stats full: the statistics on for the whole recording.
    /// Without it or the two above (`--bpf-stats first`, the default), they
    /// are on until the recording has run a few seconds and written enough
    /// records to measure its time per record, then off (recorder/cost.rs).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bpf_stats_full: bool,
    pub filters: Filters,
    /// Ring buffer size in bytes (a power of two, at least one page).
    pub buffer_bytes: u64,
    /// The reader is woken when this many bytes are queued (else it polls).
    pub wakeup_bytes: u64,
    /// How often the drain polls the ring when not woken.
    #[serde(with = "duration_ms")]
    pub poll_interval: Duration,
    pub output: PathBuf,
    /// record --funcs: kernel functions to probe at entry, each with the
    /// parameter (1-5) that holds its skb (magnet-funcs chooses them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub funcs: Vec<(String, u8)>,
    /// record --funcs: further kernel functions named in the trace header (not
    /// probed), so that callers outside the probed set have names (magnet
    /// funcs' whole selection: tcp_connect takes a socket that nests skbs).
    #[serde(skip)]
    pub func_names: Vec<String>,
    /// record --func-exits: also a return probe on each of `funcs`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub func_exits: bool,
    /// record --snaplen: keep this many bytes of each dev_start_xmit /
    /// dev_rx frame (0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub snaplen: u32,
    /// record -f EXPR: the pcap-filter expression, as given. Packet events (ip,
    /// qdisc, dev, drop, and the frames) are recorded only for packets it matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcap_filter: Option<String>,
    /// Its classic BPF program, compiled by libpcap for raw IP packets (the
    /// program starts at the IP header): (code, jt, jf, k) per instruction.
    #[serde(skip)]
    pub pcap_filter_insns: Vec<(u16, u8, u8, u32)>,
}

/// The most instructions a pcap-filter program may have (PF_MAX_INSNS in filter.bpf.c).
pub const PCAP_FILTER_MAX_INSNS: usize = 512;

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The most frame bytes a `frame` record carries (MG_SNAPLEN_MAX in events.h).
pub const SNAPLEN_MAX: u32 = 2048;

mod duration_ms {
    use serde::Serializer;
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1e3)
    }
}

pub const DEFAULT_BUFFER: u64 = 32 << 20;

impl RecordConfig {
    pub fn new(output: PathBuf) -> Self {
        RecordConfig {
            layers: Layer::DEFAULT.into_iter().collect(),
            layers_named: false,
            kinds: KindSelection::default(),
            tcp_state: false,
            no_bpf_stats: false,
            bpf_stats_sampled: false,
            bpf_stats_full: false,
            filters: Filters::default(),
            buffer_bytes: DEFAULT_BUFFER,
            wakeup_bytes: default_wakeup(DEFAULT_BUFFER),
            poll_interval: Duration::from_millis(10),
            output,
            funcs: Vec::new(),
            func_names: Vec::new(),
            func_exits: false,
            snaplen: 0,
            pcap_filter: None,
            pcap_filter_insns: Vec::new(),
        }
    }

    /// Sets the ring size, rounded up to a power of two of at least 4 KiB.
    pub fn set_buffer(&mut self, bytes: u64) {
        self.buffer_bytes = bytes.max(4096).next_power_of_two();
        self.wakeup_bytes = default_wakeup(self.buffer_bytes);
    }
}

/// Wake the reader at 1/8 of the ring, at most 1 MiB: well below the ring
/// size so that the ring does not fill while the reader sleeps.
pub fn default_wakeup(buffer: u64) -> u64 {
    (buffer / 8).clamp(64, 1 << 20)
}

/// Parses sizes such as `64MiB`, `512K`, `1G`, `4096`: the one size syntax
/// of every magnet command (`magnet_common::units`).
pub fn parse_size(s: &str) -> Result<u64, String> {
    magnet_common::units::parse_size(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_layers_parse() {
        assert_eq!(parse_size("64MiB").unwrap(), 64 << 20);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("12 parsecs").is_err());
        assert_eq!(parse_layers("app,tcp").unwrap().len(), 2);
        assert_eq!(parse_layers("all").unwrap().len(), 7);
        assert_eq!(
            parse_layers("app,foo").unwrap_err(),
            "unknown layer 'foo' (layers: app, tcp, ip, qdisc, dev, drop, sched)"
        );
        let k = parse_kinds("+dev_xmit,-tcp_sendmsg").unwrap();
        assert!(
            k.enabled("dev_xmit", false)
                && !k.enabled("tcp_sendmsg", true)
                && k.enabled("dev_rx", true)
        );
        assert!(!k.enabled("dev_queue", false));
        assert!(parse_kinds("all").unwrap().enabled("dev_queue", false));
        assert!(parse_kinds("dev_xmit").unwrap_err().contains("needs a +"));
        assert!(parse_kinds("+nope")
            .unwrap_err()
            .contains("unknown kind 'nope'"));
        let mut c = RecordConfig::new("x".into());
        c.set_buffer(100_000);
        assert_eq!(c.buffer_bytes, 131072);
    }
}
