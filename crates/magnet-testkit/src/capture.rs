//! A tcpdump capture running beside a test, and tshark to decode what it wrote.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::netns::next_id;
use crate::{io_err, run, show, Error, Netns, Result};

/// How long tcpdump may take to open the interface, or to finish after SIGINT.
const TCPDUMP_TIMEOUT: Duration = Duration::from_secs(15);

/// A running `tcpdump -w`. Stop it with [`Capture::stop`]; dropping it unstopped kills
/// tcpdump and deletes the file.
pub struct Capture {
    child: Child,
    path: PathBuf,
    stderr: Arc<Mutex<String>>,
    reader: Option<JoinHandle<()>>,
}

impl Capture {
    /// Starts `tcpdump -i IFACE -w FILE --immediate-mode -B 65536 -U EXTRA…` in `netns`
    /// (the caller's namespace when `None`) and returns once tcpdump says it is
    /// listening, so no packet sent after this returns is missed. `extra` may end with
    /// a filter expression (e.g. `["tcp", "port", "7000"]`).
    pub fn start(netns: Option<&Netns>, iface: &str, extra: &[&str]) -> Result<Capture> {
        let path = std::env::temp_dir().join(format!(
            "magnet-testkit-{}-{}-{iface}.pcap",
            std::process::id(),
            next_id()
        ));
        let mut cmd = crate::command(netns, "tcpdump");
        // -Z root: Debian's tcpdump otherwise drops to user `tcpdump` before opening the
        // output file, which then can't be written in root-owned temp dirs.
        cmd.args(["-i", iface, "-w"])
            .arg(&path)
            .args(["--immediate-mode", "-B", "65536", "-U", "-Z", "root"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let shown = show(&cmd);
        let mut child = cmd.spawn().map_err(io_err(format!("spawning `{shown}`")))?;

        // tcpdump's stderr is drained for its whole life (a full pipe would stall it);
        // the first "listening on" line is passed on as the ready signal.
        let stderr = Arc::new(Mutex::new(String::new()));
        let (ready_tx, ready_rx) = mpsc::channel();
        let pipe = child.stderr.take().expect("stderr is piped");
        let log = Arc::clone(&stderr);
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(|l| l.ok()) {
                if line.contains("listening on") {
                    let _ = ready_tx.send(());
                }
                let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
                log.push_str(&line);
                log.push('\n');
            }
        });
        let mut capture = Capture {
            child,
            path,
            stderr,
            reader: Some(reader),
        };
        match ready_rx.recv_timeout(TCPDUMP_TIMEOUT) {
            Ok(()) => Ok(capture),
            Err(e) => {
                // Dropped sender: tcpdump exited; timeout: it hung. Either way, stop it
                // and report what it said.
                capture.kill();
                let why = match e {
                    mpsc::RecvTimeoutError::Timeout => "did not start listening in time",
                    mpsc::RecvTimeoutError::Disconnected => "exited before listening",
                };
                Err(Error::Other(format!(
                    "`{shown}` {why}: {}",
                    capture.stderr_text().trim()
                )))
            }
        }
    }

    /// The file tcpdump writes to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops tcpdump with SIGINT and waits for it, so the file is complete (`-U` flushes
    /// each packet, SIGINT flushes the rest), and hands the file over.
    pub fn stop(mut self) -> Result<PcapFile> {
        self.settle();
        let pid = Pid::from_raw(self.child.id() as i32);
        kill(pid, Signal::SIGINT).map_err(|e| Error::Other(format!("SIGINT tcpdump: {e}")))?;
        let deadline = Instant::now() + TCPDUMP_TIMEOUT;
        let status = loop {
            if let Some(status) = self
                .child
                .try_wait()
                .map_err(io_err("waiting for tcpdump"))?
            {
                break status;
            }
            if Instant::now() > deadline {
                self.kill();
                return Err(Error::Other("tcpdump did not exit after SIGINT".into()));
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let log = self.stderr_text();
        if !status.success() {
            return Err(Error::Other(format!(
                "tcpdump exited {status}: {}",
                log.trim()
            )));
        }
        let count = |what: &str| {
            log.lines()
                .find(|l| l.ends_with(what))
                .and_then(|l| l.split_whitespace().next()?.parse().ok())
        };
        let file = PcapFile {
            path: std::mem::take(&mut self.path),
            captured: count("packets captured"),
            received_by_filter: count("packets received by filter"),
            dropped_by_kernel: count("packets dropped by kernel"),
        };
        Ok(file)
    }

    /// Waits until the file has stopped growing for a while (at most a few seconds).
    /// On SIGINT tcpdump leaves its loop at once, and packets still in the kernel ring
    /// that it had not written yet are lost from the file; with `-U` every packet it
    /// handles is written at once, so a still file means the ring is drained.
    fn settle(&self) {
        const QUIET: Duration = Duration::from_millis(150);
        let deadline = Instant::now() + Duration::from_secs(3);
        let size = || std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0);
        let (mut last, mut since) = (size(), Instant::now());
        while since.elapsed() < QUIET && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            let now = size();
            if now != last {
                (last, since) = (now, Instant::now());
            }
        }
    }

    fn stderr_text(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if self.reader.is_some() {
            self.kill();
        }
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A finished capture file. Deleted on drop unless `MAGNET_KEEP_CAPTURES=1` is set
/// (to look at it after a failure) or [`PcapFile::keep`] is called.
#[derive(Debug)]
pub struct PcapFile {
    path: PathBuf,
    /// tcpdump's "N packets captured", if it said.
    pub captured: Option<u64>,
    /// tcpdump's "N packets received by filter": more than `captured` means some were
    /// still unread when it stopped.
    pub received_by_filter: Option<u64>,
    /// tcpdump's "N packets dropped by kernel", if it said: non-zero means the file
    /// is not the whole truth.
    pub dropped_by_kernel: Option<u64>,
}

impl PcapFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Keeps the file past this value's life and returns its path.
    pub fn keep(mut self) -> PathBuf {
        std::mem::take(&mut self.path)
    }
}

impl AsRef<Path> for PcapFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl std::ops::Deref for PcapFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl Drop for PcapFile {
    fn drop(&mut self) {
        let keep = std::env::var("MAGNET_KEEP_CAPTURES").as_deref() == Ok("1");
        if !keep && !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Decodes `path` with `tshark -r PATH -n [-Y FILTER] -T fields -e F…` and returns one
/// row per matching packet, one string per field (empty when the packet lacks it;
/// repeated fields joined by `,`). An empty `display_filter` matches every packet.
pub fn tshark_fields(
    path: impl AsRef<Path>,
    display_filter: &str,
    fields: &[&str],
) -> Result<Vec<Vec<String>>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(path.as_ref()).arg("-n");
    if !display_filter.is_empty() {
        cmd.args(["-Y", display_filter]);
    }
    cmd.args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=a"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = run(&mut cmd)?;
    Ok(out
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect())
}

/// Like [`tshark_fields`] with IP reassembly off, so each fragment is a row of its
/// own (as it was on the wire), and the first occurrence of a repeated field only
/// (the outer header). Rows that lack a field are dropped.
pub fn tshark_frames(path: impl AsRef<Path>, fields: &[&str]) -> Result<Vec<Vec<String>>> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(path.as_ref()).args([
        "-n",
        "-o",
        "ip.defragment:FALSE",
        "-o",
        "ipv6.defragment:FALSE",
    ]);
    cmd.args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = run(&mut cmd)?;
    Ok(out
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect::<Vec<_>>())
        .filter(|r| r.len() == fields.len())
        .collect())
}
