//! What a trace holds, in one pass (`magnet info`): header facts, the recording's
//! span, records per kind and layer next to what the kernel generated, loss and
//! damage. The recording's span is defined here once ([`recording_span_ns`]) and
//! used by every command that shows a duration.

use std::collections::BTreeMap;
use std::io::Read;

use serde::Serialize;

use crate::catalog::kind;
use crate::event::KindIndex;
use crate::header::{Footer, Header, LayerSource};
use crate::reader::TraceReader;

/// The recording's span, ns: from the start of the recording (`Header::clock`,
/// read just before the first hook was attached) to its stop (the END block's
/// `end_mono_ns`). A trace without that (cut short, or written before the field
/// existed) ends at its last record (`last_record_ns`, else the END block's
/// `last_ts_ns`).
pub fn recording_span_ns(header: &Header, footer: Option<&Footer>, last_record_ns: u64) -> u64 {
    let start = header.clock.monotonic_ns;
    let end = match footer {
        Some(f) if f.end_mono_ns > 0 => f.end_mono_ns,
        Some(f) => f.last_ts_ns.max(last_record_ns),
        None => last_record_ns,
    };
    end.saturating_sub(start)
}

/// Events lost in total, from the counts of LOST records (or of runs of
/// them): summed without wrapping, so that counts near 2^64 show as the
/// largest number rather than a small one. The reader's totals check,
/// `info`, `analyze` and `report` all count loss with this.
pub fn lost_total(counts: impl IntoIterator<Item = u64>) -> u64 {
    counts.into_iter().fold(0, u64::saturating_add)
}

/// How [`recording_span_ns`] found the end, in words (shown by `info`).
pub fn span_source(footer: Option<&Footer>) -> &'static str {
    match footer {
        Some(f) if f.end_mono_ns > 0 => "recording start to stop (header clock, END block)",
        _ => "recording start to the last record (no stop time in the trace)",
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct KindCount {
    pub id: u16,
    pub layer: String,
    pub hook: String,
    /// Records of this kind in the file.
    pub events: u64,
    /// Events of this kind that passed the kernel filters (recorded + lost),
    /// from the END block; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generated: Option<u64>,
}

/// The `magnet info` summary of one trace.
#[derive(Clone, Debug, Serialize)]
pub struct TraceInfo {
    pub writer: String,
    pub host: String,
    pub kernel: String,
    pub cpus: u32,
    pub start_realtime_ns: u64,
    pub start_mono_ns: u64,
    /// [`recording_span_ns`] in seconds.
    pub duration_s: f64,
    pub duration_source: String,
    pub records: u64,
    /// By kind name; kinds the END block says were generated but of which no
    /// record is in the file are listed too (with 0 events).
    pub kinds: BTreeMap<String, KindCount>,
    pub layers: BTreeMap<String, u64>,
    pub sources: Vec<LayerSource>,
    pub lost_events: u64,
    pub lost_records: u64,
    pub complete: bool,
    pub end_reason: Option<String>,
    pub damage: Vec<String>,
    pub settings: serde_json::Value,
    /// What the recording cost, from the END block; absent when the trace
    /// has none (written before the recorder kept it, or without an END
    /// block), so that older traces' output is unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<crate::cost::Cost>,
}

/// Reads every record of `reader` and summarises the trace. Damage the reader
/// steps over is listed, not fatal.
pub fn summarize<R: Read>(reader: &mut TraceReader<R>) -> TraceInfo {
    let mut counts = vec![0u64; 1 << 16];
    let (mut last, mut records, mut lost, mut lost_records) = (0u64, 0u64, 0u64, 0u64);
    let mut damage = Vec::new();
    // The trace's own catalog says where a LOST record keeps its count.
    let count_at = crate::reader::lost_count_at(reader.header());
    while let Some(item) = reader.next_record() {
        match item {
            Ok(rec) => {
                records += 1;
                counts[rec.kind() as usize] += 1;
                last = last.max(rec.ts_ns());
                if rec.kind() == kind::LOST {
                    if let Some(n) =
                        count_at.and_then(|at| crate::reader::lost_count(&rec.bytes, at))
                    {
                        lost_records += 1;
                        lost = lost_total([lost, n]);
                    }
                }
            }
            Err(e) => damage.push(e.to_string()),
        }
    }
    let footer = reader.footer().cloned();
    // Taken at the end: a damaged header is restored by then from the END
    // block's copy.
    let header = reader.header().clone();
    let index = KindIndex::new(&header.catalog);
    let mut kinds = BTreeMap::new();
    let mut layers: BTreeMap<String, u64> = BTreeMap::new();
    for (k, &n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
        let k = k as u16;
        let (name, layer, hook) = match index.get(k) {
            Some(d) => (d.name.clone(), d.layer.clone(), d.hook.clone()),
            None => (format!("unknown_{k}"), "?".into(), "?".into()),
        };
        *layers.entry(layer.clone()).or_default() += n;
        kinds.insert(
            name,
            KindCount {
                id: k,
                layer,
                hook,
                events: n,
                generated: None,
            },
        );
    }
    if let Some(f) = &footer {
        for (name, &g) in &f.generated {
            let entry = kinds.entry(name.clone()).or_insert_with(|| {
                let d = header.catalog.by_name(name);
                KindCount {
                    id: d.map_or(0, |d| d.id),
                    layer: d.map_or("?".into(), |d| d.layer.clone()),
                    hook: d.map_or("?".into(), |d| d.hook.clone()),
                    events: 0,
                    generated: None,
                }
            });
            entry.generated = Some(g);
        }
    }
    let span = recording_span_ns(&header, footer.as_ref(), last);
    TraceInfo {
        writer: header.writer.clone(),
        host: header.host.clone(),
        kernel: header.kernel.clone(),
        cpus: header.cpus,
        start_realtime_ns: header.clock.realtime_ns,
        start_mono_ns: header.clock.monotonic_ns,
        duration_s: span as f64 / 1e9,
        duration_source: span_source(footer.as_ref()).to_string(),
        records,
        kinds,
        layers,
        sources: header.layers.clone(),
        lost_events: lost,
        lost_records,
        complete: footer.is_some(),
        cost: footer.as_ref().and_then(|f| f.cost.clone()),
        end_reason: footer.map(|f| f.end_reason),
        damage,
        settings: header.settings.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::{synthetic_trace, Emitter};

    /// Once `info` said first-to-last record, `analyze` start to
    /// last record, `record` the recorder's own clock. One span now: start to stop.
    #[test]
    fn span_is_start_to_stop_and_generated_counts_are_shown() {
        let e = Emitter::builtin();
        let recs = [
            e.record(kind::APP_SEND, 1_500_000_000).set("cookie", 1),
            e.record(kind::APP_SEND, 1_500_300_000).set("cookie", 1),
            e.record(kind::LOST, 1_500_400_000).set("count", 5),
        ]
        .map(|r| r.into_bytes());
        let mut generated = BTreeMap::new();
        generated.insert("app_send".to_string(), 7);
        generated.insert("app_recv".to_string(), 3);
        let footer = Footer {
            records: 3,
            lost_kernel: 5,
            generated,
            first_ts_ns: 1_500_000_000,
            last_ts_ns: 1_500_400_000,
            end_mono_ns: 2_121_000_000,
            end_reason: "command exited".into(),
            ..Footer::default()
        };
        let bytes = synthetic_trace(1_000_000_000, &recs, Some(&footer));
        let i = summarize(&mut TraceReader::new(&bytes[..]).unwrap());
        assert_eq!(i.duration_s, 1.121);
        assert_eq!((i.records, i.lost_events, i.lost_records), (3, 5, 1));
        let send = &i.kinds["app_send"];
        assert_eq!((send.events, send.generated), (2, Some(7)));
        // Every record of a kind lost: still listed, with what was generated.
        let recv = &i.kinds["app_recv"];
        assert_eq!(
            (recv.events, recv.generated, recv.layer.as_str()),
            (0, Some(3), "app")
        );

        // Cut short (no END block): start to the last record.
        let cut = synthetic_trace(1_000_000_000, &recs, None);
        let i = summarize(&mut TraceReader::new(&cut[..]).unwrap());
        assert!(!i.complete);
        assert_eq!(i.duration_s, 0.5004);
        assert_eq!(i.kinds["app_send"].generated, None);
    }
}
