//! A checked XDR (RFC 4506) cursor. Every read says how much it needs and fails cleanly
//! when the bytes run out; variable-length items are bounded before they are read.

use std::fmt;

/// Where decoding stopped and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdrError {
    /// Byte offset inside the decoded message.
    pub at: usize,
    pub reason: &'static str,
}

impl fmt::Display for XdrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.reason, self.at)
    }
}

pub type XResult<T> = Result<T, XdrError>;

#[derive(Clone)]
pub struct Xdr<'a> {
    b: &'a [u8],
    p: usize,
}

impl<'a> Xdr<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Xdr { b, p: 0 }
    }
    pub fn pos(&self) -> usize {
        self.p
    }
    pub fn remaining(&self) -> usize {
        self.b.len() - self.p
    }
    pub fn rest(&self) -> &'a [u8] {
        &self.b[self.p..]
    }
    fn err(&self, reason: &'static str) -> XdrError {
        XdrError { at: self.p, reason }
    }
    pub fn bytes(&mut self, n: usize) -> XResult<&'a [u8]> {
        if self.remaining() < n {
            return Err(self.err("message ends early"));
        }
        let s = &self.b[self.p..self.p + n];
        self.p += n;
        Ok(s)
    }
    pub fn u32(&mut self) -> XResult<u32> {
        let s = self.bytes(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    pub fn u64(&mut self) -> XResult<u64> {
        Ok(((self.u32()? as u64) << 32) | self.u32()? as u64)
    }
    pub fn bool(&mut self) -> XResult<bool> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(XdrError {
                at: self.p - 4,
                reason: "boolean is neither 0 nor 1",
            }),
        }
    }
    /// Fixed-length opaque (padded to 4).
    pub fn fixed(&mut self, n: usize) -> XResult<&'a [u8]> {
        let s = self.bytes(n)?;
        self.bytes((4 - n % 4) % 4)?;
        Ok(s)
    }
    /// Variable-length opaque of at most `max` bytes.
    pub fn opaque(&mut self, max: usize) -> XResult<&'a [u8]> {
        let n = self.u32()? as usize;
        if n > max {
            return Err(XdrError {
                at: self.p - 4,
                reason: "opaque or string longer than its bound",
            });
        }
        self.fixed(n)
    }
    /// Skips a variable-length opaque without bounding it by more than the message.
    pub fn skip_opaque(&mut self) -> XResult<usize> {
        let n = self.u32()? as usize;
        self.fixed(n)?;
        Ok(n)
    }
    pub fn string(&mut self, max: usize) -> XResult<String> {
        Ok(String::from_utf8_lossy(self.opaque(max)?).into_owned())
    }
    pub fn skip(&mut self, n: usize) -> XResult<()> {
        self.bytes(n).map(|_| ())
    }
    /// An array count, bounded so a hostile count cannot make us loop for long:
    /// each element takes at least `min_elem` bytes.
    pub fn count(&mut self, min_elem: usize) -> XResult<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_elem.max(1)) > self.remaining() {
            return Err(XdrError {
                at: self.p - 4,
                reason: "array count larger than the message",
            });
        }
        Ok(n)
    }
}

/// Lower-case hex of a byte string.
pub fn hex(b: &[u8]) -> String {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(D[(x >> 4) as usize] as char);
        s.push(D[(x & 15) as usize] as char);
    }
    s
}
