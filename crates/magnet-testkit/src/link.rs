//! Veth pairs with addresses, their counters, and the qdisc/offload knobs tests turn.
//!
//! Addresses come from 10.200.0.0–10.215.255.255, one /24 per link. Traffic only ever
//! goes to the namespaces made here. A /24 only has to be unique where two of them
//! could meet: inside one process's topology (a process-wide counter sees to that) and
//! in the root namespace, shared by every test process on the machine (a file lock and
//! a scan of the root's addresses see to that).

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use nix::fcntl::{Flock, FlockArg};

use crate::netns::next_id;
use crate::{io_err, ip, run, run_in_netns, run_quiet, Error, Netns, Result};

/// Prefix of every root-visible interface name: `mgt<pid hex>-<n><suffix>`.
const IF_PREFIX: &str = "mgt";
/// Linux interface names are at most 15 bytes (IFNAMSIZ - 1).
const IFNAMSIZ_MAX: usize = 15;

/// A unique interface name. The owning pid is in it so stale ones can be reaped.
pub(crate) fn if_name(id: u32, suffix: &str) -> Result<String> {
    let name = format!("{IF_PREFIX}{:x}-{id}{suffix}", std::process::id());
    if name.len() > IFNAMSIZ_MAX {
        return Err(Error::Other(format!(
            "interface name {name} longer than {IFNAMSIZ_MAX} bytes (too many links in one process)"
        )));
    }
    Ok(name)
}

/// The pid encoded in an interface name made by [`if_name`], if it is one.
pub(crate) fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(IF_PREFIX)?;
    let (hex, _) = rest.split_once('-')?;
    u32::from_str_radix(hex, 16).ok()
}

/// Where one end of a link lives.
#[derive(Debug, Clone, Copy)]
pub enum Side<'a> {
    /// The namespace the test process runs in.
    Root,
    /// A namespace made by the test.
    Ns(&'a Netns),
}

impl<'a> From<&'a Netns> for Side<'a> {
    fn from(ns: &'a Netns) -> Self {
        Side::Ns(ns)
    }
}

impl Side<'_> {
    fn netns(&self) -> Option<&Netns> {
        match self {
            Side::Root => None,
            Side::Ns(ns) => Some(ns),
        }
    }
}

/// An IPv4 subnet: network address and prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Subnet {
    network: Ipv4Addr,
    prefix_len: u8,
}

/// Subnets handed out: 10.200.0.0/24 … 10.215.255.0/24.
const POOL_FIRST: u32 = u32::from_be_bytes([10, 200, 0, 0]) >> 8;
const POOL_SIZE: u32 = 16 * 256;

impl Subnet {
    /// A subnet; `network` is masked to `prefix_len`.
    pub fn new(network: Ipv4Addr, prefix_len: u8) -> Subnet {
        assert!(prefix_len <= 30, "a link needs at least two host addresses");
        let mask = u32::MAX
            .checked_shl(32 - u32::from(prefix_len))
            .unwrap_or(0);
        Subnet {
            network: Ipv4Addr::from(u32::from(network) & mask),
            prefix_len,
        }
    }

    pub fn network(&self) -> Ipv4Addr {
        self.network
    }

    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// The `n`th host address (1 = first usable).
    pub fn host(&self, n: u32) -> Ipv4Addr {
        assert!(
            n >= 1 && n < (1u32 << (32 - self.prefix_len)) - 1,
            "host {n} not in {self}"
        );
        Ipv4Addr::from(u32::from(self.network) + n)
    }

    pub fn contains(&self, addr: Ipv4Addr) -> bool {
        let mask = u32::MAX
            .checked_shl(32 - u32::from(self.prefix_len))
            .unwrap_or(0);
        u32::from(addr) & mask == u32::from(self.network)
    }

    /// A fresh /24 from the test pool, not used by this process before. With
    /// `root_in_use`, also skips /24s that already have an address in the root
    /// namespace (the caller holds the root lock).
    pub(crate) fn allocate(root_in_use: Option<&[Ipv4Addr]>) -> Result<Subnet> {
        // Start each process somewhere else in the pool so concurrent processes rarely
        // even try the same /24.
        static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
        let _ = NEXT.compare_exchange(
            u32::MAX,
            std::process::id().wrapping_mul(61) % POOL_SIZE,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
        for _ in 0..POOL_SIZE {
            let i = NEXT.fetch_add(1, Ordering::Relaxed) % POOL_SIZE;
            let s = Subnet::new(Ipv4Addr::from((POOL_FIRST + i) << 8), 24);
            let taken = root_in_use.is_some_and(|used| used.iter().any(|a| s.contains(*a)));
            if !taken {
                return Ok(s);
            }
        }
        Err(Error::Other(
            "test subnet pool 10.200-215.x.0/24 exhausted".into(),
        ))
    }
}

impl std::fmt::Display for Subnet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix_len)
    }
}

/// Serialises changes to the root namespace's addresses across test processes.
pub(crate) struct RootLock(#[allow(dead_code)] Flock<File>);

impl RootLock {
    pub(crate) fn acquire() -> Result<RootLock> {
        let path = "/tmp/magnet-testkit.lock";
        let file = File::options()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io_err(format!("opening {path}")))?;
        let lock = Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, e)| Error::Other(format!("flock {path}: {e}")))?;
        Ok(RootLock(lock))
    }

    /// IPv4 addresses currently configured in the root namespace.
    pub(crate) fn root_addrs(&self) -> Result<Vec<Ipv4Addr>> {
        let out = run(&mut ip(None, &["-4", "-o", "addr", "show"]))?;
        Ok(out
            .lines()
            .filter_map(|l| {
                let mut words = l.split_whitespace();
                words.find(|w| *w == "inet")?;
                words.next()?.split('/').next()?.parse().ok()
            })
            .collect())
    }
}

/// One end of a link: an interface in a namespace (or the root), with an address.
#[derive(Debug)]
pub struct End {
    netns: Option<Netns>,
    name: String,
    addr: Option<Ipv4Addr>,
    subnet: Subnet,
    ifindex: u32,
}

impl End {
    /// The interface name (unique on the machine, ≤ 15 bytes).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace the interface is in; `None` for the root namespace.
    pub fn netns(&self) -> Option<&Netns> {
        self.netns.as_ref()
    }

    /// The interface's IPv4 address. Panics for a bridge port, which has none.
    pub fn addr(&self) -> Ipv4Addr {
        self.addr
            .unwrap_or_else(|| panic!("{} has no address (bridge port)", self.name))
    }

    /// `addr:port` on this end.
    pub fn sock(&self, port: u16) -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(self.addr(), port))
    }

    /// The link's subnet.
    pub fn subnet(&self) -> Subnet {
        self.subnet
    }

    /// The interface index as seen from its own namespace.
    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    /// Byte and packet counters of this interface, now.
    pub fn counters(&self) -> Result<Counters> {
        iface_counters(self.netns(), &self.name)
    }

    /// A program run in this end's namespace.
    pub fn command(&self, program: &str) -> Command {
        crate::command(self.netns(), program)
    }

    /// See [`tbf`].
    pub fn tbf(&self, rate: &str, burst: &str, latency: &str) -> Result<()> {
        tbf(self.netns(), &self.name, rate, burst, latency)
    }

    /// See [`netem`].
    pub fn netem(&self, args: &[&str]) -> Result<()> {
        netem(self.netns(), &self.name, args)
    }

    /// See [`offloads_off`].
    pub fn offloads_off(&self) -> Result<()> {
        offloads_off(self.netns(), &self.name)
    }
}

/// A veth pair. Dropping it deletes both interfaces.
#[derive(Debug)]
pub struct Veth {
    a: End,
    b: End,
}

impl Drop for Veth {
    fn drop(&mut self) {
        // Deleting one end takes the peer with it.
        run_quiet(&mut ip(self.a.netns(), &["link", "del", &self.a.name]));
    }
}

impl Veth {
    /// A pair between `a` and `b` on a fresh /24: `a` gets `.1`, `b` gets `.2`.
    /// Both ends are up (and `lo` in each namespace, done by [`Netns::new`]).
    pub fn pair(a: Side<'_>, b: Side<'_>) -> Result<Veth> {
        Veth::build(a, b, None, Some(1), Some(2))
    }

    /// As [`Veth::pair`] on a subnet of the caller's choosing.
    pub fn pair_in(a: Side<'_>, b: Side<'_>, subnet: Subnet) -> Result<Veth> {
        Veth::build(a, b, Some(subnet), Some(1), Some(2))
    }

    /// General form: host numbers within the subnet for each end, `None` for no address
    /// (a bridge port).
    pub(crate) fn build(
        a: Side<'_>,
        b: Side<'_>,
        subnet: Option<Subnet>,
        a_host: Option<u32>,
        b_host: Option<u32>,
    ) -> Result<Veth> {
        let touches_root = a.netns().is_none() || b.netns().is_none();
        // Held until the addresses are in place, so two processes can't both pick a /24
        // that is free in the root namespace.
        let lock = touches_root.then(RootLock::acquire).transpose()?;
        let subnet = match subnet {
            Some(s) => s,
            None => {
                let used = lock.as_ref().map(RootLock::root_addrs).transpose()?;
                Subnet::allocate(used.as_deref())?
            }
        };
        let id = next_id();
        let (a_name, b_name) = (crate::link::if_name(id, "a")?, if_name(id, "b")?);

        let mut add = Command::new("ip");
        add.args(["link", "add", "name", &a_name]);
        if let Some(ns) = a.netns() {
            add.args(["netns", ns.name()]);
        }
        add.args(["type", "veth", "peer", "name", &b_name]);
        if let Some(ns) = b.netns() {
            add.args(["netns", ns.name()]);
        }
        run(&mut add)?;

        // Placeholder ends so that Drop removes the pair if configuring it fails.
        let placeholder = |side: Side<'_>, name: &str| End {
            netns: side.netns().cloned(),
            name: name.to_string(),
            addr: None,
            subnet,
            ifindex: 0,
        };
        let mut veth = Veth {
            a: placeholder(a, &a_name),
            b: placeholder(b, &b_name),
        };
        veth.a = configure(veth.a.netns.clone(), &a_name, subnet, a_host)?;
        veth.b = configure(veth.b.netns.clone(), &b_name, subnet, b_host)?;
        drop(lock);
        Ok(veth)
    }

    /// The first end (`.1`).
    pub fn a(&self) -> &End {
        &self.a
    }

    /// The second end (`.2`).
    pub fn b(&self) -> &End {
        &self.b
    }

    /// The link's subnet.
    pub fn subnet(&self) -> Subnet {
        self.a.subnet
    }
}

/// Addresses an interface, turns its IPv6 off (so it sends no ND/MLD packets that
/// would upset exact counts), brings it up and reads its ifindex.
fn configure(netns: Option<Netns>, name: &str, subnet: Subnet, host: Option<u32>) -> Result<End> {
    let ns = netns.as_ref();
    let v6 = format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6");
    let write_v6 = || {
        if std::path::Path::new(&v6).exists() {
            std::fs::write(&v6, "1")
        } else {
            Ok(())
        }
    };
    match ns {
        Some(ns) => run_in_netns(ns, write_v6)?,
        None => write_v6(),
    }
    .map_err(io_err(format!("writing {v6}")))?;

    let addr = host.map(|h| subnet.host(h));
    if let Some(addr) = addr {
        let cidr = format!("{addr}/{}", subnet.prefix_len());
        run(&mut ip(ns, &["addr", "add", &cidr, "dev", name]))?;
    }
    run(&mut ip(ns, &["link", "set", name, "up"]))?;
    let ifindex = ifindex(ns, name)?;
    Ok(End {
        netns,
        name: name.to_string(),
        addr,
        subnet,
        ifindex,
    })
}

/// The index of `iface` as seen from inside `netns`.
pub(crate) fn ifindex(netns: Option<&Netns>, iface: &str) -> Result<u32> {
    let lookup = || nix::net::if_::if_nametoindex(iface);
    match netns {
        Some(ns) => run_in_netns(ns, lookup)?,
        None => lookup(),
    }
    .map_err(|e| Error::Other(format!("if_nametoindex({iface}): {e}")))
}

/// Interface counters, as the kernel's `dev_get_stats` reports them (the same numbers
/// as `/sys/class/net/<iface>/statistics`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_packets: u64,
    pub tx_packets: u64,
}

impl Counters {
    /// Field-wise `self - earlier`, for "what did this test add".
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            rx_bytes: self.rx_bytes - earlier.rx_bytes,
            tx_bytes: self.tx_bytes - earlier.tx_bytes,
            rx_packets: self.rx_packets - earlier.rx_packets,
            tx_packets: self.tx_packets - earlier.tx_packets,
        }
    }
}

/// Counters of `iface` in `netns` (`None`: the caller's namespace).
///
/// Read from `/proc/thread-self/net/dev` on a thread inside the namespace: sysfs would
/// show the namespace it was mounted in, not the thread's, and `/proc/self` follows
/// the main thread.
pub fn iface_counters(netns: Option<&Netns>, iface: &str) -> Result<Counters> {
    let read = || std::fs::read_to_string("/proc/thread-self/net/dev");
    let text = match netns {
        Some(ns) => run_in_netns(ns, read)?,
        None => read(),
    }
    .map_err(io_err("reading /proc/thread-self/net/dev"))?;
    parse_net_dev(&text, iface)
        .ok_or_else(|| Error::Other(format!("no interface {iface} in /proc/net/dev")))
}

/// Parses one interface's line of `/proc/net/dev`: after `name:` come 8 receive
/// columns (bytes, packets, …) and 8 transmit columns (bytes, packets, …).
fn parse_net_dev(text: &str, iface: &str) -> Option<Counters> {
    text.lines().skip(2).find_map(|line| {
        let (name, rest) = line.split_once(':')?;
        if name.trim() != iface {
            return None;
        }
        let cols: Vec<u64> = rest
            .split_whitespace()
            .map(|w| w.parse().ok())
            .collect::<Option<_>>()?;
        (cols.len() >= 10).then(|| Counters {
            rx_bytes: cols[0],
            rx_packets: cols[1],
            tx_bytes: cols[8],
            tx_packets: cols[9],
        })
    })
}

fn tc(netns: Option<&Netns>, args: &[&str]) -> Command {
    let mut c = Command::new("tc");
    if let Some(ns) = netns {
        c.args(["-n", ns.name()]);
    }
    c.args(args);
    c
}

/// `tc qdisc replace dev IFACE root ARGS…` (e.g. `["fq"]`, `["pfifo", "limit", "10"]`).
pub fn qdisc(netns: Option<&Netns>, iface: &str, args: &[&str]) -> Result<()> {
    let mut all = vec!["qdisc", "replace", "dev", iface, "root"];
    all.extend_from_slice(args);
    run(&mut tc(netns, &all)).map(drop)
}

/// A token-bucket root qdisc: `tbf rate RATE burst BURST latency LATENCY`
/// (e.g. `"10mbit", "32kb", "50ms"`), to make a slow link.
pub fn tbf(
    netns: Option<&Netns>,
    iface: &str,
    rate: &str,
    burst: &str,
    latency: &str,
) -> Result<()> {
    qdisc(
        netns,
        iface,
        &["tbf", "rate", rate, "burst", burst, "latency", latency],
    )
}

/// Whether the kernel offers qdisc `kind`: tried on `lo` of a throwaway namespace,
/// because a kernel may lack it built in and have no modules to load.
pub fn qdisc_available(kind: &str) -> bool {
    let Ok(ns) = Netns::new() else {
        return false;
    };
    // Kinds that refuse to start without parameters get minimal ones.
    let args: &[&str] = match kind {
        "tbf" => &["tbf", "rate", "1mbit", "burst", "10kb", "latency", "10ms"],
        _ => &[kind],
    };
    qdisc(Some(&ns), "lo", args).is_ok()
}

/// A netem root qdisc with `args` (e.g. `["delay", "20ms"]`, `["loss", "1%"]`).
pub fn netem(netns: Option<&Netns>, iface: &str, args: &[&str]) -> Result<()> {
    let mut all = vec!["netem"];
    all.extend_from_slice(args);
    qdisc(netns, iface, &all)
}

/// `ethtool -K IFACE tso off gso off gro off`, so that what the stack hands the device
/// is what goes on the wire, one packet per segment.
pub fn offloads_off(netns: Option<&Netns>, iface: &str) -> Result<()> {
    let mut c = crate::command(netns, "ethtool");
    c.args(["-K", iface, "tso", "off", "gso", "off", "gro", "off"]);
    run(&mut c).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnet_math() {
        let s = Subnet::new(Ipv4Addr::new(10, 200, 7, 99), 24);
        assert_eq!(s.network(), Ipv4Addr::new(10, 200, 7, 0));
        assert_eq!(s.host(2), Ipv4Addr::new(10, 200, 7, 2));
        assert!(s.contains(Ipv4Addr::new(10, 200, 7, 254)));
        assert!(!s.contains(Ipv4Addr::new(10, 200, 8, 1)));
        assert_eq!(s.to_string(), "10.200.7.0/24");
    }

    #[test]
    fn allocation_skips_root_addresses_and_never_repeats() {
        let mut seen = std::collections::HashSet::new();
        let first = Subnet::allocate(None).unwrap();
        let used = [first.host(1), Ipv4Addr::new(10, 200, 0, 1)];
        for _ in 0..300 {
            let s = Subnet::allocate(Some(&used)).unwrap();
            assert!(!used.iter().any(|a| s.contains(*a)));
            assert!(seen.insert(s), "{s} handed out twice");
            let o = s.network().octets();
            assert!(o[0] == 10 && (200..216).contains(&o[1]));
        }
    }

    #[test]
    fn names_fit_and_encode_pid() {
        let n = if_name(9999, "a").unwrap();
        assert!(n.len() <= 15, "{n}");
        assert_eq!(owner_pid(&n), Some(std::process::id()));
        assert_eq!(owner_pid("eth0"), None);
    }

    #[test]
    fn net_dev_parsing() {
        let text = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0\nmgt1-0a: 5 1 0 0 0 0 0 0 7 2 0 0 0 0 0 0\n";
        assert_eq!(
            parse_net_dev(text, "mgt1-0a"),
            Some(Counters {
                rx_bytes: 5,
                rx_packets: 1,
                tx_bytes: 7,
                tx_packets: 2
            })
        );
        assert_eq!(parse_net_dev(text, "eth9"), None);
    }
}
