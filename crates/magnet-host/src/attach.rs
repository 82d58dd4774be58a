//! Attach helpers libbpf-rs lacks or makes awkward: netfilter links that find a
//! free priority, TCX links, and a clsact qdisc that is removed only by whoever
//! created it.

use std::os::fd::{AsRawFd, RawFd};
use std::ptr::NonNull;

use libbpf_rs::{AsRawLibbpf, Link, NetfilterOpts};

/// Why a link could not be made.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error(transparent)]
    Bpf(#[from] libbpf_rs::Error),
    #[error("no free netfilter priority near {priority}: {last}")]
    NoFreePriority { priority: i32, last: String },
}

/// A netfilter link at `priority`, or the nearest free priority towards the
/// middle: the kernel allows one BPF program per priority and hook (EBUSY), and
/// another recorder (or another tool) may hold it.
pub fn attach_netfilter(
    prog: &libbpf_rs::ProgramMut<'_>,
    pf: i32,
    hooknum: i32,
    priority: i32,
) -> Result<Link, AttachError> {
    let step = if priority > 0 { -1 } else { 1 };
    let mut last = None;
    for i in 0..64 {
        let opts = NetfilterOpts {
            protocol_family: pf,
            hooknum,
            priority: priority + i * step,
            ..Default::default()
        };
        match prog.attach_netfilter_with_opts(opts) {
            Ok(l) => return Ok(l),
            Err(e) if is_busy(&e) => last = Some(e),
            Err(e) => return Err(e.into()),
        }
    }
    Err(AttachError::NoFreePriority {
        priority,
        last: last.map(|e| e.to_string()).unwrap_or_default(),
    })
}

/// Whether libbpf said EBUSY.
pub fn is_busy(e: &libbpf_rs::Error) -> bool {
    // libbpf-rs keeps the errno in an inner error that is not an io::Error in
    // the source chain; its alternate display does include "(os error N)".
    format!("{e:#}").contains(&format!("(os error {})", libc::EBUSY))
}

/// A clsact qdisc on one interface, as libbpf's tc hook names it.
#[derive(Debug)]
pub struct ClsactQdisc {
    ifindex: u32,
}

impl ClsactQdisc {
    fn hook(&self) -> libbpf_sys::bpf_tc_hook {
        libbpf_sys::bpf_tc_hook {
            sz: std::mem::size_of::<libbpf_sys::bpf_tc_hook>() as libbpf_sys::size_t,
            ifindex: self.ifindex as i32,
            attach_point: libbpf_sys::BPF_TC_INGRESS | libbpf_sys::BPF_TC_EGRESS,
            ..Default::default()
        }
    }

    /// Creates the clsact qdisc on `ifindex`: `Some` if this call created it,
    /// `None` if one was already there (someone else's, left alone).
    pub fn create(ifindex: u32) -> Result<Option<ClsactQdisc>, std::io::Error> {
        let q = ClsactQdisc { ifindex };
        let mut hook = q.hook();
        // SAFETY: a fully initialised hook struct of the size libbpf expects.
        let rc = unsafe { libbpf_sys::bpf_tc_hook_create(&mut hook) };
        match rc {
            0 => Ok(Some(q)),
            rc if -rc == libc::EEXIST => Ok(None),
            rc => Err(std::io::Error::from_raw_os_error(-rc)),
        }
    }

    /// Removes the qdisc (with every filter on it).
    pub fn destroy(self) -> Result<(), std::io::Error> {
        let mut hook = self.hook();
        // SAFETY: as in `create`.
        let rc = unsafe { libbpf_sys::bpf_tc_hook_destroy(&mut hook) };
        match rc {
            0 => Ok(()),
            rc => Err(std::io::Error::from_raw_os_error(-rc)),
        }
    }
}

/// A TCX link (Linux 6.6+) of `prog` on `ifindex`, in the direction the
/// program's attach type says.
pub fn attach_tcx(prog: &libbpf_rs::ProgramMut<'_>, ifindex: u32) -> Result<Link, std::io::Error> {
    let opts = libbpf_sys::bpf_tcx_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_tcx_opts>() as libbpf_sys::size_t,
        ..Default::default()
    };
    // SAFETY: the program is loaded and outlives the link (both live in the
    // skeleton for the whole run); libbpf returns NULL and sets errno on failure.
    let ptr = unsafe {
        libbpf_sys::bpf_program__attach_tcx(prog.as_libbpf_object().as_ptr(), ifindex as i32, &opts)
    };
    match NonNull::new(ptr) {
        // SAFETY: a link fresh from libbpf, owned by nobody else.
        Some(p) => Ok(unsafe { Link::from_ptr(p) }),
        None => Err(std::io::Error::last_os_error()),
    }
}

/// At most this many threads release links at once.
const DETACH_THREADS: usize = 32;

/// Releases every link at once, on threads of their own. Releasing the last
/// perf-event link of a tracepoint (the syscall tracepoints: one per call's
/// entry and exit) waits for the kernel's tracepoint grace periods
/// (`tracepoint_synchronize_unregister`, 60–80 ms on the 6.18 VM): the
/// recorder's 24 such links, released one after another, held the end of
/// every recording for 1.7 s. Released together they overlap only in part
/// (the kernel holds `event_mutex` across part of each release): the 24 take
/// 0.7–1.0 s. Where a thread cannot be made, its links are released here.
pub fn detach_together(links: Vec<Link>) {
    if links.len() < 2 {
        return;
    }
    let mut groups: Vec<Vec<Link>> = (0..DETACH_THREADS.min(links.len()))
        .map(|_| Vec::new())
        .collect();
    let n = groups.len();
    for (i, l) in links.into_iter().enumerate() {
        groups[i % n].push(l);
    }
    std::thread::scope(|s| {
        for g in groups {
            // The closure owns the group: a thread that could not be made
            // drops it with the error, here.
            let _ = std::thread::Builder::new()
                .name("magnet-detach".into())
                .spawn_scoped(s, move || drop(g));
        }
    });
}

/// Releases `links` in processes of their own, so that whoever holds them can
/// go on (a recording's end, its summary, its exit) without waiting for the
/// kernel's grace periods (see [`detach_together`]: 1.2–2 s for a recording's
/// syscall tracepoints, partly serialised by the kernel). The caller must
/// have stopped the programs first: they stay attached until those processes
/// are done, a second or two.
///
/// A grandchild (its parent exits at once: init adopts it, nobody waits for
/// it), named `magnet-detach`, keeps only the links' descriptors and
/// `after`'s, closing every other one first (a pipe it kept would hold up a
/// reader waiting for its end), and releases the links as [`release_links`]
/// says. Where no process can be made, the links are released here.
pub fn detach_in_background(links: Vec<Link>, after: &[RawFd]) {
    use std::os::fd::AsFd;
    if links.is_empty() {
        return;
    }
    // Closed by this process once its copies of the links are: the
    // grandchild reads its end until then (close-on-exec: no command this
    // process starts later holds it).
    let mut done: [RawFd; 2] = [-1; 2];
    // SAFETY: pipe2 fills the two descriptors or fails.
    if unsafe { libc::pipe2(done.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return detach_together(links);
    }
    let [wait_end, done_end] = done;
    let first: Vec<RawFd> = links.iter().map(|l| l.as_fd().as_raw_fd()).collect();
    let mut kept: Vec<RawFd> = first.iter().chain(after).copied().collect();
    kept.push(wait_end);
    kept.sort_unstable();
    kept.dedup();
    // The name as prctl takes it: at most 15 bytes and a NUL.
    let name = *b"magnet-detach\0";
    // SAFETY: fork in a process that may have other threads: the child calls
    // only async-signal-safe system calls (fork, prctl, close, close_range,
    // read, _exit) on data made before the fork, never the allocator.
    match unsafe { libc::fork() } {
        -1 => {
            // SAFETY: the pipe made above, used by nobody else.
            unsafe {
                libc::close(wait_end);
                libc::close(done_end);
            }
            detach_together(links)
        }
        0 => unsafe {
            if libc::fork() == 0 {
                libc::prctl(libc::PR_SET_NAME, name.as_ptr());
                close_all_but(&kept);
                release_links(&first, after, wait_end);
            }
            libc::_exit(0)
        },
        child => {
            let mut status = 0;
            // SAFETY: waits for the child made above, which exits at once;
            // then closes the pipe made above, once this process's copies of
            // the links are closed (the grandchild's keep them attached).
            unsafe {
                libc::close(wait_end);
                libc::waitpid(child, &mut status, 0);
                drop(links);
                libc::close(done_end);
            }
        }
    }
}

/// At most this many processes release a recording's links at once.
const RELEASERS: usize = 8;

/// Releases `links` (this process's copies of descriptors `wait_end`'s holder
/// had) once the holder has closed its own (`wait_end` at its end), then
/// closes `after`; never returns. A link is released by the last close of
/// its descriptor, and released one after another the kernel takes a grace
/// period or two each (30–80 ms; over 2 s for a recording's 28): so the
/// links are split between [`RELEASERS`] processes forked here, each the last
/// holder of its share. Each first closes the others' shares (quick: this
/// process still holds them) and says so; then this process closes its
/// copies of their shares (quick: they hold them), lets them go and releases
/// what no process took; each also waits for `wait_end`. `after` is closed
/// by every one of them after its links: by the last, after them all.
///
/// # Safety
/// Only in a child of a fork, holding these descriptors: it uses only
/// async-signal-safe calls and no allocation.
unsafe fn release_links(links: &[RawFd], after: &[RawFd], wait_end: RawFd) -> ! {
    let k = links.len().clamp(1, RELEASERS);
    let (mut go, mut ready) = ([-1; 2], [-1; 2]);
    let mut made = 0;
    if libc::pipe2(go.as_mut_ptr(), 0) == 0 && libc::pipe2(ready.as_mut_ptr(), 0) == 0 {
        for i in 0..k {
            match libc::fork() {
                0 => {
                    libc::close(go[1]);
                    libc::close(ready[0]);
                    close_share(links, k, |s| s != i);
                    libc::close(ready[1]);
                    wait_for_end(go[0]);
                    wait_for_end(wait_end);
                    close_share(links, k, |s| s == i);
                    close_share(after, 1, |_| true);
                    libc::_exit(0);
                }
                -1 => break,
                _ => made += 1,
            }
        }
        libc::close(ready[1]);
        libc::close(go[0]);
        wait_for_end(ready[0]);
        close_share(links, k, |s| s < made);
        libc::close(go[1]);
    }
    wait_for_end(wait_end);
    close_share(links, k, |s| s >= made);
    close_share(after, 1, |_| true);
    libc::_exit(0)
}

/// Closes the descriptors of `fds` whose share (index mod `k`) `mine` takes.
unsafe fn close_share(fds: &[RawFd], k: usize, mine: impl Fn(usize) -> bool) {
    for (j, &fd) in fds.iter().enumerate() {
        if mine(j % k) {
            libc::close(fd);
        }
    }
}

/// Returns at the end of the pipe `fd` (every writer gone), or an error.
unsafe fn wait_for_end(fd: RawFd) {
    let mut byte = 0u8;
    loop {
        let n = libc::read(fd, (&mut byte as *mut u8).cast(), 1);
        if n == 0 || (n < 0 && *libc::__errno_location() != libc::EINTR) {
            return;
        }
    }
}

/// Closes every descriptor of this process but `kept` (sorted): the gaps
/// with close_range (5.9+), else one by one up to the soft limit.
///
/// # Safety
/// Closes descriptors others in this process may still use: only for a
/// child that is about to exit.
unsafe fn close_all_but(kept: &[RawFd]) {
    let mut from: u32 = 0;
    for &k in kept.iter().chain(std::iter::once(&RawFd::MAX)) {
        let k = k.max(0) as u32;
        if k > from {
            let last = if k == RawFd::MAX as u32 {
                u32::MAX
            } else {
                k - 1
            };
            if libc::syscall(libc::SYS_close_range, from, last, 0) != 0 {
                let mut lim = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
                    lim.rlim_cur.min(1 << 20) as u32
                } else {
                    1024
                };
                for fd in from..=last.min(top) {
                    libc::close(fd as RawFd);
                }
            }
        }
        from = k.saturating_add(1);
    }
}
