//! Client slots: how many clients one listener serves at once, in all and
//! per uid, so that one local user holding connections open cannot lock the
//! others (or Prometheus's scrapes) out.
//!
//! The Unix socket and HTTP each have their own [`Slots`]: a flood on one
//! does not touch the other. The Unix socket knows its caller's uid from
//! SO_PEERCRED; HTTP on loopback finds the uid that owns the peer's socket in
//! `/proc/net/tcp{,6}` ([`tcp_peer_uid`]); a peer that is not on this host is
//! counted under its address.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

/// Who a client is, for the per-client limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Who {
    Uid(u32),
    Addr(IpAddr),
}

impl std::fmt::Display for Who {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Who::Uid(u) => write!(f, "uid {u}"),
            Who::Addr(a) => write!(f, "{a}"),
        }
    }
}

/// Why a client was turned away.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// `max_clients` clients are being served.
    Full(usize),
    /// This uid (or address) holds `max_clients_per_uid` already.
    PerUid(Who, usize),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Full(n) => write!(f, "too many clients ({n}, max_clients); try again"),
            Refused::PerUid(w, n) => write!(
                f,
                "{w} has {n} connections open already (max_clients_per_uid); close one first"
            ),
        }
    }
}

#[derive(Default)]
struct Held {
    total: usize,
    by: HashMap<Who, usize>,
}

/// The slots of one listener.
#[derive(Clone, Default)]
pub struct Slots(Arc<Mutex<Held>>);

/// A slot held; given back when dropped.
pub struct Slot {
    slots: Slots,
    who: Who,
}

impl Slots {
    /// Takes a slot for `who` if fewer than `max` are held in all and fewer
    /// than `per` by `who`.
    pub fn take(&self, who: Who, max: usize, per: usize) -> Result<Slot, Refused> {
        let mut h = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mine = h.by.get(&who).copied().unwrap_or(0);
        if mine >= per {
            return Err(Refused::PerUid(who, mine));
        }
        if h.total >= max {
            return Err(Refused::Full(h.total));
        }
        h.total += 1;
        *h.by.entry(who).or_insert(0) += 1;
        Ok(Slot {
            slots: self.clone(),
            who,
        })
    }

    /// Slots held now, in all.
    pub fn held(&self) -> usize {
        self.0.lock().map(|h| h.total).unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut h = self.slots.0.lock().unwrap_or_else(|p| p.into_inner());
        h.total = h.total.saturating_sub(1);
        if let Some(n) = h.by.get_mut(&self.who) {
            *n -= 1;
            if *n == 0 {
                h.by.remove(&self.who);
            }
        }
    }
}

/// The uid owning the socket at `peer` connected to `local`, when the peer is
/// on this host (in this network namespace): the row of `/proc/net/tcp` or
/// `tcp6` whose local end is `peer` and remote end is `local`.
pub fn tcp_peer_uid(local: SocketAddr, peer: SocketAddr) -> Option<u32> {
    let file = match peer {
        SocketAddr::V4(_) => "/proc/net/tcp",
        SocketAddr::V6(_) => "/proc/net/tcp6",
    };
    let text = std::fs::read_to_string(file).ok()?;
    let (want_l, want_r) = (proc_addr(peer), proc_addr(local));
    text.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() > 7 && f[1].eq_ignore_ascii_case(&want_l) && f[2].eq_ignore_ascii_case(&want_r))
            .then(|| f[7].parse().ok())
            .flatten()
    })
}

/// An address as /proc/net/tcp writes it: each 32-bit word of the address in
/// host byte order as hex, then `:PORT` in hex.
fn proc_addr(a: SocketAddr) -> String {
    let words: Vec<[u8; 4]> = match a.ip() {
        IpAddr::V4(v) => vec![v.octets()],
        IpAddr::V6(v) => v
            .octets()
            .chunks(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect(),
    };
    let mut s: String = words
        .iter()
        .map(|w| format!("{:08X}", u32::from_ne_bytes(*w)))
        .collect();
    s.push_str(&format!(":{:04X}", a.port()));
    s
}

/// Who an HTTP peer is: its uid on this host, else its address.
pub fn http_who(local: SocketAddr, peer: SocketAddr) -> Who {
    tcp_peer_uid(local, peer)
        .map(Who::Uid)
        .unwrap_or(Who::Addr(peer.ip()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_uid_and_total_limits_and_release() {
        let s = Slots::default();
        let (a, b) = (Who::Uid(1000), Who::Uid(0));
        let a1 = s.take(a, 3, 2).unwrap();
        let _a2 = s.take(a, 3, 2).unwrap();
        assert_eq!(s.take(a, 3, 2).err(), Some(Refused::PerUid(a, 2)));
        let _b1 = s.take(b, 3, 2).unwrap();
        assert_eq!(s.take(b, 3, 2).err(), Some(Refused::Full(3)));
        drop(a1);
        assert_eq!(s.held(), 2);
        let _b2 = s.take(b, 3, 2).unwrap();
        assert!(Refused::PerUid(a, 2).to_string().contains("uid 1000 has 2"));
    }

    #[test]
    fn the_uid_of_a_loopback_peer_is_found() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, peer) = l.accept().unwrap();
        assert_eq!(peer, c.local_addr().unwrap());
        let me = nix::unistd::geteuid().as_raw();
        assert_eq!(tcp_peer_uid(s.local_addr().unwrap(), peer), Some(me));
        // not a socket of this host
        let far: SocketAddr = "192.0.2.1:4".parse().unwrap();
        assert_eq!(tcp_peer_uid(s.local_addr().unwrap(), far), None);
        assert_eq!(http_who(s.local_addr().unwrap(), far), Who::Addr(far.ip()));
    }
}
