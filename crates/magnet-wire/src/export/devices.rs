//! Which device a frame is on: its network namespace (device events carry
//! none), and its interface block's name and description.

use std::collections::HashMap;
use std::io::Write;
use std::net::IpAddr;

use magnet_pcap::linktype;
use magnet_trace::catalog::kind;
use magnet_trace::Interface;

use super::{IfKey, PcapWriter, LOOPBACK_IFINDEX};
use crate::ifaces;
use crate::kernel::{Hop, KPacket, Kernel};

/// The one network namespace whose sockets have `addr` as their local
/// address (loopback addresses are every namespace's: none).
fn address_netns(k: &Kernel, addr: IpAddr) -> Option<u64> {
    if addr.is_loopback() || addr.is_unspecified() {
        return None;
    }
    let local = k
        .senders
        .iter()
        .filter(|(f, _)| f.0 == addr)
        .chain(k.receivers.iter().filter(|(f, _)| f.2 == addr))
        .filter_map(|(_, c)| k.sock_netns.get(c).copied().filter(|&n| n != 0));
    let mut one = None;
    for ns in local {
        match one {
            None => one = Some(ns),
            Some(o) if o != ns => return None,
            _ => {}
        }
    }
    one
}

/// The link type, name and description of an interface block; `raw`: the
/// device's frames have no link header (a tun device).
pub(super) fn describe(
    header: Option<&magnet_trace::Header>,
    host: &str,
    key: IfKey,
    raw: bool,
) -> (u32, String, String) {
    let lt = if raw {
        linktype::RAW
    } else {
        linktype::ETHERNET
    };
    match key {
        IfKey::Dev(i, ns) => {
            let known: Vec<&magnet_trace::Interface> = header
                .map(|h| h.interfaces.iter().filter(|f| f.ifindex == i).collect())
                .unwrap_or_default();
            let exact = known.iter().find(|f| ns != 0 && f.netns == ns);
            // A device of a known namespace that the header does not list came
            // later: another namespace's device of that ifindex is not it.
            let name = match exact {
                Some(f) => Some(f.name.as_str()),
                None if ns != 0 => None,
                None => header.and_then(|h| h.interface_name(i)),
            };
            let list = known
                .iter()
                .map(|f| format!("{} in netns {}", f.name, f.netns))
                .collect::<Vec<_>>()
                .join(", ");
            match name {
                Some(name) => (
                    lt,
                    name.to_owned(),
                    match exact {
                        Some(f) => format!(
                            "{host}: {name}, ifindex {i}, netns {}{}",
                            f.netns,
                            if f.later { " (made during the recording)" } else { "" }
                        ),
                        None => format!("{host}: {name}, ifindex {i} ({list})"),
                    },
                ),
                None if known.is_empty() || ns != 0 => (
                    lt,
                    format!("ifindex{i}"),
                    format!("{host}: device ifindex {i}{} (not among the interfaces when the recording started)",
                        if ns != 0 { format!(" in netns {ns}") } else { String::new() }),
                ),
                None => (
                    lt,
                    format!("ifindex{i}"),
                    format!("{host}: device ifindex {i}: one of {list} (its events name no socket to tell the namespace)"),
                ),
            }
        }
        IfKey::Ip(i) => (
            linktype::RAW,
            format!("ip-ifindex{i}"),
            format!("{host}: IP layer of ifindex {i} (the trace has no device events for these packets)"),
        ),
    }
}

impl<W: Write> PcapWriter<W> {
    /// Device events carry no namespace: a hop's socket tells it (a transmit's
    /// socket, a receive's flow socket, both in the device's namespace); a hop
    /// without one takes the only namespace its ifindex was seen in with a socket.
    pub(super) fn learn_ns(&mut self, k: &Kernel, p: &KPacket) {
        for h in &p.hops {
            if matches!(h.kind, kind::DEV_START_XMIT | kind::DEV_RX) {
                if let Some(&ns) = k.sock_netns.get(&h.cookie).filter(|&&n| n != 0) {
                    self.seen_ns.entry(h.ifindex).or_default().insert(ns);
                }
            }
        }
    }

    /// The namespace of the device of hop `hi`: its own socket's (a transmit's
    /// socket, a receive's flow socket: both in the device's namespace; a
    /// device the header does not list came later there). Without one: the
    /// socket that sent (outbound) or received the packet by its flow (the
    /// handshake frames a listener took, which no hop names), else the only
    /// namespace its ifindex was seen in with a socket, each only where the
    /// trace lists such a device (a forwarded packet's sockets are elsewhere),
    /// else the only namespace the trace lists its ifindex in; 0 if none.
    pub(super) fn device_netns(
        &mut self,
        k: &Kernel,
        p: &KPacket,
        hi: usize,
        outbound: bool,
    ) -> u64 {
        let h = &p.hops[hi];
        let ns_of = |c: u64| k.sock_netns.get(&c).copied().filter(|&n| n != 0);
        let known = ifaces::known(k.header.as_ref());
        if is_forward(p, hi, outbound) {
            return forward_netns(known, p, hi, outbound);
        }
        if let Some(ns) = ns_of(h.cookie).filter(|_| !h.other_netns) {
            return ns;
        }
        let flow = match (outbound, h.other_netns) {
            (_, true) => 0,
            (true, false) => k.sender_of(p, hi),
            (false, false) => k.receiver_at(p, hi),
        };
        let ns = ns_of(flow).or_else(|| {
            self.seen_ns
                .get(&h.ifindex)
                .filter(|s| s.len() == 1)
                .and_then(|s| s.iter().next().copied())
        });
        let found = ifaces::device_netns(known, ns, h.ifindex);
        if found != 0 {
            return found;
        }
        // A frame no socket names (a SYN to a port nobody listens on, the
        // reset that answers it): the same packet's sighting in the other
        // direction on the same ifindex was on the other end of the link, so
        // of two devices with that ifindex, this is the one it was not.
        let other_end = p.hops.iter().find_map(|o| {
            let opposite = matches!(
                (h.kind, o.kind),
                (kind::DEV_RX, kind::DEV_START_XMIT) | (kind::DEV_START_XMIT, kind::DEV_RX)
            );
            (opposite && !o.other_netns && o.ifindex == h.ifindex && o.ifindex != LOOPBACK_IFINDEX)
                .then(|| ns_of(o.cookie))
                .flatten()
        });
        let mut rest = known
            .iter()
            .filter(|f| f.ifindex == h.ifindex && Some(f.netns) != other_end);
        if let (Some(_), Some(only), None) = (other_end, rest.next(), rest.next()) {
            return only.netns;
        }
        // Else the namespace whose sockets hold the packet's local address
        // (its destination on receive, its source on transmit), when only one
        // namespace's do.
        let local = p.ip.map(|ip| if outbound { ip.saddr } else { ip.daddr });
        // (Looked up once per address while the flows the model knows stay as
        // they are: a trace of many such frames is not read flow by flow each.)
        let flows = k.senders.len() + k.receivers.len();
        if self.address_ns.0 != flows {
            self.address_ns = (flows, HashMap::new());
        }
        let ns = local.and_then(|a| {
            *self
                .address_ns
                .1
                .entry(a)
                .or_insert_with(|| address_netns(k, a))
        });
        let found = ifaces::device_netns(known, ns, h.ifindex);
        if ns.is_some_and(|n| n == found) {
            found
        } else {
            0
        }
    }
}

/// A device sighting between the packet's first transmit and its last receive
/// is a forward (a router namespace took it in on one device and sent it on
/// from another): the sockets its hop names are the ends', elsewhere.
fn is_forward(p: &KPacket, hi: usize, outbound: bool) -> bool {
    let is_dev = |o: &Hop| matches!(o.kind, kind::DEV_START_XMIT | kind::DEV_RX);
    let first = p.hops.iter().position(is_dev) == Some(hi);
    let last = p.hops.iter().rposition(is_dev) == Some(hi);
    !(outbound && first || !outbound && last)
}

/// A forward's namespace: the one that has both its devices (this hop's and
/// the receive it came in by, or the transmit it went on by); 0 unless
/// exactly one does.
fn forward_netns(known: &[Interface], p: &KPacket, hi: usize, outbound: bool) -> u64 {
    let h = &p.hops[hi];
    let partner = if outbound {
        p.hops[..hi].iter().rev().find(|o| o.kind == kind::DEV_RX)
    } else {
        p.hops[hi + 1..]
            .iter()
            .find(|o| o.kind == kind::DEV_START_XMIT)
    };
    let Some(partner) = partner else { return 0 };
    let mut both = known.iter().filter(|f| {
        f.ifindex == h.ifindex
            && known
                .iter()
                .any(|g| g.netns == f.netns && g.ifindex == partner.ifindex)
    });
    match (both.next(), both.next()) {
        (Some(only), None) => only.netns,
        _ => 0,
    }
}
