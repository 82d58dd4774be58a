//! Multi-host topologies built from [`Netns`] and [`Veth`]: a routed chain and a
//! bridged rack.

use std::net::Ipv4Addr;

use crate::link::{if_name, ifindex};
use crate::netns::next_id;
use crate::{ip, run, End, Netns, Result, Side, Subnet, Veth};

/// Hosts in a line, `hosts[0] → hosts[1] → … → hosts[n-1]`, one veth /24 per hop,
/// forwarding on in the relays and static routes everywhere, so that every host
/// reaches every other (e.g. A → B → C → D for a TCP relay chain).
///
/// `links[i]` joins `hosts[i]` (its `a` end) to `hosts[i+1]` (its `b` end).
pub struct Chain {
    // Links are declared first so they are dropped before the namespaces.
    pub links: Vec<Veth>,
    pub hosts: Vec<Netns>,
}

impl Chain {
    /// A chain of `n_hosts` (≥ 2) new namespaces.
    pub fn new(n_hosts: usize) -> Result<Chain> {
        assert!(n_hosts >= 2, "a chain needs two hosts");
        let hosts = (0..n_hosts)
            .map(|_| Netns::new())
            .collect::<Result<Vec<_>>>()?;
        let links = hosts
            .windows(2)
            .map(|w| Veth::pair(Side::Ns(&w[0]), Side::Ns(&w[1])))
            .collect::<Result<Vec<_>>>()?;
        let chain = Chain { links, hosts };
        for (i, host) in chain.hosts.iter().enumerate() {
            if i > 0 && i + 1 < n_hosts {
                host.set_forwarding(true)?;
            }
            // Every subnet not directly attached goes via the neighbour on its side.
            for (j, link) in chain.links.iter().enumerate() {
                let via = if j > i {
                    chain.links[i].b().addr()
                } else if j + 1 < i {
                    chain.links[i - 1].a().addr()
                } else {
                    continue;
                };
                let dst = link.subnet().to_string();
                run(&mut ip(
                    Some(host),
                    &["route", "add", &dst, "via", &via.to_string()],
                ))?;
            }
        }
        Ok(chain)
    }

    /// Host `i`.
    pub fn host(&self, i: usize) -> &Netns {
        &self.hosts[i]
    }

    /// An address of host `i`: the end of its right-hand link, or for the last host the
    /// end of its left-hand one.
    pub fn addr(&self, i: usize) -> Ipv4Addr {
        self.end(i).addr()
    }

    /// The interface of host `i` its `addr` is on.
    pub fn end(&self, i: usize) -> &End {
        if i < self.links.len() {
            self.links[i].a()
        } else {
            self.links[i - 1].b()
        }
    }
}

/// A rack: one switch namespace holding a Linux bridge, and hosts each joined to it by
/// a veth, all on one /24. The last host is the receiver, the others are senders
/// (e.g. 3 senders + 1 receiver for incast).
pub struct Rack {
    // Ports are dropped before the namespaces they live in.
    ports: Vec<Veth>,
    bridge: String,
    pub switch: Netns,
    pub hosts: Vec<Netns>,
}

impl Rack {
    /// A rack with `senders` senders and one receiver, host `i` at `.i+1`.
    pub fn new(senders: usize) -> Result<Rack> {
        let switch = Netns::new()?;
        let hosts = (0..=senders)
            .map(|_| Netns::new())
            .collect::<Result<Vec<_>>>()?;
        let subnet = Subnet::allocate(None)?;
        let bridge = if_name(next_id(), "br")?;
        run(&mut ip(
            Some(&switch),
            &["link", "add", "name", &bridge, "type", "bridge"],
        ))?;
        run(&mut ip(Some(&switch), &["link", "set", &bridge, "up"]))?;
        let mut rack = Rack {
            ports: Vec::new(),
            bridge,
            switch,
            hosts,
        };
        for i in 0..rack.hosts.len() {
            let host_no = u32::try_from(i).expect("few hosts") + 1;
            let port = Veth::build(
                Side::Ns(&rack.hosts[i]),
                Side::Ns(&rack.switch),
                Some(subnet),
                Some(host_no),
                None,
            )?;
            let name = port.b().name().to_string();
            rack.ports.push(port);
            run(&mut ip(
                Some(&rack.switch),
                &["link", "set", &name, "master", &rack.bridge],
            ))?;
        }
        // ifindex of the bridge is checked here so a broken bridge fails at setup.
        ifindex(Some(&rack.switch), &rack.bridge)?;
        Ok(rack)
    }

    /// Host `i`'s interface (address, name, namespace).
    pub fn host(&self, i: usize) -> &End {
        self.ports[i].a()
    }

    /// The senders' interfaces.
    pub fn senders(&self) -> Vec<&End> {
        self.ports[..self.ports.len() - 1]
            .iter()
            .map(Veth::a)
            .collect()
    }

    /// The receiver's interface.
    pub fn receiver(&self) -> &End {
        self.ports.last().expect("a rack has a receiver").a()
    }

    /// The switch-side port (in `switch`, enslaved to the bridge) of host `i`: where
    /// to capture or shape what the switch forwards to that host.
    pub fn port(&self, i: usize) -> &End {
        self.ports[i].b()
    }

    /// The bridge's name, in the `switch` namespace.
    pub fn bridge(&self) -> &str {
        &self.bridge
    }
}
