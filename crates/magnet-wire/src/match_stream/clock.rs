//! Pass 1: the clock between the capture and the trace, from a sample of the
//! capture's frames, and the trace's flows.

use std::collections::{HashMap, HashSet};

use crate::footprint::{Footprint, Frame};
use crate::matching::{calibrate, flow, CalPacket, Calib};
use crate::Result;

use super::{next_frame, Inputs, Options, Packets, Stats};

/// What pass 1 keeps of the first packet with a sampled footprint.
#[derive(Default)]
struct Seen {
    count: u32,
    first: CalPacket,
}

/// Pass 1: the clock, and the trace's flows.
pub(super) fn clock<I: Inputs>(
    inp: &mut I,
    o: &Options,
) -> Result<(Calib, HashSet<Footprint>, Stats)> {
    let mut cap = inp.capture()?;
    let mut cut = None;
    let mut step = 1u64;
    let mut n = 0u64;
    let mut sample: Vec<(u64, i64, Footprint)> = Vec::new();
    while let Some((_, ts, f)) = next_frame(&mut cap, &mut cut) {
        let Frame::Ip { fp, .. } = f else { continue };
        if n % step == 0 {
            sample.push((n, ts, fp));
            if sample.len() > o.sample_frames.max(1) {
                step *= 2;
                sample.retain(|s| s.0 % step == 0);
            }
        }
        n += 1;
    }
    drop(cap);
    let mut seen: HashMap<Footprint, Seen> =
        sample.iter().map(|s| (s.2, Seen::default())).collect();
    let mut flows = HashSet::new();
    let mut pk = Packets::new(inp.trace()?, o.window, inp.trace_name());
    while let Some(p) = pk.next()? {
        // A GSO packet is on the wire as its segments.
        let Some(ip) = p.ip.filter(|_| p.gso_segments == 0) else {
            continue;
        };
        let fp = Footprint::from_kernel(&ip);
        flows.insert(flow(&fp));
        if let Some(s) = seen.get_mut(&fp) {
            s.count += 1;
            if s.count == 1 {
                s.first = CalPacket::of(&p);
            }
        }
    }
    let unique: Vec<(i64, &CalPacket)> = sample
        .iter()
        .filter_map(|(_, ts, fp)| {
            let s = seen.get(fp)?;
            (s.count == 1).then_some((*ts, &s.first))
        })
        .collect();
    let stats = Stats {
        sampled: sample.len() as u64,
        sample_step: step,
        ..Default::default()
    };
    Ok((calibrate(&unique), flows, stats))
}
