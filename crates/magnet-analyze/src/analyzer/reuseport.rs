//! Listeners that share a port (SO_REUSEPORT): the kernel chooses one of them
//! for each incoming SYN, after the SYN's device and IP events were recorded,
//! so the recorder names one listener of the port for every SYN. The SYN-ACK
//! leaves from the chosen listener's request socket and the recorder names that
//! listener (and the handshake ACK after it): a SYN to a shared port waits here
//! for its SYN-ACK, and is counted to the listener that answered it; without an
//! answer (none recorded, the SYN dropped) to the listener the recorder named.
//!
//! Ports and flows are kept per network namespace (the sockets' own, from
//! their SOCK records): two namespaces may each have listeners on the same
//! address and port, and a client in each may pick the same port (a reused
//! 4-tuple: two SYNs that are not one flow's retransmission).

use std::collections::HashSet;

use magnet_trace::kind;

use super::Analyzer;
use crate::connections::{DEV, IN, IP};
use crate::flows::{FlowKey, IpPacket};
use crate::tcp::{TCP_ACK, TCP_SYN};
use crate::Map;

/// One unit a layer counted: (time, bytes).
pub(crate) type Unit = (u64, u64);

/// SYNs of one flow (a retransmitted SYN goes to the same listener: the
/// kernel's choice is a hash of the 4-tuple) waiting for their SYN-ACK.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct HeldSyns {
    /// The listener the recorder named.
    pub listener: u64,
    /// When the first arrived.
    pub since: u64,
    /// The frames they came in (device layer).
    pub dev: Vec<Unit>,
    /// The IP packets (LOCAL_IN).
    pub ip: Vec<Unit>,
}

/// A flow or a bound end in its network namespace (None: not known, a trace
/// from before SOCK records named it).
pub(crate) type NsKey = (Option<u64>, FlowKey);

/// The listeners that share a port, and the SYNs to them that wait for the
/// listener the kernel chose.
#[derive(Default)]
pub(crate) struct SharedPorts {
    /// Sockets bound to each local end (remote end unspecified).
    bound: Map<NsKey, Vec<u64>>,
    /// Sockets whose local end another socket is bound to as well.
    shared: HashSet<u64>,
    held: Map<NsKey, HeldSyns>,
}

impl SharedPorts {
    /// Socket `cookie` is bound to `key` (a flow with no remote port).
    pub fn bind(&mut self, key: NsKey, cookie: u64) {
        let socks = self.bound.entry(key).or_default();
        if socks.contains(&cookie) {
            return;
        }
        socks.push(cookie);
        if socks.len() > 1 {
            self.shared.extend(socks.iter().copied());
        }
    }

    /// Does another socket share the local end of socket `cookie`?
    pub fn is_shared(&self, cookie: u64) -> bool {
        self.shared.contains(&cookie)
    }

    /// A SYN of flow `key`, named for `listener`, waits for its SYN-ACK.
    pub fn hold(&mut self, key: NsKey, listener: u64, ts: u64, dev: Option<Unit>, ip: Unit) {
        let h = self.held.entry(key).or_insert_with(|| HeldSyns {
            listener,
            since: ts,
            ..HeldSyns::default()
        });
        h.dev.extend(dev);
        h.ip.push(ip);
    }

    /// The SYNs of flow `key`, answered by a SYN-ACK of `answered_by`: counted
    /// to it when it is a listener of the shared port, else to the listener
    /// named for them.
    pub fn answered(&mut self, key: NsKey, answered_by: u64) -> Option<HeldSyns> {
        let mut h = self.held.remove(&key)?;
        if self.is_shared(answered_by) {
            h.listener = answered_by;
        }
        Some(h)
    }

    /// SYNs that waited since before `before`: their SYN-ACK is not coming.
    pub fn unanswered(&mut self, before: u64) -> Vec<HeldSyns> {
        let keys: Vec<NsKey> = self
            .held
            .iter()
            .filter(|(_, h)| h.since < before)
            .map(|(k, _)| *k)
            .collect();
        keys.iter().filter_map(|k| self.held.remove(k)).collect()
    }

    /// Every SYN still waiting (the end of the trace).
    pub fn drain(&mut self) -> Vec<HeldSyns> {
        self.held.drain().map(|(_, h)| h).collect()
    }
}

impl Analyzer {
    /// A SYN (no ACK) of flow `key` named for `cookie`, a listener that shares
    /// its port: at LOCAL_IN it waits, with its frame, for its SYN-ACK. True:
    /// nothing is to be counted now.
    pub(super) fn syn_to_shared_port(
        &mut self,
        cookie: u64,
        k: u16,
        p: &IpPacket,
        key: Option<FlowKey>,
    ) -> bool {
        let Some(key) = key else { return false };
        if p.proto != 6
            || p.flags & (TCP_SYN | TCP_ACK) != TCP_SYN
            || !self.shared.is_shared(cookie)
        {
            return false;
        }
        if k != kind::IP_LOCAL_IN {
            return true; // its frame is taken at LOCAL_IN
        }
        let dev = match self.dev_rx.get_mut(&p.pkt) {
            Some(d) if d.ts <= p.ts && !d.claimed => {
                d.claimed = true;
                Some((d.ts, d.len))
            }
            _ => None,
        };
        let ns = self.netns_of(cookie);
        self.shared
            .hold((ns, key), cookie, p.ts, dev, (p.ts, p.len));
        true
    }

    /// A SYN-ACK of flow `key` (seen from the local end) left from `cookie`.
    pub(super) fn syn_answered(&mut self, key: FlowKey, cookie: u64) {
        let ns = self.netns_of(cookie);
        if let Some(h) = self.shared.answered((ns, key), cookie) {
            self.count_held(h);
        }
    }

    /// Held SYNs counted to their listener.
    pub(super) fn count_held(&mut self, h: HeldSyns) {
        let c = self.conn(h.listener, h.since);
        c.listener = true;
        for (t, len) in h.dev {
            c.layers[DEV][IN].unit(t, len);
        }
        for (t, len) in h.ip {
            c.layers[IP][IN].unit(t, len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;

    fn flow(rport: u16) -> FlowKey {
        FlowKey {
            local: IpAddr::from([10, 0, 0, 2]),
            lport: 80,
            remote: IpAddr::from([10, 0, 0, 1]),
            rport,
            proto: 6,
        }
    }

    fn key(rport: u16) -> NsKey {
        (Some(1), flow(rport))
    }

    fn port() -> NsKey {
        (
            Some(1),
            FlowKey {
                remote: IpAddr::from([0u8; 4]),
                rport: 0,
                ..flow(0)
            },
        )
    }

    #[test]
    fn a_port_is_shared_from_its_second_socket_on() {
        let mut s = SharedPorts::default();
        s.bind(port(), 7);
        s.bind(port(), 7);
        assert!(!s.is_shared(7), "one socket, announced twice");
        s.bind(port(), 8);
        assert!(s.is_shared(7) && s.is_shared(8));
        assert!(!s.is_shared(9));
    }

    #[test]
    fn a_syn_goes_to_the_listener_that_answered_it() {
        let mut s = SharedPorts::default();
        s.bind(port(), 7);
        s.bind(port(), 8);
        s.hold(key(1000), 7, 10, Some((9, 74)), (10, 60));
        s.hold(key(1000), 7, 20, None, (20, 60));
        s.hold(key(1001), 7, 11, Some((11, 74)), (11, 60));
        let h = s.answered(key(1000), 8).unwrap();
        assert_eq!(
            h,
            HeldSyns {
                listener: 8,
                since: 10,
                dev: vec![(9, 74)],
                ip: vec![(10, 60), (20, 60)],
            }
        );
        assert_eq!(s.answered(key(1000), 8), None, "taken once");
        // An answer from a socket that does not share the port (not a
        // listener of it) leaves the SYN where the recorder put it.
        assert_eq!(s.answered(key(1001), 99).unwrap().listener, 7);
    }

    #[test]
    fn unanswered_syns_stay_with_the_named_listener() {
        let mut s = SharedPorts::default();
        s.hold(key(1), 7, 10, None, (10, 60));
        s.hold(key(2), 7, 50, None, (50, 60));
        let old = s.unanswered(20);
        assert_eq!(old.len(), 1);
        assert_eq!((old[0].listener, old[0].since), (7, 10));
        assert_eq!(s.drain().len(), 1);
        assert!(s.drain().is_empty());
    }
}
