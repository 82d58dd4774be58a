//! What a killed sampler leaves on kernels without TCX, and its removal.
//!
//! TCX links die with their process; classic tc filters do not: a sampler
//! killed by SIGKILL leaves its two cls_bpf filters (and the clsact qdisc, if
//! it made it) on the interface, still counting. So every clsact-mode run
//! writes an owner file under `/run/magnet/sample-tc/` (`MAGNET_RUN_DIR`
//! overrides `/run/magnet`) naming exactly what it attached: its pid and the
//! pid's start time, the network namespace, the interface, the filter handle
//! (the pid: each run has its own, so runs side by side never replace each
//! other's), priority 1, the program id behind each filter, and whether it
//! made the qdisc. A clean exit removes the file with the filters.
//!
//! Every run first looks at the owner files of its own network namespace.
//! A file whose owner is gone (no such pid, or a pid with another start time)
//! is a killed run's: its filters are removed only where the filter at that
//! handle and priority still runs the recorded program (nothing else is ever
//! touched), and its qdisc only if it made it, its filters were still there,
//! no live sampler uses the interface and no other filter sits on it (a
//! netlink dump says). Files of other namespaces are left to runs in those namespaces.

use std::io::Write;
use std::path::{Path, PathBuf};

/// cls_bpf priority of the sampler's filters (the first to run).
pub const PRIORITY: u32 = 1;

/// One clsact-mode run's attachments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    /// Field 22 of /proc/PID/stat: tells a reused pid apart.
    pub start_time: u64,
    pub netns: u32,
    pub ifindex: u32,
    pub handle: u32,
    /// Whether this run created the clsact qdisc.
    pub made_qdisc: bool,
    /// Program ids behind the ingress and egress filters (0: not attached).
    pub ingress_prog: u32,
    pub egress_prog: u32,
}

/// Where owner files live.
pub fn state_dir() -> PathBuf {
    std::env::var_os("MAGNET_RUN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/run/magnet"))
        .join("sample-tc")
}

/// Start time of `pid` (clock ticks since boot), None if there is no such
/// process.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // comm may hold spaces and parentheses: fields follow the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

impl Owner {
    fn file_name(&self) -> String {
        format!("{}-{}-{}", self.netns, self.ifindex, self.pid)
    }

    fn to_text(&self) -> String {
        format!(
            "pid={} start_time={} netns={} ifindex={} handle={} priority={PRIORITY} made_qdisc={} ingress_prog={} egress_prog={}\n",
            self.pid,
            self.start_time,
            self.netns,
            self.ifindex,
            self.handle,
            u8::from(self.made_qdisc),
            self.ingress_prog,
            self.egress_prog
        )
    }

    /// Parses an owner file; None when it is not one.
    pub fn parse(text: &str) -> Option<Owner> {
        let mut o = Owner {
            pid: 0,
            start_time: 0,
            netns: 0,
            ifindex: 0,
            handle: 0,
            made_qdisc: false,
            ingress_prog: 0,
            egress_prog: 0,
        };
        let mut seen = 0;
        for kv in text.split_whitespace() {
            let (k, v) = kv.split_once('=')?;
            let n: u64 = v.parse().ok()?;
            let n32 = u32::try_from(n).ok();
            match k {
                "pid" => o.pid = n32?,
                "start_time" => o.start_time = n,
                "netns" => o.netns = n32?,
                "ifindex" => o.ifindex = n32?,
                "handle" => o.handle = n32?,
                "made_qdisc" => o.made_qdisc = n != 0,
                "ingress_prog" => o.ingress_prog = n32?,
                "egress_prog" => o.egress_prog = n32?,
                _ => continue,
            }
            seen += 1;
        }
        (seen == 8 && o.pid != 0 && o.handle != 0).then_some(o)
    }

    /// Whether the run that wrote this is still alive.
    pub fn alive(&self) -> bool {
        start_time(self.pid) == Some(self.start_time)
    }

    /// Writes the owner file (whole: a temporary name, then renamed).
    pub fn write(&self) -> std::io::Result<PathBuf> {
        let dir = state_dir();
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(self.file_name());
        let tmp = dir.join(format!(".{}.tmp", self.file_name()));
        std::fs::File::create(&tmp)?.write_all(self.to_text().as_bytes())?;
        std::fs::rename(&tmp, &path)?;
        Ok(path)
    }
}

/// Owner files of `netns` in `dir`, with their paths.
fn owners(dir: &Path, netns: u32) -> Vec<(PathBuf, Owner)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, Owner)> = rd
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| {
            let o = Owner::parse(&std::fs::read_to_string(e.path()).ok()?)?;
            (o.netns == netns).then(|| (e.path(), o))
        })
        .collect();
    out.sort_by_key(|(_, o)| o.pid);
    out
}

/// A live run other than `me` with filters on `ifindex` in `netns`.
pub fn heir(netns: u32, ifindex: u32, me: u32) -> Option<Owner> {
    owners(&state_dir(), netns)
        .into_iter()
        .map(|(_, o)| o)
        .find(|o| o.ifindex == ifindex && o.pid != me && o.alive())
}

/// Makes `o` the owner of its interface's clsact qdisc (its file says so).
pub fn inherit_qdisc(o: &Owner) {
    let mut o = o.clone();
    o.made_qdisc = true;
    let _ = o.write();
}

/// Filters on `ifindex`'s clsact qdisc (ingress and egress) as
/// (priority, handle), from a netlink dump (RTM_GETTFILTER).
pub fn clsact_filters(ifindex: u32) -> std::io::Result<Vec<(u16, u32)>> {
    use std::io::Error;
    // SAFETY: plain socket calls on a descriptor owned here and closed
    // through OwnedFd; buffers are local arrays of the lengths passed.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )
    };
    if fd < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
    let mut out = Vec::new();
    // TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS / TC_H_MIN_EGRESS)
    for (seq, parent) in [(1u32, 0xFFFF_FFF2u32), (2, 0xFFFF_FFF3)] {
        let mut req = [0u8; 36];
        req[0..4].copy_from_slice(&36u32.to_ne_bytes());
        req[4..6].copy_from_slice(&libc::RTM_GETTFILTER.to_ne_bytes());
        let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
        req[6..8].copy_from_slice(&flags.to_ne_bytes());
        req[8..12].copy_from_slice(&seq.to_ne_bytes());
        // tcmsg: family 0, ifindex, handle 0, parent, info 0
        req[20..24].copy_from_slice(&(ifindex as i32).to_ne_bytes());
        req[28..32].copy_from_slice(&parent.to_ne_bytes());
        // SAFETY: see above.
        if unsafe { libc::send(raw, req.as_ptr().cast(), req.len(), 0) } < 0 {
            return Err(Error::last_os_error());
        }
        let mut buf = vec![0u8; 1 << 16];
        'recv: loop {
            // SAFETY: see above.
            let n = unsafe { libc::recv(raw, buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                return Err(Error::last_os_error());
            }
            let mut msg = &buf[..n as usize];
            while msg.len() >= 16 {
                let u32_at =
                    |b: &[u8], i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().unwrap());
                let len = u32_at(msg, 0) as usize;
                let kind = u16::from_ne_bytes([msg[4], msg[5]]);
                if len < 16 || len > msg.len() {
                    return Err(Error::other("a malformed netlink answer"));
                }
                match kind {
                    k if k == libc::NLMSG_DONE as u16 => break 'recv,
                    k if k == libc::NLMSG_ERROR as u16 => {
                        let errno = if len >= 20 {
                            -(u32_at(msg, 16) as i32)
                        } else {
                            0
                        };
                        if errno == 0 {
                            break 'recv;
                        }
                        // No clsact qdisc there: no filters.
                        if errno == libc::EINVAL || errno == libc::ENOENT {
                            break 'recv;
                        }
                        return Err(Error::from_raw_os_error(errno));
                    }
                    k if k == libc::RTM_NEWTFILTER && len >= 36 => {
                        let handle = u32_at(msg, 24);
                        let prio = (u32_at(msg, 32) >> 16) as u16;
                        // handle 0: the classifier itself, not a filter
                        if handle != 0 {
                            out.push((prio, handle));
                        }
                    }
                    _ => {}
                }
                let step = (len + 3) & !3;
                msg = &msg[step.min(msg.len())..];
            }
        }
    }
    Ok(out)
}

/// Whether `ifindex`'s clsact qdisc holds filters other than samplers' at
/// priority 1 with one of `handles`; true too when the dump fails (then the
/// qdisc is left alone).
pub fn foreign_filters(ifindex: u32, handles: &[u32]) -> bool {
    match clsact_filters(ifindex) {
        Ok(f) => f
            .iter()
            .any(|&(prio, h)| !(u32::from(prio) == PRIORITY && handles.contains(&h))),
        Err(_) => true,
    }
}

/// The id of the loaded program behind `fd` (0 if the kernel does not say).
pub fn prog_id(fd: std::os::fd::BorrowedFd<'_>) -> u32 {
    use std::os::fd::AsRawFd;
    let mut info = libbpf_sys::bpf_prog_info::default();
    let mut len = std::mem::size_of::<libbpf_sys::bpf_prog_info>() as u32;
    // SAFETY: `info` is a zeroed bpf_prog_info of `len` bytes.
    let rc = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) };
    if rc == 0 {
        info.id
    } else {
        0
    }
}

fn tc_opts(handle: u32) -> libbpf_sys::bpf_tc_opts {
    libbpf_sys::bpf_tc_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_tc_opts>() as libbpf_sys::size_t,
        handle,
        priority: PRIORITY,
        ..Default::default()
    }
}

fn tc_hook(ifindex: u32, point: libbpf_sys::bpf_tc_attach_point) -> libbpf_sys::bpf_tc_hook {
    libbpf_sys::bpf_tc_hook {
        sz: std::mem::size_of::<libbpf_sys::bpf_tc_hook>() as libbpf_sys::size_t,
        ifindex: ifindex as i32,
        attach_point: point,
        ..Default::default()
    }
}

/// The program id of the filter at (`handle`, priority 1) on `ifindex`'s
/// `point`, if there is one.
fn filter_prog(ifindex: u32, point: libbpf_sys::bpf_tc_attach_point, handle: u32) -> Option<u32> {
    let hook = tc_hook(ifindex, point);
    let mut opts = tc_opts(handle);
    // SAFETY: both structs fully initialised with the sizes libbpf expects.
    let rc = unsafe { libbpf_sys::bpf_tc_query(&hook, &mut opts) };
    (rc == 0).then_some(opts.prog_id)
}

/// Removes the filter at (`handle`, priority 1) on `ifindex`'s `point`.
pub fn detach(ifindex: u32, point: libbpf_sys::bpf_tc_attach_point, handle: u32) -> bool {
    let hook = tc_hook(ifindex, point);
    let opts = tc_opts(handle);
    // SAFETY: as in `filter_prog`; detach wants prog_fd, prog_id and flags 0.
    unsafe { libbpf_sys::bpf_tc_detach(&hook, &opts) == 0 }
}

/// Removes what killed runs of this network namespace left. Returns one
/// line per run cleaned up, saying what was removed.
pub fn clean(netns: u32) -> Vec<String> {
    let dir = state_dir();
    let all = owners(&dir, netns);
    let mut said = Vec::new();
    for (path, o) in &all {
        if o.alive() {
            continue;
        }
        let mut removed = Vec::new();
        for (point, name, prog) in [
            (libbpf_sys::BPF_TC_INGRESS, "ingress", o.ingress_prog),
            (libbpf_sys::BPF_TC_EGRESS, "egress", o.egress_prog),
        ] {
            // Only the filter that still runs the program the dead run
            // attached: a handle reused by someone since is not ours.
            if prog != 0
                && filter_prog(o.ifindex, point, o.handle) == Some(prog)
                && detach(o.ifindex, point, o.handle)
            {
                removed.push(format!("{name} filter {:#x} (prog {prog})", o.handle));
            }
        }
        let users = all
            .iter()
            .any(|(_, x)| x.ifindex == o.ifindex && x.pid != o.pid && x.alive());
        // The qdisc only with evidence that this is the dead run's interface
        // (its filters were still there): a namespace's inode number, and so
        // an owner file, can outlive the namespace and match a new one.
        if o.made_qdisc && !removed.is_empty() && !users && !foreign_filters(o.ifindex, &[]) {
            let mut hook = tc_hook(
                o.ifindex,
                libbpf_sys::BPF_TC_INGRESS | libbpf_sys::BPF_TC_EGRESS,
            );
            // SAFETY: as above.
            if unsafe { libbpf_sys::bpf_tc_hook_destroy(&mut hook) } == 0 {
                removed.push("its clsact qdisc".to_string());
            }
        }
        let _ = std::fs::remove_file(path);
        said.push(format!(
            "removed what a killed sampler (pid {}) left on ifindex {}: {}",
            o.pid,
            o.ifindex,
            if removed.is_empty() {
                "nothing was left".to_string()
            } else {
                removed.join(", ")
            }
        ));
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_files_round_trip_and_bad_ones_are_not_owners() {
        let o = Owner {
            pid: 42,
            start_time: 123456,
            netns: 4026531840,
            ifindex: 1,
            handle: 42,
            made_qdisc: true,
            ingress_prog: 77,
            egress_prog: 78,
        };
        assert_eq!(Owner::parse(&o.to_text()), Some(o));
        assert_eq!(Owner::parse(""), None);
        assert_eq!(Owner::parse("pid=1 handle=1"), None);
        assert_eq!(Owner::parse("pid=x"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_wrong_start_time_is_not() {
        let me = std::process::id();
        let t = start_time(me).expect("own start time");
        let mut o = Owner::parse(&format!(
            "pid={me} start_time={t} netns=1 ifindex=1 handle=1 made_qdisc=0 ingress_prog=0 egress_prog=0"
        ))
        .unwrap();
        assert!(o.alive());
        o.start_time += 1;
        assert!(!o.alive());
    }
}
