//! NFS version 3 (RFC 1813): all 22 procedures' arguments and results.

use serde::Serialize;

use crate::xdr::{hex, XResult, Xdr};
use crate::Fh;

pub const PROC_NAMES: [&str; 22] = [
    "null",
    "getattr",
    "setattr",
    "lookup",
    "access",
    "readlink",
    "read",
    "write",
    "create",
    "mkdir",
    "symlink",
    "mknod",
    "remove",
    "rmdir",
    "rename",
    "link",
    "readdir",
    "readdirplus",
    "fsstat",
    "fsinfo",
    "pathconf",
    "commit",
];

pub const READ: u32 = 6;
pub const WRITE: u32 = 7;

/// Arguments of one NFSv3 call; fields a procedure does not have stay `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Args {
    /// The object, or the directory for name operations (`from` directory of RENAME).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fh: Option<Fh>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// RENAME's `to` directory, LINK's directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fh2: Option<Fh>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name2: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stable: Option<u32>,
    /// SETATTR/CREATE size, if set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cookie: Option<u64>,
    /// SYMLINK target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirEntry {
    pub name: String,
    pub fileid: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fh: Option<Fh>,
}

/// Results of one NFSv3 reply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Res {
    pub status: u32,
    pub status_name: &'static str,
    /// Handle of a looked-up or created object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fh: Option<Fh>,
    /// File type (1 regular, 2 directory, 5 symlink …) from the object's attributes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ftype: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fileid: Option<u64>,
    /// READ / WRITE byte count done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eof: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<DirEntry>,
}

pub fn status_name(s: u32) -> &'static str {
    match s {
        0 => "ok",
        1 => "perm",
        2 => "noent",
        5 => "io",
        6 => "nxio",
        13 => "acces",
        17 => "exist",
        18 => "xdev",
        19 => "nodev",
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
        71 => "remote",
        10001 => "badhandle",
        10002 => "not_sync",
        10003 => "bad_cookie",
        10004 => "notsupp",
        10005 => "toosmall",
        10006 => "serverfault",
        10007 => "badtype",
        10008 => "jukebox",
        _ => "unknown",
    }
}

pub(crate) fn fh3(x: &mut Xdr) -> XResult<Fh> {
    Ok(Fh(x.opaque(128)?.to_vec()))
}

fn sattr3(x: &mut Xdr, a: &mut Args) -> XResult<()> {
    if x.bool()? {
        a.mode = Some(x.u32()?);
    }
    for _ in 0..2 {
        if x.bool()? {
            x.u32()?;
        }
    }
    if x.bool()? {
        a.size = Some(x.u64()?);
    }
    for _ in 0..2 {
        if x.u32()? == 2 {
            x.skip(8)?;
        }
    }
    Ok(())
}

/// Decodes the arguments of procedure `p`.
pub fn args(p: u32, x: &mut Xdr) -> XResult<Args> {
    let mut a = Args::default();
    match p {
        0 => {}
        1 | 5 | 18 | 19 | 20 => a.fh = Some(fh3(x)?),
        2 => {
            a.fh = Some(fh3(x)?);
            sattr3(x, &mut a)?;
        }
        3 | 12 | 13 => {
            a.fh = Some(fh3(x)?);
            a.name = Some(x.string(4096)?);
        }
        4 => {
            a.fh = Some(fh3(x)?);
            a.access = Some(x.u32()?);
        }
        6 | 21 => {
            a.fh = Some(fh3(x)?);
            a.offset = Some(x.u64()?);
            a.count = Some(x.u32()?);
        }
        7 => {
            a.fh = Some(fh3(x)?);
            a.offset = Some(x.u64()?);
            a.count = Some(x.u32()?);
            a.stable = Some(x.u32()?);
        }
        8..=11 => {
            a.fh = Some(fh3(x)?);
            a.name = Some(x.string(4096)?);
            match p {
                8 => {
                    let how = x.u32()?;
                    a.stable = Some(how);
                    if how < 2 {
                        sattr3(x, &mut a)?;
                    }
                }
                9 => sattr3(x, &mut a)?,
                10 => {
                    sattr3(x, &mut a)?;
                    a.target = Some(x.string(4096)?);
                }
                _ => {
                    let t = x.u32()?;
                    if matches!(t, 3 | 4 | 6 | 7) {
                        sattr3(x, &mut a)?;
                    }
                }
            }
        }
        14 => {
            a.fh = Some(fh3(x)?);
            a.name = Some(x.string(4096)?);
            a.fh2 = Some(fh3(x)?);
            a.name2 = Some(x.string(4096)?);
        }
        15 => {
            a.fh = Some(fh3(x)?);
            a.fh2 = Some(fh3(x)?);
            a.name2 = Some(x.string(4096)?);
        }
        16 | 17 => {
            a.fh = Some(fh3(x)?);
            a.cookie = Some(x.u64()?);
            x.skip(8)?;
            a.count = Some(x.u32()?);
            if p == 17 {
                a.count = Some(x.u32()?);
            }
        }
        _ => {}
    }
    Ok(a)
}

fn fattr3(x: &mut Xdr, r: &mut Res) -> XResult<()> {
    let t = x.u32()?;
    x.skip(16)?;
    let size = x.u64()?;
    x.skip(24)?;
    let fileid = x.u64()?;
    x.skip(24)?;
    r.ftype = Some(t);
    r.size = Some(size);
    r.fileid = Some(fileid);
    Ok(())
}

fn post_op_attr(x: &mut Xdr, r: Option<&mut Res>) -> XResult<()> {
    if x.bool()? {
        match r {
            Some(r) => fattr3(x, r)?,
            None => x.skip(84)?,
        }
    }
    Ok(())
}

fn wcc(x: &mut Xdr, r: Option<&mut Res>) -> XResult<()> {
    if x.bool()? {
        x.skip(24)?;
    }
    post_op_attr(x, r)
}

/// Decodes the results of procedure `p`. Directory listings keep at most
/// `MAX_ENTRIES` entries.
pub fn res(p: u32, x: &mut Xdr) -> XResult<Res> {
    const MAX_ENTRIES: usize = 100_000;
    let mut r = Res::default();
    if p == 0 {
        r.status_name = "ok";
        return Ok(r);
    }
    r.status = x.u32()?;
    r.status_name = status_name(r.status);
    let ok = r.status == 0;
    match p {
        1 if ok => fattr3(x, &mut r)?,
        2 | 12 | 13 => wcc(x, Some(&mut r))?,
        3 => {
            if ok {
                r.fh = Some(fh3(x)?);
                post_op_attr(x, Some(&mut r))?;
            }
            post_op_attr(x, None)?;
        }
        4 => {
            post_op_attr(x, Some(&mut r))?;
            if ok {
                r.access = Some(x.u32()?);
            }
        }
        5 => {
            post_op_attr(x, Some(&mut r))?;
            if ok {
                r.path = Some(x.string(4096)?);
            }
        }
        6 => {
            post_op_attr(x, Some(&mut r))?;
            if ok {
                r.count = Some(x.u32()?);
                r.eof = Some(x.bool()?);
            }
        }
        7 => {
            wcc(x, Some(&mut r))?;
            if ok {
                r.count = Some(x.u32()?);
            }
        }
        8..=11 => {
            if ok {
                if x.bool()? {
                    r.fh = Some(fh3(x)?);
                }
                post_op_attr(x, Some(&mut r))?;
            }
            wcc(x, None)?;
        }
        14 => {
            wcc(x, None)?;
            wcc(x, None)?;
        }
        15 => {
            post_op_attr(x, Some(&mut r))?;
            wcc(x, None)?;
        }
        16 | 17 => {
            post_op_attr(x, None)?;
            if ok {
                x.skip(8)?;
                while x.bool()? {
                    let fileid = x.u64()?;
                    let name = x.string(4096)?;
                    x.u64()?;
                    let mut fh = None;
                    if p == 17 {
                        post_op_attr(x, None)?;
                        if x.bool()? {
                            fh = Some(fh3(x)?);
                        }
                    }
                    if r.entries.len() < MAX_ENTRIES {
                        r.entries.push(DirEntry { name, fileid, fh });
                    }
                }
                r.eof = Some(x.bool()?);
            }
        }
        21 => wcc(x, Some(&mut r))?,
        _ => {}
    }
    Ok(r)
}

/// rpcspy-style argument text.
pub fn fmt_args(p: u32, a: &Args) -> String {
    let fh = |f: &Option<Fh>| {
        f.as_ref()
            .map(|f| format!("\"{}\"", hex(&f.0)))
            .unwrap_or_default()
    };
    let nm = |n: &Option<String>| n.as_deref().map(|n| format!("{n:?}")).unwrap_or_default();
    match p {
        0 => String::new(),
        3 | 12 | 13 | 8 | 9 | 11 => format!("{{{}, {}}}", fh(&a.fh), nm(&a.name)),
        10 => format!("{{{}, {}, {}}}", fh(&a.fh), nm(&a.name), nm(&a.target)),
        6 | 7 | 21 => format!(
            "{{{}, {}, {}}}",
            fh(&a.fh),
            a.offset.unwrap_or(0),
            a.count.unwrap_or(0)
        ),
        14 => format!(
            "{{{}, {}, {}, {}}}",
            fh(&a.fh),
            nm(&a.name),
            fh(&a.fh2),
            nm(&a.name2)
        ),
        15 => format!("{{{}, {}, {}}}", fh(&a.fh), fh(&a.fh2), nm(&a.name2)),
        16 | 17 => format!(
            "{{{}, {}, {}}}",
            fh(&a.fh),
            a.cookie.unwrap_or(0),
            a.count.unwrap_or(0)
        ),
        2 => {
            let mut s = format!("{{{}", fh(&a.fh));
            if let Some(sz) = a.size {
                s.push_str(&format!(", size={sz}"));
            }
            if let Some(m) = a.mode {
                s.push_str(&format!(", mode={m:o}"));
            }
            s.push('}');
            s
        }
        4 => format!("{{{}, {:#x}}}", fh(&a.fh), a.access.unwrap_or(0)),
        _ => format!("{{{}}}", fh(&a.fh)),
    }
}

/// rpcspy-style reply text: status, then the interesting result.
pub fn fmt_res(p: u32, r: &Res) -> String {
    let mut s = r.status_name.to_string();
    if r.status != 0 {
        return s;
    }
    match p {
        6 | 7 => {
            s.push_str(&format!(", {}", r.count.unwrap_or(0)));
            if r.eof == Some(true) {
                s.push_str(", eof");
            }
        }
        3 | 8..=11 => {
            if let Some(f) = &r.fh {
                s.push_str(&format!(", \"{}\"", hex(&f.0)));
            }
        }
        1 | 2 => {
            if let Some(sz) = r.size {
                s.push_str(&format!(", size={sz}"));
            }
        }
        5 => s.push_str(&format!(", {:?}", r.path.as_deref().unwrap_or(""))),
        16 | 17 => s.push_str(&format!(", {} entries", r.entries.len())),
        _ => {}
    }
    s
}
