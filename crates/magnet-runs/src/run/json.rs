//! The JSON form: Meta's schema plus magnet's keys.

use serde_json::{json, Map, Value};

use crate::sketch;
use crate::Error;

use super::{Metric, Run, RunMeta};

impl Run {
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
        let series_of = |key: &str| number_series(o, key, &bad);
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
        let sketch = connection_sketch(o, len, &bad)?;
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
}

/// The series under `key` (None where there is none): non-negative numbers,
/// integers or (as some tools write them) floats, rounded.
fn number_series(
    o: &serde_json::Map<String, Value>,
    key: &str,
    bad: &dyn Fn(String) -> Error,
) -> Result<Option<Vec<u64>>, Error> {
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
}

/// The per-bucket connection sketches (`connectionSketch`, 32 hex digits
/// each, one per bucket of the `len`), None where the file has none.
fn connection_sketch(
    o: &serde_json::Map<String, Value>,
    len: usize,
    bad: &dyn Fn(String) -> Error,
) -> Result<Option<Vec<[u64; 2]>>, Error> {
    Ok(match o.get("connectionSketch") {
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
    })
}
