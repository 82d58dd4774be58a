//! The parser over any `Read`: one buffer, refilled in place; items borrow from it.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::parse::{Block, Next, Packet, ParseError, Parser};
use crate::{Error, Result};

const BUF: usize = 1 << 20;

/// One item of a capture with where it came from.
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    /// Byte offset of the item in the file.
    pub offset: u64,
    /// The item's bytes as stored (a pcapng block including its length fields, a pcap
    /// record including its header).
    pub raw: &'a [u8],
    /// Whether the section (or pcap file) it belongs to is big-endian.
    pub big_endian: bool,
    pub block: Block<'a>,
}

/// Reads a pcap or pcapng file (either byte order, any number of pcapng sections).
pub struct CaptureReader<R> {
    rd: R,
    path: PathBuf,
    parser: Parser,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    done: bool,
}

impl CaptureReader<File> {
    /// Opens `path`; the format is recognised from the magic number.
    pub fn open(path: &Path) -> Result<Self> {
        let f = File::open(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::new(f, path)
    }
}

impl<R: Read> CaptureReader<R> {
    /// Wraps any reader and reads the file header; `path` only names the source in
    /// errors.
    pub fn new(rd: R, path: &Path) -> Result<Self> {
        let mut me = CaptureReader {
            rd,
            path: path.to_owned(),
            parser: Parser::new(),
            buf: Vec::new(),
            start: 0,
            end: 0,
            eof: false,
            done: false,
        };
        // The file header must be there: look at it now so that a file that is not a
        // capture fails at open (it is still returned by the first `next_item`).
        match me.advance() {
            Some(Ok(_)) => Ok(me),
            Some(Err(e)) => Err(e),
            None => Err(Error::Format {
                path: me.path,
                offset: 0,
                packet: 0,
                reason: "empty file".into(),
            }),
        }
    }

    /// The name errors give the source.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Byte offset of the next item.
    pub fn offset(&self) -> u64 {
        self.parser.offset()
    }

    /// Packets returned so far.
    pub fn packets(&self) -> u64 {
        self.parser.packets()
    }

    fn wrap(&self, e: ParseError) -> Error {
        wrap(&self.path, e)
    }

    /// Makes at least `n` bytes available from `start`, unless the file ends first.
    fn fill(&mut self, n: usize) -> std::io::Result<()> {
        if self.start + n > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        while self.end - self.start < n {
            if self.end == self.buf.len() {
                // Grow by doubling as the bytes arrive, not at once to what a
                // (maybe damaged) length asks: 16 MiB for a 1 KB file.
                let want = (self.buf.len() * 2).clamp(BUF, n.max(BUF));
                self.buf.resize(want, 0);
            }
            match self.rd.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(k) => self.end += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Makes the next whole item available at `start`; returns its length, `None` at
    /// a clean end of file.
    fn advance(&mut self) -> Option<Result<usize>> {
        if self.done {
            return None;
        }
        loop {
            let have = self.end - self.start;
            let want = match self.parser.next_len(&self.buf[self.start..self.end]) {
                Ok(Next::Len(n)) if have >= n => return Some(Ok(n)),
                Ok(Next::Len(n)) | Ok(Next::Need(n)) => n,
                Err(e) => {
                    self.done = true;
                    return Some(Err(self.wrap(e)));
                }
            };
            if self.eof {
                self.done = true;
                if have == 0 && self.parser.started() {
                    return None;
                }
                let reason = if !self.parser.started() && have < 4 {
                    format!("file too short for a capture header ({have} bytes)")
                } else {
                    format!("file cut short: {have} of the next item's {want} bytes present")
                };
                return Some(Err(Error::Format {
                    path: self.path.clone(),
                    offset: self.parser.offset(),
                    packet: self.parser.packets(),
                    reason,
                }));
            }
            if let Err(source) = self.fill(want) {
                self.done = true;
                return Some(Err(Error::Io {
                    path: self.path.clone(),
                    source,
                }));
            }
        }
    }

    /// The next item (file header, block, record); `None` at a clean end of file. An
    /// error ends the iteration: later calls return `None`.
    pub fn next_item(&mut self) -> Option<Result<Item<'_>>> {
        let len = match self.advance()? {
            Ok(n) => n,
            Err(e) => return Some(Err(e)),
        };
        let offset = self.parser.offset();
        let raw = &self.buf[self.start..self.start + len];
        match self.parser.parse(raw) {
            Ok((block, n)) => {
                self.start += n;
                Some(Ok(Item {
                    offset,
                    raw,
                    big_endian: self.parser.big_endian(),
                    block,
                }))
            }
            Err(e) => {
                self.done = true;
                Some(Err(wrap(&self.path, e)))
            }
        }
    }

    /// The next packet, passing over every other block; `None` at a clean end.
    #[allow(clippy::should_implement_trait)]
    pub fn next_packet(&mut self) -> Option<Result<Packet<'_>>> {
        loop {
            let len = match self.advance()? {
                Ok(n) => n,
                Err(e) => return Some(Err(e)),
            };
            if self
                .parser
                .is_packet(&self.buf[self.start..self.start + len])
            {
                let raw = &self.buf[self.start..self.start + len];
                return match self.parser.parse(raw) {
                    Ok((Block::Packet(p), n)) => {
                        self.start += n;
                        Some(Ok(p))
                    }
                    Ok(_) => unreachable!("is_packet said it was a packet"),
                    Err(e) => {
                        self.done = true;
                        Some(Err(wrap(&self.path, e)))
                    }
                };
            }
            match self.parser.parse(&self.buf[self.start..self.start + len]) {
                Ok((_, n)) => self.start += n,
                Err(e) => {
                    self.done = true;
                    return Some(Err(wrap(&self.path, e)));
                }
            }
        }
    }
}

fn wrap(path: &Path, e: ParseError) -> Error {
    match e.bad_magic {
        Some(magic) => Error::BadMagic {
            path: path.to_owned(),
            magic,
        },
        None => Error::Format {
            path: path.to_owned(),
            offset: e.offset,
            packet: e.packet,
            reason: e.reason,
        },
    }
}
