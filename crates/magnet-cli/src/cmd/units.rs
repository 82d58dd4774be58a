//! Durations and sizes as users type them: the one syntax of every command
//! (`magnet_common::units`; docs/exit-codes.md).

pub use magnet_common::units::parse_duration;
