//! Analyses of magnet traces: what the application asked of the network and what
//! each layer made of it.
//!
//! - **connections**: every socket cookie with its 5-tuple, processes, lifetime
//!   and app-level totals;
//! - **modulation** per connection, layer (app, tcp, ip, dev) and direction:
//!   count, mean/median/p99 of unit size and of the interval between units, data
//!   rate, and how many app calls became how many packets (MAGNeT's Table III);
//! - **TCP state over time** from the `--tcp-state` snapshots;
//! - **latency through the stack**, matched by TCP sequence ranges;
//! - **scheduler** statistics.
//!
//! One module per job: `flows` (which socket a packet belongs to),
//! `connections` (identity and the per-connection report), `tcp` (segments from
//! sequence numbers, state snapshots), `latency` (send and receive paths),
//! `series` (unit accumulators and plot marks), `sched`; `analyzer` dispatches
//! records to them. Text, JSON and the HTML report all show this one
//! [`Analysis`].
//!
//! The [`Analyzer`] takes records one at a time (in time order: [`analyze`]
//! sorts them in batches within a window) and keeps bounded state: distributions are
//! exact up to a few thousand distinct values and then coarsened, plot series
//! are decimated, per-packet maps are swept by age. `docs/analyze.md` explains
//! every number.
//!
//! ```
//! use magnet_analyze::{analyze, Options};
//! use magnet_trace::{ClockMap, Footer, Header, TraceReader, TraceWriter};
//! let header = Header::new("h".into(), "6.18".into(), 1, ClockMap::default());
//! let bytes = TraceWriter::new(Vec::new(), &header).unwrap().finish(&Footer::default()).unwrap();
//! let mut reader = TraceReader::new(&bytes[..]).unwrap();
//! let a = analyze(&mut reader, &Options::default());
//! assert!(a.connections.is_empty() && a.trace.complete);
//! ```

mod analyzer;
mod connections;
pub mod dist;
mod fields;
mod flows;
mod latency;
pub mod model;
mod order;
mod sched;
mod series;
mod tcp;

use std::collections::HashMap;
use std::io::Read;

use magnet_trace::TraceReader;

pub use analyzer::Analyzer;
pub use dist::{Dist, Stats};
pub use model::*;

/// FxHash (as in rustc): the maps are keyed by cookies and packet ids the
/// trace gives, not by anything an attacker picks, so SipHash buys nothing.
#[derive(Default, Clone, Copy)]
pub(crate) struct Fx(u64);

impl std::hash::Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(v as u64)
    }
    fn write_u16(&mut self, v: u16) {
        self.write_u64(v as u64)
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64)
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64)
    }
}

pub(crate) type Map<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fx>>;

/// What to analyse and keep.
#[derive(Clone, Debug)]
pub struct Options {
    /// Keep plot series (unit marks, TCP samples, latency histograms, switch bins).
    pub series: bool,
    /// Most points per series before decimation.
    pub series_cap: usize,
    /// Width of the per-CPU context-switch bins (doubled as needed to stay under
    /// `series_cap` bins).
    pub sched_bin_ns: u64,
    /// Records held back to sort by time.
    pub window: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            series: false,
            series_cap: 20_000,
            sched_bin_ns: 10_000_000,
            window: 65536,
        }
    }
}

/// Reads a whole trace (in time order) and analyses it. Damage the reader steps
/// over is listed in `trace.damage`; a trace cut short is analysed up to the cut.
pub fn analyze<R: Read>(reader: &mut TraceReader<R>, opts: &Options) -> Analysis {
    let header = reader.header().clone();
    let mut a = Analyzer::new(&header, opts.clone());
    let mut damage = Vec::new();
    let mut batched = order::Batched::new(|out| reader.append_record(out), opts.window);
    while let Some(item) = batched.pull() {
        match item {
            Ok(rec) => a.push_ref(rec),
            Err(e) => damage.push(e.to_string()),
        }
    }
    drop(batched);
    let footer = reader.footer();
    let mut out = a.finish_with(footer);
    out.trace.damage = damage;
    out.trace.complete = footer.is_some();
    out
}

/// Layers of the modulation table, in stack order, and the two directions.
pub const LAYERS: [&str; 4] = ["app", "tcp", "ip", "dev"];
pub const DIRS: [&str; 2] = ["out", "in"];

/// Seconds from `origin` (the recording's start) to `ts`.
pub(crate) fn secs(ts: u64, origin: u64) -> f64 {
    (ts as i128 - origin as i128) as f64 / 1e9
}

impl Connection {
    /// The modulation row of `layer` in `dir`, if that layer saw units.
    pub fn row(&self, layer: &str, dir: &str) -> Option<&LayerRow> {
        self.modulation
            .iter()
            .find(|r| r.layer == layer && r.dir == dir)
    }
}
