//! The flat table every row-oriented export writes (Parquet, CSV, JSON lines):
//! one row per event, a fixed set of common columns, then the union of every
//! field of every kind in the trace's catalog. A field a kind does not have, or
//! that a record is too short to hold (the optional TCP snapshot), is null.
//!
//! Column names and types come from the catalog the trace carries, so they are
//! stable for a given catalog; `docs/export.md` lists them for this build's
//! catalog (`schema_markdown` generates that list).

use std::fmt::{self, Write as _};

use std::net::IpAddr;

use magnet_trace::{Catalog, ClockMap, FieldDesc, FieldType, KindIndex, RecordRef, Value};

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
        self.kind_name_of(rec.kind())
    }

    /// The name of kind number `id` as a row shows it.
    pub fn kind_name_of(&self, id: u16) -> String {
        match self.index.get(id) {
            Some(d) => d.name.clone(),
            None => format!("unknown_{id}"),
        }
    }

    /// Fills `row` (resized to the column count) with one record's values.
    pub fn fill(&self, rec: &RecordRef<'_>, row: &mut Vec<Cell>) {
        row.clear();
        row.resize(self.columns.len(), Cell::Null);
        self.visit(rec, &mut CellRow(row));
    }

    /// Hands each non-null cell of one record's row to `sink`, column by column
    /// (common columns first, then the kind's fields in catalog order), without
    /// allocating: text is borrowed from the catalog or the record, or formatted
    /// by the sink. A column can be given twice (two fields of one kind with the
    /// same name); the later value is the cell's, as in [`Table::fill`].
    pub fn visit(&self, rec: &RecordRef<'_>, sink: &mut impl RowSink) {
        for col in 0..COMMON.len() {
            self.common_cell(rec, col, &mut |v| sink.cell(col, v));
        }
        let Some(fields) = self.kind_fields(rec.kind()) else {
            return;
        };
        for &(at, f) in fields {
            self.field_cell(rec.bytes, self.columns[at].ty, f, &mut |v| sink.cell(at, v));
        }
    }

    /// The fields of kind number `kind`, each with its column, in catalog order
    /// (`None` for a kind the catalog lacks: its row has the common columns only).
    pub(crate) fn kind_fields(&self, kind: u16) -> Option<&[(usize, &'c FieldDesc)]> {
        let desc = self.index.get(kind)?;
        self.plan.get(desc.id as usize).map(Vec::as_slice)
    }

    /// Hands common column `col` (below `COMMON.len()`) of a record to `put`;
    /// every record has them.
    #[inline]
    pub(crate) fn common_cell(
        &self,
        rec: &RecordRef<'_>,
        col: usize,
        put: &mut impl FnMut(CellRef<'_>),
    ) {
        let ts = rec.ts_ns();
        match col {
            0 => put(CellRef::U(ts)),
            1 => put(CellRef::F(
                (ts as i128 - self.clock.monotonic_ns as i128) as f64 / 1e9,
            )),
            2 => put(CellRef::I(self.clock.to_realtime(ts) as i64)),
            3 => put(CellRef::I(rec.cpu() as i64)),
            4 => put(CellRef::I(rec.pid() as i64)),
            5 => put(CellRef::I(rec.tid() as i64)),
            6 => put(CellRef::I(rec.flags() as i64)),
            7 | 8 => match self.index.get(rec.kind()) {
                Some(d) if col == 7 => put(CellRef::Str(&d.layer)),
                Some(d) => put(CellRef::Str(&d.name)),
                None if col == 7 => put(CellRef::Str("?")),
                None => put(CellRef::Text(&UnknownKind(rec.kind()))),
            },
            _ => {}
        }
    }

    /// Hands field `f` of a record's bytes, as a cell of a column of type `ty`,
    /// to `put`; false (and nothing handed over) when the cell is null: the
    /// record is too short to hold the field (the optional TCP snapshot), or the
    /// value has no form in the column's type.
    #[inline]
    pub(crate) fn field_cell(
        &self,
        bytes: &[u8],
        ty: ColType,
        f: &FieldDesc,
        put: &mut impl FnMut(CellRef<'_>),
    ) -> bool {
        let o = f.offset as usize;
        let Some(raw) = bytes.get(o..o + f.ty.size() as usize) else {
            return false;
        };
        // The common case, a column of the field's own type: decoded straight
        // from the bytes. (A column two kinds made text takes the general path.)
        if ty == ColType::of_field(f.ty) {
            let le = |n: usize| {
                let mut b = [0u8; 8];
                b[..n].copy_from_slice(&raw[..n]);
                u64::from_le_bytes(b)
            };
            match f.ty {
                FieldType::U8 => put(CellRef::I(raw[0] as i64)),
                FieldType::U16 => put(CellRef::I(le(2) as i64)),
                FieldType::U32 => put(CellRef::I(le(4) as i64)),
                FieldType::I32 => put(CellRef::I(le(4) as u32 as i32 as i64)),
                FieldType::I64 => put(CellRef::I(le(8) as i64)),
                FieldType::U64 => put(CellRef::U(le(8))),
                FieldType::Hex64 => {
                    let mut b = [0u8; 24];
                    put(CellRef::Str(hex(le(8), &mut b)));
                }
                FieldType::TcpState => {
                    put(CellRef::Str(magnet_trace::catalog::tcp_state_name(raw[0])))
                }
                FieldType::Addr => match magnet_trace::event::addr(raw) {
                    IpAddr::V4(a) => {
                        let mut b = [0u8; 24];
                        put(CellRef::Str(ipv4(a.octets(), &mut b)));
                    }
                    v6 => put(CellRef::Text(&v6)),
                },
                FieldType::Comm => {
                    // The task name as text, borrowed from the record when it is UTF-8.
                    let n = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
                    put(CellRef::Str(&String::from_utf8_lossy(&raw[..n])));
                }
            }
            return true;
        }
        if f.ty == FieldType::Comm {
            // A name is never a number: in a number column it is null.
            if ty != ColType::Str {
                return false;
            }
            let n = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            put(CellRef::Str(&String::from_utf8_lossy(&raw[..n])));
            return true;
        }
        let Some(v) = magnet_trace::event::decode_field(bytes, f) else {
            return false;
        };
        match ty {
            ColType::Str => {
                let mut b = [0u8; 24];
                match text(&v, &mut b) {
                    Some(t) => put(CellRef::Str(t)),
                    None => put(CellRef::Text(&v)),
                }
            }
            ColType::U64 => match v.as_u64() {
                Some(x) => put(CellRef::U(x)),
                None => return false,
            },
            ColType::I64 => match v.as_i64() {
                Some(x) => put(CellRef::I(x)),
                None => return false,
            },
            ColType::F64 => match v.as_i64() {
                Some(x) => put(CellRef::F(x as f64)),
                None => return false,
            },
        }
        true
    }
}

/// A value as its `Display` writes it, formatted into `buf` without the
/// formatting machinery for the kinds a trace is full of (hex ids, IPv4
/// addresses, TCP states, numbers); `None` for the rest (IPv6, text).
fn text<'b>(v: &Value, buf: &'b mut [u8; 24]) -> Option<&'b str> {
    match *v {
        Value::TcpState(s) => Some(magnet_trace::catalog::tcp_state_name(s)),
        Value::U(x) => Some(put(buf, itoa::Buffer::new().format(x))),
        Value::I(x) => Some(put(buf, itoa::Buffer::new().format(x))),
        Value::Hex(x) => Some(hex(x, buf)),
        Value::Addr(IpAddr::V4(a)) => Some(ipv4(a.octets(), buf)),
        _ => None,
    }
}

/// `{:#x}`: 0x, then the digits without leading zeros.
fn hex(x: u64, buf: &mut [u8; 24]) -> &str {
    let digits = (64 - x.leading_zeros() as usize).div_ceil(4).max(1);
    buf[0] = b'0';
    buf[1] = b'x';
    for i in 0..digits {
        let d = ((x >> (4 * (digits - 1 - i))) & 0xf) as u8;
        buf[2 + i] = if d < 10 { b'0' + d } else { b'a' + d - 10 };
    }
    // Only ASCII was written.
    std::str::from_utf8(&buf[..2 + digits]).unwrap_or_default()
}

/// An IPv4 address as `Ipv4Addr`'s `Display` writes it.
fn ipv4(octets: [u8; 4], buf: &mut [u8; 24]) -> &str {
    let mut n = 0;
    for (i, o) in octets.into_iter().enumerate() {
        if i > 0 {
            buf[n] = b'.';
            n += 1;
        }
        if o >= 100 {
            buf[n] = b'0' + o / 100;
            n += 1;
        }
        if o >= 10 {
            buf[n] = b'0' + o / 10 % 10;
            n += 1;
        }
        buf[n] = b'0' + o % 10;
        n += 1;
    }
    std::str::from_utf8(&buf[..n]).unwrap_or_default()
}

fn put<'b>(buf: &'b mut [u8; 24], s: &str) -> &'b str {
    buf[..s.len()].copy_from_slice(s.as_bytes());
    std::str::from_utf8(&buf[..s.len()]).unwrap_or_default()
}

/// One cell's value as [`Table::visit`] hands it over (nulls are not handed over).
#[derive(Clone, Copy)]
pub enum CellRef<'a> {
    U(u64),
    I(i64),
    F(f64),
    /// Text as it is.
    Str(&'a str),
    /// Text its `Display` writes (addresses, hex ids, TCP states, numbers in a text column).
    Text(&'a dyn fmt::Display),
}

/// Where [`Table::visit`] puts a row's cells.
pub trait RowSink {
    fn cell(&mut self, col: usize, v: CellRef<'_>);
}

/// `kind` of a kind number the catalog lacks.
struct UnknownKind(u16);

impl fmt::Display for UnknownKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown_{}", self.0)
    }
}

/// A row of owned cells (what CSV and JSON lines write).
struct CellRow<'r>(&'r mut Vec<Cell>);

impl RowSink for CellRow<'_> {
    fn cell(&mut self, col: usize, v: CellRef<'_>) {
        self.0[col] = match v {
            CellRef::U(x) => Cell::U(x),
            CellRef::I(x) => Cell::I(x),
            CellRef::F(x) => Cell::F(x),
            CellRef::Str(s) => Cell::Str(s.to_string()),
            CellRef::Text(d) => Cell::Str(d.to_string()),
        };
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

    /// The row as the first version of `fill` made it: every field through
    /// `decode_field` and the column type's conversion of the `Value`.
    fn fill_by_value(t: &Table<'_>, rec: &RecordRef<'_>) -> Vec<Cell> {
        let mut row = vec![Cell::Null; t.columns.len()];
        let ts = rec.ts_ns();
        row[0] = Cell::U(ts);
        row[1] = Cell::F((ts as i128 - t.clock.monotonic_ns as i128) as f64 / 1e9);
        row[2] = Cell::I(t.clock.to_realtime(ts) as i64);
        row[3] = Cell::I(rec.cpu() as i64);
        row[4] = Cell::I(rec.pid() as i64);
        row[5] = Cell::I(rec.tid() as i64);
        row[6] = Cell::I(rec.flags() as i64);
        let Some(desc) = t.index.get(rec.kind()) else {
            row[7] = Cell::Str("?".into());
            row[8] = Cell::Str(format!("unknown_{}", rec.kind()));
            return row;
        };
        row[7] = Cell::Str(desc.layer.clone());
        row[8] = Cell::Str(desc.name.clone());
        for &(at, f) in &t.plan[desc.id as usize] {
            if let Some(v) = magnet_trace::event::decode_field(rec.bytes, f) {
                row[at] = match (t.columns[at].ty, v) {
                    (ColType::Str, Value::Str(s)) => Cell::Str(s),
                    (ColType::Str, v) => Cell::Str(v.to_string()),
                    (ColType::U64, v) => v.as_u64().map_or(Cell::Null, Cell::U),
                    (ColType::I64, v) => v.as_i64().map_or(Cell::Null, Cell::I),
                    (ColType::F64, v) => v.as_i64().map_or(Cell::Null, |i| Cell::F(i as f64)),
                };
            }
        }
        row
    }

    #[test]
    fn rows_are_what_decoding_each_value_gives() {
        // Random bytes for every kind of the builtin catalog (and one it lacks), at
        // full length and cut short; and a catalog whose merged columns are text.
        let mut merged = Catalog::builtin();
        for k in &mut merged.kinds {
            if k.id == magnet_trace::kind::DROP {
                for f in &mut k.fields {
                    f.ty = match f.ty {
                        FieldType::U32 => FieldType::Hex64,
                        FieldType::Addr => FieldType::U64,
                        other => other,
                    };
                }
            }
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let clock = ClockMap {
            monotonic_ns: 5_000,
            realtime_ns: 1_700_000_000_000_000_000,
        };
        for cat in [Catalog::builtin(), merged] {
            let t = Table::new(&cat, clock);
            let mut row = Vec::new();
            let mut ids: Vec<u16> = cat.kinds.iter().map(|k| k.id).collect();
            ids.push(999);
            for id in ids {
                for round in 0..50 {
                    let mut b: Vec<u8> = (0..160).map(|_| rnd() as u8).collect();
                    b[8..10].copy_from_slice(&id.to_le_bytes());
                    if round % 5 == 0 {
                        // An address that is IPv4-mapped, and a task name in UTF-8.
                        b[40..52].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
                        b[24..40].copy_from_slice(b"loadgen\0\0\0\0\0\0\0\0\0");
                    }
                    let len = if round % 3 == 0 {
                        40 + rnd() as usize % 120
                    } else {
                        160
                    };
                    let rec = RecordRef {
                        bytes: &b[..len],
                        block_offset: 0,
                    };
                    t.fill(&rec, &mut row);
                    assert_eq!(row, fill_by_value(&t, &rec), "kind {id}, {len} bytes");
                }
            }
        }
    }

    #[test]
    fn text_is_what_display_writes() {
        let mut vals = vec![
            Value::U(0),
            Value::U(u64::MAX),
            Value::I(i64::MIN),
            Value::I(-1),
            Value::I(42),
        ];
        for x in [
            0u64,
            1,
            9,
            10,
            15,
            16,
            0xabc0,
            0x1f3a_0000_dead_beef,
            u64::MAX,
        ] {
            vals.push(Value::Hex(x));
        }
        for st in 0..=13u8 {
            vals.push(Value::TcpState(st));
        }
        for a in [
            [0, 0, 0, 0],
            [127, 0, 0, 1],
            [10, 0, 0, 2],
            [255, 255, 255, 255],
            [1, 22, 100, 9],
            [199, 10, 110, 250],
        ] {
            vals.push(Value::Addr(IpAddr::from(a)));
        }
        // A pseudo-random sweep of ids and addresses.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            vals.push(Value::Hex(x >> (x % 64)));
            vals.push(Value::Addr(IpAddr::from((x as u32).to_be_bytes())));
        }
        for v in &vals {
            let mut b = [0u8; 24];
            assert_eq!(text(v, &mut b), Some(v.to_string().as_str()), "{v:?}");
        }
        let v6 = Value::Addr("fe80::1".parse().unwrap());
        assert_eq!(text(&v6, &mut [0u8; 24]), None);
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
