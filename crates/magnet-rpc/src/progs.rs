//! Program dispatch: procedure names for every program magnet knows, argument and
//! result decoding for NFSv3, NFSv4, MOUNT v3, portmap/rpcbind and NLM.

use std::borrow::Cow;

use serde::Serialize;

use crate::xdr::{hex, XResult, Xdr};
use crate::{nfs3, nfs4, Fh};

pub const NFS: u32 = 100003;
pub const MOUNT: u32 = 100005;
pub const PORTMAP: u32 = 100000;
pub const NLM: u32 = 100021;
pub const NSM: u32 = 100024;
pub const NFS_ACL: u32 = 100227;

pub fn program_name(prog: u32) -> Option<&'static str> {
    Some(match prog {
        NFS => "nfs",
        MOUNT => "mount",
        PORTMAP => "portmap",
        NLM => "nlm",
        NSM => "status",
        NFS_ACL => "nfs_acl",
        100004 => "ypserv",
        100007 => "ypbind",
        _ => return None,
    })
}

/// The command name of an rpcspy line: NFSv3 procedures plainly (`read`), NFSv4
/// `compound`, other programs `program.procedure`, unknown ones `prog.vers.proc`.
pub fn command_name(prog: u32, vers: u32, proc_: u32) -> Cow<'static, str> {
    let known: Option<&'static str> = match (prog, vers) {
        (NFS, 3) => nfs3::PROC_NAMES.get(proc_ as usize).copied(),
        (NFS, 4) => match proc_ {
            0 => Some("null"),
            1 => Some("compound"),
            _ => None,
        },
        (MOUNT, _) => [
            "mount.null",
            "mount.mnt",
            "mount.dump",
            "mount.umnt",
            "mount.umntall",
            "mount.export",
        ]
        .get(proc_ as usize)
        .copied(),
        (PORTMAP, 2) => [
            "portmap.null",
            "portmap.set",
            "portmap.unset",
            "portmap.getport",
            "portmap.dump",
            "portmap.callit",
        ]
        .get(proc_ as usize)
        .copied(),
        (PORTMAP, 3 | 4) => [
            "rpcbind.null",
            "rpcbind.set",
            "rpcbind.unset",
            "rpcbind.getaddr",
            "rpcbind.dump",
            "rpcbind.callit",
            "rpcbind.gettime",
            "rpcbind.uaddr2taddr",
            "rpcbind.taddr2uaddr",
            "rpcbind.getversaddr",
            "rpcbind.indirect",
            "rpcbind.getaddrlist",
            "rpcbind.getstat",
        ]
        .get(proc_ as usize)
        .copied(),
        (NLM, _) => [
            "nlm.null",
            "nlm.test",
            "nlm.lock",
            "nlm.cancel",
            "nlm.unlock",
            "nlm.granted",
            "nlm.test_msg",
            "nlm.lock_msg",
            "nlm.cancel_msg",
            "nlm.unlock_msg",
            "nlm.granted_msg",
            "nlm.test_res",
            "nlm.lock_res",
            "nlm.cancel_res",
            "nlm.unlock_res",
            "nlm.granted_res",
            "nlm.proc16",
            "nlm.proc17",
            "nlm.proc18",
            "nlm.proc19",
            "nlm.share",
            "nlm.unshare",
            "nlm.nm_lock",
            "nlm.free_all",
        ]
        .get(proc_ as usize)
        .copied(),
        _ => None,
    };
    match known {
        Some(n) => Cow::Borrowed(n),
        None => match program_name(prog) {
            Some(p) => Cow::Owned(format!("{p}{vers}.proc{proc_}")),
            None => Cow::Owned(format!("prog{prog}.v{vers}.proc{proc_}")),
        },
    }
}

/// Decoded call arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Args {
    /// No arguments (NULL procedures) or none decoded for this program.
    None,
    Nfs3(nfs3::Args),
    Nfs4(nfs4::Compound),
    Mount {
        path: String,
    },
    Portmap {
        prog: u32,
        vers: u32,
        /// Protocol number (v2) or netid (v3/v4).
        proto: String,
    },
    Nlm {
        #[serde(skip_serializing_if = "Option::is_none")]
        fh: Option<Fh>,
        offset: u64,
        len: u64,
    },
    /// Arguments hidden by RPCSEC_GSS privacy or a GSS control message.
    Hidden,
    /// Decoding failed: where and why.
    Malformed {
        error: String,
    },
}

/// Decoded reply results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Res {
    None,
    Nfs3(nfs3::Res),
    Nfs4(nfs4::CompoundRes),
    Mount {
        status: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        fh: Option<Fh>,
    },
    Portmap {
        /// Port (v2 GETPORT) or universal address (v3/v4 GETADDR), or a bool as text.
        result: String,
    },
    Nlm {
        status: u32,
    },
    Hidden,
    Malformed {
        error: String,
    },
}

impl Res {
    /// The program-level status number: nfsstat3, nfsstat4 (of the COMPOUND), mountstat3,
    /// nlm4_stats. `None` where a program has no status.
    pub fn status(&self) -> Option<u32> {
        match self {
            Res::Nfs3(r) => Some(r.status),
            Res::Nfs4(r) => Some(r.status),
            Res::Mount { status, .. } | Res::Nlm { status } => Some(*status),
            _ => None,
        }
    }
}

fn malformed(e: crate::xdr::XdrError) -> String {
    e.to_string()
}

pub fn decode_args(prog: u32, vers: u32, proc_: u32, body: &[u8]) -> Args {
    let mut x = Xdr::new(body);
    let r: XResult<Args> = (|| {
        Ok(match (prog, vers, proc_) {
            (_, _, 0) => Args::None,
            (NFS, 3, p) if p < 22 => Args::Nfs3(nfs3::args(p, &mut x)?),
            (NFS, 4, 1) => Args::Nfs4(nfs4::compound(&mut x)?),
            (MOUNT, 3 | 1, 1 | 3) => Args::Mount {
                path: x.string(1024)?,
            },
            (PORTMAP, 2, 1..=3) => {
                let (p, v, proto) = (x.u32()?, x.u32()?, x.u32()?);
                Args::Portmap {
                    prog: p,
                    vers: v,
                    proto: match proto {
                        6 => "tcp".into(),
                        17 => "udp".into(),
                        n => n.to_string(),
                    },
                }
            }
            (PORTMAP, 3 | 4, 1..=3 | 9 | 11) => {
                let (p, v) = (x.u32()?, x.u32()?);
                Args::Portmap {
                    prog: p,
                    vers: v,
                    proto: x.string(256)?,
                }
            }
            (NLM, 1 | 3 | 4, p @ (1..=4 | 6..=9)) => {
                x.skip_opaque()?; // cookie
                let kind = if p >= 6 { p - 5 } else { p };
                match kind {
                    1 => x.skip(4)?,     // exclusive
                    2 | 3 => x.skip(8)?, // block, exclusive
                    _ => {}
                }
                x.string(1024)?; // caller name
                let fh = Fh(x.opaque(128)?.to_vec());
                x.skip_opaque()?; // owner handle
                x.u32()?;
                let (offset, len) = if vers == 4 {
                    (x.u64()?, x.u64()?)
                } else {
                    (x.u32()? as u64, x.u32()? as u64)
                };
                Args::Nlm {
                    fh: Some(fh),
                    offset,
                    len,
                }
            }
            _ => Args::None,
        })
    })();
    r.unwrap_or_else(|e| Args::Malformed {
        error: malformed(e),
    })
}

pub fn decode_res(prog: u32, vers: u32, proc_: u32, body: &[u8]) -> Res {
    let mut x = Xdr::new(body);
    let r: XResult<Res> = (|| {
        Ok(match (prog, vers, proc_) {
            (NFS, 3, p) if p < 22 => Res::Nfs3(nfs3::res(p, &mut x)?),
            (_, _, 0) => Res::None,
            (NFS, 4, 1) => Res::Nfs4(nfs4::compound_res(&mut x)?),
            (MOUNT, 3, 1) => {
                let status = x.u32()?;
                let fh = if status == 0 {
                    Some(Fh(x.opaque(128)?.to_vec()))
                } else {
                    None
                };
                Res::Mount { status, fh }
            }
            (PORTMAP, 2, 1..=3) => Res::Portmap {
                result: x.u32()?.to_string(),
            },
            (PORTMAP, 3 | 4, 1 | 2) => Res::Portmap {
                result: (x.u32()? != 0).to_string(),
            },
            (PORTMAP, 3 | 4, 3 | 9) => Res::Portmap {
                result: x.string(256)?,
            },
            (NLM, 1 | 3 | 4, 1..=5) => {
                x.skip_opaque()?;
                Res::Nlm { status: x.u32()? }
            }
            _ => Res::None,
        })
    })();
    r.unwrap_or_else(|e| Res::Malformed {
        error: malformed(e),
    })
}

pub fn fmt_args(proc_: u32, a: &Args) -> String {
    match a {
        Args::None => String::new(),
        Args::Nfs3(a) => nfs3::fmt_args(proc_, a),
        Args::Nfs4(c) => nfs4::fmt_args(c),
        Args::Mount { path } => format!("{{{path:?}}}"),
        Args::Portmap { prog, vers, proto } => format!("{{{prog}, {vers}, {proto}}}"),
        Args::Nlm { fh, offset, len } => format!(
            "{{\"{}\", {offset}, {len}}}",
            fh.as_ref().map(|f| hex(&f.0)).unwrap_or_default()
        ),
        Args::Hidden => "{hidden}".into(),
        Args::Malformed { error } => format!("{{malformed: {error}}}"),
    }
}

pub fn fmt_res(proc_: u32, r: &Res) -> String {
    match r {
        Res::None => "ok".into(),
        Res::Nfs3(r) => nfs3::fmt_res(proc_, r),
        Res::Nfs4(r) => nfs4::fmt_res(r),
        Res::Mount { status, fh } => match fh {
            Some(f) => format!("ok, \"{}\"", hex(&f.0)),
            None => format!("mountstat {status}"),
        },
        Res::Portmap { result } => format!("ok, {result}"),
        Res::Nlm { status } => format!("nlm_stat {status}"),
        Res::Hidden => "hidden".into(),
        Res::Malformed { error } => format!("malformed: {error}"),
    }
}
