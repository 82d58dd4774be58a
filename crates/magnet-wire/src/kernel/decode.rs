//! A record's fields, and a frame's first bytes, as the model's fields.

use std::net::IpAddr;

use magnet_trace::catalog::{kind, FieldDesc, KindDesc};
use magnet_trace::event::decode_field;
use magnet_trace::{Header, RecordRef, Value};

use super::IpFields;

/// Field positions of one kind, looked up once.
#[derive(Default, Clone)]
pub(super) struct Fields {
    cookie: Option<FieldDesc>,
    pkt_id: Option<FieldDesc>,
    ifindex: Option<FieldDesc>,
    len: Option<FieldDesc>,
    ethertype: Option<FieldDesc>,
    link_type: Option<FieldDesc>,
    reason: Option<FieldDesc>,
    ret: Option<FieldDesc>,
    comm: Option<FieldDesc>,
    count: Option<FieldDesc>,
    ip: Vec<Option<FieldDesc>>,
    func: Option<FuncFields>,
}

/// Field positions of a function kind.
#[derive(Clone)]
struct FuncFields {
    exit: bool,
    func: Option<FieldDesc>,
    caller: Option<FieldDesc>,
    skb: Option<FieldDesc>,
    parent: Option<FieldDesc>,
}

const IP_FIELDS: [&str; 14] = [
    "version",
    "tos",
    "ttl",
    "protocol",
    "tot_len",
    "ip_id",
    "frag_off",
    "saddr",
    "daddr",
    "sport",
    "dport",
    "tcp_flags",
    "seq",
    "ack",
];

/// What one record says, read with its kind's field positions: 0 or `None` for
/// a field the kind does not have.
pub(super) struct RecordFields {
    pub(super) cookie: u64,
    pub(super) pkt_id: u64,
    pub(super) ifindex: u32,
    /// `len`, else the IP total length.
    pub(super) len: u32,
    /// `None` when 0.
    pub(super) ethertype: Option<u64>,
    /// The device's ARPHRD type (dev records; 0: not recorded).
    pub(super) link_type: u16,
    pub(super) reason: u64,
    pub(super) count: u64,
    pub(super) ret: i64,
    /// The process name, read only for an application call on a socket (the
    /// one record that names a socket's owner).
    pub(super) comm: Option<String>,
    pub(super) ip: Option<IpFields>,
    pub(super) func: Option<FuncEvent>,
}

/// A function entry or return (`record --funcs`).
pub(super) struct FuncEvent {
    pub(super) exit: bool,
    pub(super) func: u64,
    pub(super) caller: Option<u64>,
    /// The skb, and the one it was cloned from (0: none).
    pub(super) skb: u64,
    pub(super) parent: u64,
}

impl Fields {
    /// The positions of the fields the model reads in kind `d`.
    pub(super) fn of(d: &KindDesc) -> Fields {
        let f = |n: &str| d.field(n).cloned();
        Fields {
            cookie: f("cookie"),
            pkt_id: f("pkt_id"),
            ifindex: f("ifindex"),
            len: f("len").or_else(|| f("tot_len")),
            ethertype: f("ethertype"),
            link_type: f("link_type"),
            reason: f("reason"),
            ret: f("ret"),
            comm: f("comm"),
            count: f("count"),
            ip: if d.layer == "ip" {
                IP_FIELDS.iter().map(|n| f(n)).collect()
            } else {
                Vec::new()
            },
            func: if d.layer == "func" || d.name == "func_exit" {
                Some(FuncFields {
                    exit: d.name == "func_exit",
                    func: f("func"),
                    caller: f("caller"),
                    skb: f("skb"),
                    parent: f("parent"),
                })
            } else {
                None
            },
        }
    }

    /// Reads record `r`, one of this kind.
    pub(super) fn read(&self, r: &RecordRef<'_>) -> RecordFields {
        let b = r.bytes;
        let cookie = num(b, &self.cookie).unwrap_or(0);
        let is_call = matches!(r.kind(), kind::APP_SEND | kind::APP_RECV);
        let comm = match self.comm.as_ref().filter(|_| is_call && cookie != 0) {
            Some(d) => match decode_field(b, d) {
                Some(Value::Str(comm)) => Some(comm),
                _ => None,
            },
            None => None,
        };
        RecordFields {
            cookie,
            pkt_id: num(b, &self.pkt_id).unwrap_or(0),
            ifindex: num(b, &self.ifindex).unwrap_or(0) as u32,
            len: num(b, &self.len).unwrap_or(0) as u32,
            ethertype: num(b, &self.ethertype).filter(|&e| e != 0),
            link_type: num(b, &self.link_type).unwrap_or(0) as u16,
            reason: num(b, &self.reason).unwrap_or(0),
            count: num(b, &self.count).unwrap_or(0),
            ret: self
                .ret
                .as_ref()
                .and_then(|d| decode_field(b, d))
                .and_then(|v| v.as_i64())
                .unwrap_or(0),
            comm,
            ip: if self.ip.is_empty() {
                None
            } else {
                ip_fields(b, &self.ip)
            },
            func: self.func.as_ref().map(|ff| FuncEvent {
                exit: ff.exit,
                func: num(b, &ff.func).unwrap_or(0),
                caller: num(b, &ff.caller),
                skb: num(b, &ff.skb).unwrap_or(0),
                parent: num(b, &ff.parent).unwrap_or(0),
            }),
        }
    }
}

/// Field positions of the FRAME record (`record --snaplen`): packet id,
/// ifindex, captured length and the device hop's kind, then the bytes after
/// the catalog's size.
pub(super) struct FrameFields {
    pkt_id: FieldDesc,
    ifindex: FieldDesc,
    caplen: FieldDesc,
    dev_kind: FieldDesc,
    /// Where the bytes start.
    pub(super) at: usize,
}

/// A FRAME record's fields.
pub(super) struct FrameRecord {
    pub(super) pkt_id: u64,
    pub(super) ifindex: u32,
    pub(super) caplen: usize,
    pub(super) dev_kind: u16,
}

impl FrameFields {
    /// The positions, when the trace's catalog has the FRAME kind.
    pub(super) fn of(header: &Header) -> Option<FrameFields> {
        let d = header.catalog.get(kind::FRAME)?;
        let f = |n: &str| d.field(n).cloned();
        Some(FrameFields {
            pkt_id: f("pkt_id")?,
            ifindex: f("ifindex")?,
            caplen: f("caplen")?,
            dev_kind: f("dev_kind")?,
            at: d.size as usize,
        })
    }

    pub(super) fn read(&self, b: &[u8]) -> FrameRecord {
        let n = |d: &FieldDesc| num_at(b, d).unwrap_or(0);
        FrameRecord {
            pkt_id: n(&self.pkt_id),
            ifindex: n(&self.ifindex) as u32,
            caplen: n(&self.caplen) as usize,
            dev_kind: n(&self.dev_kind) as u16,
        }
    }
}

/// The IP and transport header fields of an Ethernet frame, when its bytes hold
/// the IP header and the transport ports (TCP: through the flags).
pub fn ip_of_frame(f: &[u8]) -> Option<IpFields> {
    let be16 = |b: &[u8], at: usize| Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?));
    let be32 = |b: &[u8], at: usize| Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?));
    let mut et = be16(f, 12)?;
    let mut l3 = 14;
    if et == 0x8100 {
        et = be16(f, 16)?;
        l3 = 18;
    }
    let ip = f.get(l3..)?;
    let (mut fields, l4) = match et {
        0x0800 if ip.first()? >> 4 == 4 => {
            let ihl = ((ip[0] & 0x0f) as usize) * 4;
            let a = |at: usize| -> Option<IpAddr> {
                let o: [u8; 4] = ip.get(at..at + 4)?.try_into().ok()?;
                Some(IpAddr::from(o))
            };
            (
                IpFields {
                    version: 4,
                    tos: *ip.get(1)?,
                    ttl: *ip.get(8)?,
                    protocol: *ip.get(9)?,
                    tot_len: be16(ip, 2)? as u32,
                    ip_id: be16(ip, 4)?,
                    frag_off: be16(ip, 6)?,
                    saddr: a(12)?,
                    daddr: a(16)?,
                    sport: 0,
                    dport: 0,
                    tcp_flags: 0,
                    seq: 0,
                    ack: 0,
                },
                ihl,
            )
        }
        0x86dd if ip.first()? >> 4 == 6 => {
            let a = |at: usize| -> Option<IpAddr> {
                let o: [u8; 16] = ip.get(at..at + 16)?.try_into().ok()?;
                Some(IpAddr::from(o))
            };
            (
                IpFields {
                    version: 6,
                    tos: ((be16(ip, 0)? >> 4) & 0xff) as u8,
                    ttl: *ip.get(7)?,
                    protocol: *ip.get(6)?,
                    tot_len: be16(ip, 4)? as u32 + 40,
                    ip_id: 0,
                    frag_off: 0,
                    saddr: a(8)?,
                    daddr: a(24)?,
                    sport: 0,
                    dport: 0,
                    tcp_flags: 0,
                    seq: 0,
                    ack: 0,
                },
                40,
            )
        }
        _ => return None,
    };
    // Later IPv4 fragments carry no transport header.
    if fields.frag_off & 0x1fff == 0 {
        let t = ip.get(l4..)?;
        match fields.protocol {
            6 => {
                fields.sport = be16(t, 0)?;
                fields.dport = be16(t, 2)?;
                fields.seq = be32(t, 4)?;
                fields.ack = be32(t, 8)?;
                fields.tcp_flags = *t.get(13)?;
            }
            17 => {
                fields.sport = be16(t, 0)?;
                fields.dport = be16(t, 2)?;
            }
            _ => {}
        }
    }
    Some(fields)
}

/// The `netns` field of a SOCK record.
pub(super) fn d_netns(h: &Header, b: &[u8]) -> Option<u64> {
    let d = h.catalog.get(kind::SOCK)?.field("netns")?;
    decode_field(b, d)?.as_u64().filter(|&n| n != 0)
}

pub(super) fn num(bytes: &[u8], f: &Option<FieldDesc>) -> Option<u64> {
    num_at(bytes, f.as_ref()?)
}

fn num_at(bytes: &[u8], f: &FieldDesc) -> Option<u64> {
    decode_field(bytes, f)?.as_u64()
}

fn ip_fields(b: &[u8], f: &[Option<FieldDesc>]) -> Option<IpFields> {
    let n = |i: usize| num(b, &f[i]);
    let a = |i: usize| match f[i].as_ref().and_then(|d| decode_field(b, d)) {
        Some(Value::Addr(a)) => Some(a),
        _ => None,
    };
    Some(IpFields {
        version: n(0)? as u8,
        tos: n(1)? as u8,
        ttl: n(2)? as u8,
        protocol: n(3)? as u8,
        tot_len: n(4)? as u32,
        ip_id: n(5)? as u16,
        frag_off: n(6)? as u16,
        saddr: a(7)?,
        daddr: a(8)?,
        sport: n(9)? as u16,
        dport: n(10)? as u16,
        tcp_flags: n(11)? as u8,
        seq: n(12)? as u32,
        ack: n(13)? as u32,
    })
}
