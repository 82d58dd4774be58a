//! The system calls whose counts are the workload's truth, called directly through
//! libc so that each one is exactly one `send`/`sendto`/`recv` syscall, plus the
//! receiver thread's entry into the peer namespace.

use std::fs::File;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use nix::sched::{setns, CloneFlags};

use crate::{io_err, Error, Result};

/// One `send(fd, buf, len, MSG_NOSIGNAL)`: returns bytes accepted. MSG_NOSIGNAL turns a
/// reset peer into an EPIPE error instead of a SIGPIPE that would kill a library user.
pub(crate) fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is a valid readable slice of buf.len() bytes for the call's duration.
    let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_NOSIGNAL) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// One `sendto(fd, buf, len, 0, to)`.
pub(crate) fn sendto(fd: RawFd, buf: &[u8], to: SocketAddrV4) -> io::Result<usize> {
    let sa = sockaddr_in(to);
    // SAFETY: buf is valid for buf.len() bytes; sa is a valid sockaddr_in of the size given.
    let n = unsafe {
        libc::sendto(
            fd,
            buf.as_ptr().cast(),
            buf.len(),
            0,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// One `recv(fd, buf, len, 0)`: bytes read, 0 at EOF.
pub(crate) fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is a valid writable slice of buf.len() bytes for the call's duration.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

fn sockaddr_in(a: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*a.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

fn setsockopt_int(fd: RawFd, level: i32, opt: i32, v: i32) -> io::Result<()> {
    // SAFETY: v is a valid c_int whose size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            (&v as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A receive buffer big enough that a burst of datagrams is not dropped before the
/// receiver thread reads it. SO_RCVBUFFORCE (root) ignores `net.core.rmem_max`;
/// without privilege fall back to SO_RCVBUF, capped by the kernel.
pub(crate) fn big_rcvbuf(sock: &impl AsRawFd, bytes: i32) {
    let fd = sock.as_raw_fd();
    if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, bytes).is_err() {
        let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, bytes);
    }
}

/// The source address the kernel would pick to reach `to` from this namespace: a
/// connected UDP socket sends nothing but gets its local address from the route.
/// Binding the real sender to it makes the summary's `local` exact.
pub(crate) fn source_addr_for(to: SocketAddrV4) -> Result<Ipv4Addr> {
    let probe = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).map_err(io_err("UDP socket"))?;
    probe
        .connect(to)
        .map_err(io_err(format!("no route to {to}")))?;
    match probe.local_addr().map_err(io_err("getsockname"))? {
        SocketAddr::V4(a) => Ok(*a.ip()),
        SocketAddr::V6(_) => unreachable!("IPv4 socket"),
    }
}

pub(crate) fn gettid() -> i32 {
    nix::unistd::gettid().as_raw()
}

/// What a receiver tells the sender once it is listening.
pub(crate) struct Ready {
    pub addr: SocketAddrV4,
    pub tid: i32,
}

/// Starts a receiver thread, in the namespace at `netns` when given. `body` gets a
/// channel on which it must announce [`Ready`] before it blocks; the returned
/// `Ready` comes from there, or the receiver's error if it failed before that.
pub(crate) fn spawn_receiver<T, F>(
    netns: Option<PathBuf>,
    body: F,
) -> Result<(Ready, JoinHandle<Result<T>>)>
where
    T: Send + 'static,
    F: FnOnce(&mpsc::Sender<Ready>) -> Result<T> + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("loadgen-rx".into())
        .spawn(move || {
            if let Some(path) = netns {
                enter_netns(&path)?;
            }
            body(&tx)
        })
        .map_err(io_err("spawning receiver thread"))?;
    match rx.recv() {
        Ok(ready) => Ok((ready, handle)),
        // The body returned (with an error) before saying it was ready.
        Err(_) => match handle.join() {
            Ok(Err(e)) => Err(e),
            Ok(Ok(_)) => Err(Error::Io {
                what: "receiver".into(),
                source: io::Error::other("ended before listening"),
            }),
            Err(_) => Err(Error::ReceiverPanicked),
        },
    }
}

/// Moves the calling thread (only) into the network namespace at `path`.
fn enter_netns(path: &Path) -> Result<()> {
    let shown = path.display().to_string();
    let f = File::open(path).map_err(|source| Error::Netns {
        path: shown.clone(),
        source,
    })?;
    setns(&f, CloneFlags::CLONE_NEWNET).map_err(|e| Error::Netns {
        path: shown,
        source: io::Error::from(e),
    })
}

pub(crate) fn join<T>(h: JoinHandle<Result<T>>) -> Result<T> {
    h.join().map_err(|_| Error::ReceiverPanicked)?
}
