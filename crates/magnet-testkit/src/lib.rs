//! Test harness for magnet's live tests.
//!
//! Live tests run as root and build several "hosts" on one machine: network namespaces
//! joined by veth pairs, made and torn down by the test itself, so that a test drives
//! real traffic between real stacks and asserts exact numbers from a workload whose
//! truth it knows (N sends of S bytes, interface counters, a tshark decode of the same
//! traffic). This crate gives them:
//!
//! - [`live_or_skip`]: the skip rule (root plus listed [`Need`]s; a skip is a failure
//!   when `MAGNET_REQUIRE_LIVE=1`);
//! - [`Netns`], [`Veth`], [`Chain`], [`Rack`]: namespaces and links with RAII teardown
//!   and names unique per process and per call, so tests can run in parallel threads;
//! - [`run_in_netns`] and [`command`]: run code or a program inside a namespace;
//! - [`Capture`] and [`tshark_fields`]: a tcpdump capture and its tshark decode;
//! - [`Recorder`]: `magnet record` started in the background, returned once it records;
//! - [`Server`], [`nginx`], [`wait_listening`]: real servers started before a recorder;
//! - [`iface_counters`], [`qdisc`], [`tbf`], [`netem`], [`offloads_off`];
//! - [`Chromium`]: headless Chromium for the HTML report's tests;
//! - [`scratch_dir`]: a per-process scratch directory removed at exit;
//! - [`heap`]: a counting allocator, for readers whose memory must stay bounded;
//! - [`csv_fields`]: one line of a CSV export split into its fields;
//! - [`pin_current_thread`]: one CPU for a connection whose order a test counts.
//!
//! Everything shells out to iproute2, tc, tcpdump, tshark and ethtool, the same tools a
//! person would use to check the result by hand.
//!
//! ```no_run
//! use magnet_testkit::{live_or_skip, Netns, Side, Veth, run_in_netns};
//! if !live_or_skip("doc_example", &[]) {
//!     return;
//! }
//! let ns = Netns::new().unwrap();
//! let link = Veth::pair(Side::Root, Side::Ns(&ns)).unwrap();
//! // A socket belongs to the namespace it was created in, whatever thread uses it later.
//! let addr = (link.b().addr(), 7000);
//! let listener = run_in_netns(&ns, || std::net::TcpListener::bind(addr)).unwrap().unwrap();
//! let _client = std::net::TcpStream::connect(addr).unwrap();
//! let _ = listener.accept().unwrap();
//! ```

mod blind;
mod browser;
mod capture;
mod cpu;
mod csv;
pub mod heap;
mod link;
mod netns;
mod recorder;
mod scratch;
mod server;
mod topo;
mod wire;

use std::path::Path;
use std::process::{Command, Stdio};

pub use blind::BlindSpot;
pub use browser::{console_lines, Chromium};
pub use capture::{tshark_fields, tshark_frames, Capture, PcapFile};
pub use cpu::{first_allowed_cpu, pin_current_thread};
pub use csv::csv_fields;
pub use link::{
    iface_counters, netem, offloads_off, qdisc, qdisc_available, tbf, Counters, End, Side, Subnet,
    Veth,
};
pub use netns::{command, run_in_netns, Netns};
pub use recorder::{Ended, Recorder, RECORDING_LINE, SETTLE};
pub use scratch::scratch_dir;
pub use server::{haproxy, nginx, nginx_workers, wait_listening, Server};
pub use topo::{Chain, Rack};
pub use wire::{wire_frames, Frame};

/// Errors from the kit. Each one names the command or file involved.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An external command ran and failed.
    #[error("`{cmd}` failed ({status}): {stderr}")]
    Command {
        cmd: String,
        status: String,
        stderr: String,
    },
    /// A file or system call failed.
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// Anything else, said in words.
    #[error("{0}")]
    Other(String),
}

pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// Something a live test needs besides root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// An executable on `PATH`, e.g. `Need::Tool("tcpdump")`.
    Tool(&'static str),
    /// Kernel BTF (`/sys/kernel/btf/vmlinux`), which CO-RE BPF programs load against.
    Btf,
    /// Any file or directory that must exist.
    File(&'static str),
    /// A qdisc kind the kernel has, e.g. `Need::Qdisc("netem")` (not every test
    /// kernel builds netem, fq or fq_codel).
    Qdisc(&'static str),
}

impl Need {
    fn missing(&self) -> Option<String> {
        match *self {
            Need::Tool(name) => (!on_path(name)).then(|| format!("`{name}` not found on PATH")),
            Need::Btf => (!Path::new("/sys/kernel/btf/vmlinux").exists())
                .then(|| "no kernel BTF at /sys/kernel/btf/vmlinux".to_string()),
            Need::File(path) => (!Path::new(path).exists()).then(|| format!("{path} missing")),
            Need::Qdisc(kind) => {
                (!link::qdisc_available(kind)).then(|| format!("kernel has no `{kind}` qdisc"))
            }
        }
    }
}

fn on_path(name: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        let p = dir.join(name);
        // Executable by someone is enough: tests run as root.
        std::fs::metadata(&p)
            .map(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
            .unwrap_or(false)
    })
}

/// Whether a live test may run. Checks root (euid 0) and every need.
///
/// When something is missing: with `MAGNET_REQUIRE_LIVE=1` this panics with the reason,
/// because in CI a skipped live test is a test that did not pass; otherwise it prints
/// `SKIP <test_name>: <reason>` to stderr and returns `false`.
pub fn live_or_skip(test_name: &str, needs: &[Need]) -> bool {
    let mut reasons = Vec::new();
    if !nix::unistd::geteuid().is_root() {
        reasons.push("needs root (euid 0)".to_string());
    }
    reasons.extend(needs.iter().filter_map(Need::missing));
    if reasons.is_empty() {
        return true;
    }
    let reason = reasons.join("; ");
    if std::env::var("MAGNET_REQUIRE_LIVE").as_deref() == Ok("1") {
        panic!("live test {test_name} cannot run and MAGNET_REQUIRE_LIVE=1: {reason}");
    }
    // Written to the stderr handle, not with eprintln!: the test harness captures the
    // macros' output of passing tests, and a skip must be visible.
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIP {test_name}: {reason}");
    false
}

/// Runs a command to completion and returns its stdout, or an error carrying stderr.
pub(crate) fn run(cmd: &mut Command) -> Result<String> {
    let shown = show(cmd);
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(io_err(format!("spawning `{shown}`")))?;
    if !out.status.success() {
        return Err(Error::Command {
            cmd: shown,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs a command for teardown: failures are expected (the thing may already be gone
/// with its namespace) and must not hide the test's own panic, so they are ignored.
pub(crate) fn run_quiet(cmd: &mut Command) {
    let _ = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

pub(crate) fn show(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Builds `ip ARGS…`, inside `netns` when given (`ip -n NAME`).
pub(crate) fn ip(netns: Option<&Netns>, args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    if let Some(ns) = netns {
        c.args(["-n", ns.name()]);
    }
    c.args(args);
    c
}
