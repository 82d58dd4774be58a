//! magnet's Millisampler: fine-timescale traffic counters for one interface.
//!
//! Two tc programs (ingress and egress, `src/bpf/sample.bpf.c`) add every
//! packet into per-CPU counters indexed by time bucket —
//! `bucket = (now − start) / interval` — for a fixed number of buckets, so a
//! run costs a fixed amount of memory and ends by itself. Per bucket: bytes
//! and packets in and out, ingress ECN-CE bytes, retransmitted bytes in and
//! out, bytes by RTT class, the kernel's retransmission count, and a 128-bit
//! sketch of active connections (`magnet_runs::sketch`).
//!
//! - [`sampler::sample`] makes one run ([`Run`]).
//!
//! Everything about runs once made — formats, the store, schedules, merging,
//! plots — is the `magnet-runs` crate (no BPF); use it from there. Only the
//! run types [`sample`] returns are re-exported here.
//!
//! The library never prints or exits; errors name what failed and where.

pub mod sampler;
pub mod stale;

pub use magnet_runs::{Metric, Run, RunMeta};
pub use sampler::{sample, AttachMode, SampleConfig, Start, Started};

#[allow(
    clippy::all,
    dead_code,
    unused_imports,
    non_camel_case_types,
    non_snake_case
)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/sample.skel.rs"));
}

/// Everything that can go wrong, each naming its file, interface or setting.
/// Files (runs, the store) fail as [`magnet_runs::Error`], in `Runs`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Config(String),
    #[error("{0}")]
    Host(String),
    /// From the run formats and the store.
    #[error(transparent)]
    Runs(#[from] magnet_runs::Error),
    #[error("{what}: {source}")]
    Bpf {
        what: String,
        #[source]
        source: libbpf_rs::Error,
    },
}

impl Error {
    pub(crate) fn bpf(what: impl Into<String>, source: libbpf_rs::Error) -> Error {
        Error::Bpf {
            what: what.into(),
            source,
        }
    }
}
