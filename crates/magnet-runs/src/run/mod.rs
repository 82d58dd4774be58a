//! A sampler run as data: what was sampled (`RunMeta`) and one series per
//! metric, bucket by bucket. Two written forms:
//!
//! - **Meta's JSON schema** (as in `facebookresearch/Millisampler-data`): one
//!   object with `server_hostname`, `sampling_freq` (the interval in µs) and
//!   the series `ingressBytes`, `egressBytes`, `inRxmitBytes`,
//!   `outRxmitBytes`, `inCongestionExperiencedBytes`, `connections`; magnet
//!   adds its other series under their own keys and the full description
//!   under `magnet`. Files with only Meta's keys read back too.
//! - **Native** (`.msr`): magic, version, the meta as JSON, each series as
//!   LEB128 varints (mostly zeros and small numbers: ~1 byte per quiet bucket),
//!   the raw sketch, and a CRC-32 of everything before it.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::sketch;
use crate::Error;

mod cost;
mod json;
mod native;

pub use cost::{ProgramRun, RunCost};
pub use magnet_common::bpf_stats::Sampled;
use native::{gunzip, MAX_INFLATED, NATIVE_MAGIC};

/// The counters kept per bucket, in the order of `struct mg_bucket`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    InBytes,
    OutBytes,
    InPackets,
    OutPackets,
    InCeBytes,
    InCePackets,
    InRxmitBytes,
    OutRxmitBytes,
    InRxmitPackets,
    OutRxmitPackets,
    InShortRttBytes,
    InLongRttBytes,
    OutShortRttBytes,
    OutLongRttBytes,
    TcpRxmitEvents,
}

impl Metric {
    pub const ALL: [Metric; 15] = [
        Metric::InBytes,
        Metric::OutBytes,
        Metric::InPackets,
        Metric::OutPackets,
        Metric::InCeBytes,
        Metric::InCePackets,
        Metric::InRxmitBytes,
        Metric::OutRxmitBytes,
        Metric::InRxmitPackets,
        Metric::OutRxmitPackets,
        Metric::InShortRttBytes,
        Metric::InLongRttBytes,
        Metric::OutShortRttBytes,
        Metric::OutLongRttBytes,
        Metric::TcpRxmitEvents,
    ];

    /// Key in the JSON form (Meta's name where Meta has one).
    pub fn json_key(self) -> &'static str {
        match self {
            Metric::InBytes => "ingressBytes",
            Metric::OutBytes => "egressBytes",
            Metric::InPackets => "ingressPackets",
            Metric::OutPackets => "egressPackets",
            Metric::InCeBytes => "inCongestionExperiencedBytes",
            Metric::InCePackets => "inCongestionExperiencedPackets",
            Metric::InRxmitBytes => "inRxmitBytes",
            Metric::OutRxmitBytes => "outRxmitBytes",
            Metric::InRxmitPackets => "inRxmitPackets",
            Metric::OutRxmitPackets => "outRxmitPackets",
            Metric::InShortRttBytes => "inShortRttBytes",
            Metric::InLongRttBytes => "inLongRttBytes",
            Metric::OutShortRttBytes => "outShortRttBytes",
            Metric::OutLongRttBytes => "outLongRttBytes",
            Metric::TcpRxmitEvents => "tcpRetransmitSkb",
        }
    }

    /// Short label for tables and plots.
    pub fn label(self) -> &'static str {
        match self {
            Metric::InBytes => "in bytes",
            Metric::OutBytes => "out bytes",
            Metric::InPackets => "in packets",
            Metric::OutPackets => "out packets",
            Metric::InCeBytes => "in CE bytes",
            Metric::InCePackets => "in CE packets",
            Metric::InRxmitBytes => "in rxmit bytes",
            Metric::OutRxmitBytes => "out rxmit bytes",
            Metric::InRxmitPackets => "in rxmit packets",
            Metric::OutRxmitPackets => "out rxmit packets",
            Metric::InShortRttBytes => "in short-RTT bytes",
            Metric::InLongRttBytes => "in long-RTT bytes",
            Metric::OutShortRttBytes => "out short-RTT bytes",
            Metric::OutLongRttBytes => "out long-RTT bytes",
            Metric::TcpRxmitEvents => "tcp_retransmit_skb",
        }
    }

    /// Whether Meta's published schema has this series.
    pub fn in_meta_schema(self) -> bool {
        matches!(
            self,
            Metric::InBytes
                | Metric::OutBytes
                | Metric::InCeBytes
                | Metric::InRxmitBytes
                | Metric::OutRxmitBytes
        )
    }

    pub fn from_key(key: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.json_key() == key)
    }
}

/// Version of the native form and of the `magnet` object in the JSON form.
pub const FORMAT_VERSION: u32 = 1;

/// What a run sampled, when and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    pub format_version: u32,
    pub host: String,
    pub iface: String,
    pub ifindex: u32,
    pub kernel: String,
    pub interval_ns: u64,
    /// Buckets asked for.
    pub samples: u32,
    /// Wall-clock time (ns since the Unix epoch) at which bucket 0 began.
    pub start_realtime_ns: u64,
    pub cpus: u32,
    /// How the tc programs were attached: `tcx` or `clsact`.
    pub attach: String,
    pub rtt_threshold_us: u32,
    pub sketch_seed: u64,
    /// False when the run was stopped before its last bucket.
    pub complete: bool,
    /// What the run cost (its BPF programs' run time, the sampler's CPU);
    /// absent in runs made before it was kept, and in synthetic ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<RunCost>,
}

impl RunMeta {
    /// A meta for data that did not come from a sampler (tests, imports).
    pub fn synthetic(host: &str, interval_ns: u64, samples: u32) -> RunMeta {
        RunMeta {
            format_version: FORMAT_VERSION,
            host: host.to_string(),
            iface: String::new(),
            ifindex: 0,
            kernel: String::new(),
            interval_ns,
            samples,
            start_realtime_ns: 0,
            cpus: 0,
            attach: String::new(),
            rtt_threshold_us: 0,
            sketch_seed: 0,
            complete: true,
            cost: None,
        }
    }
}

/// A finished run.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub meta: RunMeta,
    /// One series per [`Metric`], all of the same length, in `Metric::ALL` order.
    pub series: Vec<Vec<u64>>,
    /// Estimated active connections per bucket.
    pub connections: Vec<u64>,
    /// The merged 128-bit sketch per bucket (absent for runs read from files
    /// that only had the estimate).
    pub sketch: Option<Vec<[u64; 2]>>,
}

impl Run {
    /// An all-zero run of `len` buckets.
    pub fn zeroed(meta: RunMeta, len: usize) -> Run {
        Run {
            meta,
            series: vec![vec![0; len]; Metric::ALL.len()],
            connections: vec![0; len],
            sketch: Some(vec![[0, 0]; len]),
        }
    }

    /// Buckets in the run.
    pub fn len(&self) -> usize {
        self.connections.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, m: Metric) -> &[u64] {
        &self.series[m as usize]
    }

    pub fn get_mut(&mut self, m: Metric) -> &mut Vec<u64> {
        &mut self.series[m as usize]
    }

    pub fn total(&self, m: Metric) -> u64 {
        self.get(m).iter().sum()
    }

    /// Recomputes `connections` from the sketch.
    pub fn estimate_connections(&mut self) {
        if let Some(s) = &self.sketch {
            self.connections = s.iter().map(|b| sketch::estimate(*b)).collect();
        }
    }

    /// The run's length in nanoseconds.
    pub fn duration_ns(&self) -> u64 {
        self.meta.interval_ns * self.len() as u64
    }

    /// Writes to `path`: JSON when it ends in `.json`, native otherwise.
    /// Written to a temporary name and renamed, so readers never see half a run.
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        let bytes = if path.extension().is_some_and(|e| e == "json") {
            let mut v = serde_json::to_vec(&self.to_json()).expect("run serializes");
            v.push(b'\n');
            v
        } else {
            self.to_native()
        };
        let tmp = path.with_extension(format!(
            "{}.tmp",
            path.extension().and_then(|e| e.to_str()).unwrap_or("")
        ));
        let io = |e| Error::Io {
            path: tmp.display().to_string(),
            source: e,
        };
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(&bytes).map_err(io)?;
        f.sync_all().map_err(io)?;
        std::fs::rename(&tmp, path).map_err(|e| Error::Io {
            path: path.display().to_string(),
            source: e,
        })
    }

    /// Reads a run written by [`Run::save`] (or a Meta JSON file).
    pub fn load(path: &Path) -> Result<Run, Error> {
        let what = path.display().to_string();
        let b = magnet_common::input::read_capped(path, MAX_INFLATED, "a run").map_err(|e| {
            Error::Io {
                path: what.clone(),
                source: e,
            }
        })?;
        let b = if b.starts_with(&[0x1f, 0x8b]) {
            gunzip(&b, &what)?
        } else {
            b
        };
        if b.starts_with(NATIVE_MAGIC) {
            Run::from_native(&b, &what)
        } else {
            let v: Value = serde_json::from_slice(&b).map_err(|e| Error::Format {
                path: what.clone(),
                offset: None,
                reason: format!("neither a native run nor JSON: {e}"),
            })?;
            Run::from_json(&v, &what)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn sample_run() -> Run {
        let mut meta = RunMeta::synthetic("h1", 100_000, 6);
        meta.iface = "eth0".into();
        meta.start_realtime_ns = 1_795_000_000_123_456_789;
        let mut r = Run::zeroed(meta, 6);
        r.get_mut(Metric::InBytes)
            .copy_from_slice(&[0, 1500, 3_000_000_000_000, 0, 7, 1 << 63]);
        r.get_mut(Metric::OutRxmitBytes)[3] = 1514;
        r.sketch.as_mut().unwrap()[1] = [0b111, 1 << 40];
        r.estimate_connections();
        r
    }

    #[test]
    fn json_round_trip_keeps_everything() {
        let r = sample_run();
        let v = r.to_json();
        assert_eq!(v["sampling_freq"], 100);
        assert_eq!(v["server_hostname"], "h1");
        assert_eq!(v["connections"][1], 4);
        for key in [
            "ingressBytes",
            "egressBytes",
            "inRxmitBytes",
            "outRxmitBytes",
            "inCongestionExperiencedBytes",
        ] {
            assert_eq!(v[key].as_array().unwrap().len(), 6, "{key}");
        }
        let text = serde_json::to_string(&v).unwrap();
        let back = Run::from_json(&serde_json::from_str(&text).unwrap(), "t").unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn run_cost_figures_and_old_metas() {
        let c = RunCost::new(
            100,
            Ok(vec![
                ProgramRun {
                    name: "sample_ingress".into(),
                    runs: 60,
                    ns: 3_000,
                    ..ProgramRun::default()
                },
                ProgramRun {
                    name: "sample_egress".into(),
                    runs: 40,
                    ns: 2_000,
                    ..ProgramRun::default()
                },
            ]),
            1_000_000,
            100_000_000,
        );
        assert_eq!(c.bpf_ns, Some(5_000));
        assert_eq!(c.bpf_ns_per_packet, Some(50.0));
        assert_eq!(c.process_share, Some(0.01));
        assert!(c.line().starts_with("BPF time: 0.01 ms in 100 runs = 50 ns per packet, 0.005% of the machine's CPU; sampler CPU: 1.00 ms = 10000 ns per packet"), "{}", c.line());
        // Sampled: per packet and the share are the estimate's; bpf_ns stays
        // what the kernel counted.
        let mut sampled = c.clone();
        sampled.programs[0].estimated_ns = Some(30_000);
        sampled.programs[1].estimated_ns = Some(20_000);
        sampled.set_sampled(magnet_common::bpf_stats::Sampled {
            full_ns: 2_000_000_000,
            windows: 10,
            windows_ns: 200_000_000,
            sampled_span_ns: 2_000_000_000,
            estimated_ns: 0,
            ..Default::default()
        });
        assert_eq!(sampled.bpf_ns, Some(5_000));
        assert_eq!(sampled.bpf_ns_per_packet, Some(500.0));
        assert!(sampled.line().starts_with("BPF time: 0.05 ms estimated = 500 ns per packet, 0.050% of the machine's CPU (the kernel's statistics were on for the first 2.0 s, then in 10 windows, 10.0% of the next 2.0 s; counted: 0.01 ms in 100 runs;"), "{}", sampled.line());
        let back: RunCost =
            serde_json::from_value(serde_json::to_value(&sampled).unwrap()).unwrap();
        assert_eq!(back, sampled);
        let not = RunCost::new(1, Err("refused".into()), 1, 0);
        assert!(not.line().starts_with("BPF time: not measured (refused)"));
        // A meta without cost (every run made before it was kept) reads.
        let mut meta = RunMeta::synthetic("h", 1000, 2);
        let json = serde_json::to_value(&meta).unwrap();
        assert!(json.get("cost").is_none());
        assert_eq!(serde_json::from_value::<RunMeta>(json).unwrap(), meta);
        meta.cost = Some(c);
        let back: RunMeta = serde_json::from_value(serde_json::to_value(&meta).unwrap()).unwrap();
        assert_eq!(back, meta);
    }

    #[test]
    fn meta_only_json_reads() {
        let v = json!({"server_hostname": "rsw1", "sampling_freq": 1000,
            "ingressBytes": [1, 2], "egressBytes": [3, 4], "inRxmitBytes": [0, 0],
            "outRxmitBytes": [0, 5], "inCongestionExperiencedBytes": [0, 0], "connections": [1, 2]});
        let r = Run::from_json(&v, "meta.json").unwrap();
        assert_eq!(r.meta.interval_ns, 1_000_000);
        assert_eq!(r.get(Metric::OutRxmitBytes), &[0, 5]);
        assert_eq!(r.connections, vec![1, 2]);
        assert!(r.sketch.is_none());
        let bad = json!({"ingressBytes": [1, 2], "egressBytes": [1]});
        let e = Run::from_json(&bad, "bad.json").unwrap_err().to_string();
        assert!(
            e.contains("bad.json") && e.contains("egressBytes has 1 buckets"),
            "{e}"
        );
    }

    #[test]
    fn native_round_trip_and_damage() {
        let r = sample_run();
        let b = r.to_native();
        assert_eq!(Run::from_native(&b, "x").unwrap(), r);
        // Quiet buckets cost about a byte per series.
        let quiet = Run::zeroed(RunMeta::synthetic("h", 1000, 2000), 2000).to_native();
        assert!(
            quiet.len() < 2000 * 17 + 2000 + 2000 * 16 + 400,
            "{}",
            quiet.len()
        );
        for cut in [0, 3, 10, b.len() / 2, b.len() - 1] {
            let e = Run::from_native(&b[..cut], "cut.msr")
                .unwrap_err()
                .to_string();
            assert!(e.contains("cut.msr"), "{e}");
        }
        let mut flipped = b.clone();
        flipped[40] ^= 1;
        let e = Run::from_native(&flipped, "f.msr").unwrap_err().to_string();
        assert!(e.contains("checksum"), "{e}");
    }

    #[test]
    fn save_and_load_both_forms() {
        let dir = tempfile::tempdir().unwrap();
        let r = sample_run();
        for name in ["a.json", "a.msr"] {
            let p = dir.path().join(name);
            r.save(&p).unwrap();
            assert_eq!(Run::load(&p).unwrap(), r, "{name}");
        }
    }

    fn gz(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        use std::io::Write;
        let p = dir.join(name);
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text.as_bytes()).unwrap();
        std::fs::write(&p, e.finish().unwrap()).unwrap();
        p
    }

    #[test]
    fn metas_gzipped_data_set_files_load() {
        let d = tempfile::tempdir().unwrap();
        // The data set's shape: one object, Meta's keys, an optional burst_result.
        let p = gz(
            d.path(),
            "host1.txt.gz",
            r#"{"ingressBytes": [10, 0, 30], "egressBytes": [1, 2, 3], "inRxmitBytes": [0, 0, 1],
               "outRxmitBytes": [0, 0, 0], "inCongestionExperiencedBytes": [0, 5, 0],
               "connections": [1, 1, 2], "sampling_freq": 1000,
               "burst_result": {"bursts": [[2, 2]]}}"#,
        );
        let r = Run::load(&p).unwrap();
        assert_eq!(r.get(Metric::InBytes), &[10, 0, 30]);
        assert_eq!(r.get(Metric::InCeBytes), &[0, 5, 0]);
        assert_eq!(r.connections, vec![1, 1, 2]);
        assert_eq!(r.meta.interval_ns, 1_000_000);

        // No ingressBytes: a one-line error naming the file.
        let p = gz(d.path(), "other.txt.gz", r#"{"egressBytes": [1]}"#);
        let e = Run::load(&p).unwrap_err().to_string();
        assert!(
            e.contains("other.txt.gz") && e.contains("no ingressBytes"),
            "{e}"
        );

        // Cut short: an error naming the file and how far it got, no panic.
        let full = std::fs::read(d.path().join("host1.txt.gz")).unwrap();
        for cut in [3, full.len() / 2, full.len() - 4] {
            let p = d.path().join("cut.txt.gz");
            std::fs::write(&p, &full[..cut]).unwrap();
            let e = Run::load(&p).unwrap_err().to_string();
            assert!(e.contains("cut.txt.gz"), "{e}");
        }
    }
}
