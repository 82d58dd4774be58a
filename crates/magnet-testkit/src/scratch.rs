//! One scratch directory per test process, removed when the process exits
//! (passing or failing), so that test runs leave nothing in /tmp: the report's
//! browser test left 18 MB per run, the CLI's tests a directory each.
//! `MAGNET_KEEP_SCRATCH=1` keeps it to look at (the path is printed then).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static DIR: OnceLock<PathBuf> = OnceLock::new();

extern "C" fn remove_at_exit() {
    if let Some(d) = DIR.get() {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// This process's scratch directory, `$TMPDIR/PREFIX-PID`, made on first use
/// and removed at exit (unless `MAGNET_KEEP_SCRATCH=1`). The first caller's
/// prefix names it.
pub fn scratch_dir(prefix: &str) -> &'static Path {
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("making the scratch directory");
        if std::env::var("MAGNET_KEEP_SCRATCH").as_deref() == Ok("1") {
            eprintln!("scratch files kept in {}", d.display());
        } else {
            // SAFETY: registers a plain function; it runs once at exit.
            unsafe { libc::atexit(remove_at_exit) };
        }
        d
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn removed_at_exit() {
        // A child process (this test binary, running only the helper below)
        // makes a file in its scratch directory and exits.
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "scratch::tests::child",
                "--ignored",
                "--nocapture",
            ])
            .env_remove("MAGNET_KEEP_SCRATCH")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let dir = text
            .lines()
            .find_map(|l| l.strip_prefix("SCRATCH "))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(out.status.success());
        assert!(!std::path::Path::new(dir).exists(), "{dir} left behind");
    }

    #[test]
    #[ignore = "helper of removed_at_exit"]
    fn child() {
        let d = super::scratch_dir("magnet-scratch-test");
        std::fs::write(d.join("f"), vec![0u8; 4096]).unwrap();
        println!("SCRATCH {}", d.display());
    }
}
