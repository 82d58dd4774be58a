//! Runs of several hosts taken at the same wall-clock instant (`--at`, or a
//! shared schedule), aligned bucket by bucket: bucket `i` of the merged view is
//! the same interval of real time on every host. Runs that started at
//! different instants are shifted by whole buckets; the shift is reported.

use serde_json::{json, Value};

use crate::run::{Metric, Run};
use crate::Error;

pub struct Merged {
    pub interval_ns: u64,
    /// Wall-clock start (Unix ns) of merged bucket 0: the earliest run's start.
    pub start_realtime_ns: u64,
    pub len: usize,
    pub hosts: Vec<Host>,
}

pub struct Host {
    /// Label: the run's host name, with the interface when names repeat.
    pub name: String,
    /// Buckets between the merged start and this run's bucket 0.
    pub offset: usize,
    /// Start difference not explained by whole buckets (ns): clock skew or a
    /// run that did not start on a bucket boundary of the others.
    pub residual_ns: i64,
    pub run: Run,
}

impl Host {
    /// `m` on the merged time axis (zeros outside this host's run).
    pub fn aligned(&self, m: Metric, len: usize) -> Vec<u64> {
        self.align(self.run.get(m), len)
    }

    pub fn aligned_connections(&self, len: usize) -> Vec<u64> {
        self.align(&self.run.connections, len)
    }

    fn align(&self, s: &[u64], len: usize) -> Vec<u64> {
        let mut out = vec![0; len];
        for (i, v) in s.iter().enumerate() {
            if let Some(slot) = out.get_mut(self.offset + i) {
                *slot = *v;
            }
        }
        out
    }
}

/// Aligns `runs` (same interval). `names` label them (e.g. file names) when
/// their host names are not distinct.
pub fn merge(runs: Vec<Run>, names: &[String]) -> Result<Merged, Error> {
    let Some(first) = runs.first() else {
        return Err(Error::Config("merge: no runs given".into()));
    };
    let interval_ns = first.meta.interval_ns;
    if interval_ns == 0 {
        return Err(Error::Config(format!(
            "merge: {} has no sampling interval",
            names.first().map_or("run 1", |s| s)
        )));
    }
    for (i, r) in runs.iter().enumerate() {
        if r.meta.interval_ns != interval_ns {
            return Err(Error::Config(format!(
                "merge: {} samples every {} ns, the first run every {interval_ns} ns; merge runs of one interval",
                names.get(i).map_or("a run", |s| s),
                r.meta.interval_ns
            )));
        }
    }
    let start = runs
        .iter()
        .map(|r| r.meta.start_realtime_ns)
        .min()
        .expect("non-empty");
    let host_names: Vec<&str> = runs.iter().map(|r| r.meta.host.as_str()).collect();
    let distinct = host_names
        .iter()
        .collect::<std::collections::HashSet<_>>()
        .len()
        == runs.len();
    let mut hosts = Vec::new();
    let mut len = 0;
    for (i, run) in runs.into_iter().enumerate() {
        let delta = run.meta.start_realtime_ns - start;
        let offset = ((delta + interval_ns / 2) / interval_ns) as usize;
        let residual_ns = delta as i64 - (offset as u64 * interval_ns) as i64;
        let name = if distinct && !run.meta.host.is_empty() {
            run.meta.host.clone()
        } else {
            names
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("{} {}", run.meta.host, run.meta.iface))
        };
        len = len.max(offset + run.len());
        hosts.push(Host {
            name,
            offset,
            residual_ns,
            run,
        });
    }
    Ok(Merged {
        interval_ns,
        start_realtime_ns: start,
        len,
        hosts,
    })
}

impl Merged {
    /// Sum of `m` over all hosts, bucket by bucket.
    pub fn total(&self, m: Metric) -> Vec<u64> {
        let mut out = vec![0; self.len];
        for h in &self.hosts {
            for (o, v) in out.iter_mut().zip(h.aligned(m, self.len)) {
                *o += v;
            }
        }
        out
    }

    pub fn to_json(&self) -> Value {
        let hosts: Vec<Value> = self
            .hosts
            .iter()
            .map(|h| {
                let mut o = serde_json::Map::new();
                o.insert("server_hostname".into(), json!(h.name));
                o.insert("offset".into(), json!(h.offset));
                o.insert("residual_ns".into(), json!(h.residual_ns));
                for m in Metric::ALL {
                    o.insert(m.json_key().into(), json!(h.aligned(m, self.len)));
                }
                o.insert("connections".into(), json!(h.aligned_connections(self.len)));
                Value::Object(o)
            })
            .collect();
        json!({
            "sampling_freq": self.interval_ns / 1000,
            "start_realtime_ns": self.start_realtime_ns,
            "buckets": self.len,
            "hosts": hosts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::RunMeta;

    fn run(host: &str, start_ns: u64, ingress: &[u64]) -> Run {
        let mut m = RunMeta::synthetic(host, 1_000_000, ingress.len() as u32);
        m.start_realtime_ns = start_ns;
        let mut r = Run::zeroed(m, ingress.len());
        r.get_mut(Metric::InBytes).copy_from_slice(ingress);
        r
    }

    #[test]
    fn aligns_by_start_time() {
        let t0 = 1_000_000_000_000;
        let m = merge(
            vec![
                run("a", t0, &[1, 2, 3]),
                run("b", t0 + 2_000_100, &[10, 20, 30]),
                run("c", t0, &[0, 0, 0]),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(m.len, 5);
        assert_eq!(m.hosts[1].offset, 2);
        assert_eq!(m.hosts[1].residual_ns, 100);
        assert_eq!(
            m.hosts[1].aligned(Metric::InBytes, m.len),
            vec![0, 0, 10, 20, 30]
        );
        assert_eq!(m.total(Metric::InBytes), vec![1, 2, 13, 20, 30]);
        let j = m.to_json();
        assert_eq!(j["hosts"][1]["ingressBytes"][2], 10);
        assert_eq!(j["sampling_freq"], 1000);

        let mut other = run("d", t0, &[1]);
        other.meta.interval_ns = 100_000;
        let e = merge(
            vec![run("a", t0, &[1]), other],
            &["a.json".into(), "d.json".into()],
        )
        .err()
        .unwrap();
        assert!(e.to_string().contains("d.json"), "{e}");
    }
}
