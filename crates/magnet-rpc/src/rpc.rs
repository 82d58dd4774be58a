//! ONC-RPC message headers (RFC 5531): calls and replies, credentials.

use serde::Serialize;

use crate::xdr::{XResult, Xdr};

pub const AUTH_NONE: u32 = 0;
pub const AUTH_UNIX: u32 = 1;
pub const AUTH_SHORT: u32 = 2;
pub const AUTH_DH: u32 = 3;
pub const RPCSEC_GSS: u32 = 6;

/// The caller's credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "flavor", rename_all = "snake_case")]
pub enum Cred {
    None,
    Unix {
        machine: String,
        uid: u32,
        gid: u32,
        gids: Vec<u32>,
    },
    Gss {
        gss_proc: u32,
        seq: u32,
        /// 1 none, 2 integrity, 3 privacy.
        service: u32,
    },
    Other {
        number: u32,
    },
}

impl Cred {
    pub fn uid(&self) -> Option<u32> {
        match self {
            Cred::Unix { uid, .. } => Some(*uid),
            _ => None,
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Cred::None => "none",
            Cred::Unix { .. } => "unix",
            Cred::Gss { .. } => "rpcsec_gss",
            Cred::Other { .. } => "other",
        }
    }
}

/// A decoded call header; `args_at` is where the procedure's arguments start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallHeader {
    pub xid: u32,
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
    pub cred: Cred,
    /// Arguments are only decodable when not wrapped by RPCSEC_GSS privacy and not a
    /// GSS control message.
    pub args_visible: bool,
    pub args_at: usize,
}

/// How the server answered, before the procedure's own results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplyStat {
    Success,
    ProgUnavail,
    ProgMismatch,
    ProcUnavail,
    GarbageArgs,
    SystemErr,
    RpcMismatch,
    AuthError,
    Unknown,
}

impl ReplyStat {
    pub fn name(self) -> &'static str {
        match self {
            ReplyStat::Success => "success",
            ReplyStat::ProgUnavail => "prog_unavail",
            ReplyStat::ProgMismatch => "prog_mismatch",
            ReplyStat::ProcUnavail => "proc_unavail",
            ReplyStat::GarbageArgs => "garbage_args",
            ReplyStat::SystemErr => "system_err",
            ReplyStat::RpcMismatch => "rpc_mismatch",
            ReplyStat::AuthError => "auth_error",
            ReplyStat::Unknown => "unknown",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyHeader {
    pub xid: u32,
    pub stat: ReplyStat,
    /// Where results start (meaningful when `stat` is `Success`).
    pub results_at: usize,
    /// The reply's verifier was RPCSEC_GSS: results may be wrapped.
    pub gss_verf: bool,
}

pub enum Message {
    Call(CallHeader),
    Reply(ReplyHeader),
}

fn cred(x: &mut Xdr) -> XResult<Cred> {
    let flavor = x.u32()?;
    let body = x.opaque(400)?;
    let mut b = Xdr::new(body);
    Ok(match flavor {
        AUTH_NONE => Cred::None,
        AUTH_UNIX => {
            let _stamp = b.u32()?;
            let machine = b.string(255)?;
            let uid = b.u32()?;
            let gid = b.u32()?;
            let n = b.count(4)?;
            let mut gids = Vec::with_capacity(n.min(16));
            for _ in 0..n.min(64) {
                gids.push(b.u32()?);
            }
            Cred::Unix {
                machine,
                uid,
                gid,
                gids,
            }
        }
        RPCSEC_GSS => {
            let _v = b.u32()?;
            let gss_proc = b.u32()?;
            let seq = b.u32()?;
            let service = b.u32()?;
            Cred::Gss {
                gss_proc,
                seq,
                service,
            }
        }
        n => Cred::Other { number: n },
    })
}

/// Decodes the RPC header of one message (a UDP payload or a TCP record).
pub fn parse(msg: &[u8]) -> XResult<Message> {
    let mut x = Xdr::new(msg);
    let xid = x.u32()?;
    match x.u32()? {
        0 => {
            if x.u32()? != 2 {
                return Err(crate::xdr::XdrError {
                    at: 8,
                    reason: "RPC version is not 2",
                });
            }
            let prog = x.u32()?;
            let vers = x.u32()?;
            let proc_ = x.u32()?;
            let cred = cred(&mut x)?;
            let _vflavor = x.u32()?;
            x.opaque(400)?;
            let mut args_visible = true;
            if let Cred::Gss {
                gss_proc, service, ..
            } = cred
            {
                if gss_proc != 0 || service == 3 {
                    args_visible = false;
                } else if service == 2 {
                    // rpc_gss_integ_data: opaque databody (seq_num + args), checksum.
                    x.u32()?;
                    x.u32()?;
                }
            }
            Ok(Message::Call(CallHeader {
                xid,
                prog,
                vers,
                proc_,
                cred,
                args_visible,
                args_at: x.pos(),
            }))
        }
        1 => {
            let stat = match x.u32()? {
                0 => {
                    let vflavor = x.u32()?;
                    x.opaque(400)?;
                    let st = match x.u32()? {
                        0 => ReplyStat::Success,
                        1 => ReplyStat::ProgUnavail,
                        2 => ReplyStat::ProgMismatch,
                        3 => ReplyStat::ProcUnavail,
                        4 => ReplyStat::GarbageArgs,
                        5 => ReplyStat::SystemErr,
                        _ => ReplyStat::Unknown,
                    };
                    return Ok(Message::Reply(ReplyHeader {
                        xid,
                        stat: st,
                        results_at: x.pos(),
                        gss_verf: vflavor == RPCSEC_GSS,
                    }));
                }
                1 => match x.u32()? {
                    0 => ReplyStat::RpcMismatch,
                    _ => ReplyStat::AuthError,
                },
                _ => ReplyStat::Unknown,
            };
            Ok(Message::Reply(ReplyHeader {
                xid,
                stat,
                results_at: x.pos(),
                gss_verf: false,
            }))
        }
        _ => Err(crate::xdr::XdrError {
            at: 4,
            reason: "message type is neither call nor reply",
        }),
    }
}

/// Bytes [`looks_like_rpc`] may need: a call is judged on its first 32, a reply on
/// everything up to its `accept_stat`, which follows the verifier (20 bytes, a
/// verifier body of up to 400 bytes, 4). A TCP record is judged on its first
/// `min(length, HEADER_PEEK)` bytes.
pub const HEADER_PEEK: usize = 20 + 400 + 4;

/// A cheap structural test that `b` starts with an RPC message header; used to tell
/// RPC from other traffic without trusting port numbers, and to find the next record
/// in a TCP stream entered mid-way. Needs up to [`HEADER_PEEK`] bytes (a reply's
/// verifier comes before its accept_stat); shorter input fails.
pub fn looks_like_rpc(b: &[u8]) -> bool {
    let w = |i: usize| -> Option<u32> {
        b.get(i * 4..i * 4 + 4)
            .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    };
    match w(1) {
        Some(0) => {
            let (Some(2), Some(prog), Some(vers), Some(proc_), Some(flavor), Some(clen)) =
                (w(2), w(3), w(4), w(5), w(6), w(7))
            else {
                return false;
            };
            prog != 0
                && (1..=64).contains(&vers)
                && proc_ < 4096
                && matches!(flavor, 0..=6 | 390003..=390005)
                && clen <= 400
                && clen % 4 == 0
        }
        Some(1) => match w(2) {
            Some(0) => {
                let (Some(vflavor), Some(vlen)) = (w(3), w(4)) else {
                    return false;
                };
                // A verifier's body is an XDR opaque: padded to a multiple of 4 bytes
                // whatever its length (an RPCSEC_GSS krb5 MIC is 37 bytes with DES/RC4
                // enctypes, padded to 40; tshark pairs those replies too).
                if !matches!(vflavor, 0..=6) || vlen > 400 {
                    return false;
                }
                let at = 5 + (vlen as usize).div_ceil(4);
                matches!(w(at), Some(0..=5))
            }
            Some(1) => matches!(w(3), Some(0..=1)),
            _ => false,
        },
        _ => false,
    }
}
