//! Reading pcap and pcapng files.
//!
//! A small reader of its own rather than a general pcap library: it reuses one buffer
//! for every packet (no allocation per packet), knows the byte offset of every record so
//! errors can name it, bounds every length it reads before allocating, and turns a file
//! that was cut short into one clear error after the last whole packet.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Largest record or block accepted. Captures on Linux have a snap length of at most
/// 256 KiB; anything past this bound is treated as corruption instead of allocated.
pub const MAX_RECORD: usize = 16 << 20;

/// Link-layer header types (LINKTYPE_* values as written in pcap and pcapng files).
pub mod linktype {
    pub const NULL: u32 = 0;
    pub const ETHERNET: u32 = 1;
    pub const RAW: u32 = 101;
    pub const LOOP: u32 = 108;
    pub const LINUX_SLL: u32 = 113;
    pub const IPV4: u32 = 228;
    pub const IPV6: u32 = 229;
    pub const LINUX_SLL2: u32 = 276;
    /// DLT_RAW as some BSD-derived libpcaps number it in files.
    pub const RAW_ALT: u32 = 12;
    pub const RAW_ALT2: u32 = 14;
}

/// One captured packet, borrowed from the reader's buffer.
#[derive(Debug, Clone, Copy)]
pub struct Packet<'a> {
    /// 1-based packet number in the file.
    pub number: u64,
    /// Capture time in nanoseconds since the Unix epoch.
    pub ts_ns: i64,
    pub linktype: u32,
    /// Length of the packet on the wire (may exceed `data.len()` when the snap length
    /// cut it).
    pub orig_len: u32,
    pub data: &'a [u8],
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Pcap { nanos: bool, linktype: u32 },
    PcapNg,
}

#[derive(Clone, Copy, Debug)]
struct Iface {
    linktype: u32,
    /// Units per second of this interface's timestamps.
    units_per_sec: u64,
    offset_s: i64,
}

/// Reads packets from a pcap or pcapng file (either byte order).
pub struct CaptureReader<R> {
    rd: R,
    path: PathBuf,
    kind: Kind,
    big_endian: bool,
    ifaces: Vec<Iface>,
    buf: Vec<u8>,
    offset: u64,
    packets: u64,
    done: bool,
}

impl CaptureReader<BufReader<File>> {
    /// Opens `path`; the format is recognised from the magic number.
    pub fn open(path: &Path) -> Result<Self> {
        let f = File::open(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        Self::new(BufReader::with_capacity(1 << 20, f), path)
    }
}

fn rd_u32(b: &[u8], be: bool) -> u32 {
    let a = [b[0], b[1], b[2], b[3]];
    if be {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}
fn rd_u16(b: &[u8], be: bool) -> u16 {
    let a = [b[0], b[1]];
    if be {
        u16::from_be_bytes(a)
    } else {
        u16::from_le_bytes(a)
    }
}

impl<R: Read> CaptureReader<R> {
    /// Wraps any reader; `path` is only used to name the source in errors.
    pub fn new(mut rd: R, path: &Path) -> Result<Self> {
        let path = path.to_owned();
        let mut head = [0u8; 24];
        let got = read_full(&mut rd, &mut head).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        if got < 4 {
            return Err(Error::Format {
                path,
                offset: 0,
                packet: 0,
                reason: format!("file too short for a capture header ({got} bytes)"),
            });
        }
        let magic_le = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let mut me = CaptureReader {
            rd,
            path,
            kind: Kind::PcapNg,
            big_endian: false,
            ifaces: Vec::new(),
            buf: Vec::with_capacity(65536),
            offset: 0,
            packets: 0,
            done: false,
        };
        let pcap = |be: bool, nanos: bool| (be, nanos);
        let pcap_kind = match magic_le {
            0xa1b2c3d4 => Some(pcap(false, false)),
            0xd4c3b2a1 => Some(pcap(true, false)),
            0xa1b23c4d => Some(pcap(false, true)),
            0x4d3cb2a1 => Some(pcap(true, true)),
            _ => None,
        };
        if let Some((be, nanos)) = pcap_kind {
            if got < 24 {
                return Err(me.fmt_err(0, format!("pcap header cut short ({got} of 24 bytes)")));
            }
            me.big_endian = be;
            let linktype = rd_u32(&head[20..24], be) & 0xFFFF;
            me.kind = Kind::Pcap { nanos, linktype };
            me.offset = 24;
            return Ok(me);
        }
        if magic_le == 0x0A0D0D0A {
            // Section header: the first block. Re-read it through the block reader by
            // putting the bytes we consumed back in front.
            me.buf.clear();
            me.buf.extend_from_slice(&head[..got]);
            me.parse_first_shb(got)?;
            return Ok(me);
        }
        Err(Error::BadMagic {
            path: me.path,
            magic: magic_le,
        })
    }

    fn fmt_err(&self, offset: u64, reason: String) -> Error {
        Error::Format {
            path: self.path.clone(),
            offset,
            packet: self.packets,
            reason,
        }
    }

    fn io_err(&self, source: std::io::Error) -> Error {
        Error::Io {
            path: self.path.clone(),
            source,
        }
    }

    /// The first section header block arrives with `got` bytes already in `self.buf`.
    fn parse_first_shb(&mut self, got: usize) -> Result<()> {
        if got < 12 {
            return Err(self.fmt_err(0, "pcapng section header cut short".into()));
        }
        let bom = &self.buf[8..12];
        self.big_endian = match bom {
            [0x1A, 0x2B, 0x3C, 0x4D] => true,
            [0x4D, 0x3C, 0x2B, 0x1A] => false,
            _ => return Err(self.fmt_err(8, "pcapng byte-order magic is wrong".into())),
        };
        let len = rd_u32(&self.buf[4..8], self.big_endian) as usize;
        if !(28..=MAX_RECORD).contains(&len) || len % 4 != 0 {
            return Err(self.fmt_err(0, format!("pcapng section header length {len} is invalid")));
        }
        let have = self.buf.len();
        self.buf.resize(len, 0);
        let n = read_full(&mut self.rd, &mut self.buf[have..]).map_err(|e| self.io_err(e))?;
        if n < len - have {
            return Err(self.fmt_err(0, "pcapng section header cut short".into()));
        }
        self.offset = len as u64;
        self.ifaces.clear();
        Ok(())
    }

    /// Byte offset of the next record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Packets returned so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// The next packet; `None` at a clean end of file. An error (a record cut short, a
    /// nonsensical length) ends the iteration: later calls return `None`.
    #[allow(clippy::should_implement_trait)]
    pub fn next_packet(&mut self) -> Option<Result<Packet<'_>>> {
        if self.done {
            return None;
        }
        let r = match self.kind {
            Kind::Pcap { nanos, linktype } => self.next_pcap(nanos, linktype),
            Kind::PcapNg => self.next_pcapng(),
        };
        match r {
            Ok(Some((ts_ns, linktype, orig_len, start, end))) => {
                self.packets += 1;
                Some(Ok(Packet {
                    number: self.packets,
                    ts_ns,
                    linktype,
                    orig_len,
                    data: &self.buf[start..end],
                }))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }

    /// Fills `self.buf` with exactly `len` bytes; `Ok(false)` on a clean EOF at the
    /// start of a record.
    fn fill(&mut self, len: usize, what: &str) -> Result<bool> {
        self.buf.resize(len, 0);
        let n = read_full(&mut self.rd, &mut self.buf[..len]).map_err(|e| self.io_err(e))?;
        if n == 0 {
            return Ok(false);
        }
        if n < len {
            return Err(self.fmt_err(
                self.offset,
                format!("file cut short inside {what}: {n} of {len} bytes present"),
            ));
        }
        Ok(true)
    }

    #[allow(clippy::type_complexity)]
    fn next_pcap(
        &mut self,
        nanos: bool,
        linktype: u32,
    ) -> Result<Option<(i64, u32, u32, usize, usize)>> {
        if !self.fill(16, "a record header")? {
            return Ok(None);
        }
        let be = self.big_endian;
        let sec = rd_u32(&self.buf[0..4], be) as i64;
        let frac = rd_u32(&self.buf[4..8], be) as i64;
        let incl = rd_u32(&self.buf[8..12], be) as usize;
        let orig = rd_u32(&self.buf[12..16], be);
        if incl > MAX_RECORD {
            return Err(self.fmt_err(
                self.offset,
                format!("record length {incl} exceeds the {MAX_RECORD}-byte bound"),
            ));
        }
        let rec_off = self.offset;
        self.offset += 16;
        self.buf.resize(incl, 0);
        let n = read_full(&mut self.rd, &mut self.buf[..incl]).map_err(|e| self.io_err(e))?;
        if n < incl {
            return Err(self.fmt_err(
                rec_off,
                format!("file cut short inside packet data: {n} of {incl} bytes present"),
            ));
        }
        self.offset += incl as u64;
        let ts = sec * 1_000_000_000 + if nanos { frac } else { frac * 1000 };
        Ok(Some((ts, linktype, orig, 0, incl)))
    }

    #[allow(clippy::type_complexity)]
    fn next_pcapng(&mut self) -> Result<Option<(i64, u32, u32, usize, usize)>> {
        loop {
            let blk_off = self.offset;
            if !self.fill(8, "a block header")? {
                return Ok(None);
            }
            let be = self.big_endian;
            let btype_raw = &self.buf[0..4];
            if btype_raw == [0x0A, 0x0D, 0x0D, 0x0A] {
                // A new section: its own byte order.
                let got = 8;
                let mut rest = [0u8; 4];
                let n = read_full(&mut self.rd, &mut rest).map_err(|e| self.io_err(e))?;
                if n < 4 {
                    return Err(self.fmt_err(blk_off, "section header cut short".into()));
                }
                self.buf.truncate(got);
                self.buf.extend_from_slice(&rest);
                let base = self.offset;
                self.parse_first_shb(12).map_err(|e| match e {
                    Error::Format { reason, .. } => self.fmt_err(base, reason),
                    other => other,
                })?;
                self.offset = base + (self.buf.len() as u64);
                continue;
            }
            let btype = rd_u32(&self.buf[0..4], be);
            let len = rd_u32(&self.buf[4..8], be) as usize;
            if !(12..=MAX_RECORD).contains(&len) || len % 4 != 0 {
                return Err(self.fmt_err(blk_off, format!("block length {len} is invalid")));
            }
            self.buf.resize(len, 0);
            let n = read_full(&mut self.rd, &mut self.buf[8..len]).map_err(|e| self.io_err(e))?;
            if n < len - 8 {
                return Err(self.fmt_err(
                    blk_off,
                    format!(
                        "file cut short inside a block: {} of {len} bytes present",
                        n + 8
                    ),
                ));
            }
            self.offset += len as u64;
            let body_end = len - 4;
            match btype {
                1 => {
                    if len < 20 {
                        return Err(self.fmt_err(blk_off, "interface block too short".into()));
                    }
                    let linktype = rd_u16(&self.buf[8..10], be) as u32;
                    let mut iface = Iface {
                        linktype,
                        units_per_sec: 1_000_000,
                        offset_s: 0,
                    };
                    // Options.
                    let mut p = 16;
                    while p + 4 <= body_end {
                        let code = rd_u16(&self.buf[p..p + 2], be);
                        let olen = rd_u16(&self.buf[p + 2..p + 4], be) as usize;
                        let v = p + 4;
                        if code == 0 || v + olen > body_end {
                            break;
                        }
                        if code == 9 && olen >= 1 {
                            let r = self.buf[v];
                            let exp = (r & 0x7f) as u32;
                            iface.units_per_sec = if r & 0x80 != 0 {
                                if exp < 63 {
                                    1u64 << exp
                                } else {
                                    1_000_000
                                }
                            } else if exp <= 19 {
                                10u64.pow(exp)
                            } else {
                                1_000_000
                            };
                        } else if code == 14 && olen >= 8 {
                            let hi = rd_u32(&self.buf[v..v + 4], be) as u64;
                            let lo = rd_u32(&self.buf[v + 4..v + 8], be) as u64;
                            iface.offset_s = ((hi << 32) | lo) as i64;
                        }
                        p = v + olen.div_ceil(4) * 4;
                    }
                    if self.ifaces.len() >= 65536 {
                        return Err(self.fmt_err(blk_off, "more than 65536 interfaces".into()));
                    }
                    self.ifaces.push(iface);
                }
                6 | 2 => {
                    if len < 32 {
                        return Err(self.fmt_err(blk_off, "packet block too short".into()));
                    }
                    let ifid = if btype == 6 {
                        rd_u32(&self.buf[8..12], be) as usize
                    } else {
                        rd_u16(&self.buf[8..10], be) as usize
                    };
                    let hi = rd_u32(&self.buf[12..16], be) as u64;
                    let lo = rd_u32(&self.buf[16..20], be) as u64;
                    let cap = rd_u32(&self.buf[20..24], be) as usize;
                    let orig = rd_u32(&self.buf[24..28], be);
                    if 28 + cap > body_end {
                        return Err(self.fmt_err(
                            blk_off,
                            format!("captured length {cap} overruns its {len}-byte block"),
                        ));
                    }
                    let Some(iface) = self.ifaces.get(ifid).copied() else {
                        return Err(self.fmt_err(
                            blk_off,
                            format!("packet names interface {ifid}, which was never described"),
                        ));
                    };
                    let units = (hi << 32) | lo;
                    let ts = (units as u128 * 1_000_000_000 / iface.units_per_sec as u128) as i64
                        + iface.offset_s * 1_000_000_000;
                    return Ok(Some((ts, iface.linktype, orig, 28, 28 + cap)));
                }
                3 => {
                    let Some(iface) = self.ifaces.first().copied() else {
                        return Err(self.fmt_err(
                            blk_off,
                            "simple packet block before any interface block".into(),
                        ));
                    };
                    let orig = rd_u32(&self.buf[8..12], be);
                    let cap = (orig as usize).min(body_end - 12);
                    return Ok(Some((0, iface.linktype, orig, 12, 12 + cap)));
                }
                _ => {} // statistics, name resolution, custom: not needed here
            }
        }
    }
}

/// Reads until `buf` is full or EOF; returns the bytes read.
fn read_full<R: Read>(rd: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match rd.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcap_file(be: bool, recs: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let w32 = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let mut out = Vec::new();
        out.extend_from_slice(&w32(0xa1b2c3d4));
        out.extend_from_slice(&w16(2));
        out.extend_from_slice(&w16(4));
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&w32(65535));
        out.extend_from_slice(&w32(1));
        for (s, us, d) in recs {
            out.extend_from_slice(&w32(*s));
            out.extend_from_slice(&w32(*us));
            out.extend_from_slice(&w32(d.len() as u32));
            out.extend_from_slice(&w32(d.len() as u32));
            out.extend_from_slice(d);
        }
        out
    }

    #[test]
    fn pcap_both_byte_orders() {
        for be in [false, true] {
            let f = pcap_file(be, &[(10, 5, b"abcd"), (11, 6, b"xyz")]);
            let mut r = CaptureReader::new(&f[..], Path::new("t.pcap")).unwrap();
            let p = r.next_packet().unwrap().unwrap();
            assert_eq!(
                (p.number, p.ts_ns, p.linktype, p.data),
                (1, 10_000_005_000, 1, &b"abcd"[..])
            );
            let p = r.next_packet().unwrap().unwrap();
            assert_eq!((p.number, p.data), (2, &b"xyz"[..]));
            assert!(r.next_packet().is_none());
        }
    }

    #[test]
    fn pcap_cut_short_names_offset() {
        let f = pcap_file(false, &[(10, 5, b"abcd"), (11, 6, b"xyz")]);
        let cut = &f[..f.len() - 1];
        let mut r = CaptureReader::new(cut, Path::new("t.pcap")).unwrap();
        assert!(r.next_packet().unwrap().is_ok());
        let e = r.next_packet().unwrap().unwrap_err().to_string();
        assert!(e.contains("offset 44") && e.contains("cut short"), "{e}");
        assert!(r.next_packet().is_none());
    }

    fn ng_block(t: u32, body: &[u8]) -> Vec<u8> {
        let len = 12 + body.len().div_ceil(4) * 4;
        let mut b = Vec::new();
        b.extend_from_slice(&t.to_le_bytes());
        b.extend_from_slice(&(len as u32).to_le_bytes());
        b.extend_from_slice(body);
        b.resize(len - 4, 0);
        b.extend_from_slice(&(len as u32).to_le_bytes());
        b
    }

    #[test]
    fn pcapng_with_tsresol() {
        let mut f = ng_block(
            0x0A0D0D0A,
            &[
                0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            ],
        );
        // IDB: linktype 113, snaplen, option if_tsresol = 9 (ns), end.
        let mut idb = vec![113, 0, 0, 0, 0, 0, 1, 0];
        idb.extend_from_slice(&[9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0]);
        f.extend(ng_block(1, &idb));
        let ts: u64 = 1_700_000_000_123_456_789;
        let mut epb = Vec::new();
        epb.extend_from_slice(&0u32.to_le_bytes());
        epb.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(ts as u32).to_le_bytes());
        epb.extend_from_slice(&5u32.to_le_bytes());
        epb.extend_from_slice(&9u32.to_le_bytes());
        epb.extend_from_slice(b"hello");
        f.extend(ng_block(6, &epb));
        f.extend(ng_block(5, &[0; 8])); // statistics: skipped
        let mut r = CaptureReader::new(&f[..], Path::new("t.pcapng")).unwrap();
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(
            (p.ts_ns, p.linktype, p.orig_len, p.data),
            (ts as i64, 113, 9, &b"hello"[..])
        );
        assert!(r.next_packet().is_none());
    }

    #[test]
    fn rejects_garbage() {
        assert!(matches!(
            CaptureReader::new(&b"not a capture file"[..], Path::new("x")),
            Err(Error::BadMagic { .. })
        ));
        assert!(CaptureReader::new(&b"ab"[..], Path::new("x")).is_err());
    }
}
