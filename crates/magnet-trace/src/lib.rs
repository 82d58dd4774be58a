//! magnet's trace file (`.mgt`): what the recorder writes and every reader reads.
//!
//! A trace is a self-describing header (host, kernel, clock mapping, the event
//! catalog, recorder settings) followed by checksummed blocks of records and an
//! END block with the run's totals. `docs/FORMAT.md` describes the bytes.
//!
//! ```
//! use magnet_trace::{Catalog, ClockMap, Footer, Header, TraceReader, TraceWriter};
//! let header = Header::new("host".into(), "6.18".into(), 2, ClockMap::default());
//! let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
//! let mut rec = vec![0u8; 40];
//! rec[8] = 1; // kind LOST
//! w.push(&rec).unwrap();
//! let bytes = w.finish(&Footer::default()).unwrap();
//! let mut r = TraceReader::new(&bytes[..]).unwrap();
//! assert_eq!(r.next_record().unwrap().unwrap().kind(), 1);
//! assert!(r.next_record().is_none());
//! assert!(r.footer().is_some());
//! ```

pub mod block;
pub mod catalog;
pub mod cost;
pub mod delta;
pub mod emit;
pub mod error;
pub mod event;
pub mod events;
pub mod header;
pub mod order;
pub mod print;
pub mod reader;
pub mod summary;
pub mod writer;

pub use catalog::{kind, Catalog, FieldDesc, FieldType, KindDesc};
pub use cost::{Cost, ProgramCost, Sampled};
pub use error::TraceError;
pub use event::{Event, KindIndex, Value};
pub use header::{ClockMap, Footer, Header, Interface, LayerSource};
pub use order::{ReorderBuffer, TimeOrdered};
pub use reader::{Record, RecordRef, TraceReader};
pub use summary::{lost_total, recording_span_ns, summarize, KindCount, TraceInfo};
pub use writer::TraceWriter;

/// Iterates a reader's records (errors included) as a plain iterator.
pub struct Records<'r, R: std::io::Read>(pub &'r mut TraceReader<R>);

impl<R: std::io::Read> Iterator for Records<'_, R> {
    type Item = Result<Record, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next_record()
    }
}
