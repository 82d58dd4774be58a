//! Text from outside — process names (`comm`, which any local user sets with
//! `prctl(PR_SET_NAME)`), interface names, paths, hostnames read from traces
//! and captures — made safe to print on an operator's terminal: every
//! control character (C0 but newline and tab in output, DEL, C1) is written
//! as an escape (`\x1b`, `\u{9b}`), so no escape sequence (colours, window
//! titles, OSC 52 clipboard writes) reaches the terminal raw. The same rule
//! holds where other tools show names: pcapng comments and interface names
//! (magnet-pcap's writer), the HTML report (before HTML's own escaping),
//! Perfetto slice names. JSON output escapes by its own rules.
//!
//! [`escape`] for one name, [`Escaping`] around a command's whole text output.

use std::borrow::Cow;
use std::io::{self, Write};

/// Whether `c` is a control character a terminal may act on.
fn is_control(c: char) -> bool {
    let c = c as u32;
    c < 0x20 || (0x7f..=0x9f).contains(&c)
}

fn push_escaped(c: char, out: &mut String) {
    let n = c as u32;
    if n < 0x80 {
        out.push_str(&format!("\\x{n:02x}"));
    } else {
        out.push_str(&format!("\\u{{{n:x}}}"));
    }
}

/// `s` with every control character escaped (newlines and tabs too: a name
/// has none).
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_control(c) {
            push_escaped(c, &mut out);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A writer that escapes every control character written through it but
/// newline and tab (the text's own structure). Wrap a command's standard
/// output in its text form; not its JSON (JSON strings carry C1 characters
/// raw, as JSON allows, and this would break them).
pub struct Escaping<W: Write> {
    inner: W,
    /// A 0xC2 byte at the end of the last write (C1 characters are C2 80–9F
    /// in UTF-8): held until the next byte says what it starts.
    held: bool,
    buf: Vec<u8>,
    /// Off: everything passes as it is (the same command's JSON form).
    on: bool,
}

impl<W: Write> Escaping<W> {
    pub fn new(inner: W) -> Self {
        Escaping::when(true, inner)
    }

    /// Escaping when `on` (a command's text form), else a plain pass-through
    /// (its JSON form), so that both forms share one writer.
    pub fn when(on: bool, inner: W) -> Self {
        Escaping {
            inner,
            held: false,
            buf: Vec::new(),
            on,
        }
    }

    pub fn into_inner(mut self) -> io::Result<W> {
        self.flush_held()?;
        // `Drop` is not implemented, so moving out is fine.
        let Escaping { inner, .. } = self;
        Ok(inner)
    }

    fn flush_held(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.held) {
            self.inner.write_all(&[0xc2])?;
        }
        Ok(())
    }
}

fn needs_care(b: u8) -> bool {
    (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f || b == 0xc2
}

impl<W: Write> Write for Escaping<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if !self.on {
            return self.inner.write(data);
        }
        if !self.held && !data.iter().copied().any(needs_care) {
            self.inner.write_all(data)?;
            return Ok(data.len());
        }
        self.buf.clear();
        let mut i = 0;
        if std::mem::take(&mut self.held) {
            match data.first() {
                Some(&b) if (0x80..=0x9f).contains(&b) => {
                    self.buf
                        .extend_from_slice(format!("\\u{{{b:x}}}").as_bytes());
                    i = 1;
                }
                _ => self.buf.push(0xc2),
            }
        }
        while i < data.len() {
            let b = data[i];
            if b == 0xc2 {
                match data.get(i + 1) {
                    None => {
                        self.held = true;
                        i += 1;
                        continue;
                    }
                    Some(&n) if (0x80..=0x9f).contains(&n) => {
                        self.buf
                            .extend_from_slice(format!("\\u{{{n:x}}}").as_bytes());
                        i += 2;
                        continue;
                    }
                    Some(_) => self.buf.push(b),
                }
            } else if needs_care(b) {
                self.buf.extend_from_slice(format!("\\x{b:02x}").as_bytes());
            } else {
                self.buf.push(b);
            }
            i += 1;
        }
        self.inner.write_all(&self.buf)?;
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flush_held()?;
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &str = "\x1b]0;pwned\x07\x1b[31m";

    #[test]
    fn names_are_escaped() {
        assert_eq!(escape("curl"), "curl");
        assert_eq!(escape(HOSTILE), "\\x1b]0;pwned\\x07\\x1b[31m");
        assert_eq!(escape("a\u{9b}1m\u{7f}µ\n"), "a\\u{9b}1m\\x7fµ\\x0a");
    }

    /// What pcapng comments and the report get: line ends and tabs escaped
    /// too (a name has none), and escaping text twice changes nothing (a name
    /// escaped where it enters a comment, then the comment by the writer).
    #[test]
    fn names_lose_line_ends_and_tabs_and_escaping_twice_is_once() {
        let comm = "\x1b]0;x\x07\x1b[31m\r\n\tev";
        let once = escape(comm);
        assert_eq!(once, "\\x1b]0;x\\x07\\x1b[31m\\x0d\\x0a\\x09ev");
        assert!(!once.chars().any(is_control));
        assert_eq!(escape(&once), once);
        assert!(matches!(escape(&once), Cow::Borrowed(_)));
    }

    #[test]
    fn output_keeps_lines_and_tabs_and_escapes_the_rest() {
        let mut w = Escaping::new(Vec::new());
        writeln!(w, "x\t{HOSTILE}").unwrap();
        // A C1 character split across two writes, then µ (C2 B5) split too.
        w.write_all(b"a\xc2").unwrap();
        w.write_all(b"\x9bb \xc2").unwrap();
        w.write_all(b"\xb5s\n").unwrap();
        let out = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert_eq!(out, "x\t\\x1b]0;pwned\\x07\\x1b[31m\na\\u{9b}b µs\n");
        assert!(!out.bytes().any(|b| b == 0x1b || b == 0x07));
    }
}
