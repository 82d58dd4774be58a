//! Walking each operation's arguments, keeping the key ones of file
//! operations.

use crate::xdr::{XResult, Xdr, XdrError};
use crate::Fh;

use super::{op_name, OpArgs};

pub(super) const MAX_OPS: usize = 1024;

pub(super) fn stateid(x: &mut Xdr) -> XResult<()> {
    x.skip(16)
}
pub(super) fn bitmap(x: &mut Xdr) -> XResult<()> {
    let n = x.count(4)?;
    x.skip(4 * n)
}
pub(super) fn fattr(x: &mut Xdr) -> XResult<()> {
    bitmap(x)?;
    x.skip_opaque().map(|_| ())
}
pub(super) fn lock_owner(x: &mut Xdr) -> XResult<()> {
    x.u64()?;
    x.skip_opaque().map(|_| ())
}
pub(super) fn component(x: &mut Xdr) -> XResult<String> {
    x.string(4096)
}
pub(super) fn fh4(x: &mut Xdr) -> XResult<Fh> {
    Ok(Fh(x.opaque(128)?.to_vec()))
}
pub(super) fn unsupported(x: &Xdr) -> XdrError {
    XdrError {
        at: x.pos(),
        reason: "operation not decoded",
    }
}
pub(super) fn channel_attrs(x: &mut Xdr) -> XResult<()> {
    x.skip(24)?;
    let n = x.count(4)?;
    x.skip(4 * n)
}
pub(super) fn cb_sec_parms(x: &mut Xdr) -> XResult<()> {
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

pub(super) fn op_args(op: u32, x: &mut Xdr) -> XResult<OpArgs> {
    let mut a = OpArgs {
        op,
        name: op_name(op),
        ..Default::default()
    };
    // Operations 3 to 39 are NFSv4.0's (RFC 7530); 40 on came with minor
    // versions 1 (RFC 8881) and 2 (RFC 7862).
    if op < 40 {
        v40_args(op, x, &mut a)?;
    } else {
        minor_version_args(op, x, &mut a)?;
    }
    Ok(a)
}

/// The arguments of an NFSv4.0 operation.
fn v40_args(op: u32, x: &mut Xdr, a: &mut OpArgs) -> XResult<()> {
    match op {
        3 => x.skip(4)?,
        4 => x.skip(20)?,
        5 => {
            a.offset = Some(x.u64()?);
            a.count = Some(x.u32()? as u64);
        }
        6 => create_args(x, a)?,
        7 | 30 | 57 => x.skip(8)?,
        8 | 45 | 66 | 67 => stateid(x)?,
        9 => bitmap(x)?,
        10 | 16 | 23 | 24 | 27 | 31 | 32 => {}
        11 | 15 | 28 | 33 => a.component = Some(component(x)?),
        12 => lock_args(x, a)?,
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
        18 => open_args(x, a)?,
        19 => x.skip(4)?,
        20 => x.skip(20)?,
        21 => x.skip(28)?,
        22 => a.fh = Some(fh4(x)?),
        25 | 68 => {
            stateid(x)?;
            a.offset = Some(x.u64()?);
            a.count = Some(x.u32()? as u64);
        }
        26 => readdir_args(x, a)?,
        29 => {
            a.component = Some(component(x)?);
            a.component2 = Some(component(x)?);
        }
        34 => {
            stateid(x)?;
            fattr(x)?;
        }
        35 => setclientid_args(x)?,
        36 => x.skip(16)?,
        38 => {
            stateid(x)?;
            a.offset = Some(x.u64()?);
            x.u32()?;
            a.count = Some(x.skip_opaque()? as u64);
        }
        39 => lock_owner(x)?,
        _ => return Err(unsupported(x)),
    }
    Ok(())
}

/// The arguments of an operation added by NFSv4.1 or 4.2.
fn minor_version_args(op: u32, x: &mut Xdr, a: &mut OpArgs) -> XResult<()> {
    match op {
        40 => {
            x.u32()?;
            cb_sec_parms(x)?;
        }
        41 => x.skip(24)?,
        42 => exchange_id_args(x)?,
        43 => create_session_args(x)?,
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
    Ok(())
}

/// CREATE: the object's type (a link's target, a device's numbers), its
/// name and attributes.
fn create_args(x: &mut Xdr, a: &mut OpArgs) -> XResult<()> {
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
    Ok(())
}

/// LOCK: the range, and the lock owner, new (with its open state) or
/// existing (with its lock state).
fn lock_args(x: &mut Xdr, a: &mut OpArgs) -> XResult<()> {
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
    Ok(())
}

/// OPEN: whether it creates (and how), and how the file is claimed (by
/// name, by handle, or delegated).
fn open_args(x: &mut Xdr, a: &mut OpArgs) -> XResult<()> {
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
    Ok(())
}

/// EXCHANGE_ID: the client owner, state protection, implementation id.
fn exchange_id_args(x: &mut Xdr) -> XResult<()> {
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
    Ok(())
}

/// READDIR: the cookie (kept as the offset), the verifier, the counts
/// and the attributes asked for.
fn readdir_args(x: &mut Xdr, a: &mut OpArgs) -> XResult<()> {
    a.offset = Some(x.u64()?); // cookie
    x.skip(8)?;
    a.count = Some(x.u32()? as u64);
    x.u32()?;
    bitmap(x)?;
    Ok(())
}

/// SETCLIENTID: the client's verifier and id, and its callback.
fn setclientid_args(x: &mut Xdr) -> XResult<()> {
    x.skip(8)?;
    x.skip_opaque()?;
    x.u32()?;
    x.skip_opaque()?;
    x.skip_opaque()?;
    x.u32()?;
    Ok(())
}

/// CREATE_SESSION: the client id, the channels' attributes, the callback
/// program and its security.
fn create_session_args(x: &mut Xdr) -> XResult<()> {
    x.skip(16)?;
    channel_attrs(x)?;
    channel_attrs(x)?;
    x.u32()?;
    cb_sec_parms(x)?;
    Ok(())
}
