//! NFS version 4.0, 4.1 and 4.2 (RFC 7530, 8881, 7862): COMPOUND requests and replies.
//! Every operation's name and status; key arguments of the file operations.

use serde::Serialize;

use crate::xdr::{hex, XResult, Xdr};
use crate::Fh;

mod args;
mod names;
mod res;

use args::{op_args, MAX_OPS};
pub use names::{op_name, status_name};
use res::op_res;

/// One operation of a COMPOUND request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OpArgs {
    pub op: u32,
    pub name: &'static str,
    /// PUTFH handle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fh: Option<Fh>,
    /// LOOKUP / OPEN / CREATE / REMOVE / LINK / SECINFO component; RENAME old name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// RENAME new name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub component2: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// OPEN: 1 create.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create: Option<bool>,
}

/// A COMPOUND request. `numops` is what the client said; `ops` may be shorter when an
/// operation could not be decoded (then `complete` is false).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Compound {
    pub tag: String,
    pub minorversion: u32,
    pub numops: u32,
    pub ops: Vec<OpArgs>,
    pub complete: bool,
}

/// One operation result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OpRes {
    pub op: u32,
    pub name: &'static str,
    pub status: u32,
    pub status_name: &'static str,
    /// GETFH handle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fh: Option<Fh>,
    /// READ bytes returned, WRITE bytes written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eof: Option<bool>,
    /// READDIR entry names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CompoundRes {
    pub status: u32,
    pub status_name: &'static str,
    pub tag: String,
    pub numops: u32,
    pub ops: Vec<OpRes>,
    pub complete: bool,
}

/// Decodes COMPOUND4args. Stops (with `complete = false`) at the first operation whose
/// arguments it cannot walk.
pub fn compound(x: &mut Xdr) -> XResult<Compound> {
    let tag = x.string(1024)?;
    let minorversion = x.u32()?;
    let numops = x.u32()?;
    let mut c = Compound {
        tag,
        minorversion,
        numops,
        ops: Vec::new(),
        complete: false,
    };
    for _ in 0..(numops as usize).min(MAX_OPS) {
        let Ok(op) = x.u32() else { return Ok(c) };
        match op_args(op, x) {
            Ok(a) => c.ops.push(a),
            Err(_) => {
                c.ops.push(OpArgs {
                    op,
                    name: op_name(op),
                    ..Default::default()
                });
                return Ok(c);
            }
        }
    }
    c.complete = c.ops.len() == numops as usize;
    Ok(c)
}

/// Decodes COMPOUND4res.
pub fn compound_res(x: &mut Xdr) -> XResult<CompoundRes> {
    let status = x.u32()?;
    let tag = x.string(1024)?;
    let numops = x.u32()?;
    let mut c = CompoundRes {
        status,
        status_name: status_name(status),
        tag,
        numops,
        ops: Vec::new(),
        complete: false,
    };
    for _ in 0..(numops as usize).min(MAX_OPS) {
        let Ok(op) = x.u32() else { return Ok(c) };
        match op_res(op, x) {
            Ok(r) => c.ops.push(r),
            Err(_) => return Ok(c),
        }
    }
    c.complete = c.ops.len() == numops as usize;
    Ok(c)
}

pub fn fmt_args(c: &Compound) -> String {
    let mut s = String::from("{");
    for (i, o) in c.ops.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(o.name);
        if let Some(f) = &o.fh {
            s.push_str(&format!(" \"{}\"", hex(&f.0)));
        }
        if let Some(n) = &o.component {
            s.push_str(&format!(" {n:?}"));
        }
        if let Some(n) = &o.component2 {
            s.push_str(&format!(" {n:?}"));
        }
        if matches!(o.op, 25 | 38 | 68) {
            s.push_str(&format!(
                " {} {}",
                o.offset.unwrap_or(0),
                o.count.unwrap_or(0)
            ));
        }
    }
    if !c.complete {
        s.push_str(", …");
    }
    s.push('}');
    s
}

pub fn fmt_res(c: &CompoundRes) -> String {
    let mut s = c.status_name.to_string();
    for o in &c.ops {
        s.push_str(", ");
        s.push_str(o.name);
        if o.status != 0 {
            s.push(' ');
            s.push_str(o.status_name);
        }
        if let Some(n) = o.count {
            s.push_str(&format!(" {n}"));
        }
        if o.eof == Some(true) {
            s.push_str(" eof");
        }
        if let Some(f) = &o.fh {
            s.push_str(&format!(" \"{}\"", hex(&f.0)));
        }
    }
    s
}
