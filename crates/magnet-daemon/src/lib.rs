//! magnetd: magnet's always-on daemon.
//!
//! - [`summaries`]: the kernel side — per-connection summaries and host
//!   totals kept in BPF maps (no event stream), read on request;
//! - [`config`]: the TOML configuration (reloaded on SIGHUP);
//! - [`api`]: the Unix-socket query API (JSON lines), with SO_PEERCRED:
//!   a caller other than root sees only its own uid's connections;
//! - [`http`]: HTTP on localhost: `/metrics` (OpenMetrics), `/health`,
//!   sampler runs (`/runs`, `/runs/NAME.json`, `/runs/NAME.svg`);
//! - [`metrics`]: the OpenMetrics text;
//! - [`container`]: cgroup path → container id;
//! - [`flight`]: the flight recorder (last seconds of full events, dumped on request or trigger);
//! - [`window`]: when the per-packet programs were attached (`packet_hooks = "sampled"`);
//! - [`daemon`]: the run loop tying them together.
//!
//! The library never prints or exits; it logs through a caller-given function.

pub mod api;
pub mod baseline;
pub mod config;
pub mod container;
pub mod daemon;
pub mod flight;
pub mod http;
pub mod layers;
pub mod metrics;
pub mod slots;
pub mod summaries;
mod triggers;
pub mod window;

pub use config::Config;
pub use daemon::{run, Control};

#[allow(
    clippy::all,
    dead_code,
    unused_imports,
    non_camel_case_types,
    non_snake_case
)]
mod skel {
    include!(concat!(env!("OUT_DIR"), "/summary.skel.rs"));
}

/// Everything that can go wrong, each naming its file, address or setting.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Config { path: String, reason: String },
    #[error("{0}")]
    Host(String),
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
