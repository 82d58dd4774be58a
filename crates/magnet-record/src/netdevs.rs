//! The network interfaces of every network namespace the recorder can enter, for
//! the trace header: device events carry only an ifindex.

use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;

use magnet_trace::Interface;

/// Every network namespace this process can name: its own, those of every
/// process (/proc/PID/ns/net) and every named one (/run/netns), each once, by
/// inode, with a path that enters it (the own one first by that path).
pub fn namespaces() -> BTreeMap<u64, std::path::PathBuf> {
    let mut paths: BTreeMap<u64, std::path::PathBuf> = BTreeMap::new();
    let mut add = |p: std::path::PathBuf| {
        if let Ok(m) = std::fs::metadata(&p) {
            paths.entry(m.ino()).or_insert(p);
        }
    };
    add("/proc/self/ns/net".into());
    if let Ok(d) = std::fs::read_dir("/run/netns") {
        for e in d.flatten() {
            add(e.path());
        }
    }
    if let Ok(d) = std::fs::read_dir("/proc") {
        for e in d.flatten() {
            if e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
            {
                add(e.path().join("ns/net"));
            }
        }
    }
    paths
}

/// `record --netns NS`: the inode of the network namespace `NS` names:
/// `self` (the recorder's), an inode number (`4026531840`, or `net:[…]` as
/// `readlink /proc/PID/ns/net` prints it), a path to a namespace file
/// (`/proc/PID/ns/net`, `/run/netns/NAME`) or a name `ip netns add` made.
/// The error is one line saying what was wrong and what to give instead
/// (the caller names the option).
pub fn netns_inode(spec: &str) -> Result<u64, String> {
    const WHAT: &str = "give `self`, a name from `ip netns list`, /proc/PID/ns/net, /run/netns/NAME or an inode number from `lsns -t net`";
    let spec = spec.trim();
    let number = spec
        .strip_prefix("net:[")
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or(spec);
    if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) {
        let ino: u64 = number
            .parse()
            .map_err(|_| "not an inode number".to_string())?;
        return if namespaces().contains_key(&ino) {
            Ok(ino)
        } else {
            Err(format!(
                "no process holds network namespace net:[{ino}] and none under /run/netns is it (`lsns -t net` lists them)"
            ))
        };
    }
    let path = match spec {
        "self" => std::path::PathBuf::from("/proc/self/ns/net"),
        s if s.contains('/') => std::path::PathBuf::from(s),
        "" => return Err(format!("empty ({WHAT})")),
        name => {
            let p = std::path::Path::new("/run/netns").join(name);
            if !p.exists() {
                return Err(format!(
                    "no network namespace of that name under /run/netns ({WHAT})"
                ));
            }
            p
        }
    };
    let file = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    // NS_GET_NSTYPE (linux/nsfs.h): the namespace type of an nsfs file, an
    // error for any other file.
    const NS_GET_NSTYPE: libc::c_ulong = 0xb703;
    use std::os::fd::AsRawFd;
    // SAFETY: NS_GET_NSTYPE takes no argument; the descriptor is open.
    let kind = unsafe { libc::ioctl(file.as_raw_fd(), NS_GET_NSTYPE as _) };
    if kind != libc::CLONE_NEWNET {
        return Err(format!(
            "{} is not a network namespace ({WHAT})",
            path.display()
        ));
    }
    file.metadata().map(|m| m.ino()).map_err(|e| e.to_string())
}

/// Interfaces of every namespace [`namespaces`] names. A namespace that cannot
/// be entered is left out; this never fails.
pub fn all_interfaces() -> Vec<Interface> {
    interfaces_of(namespaces())
}

/// Interfaces of the namespaces `paths` enter (inode → path).
fn interfaces_of(paths: BTreeMap<u64, std::path::PathBuf>) -> Vec<Interface> {
    let mut out = Vec::new();
    for (ino, path) in paths {
        // setns() changes only the calling thread: a short-lived one per namespace.
        let got = std::thread::spawn(move || -> Option<Vec<(u32, String)>> {
            let f = std::fs::File::open(&path).ok()?;
            nix::sched::setns(f.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).ok()?;
            let list = nix::net::if_::if_nameindex().ok()?;
            Some(
                list.iter()
                    .map(|i| (i.index(), i.name().to_string_lossy().into_owned()))
                    .collect(),
            )
        })
        .join()
        .ok()
        .flatten();
        for (ifindex, name) in got.unwrap_or_default() {
            out.push(Interface {
                netns: ino,
                ifindex,
                name,
                later: false,
            });
        }
    }
    out
}

/// Devices made during a recording, for the END block: device events carry
/// only an ifindex, and a device made after the header was written (a tun
/// device a test opens, a container's veth) would otherwise have no name.
/// [`DeviceWatch::tick`] rescans every namespace's devices; with many
/// namespaces it rescans less often (each scan enters every namespace), and a
/// device made and gone between two scans stays unnamed.
pub struct DeviceWatch {
    seen: std::collections::BTreeSet<(u64, u32, String)>,
    later: Vec<Interface>,
    ticks: u64,
    /// Ticks between scans: one per 16 namespaces of the last scan.
    every: u64,
}

impl DeviceWatch {
    /// Watches for devices not among `at_start` (the header's).
    pub fn new(at_start: &[Interface]) -> Self {
        let namespaces: std::collections::BTreeSet<u64> =
            at_start.iter().map(|i| i.netns).collect();
        DeviceWatch {
            seen: at_start
                .iter()
                .map(|i| (i.netns, i.ifindex, i.name.clone()))
                .collect(),
            later: Vec::new(),
            ticks: 0,
            every: Self::every(namespaces.len()),
        }
    }

    fn every(namespaces: usize) -> u64 {
        (namespaces as u64 / 16).max(1)
    }

    /// Called about once a second: scans when it is time to.
    pub fn tick(&mut self) {
        self.ticks += 1;
        if self.ticks % self.every == 0 {
            self.scan();
        }
    }

    /// Lists every namespace's devices now, keeping the new ones.
    pub fn scan(&mut self) {
        let paths = namespaces();
        self.every = Self::every(paths.len());
        for i in interfaces_of(paths) {
            if self.seen.insert((i.netns, i.ifindex, i.name.clone())) {
                self.later.push(i);
            }
        }
    }

    /// The devices found that the header did not list.
    pub fn later(&self) -> &[Interface] {
        &self.later
    }
}
