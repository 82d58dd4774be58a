//! The bounds of a reader that streams the trace, and what they cut.

/// How far apart in time the parts of one packet may be, and how many packets may
/// be open at once: what bounds the memory of a reader that streams the trace.
///
/// A packet is open from its first record until no record of it came for `ns`
/// nanoseconds of trace time; then it is finished (GSO segments assigned, fields
/// from frame bytes taken) and handed on. When more than `packets` are open, the
/// oldest half is finished early. A record of a packet finished already (its
/// parts further apart than the window) starts a packet of its own and is counted
/// in [`WindowStats::split`]: said, never silently merged or dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub ns: i64,
    pub packets: usize,
}

impl Window {
    /// 2 s of trace time, 262,144 open packets (a reader peaks near 300 MB).
    pub const DEFAULT: Window = Window {
        ns: 2_000_000_000,
        packets: 1 << 18,
    };
    /// The whole trace at once (nothing finished before the end).
    pub const WHOLE: Window = Window {
        ns: i64::MAX,
        packets: usize::MAX,
    };

    /// One line naming the window, for messages.
    pub fn describe(&self) -> String {
        if *self == Window::WHOLE {
            return "the whole trace".into();
        }
        format!(
            "{} s of trace time or {} open packets",
            self.ns as f64 / 1e9,
            self.packets
        )
    }
}

/// What the window did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct WindowStats {
    /// Packets handed on.
    pub packets: u64,
    /// Records of a packet finished already (its parts further apart than the
    /// window), each the start of a packet of its own.
    pub split: u64,
    /// Packets finished early because too many were open (not warned about by
    /// itself: a part of one that comes later is a `split`; a GSO segment of one
    /// that appears later keeps no derived fields, its frames say so).
    pub forced: u64,
    /// The most packets open at once.
    pub peak_open: usize,
}

impl WindowStats {
    /// Warning lines when the window cut anything, naming it.
    pub fn warnings(&self, w: &Window) -> Vec<String> {
        let mut out = Vec::new();
        if self.split > 0 {
            out.push(format!(
                "{} packet part(s) came after their packet was finished (parts further apart than the window, {}): each is shown as a packet of its own",
                self.split,
                w.describe()
            ));
        }
        out
    }
}
