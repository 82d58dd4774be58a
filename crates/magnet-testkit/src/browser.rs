//! Headless Chromium for the tests that open magnet's HTML report (the
//! report's own browser test and the CLI's analyze_live): one runner, a fresh
//! profile per run in a temporary directory removed afterwards.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A Chromium binary and how to run it.
pub struct Chromium {
    bin: PathBuf,
    window: (u32, u32),
    budget_ms: u32,
}

impl Chromium {
    /// `chromium` (or `chromium-browser`) in /usr/bin or on `PATH`.
    pub fn find() -> Option<Chromium> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let dirs = std::iter::once(PathBuf::from("/usr/bin")).chain(std::env::split_paths(&path));
        let bin = dirs
            .flat_map(|d| [d.join("chromium"), d.join("chromium-browser")])
            .find(|p| p.is_file())?;
        Some(Chromium {
            bin,
            window: (1400, 3000),
            budget_ms: 10_000,
        })
    }

    /// The window (and so screenshot) size.
    pub fn window(mut self, width: u32, height: u32) -> Chromium {
        self.window = (width, height);
        self
    }

    /// Virtual time the page gets before the DOM is dumped or the screenshot
    /// taken (pages that check themselves after a timer need it).
    pub fn budget_ms(mut self, ms: u32) -> Chromium {
        self.budget_ms = ms;
        self
    }

    /// Runs Chromium headless with `args`; panics with its standard error
    /// when it fails.
    pub fn run(&self, args: &[&str]) -> Output {
        let profile = tempfile::Builder::new()
            .prefix("magnet-chromium-profile-")
            .tempdir()
            .expect("a profile directory");
        let out = Command::new(&self.bin)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--enable-logging=stderr",
                "--v=0",
                &format!("--window-size={},{}", self.window.0, self.window.1),
                &format!("--virtual-time-budget={}", self.budget_ms),
                &format!("--user-data-dir={}", profile.path().display()),
            ])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run chromium");
        assert!(
            out.status.success(),
            "chromium failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// The DOM of `url` after the budget (stdout), with the console on stderr.
    pub fn dump_dom(&self, url: &str) -> Output {
        self.run(&["--dump-dom", url])
    }

    /// A PNG screenshot of `url` into `png`.
    pub fn screenshot(&self, url: &str, png: &Path) {
        self.run(&[&format!("--screenshot={}", png.display()), url]);
    }
}

/// The page's console messages in Chromium's standard error.
pub fn console_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect()
}
