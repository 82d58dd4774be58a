//! Writers: pcapng (section, interfaces, enhanced packets with comments, raw blocks
//! kept from another file) and legacy pcap, over any `Write`, in either byte order.
//!
//! Text options (packet comments, interface names and descriptions) are
//! written with their control characters escaped by the rule every magnet
//! output shares ([`magnet_common::text::escape`]): tshark and Wireshark show
//! them as they are, and a process name set to escape sequences must not reach
//! a terminal or another tool raw through them.

use std::io::{self, Write};

use magnet_common::text::escape;

use crate::block_type as bt;

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// An interface to describe in a pcapng file.
#[derive(Debug, Clone)]
pub struct InterfaceDesc<'a> {
    pub linktype: u32,
    /// 0 = no limit.
    pub snaplen: u32,
    pub name: Option<&'a str>,
    pub description: Option<&'a str>,
    /// Timestamps in 10^-`tsresol` s (9 = nanoseconds, the default; 6 = µs).
    pub tsresol: u8,
    /// More options, written as given after the ones above.
    pub extra: Vec<(u16, &'a [u8])>,
}

impl<'a> InterfaceDesc<'a> {
    pub fn new(linktype: u32) -> Self {
        InterfaceDesc {
            linktype,
            snaplen: 0,
            name: None,
            description: None,
            tsresol: 9,
            extra: Vec::new(),
        }
    }
    pub fn name(mut self, name: &'a str) -> Self {
        self.name = Some(name);
        self
    }
    pub fn description(mut self, d: &'a str) -> Self {
        self.description = Some(d);
        self
    }
    pub fn snaplen(mut self, n: u32) -> Self {
        self.snaplen = n;
        self
    }
}

/// One packet to write as an enhanced packet block.
#[derive(Debug, Clone)]
pub struct OutPacket<'a> {
    pub interface: u32,
    /// Nanoseconds since the Unix epoch; not negative.
    pub ts_ns: i64,
    /// Length on the wire; at least `data.len()`.
    pub orig_len: u32,
    pub data: &'a [u8],
    pub comments: Vec<&'a str>,
    /// `epb_flags` (direction in bits 0-1: 1 inbound, 2 outbound).
    pub flags: Option<u32>,
}

impl<'a> OutPacket<'a> {
    pub fn new(interface: u32, ts_ns: i64, data: &'a [u8]) -> Self {
        OutPacket {
            interface,
            ts_ns,
            orig_len: data.len() as u32,
            data,
            comments: Vec::new(),
            flags: None,
        }
    }
    pub fn comment(mut self, c: &'a str) -> Self {
        self.comments.push(c);
        self
    }
    pub fn orig_len(mut self, n: u32) -> Self {
        self.orig_len = n;
        self
    }
    pub fn flags(mut self, f: u32) -> Self {
        self.flags = Some(f);
        self
    }
}

/// Encodes fields in the file's byte order into one block buffer.
struct Enc {
    be: bool,
    b: Vec<u8>,
}

impl Enc {
    fn u16(&mut self, v: u16) {
        self.b.extend_from_slice(&if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
    fn u32(&mut self, v: u32) {
        self.b.extend_from_slice(&if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
    fn pad(&mut self) {
        while self.b.len() % 4 != 0 {
            self.b.push(0);
        }
    }
    fn opt(&mut self, code: u16, v: &[u8]) -> io::Result<()> {
        let len = u16::try_from(v.len()).map_err(|_| {
            invalid(format!(
                "option {code} is {} bytes (at most 65535)",
                v.len()
            ))
        })?;
        self.u16(code);
        self.u16(len);
        self.b.extend_from_slice(v);
        self.pad();
        Ok(())
    }
    fn end_opts(&mut self, any: bool) {
        if any {
            self.u16(0);
            self.u16(0);
        }
    }
}

/// Writes a pcapng file: one section, interfaces added as needed.
pub struct PcapNgWriter<W: Write> {
    w: W,
    enc: Enc,
    /// Units per second of each interface.
    ifaces: Vec<u64>,
}

impl<W: Write> PcapNgWriter<W> {
    /// A little-endian file whose section names magnet as the writing application.
    pub fn new(w: W) -> io::Result<Self> {
        Self::with_options(w, false, &[(4, b"magnet".as_slice())])
    }

    /// A file in the given byte order with the given section header options.
    pub fn with_options(w: W, big_endian: bool, shb_options: &[(u16, &[u8])]) -> io::Result<Self> {
        let mut me = PcapNgWriter {
            w,
            enc: Enc {
                be: big_endian,
                b: Vec::with_capacity(4096),
            },
            ifaces: Vec::new(),
        };
        me.begin(bt::SECTION_HEADER);
        me.enc.u32(0x1A2B_3C4D);
        me.enc.u16(1);
        me.enc.u16(0);
        me.enc.u32(0xFFFF_FFFF);
        me.enc.u32(0xFFFF_FFFF);
        for (c, v) in shb_options {
            me.enc.opt(*c, v)?;
        }
        me.enc.end_opts(!shb_options.is_empty());
        me.finish()?;
        Ok(me)
    }

    fn begin(&mut self, block_type: u32) {
        self.enc.b.clear();
        self.enc.u32(block_type);
        self.enc.u32(0);
    }

    fn finish(&mut self) -> io::Result<()> {
        self.enc.pad();
        let len = self.enc.b.len() as u32 + 4;
        let lb = if self.enc.be {
            len.to_be_bytes()
        } else {
            len.to_le_bytes()
        };
        self.enc.b[4..8].copy_from_slice(&lb);
        self.enc.b.extend_from_slice(&lb);
        self.w.write_all(&self.enc.b)
    }

    /// Describes an interface; returns the id packets name it by.
    pub fn add_interface(&mut self, d: &InterfaceDesc<'_>) -> io::Result<u32> {
        let lt = u16::try_from(d.linktype)
            .map_err(|_| invalid(format!("link type {} does not fit 16 bits", d.linktype)))?;
        if d.tsresol > 19 {
            return Err(invalid(format!("if_tsresol 10^-{} is too fine", d.tsresol)));
        }
        self.begin(bt::INTERFACE);
        self.enc.u16(lt);
        self.enc.u16(0);
        self.enc.u32(d.snaplen);
        if let Some(n) = d.name {
            self.enc.opt(2, escape(n).as_bytes())?;
        }
        if let Some(n) = d.description {
            self.enc.opt(3, escape(n).as_bytes())?;
        }
        if d.tsresol != 6 {
            self.enc.opt(9, &[d.tsresol])?;
        }
        for (c, v) in &d.extra {
            self.enc.opt(*c, v)?;
        }
        let any = d.name.is_some() || d.description.is_some() || d.tsresol != 6;
        self.enc.end_opts(any || !d.extra.is_empty());
        self.finish()?;
        self.ifaces.push(10u64.pow(d.tsresol as u32));
        Ok(self.ifaces.len() as u32 - 1)
    }

    /// Writes an enhanced packet block, checking its fields first.
    pub fn write_packet(&mut self, p: &OutPacket<'_>) -> io::Result<()> {
        let Some(&units) = self.ifaces.get(p.interface as usize) else {
            return Err(invalid(format!(
                "packet names interface {}, which was not added",
                p.interface
            )));
        };
        if p.ts_ns < 0 {
            return Err(invalid(format!("timestamp {} ns is before 1970", p.ts_ns)));
        }
        let cap = u32::try_from(p.data.len())
            .ok()
            .filter(|&n| n as usize <= crate::MAX_RECORD - 64)
            .ok_or_else(|| invalid(format!("packet of {} bytes is too long", p.data.len())))?;
        if p.orig_len < cap {
            return Err(invalid(format!(
                "original length {} is shorter than the {cap} bytes captured",
                p.orig_len
            )));
        }
        let t = (p.ts_ns as u128 * units as u128 / 1_000_000_000) as u64;
        self.begin(bt::ENHANCED_PACKET);
        self.enc.u32(p.interface);
        self.enc.u32((t >> 32) as u32);
        self.enc.u32(t as u32);
        self.enc.u32(cap);
        self.enc.u32(p.orig_len);
        self.enc.b.extend_from_slice(p.data);
        self.enc.pad();
        for c in &p.comments {
            self.enc.opt(1, escape(c).as_bytes())?;
        }
        if let Some(f) = p.flags {
            let fb = if self.enc.be {
                f.to_be_bytes()
            } else {
                f.to_le_bytes()
            };
            self.enc.opt(2, &fb)?;
        }
        self.enc
            .end_opts(!p.comments.is_empty() || p.flags.is_some());
        self.finish()
    }

    /// Writes a block as given (`body` is everything between the two length fields,
    /// already in this file's byte order): how blocks this crate does not interpret
    /// are carried over from a file read with the same byte order.
    pub fn write_raw_block(&mut self, block_type: u32, body: &[u8]) -> io::Result<()> {
        if body.len() > crate::MAX_RECORD - 12 {
            return Err(invalid(format!(
                "block body of {} bytes is too long",
                body.len()
            )));
        }
        self.begin(block_type);
        self.enc.b.extend_from_slice(body);
        self.finish()
    }

    pub fn get_ref(&self) -> &W {
        &self.w
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    pub fn into_inner(self) -> W {
        self.w
    }
}

/// Writes a legacy pcap file (one link type).
pub struct PcapWriter<W: Write> {
    w: W,
    be: bool,
    nanos: bool,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header. `nanos` chooses nanosecond timestamps.
    pub fn new(
        mut w: W,
        linktype: u32,
        snaplen: u32,
        nanos: bool,
        big_endian: bool,
    ) -> io::Result<Self> {
        let mut h = Enc {
            be: big_endian,
            b: Vec::with_capacity(24),
        };
        h.u32(if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 });
        h.u16(2);
        h.u16(4);
        h.u32(0);
        h.u32(0);
        h.u32(snaplen);
        h.u32(linktype);
        w.write_all(&h.b)?;
        Ok(PcapWriter {
            w,
            be: big_endian,
            nanos,
        })
    }

    /// Writes one record; times before 1970 or after 2106 are refused.
    pub fn write_packet(&mut self, ts_ns: i64, orig_len: u32, data: &[u8]) -> io::Result<()> {
        let sec = u32::try_from(ts_ns.div_euclid(1_000_000_000))
            .map_err(|_| invalid(format!("timestamp {ts_ns} ns does not fit a pcap record")))?;
        let ns = ts_ns.rem_euclid(1_000_000_000) as u32;
        let cap = u32::try_from(data.len())
            .ok()
            .filter(|&n| n as usize <= crate::MAX_RECORD)
            .ok_or_else(|| invalid(format!("packet of {} bytes is too long", data.len())))?;
        if orig_len < cap {
            return Err(invalid(format!(
                "original length {orig_len} is shorter than the {cap} bytes captured"
            )));
        }
        let mut h = Enc {
            be: self.be,
            b: Vec::with_capacity(16),
        };
        h.u32(sec);
        h.u32(if self.nanos { ns } else { ns / 1000 });
        h.u32(cap);
        h.u32(orig_len);
        self.w.write_all(&h.b)?;
        self.w.write_all(data)
    }

    pub fn into_inner(self) -> W {
        self.w
    }
}
