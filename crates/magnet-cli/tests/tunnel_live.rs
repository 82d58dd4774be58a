//! Connections over a VXLAN overlay (as Kubernetes' flannel and Calico build
//! them): two namespaces joined by a veth pair (the underlay), a VXLAN device
//! on it in each, and iperf3 between the overlay addresses. The server is
//! started before the recorder; each case records `--all` from the client's
//! namespace or `--comm iperf3` from the server's, IPv4 or IPv6 in the
//! overlay, the underlay's offloads on or off.
//!
//! The VXLAN device wraps each packet in an outer IP/UDP packet in the same
//! sk_buff and sends that through IP LOCAL_OUT and the underlay device, so the
//! outer packet's events carry the inner socket. Before the fix, analyze counted
//! them as the socket's own: a connection's ip and dev rows counted each packet
//! twice going out (108 ip packets for 51 segments) and once coming in.
//!
//! Oracle: tcpdump on the server's VXLAN device (the inner frames), split into
//! connections by tshark. Each connection iperf3's server accepted (the control
//! and the data connection) holds exactly its capture's frames after the
//! handshake at ip, in and out, and at dev where the VM's blind spot left the
//! device rows whole; the outer packets are counted as the tunnel's
//! (`trace.unattributed.tunnel_ip`, `tunnel_dev_tx`).

use std::process::Stdio;

use magnet_testkit::{BlindSpot, Capture, Need, Netns, Recorder, Server, Veth};
use serde_json::Value;

mod common;
use common::{capture_connections, enable_v6, magnet_ok, tmp, units, MAGNET};

fn live(name: &str) -> bool {
    magnet_testkit::live_or_skip(
        name,
        &[
            Need::Btf,
            Need::Tool("tcpdump"),
            Need::Tool("tshark"),
            Need::Tool("iperf3"),
            Need::Tool("python3"),
            Need::Tool("ethtool"),
        ],
    )
}

/// One end of the overlay: `ns` with a VXLAN device `dev` on its end of the
/// underlay, from `local` to `remote`.
fn vxlan(ns: &Netns, dev: &str, lower: &str, local: &str, remote: &str) {
    let st = ns
        .command("ip")
        .args([
            "link", "add", dev, "type", "vxlan", "id", "42", "local", local, "remote", remote,
            "dstport", "4789", "dev", lower,
        ])
        .status()
        .unwrap();
    assert!(st.success(), "ip link add {dev} type vxlan");
}

fn ip(ns: &Netns, args: &[&str]) {
    let st = ns.command("ip").args(args).status().unwrap();
    assert!(st.success(), "ip {args:?}");
}

/// The accepted connections of the trace on local `port`, by client port.
fn accepted(trace: &std::path::Path, port: u16) -> (Vec<(u16, Value)>, Value) {
    let json: Value =
        serde_json::from_slice(&magnet_ok(["analyze", "--json", trace.to_str().unwrap()])).unwrap();
    let conns = json["connections"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["protocol"] == "tcp"
                && !c["remote"].is_null()
                && c["local"]
                    .as_str()
                    .is_some_and(|l| l.ends_with(&format!(":{port}")))
        })
        .map(|c| {
            let remote = c["remote"].as_str().unwrap();
            let client_port = remote.rsplit(':').next().unwrap().parse().unwrap();
            (client_port, c.clone())
        })
        .collect();
    (conns, json["trace"]["unattributed"].clone())
}

fn case(v6: bool, by_comm: bool, offloads: bool, port: u16) {
    let a = Netns::new().unwrap();
    let b = Netns::new().unwrap();
    let veth = Veth::pair((&a).into(), (&b).into()).unwrap();
    if !offloads {
        veth.a().offloads_off().unwrap();
        veth.b().offloads_off().unwrap();
    }
    // Named as the test's interfaces are, so that the blind-spot watch sees it.
    let dev = format!("{}x", veth.a().name());
    let (ua, ub) = (veth.a().addr().to_string(), veth.b().addr().to_string());
    vxlan(&a, &dev, veth.a().name(), &ua, &ub);
    vxlan(&b, &dev, veth.b().name(), &ub, &ua);
    let net = port % 200;
    let (server, client) = if v6 {
        ip(&a, &["link", "set", &dev, "up"]);
        ip(&b, &["link", "set", &dev, "up"]);
        enable_v6(&a, &dev, &format!("fd31:{net}::1/64"));
        enable_v6(&b, &dev, &format!("fd31:{net}::2/64"));
        (format!("fd31:{net}::2"), format!("fd31:{net}::1"))
    } else {
        ip(
            &a,
            &["addr", "add", &format!("10.231.{net}.1/24"), "dev", &dev],
        );
        ip(
            &b,
            &["addr", "add", &format!("10.231.{net}.2/24"), "dev", &dev],
        );
        ip(&a, &["link", "set", &dev, "up"]);
        ip(&b, &["link", "set", &dev, "up"]);
        (format!("10.231.{net}.2"), format!("10.231.{net}.1"))
    };
    // The neighbours resolved before the recording: no ARP or ND through the
    // tunnel while it runs.
    let warm = format!(
        "import socket\ns = socket.socket(socket.AF_INET6 if ':' in '{server}' else socket.AF_INET, \
         socket.SOCK_DGRAM)\ns.sendto(b'x', ('{server}', 9))"
    );
    assert!(a
        .command("python3")
        .args(["-c", &warm])
        .status()
        .unwrap()
        .success());
    std::thread::sleep(std::time::Duration::from_millis(300));

    let dir = tmp(&format!("tunnel-{port}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut srv_cmd = b.command("iperf3");
    srv_cmd
        .args(["-s", "-p", &port.to_string(), "-B", &server])
        .stdout(Stdio::null());
    let srv = Server::spawn(srv_cmd, &dir);
    magnet_testkit::wait_listening(&b, port);

    let cap = Capture::start(Some(&b), &dev, &[]).unwrap();
    let watch = BlindSpot::watch(veth.a().name());
    let trace = tmp(&format!("tunnel-{port}.mgt"));
    let rec = if by_comm {
        Recorder::record(MAGNET, Some(&b), &trace, &["--comm", "iperf3"])
    } else {
        Recorder::record(MAGNET, Some(&a), &trace, &["--all"])
    };
    let st = a
        .command("iperf3")
        .args([
            "-c",
            &server,
            "-p",
            &port.to_string(),
            "-n",
            "2M",
            "-B",
            &client,
        ])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "the iperf3 client failed");
    let ended = rec.stop();
    let blind = watch.finish();
    drop(srv);
    let pcap = cap.stop().unwrap();
    let want = capture_connections(pcap.path(), port);
    assert_eq!(want.len(), 2, "iperf3's control and data connections");

    let trace = ended.trace.expect("trace");
    let (got, unattributed) = accepted(&trace, port);
    let what = format!(
        "v6 {v6}, --comm {by_comm}, offloads {offloads}, blind {blind:?}, unattributed \
         {unattributed}"
    );
    assert_eq!(got.len(), 2, "{what}: accepted connections {got:#?}");
    for w in &want {
        let (_, c) = got
            .iter()
            .find(|(p, _)| *p == w.client_port)
            .unwrap_or_else(|| panic!("{what}: no connection from port {}", w.client_port));
        assert_eq!(
            (units(c, "ip", "in"), units(c, "ip", "out")),
            (w.from_client, w.from_server),
            "{what}: ip in/out of the connection from {} against the VXLAN device's capture",
            w.client_port
        );
        if blind == Some(0) || blind.is_none() {
            assert_eq!(
                (units(c, "dev", "in"), units(c, "dev", "out")),
                (w.from_client, w.from_server),
                "{what}: dev in/out of the connection from {}",
                w.client_port
            );
        }
    }
    assert!(
        unattributed["tunnel_ip"].as_u64().unwrap_or(0) > 0
            && unattributed["tunnel_dev_tx"].as_u64().unwrap_or(0) > 0,
        "{what}: the outer packets are the tunnel's"
    );
    let _ = std::fs::remove_file(&trace);
}

#[test]
fn vxlan_ipv4_all_from_the_client_offloads_on() {
    if live("vxlan_ipv4_all_from_the_client_offloads_on") {
        case(false, false, true, 7791);
    }
}

#[test]
fn vxlan_ipv6_all_from_the_client_offloads_off() {
    if live("vxlan_ipv6_all_from_the_client_offloads_off") {
        case(true, false, false, 7792);
    }
}

#[test]
fn vxlan_ipv4_by_comm_from_the_server_offloads_off() {
    if live("vxlan_ipv4_by_comm_from_the_server_offloads_off") {
        case(false, true, false, 7793);
    }
}

#[test]
fn vxlan_ipv6_by_comm_from_the_server_offloads_on() {
    if live("vxlan_ipv6_by_comm_from_the_server_offloads_on") {
        case(true, true, true, 7794);
    }
}
