//! magnet's exports: a trace (`.mgt`) written as
//!
//! - **Parquet** (DuckDB, Spark, pandas), **CSV** or **JSON lines**: one row per
//!   event, common columns then every catalog field as a nullable column
//!   ([`table`]; the columns are listed in `docs/export.md`);
//! - **Perfetto**: Chrome Trace Event Format JSON with a process per connection,
//!   a track per layer, per-CPU context-switch slices, TCP counters and LOST
//!   markers ([`perfetto`]).
//!
//! Exports stream: records are read, put in time order within a bounded window
//! and written as they come (Parquet a row group at a time, encoded on a thread
//! of its own while the next one fills), so memory does not
//! grow with the trace. Damage in the trace (a cut-short file, a bad block) is
//! passed to the caller's `on_damage` and the export goes on with what is left.
//!
//! ```
//! use magnet_export::{export, Format, Options};
//! use magnet_trace::{ClockMap, Footer, Header, TraceReader, TraceWriter};
//! let header = Header::new("host".into(), "6.18".into(), 1, ClockMap::default());
//! let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
//! let mut rec = vec![0u8; 40];
//! rec[8] = 1; // kind LOST
//! w.push(&rec).unwrap();
//! let bytes = w.finish(&Footer::default()).unwrap();
//! let mut r = TraceReader::new(&bytes[..]).unwrap();
//! let mut out = Vec::new();
//! let sum = export(&mut r, Format::Csv, &mut out, &Options::default(), &mut |_| {}).unwrap();
//! assert_eq!(sum.rows, 1);
//! assert_eq!(String::from_utf8(out).unwrap().lines().count(), 2); // header + row
//! ```

use std::collections::BTreeMap;
use std::io::{Read, Write};

use magnet_trace::{Header, ReorderBuffer, TraceError, TraceReader};

pub mod perfetto;
mod pq;
pub mod table;
mod text;

/// The parquet crate this one writes with, for readers (tests) that want the same version.
pub use parquet;
pub use perfetto::PerfettoStats;
pub use table::{schema_markdown, Cell, CellRef, ColType, Column, RowSink, Table};

/// An export format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Perfetto,
    Parquet,
    Csv,
    Jsonl,
}

impl Format {
    pub const ALL: [(&'static str, Format); 4] = [
        ("perfetto", Format::Perfetto),
        ("parquet", Format::Parquet),
        ("csv", Format::Csv),
        ("jsonl", Format::Jsonl),
    ];

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("?", |(n, _)| n)
    }
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Format, String> {
        Self::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(s))
            .map(|(_, f)| *f)
            .ok_or_else(|| format!("unknown export format `{s}` (perfetto, parquet, csv, jsonl)"))
    }
}

#[derive(Clone, Debug)]
pub struct Options {
    /// Records held back to put the output in time order (as `magnet parse`).
    pub window: usize,
    /// Rows per Parquet row group (what the writer holds in memory).
    pub row_group_rows: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            window: 65536,
            row_group_rows: 65536,
        }
    }
}

/// What an export wrote.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Events exported (rows, or Perfetto source events).
    pub rows: u64,
    /// Events per kind name (`unknown_N` for kinds the catalog lacks), as `magnet info` counts them.
    pub per_kind: BTreeMap<String, u64>,
    /// Damage the reader reported (each also passed to `on_damage`).
    pub damage: Vec<String>,
    /// Whether the trace ended with its END block.
    pub complete: bool,
    /// Set for the Perfetto format.
    pub perfetto: Option<PerfettoStats>,
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("writing the export: {0}")]
    Io(#[from] std::io::Error),
    #[error("writing Parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
}

/// Exports every record of `reader` to `out` in `format`. Damage the reader
/// reports goes to `on_damage` (and into the summary) and the export goes on.
pub fn export<R: Read, W: Write + Send>(
    reader: &mut TraceReader<R>,
    format: Format,
    out: W,
    opts: &Options,
    on_damage: &mut dyn FnMut(&TraceError),
) -> Result<Summary, ExportError> {
    // The Parquet writer encodes on a thread of this scope.
    std::thread::scope(|scope| export_in(scope, reader, format, out, opts, on_damage))
}

fn export_in<'s, R: Read, W: Write + Send + 's>(
    scope: &'s std::thread::Scope<'s, '_>,
    reader: &mut TraceReader<R>,
    format: Format,
    out: W,
    opts: &Options,
    on_damage: &mut dyn FnMut(&TraceError),
) -> Result<Summary, ExportError> {
    let header = reader.header().clone();
    let table = Table::new(&header.catalog, header.clock);
    let mut sum = Summary::default();
    let mut sink = open_sink(scope, format, out, &header, &table, opts)?;
    let mut row = Vec::new();
    // Events per kind number, named at the end (no name looked up per event).
    let mut per_id = vec![0u64; 1 << 16];
    // The window's records live in reusable slots (no buffer per record);
    // the order is TimeOrdered's.
    let mut ordered = ReorderBuffer::new(reader, opts.window);
    while let Some(item) = ordered.next() {
        let rec = match item {
            Ok(r) => r,
            Err(e) => {
                on_damage(&e);
                sum.damage.push(e.to_string());
                continue;
            }
        };
        sum.rows += 1;
        per_id[rec.kind() as usize] += 1;
        match &mut sink {
            Sink::Perfetto(p) => p.record(&rec)?,
            Sink::Csv(w) => {
                table.fill(&rec, &mut row);
                w.row(&row)?;
            }
            Sink::Jsonl(w) => {
                table.fill(&rec, &mut row);
                w.row(&row)?;
            }
            Sink::Parquet(w) => w.row(&rec)?,
        }
    }
    drop(ordered);
    for (id, &n) in per_id.iter().enumerate() {
        if n > 0 {
            *sum.per_kind
                .entry(table.kind_name_of(id as u16))
                .or_default() += n;
        }
    }
    sum.complete = reader.footer().is_some();
    sum.perfetto = finish_sink(sink, &header, sum.complete)?;
    Ok(sum)
}

/// The writer of `format` over `out`, with the trace's host, kernel and
/// clock where the format keeps them.
fn open_sink<'c, 's, W: Write + Send + 's>(
    scope: &'s std::thread::Scope<'s, '_>,
    format: Format,
    out: W,
    header: &'c Header,
    table: &Table,
    opts: &Options,
) -> Result<Sink<'c, 's, W>, ExportError> {
    Ok(match format {
        Format::Csv => Sink::Csv(text::Csv::new(out, table.columns())?),
        Format::Jsonl => Sink::Jsonl(text::Jsonl::new(out, table.columns())),
        Format::Parquet => {
            let meta = vec![
                ("magnet.host".to_string(), header.host.clone()),
                ("magnet.kernel".to_string(), header.kernel.clone()),
                ("magnet.writer".to_string(), header.writer.clone()),
                (
                    "magnet.start_realtime_ns".to_string(),
                    header.clock.realtime_ns.to_string(),
                ),
            ];
            Sink::Parquet(Box::new(pq::ParquetSink::new(
                scope,
                out,
                &header.catalog,
                header.clock,
                meta,
                opts.row_group_rows,
            )?))
        }
        Format::Perfetto => Sink::Perfetto(Box::new(perfetto::Perfetto::new(
            out,
            &header.catalog,
            header.clock,
        )?)),
    })
}

/// Finishes the writer: flushes what it holds and, for Perfetto, writes the
/// trace's metadata (`complete`: the trace had its END block) and returns
/// its statistics.
fn finish_sink<W: Write + Send>(
    sink: Sink<'_, '_, W>,
    header: &Header,
    complete: bool,
) -> Result<Option<PerfettoStats>, ExportError> {
    match sink {
        Sink::Csv(w) => {
            w.finish()?;
        }
        Sink::Jsonl(w) => {
            w.finish()?;
        }
        Sink::Parquet(w) => {
            w.finish()?.flush()?;
        }
        Sink::Perfetto(p) => {
            let meta = serde_json::json!({
                "magnet-version": header.writer,
                "host": header.host,
                "kernel": header.kernel,
                "cpus": header.cpus,
                "start_realtime_ns": header.clock.realtime_ns,
                "complete": complete,
            });
            let (_, stats) = p.finish(meta)?;
            return Ok(Some(stats));
        }
    }
    Ok(None)
}

enum Sink<'c, 's, W: Write + Send + 's> {
    Csv(text::Csv<W>),
    Jsonl(text::Jsonl<W>),
    Parquet(Box<pq::ParquetSink<'s, W>>),
    Perfetto(Box<perfetto::Perfetto<'c, W>>),
}
