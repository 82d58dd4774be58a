//! The flat table every row-oriented export writes (Parquet, CSV, JSON lines):
//! one row per event, a fixed set of common columns, then the union of every
//! field of every kind in the trace's catalog. A field a kind does not have, or
//! that a record is too short to hold (the optional TCP snapshot), is null.
//!
//! Column names and types come from the catalog the trace carries, so they are
//! stable for a given catalog; `docs/export.md` lists them for this build's
//! catalog (`schema_markdown` generates that list).

use std::fmt::Write as _;

use magnet_trace::{Catalog, ClockMap, Event, FieldDesc, FieldType, KindIndex, RecordRef, Value};

/// The type of a column, the same in every format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColType {
    /// Unsigned 64-bit integer (Parquet INT64 annotated unsigned, DuckDB UBIGINT).
    U64,
    /// Signed 64-bit integer (Parquet INT64, DuckDB BIGINT).
    I64,
    /// 64-bit float (Parquet DOUBLE).
    F64,
    /// UTF-8 text (Parquet BYTE_ARRAY annotated STRING, DuckDB VARCHAR).
    Str,
}

impl ColType {
    pub fn name(self) -> &'static str {
        match self {
            ColType::U64 => "u64",
            ColType::I64 => "i64",
            ColType::F64 => "f64",
            ColType::Str => "string",
        }
    }

    /// The column type a catalog field type becomes. Integers that fit an i64
    /// are i64; u64 stays unsigned; addresses, task names, TCP states and hex
    /// values (packet ids, kernel addresses) are text, written as `parse` shows them.
    pub fn of_field(t: FieldType) -> ColType {
        match t {
            FieldType::U8 | FieldType::U16 | FieldType::U32 | FieldType::I32 | FieldType::I64 => {
                ColType::I64
            }
            FieldType::U64 => ColType::U64,
            FieldType::Addr | FieldType::Comm | FieldType::TcpState | FieldType::Hex64 => {
                ColType::Str
            }
        }
    }

    /// Two kinds giving a field of the same name different types: the column
    /// takes one that holds both without loss.
    fn merge(self, other: ColType) -> ColType {
        if self == other {
            self
        } else {
            ColType::Str
        }
    }
}

/// One column of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: ColType,
    /// False for the common columns, which every row has.
    pub nullable: bool,
    /// Kinds that carry this field (empty for the common columns).
    pub kinds: Vec<String>,
}

/// The common columns, in order, with what each holds.
pub const COMMON: &[(&str, ColType, &str)] = &[
    (
        "ts_ns",
        ColType::U64,
        "kernel CLOCK_MONOTONIC timestamp of the event, ns",
    ),
    (
        "time_s",
        ColType::F64,
        "seconds since the recording started (the header's clock mapping point)",
    ),
    (
        "wall_ns",
        ColType::I64,
        "wall-clock time, ns since the Unix epoch (UTC)",
    ),
    ("cpu", ColType::I64, "CPU the event was recorded on"),
    (
        "pid",
        ColType::I64,
        "process (tgid) current when the event was recorded",
    ),
    (
        "tid",
        ColType::I64,
        "thread current when the event was recorded",
    ),
    (
        "flags",
        ColType::I64,
        "record flags (1: a TCP snapshot follows the body)",
    ),
    (
        "layer",
        ColType::Str,
        "app, tcp, ip, qdisc, dev, drop, sched, meta (`?` for a kind the catalog lacks)",
    ),
    (
        "kind",
        ColType::Str,
        "event kind name (`unknown_N` for a kind number the catalog lacks)",
    ),
];

/// A cell of a row.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    U(u64),
    I(i64),
    F(f64),
    Str(String),
}

/// The schema for one catalog, and how to turn a record of it into a row.
pub struct Table<'c> {
    columns: Vec<Column>,
    index: KindIndex<'c>,
    /// Per kind id: (column index, field) for each of the kind's fields.
    plan: Vec<Vec<(usize, &'c FieldDesc)>>,
    clock: ClockMap,
}

impl<'c> Table<'c> {
    pub fn new(catalog: &'c Catalog, clock: ClockMap) -> Table<'c> {
        let mut columns: Vec<Column> = COMMON
            .iter()
            .map(|(n, t, _)| Column {
                name: n.to_string(),
                ty: *t,
                nullable: false,
                kinds: Vec::new(),
            })
            .collect();
        let max_id = catalog
            .kinds
            .iter()
            .map(|k| k.id as usize)
            .max()
            .unwrap_or(0);
        let mut plan = vec![Vec::new(); max_id + 1];
        let mut kinds: Vec<_> = catalog.kinds.iter().collect();
        kinds.sort_by_key(|k| k.id);
        for k in kinds {
            for f in &k.fields {
                let ty = ColType::of_field(f.ty);
                // A field named like a common column keeps its value under a prefix.
                let name = if COMMON.iter().any(|(n, _, _)| *n == f.name) {
                    format!("field_{}", f.name)
                } else {
                    f.name.clone()
                };
                let at = match columns.iter().position(|c| c.name == name) {
                    Some(at) => {
                        let c = &mut columns[at];
                        c.ty = c.ty.merge(ty);
                        at
                    }
                    None => {
                        columns.push(Column {
                            name,
                            ty,
                            nullable: true,
                            kinds: Vec::new(),
                        });
                        columns.len() - 1
                    }
                };
                if !columns[at].kinds.contains(&k.name) {
                    columns[at].kinds.push(k.name.clone());
                }
                plan[k.id as usize].push((at, f));
            }
        }
        Table {
            columns,
            index: KindIndex::new(catalog),
            plan,
            clock,
        }
    }

    pub fn columns(&self) -> &[Column] {
        &self.columns
    }

    /// The kind name of a record as the row shows it (and `magnet info` counts it).
    pub fn kind_name(&self, rec: &RecordRef<'_>) -> String {
        match self.index.get(rec.kind()) {
            Some(d) => d.name.clone(),
            None => format!("unknown_{}", rec.kind()),
        }
    }

    /// Fills `row` (resized to the column count) with one record's values.
    pub fn fill(&self, rec: &RecordRef<'_>, row: &mut Vec<Cell>) {
        row.clear();
        row.resize(self.columns.len(), Cell::Null);
        let ts = rec.ts_ns();
        row[0] = Cell::U(ts);
        row[1] = Cell::F((ts as i128 - self.clock.monotonic_ns as i128) as f64 / 1e9);
        row[2] = Cell::I(self.clock.to_realtime(ts) as i64);
        row[3] = Cell::I(rec.cpu() as i64);
        row[4] = Cell::I(rec.pid() as i64);
        row[5] = Cell::I(rec.tid() as i64);
        row[6] = Cell::I(rec.flags() as i64);
        let Some(desc) = self.index.get(rec.kind()) else {
            row[7] = Cell::Str("?".into());
            row[8] = Cell::Str(format!("unknown_{}", rec.kind()));
            return;
        };
        row[7] = Cell::Str(desc.layer.clone());
        row[8] = Cell::Str(desc.name.clone());
        let ev = Event {
            bytes: rec.bytes,
            desc,
        };
        for &(at, f) in &self.plan[desc.id as usize] {
            if let Some(v) = magnet_trace::event::decode_field(ev.bytes, f) {
                row[at] = cell(self.columns[at].ty, v);
            }
        }
    }
}

/// A value in the column's type (the merge rule guarantees it fits).
fn cell(ty: ColType, v: Value) -> Cell {
    match (ty, v) {
        (ColType::Str, Value::Str(s)) => Cell::Str(s),
        (ColType::Str, v) => Cell::Str(v.to_string()),
        (ColType::U64, v) => v.as_u64().map_or(Cell::Null, Cell::U),
        (ColType::I64, v) => v.as_i64().map_or(Cell::Null, Cell::I),
        (ColType::F64, v) => v.as_i64().map_or(Cell::Null, |i| Cell::F(i as f64)),
    }
}

/// The schema as a Markdown table (what `docs/export.md` lists).
pub fn schema_markdown(catalog: &Catalog) -> String {
    let t = Table::new(catalog, ClockMap::default());
    let mut s = String::new();
    s.push_str("| # | column | type | null | holds |\n|---|---|---|---|---|\n");
    for (i, c) in t.columns().iter().enumerate() {
        let holds = match COMMON.iter().find(|(n, _, _)| *n == c.name) {
            Some((_, _, what)) if !c.nullable => what.to_string(),
            _ => format!("field of {}", c.kinds.join(", ")),
        };
        let _ = writeln!(
            s,
            "| {i} | `{}` | {} | {} | {holds} |",
            c.name,
            c.ty.name(),
            if c.nullable { "yes" } else { "no" }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_catalog_columns() {
        let cat = Catalog::builtin();
        let t = Table::new(&cat, ClockMap::default());
        let names: Vec<_> = t.columns().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            &names[..9],
            &["ts_ns", "time_s", "wall_ns", "cpu", "pid", "tid", "flags", "layer", "kind"]
        );
        // Every field of every kind has exactly one column, and names are unique.
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        for k in &cat.kinds {
            for f in &k.fields {
                let c = t.columns().iter().find(|c| c.name == f.name).unwrap();
                assert!(c.kinds.contains(&k.name));
            }
        }
        let col = |n: &str| t.columns().iter().find(|c| c.name == n).unwrap().ty;
        assert_eq!(col("cookie"), ColType::U64);
        assert_eq!(col("saddr"), ColType::Str);
        assert_eq!(col("pkt_id"), ColType::Str);
        assert_eq!(col("state"), ColType::Str);
        assert_eq!(col("asked"), ColType::I64);
        // protocol is u16 in sock/app and u8 in ip: both fit i64.
        assert_eq!(col("protocol"), ColType::I64);
    }

    #[test]
    fn conflicting_types_become_text_and_clashing_names_are_prefixed() {
        let mut cat = Catalog::builtin();
        cat.kinds
            .retain(|k| k.id == magnet_trace::kind::LOST || k.id == magnet_trace::kind::DROP);
        // LOST's `reason` is u32; make DROP's a u64 and add a field named `cpu`.
        let drop = cat
            .kinds
            .iter_mut()
            .find(|k| k.id == magnet_trace::kind::DROP)
            .unwrap();
        drop.fields
            .iter_mut()
            .find(|f| f.name == "reason")
            .unwrap()
            .ty = FieldType::U64;
        drop.fields.push(FieldDesc {
            name: "cpu".into(),
            offset: 60,
            ty: FieldType::U32,
            names: None,
        });
        let t = Table::new(&cat, ClockMap::default());
        let reason = t.columns().iter().find(|c| c.name == "reason").unwrap();
        assert_eq!(reason.ty, ColType::Str);
        assert_eq!(reason.kinds, vec!["lost".to_string(), "drop".to_string()]);
        assert!(t.columns().iter().any(|c| c.name == "field_cpu"));
    }
}
