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
use serde_json::{json, Map, Value};

use crate::sketch;
use crate::Error;

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
    /// Each program: name, runs, ns.
    #[serde(default)]
    pub programs: Vec<ProgramRun>,
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
            bpf_ns_per_packet: bpf_ns.map(|n| per(n, packets)),
            process_cpu_ns,
            process_ns_per_packet: per(process_cpu_ns, packets),
            machine_cpu_ns,
            bpf_share: bpf_ns.and_then(share),
            process_share: share(process_cpu_ns),
        }
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

    // ---- JSON (Meta's schema + magnet's keys) --------------------------------

    pub fn to_json(&self) -> Value {
        let mut o = Map::new();
        o.insert("server_hostname".into(), json!(self.meta.host));
        o.insert("sampling_freq".into(), json!(self.meta.interval_ns / 1000));
        for m in Metric::ALL.into_iter().filter(|m| m.in_meta_schema()) {
            o.insert(m.json_key().into(), json!(self.get(m)));
        }
        o.insert("connections".into(), json!(self.connections));
        for m in Metric::ALL.into_iter().filter(|m| !m.in_meta_schema()) {
            o.insert(m.json_key().into(), json!(self.get(m)));
        }
        if let Some(s) = &self.sketch {
            let hex: Vec<String> = s
                .iter()
                .map(|b| format!("{:016x}{:016x}", b[1], b[0]))
                .collect();
            o.insert("connectionSketch".into(), json!(hex));
        }
        o.insert(
            "magnet".into(),
            serde_json::to_value(&self.meta).expect("meta serializes"),
        );
        Value::Object(o)
    }

    /// Reads the JSON form. `what` names the source in errors.
    pub fn from_json(v: &Value, what: &str) -> Result<Run, Error> {
        let bad = |reason: String| Error::Format {
            path: what.to_string(),
            offset: None,
            reason,
        };
        let o = v
            .as_object()
            .ok_or_else(|| bad("not a JSON object".into()))?;
        let series_of = |key: &str| -> Result<Option<Vec<u64>>, Error> {
            match o.get(key) {
                None => Ok(None),
                Some(Value::Array(a)) => a
                    .iter()
                    .enumerate()
                    .map(|(i, x)| {
                        // Meta's files hold integers, some tools write floats.
                        x.as_u64()
                            .or_else(|| x.as_f64().filter(|f| *f >= 0.0).map(|f| f.round() as u64))
                            .ok_or_else(|| bad(format!("{key}[{i}] is not a non-negative number")))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(Some),
                Some(_) => Err(bad(format!("{key} is not an array"))),
            }
        };
        let ingress =
            series_of("ingressBytes")?.ok_or_else(|| bad("no ingressBytes series".into()))?;
        let len = ingress.len();
        let meta = match o.get("magnet") {
            Some(m) => serde_json::from_value::<RunMeta>(m.clone())
                .map_err(|e| bad(format!("magnet: {e}")))?,
            None => {
                let host = o
                    .get("server_hostname")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let us = o.get("sampling_freq").and_then(Value::as_u64).unwrap_or(0);
                RunMeta::synthetic(&host, us * 1000, len as u32)
            }
        };
        let mut series = Vec::with_capacity(Metric::ALL.len());
        for m in Metric::ALL {
            let s = if m == Metric::InBytes {
                Some(ingress.clone())
            } else {
                series_of(m.json_key())?
            };
            let s = s.unwrap_or_else(|| vec![0; len]);
            if s.len() != len {
                return Err(bad(format!(
                    "{} has {} buckets, ingressBytes has {len}",
                    m.json_key(),
                    s.len()
                )));
            }
            series.push(s);
        }
        let sketch = match o.get("connectionSketch") {
            None => None,
            Some(Value::Array(a)) => {
                let parsed = a
                    .iter()
                    .enumerate()
                    .map(|(i, x)| {
                        let s = x.as_str().filter(|s| s.len() == 32);
                        let hi = s.and_then(|s| u64::from_str_radix(&s[..16], 16).ok());
                        let lo = s.and_then(|s| u64::from_str_radix(&s[16..], 16).ok());
                        match (lo, hi) {
                            (Some(lo), Some(hi)) => Ok([lo, hi]),
                            _ => Err(bad(format!("connectionSketch[{i}] is not 32 hex digits"))),
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                if parsed.len() != len {
                    return Err(bad(format!(
                        "connectionSketch has {} buckets, ingressBytes has {len}",
                        parsed.len()
                    )));
                }
                Some(parsed)
            }
            Some(_) => return Err(bad("connectionSketch is not an array".into())),
        };
        let connections = match series_of("connections")? {
            Some(c) if c.len() == len => c,
            Some(c) => {
                return Err(bad(format!(
                    "connections has {} buckets, ingressBytes has {len}",
                    c.len()
                )))
            }
            None => sketch
                .as_ref()
                .map(|s| s.iter().map(|b| sketch::estimate(*b)).collect())
                .unwrap_or(vec![0; len]),
        };
        Ok(Run {
            meta,
            series,
            connections,
            sketch,
        })
    }

    // ---- native form ---------------------------------------------------------

    pub fn to_native(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.len() * (Metric::ALL.len() + 1));
        out.extend_from_slice(NATIVE_MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        let meta = serde_json::to_vec(&self.meta).expect("meta serializes");
        out.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        out.extend_from_slice(&meta);
        out.extend_from_slice(&(self.len() as u32).to_le_bytes());
        out.push(Metric::ALL.len() as u8);
        for s in &self.series {
            for &v in s {
                put_varint(&mut out, v);
            }
        }
        for &v in &self.connections {
            put_varint(&mut out, v);
        }
        match &self.sketch {
            Some(s) => {
                out.push(1);
                for b in s {
                    out.extend_from_slice(&b[0].to_le_bytes());
                    out.extend_from_slice(&b[1].to_le_bytes());
                }
            }
            None => out.push(0),
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads the native form. `what` names the source in errors.
    pub fn from_native(b: &[u8], what: &str) -> Result<Run, Error> {
        let mut r = Reader { b, at: 0, what };
        if r.take(4)? != NATIVE_MAGIC {
            return Err(r.err(0, "not a magnet sample run (bad magic)".into()));
        }
        let version = r.u32()?;
        if version != FORMAT_VERSION {
            return Err(r.err(
                4,
                format!("format version {version}, this magnet reads {FORMAT_VERSION}"),
            ));
        }
        if b.len() < 4 + 4 {
            return Err(r.err(b.len(), "cut short".into()));
        }
        let body = &b[..b.len() - 4];
        let stored = u32::from_le_bytes(b[b.len() - 4..].try_into().expect("4 bytes"));
        if crc32fast::hash(body) != stored {
            return Err(r.err(
                b.len() - 4,
                "checksum mismatch (file damaged or cut short)".into(),
            ));
        }
        r.b = body;
        let meta_len = r.u32()? as usize;
        let meta_at = r.at;
        let meta: RunMeta = serde_json::from_slice(r.take(meta_len)?)
            .map_err(|e| r.err(meta_at, format!("meta: {e}")))?;
        let len = r.u32()? as usize;
        let nseries = r.u8()? as usize;
        if nseries != Metric::ALL.len() {
            return Err(r.err(
                r.at - 1,
                format!("{nseries} series, this magnet knows {}", Metric::ALL.len()),
            ));
        }
        if len > body.len() {
            return Err(r.err(
                r.at,
                format!("{len} buckets cannot fit in {} bytes", body.len()),
            ));
        }
        let mut series = Vec::with_capacity(nseries);
        for _ in 0..nseries {
            series.push(
                (0..len)
                    .map(|_| r.varint())
                    .collect::<Result<Vec<_>, _>>()?,
            );
        }
        let connections = (0..len)
            .map(|_| r.varint())
            .collect::<Result<Vec<_>, _>>()?;
        let sketch = match r.u8()? {
            0 => None,
            1 => Some(
                (0..len)
                    .map(|_| Ok([r.u64()?, r.u64()?]))
                    .collect::<Result<Vec<_>, Error>>()?,
            ),
            n => return Err(r.err(r.at - 1, format!("sketch flag {n}"))),
        };
        if r.at != body.len() {
            return Err(r.err(r.at, format!("{} bytes after the run", body.len() - r.at)));
        }
        Ok(Run {
            meta,
            series,
            connections,
            sketch,
        })
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

const NATIVE_MAGIC: &[u8; 4] = b"MGSR";

/// Largest run a gzip'd file may inflate to (Meta's files are a few MB).
const MAX_INFLATED: u64 = 1 << 30;

/// Meta's data-set files are gzip'd JSON (`*.txt.gz`): inflate, bounded.
fn gunzip(b: &[u8], what: &str) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let mut out = Vec::new();
    let mut d = flate2::read::MultiGzDecoder::new(b).take(MAX_INFLATED + 1);
    d.read_to_end(&mut out).map_err(|e| Error::Format {
        path: what.to_string(),
        offset: Some(out.len() as u64),
        reason: format!("gzip: {e} (after {} inflated bytes)", out.len()),
    })?;
    if out.len() as u64 > MAX_INFLATED {
        return Err(Error::Format {
            path: what.to_string(),
            offset: None,
            reason: format!("inflates to more than {MAX_INFLATED} bytes"),
        });
    }
    Ok(out)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
    what: &'a str,
}

impl<'a> Reader<'a> {
    fn err(&self, offset: usize, reason: String) -> Error {
        Error::Format {
            path: self.what.to_string(),
            offset: Some(offset as u64),
            reason,
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if self.b.len() - self.at < n {
            return Err(self.err(
                self.at,
                format!(
                    "cut short: {n} bytes needed, {} left",
                    self.b.len() - self.at
                ),
            ));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, Error> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn varint(&mut self) -> Result<u64, Error> {
        let start = self.at;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err(start, "varint longer than 64 bits".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                },
                ProgramRun {
                    name: "sample_egress".into(),
                    runs: 40,
                    ns: 2_000,
                },
            ]),
            1_000_000,
            100_000_000,
        );
        assert_eq!(c.bpf_ns, Some(5_000));
        assert_eq!(c.bpf_ns_per_packet, Some(50.0));
        assert_eq!(c.process_share, Some(0.01));
        assert!(c.line().starts_with("BPF time: 0.01 ms in 100 runs = 50 ns per packet, 0.005% of the machine's CPU; sampler CPU: 1.00 ms = 10000 ns per packet"), "{}", c.line());
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
