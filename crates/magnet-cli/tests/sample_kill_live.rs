//! `kill -9` of `magnet sample` on the clsact path (what kernels without TCX,
//! < 6.6, get; `--clsact` forces it here) and on TCX: the next start removes
//! exactly what the killed run left — its two filters and the qdisc it
//! made — and nothing of anyone else's: a live sampler's filters and another
//! tool's u32 filter stay. All inside a network namespace of the test's own,
//! on its `lo`; owner files in a temporary MAGNET_RUN_DIR. About 4 s.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use magnet_testkit::{live_or_skip, Need, Netns};

struct Sampler {
    child: Child,
    err: Arc<Mutex<String>>,
}

impl Sampler {
    /// `magnet sample -i lo` in `ns` for `samples` ms; returns once it says
    /// it is sampling.
    fn start(ns: &Netns, run_dir: &std::path::Path, samples: u32, clsact: bool) -> Sampler {
        let mut cmd = ns.command(env!("CARGO_BIN_EXE_magnet"));
        cmd.args(["sample", "-i", "lo", "--interval", "1ms", "--samples"])
            .arg(samples.to_string())
            .env("MAGNET_RUN_DIR", run_dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if clsact {
            cmd.arg("--clsact");
        }
        let mut child = cmd.spawn().expect("starting magnet sample");
        let err = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let e2 = err.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                {
                    let mut e = e2.lock().unwrap();
                    e.push_str(&line);
                    e.push('\n');
                }
                if line.contains("sampling lo") {
                    let _ = tx.send(());
                }
            }
        });
        if rx.recv_timeout(Duration::from_secs(20)).is_err() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("magnet sample did not start:\n{}", err.lock().unwrap());
        }
        Sampler { child, err }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stderr(&self) -> String {
        self.err.lock().unwrap().clone()
    }

    fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    fn wait(mut self) -> (std::process::ExitStatus, String) {
        let st = self.child.wait().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        (st, self.stderr())
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn tc(ns: &Netns, args: &[&str]) -> String {
    let out = ns.command("tc").args(args).output().expect("running tc");
    assert!(out.status.success(), "tc {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Handles of the bpf filters on `lo`'s ingress and egress, sorted.
fn bpf_handles(ns: &Netns) -> Vec<String> {
    let mut v = Vec::new();
    for dir in ["ingress", "egress"] {
        for l in tc(ns, &["filter", "show", "dev", "lo", dir]).lines() {
            if l.contains(" bpf ") {
                if let Some(h) = l.split_whitespace().skip_while(|w| *w != "handle").nth(1) {
                    v.push(format!("{dir} {h}"));
                }
            }
        }
    }
    v.sort();
    v
}

fn both(pid: u32) -> Vec<String> {
    vec![format!("egress {pid:#x}"), format!("ingress {pid:#x}")]
}

#[test]
fn kill_9_on_the_clsact_path_is_cleaned_up_by_the_next_start() {
    if !live_or_skip(
        "kill_9_on_the_clsact_path_is_cleaned_up_by_the_next_start",
        &[Need::Btf, Need::Tool("tc")],
    ) {
        return;
    }
    let ns = Netns::new().unwrap();
    let run_dir = tempfile::tempdir().unwrap();
    let qdisc = |ns: &Netns| tc(ns, &["qdisc", "show", "dev", "lo"]).contains("clsact");
    assert!(!qdisc(&ns));

    // 1. A killed run leaves its two filters and its qdisc.
    let a = Sampler::start(&ns, run_dir.path(), 60_000, true);
    let apid = a.pid();
    assert_eq!(bpf_handles(&ns), both(apid));
    a.kill9();
    assert_eq!(bpf_handles(&ns), both(apid), "what the kill leaves");
    assert!(qdisc(&ns));

    // 2. The next start removes them (and says so), then attaches its own.
    let b = Sampler::start(&ns, run_dir.path(), 60_000, true);
    let said = b.stderr();
    assert!(
        said.contains(&format!(
            "removed what a killed sampler (pid {apid}) left on ifindex 1: ingress filter {apid:#x}"
        )) && said.contains("its clsact qdisc"),
        "{said}"
    );
    assert_eq!(bpf_handles(&ns), both(b.pid()));

    // 3. Someone else's filter, and a second sampler while the first runs:
    // the second one's start and exit leave the first's filters and the
    // u32 filter alone.
    tc(
        &ns,
        &[
            "filter", "add", "dev", "lo", "ingress", "pref", "7", "protocol", "all", "u32",
            "match", "u32", "0", "0", "flowid", "1:1",
        ],
    );
    let c = Sampler::start(&ns, run_dir.path(), 300, true);
    let mut with_c = both(b.pid());
    with_c.extend(both(c.pid()));
    with_c.sort();
    assert_eq!(bpf_handles(&ns), with_c);
    let (st, said) = c.wait();
    assert!(st.success(), "{said}");
    assert!(!said.contains("removed"), "{said}");
    assert_eq!(bpf_handles(&ns), both(b.pid()));

    // 4. Killing the first too: the next start removes its filters but not
    // the qdisc, which now holds the u32 filter.
    let bpid = b.pid();
    b.kill9();
    let d = Sampler::start(&ns, run_dir.path(), 300, true);
    let (st, said) = d.wait();
    assert!(st.success(), "{said}");
    assert!(
        said.contains(&format!("killed sampler (pid {bpid})")) && !said.contains("qdisc"),
        "{said}"
    );
    assert!(bpf_handles(&ns).is_empty(), "{:?}", bpf_handles(&ns));
    assert!(qdisc(&ns));
    assert!(tc(&ns, &["filter", "show", "dev", "lo", "ingress"]).contains("u32"));
    assert_eq!(
        std::fs::read_dir(run_dir.path().join("sample-tc"))
            .unwrap()
            .count(),
        0,
        "owner files left"
    );
}

/// TCX (this host, 6.6+): a killed run's links die with it; the next start
/// finds nothing to remove.
#[test]
fn kill_9_on_tcx_leaves_no_link() {
    if !live_or_skip(
        "kill_9_on_tcx_leaves_no_link",
        &[Need::Btf, Need::Tool("tc")],
    ) {
        return;
    }
    let ns = Netns::new().unwrap();
    let run_dir = tempfile::tempdir().unwrap();
    let a = Sampler::start(&ns, run_dir.path(), 60_000, false);
    assert!(a.stderr().contains("sampling lo (tcx)"), "{}", a.stderr());
    // The links a run holds are its fds (link_type in fdinfo).
    let links = |pid: u32| -> Vec<u32> {
        let mut ids = Vec::new();
        for e in std::fs::read_dir(format!("/proc/{pid}/fdinfo"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let t = std::fs::read_to_string(e.path()).unwrap_or_default();
            if t.contains("link_type:") {
                if let Some(id) = t.lines().find_map(|l| l.strip_prefix("link_id:")) {
                    ids.push(id.trim().parse().unwrap());
                }
            }
        }
        ids
    };
    let ids = links(a.pid());
    assert_eq!(
        ids.len(),
        3,
        "tcx ingress, egress, tcp_retransmit_skb: {ids:?}"
    );
    a.kill9();
    let deadline = Instant::now() + Duration::from_secs(5);
    let alive = |id: u32| {
        // SAFETY: plain syscall wrapper; a returned fd is closed at once.
        let fd = unsafe { libbpf_sys::bpf_link_get_fd_by_id(id) };
        if fd >= 0 {
            unsafe { libc::close(fd) };
        }
        fd >= 0
    };
    while ids.iter().any(|&i| alive(i)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!ids.iter().any(|&i| alive(i)), "links left: {ids:?}");
    assert!(bpf_handles(&ns).is_empty());
    assert!(!tc(&ns, &["qdisc", "show", "dev", "lo"]).contains("clsact"));
    let b = Sampler::start(&ns, run_dir.path(), 200, false);
    let (st, said) = b.wait();
    assert!(st.success() && !said.contains("removed"), "{said}");
}
