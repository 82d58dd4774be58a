//! Field access by precomputed offsets. The trace's own catalog says where each
//! field sits; looking names up once per kind keeps the per-event cost to a
//! bounds check and a load.

use std::net::IpAddr;

use magnet_trace::{event::addr, Catalog, FieldType};

/// The fields the analyses read (some only through the catalog check).
#[derive(Clone, Copy, Debug)]
#[repr(usize)]
#[allow(dead_code)]
pub enum F {
    Cookie,
    Ret,
    Protocol,
    Family,
    Sport,
    Dport,
    Saddr,
    Daddr,
    Netns,
    PktId,
    Ifindex,
    SockType,
    Len,
    Seq,
    Arg,
    TotLen,
    TcpFlags,
    Newstate,
    Count,
    LostCpu,
    Comm,
    // TCP snapshot
    State,
    SndWnd,
    SrttUs,
    PacketsOut,
    RetransOut,
    SndSsthresh,
    SndCwnd,
    RcvWnd,
    WriteSeq,
    CopiedSeq,
    SndUna,
    SndNxt,
    WmemQueued,
    MssCache,
    // sched
    PrevTid,
    PrevTgid,
    NextTid,
    NextTgid,
    PrevState,
    NextComm,
    TaskTid,
    TaskTgid,
    RcvNxt,
    Ack,
}

const NAMES: &[&str] = &[
    "cookie",
    "ret",
    "protocol",
    "family",
    "sport",
    "dport",
    "saddr",
    "daddr",
    "netns",
    "pkt_id",
    "ifindex",
    "type",
    "len",
    "seq",
    "arg",
    "tot_len",
    "tcp_flags",
    "newstate",
    "count",
    "lost_cpu",
    "comm",
    "state",
    "snd_wnd",
    "srtt_us",
    "packets_out",
    "retrans_out",
    "snd_ssthresh",
    "snd_cwnd",
    "rcv_wnd",
    "write_seq",
    "copied_seq",
    "snd_una",
    "snd_nxt",
    "wmem_queued",
    "mss_cache",
    "prev_tid",
    "prev_tgid",
    "next_tid",
    "next_tgid",
    "prev_state",
    "next_comm",
    "task_tid",
    "task_tgid",
    "rcv_nxt",
    "ack",
];

type Slot = Option<(u32, FieldType)>;

/// Offsets of the fields of every kind, indexed by kind number.
pub struct Layouts {
    by_kind: Vec<Vec<Slot>>,
}

impl Layouts {
    pub fn new(catalog: &Catalog) -> Layouts {
        let max = catalog
            .kinds
            .iter()
            .map(|k| k.id as usize)
            .max()
            .unwrap_or(0);
        let mut by_kind = vec![vec![None; NAMES.len()]; max + 1];
        for k in &catalog.kinds {
            for (i, name) in NAMES.iter().enumerate() {
                by_kind[k.id as usize][i] = k.field(name).map(|f| (f.offset, f.ty));
            }
        }
        Layouts { by_kind }
    }

    /// A view of one record.
    pub fn view<'a>(&'a self, kind: u16, bytes: &'a [u8]) -> View<'a> {
        static EMPTY: [Slot; 0] = [];
        let slots = self
            .by_kind
            .get(kind as usize)
            .map(|v| v.as_slice())
            .unwrap_or(&EMPTY);
        View { slots, bytes }
    }
}

#[derive(Clone, Copy)]
pub struct View<'a> {
    slots: &'a [Slot],
    bytes: &'a [u8],
}

impl View<'_> {
    fn slot(&self, f: F) -> Option<(usize, FieldType)> {
        let (off, ty) = (*self.slots.get(f as usize)?)?;
        let off = off as usize;
        if off + ty.size() as usize > self.bytes.len() {
            return None;
        }
        Some((off, ty))
    }

    /// An integer field (signed ones sign-extended into the u64).
    pub fn u(&self, f: F) -> Option<u64> {
        let (o, ty) = self.slot(f)?;
        let b = self.bytes;
        Some(match ty {
            FieldType::U8 | FieldType::TcpState => b[o] as u64,
            FieldType::U16 => u16::from_le_bytes([b[o], b[o + 1]]) as u64,
            FieldType::U32 => u32::from_le_bytes(b[o..o + 4].try_into().ok()?) as u64,
            FieldType::I32 => i32::from_le_bytes(b[o..o + 4].try_into().ok()?) as i64 as u64,
            FieldType::U64 | FieldType::I64 | FieldType::Hex64 => {
                u64::from_le_bytes(b[o..o + 8].try_into().ok()?)
            }
            FieldType::Addr | FieldType::Comm => return None,
        })
    }

    pub fn i(&self, f: F) -> Option<i64> {
        self.u(f).map(|v| v as i64)
    }

    pub fn u32(&self, f: F) -> Option<u32> {
        self.u(f).map(|v| v as u32)
    }

    pub fn addr(&self, f: F) -> Option<IpAddr> {
        let (o, ty) = self.slot(f)?;
        (ty == FieldType::Addr).then(|| addr(&self.bytes[o..o + 16]))
    }

    pub fn comm(&self, f: F) -> Option<String> {
        let (o, ty) = self.slot(f)?;
        if ty != FieldType::Comm {
            return None;
        }
        let raw = &self.bytes[o..o + 16];
        let n = raw.iter().position(|&b| b == 0).unwrap_or(16);
        Some(String::from_utf8_lossy(&raw[..n]).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_in_the_builtin_catalog() {
        let c = Catalog::builtin();
        for n in NAMES {
            assert!(c.kinds.iter().any(|k| k.field(n).is_some()), "{n}");
        }
        assert_eq!(NAMES.len(), F::Ack as usize + 1);
    }
}
