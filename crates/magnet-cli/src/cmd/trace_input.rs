//! Opening a trace for the reading subcommands, with the file named in errors,
//! and the progress bar every long reader shows on a terminal: one
//! bar on stderr, driven by the bytes of the trace read so far, shown only when
//! stderr is a terminal and `-q` was not given, and cleared before the command
//! prints its result.

use std::fs::File;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Args;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use magnet_trace::TraceReader;

/// The bar on screen now: lines printed while it runs go above it ([`eprint_above`]).
static SHOWN: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Whether a command shows progress: stderr is a terminal and `-q` was not given.
pub fn progress_wanted(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// What a bar counts.
#[derive(Clone, Copy)]
pub enum Unit {
    /// Bytes of a file read.
    Bytes,
    /// Milliseconds of a run of known length.
    Millis,
}

/// A progress bar on stderr, or a hidden one when `show` is false: `len` units,
/// `what` written before it. Cleared from the screen when dropped or [`Progress::done`].
pub fn bar(show: bool, len: u64, unit: Unit, what: &str) -> Progress {
    if !show {
        return Progress(ProgressBar::hidden());
    }
    let template = match unit {
        // As wide as the terminal: a line that wraps is redrawn a row lower each time.
        Unit::Bytes => "{prefix} [{wide_bar}] {bytes}/{total_bytes}, {eta} left",
        Unit::Millis => "{prefix} [{wide_bar}] {percent:>3}%, {eta} left",
    };
    let b = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr_with_hz(10))
        .with_style(
            ProgressStyle::with_template(template)
                .expect("valid template")
                .progress_chars("=> "),
        )
        .with_prefix(format!("magnet: {what}"));
    b.tick();
    *SHOWN.lock().unwrap_or_else(|e| e.into_inner()) = Some(b.clone());
    Progress(b)
}

/// A progress bar (see [`bar`]).
pub struct Progress(ProgressBar);

impl Progress {
    pub fn inc(&self, n: u64) {
        self.0.inc(n);
    }

    /// Takes the bar off the screen (before the command prints its result).
    pub fn done(&self) {
        if self.0.is_hidden() || self.0.is_finished() {
            return;
        }
        self.0.finish_and_clear();
        let mut shown = SHOWN.lock().unwrap_or_else(|e| e.into_inner());
        if shown.as_ref().is_some_and(|b| b.is_finished()) {
            *shown = None;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done();
    }
}

/// A bar that follows the clock through a run of known length (`magnet sample`):
/// from `start_unix_ns` (which may lie ahead) to `total` later, updated by a thread
/// of its own until dropped.
pub struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    bar: Progress,
}

pub fn ticker(show: bool, start_unix_ns: u64, total: Duration, what: &str) -> Ticker {
    let total_ms = total.as_millis().max(1) as u64;
    let bar = bar(show, total_ms, Unit::Millis, what);
    let stop = Arc::new(AtomicBool::new(false));
    let thread = show.then(|| {
        let (b, stop) = (bar.0.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                b.set_position((now.saturating_sub(start_unix_ns) / 1_000_000).min(total_ms));
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    });
    Ticker { stop, thread, bar }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.bar.done();
    }
}

/// A trace file that counts the bytes read into a progress bar.
pub struct Tracked {
    file: File,
    bar: Progress,
}

impl Read for Tracked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

impl std::io::Seek for Tracked {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.file.seek(pos)
    }
}

/// Opens a trace (a damaged header is restored from the END block's copy
/// before the first record). With `progress` (see [`progress_wanted`]) a bar on stderr
/// follows the bytes read; it goes when the reader is dropped or at [`clear_progress`].
pub fn open(path: &Path, progress: bool) -> Result<TraceReader<Tracked>> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let bar = bar(progress, len, Unit::Bytes, &format!("reading {name}"));
    TraceReader::new_seekable(Tracked { file, bar }).with_context(|| format!("{}", path.display()))
}

/// Takes the bar on screen, if any, off it: the command is about to print its result.
pub fn clear_progress() {
    let shown = SHOWN.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(b) = shown {
        b.finish_and_clear();
    }
}

/// The exit code of a command that read a trace: 1 when the reader met
/// damage (a damaged block, a cut, totals that do not add up: what the
/// command printed is incomplete), else 0. docs/exit-codes.md.
pub fn exit_code<R: std::io::Read>(reader: &TraceReader<R>) -> std::process::ExitCode {
    damaged_code(reader.damage() > 0)
}

/// [`exit_code`] for commands that keep the reader's errors themselves.
pub fn damaged_code(damaged: bool) -> std::process::ExitCode {
    std::process::ExitCode::from(if damaged {
        magnet_common::exit::FAILED
    } else {
        magnet_common::exit::OK
    })
}

/// One line for damage found while reading (the reader goes on after it).
pub fn warn(path: &Path, err: &magnet_trace::TraceError) {
    let line = format!("{}: {err}", path.display());
    eprint_above(&format!(
        "magnet: warning: {}",
        magnet_common::text::escape(&line)
    ));
}

/// A line on stderr, above the progress bar when one is on screen.
pub fn eprint_above(line: &str) {
    let shown = SHOWN.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match shown {
        Some(b) if !b.is_finished() => b.suspend(|| eprintln!("{line}")),
        _ => eprintln!("{line}"),
    }
}

/// The trace a reading command reads: the positional TRACE, or `-r FILE` as in
/// tcpdump (every reading command takes both).
#[derive(Args, Debug, Clone)]
pub struct TraceArg {
    /// Trace file (magnet record -o …)
    #[arg(value_name = "TRACE", required_unless_present = "read")]
    file: Option<PathBuf>,
    /// Trace file, as tcpdump -r (instead of TRACE)
    #[arg(
        short = 'r',
        long = "read",
        value_name = "FILE",
        conflicts_with = "file"
    )]
    read: Option<PathBuf>,
    /// Quiet: no progress bar (drawn only when stderr is a terminal) and no summary on stderr
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

impl TraceArg {
    pub fn of(file: PathBuf) -> Self {
        TraceArg {
            file: Some(file),
            read: None,
            quiet: false,
        }
    }

    /// Opens the trace, with a progress bar on a terminal unless `-q`.
    pub fn open(&self) -> Result<TraceReader<Tracked>> {
        open(&self.path(), progress_wanted(self.quiet))
    }

    pub fn path(&self) -> PathBuf {
        self.file
            .clone()
            .or_else(|| self.read.clone())
            .unwrap_or_default()
    }
}
