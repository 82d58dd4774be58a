//! Parquet: the table written with the parquet crate's column writers, one row
//! group per `row_group_rows` events, so memory stays bounded by two row groups
//! whatever the trace's size. The reading thread only puts records in time order
//! and copies their bytes into the group being filled; the writer thread's
//! encoders decode a full group column by column (each its share of the columns,
//! straight from the record bytes into typed builders) and encode them side by
//! side. Snappy-compressed; dictionary-encoded except the columns of unique
//! numbers ([`UNIQUE`]).

use std::io::Write;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};

use bytes::Bytes;
use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use parquet::column::writer::{get_column_writer, ColumnCloseResult, ColumnWriter};
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{WriterProperties, WriterPropertiesPtr};
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::{ColumnDescPtr, ColumnPath, Type};

use magnet_trace::{Catalog, ClockMap, FieldDesc, RecordRef};

use crate::table::{CellRef, ColType, Column, Table, COMMON};

/// Values of one column in the row group being filled: typed column builders,
/// appended to in place, so a row costs no allocation.
enum Values {
    /// i64 and u64 columns (u64 stored bit for bit, annotated unsigned).
    Int(Vec<i64>),
    Float(Vec<f64>),
    /// Text: every value's bytes one after the other, and where each ends.
    Bytes {
        data: Vec<u8>,
        ends: Vec<usize>,
    },
}

struct ColBuf {
    values: Values,
    /// Definition levels (1 present, 0 null) of a nullable column.
    defs: Option<Vec<i16>>,
}

impl ColBuf {
    /// Appends a value; false when it does not fit the column's type (a bug).
    #[inline]
    fn push(&mut self, v: CellRef<'_>) -> bool {
        match (&mut self.values, v) {
            (Values::Int(x), CellRef::I(v)) => x.push(v),
            (Values::Int(x), CellRef::U(v)) => x.push(v as i64),
            (Values::Float(x), CellRef::F(v)) => x.push(v),
            (Values::Bytes { data, ends }, CellRef::Str(s)) => {
                data.extend_from_slice(s.as_bytes());
                ends.push(data.len());
            }
            (Values::Bytes { data, ends }, CellRef::Text(d)) => {
                // Writing to a Vec cannot fail.
                let _ = write!(data, "{d}");
                ends.push(data.len());
            }
            (_, _) => return false,
        }
        true
    }
}

/// The rows of one row group as their records' bytes, in time order.
pub struct Group {
    data: Vec<u8>,
    /// Where each record's bytes end in `data`.
    ends: Vec<usize>,
    /// Each record's kind number (which columns it has).
    kinds: Vec<u16>,
    /// Kind numbers seen in the group: a column none of them has is all null.
    seen: Vec<bool>,
}

impl Group {
    fn new() -> Group {
        Group {
            data: Vec::new(),
            ends: Vec::new(),
            kinds: Vec::new(),
            seen: vec![false; 1 << 16],
        }
    }

    fn rows(&self) -> usize {
        self.ends.len()
    }

    #[inline]
    fn push(&mut self, rec: &RecordRef<'_>) {
        self.data.extend_from_slice(rec.bytes);
        self.ends.push(self.data.len());
        let k = rec.kind();
        self.kinds.push(k);
        self.seen[k as usize] = true;
    }

    fn record(&self, i: usize) -> RecordRef<'_> {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        RecordRef {
            bytes: &self.data[start..self.ends[i]],
            block_offset: 0,
        }
    }

    fn clear(&mut self) {
        self.data.clear();
        self.ends.clear();
        for &k in &self.kinds {
            self.seen[k as usize] = false;
        }
        self.kinds.clear();
    }
}

/// How the encoders decode a column: the table, and per column the fields of
/// each kind that land in it (catalog order; the last that has a value is the
/// cell's, as in [`Table::visit`]).
struct Plan<'c> {
    table: Table<'c>,
    /// `fields[col][kind]`, empty for the common columns.
    fields: Vec<Vec<Vec<&'c FieldDesc>>>,
    /// `ints[col][kind]`: the same fields, for an integer column that only
    /// fields of its own integer type land in: read straight from the bytes,
    /// as `Table::field_cell` reads them (no cell, no call per value).
    ints: Vec<Option<Vec<Vec<IntField>>>>,
}

/// An integer field read into a column of its own type: `size` bytes at
/// `offset`, little-endian, sign-extended from 32 bits where `signed32`.
#[derive(Clone, Copy)]
struct IntField {
    offset: usize,
    size: usize,
    signed32: bool,
}

impl IntField {
    /// The field as `field_cell` reads it into a column of type `col`, if it is
    /// a plain integer of that column's type.
    fn of(f: &FieldDesc, col: ColType) -> Option<IntField> {
        use magnet_trace::FieldType as T;
        let ok = matches!(f.ty, T::U8 | T::U16 | T::U32 | T::I32 | T::I64 | T::U64)
            && col == ColType::of_field(f.ty);
        ok.then(|| IntField {
            offset: f.offset as usize,
            size: f.ty.size() as usize,
            signed32: f.ty == T::I32,
        })
    }

    /// The value, or None where the record is too short to hold it.
    #[inline]
    fn read(self, bytes: &[u8]) -> Option<i64> {
        let at = self.offset;
        // Loads of the field's own width (bytes put together in a buffer and
        // read back as one u64 stall on the store).
        let v = match self.size {
            1 => *bytes.get(at)? as u64,
            2 => u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?) as u64,
            4 => u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?) as u64,
            _ => u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?),
        };
        Some(if self.signed32 {
            v as u32 as i32 as i64
        } else {
            v as i64
        })
    }
}

impl<'c> Plan<'c> {
    fn new(catalog: &'c Catalog, clock: ClockMap) -> Plan<'c> {
        let table = Table::new(catalog, clock);
        let mut fields = vec![Vec::new(); table.columns().len()];
        for k in &catalog.kinds {
            let Some(fs) = table.kind_fields(k.id) else {
                continue;
            };
            for &(at, f) in fs {
                let per_kind: &mut Vec<Vec<&FieldDesc>> = &mut fields[at];
                if per_kind.len() <= k.id as usize {
                    per_kind.resize(k.id as usize + 1, Vec::new());
                }
                per_kind[k.id as usize].push(f);
            }
        }
        let ints = fields
            .iter()
            .zip(table.columns())
            .map(|(per_kind, c)| {
                per_kind
                    .iter()
                    .map(|fs| fs.iter().map(|f| IntField::of(f, c.ty)).collect())
                    .collect::<Option<Vec<Vec<IntField>>>>()
                    .filter(|_| !per_kind.is_empty())
            })
            .collect();
        Plan {
            table,
            fields,
            ints,
        }
    }

    /// Column `col` of rows `rows` of `group` appended to `buf`.
    fn decode(
        &self,
        col: usize,
        group: &Group,
        rows: std::ops::Range<usize>,
        buf: &mut ColBuf,
    ) -> Result<(), ParquetError> {
        let misfit =
            || ParquetError::General(format!("a value of column {col} does not fit its type"));
        let n = rows.len();
        if col < COMMON.len() {
            let mut ok = true;
            for i in rows {
                self.table
                    .common_cell(&group.record(i), col, &mut |v| ok &= buf.push(v));
            }
            if let Some(d) = &mut buf.defs {
                d.resize(d.len() + n, 1);
            }
            return if ok { Ok(()) } else { Err(misfit()) };
        }
        let per_kind = &self.fields[col];
        let Some(mut defs) = buf.defs.take() else {
            return Err(ParquetError::General(format!(
                "field column {col} is required"
            )));
        };
        let any = per_kind
            .iter()
            .enumerate()
            .any(|(k, fs)| !fs.is_empty() && group.seen[k]);
        if !any {
            defs.resize(defs.len() + n, 0);
            buf.defs = Some(defs);
            return Ok(());
        }
        if let (Some(ints), Values::Int(x)) = (&self.ints[col], &mut buf.values) {
            for (i, &k) in group.kinds[rows.clone()].iter().enumerate() {
                let got = match ints.get(k as usize) {
                    Some(fs) if !fs.is_empty() => {
                        let rec = group.record(rows.start + i);
                        // The last field that has a value, as in `Table::visit`.
                        fs.iter().rev().find_map(|f| f.read(rec.bytes))
                    }
                    _ => None,
                };
                if let Some(v) = got {
                    x.push(v);
                }
                defs.push(got.is_some() as i16);
            }
            buf.defs = Some(defs);
            return Ok(());
        }
        let ty = self.table.columns()[col].ty;
        let mut ok = true;
        for (i, &k) in group.kinds[rows.clone()].iter().enumerate() {
            let fs = per_kind.get(k as usize).map_or(&[][..], Vec::as_slice);
            let mut got = false;
            if !fs.is_empty() {
                let rec = group.record(rows.start + i);
                for f in fs.iter().rev() {
                    if self
                        .table
                        .field_cell(rec.bytes, ty, f, &mut |v| ok &= buf.push(v))
                    {
                        got = true;
                        break;
                    }
                }
            }
            defs.push(got as i16);
        }
        buf.defs = Some(defs);
        if ok {
            Ok(())
        } else {
            Err(misfit())
        }
    }
}

/// The Parquet writer: rows (their records' bytes) fill one row group on the
/// caller's thread while a thread of the export's scope decodes, encodes and
/// writes the previous group, so reading and encoding overlap. Two groups go back
/// and forth between them; memory stays two row groups.
pub struct ParquetSink<'s, W: Write + Send + 's> {
    group: Group,
    /// The group to fill next, until the writer hands groups back.
    spare: Option<Group>,
    full: Option<SyncSender<Group>>,
    empty: Receiver<Group>,
    writer: Option<ScopedJoinHandle<'s, Result<W, ParquetError>>>,
    row_group_rows: usize,
}

/// Columns written without a dictionary: the clock (a new value every event),
/// sequence and acknowledgement numbers (they only grow), packet ids and IP ids
/// (one per packet), socket buffer addresses. A column of the same name that a
/// catalog makes text keeps the rule: its values are as unique.
pub const UNIQUE: &[&str] = &[
    "ts_ns",
    "time_s",
    "wall_ns",
    "seq",
    "ack",
    "pkt_id",
    "ip_id",
    "write_seq",
    "copied_seq",
    "snd_una",
    "snd_nxt",
    "rcv_nxt",
    "skb",
];

/// The Parquet schema of a table.
pub fn schema(columns: &[Column]) -> Result<Type, ParquetError> {
    let mut fields = Vec::with_capacity(columns.len());
    for c in columns {
        let (phys, logical) = match c.ty {
            ColType::U64 => (Physical::INT64, Some(LogicalType::integer(64, false))),
            ColType::I64 => (Physical::INT64, None),
            ColType::F64 => (Physical::DOUBLE, None),
            ColType::Str => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
        };
        let rep = if c.nullable {
            Repetition::OPTIONAL
        } else {
            Repetition::REQUIRED
        };
        fields.push(Arc::new(
            Type::primitive_type_builder(&c.name, phys)
                .with_repetition(rep)
                .with_logical_type(logical)
                .build()?,
        ));
    }
    Type::group_type_builder("magnet_event")
        .with_fields(fields)
        .build()
}

impl<'s, W: Write + Send + 's> ParquetSink<'s, W> {
    pub fn new(
        scope: &'s Scope<'s, '_>,
        out: W,
        catalog: &Catalog,
        clock: ClockMap,
        metadata: Vec<(String, String)>,
        row_group_rows: usize,
    ) -> Result<Self, ParquetError> {
        let columns = Table::new(catalog, clock).columns().to_vec();
        let kv = metadata
            .into_iter()
            .map(|(k, v)| KeyValue::new(k, v))
            .collect();
        let mut props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("magnet {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(kv))
            .set_max_row_group_row_count(Some(row_group_rows.max(1)));
        // Columns of numbers that are unique, or nearly, in every row that has
        // them: a dictionary of them is as large as the values and costs a hash
        // per value. They are written plain.
        for c in columns.iter().filter(|c| UNIQUE.contains(&c.name.as_str())) {
            props = props.set_column_dictionary_enabled(ColumnPath::from(c.name.as_str()), false);
        }
        let props = props.build();
        let mut writer =
            SerializedFileWriter::new(out, Arc::new(schema(&columns)?), Arc::new(props))?;
        let catalog = catalog.clone();
        let (full, full_rx) = sync_channel::<Group>(1);
        let (empty_tx, empty) = sync_channel::<Group>(2);
        let thread = std::thread::Builder::new()
            .name("magnet-parquet".into())
            .spawn_scoped(scope, move || {
                let plan = Plan::new(&catalog, clock);
                // Encoders: one per core (the reading thread mostly waits on
                // memory; the encoders do most of the work).
                let encoders = std::thread::available_parallelism()
                    .map_or(1, |n| n.get())
                    .clamp(1, 8);
                let mut bufs: Vec<ColBuf> = columns.iter().map(ColBuf::for_column).collect();
                for mut g in full_rx {
                    write_group(&mut writer, &plan, &g, &mut bufs, encoders)?;
                    g.clear();
                    // The filler may be gone (an error there): nothing to hand back to.
                    let _ = empty_tx.send(g);
                }
                writer.into_inner()
            })
            .map_err(|e| ParquetError::General(format!("starting the writer thread: {e}")))?;
        Ok(ParquetSink {
            group: Group::new(),
            spare: Some(Group::new()),
            full: Some(full),
            empty,
            writer: Some(thread),
            row_group_rows: row_group_rows.max(1),
        })
    }

    /// Adds one record as a row.
    pub fn row(&mut self, rec: &RecordRef<'_>) -> Result<(), ParquetError> {
        self.group.push(rec);
        if self.group.rows() >= self.row_group_rows {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands the buffered rows to the writer thread as one row group.
    fn flush(&mut self) -> Result<(), ParquetError> {
        if self.group.rows() == 0 {
            return Ok(());
        }
        let next = match self.spare.take() {
            Some(g) => g,
            None => match self.empty.recv() {
                Ok(g) => g,
                Err(_) => return Err(self.writer_error()),
            },
        };
        let full = std::mem::replace(&mut self.group, next);
        let sent = self.full.as_ref().map(|tx| tx.send(full).is_ok());
        if sent != Some(true) {
            return Err(self.writer_error());
        }
        Ok(())
    }

    /// Why the writer thread stopped taking row groups.
    fn writer_error(&mut self) -> ParquetError {
        self.full = None;
        match self.writer.take().map(|t| t.join()) {
            Some(Ok(Err(e))) => e,
            Some(Err(_)) => ParquetError::General("the Parquet writer thread panicked".into()),
            _ => ParquetError::General("the Parquet writer thread stopped".into()),
        }
    }

    pub fn finish(mut self) -> Result<W, ParquetError> {
        self.flush()?;
        self.full = None;
        match self.writer.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(ParquetError::General(
                "the Parquet writer thread panicked".into(),
            )),
            None => Err(ParquetError::General(
                "the Parquet writer thread stopped".into(),
            )),
        }
    }
}

impl ColBuf {
    fn for_column(c: &Column) -> ColBuf {
        ColBuf {
            values: match c.ty {
                ColType::U64 | ColType::I64 => Values::Int(Vec::new()),
                ColType::F64 => Values::Float(Vec::new()),
                ColType::Str => Values::Bytes {
                    data: Vec::new(),
                    ends: Vec::new(),
                },
            },
            defs: c.nullable.then(Vec::new),
        }
    }
}

/// Writes a full group as one row group. The columns are decoded and encoded
/// side by side, each into a buffer of its own (`encoders` threads, columns
/// dealt out in turn), then spliced into the row group in order: the chunk bytes
/// are the ones a column writer on the file writes.
fn write_group<W: Write + Send>(
    writer: &mut SerializedFileWriter<W>,
    plan: &Plan<'_>,
    group: &Group,
    bufs: &mut [ColBuf],
    encoders: usize,
) -> Result<(), ParquetError> {
    let rows = group.rows();
    let descrs = writer.schema_descr().columns().to_vec();
    let props = writer.properties().clone();
    if descrs.len() != bufs.len() {
        return Err(ParquetError::General("more columns than buffers".into()));
    }
    let mut shares: Vec<Vec<(usize, &mut ColBuf)>> =
        (0..encoders.max(1)).map(|_| Vec::new()).collect();
    let n = shares.len();
    for (i, c) in bufs.iter_mut().enumerate() {
        shares[i % n].push((i, c));
    }
    let mut chunks: Vec<Option<(Bytes, ColumnCloseResult)>> =
        (0..descrs.len()).map(|_| None).collect();
    let encoded: Vec<Result<Vec<Chunk>, ParquetError>> = std::thread::scope(|s| {
        let workers: Vec<_> = shares
            .into_iter()
            .map(|mut share| {
                let (descrs, props) = (&descrs, &props);
                s.spawn(move || {
                    // Decoded a block of rows at a time, every column of the
                    // share, so the block's records stay in the core's cache.
                    let mut at = 0;
                    while at < rows {
                        let block = at..(at + DECODE_ROWS).min(rows);
                        for (i, buf) in share.iter_mut() {
                            plan.decode(*i, group, block.clone(), buf)?;
                        }
                        at = block.end;
                    }
                    let mut arrays = Vec::new();
                    share
                        .into_iter()
                        .map(|(i, buf)| {
                            let (bytes, close) = encode_column(
                                descrs[i].clone(),
                                props.clone(),
                                buf,
                                rows,
                                &mut arrays,
                            )?;
                            Ok((i, bytes, close))
                        })
                        .collect()
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join().unwrap_or_else(|_| {
                    Err(ParquetError::General(
                        "a Parquet encoder thread panicked".into(),
                    ))
                })
            })
            .collect()
    });
    for share in encoded {
        for (i, bytes, close) in share? {
            chunks[i] = Some((bytes, close));
        }
    }
    let mut rg = writer.next_row_group()?;
    for chunk in chunks {
        let (bytes, close) =
            chunk.ok_or_else(|| ParquetError::General("a column was not encoded".into()))?;
        rg.append_column(&bytes, close)?;
    }
    rg.close()?;
    Ok(())
}

/// Rows decoded at a time: their records (tens to a few hundred bytes each)
/// fit a core's L2 cache.
const DECODE_ROWS: usize = 2048;

/// An encoded column chunk: its column's index, its bytes, what the writer said.
type Chunk = (usize, Bytes, ColumnCloseResult);

/// One column of a full group encoded as a column chunk in a buffer of its own
/// (offsets in its metadata relative to that buffer), the builders emptied.
fn encode_column(
    descr: ColumnDescPtr,
    props: WriterPropertiesPtr,
    buf: &mut ColBuf,
    rows: usize,
    arrays: &mut Vec<ByteArray>,
) -> Result<(Bytes, ColumnCloseResult), ParquetError> {
    let present = match &buf.defs {
        Some(d) if d.len() == rows => d.iter().filter(|&&l| l == 1).count(),
        None => rows,
        Some(_) => return Err(ParquetError::General("levels and rows differ".into())),
    };
    let values = match &buf.values {
        Values::Int(v) => v.len(),
        Values::Float(v) => v.len(),
        Values::Bytes { ends, .. } => ends.len(),
    };
    if values != present {
        return Err(ParquetError::General("values and levels differ".into()));
    }
    let mut sink = TrackedWrite::new(Vec::new());
    let close = {
        let mut col =
            get_column_writer(descr, props, Box::new(SerializedPageWriter::new(&mut sink)));
        let defs = buf.defs.as_deref();
        match (&mut col, &mut buf.values) {
            (ColumnWriter::Int64ColumnWriter(w), Values::Int(v)) => {
                w.write_batch(v, defs, None)?;
                v.clear();
            }
            (ColumnWriter::DoubleColumnWriter(w), Values::Float(v)) => {
                w.write_batch(v, defs, None)?;
                v.clear();
            }
            (ColumnWriter::ByteArrayColumnWriter(w), Values::Bytes { data, ends }) => {
                // One buffer for the group's text of this column; each value a
                // slice of it (no copy, no allocation per value).
                let cap = data.capacity();
                let all = Bytes::from(std::mem::replace(data, Vec::with_capacity(cap)));
                arrays.clear();
                let mut start = 0;
                for &end in ends.iter() {
                    arrays.push(ByteArray::from(all.slice(start..end)));
                    start = end;
                }
                w.write_batch(arrays, defs, None)?;
                arrays.clear();
                ends.clear();
            }
            _ => {
                return Err(ParquetError::General(
                    "column writer and buffer types differ".into(),
                ))
            }
        }
        col.close()?
    };
    if let Some(d) = &mut buf.defs {
        d.clear();
    }
    Ok((Bytes::from(sink.into_inner()?), close))
}
