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
