//! One module per subcommand.
pub mod loadgen;
