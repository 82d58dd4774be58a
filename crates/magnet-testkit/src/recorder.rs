//! A `magnet record` (or any command that says `magnet: recording …` on stderr once
//! its hooks are attached) started in the background, returned once it records, so
//! that traffic made next is in the trace without sleeping.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;

/// The line `magnet record` writes to stderr when every hook is attached.
pub const RECORDING_LINE: &str = "magnet: recording ";

/// A recorder running in the background. Its stderr is drained on a thread of
/// its own, so it never blocks on a full pipe.
pub struct Recorder {
    child: Child,
    stderr: JoinHandle<String>,
}

/// What a recorder left when it ended.
#[derive(Debug)]
pub struct Ended {
    pub status: ExitStatus,
    /// Its stdout when the command piped it (else empty).
    pub stdout: String,
    /// Everything it wrote to stderr, the `magnet: recording` line included.
    pub stderr: String,
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

impl Recorder {
    /// Spawns `cmd` (stdin from /dev/null, stderr piped; stdout as the caller set it,
    /// else discarded) and returns once it wrote [`RECORDING_LINE`]. Panics, with
    /// what it wrote, when it ends before that.
    pub fn start(mut cmd: Command) -> Recorder {
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
                panic!("`{shown}` ended before recording: {seen}");
            }
            seen.push_str(&line);
            if line.starts_with(RECORDING_LINE) {
                break;
            }
        }
        let stderr = std::thread::spawn(move || {
            let mut rest = seen;
            let _ = err.read_to_string(&mut rest);
            rest
        });
        Recorder { child, stderr }
    }

    /// The recorder's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM (a recorder's clean stop) without waiting.
    pub fn terminate(&self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }

    /// Sends SIGKILL (no clean stop: the trace has no END block) and waits.
    pub fn kill(mut self) -> Ended {
        let _ = self.child.kill();
        self.wait()
    }

    /// Stops the recorder with SIGTERM after `settle` (time for the stack's last
    /// events to drain) and waits for it.
    pub fn stop_after(self, settle: std::time::Duration) -> Ended {
        std::thread::sleep(settle);
        self.terminate();
        self.wait()
    }

    /// Waits for the recorder to end by itself (`--duration`, `-- CMD`).
    pub fn wait(self) -> Ended {
        let out = self
            .child
            .wait_with_output()
            .expect("waiting for the recorder");
        let stderr = self.stderr.join().unwrap_or_default();
        Ended {
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr,
        }
    }
}
