//! The native form (`.msr`): magic, version, the meta as JSON, each series
//! as LEB128 varints, the raw sketch, a CRC-32.

use crate::Error;

use super::{Metric, Run, RunMeta, FORMAT_VERSION};

impl Run {
    pub fn to_native(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.len() * (Metric::ALL.len() + 1));
        out.extend_from_slice(NATIVE_MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        let meta = serde_json::to_vec(&self.meta).expect("meta serializes");
        out.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        out.extend_from_slice(&meta);
        out.extend_from_slice(&(self.len() as u32).to_le_bytes());
        out.push(Metric::ALL.len() as u8);
        for s in &self.series {
            for &v in s {
                put_varint(&mut out, v);
            }
        }
        for &v in &self.connections {
            put_varint(&mut out, v);
        }
        match &self.sketch {
            Some(s) => {
                out.push(1);
                for b in s {
                    out.extend_from_slice(&b[0].to_le_bytes());
                    out.extend_from_slice(&b[1].to_le_bytes());
                }
            }
            None => out.push(0),
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads the native form. `what` names the source in errors.
    pub fn from_native(b: &[u8], what: &str) -> Result<Run, Error> {
        let mut r = Reader { b, at: 0, what };
        if r.take(4)? != NATIVE_MAGIC {
            return Err(r.err(0, "not a magnet sample run (bad magic)".into()));
        }
        let version = r.u32()?;
        if version != FORMAT_VERSION {
            return Err(r.err(
                4,
                format!("format version {version}, this magnet reads {FORMAT_VERSION}"),
            ));
        }
        if b.len() < 4 + 4 {
            return Err(r.err(b.len(), "cut short".into()));
        }
        let body = &b[..b.len() - 4];
        let stored = u32::from_le_bytes(b[b.len() - 4..].try_into().expect("4 bytes"));
        if crc32fast::hash(body) != stored {
            return Err(r.err(
                b.len() - 4,
                "checksum mismatch (file damaged or cut short)".into(),
            ));
        }
        r.b = body;
        let meta_len = r.u32()? as usize;
        let meta_at = r.at;
        let meta: RunMeta = serde_json::from_slice(r.take(meta_len)?)
            .map_err(|e| r.err(meta_at, format!("meta: {e}")))?;
        let len = r.u32()? as usize;
        let nseries = r.u8()? as usize;
        if nseries != Metric::ALL.len() {
            return Err(r.err(
                r.at - 1,
                format!("{nseries} series, this magnet knows {}", Metric::ALL.len()),
            ));
        }
        if len > body.len() {
            return Err(r.err(
                r.at,
                format!("{len} buckets cannot fit in {} bytes", body.len()),
            ));
        }
        let mut series = Vec::with_capacity(nseries);
        for _ in 0..nseries {
            series.push(
                (0..len)
                    .map(|_| r.varint())
                    .collect::<Result<Vec<_>, _>>()?,
            );
        }
        let connections = (0..len)
            .map(|_| r.varint())
            .collect::<Result<Vec<_>, _>>()?;
        let sketch = match r.u8()? {
            0 => None,
            1 => Some(
                (0..len)
                    .map(|_| Ok([r.u64()?, r.u64()?]))
                    .collect::<Result<Vec<_>, Error>>()?,
            ),
            n => return Err(r.err(r.at - 1, format!("sketch flag {n}"))),
        };
        if r.at != body.len() {
            return Err(r.err(r.at, format!("{} bytes after the run", body.len() - r.at)));
        }
        Ok(Run {
            meta,
            series,
            connections,
            sketch,
        })
    }
}

pub(super) const NATIVE_MAGIC: &[u8; 4] = b"MGSR";

/// Largest run a gzip'd file may inflate to (Meta's files are a few MB).
pub(super) const MAX_INFLATED: u64 = 1 << 30;

/// Meta's data-set files are gzip'd JSON (`*.txt.gz`): inflate, bounded.
pub(super) fn gunzip(b: &[u8], what: &str) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let mut out = Vec::new();
    let mut d = flate2::read::MultiGzDecoder::new(b).take(MAX_INFLATED + 1);
    d.read_to_end(&mut out).map_err(|e| Error::Format {
        path: what.to_string(),
        offset: Some(out.len() as u64),
        reason: format!("gzip: {e} (after {} inflated bytes)", out.len()),
    })?;
    if out.len() as u64 > MAX_INFLATED {
        return Err(Error::Format {
            path: what.to_string(),
            offset: None,
            reason: format!("inflates to more than {MAX_INFLATED} bytes"),
        });
    }
    Ok(out)
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
    what: &'a str,
}

impl<'a> Reader<'a> {
    fn err(&self, offset: usize, reason: String) -> Error {
        Error::Format {
            path: self.what.to_string(),
            offset: Some(offset as u64),
            reason,
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if self.b.len() - self.at < n {
            return Err(self.err(
                self.at,
                format!(
                    "cut short: {n} bytes needed, {} left",
                    self.b.len() - self.at
                ),
            ));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, Error> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn varint(&mut self) -> Result<u64, Error> {
        let start = self.at;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.u8()?;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err(start, "varint longer than 64 bits".into()))
    }
}
