//! The "emit" half of the catalog: records built field by field, by name, the way
//! the recorder lays them out. Tests, examples and benchmarks write synthetic
//! traces with it instead of poking at byte offsets, so a field that moves in the
//! catalog moves in every synthetic trace too.
//!
//! ```
//! use magnet_trace::emit::{synthetic_trace, Emitter};
//! use magnet_trace::{kind, Event, Footer, TraceReader};
//! let e = Emitter::builtin();
//! let send = e.record(kind::APP_SEND, 2_000).tid(7).set("cookie", 9).set("ret", 100).comm("comm", "curl");
//! let bytes = synthetic_trace(1_000, [send.into_bytes()], Some(&Footer::default()));
//! let mut r = TraceReader::new(&bytes[..]).unwrap();
//! let rec = r.next_record().unwrap().unwrap();
//! let ev = Event { bytes: &rec.bytes, desc: r.header().catalog.get(rec.kind()).unwrap() };
//! assert_eq!((rec.tid(), ev.u64("cookie"), ev.i64("ret")), (7, Some(9), Some(100)));
//! ```

use std::net::IpAddr;

use crate::catalog::{Catalog, FieldType, KindDesc, FLAG_TCP_STATE, HEADER_LEN, TCP_SNAP_LEN};
use crate::events::Hdr;
use crate::header::{ClockMap, Footer, Header};
use crate::writer::TraceWriter;

/// Makes records of a catalog's kinds (by default this build's).
pub struct Emitter {
    catalog: Catalog,
    /// Kind number → position in `catalog.kinds`.
    by_id: Vec<Option<usize>>,
}

impl Emitter {
    pub fn builtin() -> Emitter {
        Emitter::new(Catalog::builtin())
    }

    pub fn new(catalog: Catalog) -> Emitter {
        let max = catalog.kinds.iter().map(|k| k.id as usize).max();
        let mut by_id = vec![None; max.map_or(0, |m| m + 1)];
        for (i, k) in catalog.kinds.iter().enumerate() {
            by_id[k.id as usize] = Some(i);
        }
        Emitter { catalog, by_id }
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// A record of `kind` at `ts_ns` with every field zero.
    ///
    /// # Panics
    /// When the catalog has no such kind (a mistake in the calling code).
    pub fn record(&self, kind: u16, ts_ns: u64) -> RecordBuilder<'_> {
        let desc = self
            .by_id
            .get(kind as usize)
            .copied()
            .flatten()
            .map(|i| &self.catalog.kinds[i])
            .unwrap_or_else(|| panic!("emit: the catalog has no kind {kind}"));
        let mut bytes = vec![0u8; (desc.size as usize).max(HEADER_LEN)];
        let mut h = Hdr::new_checked(&mut bytes[..]).expect("HEADER_LEN bytes");
        h.set_ts_ns(ts_ns);
        h.set_kind(kind);
        RecordBuilder { desc, bytes }
    }
}

/// One record being built. Setters take field names from the catalog.
pub struct RecordBuilder<'c> {
    desc: &'c KindDesc,
    bytes: Vec<u8>,
}

impl RecordBuilder<'_> {
    pub fn cpu(mut self, cpu: u16) -> Self {
        self.hdr().set_cpu(cpu);
        self
    }
    pub fn pid(mut self, pid: u32) -> Self {
        self.hdr().set_pid(pid);
        self
    }
    pub fn tid(mut self, tid: u32) -> Self {
        self.hdr().set_tid(tid);
        self
    }
    /// Appends the TCP snapshot (`--tcp-state`) and sets its header flag; its
    /// fields (`snd_nxt`, `rcv_nxt` …) can be set after this.
    pub fn snapshot(mut self) -> Self {
        let want = self.desc.size as usize + TCP_SNAP_LEN as usize;
        if self.bytes.len() < want {
            self.bytes.resize(want, 0);
        }
        let mut h = self.hdr();
        let flags = h.flags();
        h.set_flags(flags | FLAG_TCP_STATE);
        self
    }

    fn hdr(&mut self) -> Hdr<&mut [u8]> {
        Hdr::new_checked(&mut self.bytes[..]).expect("records are at least HEADER_LEN long")
    }

    fn slot(&self, name: &str, size: usize) -> usize {
        let f = self.desc.field(name).unwrap_or_else(|| {
            panic!("emit: kind {} has no field {name}", self.desc.name);
        });
        let at = f.offset as usize;
        assert!(
            at + size <= self.bytes.len(),
            "emit: field {name} of {} lies in the TCP snapshot: call snapshot() first",
            self.desc.name
        );
        at
    }

    /// Sets an integer field (truncated to the field's width; signed values as
    /// their two's complement, e.g. `v as u64` of an `i64`).
    pub fn set(mut self, name: &str, v: u64) -> Self {
        let ty = self.desc.field(name).map(|f| f.ty);
        assert!(
            !matches!(ty, Some(FieldType::Addr | FieldType::Comm)),
            "emit: {name} is not a number"
        );
        let n = ty.map_or(8, |t| t.size() as usize);
        let at = self.slot(name, n);
        self.bytes[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
        self
    }
    /// Sets an address field (IPv4 stored IPv4-mapped, as the recorder does).
    pub fn addr(mut self, name: &str, a: impl Into<IpAddr>) -> Self {
        let at = self.slot(name, 16);
        let v6 = match a.into() {
            IpAddr::V4(v4) => v4.to_ipv6_mapped(),
            IpAddr::V6(v6) => v6,
        };
        self.bytes[at..at + 16].copy_from_slice(&v6.octets());
        self
    }
    /// Sets a task-name field (at most 15 bytes are kept, NUL-terminated).
    pub fn comm(mut self, name: &str, s: &str) -> Self {
        let at = self.slot(name, 16);
        let n = s.len().min(15);
        self.bytes[at..at + 16].fill(0);
        self.bytes[at..at + n].copy_from_slice(&s.as_bytes()[..n]);
        self
    }
    pub fn kind(&self) -> u16 {
        Hdr::new_checked(&self.bytes[..])
            .expect("HEADER_LEN")
            .kind()
    }
    pub fn ts_ns(&self) -> u64 {
        Hdr::new_checked(&self.bytes[..])
            .expect("HEADER_LEN")
            .ts_ns()
    }
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

impl AsRef<[u8]> for RecordBuilder<'_> {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl From<RecordBuilder<'_>> for Vec<u8> {
    fn from(r: RecordBuilder<'_>) -> Vec<u8> {
        r.bytes
    }
}

/// The header of a synthetic trace: host `h`, kernel `6.18`, 2 CPUs, recording
/// started at CLOCK_MONOTONIC `start_ns` (wall clock 0).
pub fn synthetic_header(start_ns: u64) -> Header {
    Header::new(
        "h".into(),
        "6.18".into(),
        2,
        ClockMap {
            monotonic_ns: start_ns,
            realtime_ns: 0,
        },
    )
}

/// A whole trace file in memory: `synthetic_header(start_ns)`, the records in
/// the order given, and the END block when a footer is given (without one the
/// trace reads as cut short).
pub fn synthetic_trace<I, B>(start_ns: u64, records: I, footer: Option<&Footer>) -> Vec<u8>
where
    I: IntoIterator<Item = B>,
    B: AsRef<[u8]>,
{
    let mut w = TraceWriter::new(Vec::new(), &synthetic_header(start_ns)).expect("in memory");
    for r in records {
        w.push(r.as_ref()).expect("in memory");
    }
    match footer {
        Some(f) => w.finish(f).expect("in memory"),
        None => {
            w.flush_block().expect("in memory");
            w.into_inner()
        }
    }
}
