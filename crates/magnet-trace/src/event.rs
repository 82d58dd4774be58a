//! Typed access to a record's fields through the catalog, and their display.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::Serialize;

use crate::block::{u16_at, u32_at, u64_at};
use crate::catalog::{tcp_state_name, Catalog, FieldDesc, FieldType, KindDesc};

/// A decoded field value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Value {
    U(u64),
    I(i64),
    Str(String),
    Addr(IpAddr),
    #[serde(serialize_with = "hex")]
    Hex(u64),
    #[serde(serialize_with = "state")]
    TcpState(u8),
}

fn hex<S: serde::Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v:#x}"))
}

fn state<S: serde::Serializer>(v: &u8, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(tcp_state_name(*v))
}

impl Value {
    /// The value as an unsigned integer, where that makes sense.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U(v) | Value::Hex(v) => Some(v),
            Value::I(v) => u64::try_from(v).ok(),
            Value::TcpState(v) => Some(v as u64),
            _ => None,
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::U(v) | Value::Hex(v) => i64::try_from(v).ok(),
            Value::I(v) => Some(v),
            Value::TcpState(v) => Some(v as i64),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::U(v) => write!(f, "{v}"),
            Value::I(v) => write!(f, "{v}"),
            Value::Str(s) if s.is_empty() => f.write_str("-"),
            // Names from the trace (comm): escaped for the terminal.
            Value::Str(s) => f.write_str(&magnet_common::text::escape(s)),
            Value::Addr(a) => write!(f, "{a}"),
            Value::Hex(v) => write!(f, "{v:#x}"),
            Value::TcpState(s) => f.write_str(tcp_state_name(*s)),
        }
    }
}

/// Decodes one field; `None` when the record is too short to hold it.
pub fn decode_field(bytes: &[u8], f: &FieldDesc) -> Option<Value> {
    let at = f.offset as usize;
    let end = at.checked_add(f.ty.size() as usize)?;
    if end > bytes.len() {
        return None;
    }
    Some(match f.ty {
        FieldType::U8 => Value::U(bytes[at] as u64),
        FieldType::TcpState => Value::TcpState(bytes[at]),
        FieldType::U16 => Value::U(u16_at(bytes, at) as u64),
        FieldType::U32 => Value::U(u32_at(bytes, at) as u64),
        FieldType::U64 => Value::U(u64_at(bytes, at)),
        FieldType::Hex64 => Value::Hex(u64_at(bytes, at)),
        FieldType::I32 => Value::I(u32_at(bytes, at) as i32 as i64),
        FieldType::I64 => Value::I(u64_at(bytes, at) as i64),
        FieldType::Addr => Value::Addr(addr(&bytes[at..end])),
        FieldType::Comm => {
            let raw = &bytes[at..end];
            let n = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            Value::Str(String::from_utf8_lossy(&raw[..n]).into_owned())
        }
    })
}

/// A 16-byte address: IPv4-mapped addresses become IPv4.
pub fn addr(b: &[u8]) -> IpAddr {
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[..16]);
    let v6 = Ipv6Addr::from(a);
    match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None if a == [0; 16] => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        None => IpAddr::V6(v6),
    }
}

/// Catalog lookups by kind number without searching.
pub struct KindIndex<'c> {
    by_id: Vec<Option<&'c KindDesc>>,
}

impl<'c> KindIndex<'c> {
    pub fn new(catalog: &'c Catalog) -> Self {
        let max = catalog
            .kinds
            .iter()
            .map(|k| k.id as usize)
            .max()
            .unwrap_or(0);
        let mut by_id = vec![None; max + 1];
        for k in &catalog.kinds {
            by_id[k.id as usize] = Some(k);
        }
        KindIndex { by_id }
    }

    pub fn get(&self, id: u16) -> Option<&'c KindDesc> {
        self.by_id.get(id as usize).copied().flatten()
    }
}

/// A record viewed through its catalog entry.
#[derive(Clone, Copy)]
pub struct Event<'a> {
    pub bytes: &'a [u8],
    pub desc: &'a KindDesc,
}

impl<'a> Event<'a> {
    pub fn get(&self, name: &str) -> Option<Value> {
        decode_field(self.bytes, self.desc.field(name)?)
    }
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.get(name)?.as_u64()
    }
    pub fn i64(&self, name: &str) -> Option<i64> {
        self.get(name)?.as_i64()
    }
    /// The fields present in this record with their catalog entries, in order.
    pub fn described_fields(&self) -> impl Iterator<Item = (&'a FieldDesc, Value)> + 'a {
        let bytes = self.bytes;
        self.desc
            .fields
            .iter()
            .filter_map(move |f| decode_field(bytes, f).map(|v| (f, v)))
    }

    /// The fields present in this record, in order.
    pub fn fields(&self) -> impl Iterator<Item = (&'a str, Value)> + 'a {
        let bytes = self.bytes;
        self.desc
            .fields
            .iter()
            .filter_map(move |f| decode_field(bytes, f).map(|v| (f.name.as_str(), v)))
    }
}
