//! Empty programs on magnetd's hooks (`bpf/empty.bpf.c`): the floor that
//! `bench/daemon-bpf-cost.sh` subtracts from magnetd's per-program run time
//! (kernel.bpf_stats_enabled), so that what is left is magnetd's own work.
//! Not used by magnetd itself.

use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::Link;

use crate::Error;

#[allow(
    clippy::all,
    dead_code,
    unused_imports,
    non_camel_case_types,
    non_snake_case
)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/empty.skel.rs"));
}

/// The attached empty programs; dropping it detaches them.
pub struct EmptyHooks {
    links: Vec<Link>,
    _skel: Box<skel::EmptySkel<'static>>,
}

impl EmptyHooks {
    pub fn link_count(&self) -> usize {
        self.links.len()
    }
}

/// Loads and attaches an empty program on every hook magnetd uses.
pub fn attach_empty() -> Result<EmptyHooks, Error> {
    let root = magnet_kernel::cgroup::root()
        .ok_or_else(|| Error::Host("no cgroup v2 hierarchy is mounted".into()))?;
    // Loaded once per process, like magnetd's own object.
    let storage: &'static mut MaybeUninit<libbpf_rs::OpenObject> =
        Box::leak(Box::new(MaybeUninit::uninit()));
    let open = skel::EmptySkelBuilder::default()
        .open(storage)
        .map_err(|e| Error::bpf("opening the empty programs", e))?;
    let sk = open
        .load()
        .map_err(|e| Error::bpf("loading the empty programs", e))?;
    let p = &sk.progs;
    let links = crate::summaries::attach_hooks(
        &[
            ("sock_send_length", &p.app_send),
            ("sock_recv_length", &p.app_recv),
            ("tcp_retransmit_skb", &p.tcp_retrans),
            ("kfree_skb", &p.drop),
            ("inet_sock_set_state", &p.tcp_state),
        ],
        Some([&p.wire_egress, &p.wire_ingress]),
        &root,
    )?;
    Ok(EmptyHooks {
        links,
        _skel: Box::new(sk),
    })
}
