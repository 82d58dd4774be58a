//! UDP phase: exactly M `sendto()` calls of U bytes; the receiver counts datagrams
//! until it has all M, or the sender is done and nothing came for `drain_timeout`.

use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::sys::{self, Ready};
use crate::tcp::payload;
use crate::{io_err, micros, Calls, Error, FlowSummary, LoadSpec, Pacer, Result};

/// Receive buffer asked for: holds thousands of small datagrams, so a sender faster
/// than the receiver thread loses nothing outside flood mode.
const RCVBUF: i32 = 64 << 20;
/// How often a waiting receiver looks at the sender's progress.
const POLL: Duration = Duration::from_millis(20);
/// Flood runs don't wait long for stragglers: loss is expected there.
const FLOOD_DRAIN: Duration = Duration::from_millis(200);

struct Received {
    bytes: u64,
    datagrams: u64,
}

pub(crate) fn run(spec: &LoadSpec, calls: Calls) -> Result<FlowSummary> {
    let bind = SocketAddrV4::new(spec.peer.addr(), spec.port);
    let done = Arc::new(AtomicBool::new(false));
    let rx_done = Arc::clone(&done);
    let expected = calls.count;
    let drain = if spec.flood {
        spec.drain_timeout.min(FLOOD_DRAIN)
    } else {
        spec.drain_timeout
    };
    let (ready, handle) = sys::spawn_receiver(spec.peer.netns_path(), move |ready| {
        receive(bind, ready, &rx_done, expected, drain)
    })?;

    let sent = send_all(spec, calls, ready.addr);
    // Success or not, the sender is done: the receiver drains and returns.
    done.store(true, Ordering::Relaxed);
    let received = sys::join(handle);
    let (local, made, failed, pacer) = sent?;
    let received = received?;
    Ok(FlowSummary {
        calls: made,
        call_size: calls.size,
        failed_calls: failed,
        bytes_sent: made * calls.size as u64,
        bytes_received: received.bytes,
        recv_calls: received.datagrams,
        datagrams_received: received.datagrams,
        local,
        remote: SocketAddr::V4(ready.addr),
        sender_tid: sys::gettid(),
        receiver_tid: ready.tid,
        elapsed_us: micros(pacer.start().elapsed()),
    })
}

fn send_all(
    spec: &LoadSpec,
    calls: Calls,
    to: SocketAddrV4,
) -> Result<(SocketAddr, u64, u64, Pacer)> {
    // Bound to the routed source address so the summary's `local` is what a capture
    // shows, not 0.0.0.0.
    let src = sys::source_addr_for(to)?;
    let sock = UdpSocket::bind((src, 0)).map_err(io_err(format!("UDP bind {src}")))?;
    let local = sock.local_addr().map_err(io_err("getsockname"))?;
    let fd = sock.as_raw_fd();
    let buf = payload(calls.size);
    let interval = if spec.flood { None } else { spec.interval };
    let pacer = Pacer::new(interval, spec.duration);
    let (mut made, mut failed) = (0, 0);
    for i in 0..calls.count {
        if !pacer.wait(i) {
            break;
        }
        match sys::sendto(fd, &buf, to) {
            Ok(n) if n == calls.size => made += 1,
            // A datagram goes whole or not at all; anything else is a kernel surprise.
            Ok(n) => {
                return Err(Error::ShortSend {
                    proto: "UDP sendto()",
                    call: i,
                    sent: n,
                    size: calls.size,
                })
            }
            // Flood mode pushes until something gives; the failures are part of its
            // truth and are counted.
            Err(_) if spec.flood => failed += 1,
            Err(source) => {
                return Err(Error::Send {
                    proto: "UDP sendto()",
                    call: i,
                    size: calls.size,
                    source,
                })
            }
        }
    }
    Ok((local, made, failed, pacer))
}

fn receive(
    bind: SocketAddrV4,
    ready: &Sender<Ready>,
    sender_done: &AtomicBool,
    expected: u64,
    drain: Duration,
) -> Result<Received> {
    let sock = UdpSocket::bind(bind).map_err(io_err(format!("UDP bind {bind}")))?;
    sys::big_rcvbuf(&sock, RCVBUF);
    sock.set_read_timeout(Some(POLL))
        .map_err(io_err("UDP SO_RCVTIMEO"))?;
    let addr = match sock.local_addr().map_err(io_err("getsockname"))? {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => unreachable!("bound to IPv4"),
    };
    let _ = ready.send(Ready {
        addr,
        tid: sys::gettid(),
    });
    let fd = sock.as_raw_fd();
    // 64 KiB holds the largest IPv4 UDP payload (65507 bytes), so nothing is truncated.
    let mut buf = vec![0u8; 65536];
    let mut got = Received {
        bytes: 0,
        datagrams: 0,
    };
    let mut last = Instant::now();
    while got.datagrams < expected {
        match sys::recv(fd, &mut buf) {
            Ok(n) => {
                got.bytes += n as u64;
                got.datagrams += 1;
                last = Instant::now();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                // Nothing for a while: stop once the sender has finished and the
                // stragglers had `drain` to arrive.
                if sender_done.load(Ordering::Relaxed) && last.elapsed() >= drain {
                    break;
                }
                if !sender_done.load(Ordering::Relaxed) {
                    last = Instant::now();
                }
            }
            Err(e) => return Err(io_err("UDP recv")(e)),
        }
    }
    Ok(got)
}
