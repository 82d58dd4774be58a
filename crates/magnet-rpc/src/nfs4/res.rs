//! Walking each operation's result.

use crate::xdr::{XResult, Xdr};

use super::args::{bitmap, channel_attrs, component, fattr, fh4, stateid, unsupported};
use super::{op_name, status_name, OpRes};

pub(super) fn change_info(x: &mut Xdr) -> XResult<()> {
    x.skip(20)
}
pub(super) fn secinfo(x: &mut Xdr) -> XResult<()> {
    let n = x.count(4)?;
    for _ in 0..n {
        if x.u32()? == 6 {
            x.skip_opaque()?;
            x.skip(8)?;
        }
    }
    Ok(())
}
pub(super) fn ace(x: &mut Xdr) -> XResult<()> {
    x.skip(12)?;
    x.skip_opaque().map(|_| ())
}

pub(super) fn op_res(op: u32, x: &mut Xdr) -> XResult<OpRes> {
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
        18 => open_res(x)?,
        25 => {
            r.eof = Some(x.bool()?);
            r.count = Some(x.skip_opaque()? as u64);
        }
        26 => readdir_res(x, &mut r)?,
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
        42 => exchange_id_res(x)?,
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

/// OPEN: the open state, the change, the flags and attributes set, and
/// the delegation granted (read, write, or none and why).
fn open_res(x: &mut Xdr) -> XResult<()> {
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
    Ok(())
}

/// READDIR: the entries' names (at most 100,000 kept) and whether the
/// directory ended.
fn readdir_res(x: &mut Xdr, r: &mut OpRes) -> XResult<()> {
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
    Ok(())
}

/// EXCHANGE_ID: the client id, state protection, server owner and scope,
/// implementation id.
fn exchange_id_res(x: &mut Xdr) -> XResult<()> {
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
    Ok(())
}
