//! `magnet sample` on the real binary: help, synchronised runs on a rack and
//! their merged view, and a scheduler that stores runs, survives a restart
//! and applies retention. Live parts need root and BTF.

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use magnet_runs::store::Store;
use magnet_sample::{Metric, Run, RunMeta};
use magnet_testkit::{live_or_skip, run_in_netns, Need, Netns, Rack, Side, Veth};

mod common;

fn magnet() -> Command {
    Command::new(env!("CARGO_BIN_EXE_magnet"))
}

/// A scratch directory removed on drop (the CLI crate has no tempfile).
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("magnet-sample-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

#[test]
fn help_teaches_with_examples() {
    let out = magnet().args(["sample", "--help"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for want in [
        "--interval 100us --samples 2000",
        "--schedule '10ms,1ms,100us every 1m'",
        "merge",
        "--at",
    ] {
        assert!(text.contains(want), "help lacks {want}");
    }
    let out = magnet()
        .args(["sample", "merge", "/nonexistent.json", "-o", "/tmp/x.html"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent.json"));
}

/// Three senders and a receiver on a bridge; every host samples with the same
/// `--at`; the senders burst at the same instants (incast). The merged view
/// must put each sender's egress in the buckets of the receiver's ingress.
#[test]
fn synchronised_runs_on_a_rack_line_up() {
    if !live_or_skip("synchronised_runs_on_a_rack_line_up", &[Need::Btf]) {
        return;
    }
    let rack = Rack::new(3).unwrap();
    let dir = Scratch::new("rack");
    let rx_end = rack.receiver();
    let _rx = run_in_netns(rx_end.netns().unwrap(), || {
        UdpSocket::bind((rx_end.addr(), 9000))
    })
    .unwrap()
    .unwrap();
    let senders: Vec<UdpSocket> = rack
        .senders()
        .iter()
        .map(|e| {
            let s = run_in_netns(e.netns().unwrap(), || UdpSocket::bind((e.addr(), 0)))
                .unwrap()
                .unwrap();
            s.connect((rx_end.addr(), 9000)).unwrap();
            s.send(&[0]).unwrap(); // resolve neighbours before sampling
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));

    let at_ns = (unix_ns() / 1_000_000_000 + 3) * 1_000_000_000; // a whole second, ≥2 s ahead
    let at = format!("@{}", at_ns / 1_000_000_000);
    let mut children = Vec::new();
    let mut files = Vec::new();
    for i in 0..4 {
        let end = rack.host(i);
        let file = dir.path().join(format!("h{i}.json"));
        let child = end
            .netns()
            .unwrap()
            .command(env!("CARGO_BIN_EXE_magnet"))
            .args([
                "sample",
                "-i",
                end.name(),
                "--interval",
                "1ms",
                "--samples",
                "300",
                "--at",
                &at,
            ])
            .args(["--host", &format!("h{i}"), "-o"])
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        children.push(child);
        files.push(file);
    }
    // Bursts of 20 x 1200 bytes from every sender at +50, +120, +190 ms.
    let t0 = Instant::now() + Duration::from_nanos(at_ns - unix_ns());
    for off in [50u64, 120, 190] {
        while Instant::now() < t0 + Duration::from_millis(off) {
            std::thread::sleep(Duration::from_micros(200));
        }
        for s in &senders {
            for _ in 0..20 {
                s.send(&[9u8; 1200]).unwrap();
            }
        }
    }
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let merged_json = dir.path().join("rack.json");
    let out = magnet()
        .args(["sample", "merge"])
        .args(&files)
        .arg("-o")
        .arg(&merged_json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = dir.path().join("rack.html");
    assert!(magnet()
        .args(["sample", "merge"])
        .args(&files)
        .arg("-o")
        .arg(&html)
        .status()
        .unwrap()
        .success());
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));

    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&merged_json).unwrap()).unwrap();
    let series = |h: usize, key: &str| -> Vec<u64> {
        v["hosts"][h][key]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect()
    };
    for h in 0..4 {
        assert_eq!(
            v["hosts"][h]["offset"], 0,
            "all runs started at the same instant"
        );
    }
    let rx_in = series(3, "ingressBytes");
    let frame = 20 * (1200 + 8 + 20 + 14);
    assert_eq!(
        rx_in.iter().sum::<u64>(),
        3 * 3 * frame,
        "receiver ingress = all bursts"
    );
    let mut peak_single = 0;
    for h in 0..3 {
        let out = series(h, "egressBytes");
        assert_eq!(out.iter().sum::<u64>(), 3 * frame, "sender {h}");
        peak_single = peak_single.max(*out.iter().max().unwrap());
        for (i, &b) in out.iter().enumerate() {
            if b > 0 {
                let near: u64 = rx_in[i.saturating_sub(1)..=(i + 1).min(rx_in.len() - 1)]
                    .iter()
                    .sum();
                assert!(
                    near >= b,
                    "sender {h} bucket {i}: {b} bytes out, receiver has {near} around it"
                );
            }
        }
    }
    // Incast: the receiver's busiest bucket carries more than any one sender's.
    let rx_peak = *rx_in.iter().max().unwrap();
    eprintln!("receiver peak {rx_peak} bytes/ms, largest single sender {peak_single}");
    assert!(
        rx_peak > peak_single * 3 / 2,
        "receiver peak {rx_peak} vs sender peak {peak_single}"
    );
}

fn stored(dir: &Path) -> Vec<String> {
    Store::open(dir)
        .unwrap()
        .list()
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect()
}

/// The scheduler stores runs; killed with SIGTERM and started again it keeps
/// what was stored; retention removes exactly the runs older than the limit.
#[test]
fn scheduler_store_survives_restart_and_retention_is_exact() {
    if !live_or_skip(
        "scheduler_store_survives_restart_and_retention_is_exact",
        &[Need::Btf],
    ) {
        return;
    }
    let ns = Netns::new().unwrap();
    let link = Veth::pair(Side::Ns(&ns), Side::Root).unwrap();
    let dir = Scratch::new("store");
    let store = Store::open(dir.path()).unwrap();
    let day = 86_400_000_000_000u64;
    let now = unix_ns();
    let mk = |start: u64| {
        let mut m = RunMeta::synthetic("old", 1_000_000, 5);
        m.iface = "eth9".into();
        m.start_realtime_ns = start;
        let mut r = Run::zeroed(m, 5);
        r.get_mut(Metric::InBytes)[2] = 4242;
        r
    };
    let old = store.save(&mk(now - 4 * day)).unwrap();
    let young = store.save(&mk(now - 2 * day)).unwrap();
    std::fs::write(dir.path().join("README"), "not a run").unwrap();

    let sched = |extra: &[&str]| {
        let mut c = ns.command(env!("CARGO_BIN_EXE_magnet"));
        c.args([
            "sample",
            "-i",
            link.a().name(),
            "--schedule",
            "1ms,100us every 1s",
            "--samples",
            "100",
        ])
        .arg("--store")
        .arg(dir.path())
        .args(["--retain", "3d"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        c
    };
    // First scheduler: let it store a few runs, then SIGTERM it.
    let child = sched(&[]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while stored(dir.path()).len() < 1 + 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::SIGTERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!old.exists(), "the 4-day-old run is past --retain 3d");
    assert!(young.exists() && dir.path().join("README").exists());
    let first = stored(dir.path());
    assert!(first.len() >= 4, "{first:?}");
    let bytes_before: Vec<Vec<u8>> = first
        .iter()
        .map(|n| std::fs::read(dir.path().join(n)).unwrap())
        .collect();
    for n in &first {
        Run::load(&dir.path().join(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
    }

    // Second scheduler: one cycle (a 1 ms and a 100 us run), then it exits.
    // It plans after the runs stored (the first one's last run, cut short by
    // SIGTERM, is not written over). On a loaded host a run whose setup takes
    // longer than the gap before its start is skipped, and the scheduler says
    // so; such a cycle is run again (at most 8 times). Every run the
    // restarted schedulers say they stored is in the store, and nothing else
    // is new.
    let mut reported: Vec<String> = Vec::new();
    for attempt in 1.. {
        let out = sched(&["--cycles", "1"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        let stored_now: Vec<String> = err
            .lines()
            .filter_map(|l| l.strip_prefix("magnet: stored "))
            .map(|p| {
                let p = Path::new(p.trim_end_matches(" (interrupted)"));
                p.file_name().unwrap().to_string_lossy().into_owned()
            })
            .collect();
        let skipped: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("magnet: skipped"))
            .collect();
        assert_eq!(stored_now.len() + skipped.len(), 2, "{err}");
        assert!(
            skipped.iter().all(|l| l.contains("in the past")),
            "only a late start may skip a run: {err}"
        );
        reported.extend(stored_now);
        if skipped.is_empty() {
            break;
        }
        assert!(attempt < 8, "every cycle started a run late: {err}");
        eprintln!("attempt {attempt}: {}", skipped.join("; "));
    }
    let second = stored(dir.path());
    assert_eq!(
        second.len(),
        first.len() + reported.len(),
        "{second:?} after {first:?}, reported {reported:?}"
    );
    for (n, b) in first.iter().zip(&bytes_before) {
        assert_eq!(
            &std::fs::read(dir.path().join(n)).unwrap(),
            b,
            "{n} changed across the restart"
        );
    }
    assert_eq!(Run::load(&young).unwrap().total(Metric::InBytes), 4242);
    let new: Vec<&String> = second.iter().filter(|n| !first.contains(n)).collect();
    let mut sorted = reported.clone();
    sorted.sort();
    let mut new_sorted: Vec<String> = new.iter().map(|n| n.to_string()).collect();
    new_sorted.sort();
    assert_eq!(new_sorted, sorted, "the new runs are those reported stored");
    assert!(
        new.iter().any(|n| n.ends_with("_1ms.msr"))
            && new.iter().any(|n| n.ends_with("_100us.msr")),
        "{new:?}"
    );

    // ls / show / plot on the store.
    let ls = magnet()
        .args(["sample", "ls", "--store"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&ls.stdout);
    assert!(
        text.contains(&format!("{} runs in", second.len())),
        "{text}"
    );
    let show = magnet()
        .args(["sample", "show", "--json", "--store"])
        .arg(dir.path())
        .arg("latest")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(v["ingressBytes"].as_array().unwrap().len(), 100);
    assert_eq!(v["sampling_freq"], 100);
    let svg = dir.path().join("p.svg");
    assert!(magnet()
        .args(["sample", "plot", "--store"])
        .arg(dir.path())
        .arg("-o")
        .arg(&svg)
        .status()
        .unwrap()
        .success());
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
}

/// A non-root `magnet sample` names what sampling needs (not what recording
/// needs: the sampler no longer goes through the recorder's preflight).
#[test]
fn without_root_sampling_says_what_it_needs() {
    if !live_or_skip(
        "without_root_sampling_says_what_it_needs",
        &[Need::Tool("setpriv")],
    ) {
        return;
    }
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_magnet"),
            "sample",
            "-i",
            "lo",
            "--interval",
            "1ms",
            "--samples",
            "10",
            "-o",
            "/tmp/magnet-sample-nonroot.run",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("sampling needs root")
            && err.contains("CAP_NET_ADMIN")
            && err.contains("sudo"),
        "{err}"
    );
    assert!(!err.contains("recording"), "{err}");
}

/// `magnet sample --check` names the hook of each part of a run: TCX links
/// where the kernel has them, clsact filters with `--clsact` or with TCX
/// denied (saying why), in text and JSON.
#[test]
fn check_names_tcx_or_clsact() {
    if !live_or_skip("check_names_tcx_or_clsact", &[Need::Btf]) {
        return;
    }
    let json = |args: &[&str], deny: &str| {
        let args = [&["sample", "--check", "--json"], args].concat();
        let out = common::magnet_ok_denying(&args, deny);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["schema"], "magnet.sample.check/1");
        let parts = v["parts"].as_array().unwrap().clone();
        assert_eq!(parts.len(), magnet_sample::sampler::PARTS.len(), "{v}");
        parts.into_iter().find(|p| p["part"] == "packets").unwrap()
    };
    // (a MAGNET_HOOKS_DENY of the test's own environment passes on)
    let base = std::env::var("MAGNET_HOOKS_DENY").unwrap_or_default();
    let clsact = "clsact/ingress+clsact/egress";
    let p = json(&[], &base);
    let hook = p["hook"].as_str().unwrap();
    assert!(
        hook == "tcx/ingress+tcx/egress" || (hook == clsact && p["passed_over"][0].is_string()),
        "{p}"
    );
    let p = json(&["--clsact"], &base);
    assert_eq!(p["hook"], clsact, "{p}");
    assert_eq!(
        p["passed_over"][0], "tcx/ingress+tcx/egress: --clsact",
        "{p}"
    );
    let p = json(&[], &format!("{base},tcx"));
    assert_eq!(p["hook"], clsact, "{p}");
    let why = p["passed_over"][0].as_str().unwrap();
    assert!(
        why.starts_with("tcx/ingress+tcx/egress: tcx/ingress denied by MAGNET_HOOKS_DENY="),
        "{p}"
    );
    let out = magnet().args(["sample", "--check"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("group  part"), "{text}");
    assert!(text.contains("\nsample packets "), "{text}");
}
