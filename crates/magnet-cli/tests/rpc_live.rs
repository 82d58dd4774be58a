//! `magnet rpc -i` / `magnet nfs -i` live, as root, on a veth pair in a
//! private network namespace (nothing leaves it).

use std::process::Stdio;
use std::time::{Duration, Instant};

use magnet_testkit::{live_or_skip, Need, Netns};

/// On an interface where nothing arrives, SIGINT and
/// SIGTERM end a live capture within about a second (it used to wait for
/// the next matching packet, minutes on a quiet link), exit 0 with its
/// summary.
#[test]
fn a_signal_ends_a_live_capture_on_a_quiet_interface() {
    if !live_or_skip(
        "a_signal_ends_a_live_capture_on_a_quiet_interface",
        &[Need::Tool("ip")],
    ) {
        return;
    }
    let ns = Netns::new().unwrap();
    let ip = |args: &[&str]| {
        let st = ns.command("ip").args(args).status().unwrap();
        assert!(st.success(), "ip {args:?}");
    };
    ip(&["link", "add", "q0", "type", "veth", "peer", "name", "q1"]);
    ip(&["link", "set", "q0", "up"]);
    ip(&["link", "set", "q1", "up"]);
    for (cmd, sig) in [
        ("rpc", libc::SIGINT),
        ("nfs", libc::SIGTERM),
        ("rpc", libc::SIGTERM),
    ] {
        let mut child = ns
            .command(env!("CARGO_BIN_EXE_magnet"))
            .args([cmd, "-i", "q0", "port 2049"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // (ip netns exec execs: the child's pid is magnet's)
        std::thread::sleep(Duration::from_millis(1500));
        let t0 = Instant::now();
        // SAFETY: signalling our own child.
        assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break Some(st);
            }
            if t0.elapsed() > Duration::from_secs(5) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let took = t0.elapsed();
        let st = status.unwrap_or_else(|| panic!("{cmd} -i: still running 5 s after signal {sig}"));
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert!(took < Duration::from_millis(1500), "{cmd}: {took:?}");
        assert!(st.success(), "{cmd}: {st:?} {err}");
        assert!(err.contains("magnet: 0 packets"), "{cmd}: {err}");
    }
}
