//! Parquet: the table written with the parquet crate's column writers, one row
//! group per `row_group_rows` events, so memory stays bounded by two row groups
//! (one filling, one being encoded on the writer thread) whatever the trace's size. Snappy-compressed, dictionary-encoded where the
//! writer finds it pays (layer, kind, comm, addresses).

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

use crate::table::{CellRef, ColType, Column, RowSink};

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

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::Int(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Bytes { ends, .. } => ends.len(),
        }
    }

    /// Drops the last value (a column given twice in one row keeps the later).
    fn pop(&mut self) {
        match self {
            Values::Int(v) => {
                v.pop();
            }
            Values::Float(v) => {
                v.pop();
            }
            Values::Bytes { data, ends } => {
                ends.pop();
                data.truncate(ends.last().copied().unwrap_or(0));
            }
        }
    }
}

struct ColBuf {
    values: Values,
    /// Definition levels (1 present, 0 null) for nullable columns, filled lazily:
    /// a column no row of the group has touched since row r holds r levels, and
    /// the missing zeros are added when it is next given a value or at the flush.
    defs: Option<Vec<i16>>,
}

/// The row group being filled, as [`crate::table::Table::visit`]'s sink.
pub struct Group {
    cols: Vec<ColBuf>,
    /// Rows complete in the group; the row being filled is number `rows`.
    rows: usize,
    /// The first cell that did not fit its column (a bug, reported by `row`).
    misfit: Option<String>,
}

impl RowSink for Group {
    #[inline]
    fn cell(&mut self, col: usize, v: CellRef<'_>) {
        let Some(buf) = self.cols.get_mut(col) else {
            self.misfit
                .get_or_insert_with(|| format!("no column {col}"));
            return;
        };
        match &mut buf.defs {
            Some(d) if d.len() > self.rows => buf.values.pop(),
            Some(d) => {
                d.resize(self.rows, 0);
                d.push(1);
            }
            None => {}
        }
        match (&mut buf.values, v) {
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
            (_, _) => {
                // Keep the column's levels and values in step; the export fails.
                if let Some(d) = &mut buf.defs {
                    d.pop();
                }
                self.misfit.get_or_insert_with(|| {
                    format!("a value of column {col} does not fit its type")
                });
            }
        }
    }
}

/// The Parquet writer: rows fill one row group's column builders on the
/// caller's thread while a thread of the export's scope encodes and writes the
/// previous group (dictionaries, levels, Snappy), so reading and encoding overlap.
/// Two groups go back and forth between them; memory stays two row groups.
pub struct ParquetSink<'s, W: Write + Send + 's> {
    group: Group,
    /// The group to fill next, until the writer hands groups back.
    spare: Option<Group>,
    full: Option<SyncSender<Group>>,
    empty: Receiver<Group>,
    writer: Option<ScopedJoinHandle<'s, Result<W, ParquetError>>>,
    row_group_rows: usize,
}

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
        columns: &[Column],
        metadata: Vec<(String, String)>,
        row_group_rows: usize,
    ) -> Result<Self, ParquetError> {
        let kv = metadata
            .into_iter()
            .map(|(k, v)| KeyValue::new(k, v))
            .collect();
        let mut props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("magnet {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(kv))
            .set_max_row_group_row_count(Some(row_group_rows.max(1)));
        // The clock columns hold a different value in nearly every row: a
        // dictionary of them is as large as the values and costs a hash per row.
        for name in ["ts_ns", "time_s", "wall_ns"] {
            props = props.set_column_dictionary_enabled(ColumnPath::from(name), false);
        }
        let props = props.build();
        let mut writer =
            SerializedFileWriter::new(out, Arc::new(schema(columns)?), Arc::new(props))?;
        let group = || Group {
            cols: columns
                .iter()
                .map(|c| ColBuf {
                    values: match c.ty {
                        ColType::U64 | ColType::I64 => Values::Int(Vec::new()),
                        ColType::F64 => Values::Float(Vec::new()),
                        ColType::Str => Values::Bytes {
                            data: Vec::new(),
                            ends: Vec::new(),
                        },
                    },
                    defs: c.nullable.then(Vec::new),
                })
                .collect(),
            rows: 0,
            misfit: None,
        };
        let (full, full_rx) = sync_channel::<Group>(1);
        let (empty_tx, empty) = sync_channel::<Group>(2);
        let thread = std::thread::Builder::new()
            .name("magnet-parquet".into())
            .spawn_scoped(scope, move || {
                // Encoders: the cores left beside the thread that fills the groups.
                let encoders = std::thread::available_parallelism()
                    .map_or(1, |n| n.get())
                    .clamp(1, 8);
                for mut g in full_rx {
                    write_group(&mut writer, &mut g, encoders)?;
                    // The filler may be gone (an error there): nothing to hand back to.
                    let _ = empty_tx.send(g);
                }
                writer.into_inner()
            })
            .map_err(|e| ParquetError::General(format!("starting the writer thread: {e}")))?;
        Ok(ParquetSink {
            group: group(),
            spare: Some(group()),
            full: Some(full),
            empty,
            writer: Some(thread),
            row_group_rows: row_group_rows.max(1),
        })
    }

    /// Adds one row: `fill` hands its cells to the row group's column builders.
    pub fn row(&mut self, fill: impl FnOnce(&mut Group)) -> Result<(), ParquetError> {
        fill(&mut self.group);
        if let Some(m) = self.group.misfit.take() {
            return Err(ParquetError::General(m));
        }
        self.group.rows += 1;
        if self.group.rows >= self.row_group_rows {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands the buffered rows to the writer thread as one row group.
    fn flush(&mut self) -> Result<(), ParquetError> {
        if self.group.rows == 0 {
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

/// Writes a full group as one row group and empties it for reuse. The columns
/// are encoded side by side, each into a buffer of its own (`encoders` threads,
/// columns dealt out in turn), then spliced into the row group in order: the
/// chunk bytes are the ones a column writer on the file writes.
fn write_group<W: Write + Send>(
    writer: &mut SerializedFileWriter<W>,
    group: &mut Group,
    encoders: usize,
) -> Result<(), ParquetError> {
    let rows = group.rows;
    let descrs = writer.schema_descr().columns().to_vec();
    let props = writer.properties().clone();
    if descrs.len() != group.cols.len() {
        return Err(ParquetError::General("more columns than buffers".into()));
    }
    let mut shares: Vec<Vec<(usize, &mut ColBuf)>> =
        (0..encoders.max(1)).map(|_| Vec::new()).collect();
    let n = shares.len();
    for (i, c) in group.cols.iter_mut().enumerate() {
        shares[i % n].push((i, c));
    }
    let mut chunks: Vec<Option<(Bytes, ColumnCloseResult)>> =
        (0..descrs.len()).map(|_| None).collect();
    let encoded: Vec<Result<Vec<Chunk>, ParquetError>> = std::thread::scope(|s| {
        let workers: Vec<_> = shares
            .into_iter()
            .map(|share| {
                let (descrs, props) = (&descrs, &props);
                s.spawn(move || {
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
    group.rows = 0;
    Ok(())
}

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
    match &mut buf.defs {
        Some(d) => d.resize(rows, 0),
        None if buf.values.len() != rows => {
            return Err(ParquetError::General("null in a required column".into()));
        }
        None => {}
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
