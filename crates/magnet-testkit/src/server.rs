//! Real server programs (nginx, haproxy, redis-server, sshd, …) started by a
//! live test, stopped on drop, and the nginx and haproxy configurations the
//! tests share.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::Netns;

/// A server process and its scratch directory: on drop, SIGTERM (nginx's master
/// ends its workers, sshd its sessions; SIGKILL would orphan them), SIGKILL after
/// 5 s, and the directory removed.
pub struct Server {
    pub child: Child,
    pub dir: PathBuf,
}

impl Server {
    /// Spawns `cmd` with no stdin or stderr (stdout as the caller set it), owning
    /// `dir`.
    pub fn spawn(mut cmd: Command, dir: &Path) -> Server {
        let shown = crate::show(&cmd);
        let child = cmd
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawning `{shown}`: {e}"));
        Server {
            child,
            dir: dir.to_path_buf(),
        }
    }

    /// The server's main process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
        let t0 = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() {
            if t0.elapsed() > Duration::from_secs(5) {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `nginx` in `netns` (in the foreground, a master and one worker, sendfile on,
/// keep-alive, no access log) serving `dir` on `listen` (an nginx `listen`
/// value: `ADDR:PORT` and its options, e.g. `127.0.0.1:80 sndbuf=64k`); its
/// configuration, pid file, error log and temporary files in `dir`.
pub fn nginx(netns: &Netns, dir: &Path, listen: &str) -> Command {
    nginx_workers(netns, dir, listen, 1, false)
}

/// [`nginx`] with `workers` worker processes and, with `access_log`, a log in
/// `dir/access.log` of one line per request: the pid of the worker that served
/// it and the client's port (`$pid $remote_port`), written as each request ends.
pub fn nginx_workers(
    netns: &Netns,
    dir: &Path,
    listen: &str,
    workers: u32,
    access_log: bool,
) -> Command {
    let d = dir.display();
    let conf = dir.join("nginx.conf");
    let log = if access_log {
        format!("log_format workers '$pid $remote_port'; access_log {d}/access.log workers;")
    } else {
        "access_log off;".to_string()
    };
    std::fs::write(
        &conf,
        format!(
            "daemon off; master_process on; worker_processes {workers}; pid {d}/nginx.pid;\n\
             error_log {d}/error.log;\n\
             events {{ worker_connections 64; }}\n\
             http {{ {log} sendfile on; keepalive_timeout 30;\n\
               client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d};\n\
               uwsgi_temp_path {d}; scgi_temp_path {d};\n\
               server {{ listen {listen}; root {d}; }} }}\n"
        ),
    )
    .unwrap_or_else(|e| panic!("writing {}: {e}", conf.display()));
    let mut c = netns.command("nginx");
    c.args(["-e", &format!("{d}/error.log"), "-c"]).arg(&conf);
    c
}

/// `haproxy` in `netns` (in the foreground, one thread, `mode tcp`) forwarding
/// each connection to `bind` (`ADDR:PORT`) to `server` (`ADDR:PORT`), with
/// `options` as lines of its `defaults` section (e.g. `option splice-auto`); its
/// configuration in `dir/haproxy.cfg`.
pub fn haproxy(netns: &Netns, dir: &Path, bind: &str, server: &str, options: &[&str]) -> Command {
    let conf = dir.join("haproxy.cfg");
    let options: String = options.iter().map(|o| format!("  {o}\n")).collect();
    std::fs::write(
        &conf,
        format!(
            "global\n  nbthread 1\n\
             defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  \
             timeout server 30s\n{options}\
             frontend fe\n  bind {bind}\n  default_backend be\n\
             backend be\n  server s1 {server}\n"
        ),
    )
    .unwrap_or_else(|e| panic!("writing {}: {e}", conf.display()));
    let mut c = netns.command("haproxy");
    c.arg("-db").arg("-f").arg(&conf);
    c
}

/// Waits (up to 20 s) until a TCP socket listens on `port` in `netns`, read
/// from the namespace's /proc/net/tcp and tcp6 (a connection would be the
/// server's first client). Not `ss`: its sock_diag dump assigns each socket
/// its cookie, which the kernel otherwise gives lazily, so a recorder started
/// after it would meet listeners already given one, unlike a user's.
pub fn wait_listening(netns: &Netns, port: u16) {
    let t0 = Instant::now();
    let want = format!(":{port:04X}");
    let listening = || {
        netns
            .command("cat")
            .args(["/proc/net/tcp", "/proc/net/tcp6"])
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout).lines().any(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    // sl local_address rem_address st: 0A is LISTEN
                    f.len() > 3 && f[1].ends_with(&want) && f[3] == "0A"
                })
            })
            .unwrap_or(false)
    };
    while !listening() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "nothing listens on {port} in {netns:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
