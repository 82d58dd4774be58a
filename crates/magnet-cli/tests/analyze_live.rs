//! Live tests of `magnet analyze` and `magnet report` (root, real BPF, real
//! traffic between network namespaces): MAGNeT's FTP example (10 KiB every 20 ms
//! through a rate-limited link) and its Table III (a chain of TCP relays, each
//! stack modulating the stream again), recorded and analysed end to end.

use std::path::Path;
use std::process::{Command, Output};

use magnet_testkit::{
    console_lines, live_or_skip, tshark_fields, Capture, Chain, Chromium, Need, Netns, Side, Veth,
};
use serde_json::Value;

mod common;
use common::{magnet, tmp, MAGNET};

/// One recording at a time: netfilter hooks of two recorders can collide.
static LIVE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn live_lock() -> std::sync::MutexGuard<'static, ()> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "magnet failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn analyze_json(trace: &Path) -> Value {
    serde_json::from_str(&ok(&magnet(&[
        "analyze",
        trace.to_str().unwrap(),
        "--json",
    ])))
    .unwrap()
}

fn row<'a>(conn: &'a Value, layer: &str, dir: &str) -> &'a Value {
    conn["modulation"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["layer"] == layer && r["dir"] == dir)
        .unwrap_or_else(|| panic!("no {layer}/{dir} row in {}", conn["cookie"]))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

const N: u64 = 50;
const SIZE: u64 = 10240;

/// MAGNeT fig. 9: an application writing 10 KiB every 20 ms; the stack turns it
/// into MTU-sized packets whose spacing the rate limit (tbf) makes irregular.
#[test]
fn paced_sender_through_rate_limited_link() {
    if !live_or_skip(
        "paced_sender_through_rate_limited_link",
        &[Need::Btf, Need::Tool("tc"), Need::Tool("ethtool")],
    ) {
        return;
    }
    let _serial = live_lock();
    let ns = Netns::new().unwrap();
    let link = Veth::pair(Side::Root, Side::Ns(&ns)).unwrap();
    let (a, b) = (link.a(), link.b());
    a.offloads_off().unwrap();
    b.offloads_off().unwrap();
    // 8 Mbit/s with a 4 KiB bucket: each 10 KiB block leaves in ~10 ms, paced.
    a.tbf("8mbit", "4kb", "200ms").unwrap();
    let trace = tmp("tbf.mgt");
    let out = magnet(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--layers",
        "app,tcp,ip,dev,sched",
        "--tcp-state",
        "--",
        MAGNET,
        "loadgen",
        "--tcp",
        &format!("{N}x{SIZE}"),
        "--interval",
        "20ms",
        "--netns",
        ns.name(),
        "--peer-addr",
        &b.addr().to_string(),
    ]);
    ok(&out);
    let j = analyze_json(&trace);
    assert_eq!(j["trace"]["lost_events"], 0);
    let conns = j["connections"].as_array().unwrap();
    let tx = conns
        .iter()
        .find(|c| c["app"]["sent_calls"] == N)
        .expect("the sender's connection");
    let rx = conns
        .iter()
        .find(|c| c["app"]["recv_bytes"] == N * SIZE)
        .expect("the receiver's connection");
    assert_eq!(
        tx["local"].as_str().unwrap().split(':').next(),
        Some(a.addr().to_string().as_str())
    );
    assert_eq!(
        tx["remote"].as_str().unwrap(),
        format!(
            "{}:{}",
            b.addr(),
            rx["local"].as_str().unwrap().rsplit(':').next().unwrap()
        )
    );

    // The application's traffic: exactly what loadgen did.
    let app = row(tx, "app", "out");
    assert_eq!(
        (app["units"].as_u64(), app["bytes"].as_u64()),
        (Some(N), Some(N * SIZE))
    );
    assert_eq!(
        (f(&app["size"]["mean"]), app["size"]["median"].as_u64()),
        (SIZE as f64, Some(SIZE))
    );
    let gap = f(&app["interval_ns"]["mean"]);
    assert!(
        (gap - 20e6).abs() <= 1e6,
        "app mean interval {gap} ns, want 20 ms ± 1 ms"
    );

    // TCP carried every byte once (payload from sequence numbers).
    assert_eq!(row(tx, "tcp", "out")["bytes"].as_u64(), Some(N * SIZE));
    assert_eq!(row(rx, "tcp", "in")["bytes"].as_u64(), Some(N * SIZE));

    // The wire: MTU-sized frames, many per call, irregularly spaced. At
    // least the bytes over the MSS: 8 per call when each call is segmented
    // alone, fewer when TCP fills a segment from two calls (a call queued
    // behind the rate-limited link), which a loaded host gives now and then.
    let dev = row(tx, "dev", "out");
    let dev_units = dev["units"].as_u64().unwrap();
    assert!(
        dev_units >= (N * SIZE).div_ceil(1448),
        "{dev_units} dev packets for {N} calls of {SIZE} B (at least the bytes over a 1448 B MSS)"
    );
    assert!(
        dev["size"]["max"].as_u64().unwrap() <= 1514,
        "offloads are off: no frame above the MTU: {dev}"
    );
    assert!(
        f(&dev["size"]["mean"]) < SIZE as f64 / 6.0,
        "dev units are smaller: {dev}"
    );
    let dgap = &dev["interval_ns"];
    // (Absolute bounds: the app's own spacing jitters on a loaded machine.)
    assert!(f(&dgap["cv"]) > 1.0, "dev spacing irregular: {dgap}");
    assert!(
        dgap["p99"].as_u64().unwrap() > 5 * dgap["median"].as_u64().unwrap(),
        "dev spacing irregular: {dgap}"
    );
    // tbf spreads each block: the median gap is the 8 Mbit/s serialisation of a frame.
    let med = dgap["median"].as_u64().unwrap();
    assert!(
        (1_000_000..=2_500_000).contains(&med),
        "median dev gap {med} ns (1514 B at 8 Mbit/s = 1.51 ms)"
    );
    let co = tx["coalescing"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["dir"] == "out")
        .unwrap();
    // The coalescing line is the dev row per call: 8 per call when each call
    // is segmented alone, down to the bytes over the MSS (as above) when TCP
    // fills a segment from two calls.
    assert_eq!(co["dev_packets"].as_u64(), Some(dev_units), "{co}");
    assert!(
        f(&co["packets_per_call"]) >= (N * SIZE).div_ceil(1448) as f64 / N as f64,
        "{co}"
    );

    // The receiver reads what arrives: its recv calls are not the sender's sends.
    let rapp = row(rx, "app", "in");
    assert_eq!(rapp["bytes"].as_u64(), Some(N * SIZE));

    // Latency through the stack: every send followed to the device; queueing in
    // tbf makes the last byte of a 10 KiB send wait several milliseconds.
    let lat = &tx["latency"];
    assert_eq!(lat["send"]["count"].as_u64(), Some(N), "{lat}");
    assert!(lat["send"]["median"].as_u64().unwrap() > 5_000_000, "{lat}");
    // Every data segment the receiver got was matched to the recv that read it.
    assert_eq!(
        rx["latency"]["recv"]["count"],
        row(rx, "tcp", "in")["units"],
        "{}",
        rx["latency"]
    );
    assert_eq!(rx["latency"]["recv_unmatched"], 0, "{}", rx["latency"]);

    // TCP state: data waits in the send buffer while tbf drains it.
    let tcp = &tx["tcp"];
    assert!(tcp["sndbuf_max"].as_u64().unwrap() >= SIZE, "{tcp}");
    assert!(tcp["samples"].as_u64().unwrap() > N, "{tcp}");
    // Scheduler: the traced threads ran and were switched.
    let tasks = j["sched"]["tasks"].as_array().unwrap();
    assert!(
        tasks
            .iter()
            .any(|t| t["comm"] == "loadgen-rx" && t["switches_in"].as_u64().unwrap() > 0),
        "{tasks:?}"
    );
    eprintln!("{}", ok(&magnet(&["analyze", trace.to_str().unwrap()])));

    if live_or_skip(
        "report_in_chromium",
        &[Need::Tool("chromium"), Need::Tool("python3")],
    ) {
        check_report_in_chromium(&trace, &j);
    }
}

const MTUS: [u32; 3] = [1500, 1200, 900];

/// MAGNeT's Table III: the stream passes through 1, 2, 3 TCP stacks (relays that
/// read and re-send), recorded in one trace of all four hosts.
#[test]
fn relay_chain_modulation_grows_per_hop() {
    if !live_or_skip(
        "relay_chain_modulation_grows_per_hop",
        &[
            Need::Btf,
            Need::Tool("tc"),
            Need::Tool("ethtool"),
            Need::Tool("python3"),
            Need::Tool("ss"),
        ],
    ) {
        return;
    }
    let _serial = live_lock();
    let chain = Chain::new(4).unwrap();
    // Each hop is a little narrower (as tunnels make paths), so each stack cuts
    // the stream it is given into smaller pieces again.
    for (l, mtu) in chain.links.iter().zip(MTUS) {
        for end in [l.a(), l.b()] {
            end.offloads_off().unwrap();
            let st = end
                .command("ip")
                .args(["link", "set", "dev", end.name(), "mtu", &mtu.to_string()])
                .status()
                .unwrap();
            assert!(st.success(), "set mtu {mtu} on {}", end.name());
        }
        l.a().tbf("8mbit", "4kb", "200ms").unwrap();
    }
    let relay = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/relay.py");
    let relay = relay.to_str().unwrap();
    let port = 7411;
    let h = |i: usize| chain.host(i).name().to_string();
    let to = |i: usize| chain.links[i - 1].b().addr().to_string();
    let script = format!(
        "set -e
ip netns exec {d} python3 {relay} sink {port} &
ip netns exec {c} python3 {relay} relay {port} {cd} &
ip netns exec {b} python3 {relay} relay {port} {bd} &
for ns in {d} {c} {b}; do
  n=0; until ip netns exec $ns ss -Hltn 'sport = :{port}' | grep -q .; do n=$((n+1)); [ $n -lt 200 ] || exit 9; sleep 0.02; done
done
ip netns exec {a} python3 {relay} source {ad} {port} {N} {SIZE} 20
wait",
        a = h(0),
        b = h(1),
        c = h(2),
        d = h(3),
        ad = to(1),
        bd = to(2),
        cd = to(3),
    );
    let trace = tmp("relay.mgt");
    let out = magnet(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--layers",
        "app,tcp,dev",
        "--tcp-state",
        "--",
        "sh",
        "-c",
        &script,
    ]);
    let stdout = ok(&out);
    assert_eq!(
        stdout.matches(&format!("\"bytes\": {}", N * SIZE)).count(),
        4,
        "every piece moved every byte: {stdout}"
    );
    let j = analyze_json(&trace);
    assert_eq!(j["trace"]["lost_events"], 0);
    let conns = j["connections"].as_array().unwrap();
    // Hop k's receiving socket: the one whose local address is host k's on link k-1.
    let recv_conn = |k: usize| {
        conns
            .iter()
            .find(|c| {
                c["local"]
                    .as_str()
                    .is_some_and(|l| l.starts_with(&format!("{}:", to(k))))
                    && c["app"]["recv_bytes"] == N * SIZE
            })
            .unwrap_or_else(|| panic!("hop {k}'s receiver"))
    };
    let src = conns
        .iter()
        .find(|c| c["app"]["sent_calls"] == N && c["app"]["sent_bytes"] == N * SIZE)
        .expect("source");
    let app = row(src, "app", "out");
    assert_eq!(f(&app["size"]["mean"]), SIZE as f64);
    let app_gap = f(&app["interval_ns"]["mean"]);
    assert!(
        (app_gap - 20e6).abs() <= 1e6,
        "source mean interval {app_gap}"
    );
    // Table III: the data units each stack delivered (TCP segments received on the
    // next host, payload from sequence numbers) and their spacing.
    let mut table = vec![(
        "application".to_string(),
        SIZE as f64,
        app_gap,
        f(&app["interval_ns"]["cv"]),
        N,
    )];
    for k in 1..=3 {
        let c = recv_conn(k);
        let r = row(c, "tcp", "in");
        assert_eq!(
            r["bytes"].as_u64(),
            Some(N * SIZE),
            "hop {k} delivered every byte once"
        );
        let d = row(c, "dev", "in");
        assert!(
            d["units"].as_u64().unwrap() >= r["units"].as_u64().unwrap(),
            "hop {k}: dev_rx attributed by packet id"
        );
        table.push((
            format!("TCP stack {k}"),
            f(&r["size"]["mean"]),
            f(&r["interval_ns"]["mean"]),
            f(&r["interval_ns"]["cv"]),
            r["units"].as_u64().unwrap(),
        ));
    }
    eprintln!(
        "{:<14} {:>10} {:>12} {:>6} {:>6}",
        "", "size (B)", "spacing (s)", "cv", "units"
    );
    for (name, size, gap, cv, n) in &table {
        eprintln!(
            "{name:<14} {size:>10.0} {:>12.4} {cv:>6.2} {n:>6}",
            gap / 1e9
        );
    }
    // The modulation grows at each hop: units get smaller and more numerous, and
    // their spacing is irregular (a regular stream has cv 0).
    for k in 1..table.len() {
        let (prev, cur) = (&table[k - 1], &table[k]);
        assert!(
            cur.1 < prev.1,
            "mean unit size shrinks at {}: {table:?}",
            cur.0
        );
        assert!(cur.4 > prev.4, "more units at {}: {table:?}", cur.0);
        assert!(cur.3 > 1.0, "irregular spacing at {}: {table:?}", cur.0);
    }
    assert!(
        table[3].3 > table[1].3,
        "spacing less regular after 3 stacks than after 1: {table:?}"
    );
    eprintln!("{}", ok(&magnet(&["analyze", trace.to_str().unwrap()])));
}

/// Counts strongly coloured pixels (plot marks and legends, not grey axes or
/// black text; a legend alone has a few hundred) inside
/// each rectangle of a PNG screenshot. Python's zlib does the inflating.
const PNG_COUNT: &str = r#"
import json, struct, sys, zlib
data = open(sys.argv[1], "rb").read()
rects = json.loads(sys.argv[2])
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, t = struct.unpack(">I4s", data[pos:pos + 8]); body = data[pos + 8:pos + 8 + n]; pos += 12 + n
    if t == b"IHDR":
        w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
        bpp = 3 if ctype == 2 else 4
    elif t == b"IDAT":
        idat += body
raw = zlib.decompress(idat)
stride = w * bpp
rows, prev, i = [], bytearray(stride), 0
for _ in range(h):
    f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line); prev = line
out = []
for x0, y0, rw, rh, name in rects:
    n = 0
    for y in range(max(y0, 0), min(y0 + rh, h)):
        row = rows[y]
        for x in range(max(x0, 0), min(x0 + rw, w)):
            r, g, b = row[x * bpp], row[x * bpp + 1], row[x * bpp + 2]
            if max(r, g, b) - min(r, g, b) > 60:
                n += 1
    out.append([name, n])
print(json.dumps(out))
"#;

fn chromium() -> Chromium {
    // The report checks its plots after uPlot has drawn them (a timer).
    Chromium::find()
        .expect("chromium (checked by live_or_skip)")
        .window(1400, 16000)
        .budget_ms(5000)
}

/// The value a report's `data-key` names, from `magnet analyze --json`.
fn value_for(j: &Value, key: &str) -> Value {
    let parts: Vec<&str> = key.split('.').collect();
    if parts[0] == "trace" {
        return j["trace"][parts[1]].clone();
    }
    if parts[0] == "task" {
        let t = j["sched"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tid"].as_u64().map(|v| v.to_string()).as_deref() == Some(parts[1]))
            .unwrap();
        return t[parts[2]][parts[3]].clone();
    }
    let c = j["connections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cookie"].as_u64().map(|v| v.to_string()).as_deref() == Some(parts[0]))
        .unwrap_or_else(|| panic!("{key}: no connection"));
    match parts[1] {
        "app" | "tcp" if parts.len() == 3 => c[parts[1]][parts[2]].clone(),
        "latency" => c["latency"][parts[2]][parts[3]].clone(),
        "out" | "in" => c["coalescing"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["dir"] == parts[1])
            .unwrap()[parts[2]]
            .clone(),
        layer => {
            let r = row(c, layer, parts[2]);
            parts[3..].iter().fold(r.clone(), |v, p| v[*p].clone())
        }
    }
}

/// The report of `trace` opened in headless Chromium: no console messages,
/// every plot drawn (coloured marks in each plot's area of a screenshot), and
/// every number on the page equal to `magnet analyze --json`.
fn check_report_in_chromium(trace: &Path, j: &Value) {
    let html = trace.with_extension("html");
    ok(&magnet(&[
        "report",
        trace.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]));
    let page = std::fs::read_to_string(&html).unwrap();
    for bad in [
        "src=",
        "<link",
        "href=\"http",
        "fetch(",
        "XMLHttpRequest",
        "url(",
        "@import",
        "import(",
    ] {
        assert!(
            !page.contains(bad),
            "the page must not load anything ({bad})"
        );
    }
    let url = format!("file://{}", html.display());
    let dom = chromium().dump_dom(&url);
    let console = console_lines(&dom.stderr);
    assert!(console.is_empty(), "console output: {console:?}");
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();

    // Numbers: every data-key on the page against the analysis.
    let mut checked = 0;
    for part in dom.split("data-key=\"").skip(1) {
        let key = &part[..part.find('"').unwrap()];
        let rest = &part[part.find("data-value=\"").unwrap() + 12..];
        let shown: f64 = rest[..rest.find('"').unwrap()].parse().unwrap();
        let want = value_for(j, key);
        let w = want
            .as_f64()
            .unwrap_or_else(|| panic!("{key}: analyze --json has {want}"));
        // Integers exactly; fractions to the last bit or so (serde_json's float
        // parsing is not always correctly rounded).
        assert!(
            shown == w || (shown - w).abs() <= 1e-12 * w.abs(),
            "{key}: page {shown}, analyze --json {want}"
        );
        checked += 1;
    }
    assert!(checked >= 60, "only {checked} numbers on the page");

    // Plots: drawn, and coloured marks in each one's area of a screenshot.
    let attr = |name: &str| {
        let at = dom
            .find(&format!("{name}=\""))
            .unwrap_or_else(|| panic!("no {name}: the script did not run"))
            + name.len()
            + 2;
        dom[at..at + dom[at..].find('"').unwrap()].replace("&quot;", "\"")
    };
    let rects = attr("data-plot-rects");
    let rendered: usize = attr("data-rendered").parse().unwrap();
    assert!(
        rendered >= 10,
        "{rendered} plots: 6 layer rows, 4 TCP state, latency, scheduler"
    );
    let png = html.with_extension("png");
    chromium().screenshot(&url, &png);
    let counts = Command::new("python3")
        .args(["-c", PNG_COUNT, png.to_str().unwrap(), &rects])
        .output()
        .unwrap();
    assert!(
        counts.status.success(),
        "{}",
        String::from_utf8_lossy(&counts.stderr)
    );
    let counts: Vec<(String, u64)> = serde_json::from_slice(&counts.stdout).unwrap();
    assert_eq!(counts.len(), rendered);
    for (name, n) in &counts {
        assert!(
            // Axes and grid are grey: a plot with no data has next to no coloured
            // pixels. The sparsest drawn ones (a listener's one SYN-ACK as a
            // rate step, a few ACK sizes as dots) have 288-700.
            *n >= 150,
            "plot {name} looks blank in the screenshot ({n} coloured pixels): {counts:?}"
        );
    }
    eprintln!("report: {checked} numbers equal to analyze --json; plots {counts:?}");
}

/// On loopback (the demo's workload), against tcpdump:
/// the receiver's `tcp in` counts the wire segments tcpdump sees (not tcp_probe's
/// merged units), with exactly their payload bytes, and every one gets a receive
/// latency; `record --json`, `info` and `analyze` show one duration.
/// About 2 s.
#[test]
fn loopback_tcp_in_is_wire_segments_and_duration_is_one_number() {
    if !live_or_skip(
        "loopback_tcp_in_is_wire_segments_and_duration_is_one_number",
        &[Need::Btf, Need::Tool("tcpdump"), Need::Tool("tshark")],
    ) {
        return;
    }
    let _g = live_lock();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let filter = format!("tcp port {port}");
    let cap = Capture::start(None, "lo", &["-s", "96", &filter]).expect("tcpdump on lo");
    let trace = tmp("loopback-segments.mgt");
    let rec = magnet(&[
        "record",
        "-o",
        trace.to_str().unwrap(),
        "--json",
        "--layers",
        "app,tcp,ip,dev",
        "--tcp-state",
        "--",
        MAGNET,
        "loadgen",
        "--tcp",
        "200x16k",
        "--port",
        &port.to_string(),
    ]);
    // The workload prints its own summary first; record's JSON is the last line.
    let out = ok(&rec);
    let rec: Value = serde_json::from_str(out.lines().last().unwrap_or("")).expect("record --json");
    let pcap = cap.stop().expect("tcpdump stopped");
    // Data segments by sequence number: a retransmission (a loaded loopback
    // sometimes has one) is the same segment again, as it is for TCP.
    let fields = tshark_fields(
        pcap.path(),
        &format!("tcp.dstport == {port} && tcp.len > 0"),
        &[
            "tcp.seq_raw",
            "tcp.len",
            "tcp.analysis.retransmission",
            "tcp.analysis.spurious_retransmission",
        ],
    )
    .unwrap();
    let wire: std::collections::BTreeMap<u64, u64> = fields
        .iter()
        .map(|r| (r[0].parse().unwrap(), r[1].parse().unwrap()))
        .collect();
    // A retransmission may cut the stream differently from the first sending
    // (an RTO after a drop in the loopback backlog, which tcpdump on lo sees
    // before the drop): its pieces are new sequence numbers to the map above
    // but not new data. Segments sent once only are then what the receiver
    // got at least, and the map's keys at most.
    let again = |r: &Vec<String>| !r[2].is_empty() || !r[3].is_empty();
    let retransmitted = fields.iter().filter(|r| again(r)).count();
    let first_sent = (fields.len() - retransmitted) as u64;
    let wire_bytes: u64 = wire.values().sum();
    assert_eq!(wire_bytes, 200 * 16384, "tcpdump saw every byte");

    let a = analyze_json(&trace);
    let rx = a["connections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["local"] == format!("127.0.0.1:{port}") && c["app"]["recv_bytes"] != 0)
        .expect("the receiving socket");
    let tcp_in = row(rx, "tcp", "in");
    assert_eq!(tcp_in["unit"], "segment");
    let units = tcp_in["units"].as_u64().unwrap();
    assert_eq!(tcp_in["bytes"].as_u64(), Some(wire_bytes), "tcp in bytes");
    if retransmitted == 0 {
        assert_eq!(
            units,
            wire.len() as u64,
            "tcp in against tcpdump's data segments"
        );
    } else {
        assert!(
            (first_sent..=wire.len() as u64).contains(&units),
            "tcp in {units} units against tcpdump's {first_sent} segments sent once and \
             {} sequence numbers ({retransmitted} retransmissions)",
            wire.len()
        );
    }
    assert_eq!(rx["latency"]["recv"]["count"], tcp_in["units"]);
    assert_eq!(rx["latency"]["recv_unmatched"], 0);

    let info: Value =
        serde_json::from_str(&ok(&magnet(&["info", trace.to_str().unwrap(), "--json"]))).unwrap();
    let (r, i, d) = (
        f(&rec["seconds"]),
        f(&info["duration_s"]),
        f(&a["trace"]["duration_s"]),
    );
    assert!(
        (r - i).abs() < 1e-9 && i == d && i > 0.0,
        "record {r} s, info {i} s, analyze {d} s"
    );
    eprintln!(
        "loopback: {} wire segments ({retransmitted} retransmissions), {wire_bytes} B; \
         tcp in {units} units; duration {i} s",
        wire.len()
    );
}
