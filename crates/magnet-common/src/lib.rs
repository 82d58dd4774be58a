//! Conventions every magnet command shares, so that each behaves the same way:
//!
//! - [`units`]: durations, sizes and instants, read and shown one way everywhere;
//! - [`stop`]: one stop flag set by SIGINT/SIGTERM (and a reload flag for SIGHUP);
//! - [`exit`]: one exit-code table, documented in docs/exit-codes.md;
//! - [`text`]: names from traces and captures escaped for the terminal;
//! - [`input`]: files read whole, with a cap;
//! - [`bpf_stats`]: how a run's BPF run-time statistics were sampled, as every
//!   cost figure (a recording's, a sampler run's) keeps it.

pub mod bpf_stats;
pub mod exit;
pub mod input;
pub mod stop;
pub mod text;
pub mod units;
