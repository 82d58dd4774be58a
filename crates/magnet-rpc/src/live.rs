//! Live capture and pcap-filter expressions, through libpcap (the `pcap` crate).

use crate::error::{Error, Result};

/// A compiled pcap-filter expression, usable on frames from files too.
pub struct Filter {
    prog: pcap::BpfProgram,
    expr: String,
}

impl Filter {
    /// Compiles `expr` for frames of link type `linktype`.
    pub fn compile(linktype: u32, expr: &str) -> Result<Filter> {
        let err = |e: pcap::Error| Error::Filter {
            expr: expr.to_owned(),
            reason: e.to_string(),
        };
        let dead = pcap::Capture::dead(pcap::Linktype(linktype as i32)).map_err(err)?;
        let prog = dead.compile(expr, true).map_err(err)?;
        Ok(Filter {
            prog,
            expr: expr.to_owned(),
        })
    }

    pub fn expr(&self) -> &str {
        &self.expr
    }

    pub fn matches(&self, frame: &[u8]) -> bool {
        self.prog.filter(frame)
    }
}

/// A live capture on one interface.
pub struct Live {
    cap: pcap::Capture<pcap::Active>,
    linktype: u32,
}

/// What the kernel and libpcap say they dropped.
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveStats {
    pub received: u32,
    pub dropped: u32,
    pub if_dropped: u32,
}

impl Live {
    /// Opens `iface` (promiscuous, immediate mode, 64 MiB buffer) with an optional
    /// pcap-filter expression.
    pub fn open(iface: &str, filter: Option<&str>, snaplen: i32) -> Result<Live> {
        let e = |e: pcap::Error| Error::Live(format!("{iface}: {e}"));
        let mut cap = pcap::Capture::from_device(iface)
            .map_err(e)?
            .promisc(true)
            .snaplen(snaplen)
            .immediate_mode(true)
            .buffer_size(64 << 20)
            .timeout(100)
            .open()
            .map_err(e)?
            // Non-blocking, polled with our own timeout: libpcap's read
            // timeout is not honoured in immediate mode on every version
            // (a quiet interface then blocks until the next packet, and
            // SIGINT/SIGTERM are not seen until then).
            .setnonblock()
            .map_err(e)?;
        if let Some(f) = filter {
            cap.filter(f, true).map_err(|err| Error::Filter {
                expr: f.to_owned(),
                reason: err.to_string(),
            })?;
        }
        let linktype = cap.get_datalink().0 as u32;
        Ok(Live { cap, linktype })
    }

    pub fn linktype(&self) -> u32 {
        self.linktype
    }

    /// Waits up to 100 ms for a packet: `Ok(None)` when none came (so a
    /// caller sees its stop flag at least every 100 ms).
    pub fn next_packet(&mut self) -> Result<Option<(i64, &[u8])>> {
        if !self.ready()? {
            return Ok(None);
        }
        match self.cap.next_packet() {
            Ok(p) => {
                // time_t and suseconds_t are not i64 on every target.
                #[allow(clippy::unnecessary_cast)]
                let ts =
                    p.header.ts.tv_sec as i64 * 1_000_000_000 + p.header.ts.tv_usec as i64 * 1000;
                Ok(Some((ts, p.data)))
            }
            Err(pcap::Error::TimeoutExpired) => Ok(None),
            Err(e) => Err(Error::Live(e.to_string())),
        }
    }

    /// Whether the capture has something to read within 100 ms (a packet,
    /// or an error to report); false on a signal.
    fn ready(&mut self) -> Result<bool> {
        use std::os::fd::AsRawFd;
        let mut pfd = libc::pollfd {
            fd: self.cap.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, valid for the call.
        let rc = unsafe { libc::poll(&mut pfd, 1, 100) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                return Ok(false);
            }
            return Err(Error::Live(format!("poll: {e}")));
        }
        Ok(rc > 0)
    }

    pub fn stats(&mut self) -> LiveStats {
        self.cap
            .stats()
            .map(|s| LiveStats {
                received: s.received,
                dropped: s.dropped,
                if_dropped: s.if_dropped,
            })
            .unwrap_or_default()
    }
}
