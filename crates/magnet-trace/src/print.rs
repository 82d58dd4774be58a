//! One event per line, as `magnet parse` prints it: text (`time cpu pid tid
//! layer kind field=value …`) or JSON lines. Each kind's line is planned once
//! (field keys escaped, name tables found), then every record is written
//! straight into a byte buffer: no allocation per record or field. The output
//! is byte for byte what printing through [`Event`](crate::Event) and
//! [`Value`](crate::Value)'s `Display` / serde gives (a test holds the two against each
//! other); kinds whose JSON would repeat a key take that slow road.

use std::collections::BTreeMap;
use std::io::Write as _;

use crate::block::{u16_at, u32_at, u64_at};
use crate::catalog::{tcp_state_name, FieldDesc, FieldType};
use crate::event::{addr, decode_field};
use crate::header::Header;
use crate::reader::RecordRef;
use magnet_common::text::escape;

/// Time column of the text form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeColumn {
    /// Seconds since the recording started, with nanoseconds.
    Relative,
    /// Wall-clock nanoseconds since the Unix epoch.
    Wall,
}

struct FieldPlan<'h> {
    desc: &'h FieldDesc,
    /// ` name=`
    text_key: Vec<u8>,
    /// `,"name":`
    json_key: Vec<u8>,
    /// `,"name_name":`
    json_name_key: Vec<u8>,
    /// The enum table naming this field's values, when the trace has it.
    names: Option<&'h BTreeMap<String, String>>,
}

struct KindPlan<'h> {
    /// ` layer kind`
    text_head: Vec<u8>,
    /// `,"layer":"…","kind":"…"`
    json_head: Vec<u8>,
    fields: Vec<FieldPlan<'h>>,
    /// No key repeats (else the JSON map's replace-in-place rules apply).
    json_fast: bool,
    layer: &'h str,
    name: &'h str,
}

/// Prints records of one trace.
pub struct LinePrinter<'h> {
    header: &'h Header,
    start: u64,
    by_id: Vec<Option<KindPlan<'h>>>,
}

fn json_str(s: &str) -> Vec<u8> {
    serde_json::to_vec(s).expect("a str serializes")
}

impl<'h> LinePrinter<'h> {
    pub fn new(header: &'h Header) -> Self {
        let max = header.catalog.kinds.iter().map(|k| k.id as usize).max();
        let mut by_id: Vec<Option<KindPlan<'h>>> = Vec::new();
        by_id.resize_with(max.map_or(0, |m| m + 1), || None);
        for k in &header.catalog.kinds {
            let mut keys: Vec<String> = ["ts_ns", "time_s", "wall_ns", "cpu", "pid", "tid"]
                .iter()
                .map(|s| s.to_string())
                .chain(["layer".to_string(), "kind".to_string()])
                .collect();
            let mut fields = Vec::new();
            for f in &k.fields {
                let names = f.names.as_ref().and_then(|t| header.enums.get(t));
                keys.push(f.name.clone());
                if names.is_some() {
                    keys.push(format!("{}_name", f.name));
                }
                let mut json_key = b",".to_vec();
                json_key.extend(json_str(&f.name));
                json_key.push(b':');
                let mut json_name_key = b",".to_vec();
                json_name_key.extend(json_str(&format!("{}_name", f.name)));
                json_name_key.push(b':');
                fields.push(FieldPlan {
                    desc: f,
                    text_key: format!(" {}=", escape(&f.name)).into_bytes(),
                    json_key,
                    json_name_key,
                    names,
                });
            }
            let mut sorted = keys.clone();
            sorted.sort();
            sorted.dedup();
            let mut json_head = b",\"layer\":".to_vec();
            json_head.extend(json_str(&k.layer));
            json_head.extend(b",\"kind\":");
            json_head.extend(json_str(&k.name));
            // A later duplicate in the catalog would win `by_id` in KindIndex too.
            by_id[k.id as usize] = Some(KindPlan {
                text_head: format!(" {} {}", escape(&k.layer), escape(&k.name)).into_bytes(),
                json_head,
                fields,
                json_fast: sorted.len() == keys.len(),
                layer: &k.layer,
                name: &k.name,
            });
        }
        LinePrinter {
            header,
            start: header.clock.monotonic_ns,
            by_id,
        }
    }

    /// Whether the trace's catalog describes this kind.
    pub fn knows(&self, kind: u16) -> bool {
        self.plan(kind).is_some()
    }

    fn plan(&self, kind: u16) -> Option<&KindPlan<'h>> {
        self.by_id.get(kind as usize).and_then(Option::as_ref)
    }

    /// Appends the text line of a record of a known kind (false: unknown kind,
    /// nothing written).
    pub fn text(&self, rec: &RecordRef<'_>, time: TimeColumn, out: &mut Vec<u8>) -> bool {
        let Some(plan) = self.plan(rec.kind()) else {
            return false;
        };
        let ts = rec.ts_ns();
        let mut ib = itoa::Buffer::new();
        match time {
            TimeColumn::Wall => {
                out.extend_from_slice(ib.format(self.header.clock.to_realtime(ts)).as_bytes())
            }
            TimeColumn::Relative => {
                let rel = ts as i128 - self.start as i128;
                if rel < 0 {
                    out.push(b'-');
                }
                let a = rel.unsigned_abs();
                out.extend_from_slice(ib.format(a / 1_000_000_000).as_bytes());
                out.push(b'.');
                let frac = (a % 1_000_000_000) as u32;
                let s = ib.format(frac);
                out.extend(std::iter::repeat_n(b'0', 9 - s.len()));
                out.extend_from_slice(s.as_bytes());
            }
        }
        for v in [rec.cpu() as u64, rec.pid() as u64, rec.tid() as u64] {
            out.push(b' ');
            out.extend_from_slice(ib.format(v).as_bytes());
        }
        out.extend_from_slice(&plan.text_head);
        let b = rec.bytes;
        for f in &plan.fields {
            let d = f.desc;
            let at = d.offset as usize;
            if at + d.ty.size() as usize > b.len() {
                continue;
            }
            out.extend_from_slice(&f.text_key);
            if let Some(name) = self.name_of(f, b) {
                out.extend_from_slice(escape(name).as_bytes());
                continue;
            }
            match d.ty {
                FieldType::U8 => out.extend_from_slice(ib.format(b[at]).as_bytes()),
                FieldType::U16 => out.extend_from_slice(ib.format(u16_at(b, at)).as_bytes()),
                FieldType::U32 => out.extend_from_slice(ib.format(u32_at(b, at)).as_bytes()),
                FieldType::U64 => out.extend_from_slice(ib.format(u64_at(b, at)).as_bytes()),
                FieldType::I32 => out.extend_from_slice(ib.format(u32_at(b, at) as i32).as_bytes()),
                FieldType::I64 => out.extend_from_slice(ib.format(u64_at(b, at) as i64).as_bytes()),
                FieldType::Hex64 => hex(u64_at(b, at), out),
                FieldType::TcpState => out.extend_from_slice(tcp_state_name(b[at]).as_bytes()),
                FieldType::Addr => {
                    let _ = write!(out, "{}", addr(&b[at..at + 16]));
                }
                FieldType::Comm => {
                    let raw = &b[at..at + 16];
                    let n = raw.iter().position(|&c| c == 0).unwrap_or(16);
                    if n == 0 {
                        out.push(b'-');
                    } else {
                        // Any user names its process: escaped for the
                        // terminal (a name may hold escape sequences), as
                        // `Value`'s Display does.
                        let s = String::from_utf8_lossy(&raw[..n]);
                        out.extend_from_slice(escape(&s).as_bytes());
                    }
                }
            }
        }
        out.push(b'\n');
        true
    }

    /// The name of a field's value from the trace's enum tables, as
    /// `Header::value_name` gives it (numbers that are not negative only).
    fn name_of(&self, f: &FieldPlan<'h>, b: &[u8]) -> Option<&'h str> {
        let table = f.names?;
        let v = decode_field(b, f.desc)?.as_u64()?;
        table.get(itoa::Buffer::new().format(v)).map(String::as_str)
    }

    /// Appends the JSON line of a record of a known kind (false: unknown
    /// kind, nothing written).
    pub fn json(&self, rec: &RecordRef<'_>, out: &mut Vec<u8>) -> bool {
        let Some(plan) = self.plan(rec.kind()) else {
            return false;
        };
        if !plan.json_fast {
            self.json_slow(plan, rec, out);
            return true;
        }
        let ts = rec.ts_ns();
        let mut ib = itoa::Buffer::new();
        out.extend_from_slice(b"{\"ts_ns\":");
        out.extend_from_slice(ib.format(ts).as_bytes());
        out.extend_from_slice(b",\"time_s\":");
        let secs = (ts as i128 - self.start as i128) as f64 / 1e9;
        serde_json::to_writer(&mut *out, &secs).expect("writing to a Vec");
        out.extend_from_slice(b",\"wall_ns\":");
        out.extend_from_slice(
            ib.format(self.header.clock.to_realtime(ts) as i64)
                .as_bytes(),
        );
        out.extend_from_slice(b",\"cpu\":");
        out.extend_from_slice(ib.format(rec.cpu()).as_bytes());
        out.extend_from_slice(b",\"pid\":");
        out.extend_from_slice(ib.format(rec.pid()).as_bytes());
        out.extend_from_slice(b",\"tid\":");
        out.extend_from_slice(ib.format(rec.tid()).as_bytes());
        out.extend_from_slice(&plan.json_head);
        let b = rec.bytes;
        for f in &plan.fields {
            let d = f.desc;
            let at = d.offset as usize;
            if at + d.ty.size() as usize > b.len() {
                continue;
            }
            out.extend_from_slice(&f.json_key);
            match d.ty {
                FieldType::U8 => out.extend_from_slice(ib.format(b[at]).as_bytes()),
                FieldType::U16 => out.extend_from_slice(ib.format(u16_at(b, at)).as_bytes()),
                FieldType::U32 => out.extend_from_slice(ib.format(u32_at(b, at)).as_bytes()),
                FieldType::U64 => out.extend_from_slice(ib.format(u64_at(b, at)).as_bytes()),
                FieldType::I32 => out.extend_from_slice(ib.format(u32_at(b, at) as i32).as_bytes()),
                FieldType::I64 => out.extend_from_slice(ib.format(u64_at(b, at) as i64).as_bytes()),
                FieldType::Hex64 => {
                    out.push(b'"');
                    hex(u64_at(b, at), out);
                    out.push(b'"');
                }
                FieldType::TcpState => {
                    out.push(b'"');
                    out.extend_from_slice(tcp_state_name(b[at]).as_bytes());
                    out.push(b'"');
                }
                FieldType::Addr => {
                    let _ = write!(out, "\"{}\"", addr(&b[at..at + 16]));
                }
                FieldType::Comm => {
                    let raw = &b[at..at + 16];
                    let n = raw.iter().position(|&c| c == 0).unwrap_or(16);
                    let s = String::from_utf8_lossy(&raw[..n]);
                    serde_json::to_writer(&mut *out, &*s).expect("writing to a Vec");
                }
            }
            if let Some(name) = self.name_of(f, b) {
                out.extend_from_slice(&f.json_name_key);
                serde_json::to_writer(&mut *out, name).expect("writing to a Vec");
            }
        }
        out.extend_from_slice(b"}\n");
        true
    }

    /// Through a JSON map, for catalogs whose keys repeat.
    fn json_slow(&self, plan: &KindPlan<'h>, rec: &RecordRef<'_>, out: &mut Vec<u8>) {
        let ts = rec.ts_ns();
        let mut obj = serde_json::Map::new();
        obj.insert("ts_ns".into(), ts.into());
        obj.insert(
            "time_s".into(),
            ((ts as i128 - self.start as i128) as f64 / 1e9).into(),
        );
        obj.insert(
            "wall_ns".into(),
            serde_json::Value::from(self.header.clock.to_realtime(ts) as i64),
        );
        obj.insert("cpu".into(), rec.cpu().into());
        obj.insert("pid".into(), rec.pid().into());
        obj.insert("tid".into(), rec.tid().into());
        obj.insert("layer".into(), plan.layer.into());
        obj.insert("kind".into(), plan.name.into());
        for f in &plan.fields {
            let Some(v) = decode_field(rec.bytes, f.desc) else {
                continue;
            };
            let name = v
                .as_u64()
                .and_then(|n| self.header.value_name(f.desc, n))
                .map(str::to_string);
            obj.insert(
                f.desc.name.clone(),
                serde_json::to_value(&v).expect("values serialize"),
            );
            if let Some(name) = name {
                obj.insert(format!("{}_name", f.desc.name), name.into());
            }
        }
        serde_json::to_writer(&mut *out, &obj).expect("writing to a Vec");
        out.push(b'\n');
    }
}

/// `{:#x}` without the formatter.
fn hex(v: u64, out: &mut Vec<u8>) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(b"0x");
    let n = (64 - v.leading_zeros()).div_ceil(4).max(1);
    for i in (0..n).rev() {
        out.push(DIGITS[((v >> (i * 4)) & 0xf) as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::emit::{synthetic_header, Emitter};
    use crate::event::Event;
    use crate::{kind, ClockMap};

    /// The slow road: what `magnet parse` printed before this module.
    fn text_slow(h: &Header, rec: &RecordRef<'_>, wall: bool) -> String {
        use std::fmt::Write as _;
        let desc = h.catalog.get(rec.kind()).unwrap();
        let ev = Event {
            bytes: rec.bytes,
            desc,
        };
        let ts = rec.ts_ns();
        let start = h.clock.monotonic_ns;
        let mut line = String::new();
        if wall {
            let _ = write!(line, "{}", h.clock.to_realtime(ts));
        } else {
            let rel = ts as i128 - start as i128;
            let sign = if rel < 0 { "-" } else { "" };
            let a = rel.unsigned_abs();
            let _ = write!(line, "{sign}{}.{:09}", a / 1_000_000_000, a % 1_000_000_000);
        }
        let _ = write!(
            line,
            " {} {} {} {} {}",
            rec.cpu(),
            rec.pid(),
            rec.tid(),
            escape(&desc.layer),
            escape(&desc.name)
        );
        for (f, v) in ev.described_fields() {
            match v.as_u64().and_then(|n| h.value_name(f, n)) {
                Some(name) => {
                    let _ = write!(line, " {}={}", escape(&f.name), escape(name));
                }
                None => {
                    let _ = write!(line, " {}={v}", escape(&f.name));
                }
            }
        }
        line.push('\n');
        line
    }

    fn json_slow(h: &Header, rec: &RecordRef<'_>) -> String {
        let p = LinePrinter::new(h);
        let mut out = Vec::new();
        p.json_slow(p.plan(rec.kind()).unwrap(), rec, &mut out);
        String::from_utf8(out).unwrap()
    }

    fn records() -> Vec<Vec<u8>> {
        let e = Emitter::builtin();
        let mut x: u64 = 99;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x
        };
        let mut out = Vec::new();
        for k in &Catalog::builtin().kinds {
            for i in 0..40u64 {
                let ts = if i == 3 {
                    10
                } else {
                    5_000_000_000 + next() % 10_000_000_000
                };
                let mut r = e
                    .record(k.id, ts)
                    .cpu(next() as u16)
                    .pid(next() as u32)
                    .tid(next() as u32);
                if i % 2 == 1 && k.field("mss_cache").is_none() && k.name.starts_with("tcp") {
                    r = r.snapshot();
                }
                let mut bytes = r.into_bytes();
                // Random field bytes, then a few edge cases.
                for byte in bytes[24..].iter_mut() {
                    *byte = next() as u8;
                }
                match i {
                    0 => bytes[24..].fill(0),
                    1 => bytes[24..].fill(0xff),
                    2 => {
                        for f in &k.fields {
                            if f.ty == FieldType::Comm {
                                let at = f.offset as usize;
                                bytes[at..at + 16].copy_from_slice(b"a\"b\\c\x01\xff\xfe\0xxxxxxx");
                            }
                            if f.ty == FieldType::Addr {
                                let at = f.offset as usize;
                                bytes[at..at + 16].fill(0);
                                bytes[at + 10] = 0xff;
                                bytes[at + 11] = 0xff;
                            }
                        }
                    }
                    _ => {}
                }
                if i == 4 {
                    bytes.truncate(k.fields.last().map_or(24, |f| f.offset as usize));
                }
                out.push(bytes);
            }
        }
        out
    }

    #[test]
    fn fast_lines_are_the_slow_lines_byte_for_byte() {
        let mut h = synthetic_header(1_000_000_000);
        h.clock = ClockMap {
            monotonic_ns: 1_000_000_000,
            realtime_ns: 1_700_000_000_000_000_000,
        };
        let mut reasons = BTreeMap::new();
        for v in 0..200u64 {
            reasons.insert(v.to_string(), format!("REASON_{v}"));
        }
        h.enums.insert("skb_drop_reason".into(), reasons);
        h.enums.insert(
            "kfunc".into(),
            [("0".to_string(), "zero\"fn".to_string())].into(),
        );
        let p = LinePrinter::new(&h);
        let mut n = 0;
        for bytes in records() {
            let rec = RecordRef {
                bytes: &bytes,
                block_offset: 0,
            };
            for wall in [false, true] {
                let mut out = Vec::new();
                let time = if wall {
                    TimeColumn::Wall
                } else {
                    TimeColumn::Relative
                };
                assert!(p.text(&rec, time, &mut out));
                assert_eq!(String::from_utf8(out).unwrap(), text_slow(&h, &rec, wall));
            }
            let mut out = Vec::new();
            assert!(p.json(&rec, &mut out));
            assert_eq!(String::from_utf8(out).unwrap(), json_slow(&h, &rec));
            n += 1;
        }
        assert!(n > 1000);
        assert!(!p.knows(kind::MAX));
    }

    #[test]
    fn hex_is_formatted_as_std_does() {
        for v in [0u64, 1, 0xf, 0x10, 0xdead_beef, u64::MAX, 1 << 63] {
            let mut out = Vec::new();
            hex(v, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), format!("{v:#x}"));
        }
    }

    #[test]
    fn repeated_keys_take_the_map_road() {
        let mut h = synthetic_header(0);
        let k = h
            .catalog
            .kinds
            .iter_mut()
            .find(|k| k.id == kind::DEV_RX)
            .unwrap();
        let mut dup = k.fields[0].clone();
        dup.offset = k.fields[1].offset;
        k.fields.push(dup);
        let p = LinePrinter::new(&h);
        assert!(!p.plan(kind::DEV_RX).unwrap().json_fast);
        let bytes = Emitter::new(h.catalog.clone())
            .record(kind::DEV_RX, 5)
            .set("cookie", 7)
            .into_bytes();
        let rec = RecordRef {
            bytes: &bytes,
            block_offset: 0,
        };
        let mut out = Vec::new();
        assert!(p.json(&rec, &mut out));
        let line = String::from_utf8(out).unwrap();
        assert_eq!(line, json_slow(&h, &rec));
        assert_eq!(line.matches("\"cookie\"").count(), 1, "{line}");
    }
}
