//! One module per subcommand.
pub mod loadgen;
pub mod nfs;
pub mod rpc;
pub mod demo;
pub mod info;
pub mod parse;
pub mod record;
mod trace_input;
mod units;
