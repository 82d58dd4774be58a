//! The sans-IO parser: byte slices in, blocks out.
//!
//! A [`Parser`] holds what a capture file carries from one item to the next (format,
//! byte order, the interfaces of the current pcapng section, the byte offset). It
//! reads nothing itself: [`Parser::next_len`] tells the caller how long the next item
//! is, and [`Parser::parse`] decodes it once the caller has all of it. Every length is
//! checked before use, so no input can make it panic or allocate.

use crate::{block_type as bt, MAX_RECORD};

/// What the parser needs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// At least this many bytes before the length of the next item is known.
    Need(usize),
    /// The next item is exactly this long.
    Len(usize),
}

/// A parse failure: where and why. The reader adds the file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// Byte offset of the item the error concerns.
    pub offset: u64,
    /// Packets returned before it.
    pub packet: u64,
    /// `Some(magic)` when the file does not start with a known magic number.
    pub bad_magic: Option<u32>,
    pub reason: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "offset {}, packet {}: {}",
            self.offset, self.packet, self.reason
        )
    }
}

/// The legacy pcap file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PcapHeader {
    pub big_endian: bool,
    pub nanos: bool,
    pub version: (u16, u16),
    pub snaplen: u32,
    /// Link type (the low 16 bits of the header's field).
    pub linktype: u32,
}

/// A pcapng section header block.
#[derive(Debug, Clone, Copy)]
pub struct Section<'a> {
    pub big_endian: bool,
    pub version: (u16, u16),
    /// -1 when not given.
    pub section_len: i64,
    pub options: Options<'a>,
}

/// A pcapng interface description block, with its timestamp options read.
#[derive(Debug, Clone, Copy)]
pub struct Interface<'a> {
    /// Index within its section (what packets name).
    pub id: u32,
    pub linktype: u32,
    pub snaplen: u32,
    /// Timestamp units per second (`if_tsresol`; 10^6 when absent).
    pub units_per_sec: u128,
    /// Seconds added to every timestamp (`if_tsoffset`).
    pub offset_s: i64,
    pub options: Options<'a>,
}

impl<'a> Interface<'a> {
    /// `if_name`, when present and UTF-8.
    pub fn name(&self) -> Option<&'a str> {
        self.options.string(2)
    }
}

/// One captured packet, borrowed from the caller's buffer.
#[derive(Debug, Clone, Copy)]
pub struct Packet<'a> {
    /// 1-based packet number in the file.
    pub number: u64,
    /// Byte offset of its record or block.
    pub offset: u64,
    /// Capture time in nanoseconds since the Unix epoch (0 for a simple packet block,
    /// which carries none).
    pub ts_ns: i64,
    pub linktype: u32,
    /// Interface index within the section (0 for pcap).
    pub interface: u32,
    /// Length of the packet on the wire (may exceed `data.len()` when the snap length
    /// cut it).
    pub orig_len: u32,
    pub data: &'a [u8],
    /// The block's options (empty for pcap and simple packet blocks).
    pub options: Options<'a>,
}

impl<'a> Packet<'a> {
    /// The packet's comments (`opt_comment`), those that are UTF-8.
    pub fn comments(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.options
            .filter(|(c, _)| *c == 1)
            .filter_map(|(_, v)| std::str::from_utf8(v).ok())
    }
}

/// A block not interpreted here (name resolution, statistics, secrets, custom or
/// unknown types): kept whole so that it can be written back.
#[derive(Debug, Clone, Copy)]
pub struct RawBlock<'a> {
    pub block_type: u32,
    /// The body between the length fields.
    pub body: &'a [u8],
}

/// One item of a capture file.
#[derive(Debug, Clone, Copy)]
pub enum Block<'a> {
    PcapHeader(PcapHeader),
    Section(Section<'a>),
    Interface(Interface<'a>),
    Packet(Packet<'a>),
    Other(RawBlock<'a>),
}

/// pcapng options: `(code, value)` pairs, ending at `opt_endofopt` or where the
/// remaining bytes cannot hold an option.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    data: &'a [u8],
    big_endian: bool,
}

impl<'a> Options<'a> {
    pub fn new(data: &'a [u8], big_endian: bool) -> Self {
        Options { data, big_endian }
    }
    /// The first value of option `code`.
    pub fn get(&self, code: u16) -> Option<&'a [u8]> {
        { *self }.find(|(c, _)| *c == code).map(|(_, v)| v)
    }
    /// The first value of option `code` as UTF-8 text (a trailing NUL dropped).
    pub fn string(&self, code: u16) -> Option<&'a str> {
        let v = self.get(code)?;
        let v = v.strip_suffix(&[0]).unwrap_or(v);
        std::str::from_utf8(v).ok()
    }
    fn u16_at(&self, b: &[u8]) -> u16 {
        rd_u16(b, self.big_endian)
    }
}

impl<'a> Iterator for Options<'a> {
    type Item = (u16, &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        if self.data.len() < 4 {
            return None;
        }
        let code = self.u16_at(&self.data[0..2]);
        let len = self.u16_at(&self.data[2..4]) as usize;
        let padded = len.div_ceil(4) * 4;
        if code == 0 || self.data.len() - 4 < len {
            self.data = &[];
            return None;
        }
        let v = &self.data[4..4 + len];
        self.data = &self.data[(4 + padded).min(self.data.len())..];
        Some((code, v))
    }
}

pub(crate) fn rd_u32(b: &[u8], be: bool) -> u32 {
    let a = [b[0], b[1], b[2], b[3]];
    if be {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}

pub(crate) fn rd_u16(b: &[u8], be: bool) -> u16 {
    let a = [b[0], b[1]];
    if be {
        u16::from_be_bytes(a)
    } else {
        u16::from_le_bytes(a)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Unknown,
    Pcap(PcapHeader),
    PcapNg,
}

#[derive(Debug, Clone, Copy)]
struct Iface {
    linktype: u32,
    snaplen: u32,
    units_per_sec: u128,
    offset_s: i64,
}

/// Most interfaces accepted in one section.
pub const MAX_INTERFACES: usize = 65536;

/// Largest `if_tsoffset` accepted, in seconds either way (about 272 years): past it no
/// timestamp of the interface fits in 64-bit nanoseconds.
pub const MAX_TS_OFFSET_S: i64 = 1 << 33;

/// The parser state of one capture file.
#[derive(Debug, Clone)]
pub struct Parser {
    format: Format,
    big_endian: bool,
    ifaces: Vec<Iface>,
    offset: u64,
    packets: u64,
}

impl Default for Parser {
    fn default() -> Self {
        Self::new()
    }
}

impl Parser {
    pub fn new() -> Self {
        Parser {
            format: Format::Unknown,
            big_endian: false,
            ifaces: Vec::new(),
            offset: 0,
            packets: 0,
        }
    }

    /// Byte offset of the next item.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Packets parsed so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// True once the file header (pcap header or first section header) was parsed.
    pub fn started(&self) -> bool {
        self.format != Format::Unknown
    }

    /// Whether the current section (or file) is big-endian.
    pub fn big_endian(&self) -> bool {
        self.big_endian
    }

    fn err(&self, reason: impl Into<String>) -> ParseError {
        ParseError {
            offset: self.offset,
            packet: self.packets,
            bad_magic: None,
            reason: reason.into(),
        }
    }

    /// How long the item at the start of `data` is, or how much more is needed to
    /// tell. An impossible length is an error.
    pub fn next_len(&self, data: &[u8]) -> Result<Next, ParseError> {
        match self.format {
            Format::Unknown => {
                if data.len() < 4 {
                    return Ok(Next::Need(4));
                }
                let magic = rd_u32(&data[0..4], false);
                match magic {
                    0xa1b2c3d4 | 0xd4c3b2a1 | 0xa1b23c4d | 0x4d3cb2a1 => Ok(Next::Len(24)),
                    bt::SECTION_HEADER => self.block_len(data),
                    _ => Err(ParseError {
                        bad_magic: Some(magic),
                        ..self.err(format!("not a pcap or pcapng file (magic {magic:#010x})"))
                    }),
                }
            }
            Format::Pcap(h) => {
                if data.len() < 16 {
                    return Ok(Next::Need(16));
                }
                let incl = rd_u32(&data[8..12], h.big_endian) as usize;
                if incl > MAX_RECORD {
                    return Err(self.err(format!(
                        "record length {incl} exceeds the {MAX_RECORD}-byte bound"
                    )));
                }
                Ok(Next::Len(16 + incl))
            }
            Format::PcapNg => self.block_len(data),
        }
    }

    fn block_len(&self, data: &[u8]) -> Result<Next, ParseError> {
        if data.len() < 8 {
            return Ok(Next::Need(8));
        }
        let shb = data[0..4] == [0x0A, 0x0D, 0x0D, 0x0A];
        let be = if shb {
            if data.len() < 12 {
                return Ok(Next::Need(12));
            }
            match data[8..12] {
                [0x1A, 0x2B, 0x3C, 0x4D] => true,
                [0x4D, 0x3C, 0x2B, 0x1A] => false,
                _ => {
                    return Err(ParseError {
                        offset: self.offset + 8,
                        ..self.err("pcapng byte-order magic is wrong")
                    })
                }
            }
        } else {
            self.big_endian
        };
        let len = rd_u32(&data[4..8], be) as usize;
        let min = if shb { 28 } else { 12 };
        if !(min..=MAX_RECORD).contains(&len) || len % 4 != 0 {
            let what = if shb { "section header" } else { "block" };
            return Err(self.err(format!(
                "{what} length {len} is invalid (a multiple of 4 from {min} to {MAX_RECORD})"
            )));
        }
        Ok(Next::Len(len))
    }

    /// Whether `item` (a whole item, as [`Parser::next_len`] measured it) is a packet.
    pub fn is_packet(&self, item: &[u8]) -> bool {
        match self.format {
            Format::Unknown => false,
            Format::Pcap(_) => true,
            Format::PcapNg => {
                item.len() >= 4
                    && item[0..4] != [0x0A, 0x0D, 0x0D, 0x0A]
                    && matches!(
                        rd_u32(&item[0..4], self.big_endian),
                        bt::ENHANCED_PACKET | bt::PACKET | bt::SIMPLE_PACKET
                    )
            }
        }
    }

    /// Decodes the item at the start of `data`, which must hold all of it (as
    /// [`Parser::next_len`] said). Returns the item and its length.
    pub fn parse<'a>(&mut self, data: &'a [u8]) -> Result<(Block<'a>, usize), ParseError> {
        let len = match self.next_len(data)? {
            Next::Len(n) if n <= data.len() => n,
            Next::Len(n) | Next::Need(n) => {
                return Err(self.err(format!(
                    "item needs {n} bytes, {} given (file cut short)",
                    data.len()
                )))
            }
        };
        let item = &data[..len];
        let block = match self.format {
            Format::Unknown if item[0..4] != [0x0A, 0x0D, 0x0D, 0x0A] => {
                let h = self.pcap_header(item)?;
                self.format = Format::Pcap(h);
                self.big_endian = h.big_endian;
                Block::PcapHeader(h)
            }
            Format::Pcap(h) => Block::Packet(self.pcap_record(h, item)?),
            Format::Unknown | Format::PcapNg => self.pcapng_block(item)?,
        };
        self.offset += len as u64;
        Ok((block, len))
    }

    fn pcap_header(&self, b: &[u8]) -> Result<PcapHeader, ParseError> {
        let magic = rd_u32(&b[0..4], false);
        let (big_endian, nanos) = match magic {
            0xa1b2c3d4 => (false, false),
            0xd4c3b2a1 => (true, false),
            0xa1b23c4d => (false, true),
            _ => (true, true),
        };
        Ok(PcapHeader {
            big_endian,
            nanos,
            version: (rd_u16(&b[4..6], big_endian), rd_u16(&b[6..8], big_endian)),
            snaplen: rd_u32(&b[16..20], big_endian),
            linktype: rd_u32(&b[20..24], big_endian) & 0xFFFF,
        })
    }

    fn pcap_record<'a>(&mut self, h: PcapHeader, b: &'a [u8]) -> Result<Packet<'a>, ParseError> {
        let be = h.big_endian;
        let sec = rd_u32(&b[0..4], be) as i64;
        let frac = rd_u32(&b[4..8], be) as i64;
        let orig = rd_u32(&b[12..16], be);
        self.packets += 1;
        Ok(Packet {
            number: self.packets,
            offset: self.offset,
            ts_ns: sec * 1_000_000_000 + if h.nanos { frac } else { frac * 1000 },
            linktype: h.linktype,
            interface: 0,
            orig_len: orig,
            data: &b[16..],
            options: Options::default(),
        })
    }

    fn pcapng_block<'a>(&mut self, b: &'a [u8]) -> Result<Block<'a>, ParseError> {
        let len = b.len();
        if b[0..4] == [0x0A, 0x0D, 0x0D, 0x0A] {
            let be = b[8..12] == [0x1A, 0x2B, 0x3C, 0x4D];
            self.check_trailer(b, be)?;
            let major = rd_u16(&b[12..14], be);
            if major != 1 {
                return Err(self.err(format!("pcapng major version {major} is not 1")));
            }
            self.format = Format::PcapNg;
            self.big_endian = be;
            self.ifaces.clear();
            let hi = rd_u32(&b[16..20], be) as u64;
            let lo = rd_u32(&b[20..24], be) as u64;
            return Ok(Block::Section(Section {
                big_endian: be,
                version: (major, rd_u16(&b[14..16], be)),
                section_len: ((hi << 32) | lo) as i64,
                options: Options::new(&b[24..len - 4], be),
            }));
        }
        let be = self.big_endian;
        self.check_trailer(b, be)?;
        let btype = rd_u32(&b[0..4], be);
        let body = &b[8..len - 4];
        match btype {
            bt::INTERFACE => self.interface(body).map(Block::Interface),
            bt::ENHANCED_PACKET | bt::PACKET => self.packet(btype, body).map(Block::Packet),
            bt::SIMPLE_PACKET => self.simple_packet(body).map(Block::Packet),
            _ => Ok(Block::Other(RawBlock {
                block_type: btype,
                body,
            })),
        }
    }

    fn check_trailer(&self, b: &[u8], be: bool) -> Result<(), ParseError> {
        let lead = rd_u32(&b[4..8], be);
        let trail = rd_u32(&b[b.len() - 4..], be);
        if lead != trail {
            return Err(self.err(format!(
                "block length {lead} at its start but {trail} at its end"
            )));
        }
        Ok(())
    }

    fn interface<'a>(&mut self, body: &'a [u8]) -> Result<Interface<'a>, ParseError> {
        let be = self.big_endian;
        if body.len() < 8 {
            return Err(self.err(format!(
                "interface block too short ({} bytes, at least 20)",
                body.len() + 12
            )));
        }
        if self.ifaces.len() >= MAX_INTERFACES {
            return Err(self.err(format!("more than {MAX_INTERFACES} interfaces")));
        }
        let options = Options::new(&body[8..], be);
        let mut iface = Iface {
            linktype: rd_u16(&body[0..2], be) as u32,
            snaplen: rd_u32(&body[4..8], be),
            units_per_sec: 1_000_000,
            offset_s: 0,
        };
        if let Some(v) = options.get(9) {
            let Some(&r) = v.first() else {
                return Err(self.err("if_tsresol option is empty"));
            };
            let exp = (r & 0x7f) as u32;
            // 2^-exp or 10^-exp seconds; every exponent whose units fit in 128 bits.
            iface.units_per_sec = if r & 0x80 != 0 {
                1u128 << exp
            } else if exp <= 38 {
                10u128.pow(exp)
            } else {
                return Err(self.err(format!(
                    "if_tsresol 10^-{exp} s is finer than this reader supports (10^-38)"
                )));
            };
        }
        if let Some(v) = options.get(14) {
            if v.len() < 8 {
                return Err(self.err(format!("if_tsoffset option has {} bytes, not 8", v.len())));
            }
            let b8: [u8; 8] = [v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]];
            let off = if be {
                i64::from_be_bytes(b8)
            } else {
                i64::from_le_bytes(b8)
            };
            if !(-MAX_TS_OFFSET_S..=MAX_TS_OFFSET_S).contains(&off) {
                return Err(self.err(format!(
                    "if_tsoffset {off} s is out of range (at most {MAX_TS_OFFSET_S} s either way)"
                )));
            }
            iface.offset_s = off;
        }
        let id = self.ifaces.len() as u32;
        self.ifaces.push(iface);
        Ok(Interface {
            id,
            linktype: iface.linktype,
            snaplen: iface.snaplen,
            units_per_sec: iface.units_per_sec,
            offset_s: iface.offset_s,
            options,
        })
    }

    fn packet<'a>(&mut self, btype: u32, body: &'a [u8]) -> Result<Packet<'a>, ParseError> {
        let be = self.big_endian;
        if body.len() < 20 {
            return Err(self.err(format!(
                "packet block too short ({} bytes, at least 32)",
                body.len() + 12
            )));
        }
        let ifid = if btype == bt::ENHANCED_PACKET {
            rd_u32(&body[0..4], be)
        } else {
            rd_u16(&body[0..2], be) as u32
        };
        let hi = rd_u32(&body[4..8], be) as u64;
        let lo = rd_u32(&body[8..12], be) as u64;
        let cap = rd_u32(&body[12..16], be) as usize;
        let orig = rd_u32(&body[16..20], be);
        if cap > body.len() - 20 {
            return Err(self.err(format!(
                "captured length {cap} overruns its {}-byte block",
                body.len() + 12
            )));
        }
        let Some(iface) = self.ifaces.get(ifid as usize).copied() else {
            return Err(self.err(format!(
                "packet names interface {ifid}, which was never described"
            )));
        };
        let units = (hi << 32) | lo;
        let ns = units as u128 * 1_000_000_000 / iface.units_per_sec;
        let ts = ns as i128 + iface.offset_s as i128 * 1_000_000_000;
        let Ok(ts_ns) = i64::try_from(ts) else {
            return Err(self.err(format!(
                "timestamp {units} units of 1/{} s plus if_tsoffset {} s is beyond the year 2262",
                iface.units_per_sec, iface.offset_s
            )));
        };
        let opts_at = 20 + cap.div_ceil(4) * 4;
        self.packets += 1;
        Ok(Packet {
            number: self.packets,
            offset: self.offset,
            ts_ns,
            linktype: iface.linktype,
            interface: ifid,
            orig_len: orig,
            data: &body[20..20 + cap],
            options: Options::new(body.get(opts_at..).unwrap_or(&[]), be),
        })
    }

    fn simple_packet<'a>(&mut self, body: &'a [u8]) -> Result<Packet<'a>, ParseError> {
        if body.len() < 4 {
            return Err(self.err(format!(
                "simple packet block too short ({} bytes, at least 16)",
                body.len() + 12
            )));
        }
        let Some(iface) = self.ifaces.first().copied() else {
            return Err(self.err("simple packet block before any interface block"));
        };
        let orig = rd_u32(&body[0..4], self.big_endian);
        let mut cap = (orig as usize).min(body.len() - 4);
        if iface.snaplen != 0 {
            cap = cap.min(iface.snaplen as usize);
        }
        self.packets += 1;
        Ok(Packet {
            number: self.packets,
            offset: self.offset,
            ts_ns: 0,
            linktype: iface.linktype,
            interface: 0,
            orig_len: orig,
            data: &body[4..4 + cap],
            options: Options::default(),
        })
    }
}
