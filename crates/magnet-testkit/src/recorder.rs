//! A `magnet record` (or any command that says `magnet: recording …` on stderr once
//! its hooks are attached, or another line given) started in the background,
//! returned once it records, so that traffic made next is in the trace without
//! sleeping.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::Netns;

/// The line `magnet record` writes to stderr when every hook is attached.
pub const RECORDING_LINE: &str = "magnet: recording ";

/// A recorder running in the background. Its stderr is drained on a thread of
/// its own, so it never blocks on a full pipe.
pub struct Recorder {
    /// None once waited for (Drop then has nothing to stop).
    child: Option<Child>,
    stderr: Option<JoinHandle<String>>,
    trace: Option<PathBuf>,
}

/// A recorder left running by a test that panicked would go on recording
/// (and hold every network namespace it attached hooks in) through the
/// tests after it: killed here.
impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// What a recorder left when it ended.
#[derive(Debug)]
pub struct Ended {
    pub status: ExitStatus,
    /// Its stdout when the command piped it (else empty).
    pub stdout: String,
    /// Everything it wrote to stderr, the `magnet: recording` line included.
    pub stderr: String,
    /// The trace it wrote, when started by [`Recorder::record`].
    pub trace: Option<PathBuf>,
}

impl Ended {
    /// Panics, with the recorder's stderr, unless it exited 0.
    pub fn success(self) -> Ended {
        assert!(
            self.status.success(),
            "magnet record failed ({}): {}",
            self.status,
            self.stderr
        );
        self
    }
}

/// How long [`Recorder::stop`] leaves the stack's last events to drain.
pub const SETTLE: Duration = Duration::from_millis(300);

impl Recorder {
    /// `MAGNET record -o TRACE ARGS…` (stdout discarded), in `netns` when given,
    /// returned once it records: the live tests' usual recorder. `magnet` is the
    /// binary (`env!("CARGO_BIN_EXE_magnet")` in the CLI's tests).
    pub fn record<A: AsRef<OsStr>>(
        magnet: &str,
        netns: Option<&Netns>,
        trace: &Path,
        args: &[A],
    ) -> Recorder {
        let mut cmd = crate::command(netns, magnet);
        cmd.arg("record")
            .arg("-o")
            .arg(trace)
            .args(args)
            .stdout(Stdio::null());
        let mut r = Recorder::start(cmd);
        r.trace = Some(trace.to_path_buf());
        r
    }

    /// Spawns `cmd` (stdin from /dev/null, stderr piped; stdout as the caller set it,
    /// else discarded) and returns once it wrote [`RECORDING_LINE`]. Panics, with
    /// what it wrote, when it ends before that.
    pub fn start(cmd: Command) -> Recorder {
        Recorder::start_until(cmd, RECORDING_LINE)
    }

    /// [`Recorder::start`] for a program that says it is ready with another
    /// line: returns once a line of its stderr starts with `ready` (e.g.
    /// `magnetd: ready`).
    pub fn start_until(mut cmd: Command, ready: &str) -> Recorder {
        cmd.stdin(Stdio::null()).stderr(Stdio::piped());
        let shown = crate::show(&cmd);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawning `{shown}`: {e}"));
        let mut err = BufReader::new(child.stderr.take().expect("stderr piped"));
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            if err.read_line(&mut line).unwrap_or(0) == 0 {
                let _ = child.wait();
                panic!("`{shown}` ended before saying `{ready}`: {seen}");
            }
            seen.push_str(&line);
            if line.starts_with(ready) {
                break;
            }
        }
        let stderr = std::thread::spawn(move || {
            let mut rest = seen;
            let _ = err.read_to_string(&mut rest);
            rest
        });
        Recorder {
            child: Some(child),
            stderr: Some(stderr),
            trace: None,
        }
    }

    /// The recorder's process id.
    pub fn id(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Sends SIGTERM (a recorder's clean stop) without waiting.
    pub fn terminate(&self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }

    /// Sends SIGKILL (no clean stop: the trace has no END block) and waits.
    pub fn kill(mut self) -> Ended {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
        }
        self.wait()
    }

    /// Stops the recorder with SIGTERM after `settle` (time for the stack's last
    /// events to drain) and waits for it.
    pub fn stop_after(self, settle: std::time::Duration) -> Ended {
        std::thread::sleep(settle);
        self.terminate();
        self.wait()
    }

    /// The usual clean stop: SIGTERM after [`SETTLE`]; panics, with its stderr,
    /// unless it exited 0.
    pub fn stop(self) -> Ended {
        self.stop_after(SETTLE).success()
    }

    /// Waits for the recorder to end by itself (`--duration`, `-- CMD`).
    pub fn wait(mut self) -> Ended {
        let out = self
            .child
            .take()
            .expect("a recorder is waited for once")
            .wait_with_output()
            .expect("waiting for the recorder");
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        Ended {
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr,
            trace: self.trace.take(),
        }
    }
}
