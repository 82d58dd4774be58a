//! One module per subcommand.
pub mod analyze;
pub mod demo;
pub mod export;
pub mod funcs;
mod funcs_source;
pub mod info;
pub mod loadgen;
pub mod matching;
pub mod nfs;
pub mod parse;
pub mod pcap;
pub mod record;
pub mod report;
pub mod rpc;
pub mod sample;
mod trace_input;
mod units;
