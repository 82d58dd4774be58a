//! The event catalog: for every kind of record, its name, layer, the kernel hook
//! that produced it and where each field sits. A trace carries the catalog it was
//! written with in its header, so readers decode any trace by what the trace says
//! about itself, not by what this build of magnet believes.
//!
//! `Catalog::builtin()` is generated from `bpf/include/magnet/events.h` (see
//! [`crate::events`]); `tests/events_h.rs` checks it against what clang makes of it.

use serde::{Deserialize, Serialize};

/// How a field's bytes are interpreted. All integers are little-endian (the trace
/// header records the byte order; only little-endian hosts are supported).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldType {
    U8,
    U16,
    U32,
    U64,
    I32,
    I64,
    /// 16 bytes: an IPv6 address, IPv4 as IPv4-mapped (::ffff:a.b.c.d).
    Addr,
    /// 16 bytes: a NUL-padded task name.
    Comm,
    /// A u8 TCP state (`TCP_ESTABLISHED` …), printed by name.
    TcpState,
    /// A u64 printed in hex (kernel addresses, packet ids).
    Hex64,
}

impl FieldType {
    pub fn size(self) -> u32 {
        match self {
            FieldType::U8 | FieldType::TcpState => 1,
            FieldType::U16 => 2,
            FieldType::U32 | FieldType::I32 => 4,
            FieldType::U64 | FieldType::I64 | FieldType::Hex64 => 8,
            FieldType::Addr | FieldType::Comm => 16,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldDesc {
    pub name: String,
    pub offset: u32,
    #[serde(rename = "type")]
    pub ty: FieldType,
    /// For numbers that are a kernel enum: the table in `Header::enums` that
    /// names its values (e.g. `skb_drop_reason`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindDesc {
    pub id: u16,
    pub name: String,
    pub layer: String,
    /// The kernel hook that feeds this kind, as `type/name` (e.g. `tp_btf/tcp_probe`).
    pub hook: String,
    /// Size of the record without optional parts.
    pub size: u32,
    /// Fields after the common header. A field is present in a record when the
    /// record is long enough to hold it (optional parts come last).
    pub fields: Vec<FieldDesc>,
}

impl KindDesc {
    pub fn field(&self, name: &str) -> Option<&FieldDesc> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Size of the common header at the start of every record (`struct mg_hdr`).
pub use crate::events::HEADER_LEN;

/// Record kinds (numbers are part of the format; generated from events.h).
pub use crate::events::kind;

/// Size of a `frame` record before its bytes.
pub const FRAME_LEN: usize = crate::events::Frame::<&[u8]>::LEN;

/// Flag in the common header: a TCP snapshot follows the body.
pub use crate::events::FLAG_TCP_STATE;

/// The layers a recording can select, in stack order, with what each one means.
pub const LAYERS: &[(&str, &str)] = &[
    ("app", "every send and recv on an IPv4/IPv6 socket"),
    (
        "tcp",
        "TCP state changes, received segments, data queued, retransmits, resets",
    ),
    (
        "ip",
        "packets at the netfilter hooks LOCAL_OUT, POST_ROUTING, PRE_ROUTING, LOCAL_IN",
    ),
    ("qdisc", "queueing discipline enqueue and dequeue"),
    (
        "dev",
        "queued to device, handed to driver, transmit done, received from driver",
    ),
    ("drop", "skbs freed as dropped, with the drop reason"),
    (
        "sched",
        "context switches, wake-ups, fork and exit of traced tasks",
    ),
];

/// The header fields every record starts with (not repeated in `KindDesc::fields`).
pub fn header_fields() -> Vec<FieldDesc> {
    crate::events::header_fields()
}

/// Size of the TCP snapshot appended with --tcp-state.
pub const TCP_SNAP_LEN: u32 = crate::events::TcpSnap::<&[u8]>::SIZE as u32;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Catalog {
    pub header: Vec<FieldDesc>,
    pub kinds: Vec<KindDesc>,
}

impl Catalog {
    pub fn get(&self, id: u16) -> Option<&KindDesc> {
        self.kinds.iter().find(|k| k.id == id)
    }

    pub fn by_name(&self, name: &str) -> Option<&KindDesc> {
        self.kinds.iter().find(|k| k.name == name)
    }

    /// The catalog of this build of magnet: what events.h defines.
    pub fn builtin() -> Catalog {
        Catalog {
            header: header_fields(),
            kinds: crate::events::kinds(),
        }
    }

    /// The catalog format `version` defines: this build's for the current
    /// version, the saved `catalogs/vN.json` for an older one. A reader falls
    /// back to it when a trace's own header cannot be trusted.
    pub fn of_version(version: u16) -> Catalog {
        let saved = match version {
            1 => include_str!("../catalogs/v1.json"),
            _ => return Catalog::builtin(),
        };
        serde_json::from_str(saved).expect("catalogs/v1.json is a catalog")
    }
}

/// Linux TCP state names, indexed by state number.
pub fn tcp_state_name(s: u8) -> &'static str {
    const NAMES: [&str; 13] = [
        "UNKNOWN",
        "ESTABLISHED",
        "SYN_SENT",
        "SYN_RECV",
        "FIN_WAIT1",
        "FIN_WAIT2",
        "TIME_WAIT",
        "CLOSE",
        "CLOSE_WAIT",
        "LAST_ACK",
        "LISTEN",
        "CLOSING",
        "NEW_SYN_RECV",
    ];
    NAMES.get(s as usize).copied().unwrap_or("UNKNOWN")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_the_c_structs() {
        let c = Catalog::builtin();
        for k in &c.kinds {
            let end = k
                .fields
                .iter()
                .map(|f| f.offset + f.ty.size())
                .max()
                .unwrap();
            let has_snap = k.fields.iter().any(|f| f.name == "mss_cache");
            let expect = if has_snap {
                k.size + TCP_SNAP_LEN
            } else {
                k.size
            };
            // Trailing padding is allowed (up to 8-byte alignment), overlap is not.
            assert!(
                end <= expect && expect - end < 8,
                "{}: fields end at {end}, size {expect}",
                k.name
            );
            let mut last = HEADER_LEN as u32;
            for f in &k.fields {
                assert!(f.offset >= last, "{}.{} overlaps", k.name, f.name);
                last = f.offset + f.ty.size();
            }
        }
    }

    #[test]
    fn ids_and_names_are_unique() {
        let c = Catalog::builtin();
        for (i, a) in c.kinds.iter().enumerate() {
            for b in &c.kinds[i + 1..] {
                assert_ne!(a.id, b.id);
                assert_ne!(a.name, b.name);
            }
            assert!(a.id < kind::MAX);
        }
    }
}
