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

/// Interfaces of every namespace [`namespaces`] names. A namespace that cannot
/// be entered is left out; this never fails.
pub fn all_interfaces() -> Vec<Interface> {
    let paths = namespaces();
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
            });
        }
    }
    out
}
