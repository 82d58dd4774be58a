//! The flight recorder's triggers: what the host counters and connections
//! say once a second, and the dump when one fires.

use std::time::{Duration, Instant, UNIX_EPOCH};

use crate::daemon::Shared;
use crate::flight::{Flight, FlightConfig};
use magnet_client::Host;

/// Watches host totals once a second and dumps the flight recorder when a
/// trigger fires (at most once per recorder window).
pub(crate) struct Triggers {
    retransmits: u64,
    drops: std::collections::BTreeMap<String, u64>,
    /// Per connection: latency samples at or above the threshold so far.
    slow: std::collections::HashMap<u64, u64>,
    /// Per connection: the stall episodes (unread since, unsent since) that
    /// have fired already; each fires once.
    stalls_fired: std::collections::HashMap<u64, (u64, u64)>,
    last_dump: Option<Instant>,
}

/// Whether `r` counts for the stall trigger: an open TCP connection with one
/// of `ports` at either end (any when `ports` is empty).
fn stall_watched(r: &crate::summaries::Record, ports: &[u16]) -> bool {
    let port = |e: &str| e.rsplit(':').next().and_then(|p| p.parse::<u16>().ok());
    r.conn.open
        && r.conn.protocol == "tcp"
        && (ports.is_empty()
            || [&r.conn.local, &r.conn.remote]
                .iter()
                .any(|e| port(e).is_some_and(|p| ports.contains(&p))))
}

/// Samples in histogram slots at or above `threshold` (slot i holds
/// [2^i, 2^(i+1)) microseconds): app→wire, wire→app, the send stages
/// inside this host (to the qdisc, qdisc to device; not the network's
/// device→ACK) and the receive path (device → read, the sampled packets).
fn slow_samples(c: &magnet_client::Connection, threshold: Duration) -> u64 {
    let us = threshold.as_micros().max(1) as u64;
    let first = 63 - us.leading_zeros() as usize; // floor(log2(us))
    let stages = c.latency.stages.as_ref();
    [
        Some(&c.latency.app_to_wire),
        Some(&c.latency.wire_to_app),
        stages.map(|s| &s.to_qdisc),
        stages.map(|s| &s.qdisc_to_device),
        c.latency.receive.as_ref().map(|r| &r.device_to_read),
    ]
    .into_iter()
    .flatten()
    .map(|h| h.iter().skip(first).sum::<u64>())
    .sum()
}

impl Triggers {
    pub(crate) fn new(shared: &Shared) -> Triggers {
        let h = shared.reader.host();
        let mut slow = std::collections::HashMap::new();
        if let Some(t) = shared
            .flight
            .as_ref()
            .and_then(|f| f.config.trigger_latency)
        {
            for r in shared.reader.all() {
                slow.insert(r.conn.cookie, slow_samples(&r.conn, t));
            }
        }
        Triggers {
            retransmits: h.retransmits,
            drops: h.drop_reasons,
            slow,
            stalls_fired: Default::default(),
            last_dump: None,
        }
    }

    /// Fires when a trigger's condition newly holds: a burst of
    /// retransmits, a watched drop reason, a latency sample over the
    /// threshold, an app stall. Of several at once the latency one is named,
    /// then a drop, then the retransmits, and a stall only when none of them.
    pub(crate) fn check(&mut self, shared: &Shared) {
        let Some(f) = &shared.flight else {
            return;
        };
        let h = shared.reader.host();
        let counters = self.counter_trigger(&f.config, &h);
        let latency = f
            .config
            .trigger_latency
            .and_then(|t| self.latency_trigger(shared, t));
        let stall = f
            .config
            .trigger_stall
            .and_then(|t| self.stall_trigger(shared, t, &f.config.trigger_stall_ports));
        let why = latency
            .or(counters)
            .or_else(|| stall.as_ref().map(|s| s.why.clone()));
        self.retransmits = h.retransmits;
        self.drops = h.drop_reasons;
        let Some(why) = why else {
            return;
        };
        if self
            .last_dump
            .is_some_and(|t| t.elapsed() < f.config.seconds)
        {
            return;
        }
        self.last_dump = Some(Instant::now());
        if let Some(s) = stall {
            self.mark_fired(s, &why);
        }
        dump(f, shared, &why);
    }

    /// The host counters' trigger: retransmits over the limit since the last
    /// check, or a watched drop reason that counted more (the last one named).
    fn counter_trigger(&self, config: &FlightConfig, h: &Host) -> Option<String> {
        let mut why = None;
        let burst = h.retransmits.saturating_sub(self.retransmits);
        if config.trigger_retransmits_per_s.is_some_and(|n| burst > n) {
            why = Some(format!("retransmits-{burst}"));
        }
        for r in &config.trigger_drop_reasons {
            let now = h.drop_reasons.get(r).copied().unwrap_or(0);
            let before = self.drops.get(r).copied().unwrap_or(0);
            if now > before {
                why = Some(format!("drop-{r}"));
            }
        }
        why
    }

    /// A connection with more latency samples at or above `t` than at the
    /// last check (the last one named).
    fn latency_trigger(&mut self, shared: &Shared, t: Duration) -> Option<String> {
        let mut why = None;
        let mut now = std::collections::HashMap::new();
        for r in shared.reader.all() {
            let n = slow_samples(&r.conn, t);
            if n > self.slow.get(&r.conn.cookie).copied().unwrap_or(0) {
                why = Some(format!("latency-{}", r.conn.cookie));
            }
            now.insert(r.conn.cookie, n);
        }
        self.slow = now;
        why
    }

    /// An app stall: the first watched connection found waiting at least
    /// `t` in an episode that has not fired yet (it fires on a later check
    /// if a dump happened too recently).
    fn stall_trigger(&mut self, shared: &Shared, t: Duration, ports: &[u16]) -> Option<Stall> {
        let mut stall = None;
        let mut live = std::collections::HashMap::new();
        for r in shared.reader.all() {
            if !stall_watched(&r, ports) {
                continue;
            }
            let s = r.stall;
            let episode = (s.unread_since_ns, s.unsent_since_ns);
            let fired = self.stalls_fired.get(&r.conn.cookie).copied();
            if let Some(&e) = fired.as_ref() {
                live.insert(r.conn.cookie, e);
            }
            if stall.is_some() {
                continue;
            }
            let read =
                s.unread_for().is_some_and(|d| d >= t) && fired.is_none_or(|e| e.0 != episode.0);
            let send =
                s.unsent_for().is_some_and(|d| d >= t) && fired.is_none_or(|e| e.1 != episode.1);
            if read || send {
                let kind = if read { "read" } else { "send" };
                stall = Some(Stall {
                    cookie: r.conn.cookie,
                    episode,
                    why: format!("stall-{kind}-{}", r.conn.cookie),
                });
            }
        }
        // Forget connections that are gone.
        self.stalls_fired = live;
        stall
    }

    /// Marks the stall's episode fired, when it is what fired (`why`).
    fn mark_fired(&mut self, stall: Stall, why: &str) {
        if stall.why != why {
            return;
        }
        let e = self.stalls_fired.entry(stall.cookie).or_insert((0, 0));
        // What fired is marked; the other direction's episode stays
        // as it was, so it can fire on its own.
        if why.starts_with("stall-read") {
            e.0 = stall.episode.0;
        } else {
            e.1 = stall.episode.1;
        }
    }
}

/// A stalled connection found by [`Triggers::stall_trigger`].
struct Stall {
    cookie: u64,
    /// (unread since, unsent since), as the stall's episode.
    episode: (u64, u64),
    why: String,
}

/// Dumps the flight recorder into a directory named by the time and `why`.
fn dump(f: &Flight, shared: &Shared, why: &str) {
    let secs = std::time::SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let dir = f.config.dump_dir.join(format!("trigger-{secs}-{why}"));
    match f.dump(&dir) {
        Ok(files) => shared.log(&format!(
            "trigger {why}: dumped {} trace files into {}",
            files.len(),
            dir.display()
        )),
        Err(e) => shared.log(&format!("trigger {why}: dump into {}: {e}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use magnet_client::{Connection, Latency, SendStages};

    /// The host's own send stages count towards the latency trigger; the
    /// network's (device → ACK) and the whole path do not.
    #[test]
    fn slow_samples_count_the_hosts_send_stages() {
        let mut c = Connection {
            latency: Latency {
                app_to_wire: vec![0, 0, 0, 0, 1],
                ..Latency::default()
            },
            ..Connection::default()
        };
        let t = Duration::from_micros(16);
        assert_eq!(slow_samples(&c, t), 1);
        c.latency.stages = Some(SendStages {
            to_qdisc: vec![5, 0, 0, 0, 2],
            qdisc_to_device: vec![0, 0, 0, 0, 0, 3],
            device_to_ack: vec![0, 0, 0, 0, 0, 0, 7],
            send_to_ack: vec![0, 0, 0, 0, 0, 0, 0, 9],
            ..SendStages::default()
        });
        assert_eq!(slow_samples(&c, t), 1 + 2 + 3);
        c.latency.receive = Some(magnet_client::ReceiveStages {
            device_to_queue: vec![0, 0, 0, 0, 9],
            queue_to_read: vec![0, 0, 0, 0, 9],
            device_to_read: vec![4, 0, 0, 0, 0, 4],
            ..Default::default()
        });
        assert_eq!(slow_samples(&c, t), 1 + 2 + 3 + 4);
    }
}
