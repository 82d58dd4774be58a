//! NFS version 4.0, 4.1 and 4.2 (RFC 7530, 8881, 7862): COMPOUND requests and replies.
//! Every operation's name and status; key arguments of the file operations.

use serde::Serialize;

use crate::xdr::{hex, XResult, Xdr, XdrError};
use crate::Fh;

pub fn op_name(op: u32) -> &'static str {
    const N: [&str; 72] = [
        "op0",
        "op1",
        "op2",
        "access",
        "close",
        "commit",
        "create",
        "delegpurge",
        "delegreturn",
        "getattr",
        "getfh",
        "link",
        "lock",
        "lockt",
        "locku",
        "lookup",
        "lookupp",
        "nverify",
        "open",
        "openattr",
        "open_confirm",
        "open_downgrade",
        "putfh",
        "putpubfh",
        "putrootfh",
        "read",
        "readdir",
        "readlink",
        "remove",
        "rename",
        "renew",
        "restorefh",
        "savefh",
        "secinfo",
        "setattr",
        "setclientid",
        "setclientid_confirm",
        "verify",
        "write",
        "release_lockowner",
        "backchannel_ctl",
        "bind_conn_to_session",
        "exchange_id",
        "create_session",
        "destroy_session",
        "free_stateid",
        "get_dir_delegation",
        "getdeviceinfo",
        "getdevicelist",
        "layoutcommit",
        "layoutget",
        "layoutreturn",
        "secinfo_no_name",
        "sequence",
        "set_ssv",
        "test_stateid",
        "want_delegation",
        "destroy_clientid",
        "reclaim_complete",
        "allocate",
        "copy",
        "copy_notify",
        "deallocate",
        "io_advise",
        "layouterror",
        "layoutstats",
        "offload_cancel",
        "offload_status",
        "read_plus",
        "seek",
        "write_same",
        "clone",
    ];
    match op {
        10044 => "illegal",
        _ => N.get(op as usize).copied().unwrap_or("unknown"),
    }
}

pub fn status_name(s: u32) -> &'static str {
    match s {
        0 => "ok",
        1 => "perm",
        2 => "noent",
        5 => "io",
        6 => "nxio",
        13 => "access",
        17 => "exist",
        18 => "xdev",
        20 => "notdir",
        21 => "isdir",
        22 => "inval",
        27 => "fbig",
        28 => "nospc",
        30 => "rofs",
        31 => "mlink",
        63 => "nametoolong",
        66 => "notempty",
        69 => "dquot",
        70 => "stale",
        10001 => "badhandle",
        10003 => "bad_cookie",
        10004 => "notsupp",
        10005 => "toosmall",
        10006 => "serverfault",
        10007 => "badtype",
        10008 => "delay",
        10009 => "same",
        10010 => "denied",
        10011 => "expired",
        10012 => "locked",
        10013 => "grace",
        10014 => "fhexpired",
        10015 => "share_denied",
        10016 => "wrongsec",
        10017 => "clid_inuse",
        10018 => "resource",
        10019 => "moved",
        10020 => "nofilehandle",
        10021 => "minor_vers_mismatch",
        10022 => "stale_clientid",
        10023 => "stale_stateid",
        10024 => "old_stateid",
        10025 => "bad_stateid",
        10026 => "bad_seqid",
        10027 => "not_same",
        10028 => "lock_range",
        10029 => "symlink",
        10030 => "restorefh",
        10031 => "lease_moved",
        10032 => "attrnotsupp",
        10033 => "no_grace",
        10034 => "reclaim_bad",
        10035 => "reclaim_conflict",
        10036 => "badxdr",
        10037 => "locks_held",
        10038 => "openmode",
        10039 => "badowner",
        10040 => "badchar",
        10041 => "badname",
        10042 => "bad_range",
        10043 => "lock_notsupp",
        10044 => "op_illegal",
        10045 => "deadlock",
        10046 => "file_open",
        10047 => "admin_revoked",
        10048 => "cb_path_down",
        10052 => "badsession",
        10053 => "badslot",
        10055 => "conn_not_bound_to_session",
        10063 => "seq_misordered",
        10065 => "retry_uncached_rep",
        10071 => "op_not_in_session",
        10077 => "sequence_pos",
        10078 => "req_too_big",
        10079 => "rep_too_big",
        10081 => "too_many_ops",
        10085 => "clientid_busy",
        10088 => "seq_false_retry",
        _ => "unknown",
    }
}

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

const MAX_OPS: usize = 1024;

fn stateid(x: &mut Xdr) -> XResult<()> {
    x.skip(16)
}
fn bitmap(x: &mut Xdr) -> XResult<()> {
    let n = x.count(4)?;
    x.skip(4 * n)
}
fn fattr(x: &mut Xdr) -> XResult<()> {
    bitmap(x)?;
    x.skip_opaque().map(|_| ())
}
fn lock_owner(x: &mut Xdr) -> XResult<()> {
    x.u64()?;
    x.skip_opaque().map(|_| ())
}
fn component(x: &mut Xdr) -> XResult<String> {
    x.string(4096)
}
fn fh4(x: &mut Xdr) -> XResult<Fh> {
    Ok(Fh(x.opaque(128)?.to_vec()))
}
fn unsupported(x: &Xdr) -> XdrError {
    XdrError {
        at: x.pos(),
        reason: "operation not decoded",
    }
}
fn channel_attrs(x: &mut Xdr) -> XResult<()> {
    x.skip(24)?;
    let n = x.count(4)?;
    x.skip(4 * n)
}
fn cb_sec_parms(x: &mut Xdr) -> XResult<()> {
    let n = x.count(4)?;
    for _ in 0..n {
        match x.u32()? {
            0 => {}
            1 => {
                x.u32()?;
                x.skip_opaque()?;
                x.skip(8)?;
                let g = x.count(4)?;
                x.skip(4 * g)?;
            }
            6 => {
                x.u32()?;
                x.skip_opaque()?;
                x.skip_opaque()?;
            }
            _ => return Err(unsupported(x)),
        }
    }
    Ok(())
}

fn op_args(op: u32, x: &mut Xdr) -> XResult<OpArgs> {
    let mut a = OpArgs {
        op,
        name: op_name(op),
        ..Default::default()
    };
    match op {
        3 => x.skip(4)?,
        4 => x.skip(20)?,
        5 => {
            a.offset = Some(x.u64()?);
            a.count = Some(x.u32()? as u64);
        }
        6 => {
            let t = x.u32()?;
            match t {
                5 => {
                    x.skip_opaque()?;
                }
                3 | 4 => x.skip(8)?,
                _ => {}
            }
            a.component = Some(component(x)?);
            fattr(x)?;
        }
        7 | 30 | 57 => x.skip(8)?,
        8 | 45 | 66 | 67 => stateid(x)?,
        9 => bitmap(x)?,
        10 | 16 | 23 | 24 | 27 | 31 | 32 => {}
        11 | 15 | 28 | 33 => a.component = Some(component(x)?),
        12 => {
            x.skip(8)?; // locktype, reclaim
            a.offset = Some(x.u64()?);
            a.count = Some(x.u64()?);
            if x.bool()? {
                x.u32()?;
                stateid(x)?;
                x.u32()?;
                lock_owner(x)?;
            } else {
                stateid(x)?;
                x.u32()?;
            }
        }
        13 => {
            x.u32()?;
            a.offset = Some(x.u64()?);
            a.count = Some(x.u64()?);
            lock_owner(x)?;
        }
        14 => {
            x.skip(8)?;
            stateid(x)?;
            a.offset = Some(x.u64()?);
            a.count = Some(x.u64()?);
        }
        17 | 37 => fattr(x)?,
        18 => {
            x.skip(12)?; // seqid, share_access, share_deny
            lock_owner(x)?;
            if x.u32()? == 1 {
                a.create = Some(true);
                match x.u32()? {
                    0 | 1 => fattr(x)?,
                    2 => x.skip(8)?,
                    3 => {
                        x.skip(8)?;
                        fattr(x)?;
                    }
                    _ => return Err(unsupported(x)),
                }
            } else {
                a.create = Some(false);
            }
            match x.u32()? {
                0 | 3 => a.component = Some(component(x)?),
                1 => x.skip(4)?,
                2 => {
                    stateid(x)?;
                    a.component = Some(component(x)?);
                }
                4 | 6 => {}
                5 => stateid(x)?,
                _ => return Err(unsupported(x)),
            }
        }
        19 => x.skip(4)?,
        20 => x.skip(20)?,
        21 => x.skip(28)?,
        22 => a.fh = Some(fh4(x)?),
        25 | 68 => {
            stateid(x)?;
            a.offset = Some(x.u64()?);
            a.count = Some(x.u32()? as u64);
        }
        26 => {
            a.offset = Some(x.u64()?); // cookie
            x.skip(8)?;
            a.count = Some(x.u32()? as u64);
            x.u32()?;
            bitmap(x)?;
        }
        29 => {
            a.component = Some(component(x)?);
            a.component2 = Some(component(x)?);
        }
        34 => {
            stateid(x)?;
            fattr(x)?;
        }
        35 => {
            x.skip(8)?;
            x.skip_opaque()?;
            x.u32()?;
            x.skip_opaque()?;
            x.skip_opaque()?;
            x.u32()?;
        }
        36 => x.skip(16)?,
        38 => {
            stateid(x)?;
            a.offset = Some(x.u64()?);
            x.u32()?;
            a.count = Some(x.skip_opaque()? as u64);
        }
        39 => lock_owner(x)?,
        40 => {
            x.u32()?;
            cb_sec_parms(x)?;
        }
        41 => x.skip(24)?,
        42 => {
            x.skip(8)?;
            x.skip_opaque()?;
            x.u32()?;
            match x.u32()? {
                0 => {}
                1 => {
                    bitmap(x)?;
                    bitmap(x)?;
                }
                _ => return Err(unsupported(x)),
            }
            let n = x.count(4)?;
            for _ in 0..n.min(1) {
                x.skip_opaque()?;
                x.skip_opaque()?;
                x.skip(12)?;
            }
        }
        43 => {
            x.skip(16)?;
            channel_attrs(x)?;
            channel_attrs(x)?;
            x.u32()?;
            cb_sec_parms(x)?;
        }
        44 => x.skip(16)?,
        47 => {
            x.skip(24)?;
            bitmap(x)?;
        }
        52 => x.skip(4)?,
        53 => x.skip(32)?,
        55 => {
            let n = x.count(16)?;
            x.skip(16 * n)?;
        }
        58 => x.skip(4)?,
        59 | 62 => {
            stateid(x)?;
            a.offset = Some(x.u64()?);
            a.count = Some(x.u64()?);
        }
        69 => {
            stateid(x)?;
            a.offset = Some(x.u64()?);
            x.u32()?;
        }
        71 => {
            stateid(x)?;
            stateid(x)?;
            a.offset = Some(x.u64()?);
            x.u64()?;
            a.count = Some(x.u64()?);
        }
        _ => return Err(unsupported(x)),
    }
    Ok(a)
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

fn change_info(x: &mut Xdr) -> XResult<()> {
    x.skip(20)
}
fn secinfo(x: &mut Xdr) -> XResult<()> {
    let n = x.count(4)?;
    for _ in 0..n {
        if x.u32()? == 6 {
            x.skip_opaque()?;
            x.skip(8)?;
        }
    }
    Ok(())
}
fn ace(x: &mut Xdr) -> XResult<()> {
    x.skip(12)?;
    x.skip_opaque().map(|_| ())
}

fn op_res(op: u32, x: &mut Xdr) -> XResult<OpRes> {
    let status = x.u32()?;
    let mut r = OpRes {
        op,
        name: op_name(op),
        status,
        status_name: status_name(status),
        ..Default::default()
    };
    if status != 0 {
        // A failed operation ends the COMPOUND; its error body (if any) is not needed,
        // except SETATTR's, which always carries a bitmap.
        if op == 34 {
            bitmap(x)?;
        }
        return Ok(r);
    }
    match op {
        3 => x.skip(8)?,
        4 | 14 | 20 | 21 => stateid(x)?,
        5 => x.skip(8)?,
        6 => {
            change_info(x)?;
            bitmap(x)?;
        }
        7 | 8 | 13 | 15 | 16 | 17 | 19 | 22 | 23 | 24 | 30 | 31 | 32 | 36 | 37 | 39 | 44 | 45
        | 57 | 58 | 59 | 62 | 66 | 71 => {}
        9 => fattr(x)?,
        10 => r.fh = Some(fh4(x)?),
        11 | 28 => change_info(x)?,
        12 => stateid(x)?,
        18 => {
            stateid(x)?;
            change_info(x)?;
            x.u32()?;
            bitmap(x)?;
            match x.u32()? {
                0 => {}
                1 => {
                    stateid(x)?;
                    x.u32()?;
                    ace(x)?;
                }
                2 => {
                    stateid(x)?;
                    x.u32()?;
                    if x.u32()? == 1 {
                        x.u64()?;
                    } else {
                        x.skip(8)?;
                    }
                    ace(x)?;
                }
                3 => {
                    let why = x.u32()?;
                    if why == 1 || why == 2 {
                        x.u32()?;
                    }
                }
                _ => return Err(unsupported(x)),
            }
        }
        25 => {
            r.eof = Some(x.bool()?);
            r.count = Some(x.skip_opaque()? as u64);
        }
        26 => {
            x.skip(8)?;
            while x.bool()? {
                x.u64()?;
                let name = component(x)?;
                fattr(x)?;
                if r.entries.len() < 100_000 {
                    r.entries.push(name);
                }
            }
            r.eof = Some(x.bool()?);
        }
        27 => {
            x.skip_opaque()?;
        }
        29 => {
            change_info(x)?;
            change_info(x)?;
        }
        33 | 52 => secinfo(x)?,
        34 => bitmap(x)?,
        35 => x.skip(16)?,
        38 => {
            r.count = Some(x.u32()? as u64);
            x.skip(12)?;
        }
        41 => x.skip(24)?,
        42 => {
            x.skip(16)?;
            match x.u32()? {
                0 => {}
                1 => {
                    bitmap(x)?;
                    bitmap(x)?;
                }
                _ => return Err(unsupported(x)),
            }
            x.u64()?;
            x.skip_opaque()?;
            x.skip_opaque()?;
            let n = x.count(4)?;
            for _ in 0..n.min(1) {
                x.skip_opaque()?;
                x.skip_opaque()?;
                x.skip(12)?;
            }
        }
        43 => {
            x.skip(24)?;
            channel_attrs(x)?;
            channel_attrs(x)?;
        }
        53 => x.skip(36)?,
        55 => {
            let n = x.count(4)?;
            x.skip(4 * n)?;
        }
        69 => {
            r.eof = Some(x.bool()?);
            r.offset_skip(x)?;
        }
        _ => return Err(unsupported(x)),
    }
    Ok(r)
}

impl OpRes {
    fn offset_skip(&mut self, x: &mut Xdr) -> XResult<()> {
        x.u64().map(|_| ())
    }
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
