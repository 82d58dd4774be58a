//! `magnet packets` on a real recording: a TCP connection from this host to a
//! network namespace over veth, captured by tcpdump at the same time. The
//! handshake table's three packets must be the SYN, SYN-ACK and ACK that
//! tshark sees on the wire, with the same footprint (addresses, IP id,
//! protocol, ports); every packet's path is in time order and its kernel time
//! is last minus first; the filters select what they say. ~2 s.

mod common;

use std::collections::BTreeSet;

use common::{magnet, tmp, MAGNET};
use magnet_testkit::{live_or_skip, tshark_fields, Capture, Need, Netns, Side, Veth};

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "magnet failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn handshake_table_matches_the_wire() {
    if !live_or_skip(
        "handshake_table_matches_the_wire",
        &[Need::Btf, Need::Tool("tcpdump"), Need::Tool("tshark")],
    ) {
        return;
    }
    let ns = Netns::new().unwrap();
    let link = Veth::pair(Side::Root, Side::Ns(&ns)).unwrap();
    let (a, b) = (link.a(), link.b());
    let cap = Capture::start(None, a.name(), &["tcp"]).unwrap();
    let trace = tmp("hs.mgt");
    let out = magnet(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--layers",
        "tcp,ip,dev",
        "--",
        MAGNET,
        "loadgen",
        "--tcp",
        "3x500",
        "--netns",
        ns.name(),
        "--peer-addr",
        &b.addr().to_string(),
        "--port",
        "7321",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pcap = cap.stop().unwrap();

    let hs = json(&magnet(&[
        "packets",
        trace.to_str().unwrap(),
        "--handshake",
        "--json",
    ]));
    assert_eq!(hs["schema"], "magnet.handshakes/1");
    let hs = hs["handshakes"].as_array().unwrap();
    assert_eq!(hs.len(), 1, "one connection, one handshake: {hs:?}");
    let rows = hs[0].as_array().unwrap();
    let roles: Vec<&str> = rows.iter().map(|r| r["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["SYN", "SYN-ACK", "ACK"]);

    // The wire: the same three packets by flags, in order.
    let wire = tshark_fields(
        &*pcap,
        "tcp.port==7321",
        &[
            "ip.src",
            "ip.dst",
            "ip.id",
            "ip.proto",
            "tcp.srcport",
            "tcp.dstport",
            "tcp.flags",
            "tcp.seq_raw",
            "tcp.ack_raw",
        ],
    )
    .unwrap();
    let flags = |r: &Vec<String>| u8::from_str_radix(r[6].trim_start_matches("0x"), 16).unwrap();
    let pick = |want: u8| {
        wire.iter()
            .find(|r| flags(r) & 0x17 == want)
            .unwrap_or_else(|| panic!("flags {want:#x} on the wire: {wire:?}"))
    };
    let syn = pick(0x02);
    let synack = pick(0x12);
    // The client's first pure ACK is the one acknowledging the SYN-ACK.
    let synack_seq: u64 = synack[7].parse().unwrap();
    let ack = wire
        .iter()
        .find(|r| flags(r) & 0x1f == 0x10 && r[8].parse::<u64>().unwrap() == synack_seq + 1)
        .expect("the handshake's ACK on the wire");
    for (row, w) in rows.iter().zip([syn, synack, ack]) {
        let f = &row["footprint"];
        let id = u64::from_str_radix(w[2].trim_start_matches("0x"), 16).unwrap();
        assert_eq!(f["saddr"].as_str().unwrap(), w[0], "{row}");
        assert_eq!(f["daddr"].as_str().unwrap(), w[1], "{row}");
        assert_eq!(f["ip_id"].as_u64().unwrap(), id, "{row}");
        assert_eq!(f["protocol"].as_u64().unwrap().to_string(), w[3], "{row}");
        assert_eq!(f["sport"].as_u64().unwrap().to_string(), w[4], "{row}");
        assert_eq!(f["dport"].as_u64().unwrap().to_string(), w[5], "{row}");
        assert_eq!(f["seq"].as_u64().unwrap().to_string(), w[7], "{row}");
        let (entry, exit) = (
            row["entry_ns"].as_u64().unwrap(),
            row["exit_ns"].as_u64().unwrap(),
        );
        assert!(exit >= entry);
        assert_eq!(row["kernel_ns"].as_u64().unwrap(), exit - entry);
        assert!(row["events"].as_u64().unwrap() >= 2, "{row}");
    }
    // SYN before SYN-ACK before ACK in the kernel too.
    let entries: Vec<u64> = rows
        .iter()
        .map(|r| r["entry_ns"].as_u64().unwrap())
        .collect();
    assert!(entries.windows(2).all(|w| w[0] < w[1]), "{entries:?}");

    // The SYN's path: sent (ip_local_out) before the driver has it, in time order,
    // on the veth; --pkt selects exactly it.
    let syn_id = rows[0]["pkt_id"].as_u64().unwrap();
    let one = json(&magnet(&[
        "packets",
        trace.to_str().unwrap(),
        "--pkt",
        &format!("{syn_id:#x}"),
        "--json",
    ]));
    assert_eq!(one["schema"], "magnet.packets/1");
    let one = one["packets"].as_array().unwrap();
    assert_eq!(one.len(), 1);
    let steps = one[0]["steps"].as_array().unwrap();
    let kinds: Vec<&str> = steps.iter().map(|s| s["kind"].as_str().unwrap()).collect();
    let pos = |k: &str| {
        kinds
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("{k} in {kinds:?}"))
    };
    assert!(pos("ip_local_out") < pos("dev_start_xmit"), "{kinds:?}");
    let ts: Vec<u64> = steps.iter().map(|s| s["ts_ns"].as_u64().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    let deltas: u64 = steps.iter().map(|s| s["delta_ns"].as_u64().unwrap()).sum();
    assert_eq!(
        deltas,
        one[0]["kernel_ns"].as_u64().unwrap(),
        "steps add up to the kernel time"
    );
    assert_eq!(
        steps[pos("dev_start_xmit")]["what"],
        format!("if{}", a.ifindex())
    );

    // Footprint filters: packets from the client to the server by IP id are
    // exactly the IP ids tshark sees in that direction.
    let to_server = json(&magnet(&[
        "packets",
        trace.to_str().unwrap(),
        "--src",
        &a.addr().to_string(),
        "--dst",
        &b.addr().to_string(),
        "--proto",
        "tcp",
        "--port",
        "7321",
        "--json",
    ]));
    let ours: BTreeSet<u64> = to_server["packets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["footprint"]["ip_id"].as_u64().unwrap())
        .collect();
    let theirs: BTreeSet<u64> = wire
        .iter()
        .filter(|r| r[0] == a.addr().to_string())
        .map(|r| u64::from_str_radix(r[2].trim_start_matches("0x"), 16).unwrap())
        .collect();
    assert_eq!(ours, theirs);
    let by_id = json(&magnet(&[
        "packets",
        trace.to_str().unwrap(),
        "--ip-id",
        &rows[0]["footprint"]["ip_id"].to_string(),
        "--json",
    ]));
    assert!(by_id["packets"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["pkt_id"].as_u64() == Some(syn_id)));
    let _ = std::fs::remove_file(&trace);
}
