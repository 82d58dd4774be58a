//! Live tests against a real NFS server (nfs-ganesha with the VFS backend, rpcbind) and
//! real clients (a libnfs program, rpcinfo), in two network namespaces joined by a veth
//! pair, captured by tcpdump. Each test checks magnet's decode against tshark's, RPC by
//! RPC, and the bytes nfstrace attributes to each file against the workload's truth.
//!
//! Needs root and: ganesha.nfsd (nfs-ganesha, nfs-ganesha-vfs), rpcbind, rpcinfo,
//! tcpdump, tshark, gcc and libnfs-dev. Skipped with a reason otherwise; with
//! MAGNET_REQUIRE_LIVE=1 a skip is a failure.

mod support;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use magnet_rpc::nfstrace::NfsTrace;
use magnet_rpc::Transport;
use magnet_testkit::{live_or_skip, Capture, Need, Netns, Side, Veth};

const NEEDS: &[Need] = &[
    Need::Tool("ganesha.nfsd"),
    Need::Tool("rpcbind"),
    Need::Tool("rpcinfo"),
    Need::Tool("tcpdump"),
    Need::Tool("tshark"),
    Need::Tool("gcc"),
    Need::Tool("unshare"),
    Need::File("/usr/include/nfsc/libnfs.h"),
    Need::File("/usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so"),
];

fn scratch(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let d = std::env::temp_dir().join(format!("magnet-rpc-{}-{tag}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The libnfs workload program, compiled once per test run.
fn workload() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/nfs-workload.c");
        // Built into cargo's scratch directory for integration tests, not /tmp.
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nfs-workload");
        let st = Command::new("gcc")
            .args(["-O1", "-Wall", "-o"])
            .arg(&out)
            .arg(&src)
            .arg("-lnfs")
            .status()
            .expect("run gcc");
        assert!(st.success(), "compiling {} failed", src.display());
        out
    })
}

/// ganesha + rpcbind in their own network and mount namespaces, and a client namespace.
/// Dropping it stops the daemons, removes the namespaces and the scratch directory.
struct Server {
    daemons: Child,
    dir: PathBuf,
    veth: Veth,
    client: Netns,
    _server: Netns,
}

impl Drop for Server {
    fn drop(&mut self) {
        let pg = -(self.daemons.id() as i32);
        unsafe {
            libc_kill(pg, 15);
        }
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.daemons.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        unsafe {
            libc_kill(pg, 9);
        }
        let _ = self.daemons.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

impl Server {
    fn start() -> Server {
        let server = Netns::new().expect("server netns");
        let client = Netns::new().expect("client netns");
        let veth = Veth::pair(Side::Ns(&server), Side::Ns(&client)).expect("veth");
        let addr = veth.a().addr();
        let dir = scratch("ganesha");
        let export = dir.join("export");
        std::fs::create_dir_all(&export).unwrap();
        std::fs::write(
            dir.join("ganesha.conf"),
            format!(
                "NFS_CORE_PARAM {{ Protocols = 3, 4; Enable_NLM = false; Enable_RQUOTA = false; Bind_addr = {addr}; }}\n\
                 NFSV4 {{ Graceless = true; }}\n\
                 EXPORT {{ Export_Id = 1; Path = {}; Pseudo = /export; Access_Type = RW; Squash = No_Root_Squash;\n\
                 Protocols = 3, 4; Transports = TCP, UDP; SecType = sys; FSAL {{ Name = VFS; }} }}\n\
                 LOG {{ Default_Log_Level = WARN; }}\n",
                export.display()
            ),
        )
        .unwrap();
        // Private /run and /var/lib/nfs so rpcbind's and ganesha's sockets, locks and
        // state never meet the host's or another test's.
        std::fs::write(
            dir.join("run.sh"),
            format!(
                "set -e\nmount -t tmpfs tmpfs /run\nmkdir -p /run/rpcbind /run/ganesha\n\
                 mount -t tmpfs tmpfs /var/lib/nfs 2>/dev/null || mkdir -p /var/lib/nfs\n\
                 mkdir -p /var/lib/nfs/ganesha\nrpcbind -f -w &\nsleep 0.3\n\
                 exec ganesha.nfsd -F -f {d}/ganesha.conf -L {d}/ganesha.log -p {d}/ganesha.pid\n",
                d = dir.display()
            ),
        )
        .unwrap();
        let daemons = Command::new("ip")
            .args([
                "netns",
                "exec",
                server.name(),
                "unshare",
                "-m",
                "--propagation",
                "private",
                "sh",
            ])
            .arg(dir.join("run.sh"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start ganesha");
        let s = Server {
            daemons,
            dir,
            veth,
            client,
            _server: server,
        };
        // Ready when NFSv3 and v4 answer a NULL call over TCP.
        let t = Instant::now();
        loop {
            let ok = ["3", "4"].iter().all(|v| {
                s.client
                    .command("rpcinfo")
                    .args(["-T", "tcp", &addr.to_string(), "100003", v])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|st| st.success())
            });
            if ok {
                break;
            }
            let log = std::fs::read_to_string(s.dir.join("ganesha.log")).unwrap_or_default();
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "ganesha did not come up: {log}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        s
    }

    fn addr(&self) -> String {
        self.veth.a().addr().to_string()
    }

    fn capture(&self) -> Capture {
        Capture::start(Some(&self.client), self.veth.b().name(), &[]).expect("tcpdump")
    }

    fn run_client(&self, prog: &str, args: &[&str]) {
        let out = self
            .client
            .command(prog)
            .args(args)
            .output()
            .expect("client");
        assert!(
            out.status.success(),
            "{prog} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The NFS workload over TCP with version `vers`, checked against tshark and against
/// the bytes it read and wrote.
fn nfs_workload(vers: u32) {
    let srv = Server::start();
    let export_path = srv.dir.join("export").display().to_string();
    let (export, root) = if vers == 3 {
        (export_path.clone(), export_path)
    } else {
        ("/export".to_string(), "/export".to_string())
    };
    let cap = srv.capture();
    srv.run_client(
        workload().to_str().unwrap(),
        &[&srv.addr(), &export, &vers.to_string()],
    );
    let pcap = cap.stop().expect("stop tcpdump");
    let (txs, counters, err) = support::decode_file(pcap.path());
    assert_eq!(err, None);
    assert!(txs.iter().all(|t| t.transport == Transport::Tcp));
    let n = support::assert_agree(&txs, &support::tshark(pcap.path()));
    assert_eq!(
        counters.rpc_orphan_replies + counters.rpc_no_reply + counters.rpc_malformed,
        0
    );
    assert_eq!(
        counters.tcp_gap_bytes + counters.tcp_skipped_bytes,
        0,
        "{counters:?}"
    );
    let nfs_calls = txs
        .iter()
        .filter(|t| t.prog == 100003 && t.vers == vers)
        .count();
    assert!(nfs_calls >= 15, "only {nfs_calls} NFSv{vers} calls in {n}");

    let mut tr = NfsTrace::new(120_000_000_000);
    let mut sessions = Vec::new();
    for t in &txs {
        tr.add(t, &mut |s| sessions.push(s));
    }
    tr.finish(&mut |s| sessions.push(s));
    let files = tr.stats().files;
    let get = |p: &str| {
        files
            .iter()
            .find(|u| u.name == p)
            .unwrap_or_else(|| panic!("{p} not among {files:?}"))
    };
    let f1 = get(&format!("{root}/d/f1"));
    assert_eq!((f1.read_bytes, f1.write_bytes), (9000, 9000));
    let f3 = get(&format!("{root}/d/f3"));
    assert_eq!((f3.read_bytes, f3.write_bytes), (2000, 2000));
    assert!(
        files.iter().all(|u| !u.name.starts_with("fh:")),
        "unnamed handles: {files:?}"
    );
    let total: u64 = files.iter().map(|u| u.read_bytes + u.write_bytes).sum();
    assert_eq!(total, 22000);
    let sess_bytes: u64 = sessions.iter().map(|s| s.read_bytes + s.write_bytes).sum();
    assert_eq!(sess_bytes, 22000);
}

#[test]
fn ganesha_nfsv3_tcp_agrees_with_tshark_and_counts_bytes() {
    if !live_or_skip("ganesha_nfsv3_tcp", NEEDS) {
        return;
    }
    nfs_workload(3);
}

#[test]
fn ganesha_nfsv4_tcp_agrees_with_tshark_and_counts_bytes() {
    if !live_or_skip("ganesha_nfsv4_tcp", NEEDS) {
        return;
    }
    nfs_workload(4);
}

/// libnfs speaks only TCP; rpcinfo makes real UDP calls to rpcbind, MOUNT and NFS.
#[test]
fn ganesha_udp_rpcinfo_agrees_with_tshark() {
    if !live_or_skip("ganesha_udp", NEEDS) {
        return;
    }
    let srv = Server::start();
    let cap = srv.capture();
    for (prog, vers) in [("100000", "2"), ("100005", "3"), ("100003", "3")] {
        srv.run_client("rpcinfo", &["-u", &srv.addr(), prog, vers]);
    }
    let pcap = cap.stop().expect("stop tcpdump");
    let (txs, _c, err) = support::decode_file(pcap.path());
    assert_eq!(err, None);
    let n = support::assert_agree(&txs, &support::tshark(pcap.path()));
    let udp: Vec<_> = txs
        .iter()
        .filter(|t| t.transport == Transport::Udp)
        .collect();
    // A NULL call to each of the three programs, over UDP.
    for p in [100000, 100005, 100003] {
        assert!(
            udp.iter().any(|t| t.prog == p && t.proc_ == 0),
            "no UDP NULL call to {p} among {n}"
        );
    }
}
