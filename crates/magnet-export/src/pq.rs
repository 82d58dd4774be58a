//! Parquet: the table written with the parquet crate's column writers, one row
//! group per `row_group_rows` events, so memory stays bounded by one row group
//! whatever the trace's size. Snappy-compressed, dictionary-encoded where the
//! writer finds it pays (layer, kind, comm, addresses).

use std::io::Write;
use std::sync::Arc;

use parquet::basic::{Compression, LogicalType, Repetition, Type as Physical};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

use crate::table::{Cell, ColType, Column};

/// Values of one column in the row group being filled.
enum Values {
    /// i64 and u64 columns (u64 stored bit for bit, annotated unsigned).
    Int(Vec<i64>),
    Float(Vec<f64>),
    Bytes(Vec<ByteArray>),
}

struct ColBuf {
    values: Values,
    /// Definition levels (1 present, 0 null) for nullable columns.
    defs: Option<Vec<i16>>,
}

pub struct ParquetSink<W: Write + Send> {
    writer: SerializedFileWriter<W>,
    cols: Vec<ColBuf>,
    rows: usize,
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

impl<W: Write + Send> ParquetSink<W> {
    pub fn new(
        out: W,
        columns: &[Column],
        metadata: Vec<(String, String)>,
        row_group_rows: usize,
    ) -> Result<Self, ParquetError> {
        let kv = metadata
            .into_iter()
            .map(|(k, v)| KeyValue::new(k, v))
            .collect();
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("magnet {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(kv))
            .set_max_row_group_row_count(Some(row_group_rows.max(1)))
            .build();
        let writer = SerializedFileWriter::new(out, Arc::new(schema(columns)?), Arc::new(props))?;
        let cols = columns
            .iter()
            .map(|c| ColBuf {
                values: match c.ty {
                    ColType::U64 | ColType::I64 => Values::Int(Vec::new()),
                    ColType::F64 => Values::Float(Vec::new()),
                    ColType::Str => Values::Bytes(Vec::new()),
                },
                defs: c.nullable.then(Vec::new),
            })
            .collect();
        Ok(ParquetSink {
            writer,
            cols,
            rows: 0,
            row_group_rows: row_group_rows.max(1),
        })
    }

    pub fn row(&mut self, row: &[Cell]) -> Result<(), ParquetError> {
        for (buf, cell) in self.cols.iter_mut().zip(row) {
            let present = !matches!(cell, Cell::Null);
            match &mut buf.defs {
                Some(d) => d.push(present as i16),
                None if !present => {
                    return Err(ParquetError::General("null in a required column".into()));
                }
                None => {}
            }
            match (&mut buf.values, cell) {
                (_, Cell::Null) => {}
                (Values::Int(v), Cell::I(x)) => v.push(*x),
                (Values::Int(v), Cell::U(x)) => v.push(*x as i64),
                (Values::Float(v), Cell::F(x)) => v.push(*x),
                (Values::Bytes(v), Cell::Str(s)) => v.push(ByteArray::from(s.as_str())),
                (_, c) => {
                    return Err(ParquetError::General(format!(
                        "cell {c:?} does not fit its column"
                    )))
                }
            }
        }
        self.rows += 1;
        if self.rows >= self.row_group_rows {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the buffered rows as one row group.
    fn flush(&mut self) -> Result<(), ParquetError> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut rg = self.writer.next_row_group()?;
        let mut bufs = self.cols.iter_mut();
        while let Some(mut col) = rg.next_column()? {
            let buf = bufs
                .next()
                .ok_or_else(|| ParquetError::General("more columns than buffers".into()))?;
            let defs = buf.defs.as_deref();
            match (col.untyped(), &buf.values) {
                (ColumnWriter::Int64ColumnWriter(w), Values::Int(v)) => {
                    w.write_batch(v, defs, None)?;
                }
                (ColumnWriter::DoubleColumnWriter(w), Values::Float(v)) => {
                    w.write_batch(v, defs, None)?;
                }
                (ColumnWriter::ByteArrayColumnWriter(w), Values::Bytes(v)) => {
                    w.write_batch(v, defs, None)?;
                }
                _ => {
                    return Err(ParquetError::General(
                        "column writer and buffer types differ".into(),
                    ))
                }
            }
            col.close()?;
            if let Some(d) = &mut buf.defs {
                d.clear();
            }
            match &mut buf.values {
                Values::Int(v) => v.clear(),
                Values::Float(v) => v.clear(),
                Values::Bytes(v) => v.clear(),
            }
        }
        rg.close()?;
        self.rows = 0;
        Ok(())
    }

    pub fn finish(mut self) -> Result<W, ParquetError> {
        self.flush()?;
        self.writer.into_inner()
    }
}
