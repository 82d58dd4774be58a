//! CSV and JSON lines: the table written as text, one line per event.
//!
//! CSV (RFC 4180): a header line of column names, then one line per event; a
//! null is an empty field, an empty string is `""`, text holding a comma, quote
//! or line break is quoted. JSON lines: one object per event with every column
//! as a key in table order, null where the table has null.

use std::io::Write;

use crate::table::{Cell, Column};

pub struct Csv<W: Write> {
    out: W,
    line: String,
}

impl<W: Write> Csv<W> {
    pub fn new(mut out: W, columns: &[Column]) -> std::io::Result<Self> {
        let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
        out.write_all(names.join(",").as_bytes())?;
        out.write_all(b"\n")?;
        Ok(Csv {
            out,
            line: String::with_capacity(512),
        })
    }

    pub fn row(&mut self, row: &[Cell]) -> std::io::Result<()> {
        use std::fmt::Write as _;
        self.line.clear();
        for (i, c) in row.iter().enumerate() {
            if i > 0 {
                self.line.push(',');
            }
            match c {
                Cell::Null => {}
                Cell::U(v) => {
                    let _ = write!(self.line, "{v}");
                }
                Cell::I(v) => {
                    let _ = write!(self.line, "{v}");
                }
                Cell::F(v) => {
                    let _ = write!(self.line, "{v:.9}");
                }
                Cell::Str(s) => csv_text(&mut self.line, s),
            }
        }
        self.line.push('\n');
        self.out.write_all(self.line.as_bytes())
    }

    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

fn csv_text(line: &mut String, s: &str) {
    if s.is_empty() || s.contains([',', '"', '\n', '\r']) {
        line.push('"');
        line.push_str(&s.replace('"', "\"\""));
        line.push('"');
    } else {
        line.push_str(s);
    }
}

pub struct Jsonl<W: Write> {
    out: W,
    /// `"name":` for each column, JSON-escaped once.
    keys: Vec<String>,
    line: Vec<u8>,
}

impl<W: Write> Jsonl<W> {
    pub fn new(out: W, columns: &[Column]) -> Self {
        let keys = columns
            .iter()
            .map(|c| format!("{}:", serde_json::Value::from(c.name.as_str())))
            .collect();
        Jsonl {
            out,
            keys,
            line: Vec::with_capacity(1024),
        }
    }

    pub fn row(&mut self, row: &[Cell]) -> std::io::Result<()> {
        use std::io::Write as _;
        self.line.clear();
        self.line.push(b'{');
        for (i, (k, c)) in self.keys.iter().zip(row).enumerate() {
            if i > 0 {
                self.line.push(b',');
            }
            self.line.extend_from_slice(k.as_bytes());
            match c {
                Cell::Null => self.line.extend_from_slice(b"null"),
                Cell::U(v) => write!(self.line, "{v}")?,
                Cell::I(v) => write!(self.line, "{v}")?,
                Cell::F(v) if v.is_finite() => write!(self.line, "{v}")?,
                Cell::F(_) => self.line.extend_from_slice(b"null"),
                Cell::Str(s) => serde_json::to_writer(&mut self.line, s)?,
            }
        }
        self.line.extend_from_slice(b"}\n");
        self.out.write_all(&self.line)
    }

    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::ColType;

    fn cols() -> Vec<Column> {
        ["a", "b", "c", "d", "e"]
            .iter()
            .map(|n| Column {
                name: n.to_string(),
                ty: ColType::Str,
                nullable: true,
                kinds: vec![],
            })
            .collect()
    }

    #[test]
    fn csv_quoting_and_nulls() {
        let mut w = Csv::new(Vec::new(), &cols()).unwrap();
        let row = [
            Cell::Null,
            Cell::Str(String::new()),
            Cell::Str("x,\"y\"".into()),
            Cell::F(0.5),
            Cell::I(-3),
        ];
        w.row(&row).unwrap();
        let s = String::from_utf8(w.finish().unwrap()).unwrap();
        assert_eq!(s, "a,b,c,d,e\n,\"\",\"x,\"\"y\"\"\",0.500000000,-3\n");
    }

    #[test]
    fn jsonl_keys_and_values() {
        let mut w = Jsonl::new(Vec::new(), &cols());
        let row = [
            Cell::Null,
            Cell::Str("t\"ab".into()),
            Cell::U(u64::MAX),
            Cell::F(1.25),
            Cell::I(-3),
        ];
        w.row(&row).unwrap();
        let s = String::from_utf8(w.finish().unwrap()).unwrap();
        assert_eq!(
            s,
            "{\"a\":null,\"b\":\"t\\\"ab\",\"c\":18446744073709551615,\"d\":1.25,\"e\":-3}\n"
        );
        let v: serde_json::Value = serde_json::from_str(s.trim()).unwrap();
        assert_eq!(v["c"].as_u64(), Some(u64::MAX));
    }
}
