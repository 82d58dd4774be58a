//! One module per subcommand.
pub mod analyze;
pub mod daemon;
pub mod demo;
pub mod dump;
pub mod export;
pub mod info;
pub mod loadgen;
pub mod nfs;
pub mod parse;
pub mod record;
pub mod report;
pub mod rpc;
pub mod sample;
mod trace_input;
mod units;
