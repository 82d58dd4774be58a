//! `record --funcs` on this host. Where the kernel has no function probes
//! (6.18 here: no kprobes, no kprobe-multi) the recording still holds exactly
//! the workload's events and one layer note says why; where it has them, the
//! SYN's path holds the functions of the transmit path in order, from
//! `__tcp_transmit_skb <- tcp_connect` on the queued skb through its clone. ~2 s.
//! (Debian's 6.1 and 6.12 are exercised in the QEMU lab: docs/funcs.md.)

mod common;

use common::{magnet, tmp, MAGNET};
use magnet_testkit::{live_or_skip, Need};

#[test]
fn funcs_auto_records_or_says_why_not() {
    if !live_or_skip("funcs_auto_records_or_says_why_not", &[Need::Btf]) {
        return;
    }
    let trace = tmp("funcs.mgt");
    let out = magnet(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--layers",
        "app,tcp,ip,dev",
        "--funcs",
        "auto",
        "--",
        MAGNET,
        "loadgen",
        "--tcp",
        "4x300",
        "--port",
        "7323",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let info: serde_json::Value =
        serde_json::from_slice(&magnet(&["info", trace.to_str().unwrap(), "--json"]).stdout)
            .unwrap();
    // The layers record whatever happens to the function probes: 4 sends of 300 B.
    assert_eq!(info["kinds"]["app_send"]["events"], 4, "{info}");
    let func = info["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["layer"] == "func")
        .expect("a func source in the header")
        .clone();
    let funcs_recorded = info["kinds"]["func"]["events"].as_u64().unwrap_or(0);
    if func["hooks"].as_array().unwrap().is_empty() {
        // No function probes: one note, no func events.
        let missing = func["missing"].as_array().unwrap();
        assert_eq!(missing.len(), 1, "{func}");
        let m = missing[0].as_str().unwrap();
        assert!(
            m.starts_with(
                "function probes not recorded: no kprobes or kprobe-multi on this kernel"
            ),
            "{m}"
        );
        assert!(m.ends_with("the other layers still record"), "{m}");
        assert_eq!(funcs_recorded, 0);
        let notes: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("layer func"))
            .collect();
        assert_eq!(notes.len(), 1, "{stderr}");
        return;
    }
    // Function probes: the SYN's path, in order.
    assert!(funcs_recorded > 0, "{info}");
    let hs: serde_json::Value = serde_json::from_slice(
        &magnet(&["packets", trace.to_str().unwrap(), "--handshake", "--json"]).stdout,
    )
    .unwrap();
    let syn = hs["handshakes"][0][0]["pkt_id"].as_u64().unwrap();
    let p: serde_json::Value = serde_json::from_slice(
        &magnet(&[
            "packets",
            trace.to_str().unwrap(),
            "--pkt",
            &syn.to_string(),
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    let whats: Vec<&str> = p["packets"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["layer"] == "func")
        .map(|s| s["what"].as_str().unwrap())
        .collect();
    let names: Vec<String> = p["packets"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["layer"] == "func")
        .map(|s| {
            s["what"]
                .as_str()
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .to_string()
        })
        .collect();
    let at = |f: &str| {
        names
            .iter()
            .position(|n| n == f)
            .unwrap_or_else(|| panic!("{f} in {names:?}"))
    };
    // The write-queue skb's transmit (its clone is the packet) comes first.
    let connect = whats
        .iter()
        .position(|w| *w == "__tcp_transmit_skb <- tcp_connect")
        .unwrap_or_else(|| panic!("__tcp_transmit_skb <- tcp_connect in {whats:?}"));
    assert!(connect < at("skb_clone"));
    assert!(at("skb_clone") < at("__ip_queue_xmit"));
    assert!(at("__ip_queue_xmit") < at("ip_output"));
    assert!(at("ip_output") < at("dev_hard_start_xmit"));
}
