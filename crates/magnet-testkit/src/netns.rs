//! Named network namespaces (`ip netns add`) with teardown on drop, and ways to run code
//! or programs inside them.

use std::fs::File;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Once};

use nix::sched::{setns, CloneFlags};

use crate::{io_err, ip, run, run_quiet, Error, Result};

/// Prefix of every namespace this kit makes; followed by `<pid>-<n>` so that a
/// namespace left by a killed test process can be recognised and reaped.
const NS_PREFIX: &str = "magnet-";

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A number unique within this process, for names.
pub(crate) fn next_id() -> u32 {
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// A named network namespace. Cheap to clone; the namespace is deleted when the last
/// clone is dropped (links inside it go with it).
#[derive(Clone)]
pub struct Netns(Arc<Inner>);

struct Inner {
    name: String,
}

impl Drop for Inner {
    fn drop(&mut self) {
        run_quiet(Command::new("ip").args(["netns", "del", &self.name]));
    }
}

impl std::fmt::Debug for Netns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Netns({})", self.name())
    }
}

impl Netns {
    /// Creates `magnet-<pid>-<n>` with `lo` up and IPv6 off.
    ///
    /// IPv6 is off so that neighbour discovery and MLD reports do not add packets to
    /// captures and interface counters that tests compare exactly.
    pub fn new() -> Result<Netns> {
        static REAP: Once = Once::new();
        REAP.call_once(reap_stale);

        let name = format!("{NS_PREFIX}{}-{}", std::process::id(), next_id());
        run(Command::new("ip").args(["netns", "add", &name]))?;
        // From here on Drop cleans up, even if the rest fails.
        let ns = Netns(Arc::new(Inner { name }));
        ns.sysctl("net/ipv6/conf/all/disable_ipv6", "1")?;
        ns.sysctl("net/ipv6/conf/default/disable_ipv6", "1")?;
        run(&mut ip(Some(&ns), &["link", "set", "lo", "up"]))?;
        Ok(ns)
    }

    /// The namespace's name, as `ip netns list` shows it.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The bind mount that keeps the namespace alive: `/run/netns/<name>`.
    pub fn path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(self.name())
    }

    /// The namespace's inode number: what magnet's records, `--netns` and
    /// `analyze`'s `netns` name it by.
    pub fn inode(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(self.path())
            .expect("the namespace's bind mount")
            .ino()
    }

    /// `ip netns exec <name> <program>`: a program run inside the namespace (with its
    /// own `/sys`, so `/sys/class/net` shows this namespace's interfaces).
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", self.name(), program]);
        c
    }

    /// Writes `/proc/sys/<key>` (e.g. `net/ipv4/ip_forward`) inside the namespace.
    pub fn sysctl(&self, key: &str, value: &str) -> Result<()> {
        let path = format!("/proc/sys/{key}");
        run_in_netns(self, || std::fs::write(&path, value))?
            .map_err(io_err(format!("writing {path} in netns {}", self.name())))
    }

    /// A counter of the namespace's `/proc/net/netstat` or `/proc/net/snmp`
    /// (e.g. `("TcpExt", "TCPOFOQueue")`, `("Tcp", "RetransSegs")`: what
    /// nstat shows as `TcpExtTCPOFOQueue`, `TcpRetransSegs`), the kernel's own
    /// count of what it saw.
    pub fn netstat(&self, group: &str, key: &str) -> Result<u64> {
        // /proc/self/net is the thread-group leader's namespace; the thread
        // that entered this one reads its own through thread-self.
        let text = run_in_netns(self, || {
            Ok::<_, std::io::Error>(
                std::fs::read_to_string("/proc/thread-self/net/netstat")?
                    + &std::fs::read_to_string("/proc/thread-self/net/snmp")?,
            )
        })?
        .map_err(io_err(format!("reading netstat in netns {}", self.name())))?;
        let prefix = format!("{group}:");
        let mut rows = text.lines().filter(|l| l.starts_with(&prefix));
        let (names, values) = (rows.next(), rows.next());
        names
            .zip(values)
            .and_then(|(n, v)| {
                n.split_whitespace()
                    .zip(v.split_whitespace())
                    .find(|(name, _)| *name == key)
                    .and_then(|(_, value)| value.parse().ok())
            })
            .ok_or_else(|| {
                crate::Error::Other(format!(
                    "no {group} {key} in netns {}'s netstat",
                    self.name()
                ))
            })
    }

    /// Aborts the TCP connections that `ss` filter `filter` selects here (e.g.
    /// `["state", "established", "sport", "=", ":80"]`), as `ss -K` does: each sends
    /// a reset and leaves the connection tables at once, while its owner still holds
    /// the socket. A kernel built without socket destruction
    /// (CONFIG_INET_DIAG_DESTROY) lets `ss -K` do nothing; then each owner's socket
    /// is taken with pidfd_getfd(2) and disconnected (connect(AF_UNSPEC), the same
    /// reset and the same state), which is said in one line. Errors when nothing
    /// matched or a connection is left.
    pub fn abort_tcp(&self, filter: &[&str]) -> Result<()> {
        let listed = |extra: &str| -> Result<String> {
            let out = self
                .command("ss")
                .args(["-Htn", extra])
                .args(filter)
                .output()
                .map_err(io_err("running ss".to_string()))?;
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        };
        let owners = socket_owners(&listed("-p")?);
        if owners.is_empty() {
            return Err(Error::Other(format!(
                "no TCP connection with an owner matches {filter:?} in netns {}",
                self.name()
            )));
        }
        // ss -K exits 0 also where the kernel cannot destroy sockets.
        let _ = self
            .command("ss")
            .args(["-K", "-tn"])
            .args(filter)
            .output()
            .map_err(io_err("running ss -K".to_string()))?;
        if listed("-n")?.trim().is_empty() {
            return Ok(());
        }
        eprintln!(
            "ss -K left {filter:?} (a kernel built without CONFIG_INET_DIAG_DESTROY): \
             disconnecting its owners' sockets instead (pidfd_getfd, connect AF_UNSPEC)"
        );
        for (pid, fd) in owners {
            run(Command::new("python3").args([
                "-c",
                DISCONNECT_PY,
                &pid.to_string(),
                &fd.to_string(),
            ]))?;
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !listed("-n")?.trim().is_empty() {
            if std::time::Instant::now() > deadline {
                return Err(Error::Other(format!(
                    "{filter:?} still listed after its sockets were disconnected"
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Ok(())
    }

    /// Turns IPv4 forwarding on or off, for namespaces that relay.
    pub fn set_forwarding(&self, on: bool) -> Result<()> {
        self.sysctl("net/ipv4/ip_forward", if on { "1" } else { "0" })
    }
}

/// Disconnects socket `fd` of process `pid` (argv 1, 2): a TCP connect() to
/// AF_UNSPEC runs tcp_disconnect, which resets an open connection.
const DISCONNECT_PY: &str = "import ctypes,os,sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(438, os.pidfd_open(int(sys.argv[1])), int(sys.argv[2]), 0)
if fd < 0: raise OSError(ctypes.get_errno(), 'pidfd_getfd')
if libc.connect(fd, (ctypes.c_ubyte * 16)(), 16) < 0:
    raise OSError(ctypes.get_errno(), 'connect(AF_UNSPEC)')
";

/// The (pid, fd) pairs of `ss -p`'s `users:(("name",pid=N,fd=M),…)` columns.
fn socket_owners(ss_p: &str) -> Vec<(u32, u32)> {
    let mut owners: Vec<(u32, u32)> = ss_p
        .split("pid=")
        .skip(1)
        .filter_map(|rest| {
            let (pid, rest) = rest.split_once(",fd=")?;
            let fd: String = rest.chars().take_while(char::is_ascii_digit).collect();
            Some((pid.parse().ok()?, fd.parse().ok()?))
        })
        .collect();
    owners.sort_unstable();
    owners.dedup();
    owners
}

/// A command run in `netns`, or in the caller's namespace when `None`.
pub fn command(netns: Option<&Netns>, program: &str) -> Command {
    match netns {
        Some(ns) => ns.command(program),
        None => Command::new(program),
    }
}

/// Runs `f` on a new thread that has `setns`'d into `netns`, and returns its result.
///
/// Sockets made inside `f` stay in that namespace after it returns, so a listener can
/// be bound here and accepted on from any thread. Only the network namespace changes:
/// `/sys` still shows the caller's interfaces (use [`Netns::command`] or
/// [`crate::iface_counters`] for those). A panic in `f` is passed on to the caller.
pub fn run_in_netns<R, F>(netns: &Netns, f: F) -> Result<R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    let path = netns.path();
    let file = File::open(&path).map_err(io_err(format!("opening {}", path.display())))?;
    let joined = std::thread::scope(|s| {
        s.spawn(move || {
            setns(&file, CloneFlags::CLONE_NEWNET)
                .map_err(|e| Error::Other(format!("setns into {}: {e}", path.display())))?;
            Ok(f())
        })
        .join()
    });
    match joined {
        Ok(r) => r,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// Deletes namespaces (and root-namespace links) left behind by test processes that
/// no longer exist, e.g. killed by a timeout before their Drop ran. Only names this
/// kit makes are touched, and only when the owning pid is gone, so concurrent test
/// runs of other people are safe.
fn reap_stale() {
    let dead = |pid: u32| !std::path::Path::new(&format!("/proc/{pid}")).exists();
    if let Ok(dir) = std::fs::read_dir("/run/netns") {
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix(NS_PREFIX)
                .and_then(|rest| rest.split('-').next())
                .and_then(|p| p.parse::<u32>().ok());
            if pid.is_some_and(dead) {
                run_quiet(Command::new("ip").args(["netns", "del", &name]));
            }
        }
    }
    if let Ok(dir) = std::fs::read_dir("/sys/class/net") {
        for entry in dir.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(pid) = crate::link::owner_pid(&name) {
                if dead(pid) {
                    run_quiet(Command::new("ip").args(["link", "del", &name]));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::socket_owners;

    #[test]
    fn socket_owners_reads_every_user_of_ss_p() {
        let line = "ESTAB 0 0 10.0.0.2:80 10.0.0.1:4000 \
                    users:((\"nginx\",pid=812,fd=7),(\"nginx\",pid=813,fd=7),(\"nginx\",pid=812,fd=7))\n";
        assert_eq!(socket_owners(line), vec![(812, 7), (813, 7)]);
        assert!(socket_owners("ESTAB 0 0 a:1 b:2\n").is_empty());
    }
}
