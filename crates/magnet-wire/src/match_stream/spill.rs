//! The kernel side: packets that left the pool, matched ones counted and
//! unmatched ones written to an unlinked temporary file until the capture's
//! interfaces are known, then read back.

use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use magnet_trace::catalog::kind;

use crate::kernel::{Hop, Kernel};
use crate::matching::{kernel_unmatched_reason, Summary};
use crate::{Error, Result};

use super::pool::Pooled;
use super::{out_err, KernelUnmatched, Sink};

/// The kernel side of a packet that left the pool.
struct Leaving {
    id: u64,
    first_ts: i64,
    drop: Option<String>,
    ethertype: u16,
    has_ip: bool,
    /// Each interface it crossed at the device layer (first sighting there, in hop
    /// order) with the LOST region's count at that sighting.
    dev: Vec<(u32, Option<u64>)>,
    hops: Vec<Hop>,
}

fn put_u64(w: &mut impl Write, v: u64) -> std::io::Result<()> {
    w.write_all(&v.to_le_bytes())
}

fn get<const N: usize>(r: &mut impl Read) -> std::io::Result<[u8; N]> {
    let mut b = [0u8; N];
    r.read_exact(&mut b)?;
    Ok(b)
}

impl Leaving {
    fn write(&self, w: &mut impl Write) -> std::io::Result<()> {
        put_u64(w, self.id)?;
        put_u64(w, self.first_ts as u64)?;
        let d = self.drop.as_deref().unwrap_or("");
        put_u64(w, d.len() as u64 | (u64::from(self.drop.is_some()) << 63))?;
        w.write_all(d.as_bytes())?;
        w.write_all(&self.ethertype.to_le_bytes())?;
        w.write_all(&[u8::from(self.has_ip)])?;
        put_u64(w, self.dev.len() as u64)?;
        for &(ifx, lost) in &self.dev {
            w.write_all(&ifx.to_le_bytes())?;
            put_u64(w, lost.unwrap_or(u64::MAX))?;
        }
        put_u64(w, self.hops.len() as u64)?;
        for h in &self.hops {
            put_u64(w, h.ts_ns as u64)?;
            w.write_all(&h.kind.to_le_bytes())?;
            w.write_all(&h.ifindex.to_le_bytes())?;
            w.write_all(&h.len.to_le_bytes())?;
            put_u64(w, h.cookie)?;
            w.write_all(&h.tid.to_le_bytes())?;
            w.write_all(&h.cpu.to_le_bytes())?;
            w.write_all(&[u8::from(h.other_netns) | u8::from(h.no_link_header) << 1])?;
        }
        Ok(())
    }

    fn read(r: &mut impl Read) -> std::io::Result<Leaving> {
        let u = |r: &mut dyn Read| -> std::io::Result<u64> {
            let mut b = [0u8; 8];
            r.read_exact(&mut b)?;
            Ok(u64::from_le_bytes(b))
        };
        let id = u(r)?;
        let first_ts = u(r)? as i64;
        let dl = u(r)?;
        let mut d = vec![0u8; (dl & !(1 << 63)) as usize];
        r.read_exact(&mut d)?;
        let drop = (dl >> 63 == 1).then(|| String::from_utf8_lossy(&d).into_owned());
        let ethertype = u16::from_le_bytes(get(r)?);
        let has_ip = get::<1>(r)?[0] == 1;
        let nd = u(r)?;
        let mut dev = Vec::new();
        for _ in 0..nd {
            let ifx = u32::from_le_bytes(get(r)?);
            let l = u(r)?;
            dev.push((ifx, (l != u64::MAX).then_some(l)));
        }
        let nh = u(r)?;
        let mut hops = Vec::new();
        for _ in 0..nh {
            hops.push(Hop {
                ts_ns: u(r)? as i64,
                kind: u16::from_le_bytes(get(r)?),
                ifindex: u32::from_le_bytes(get(r)?),
                len: u32::from_le_bytes(get(r)?),
                cookie: u(r)?,
                tid: u32::from_le_bytes(get(r)?),
                cpu: u16::from_le_bytes(get(r)?),
                other_netns: false,
                no_link_header: false,
            });
            let flags = u8::from_le_bytes(get(r)?);
            let h = hops.last_mut().expect("pushed");
            h.other_netns = flags & 1 != 0;
            h.no_link_header = flags & 2 != 0;
        }
        Ok(Leaving {
            id,
            first_ts,
            drop,
            ethertype,
            has_ip,
            dev,
            hops,
        })
    }
}

/// An unlinked temporary file.
fn scratch() -> Result<std::fs::File> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir();
    let path = dir.join(format!(
        ".magnet-match-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|source| Error::Io {
            path: path.display().to_string(),
            source,
        })?;
    let _ = std::fs::remove_file(&path);
    Ok(f)
}

/// The kernel side, as packets leave the pool: matched ones counted by the
/// interfaces they crossed, unmatched ones written down until the capture's
/// interfaces are known.
pub(super) struct KernelSide {
    matched_on: HashMap<Vec<u32>, u64>,
    spill: BufWriter<std::fs::File>,
    spilled: u64,
}

fn tmp_err(source: std::io::Error) -> Error {
    Error::Io {
        path: "temporary file".into(),
        source,
    }
}

impl KernelSide {
    pub(super) fn new() -> Result<KernelSide> {
        Ok(KernelSide {
            matched_on: HashMap::new(),
            spill: BufWriter::new(scratch()?),
            spilled: 0,
        })
    }

    /// A packet leaves the pool.
    pub(super) fn leave(&mut self, q: Pooled, k: &Kernel) -> Result<()> {
        let p = &q.p;
        let mut dev: Vec<(u32, Option<u64>)> = Vec::new();
        for h in &p.hops {
            if matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX)
                && !dev.iter().any(|d| d.0 == h.ifindex)
            {
                dev.push((h.ifindex, k.lost_at(h.ts_ns).map(|l| l.count)));
            }
        }
        if !dev.iter().any(|d| d.0 != 0) {
            return Ok(());
        }
        if q.used {
            let mut ifs: Vec<u32> = dev.iter().map(|d| d.0).collect();
            ifs.sort_unstable();
            *self.matched_on.entry(ifs).or_default() += 1;
            return Ok(());
        }
        Leaving {
            id: p.id,
            first_ts: p.first_ts(),
            drop: p.drop.clone(),
            ethertype: p.ethertype,
            has_ip: p.ip.is_some(),
            dev,
            hops: p.hops.clone(),
        }
        .write(&mut self.spill)
        .map_err(tmp_err)?;
        self.spilled += 1;
        Ok(())
    }

    /// After the last frame, the capture's interfaces `ifs` known: counts the
    /// packets that crossed them in `s`, and hands each unmatched one to `sink`
    /// with why.
    pub(super) fn report(
        self,
        ifs: &[u32],
        k: &Kernel,
        s: &mut Summary,
        sink: &mut dyn Sink,
    ) -> Result<()> {
        for (on, c) in &self.matched_on {
            if on.iter().any(|i| ifs.contains(i)) {
                s.kernel_packets += c;
                s.kernel_matched += c;
            }
        }
        let mut file = self
            .spill
            .into_inner()
            .map_err(|e| tmp_err(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(tmp_err)?;
        let mut rd = BufReader::new(file);
        for _ in 0..self.spilled {
            let l = Leaving::read(&mut rd).map_err(tmp_err)?;
            let Some(&(_, lost)) = l.dev.iter().find(|d| ifs.contains(&d.0)) else {
                continue;
            };
            s.kernel_packets += 1;
            let why = kernel_unmatched_reason(l.drop.as_deref(), lost, l.has_ip, l.ethertype);
            s.count_kernel_unmatched(&why);
            let u = KernelUnmatched {
                id: l.id,
                first_ts: l.first_ts,
                reason: why,
                hops: l.hops,
            };
            sink.kernel(k, &u).map_err(out_err)?;
        }
        Ok(())
    }
}
