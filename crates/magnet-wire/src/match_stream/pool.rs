//! The packets around the frames being matched.

use std::collections::{HashMap, VecDeque};

use crate::footprint::Footprint;
use crate::kernel::KPacket;
use crate::matching::Candidates;

/// A packet in the pool.
pub(super) struct Pooled {
    pub(super) p: KPacket,
    fp: Option<Footprint>,
    pub(super) used: bool,
    pub(super) last_ts: i64,
}

pub(super) fn pooled(mut p: KPacket) -> Pooled {
    // Frame bytes and function events are not shown by match.
    p.frames = Vec::new();
    p.funcs = Vec::new();
    let fp = match p.ip {
        Some(_) if p.gso_segments > 0 => None,
        Some(ip) => Some(Footprint::from_kernel(&ip)),
        None => None,
    };
    let last_ts = p.hops.iter().map(|h| h.ts_ns).max().unwrap_or(0);
    Pooled {
        p,
        fp,
        used: false,
        last_ts,
    }
}

impl Pooled {
    /// Whether a frame could take this packet: it has a footprint, or it is ARP
    /// (a GSO packet is on the wire only as its segments).
    pub(super) fn matchable(&self) -> bool {
        self.fp.is_some() || is_arp(&self.p)
    }
}

fn is_arp(p: &KPacket) -> bool {
    p.ip.is_none() && p.ethertype == 0x0806
}

/// Packets around the frames being matched, by order of first sighting.
pub(super) struct Pool {
    /// `slots[i]` is packet number `base + i`.
    pub(super) slots: VecDeque<Pooled>,
    pub(super) base: u64,
    index: HashMap<Footprint, VecDeque<u64>>,
    arp: VecDeque<u64>,
}

impl Pool {
    pub(super) fn new() -> Pool {
        Pool {
            slots: VecDeque::new(),
            base: 0,
            index: HashMap::new(),
            arp: VecDeque::new(),
        }
    }

    fn get(&self, n: u64) -> &Pooled {
        &self.slots[(n - self.base) as usize]
    }

    pub(super) fn add(&mut self, q: Pooled) {
        let n = self.base + self.slots.len() as u64;
        if let Some(fp) = q.fp {
            self.index.entry(fp).or_default().push_back(n);
        } else if is_arp(&q.p) {
            self.arp.push_back(n);
        }
        self.slots.push_back(q);
    }

    pub(super) fn pop(&mut self) -> Option<Pooled> {
        let s = self.slots.pop_front()?;
        let n = self.base;
        self.base += 1;
        if let Some(fp) = s.fp {
            if let Some(v) = self.index.get_mut(&fp) {
                if v.front() == Some(&n) {
                    v.pop_front();
                }
                if v.is_empty() {
                    self.index.remove(&fp);
                }
            }
        }
        if self.arp.front() == Some(&n) {
            self.arp.pop_front();
        }
        Some(s)
    }
}

impl Candidates for Pool {
    type Id = u64;
    fn packet(&self, n: u64) -> &KPacket {
        &self.get(n).p
    }
    fn used(&self, n: u64) -> bool {
        self.get(n).used
    }
    fn with_footprint(&self, fp: &Footprint) -> impl Iterator<Item = u64> + '_ {
        self.index.get(fp).into_iter().flatten().copied()
    }
    fn arp_between(&self, lo: i64, hi: i64) -> impl Iterator<Item = u64> + '_ {
        self.arp.iter().copied().filter(move |&n| {
            let first = self.get(n).p.first_ts();
            first >= lo && first <= hi
        })
    }
}
