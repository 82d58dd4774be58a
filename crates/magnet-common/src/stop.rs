//! One stop flag for every command: SIGINT and SIGTERM set it (and remember
//! which signal came), SIGHUP sets a separate reload flag where a command
//! asks for one. Long loops poll [`Stop::requested`]; the command maps
//! [`Stop::signal`] to its exit code with [`crate::exit::signalled`].

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};

/// Set by SIGINT/SIGTERM.
#[derive(Clone, Default)]
pub struct Stop {
    flag: Arc<AtomicBool>,
    sig: Arc<AtomicI32>,
}

impl Stop {
    /// Installs the handlers (once per process is enough; again is harmless).
    pub fn install() -> std::io::Result<Stop> {
        Stop::install_for(&[SIGINT, SIGTERM])
    }

    /// [`Stop::install`], and SIGHUP (the terminal closed) and SIGQUIT
    /// (Ctrl-backslash) stop too: for work that must close what it writes (the
    /// recorder's END block) whatever signal ends it. Not for commands that
    /// reload on SIGHUP.
    pub fn install_ending_on_hangup() -> std::io::Result<Stop> {
        Stop::install_for(&[SIGINT, SIGTERM, SIGHUP, SIGQUIT])
    }

    fn install_for(sigs: &[i32]) -> std::io::Result<Stop> {
        let s = Stop::default();
        for &sig in sigs {
            let (flag, which) = (s.flag.clone(), s.sig.clone());
            // SAFETY: the handler only stores into atomics (async-signal-safe).
            unsafe {
                signal_hook::low_level::register(sig, move || {
                    which.store(sig, Ordering::SeqCst);
                    flag.store(true, Ordering::SeqCst);
                })?;
            }
        }
        Ok(s)
    }

    /// A flag SIGHUP sets (the caller clears it when it has reloaded).
    pub fn reload_flag() -> std::io::Result<Arc<AtomicBool>> {
        let f = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(SIGHUP, f.clone())?;
        Ok(f)
    }

    pub fn requested(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// The flag itself, for libraries that take `&AtomicBool` / `Arc<AtomicBool>`.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.flag.clone()
    }

    /// The signal that set the flag, if one did.
    pub fn signal(&self) -> Option<i32> {
        match self.sig.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigterm_sets_the_flag_and_says_which() {
        let s = Stop::install().unwrap();
        assert!(!s.requested());
        signal_hook::low_level::raise(SIGTERM).unwrap();
        assert!(s.requested());
        assert_eq!(s.signal(), Some(SIGTERM));
        assert_eq!(crate::exit::signalled(s.signal().unwrap()), 143);
    }

    #[test]
    fn hangup_and_quit_stop_a_recorder() {
        for sig in [SIGHUP, SIGQUIT] {
            let s = Stop::install_ending_on_hangup().unwrap();
            signal_hook::low_level::raise(sig).unwrap();
            assert!(s.requested());
            assert_eq!(s.signal(), Some(sig));
        }
    }
}
