//! TCP phase: exactly N blocking `send()` calls of S bytes on one connection; the
//! receiver reads until EOF.

use std::net::{Shutdown, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::sys::{self, Ready};
use crate::{io_err, micros, Calls, Error, FlowSummary, LoadSpec, Pacer, Result};

struct Received {
    bytes: u64,
    recv_calls: u64,
}

pub(crate) fn run(spec: &LoadSpec, calls: Calls) -> Result<FlowSummary> {
    let bind = SocketAddrV4::new(spec.peer.addr(), spec.port);
    // Set if the sender fails before connecting, so the receiver stops waiting in accept.
    let cancel = Arc::new(AtomicBool::new(false));
    let rx_cancel = Arc::clone(&cancel);
    let (ready, handle) = sys::spawn_receiver(spec.peer.netns_path(), move |ready| {
        receive(bind, ready, &rx_cancel)
    })?;

    let sent = send_all(spec, calls, ready.addr);
    if sent.is_err() {
        cancel.store(true, Ordering::Relaxed);
    }
    // The receiver is always joined so no thread outlives the run.
    let received = sys::join(handle);
    let (stream, sent_calls, pacer) = sent?;
    let received = received?;
    let elapsed = pacer.start().elapsed();

    let bytes_sent = sent_calls * calls.size as u64;
    if received.bytes != bytes_sent {
        return Err(Error::Mismatch {
            sent: bytes_sent,
            received: received.bytes,
        });
    }
    Ok(FlowSummary {
        calls: sent_calls,
        call_size: calls.size,
        failed_calls: 0,
        bytes_sent,
        bytes_received: received.bytes,
        recv_calls: received.recv_calls,
        datagrams_received: 0,
        local: stream.local_addr().map_err(io_err("getsockname"))?,
        remote: SocketAddr::V4(ready.addr),
        sender_tid: sys::gettid(),
        receiver_tid: ready.tid,
        elapsed_us: micros(elapsed),
    })
}

/// Connects, makes the calls, and half-closes so the receiver sees EOF.
fn send_all(spec: &LoadSpec, calls: Calls, to: SocketAddrV4) -> Result<(TcpStream, u64, Pacer)> {
    let stream = TcpStream::connect(to).map_err(io_err(format!("TCP connect to {to}")))?;
    let fd = stream.as_raw_fd();
    let buf = payload(calls.size);
    let pacer = Pacer::new(spec.interval, spec.duration);
    let mut made = 0;
    for i in 0..calls.count {
        if !pacer.wait(i) {
            break;
        }
        // A blocking send returns only once the whole buffer is queued; a shorter
        // return means a signal or timeout cut it, and the count would be a lie.
        let n = sys::send(fd, &buf).map_err(|source| Error::Send {
            proto: "TCP send()",
            call: i,
            size: calls.size,
            source,
        })?;
        if n != calls.size {
            return Err(Error::ShortSend {
                proto: "TCP send()",
                call: i,
                sent: n,
                size: calls.size,
            });
        }
        made += 1;
    }
    stream
        .shutdown(Shutdown::Write)
        .map_err(io_err("TCP shutdown"))?;
    Ok((stream, made, pacer))
}

fn receive(
    bind: SocketAddrV4,
    ready: &std::sync::mpsc::Sender<Ready>,
    cancel: &AtomicBool,
) -> Result<Received> {
    let listener = TcpListener::bind(bind).map_err(io_err(format!("TCP bind {bind}")))?;
    let addr = match listener.local_addr().map_err(io_err("getsockname"))? {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => unreachable!("bound to IPv4"),
    };
    let _ = ready.send(Ready {
        addr,
        tid: sys::gettid(),
    });
    let Some(conn) = accept_unless(&listener, cancel)? else {
        return Ok(Received {
            bytes: 0,
            recv_calls: 0,
        });
    };
    let fd = conn.as_raw_fd();
    let mut buf = vec![0u8; 256 * 1024];
    let mut got = Received {
        bytes: 0,
        recv_calls: 0,
    };
    loop {
        match sys::recv(fd, &mut buf) {
            Ok(0) => return Ok(got),
            Ok(n) => {
                got.bytes += n as u64;
                got.recv_calls += 1;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err("TCP recv")(e)),
        }
    }
}

/// Accepts one connection, giving up when `cancel` is set (checked every 50 ms).
fn accept_unless(listener: &TcpListener, cancel: &AtomicBool) -> Result<Option<TcpStream>> {
    listener
        .set_nonblocking(true)
        .map_err(io_err("TCP listener nonblocking"))?;
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)
                    .map_err(io_err("TCP stream blocking"))?;
                return Ok(Some(s));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if cancel.load(Ordering::Relaxed) {
                    return Ok(None);
                }
                let mut pfd = libc::pollfd {
                    fd: listener.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut pfd, 1, Duration::from_millis(50).as_millis() as i32) };
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io_err("TCP accept")(e)),
        }
    }
}

/// A recognisable payload: bytes count up, so a capture shows where a call's data
/// starts and ends.
pub(crate) fn payload(size: usize) -> Vec<u8> {
    (0..size).map(|i| (i % 251) as u8).collect()
}
