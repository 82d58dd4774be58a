//! `magnet loadgen` on the real binary: one JSON line with exact counts, exit codes.

use std::process::Command;

fn magnet(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_magnet"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn loopback_run_prints_one_json_line_with_exact_counts() {
    let out = magnet(&["loadgen", "--tcp", "100x1000", "--udp", "50x200"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(v["pid"].as_u64().unwrap() > 0);
    assert_eq!(v["tcp"]["calls"], 100);
    assert_eq!(v["tcp"]["bytes_sent"], 100_000);
    assert_eq!(v["tcp"]["bytes_received"], 100_000);
    assert_eq!(v["udp"]["calls"], 50);
    assert_eq!(v["udp"]["datagrams_received"], 50);
    assert_eq!(v["udp"]["bytes_received"], 10_000);
}

#[test]
fn bad_arguments_fail_with_a_reason() {
    let out = magnet(&["loadgen"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to send"));

    let out = magnet(&["loadgen", "--tcp", "10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("NxSIZE"));

    let out = magnet(&[
        "loadgen",
        "--tcp",
        "1x1",
        "--netns",
        "magnet-none",
        "--peer-addr",
        "10.200.0.2",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/run/netns/magnet-none"), "{err}");
    // The OS error is printed once, at the end of the chain.
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
}

#[test]
fn help_has_examples() {
    let out = magnet(&["loadgen", "--help"]);
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        help.contains("Examples:") && help.contains("--interval 20ms"),
        "{help}"
    );
}

/// `--tap lo`: the AF_PACKET socket's counts against tcpdump on lo (root; ~1 s).
/// libpcap drops lo's outgoing copies, so tcpdump sees each packet once: the
/// tap's incoming frames; its outgoing ones are as many (lo hands every frame
/// back in).
#[test]
fn tap_counts_the_frames_tcpdump_sees() {
    use magnet_testkit::{live_or_skip, Capture, Need};
    if !live_or_skip(
        "tap_counts_the_frames_tcpdump_sees",
        &[Need::Tool("tcpdump")],
    ) {
        return;
    }
    let port = (20_000 + std::process::id() % 20_000).to_string();
    let cap = Capture::start(None, "lo", &["port", &port]).unwrap();
    let out = magnet(&[
        "loadgen", "--tcp", "5x1000", "--udp", "4x100", "--port", &port, "--tap", "lo",
    ]);
    let pcap = cap.stop().unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tap = &v["tap"];
    let seen = pcap.captured.expect("tcpdump's packet count");
    assert_eq!(pcap.dropped_by_kernel, Some(0));
    // 4 datagrams and at least a handshake, the data and the FINs.
    assert!(seen >= 4 + 6, "tcpdump saw {seen}");
    assert_eq!(tap["incoming"].as_u64(), Some(seen), "{tap}");
    assert_eq!(tap["outgoing"].as_u64(), Some(seen), "{tap}");
    assert_eq!(tap["frames"].as_u64(), Some(2 * seen), "{tap}");

    let out = magnet(&["loadgen", "--tcp", "1x10", "--tap", "no-such-if0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--tap no-such-if0: no such interface"),
        "{err}"
    );
}
