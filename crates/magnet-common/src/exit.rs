//! Exit codes of every magnet subcommand and of magnetd.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | done (a recording or run that was asked to stop by SIGINT/SIGTERM and ended cleanly is done too, unless the command documents 128+N) |
//! | 1 | the command ran but what it checked failed (e.g. `record -- CMD` whose command failed: its status is reported) |
//! | 2 | error: bad arguments, bad input, missing privilege or kernel feature (one line on stderr says which) |
//! | 128+N | stopped by signal N before finishing its own work (130 = SIGINT, 143 = SIGTERM) |

/// Done.
pub const OK: u8 = 0;
/// Ran, but what it checked failed.
pub const FAILED: u8 = 1;
/// Error (arguments, input, privilege, kernel).
pub const ERROR: u8 = 2;

/// The code for "stopped by signal `sig`".
pub fn signalled(sig: i32) -> u8 {
    (128 + sig.clamp(0, 127)) as u8
}

#[cfg(test)]
mod tests {
    #[test]
    fn shell_convention() {
        assert_eq!(super::signalled(2), 130);
        assert_eq!(super::signalled(15), 143);
    }
}
