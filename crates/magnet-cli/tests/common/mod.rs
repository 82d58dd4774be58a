//! Helpers shared by the CLI's integration tests: run the real `magnet` binary
//! and give each test binary its own scratch directory.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

pub const MAGNET: &str = env!("CARGO_BIN_EXE_magnet");

/// Runs `magnet ARGS` to completion with no standard input.
pub fn magnet(args: &[&str]) -> Output {
    Command::new(MAGNET)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run magnet")
}

/// A path in this test binary's scratch directory (one per process, so tests
/// running in parallel binaries never share files; removed when the process
/// exits, kept with MAGNET_KEEP_SCRATCH=1).
pub fn tmp(name: &str) -> PathBuf {
    magnet_testkit::scratch_dir("magnet-test").join(name)
}
