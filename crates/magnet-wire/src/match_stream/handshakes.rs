//! The first TCP handshake among the matched frames.

use std::collections::HashMap;

use crate::kernel::IpFields;
use crate::matching::HandshakeRow;

/// The first TCP handshake among the matched frames, in capture order (the rule of
/// [`crate::paths::find_handshakes`], streamed: the SYN-ACK and the ACK are looked
/// for after the SYN, in capture order).
pub(super) struct Handshakes {
    /// In capture order; `None` once given up.
    syns: Vec<Option<Syn>>,
    /// SYN index by the SYN's (source, port, destination, port).
    by_flow: HashMap<(std::net::IpAddr, u16, std::net::IpAddr, u16), Vec<usize>>,
    /// The first SYN whose handshake completed.
    done: Option<usize>,
    waiting: usize,
    most: usize,
}

struct Syn {
    ip: IpFields,
    row: HandshakeRow,
    reply: Option<(IpFields, i64, HandshakeRow)>,
    ack: Option<HandshakeRow>,
}

impl Handshakes {
    pub(super) fn new(most: usize) -> Self {
        Handshakes {
            syns: Vec::new(),
            by_flow: HashMap::new(),
            done: None,
            waiting: 0,
            most,
        }
    }

    pub(super) fn see(
        &mut self,
        ip: IpFields,
        ts: i64,
        row: impl Fn(&'static str) -> Option<HandshakeRow>,
    ) {
        if !ip.is_tcp() {
            return;
        }
        let f = ip;
        if f.tcp_flags & 0x12 == 0x12 {
            // A SYN-ACK answers the first waiting SYN of the reverse flow.
            if let Some(v) = self.by_flow.get(&(f.daddr, f.dport, f.saddr, f.sport)) {
                for &i in v {
                    let Some(s) = self.syns[i].as_mut() else {
                        continue;
                    };
                    if s.reply.is_none() && f.ack == s.ip.seq.wrapping_add(1) {
                        if let Some(r) = row("SYN-ACK") {
                            s.reply = Some((f, ts, r));
                        }
                    }
                }
            }
        } else if f.tcp_flags & 0x1f == 0x10 {
            if let Some(v) = self.by_flow.get(&(f.saddr, f.sport, f.daddr, f.dport)) {
                for &i in v {
                    let Some(s) = self.syns[i].as_mut() else {
                        continue;
                    };
                    let Some((a, at, _)) = &s.reply else { continue };
                    if s.ack.is_none()
                        && ts >= *at
                        && f.seq == s.ip.seq.wrapping_add(1)
                        && f.ack == a.seq.wrapping_add(1)
                    {
                        s.ack = row("ACK");
                        if s.ack.is_some() && self.done.is_none_or(|d| i < d) {
                            self.done = Some(i);
                        }
                    }
                }
            }
        } else if f.tcp_flags & 0x12 == 0x02 && self.done.is_none() {
            if self.waiting >= self.most {
                // Give up the oldest SYN still waiting.
                if let Some(old) = self.syns.iter_mut().find(|s| s.is_some()) {
                    *old = None;
                    self.waiting -= 1;
                }
            }
            if let Some(r) = row("SYN") {
                let i = self.syns.len();
                self.syns.push(Some(Syn {
                    ip: f,
                    row: r,
                    reply: None,
                    ack: None,
                }));
                self.by_flow
                    .entry((f.saddr, f.sport, f.daddr, f.dport))
                    .or_default()
                    .push(i);
                self.waiting += 1;
            }
        }
    }

    pub(super) fn first(mut self) -> Option<[HandshakeRow; 3]> {
        let s = self.syns.get_mut(self.done?)?.take()?;
        Some([s.row, s.reply?.2, s.ack?])
    }
}
