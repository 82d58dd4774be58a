//! Sampler runs without the kernel side: what `magnet sample` produced, as
//! data. The daemon serves these; show/plot/merge read them; no BPF here.
//!
//! - [`run`] writes and reads runs (Meta's JSON schema — also Meta's gzip'd
//!   data-set files — and a compact native form);
//! - [`store`] keeps runs in a directory, lists them and applies retention;
//! - [`schedule`] parses `10ms,1ms,100us every 1m` and plans wall-clock-aligned cycles;
//! - [`merge`] aligns runs of several hosts taken at the same instant;
//! - [`plot`] draws runs as offline SVG or HTML;
//! - [`sketch`] estimates active connections from the 128-bit sketch.
//!
//! Durations and instants are read and spelled by `magnet_common::units`.
//!
//! The library never prints or exits; errors name what failed and where.

pub mod merge;
pub mod plot;
pub mod run;
pub mod schedule;
pub mod sketch;
pub mod store;

pub use run::{Metric, ProgramRun, Run, RunCost, RunMeta, Sampled};

/// Everything that can go wrong, each naming its file or setting.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}{}: {reason}", offset.map(|o| format!(" at byte {o}")).unwrap_or_default())]
    Format {
        path: String,
        offset: Option<u64>,
        reason: String,
    },
    #[error("{0}")]
    Config(String),
}
