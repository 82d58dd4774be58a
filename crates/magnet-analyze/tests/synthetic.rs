//! The analyses on synthetic event streams whose every number is known: records
//! are built field by field through the builtin catalog, the way the recorder
//! lays them out, and written to a real trace file.

use std::net::{IpAddr, Ipv4Addr};

use magnet_analyze::{analyze, Analysis, Options};
use magnet_trace::{
    catalog::TCP_SNAP_LEN, kind, Catalog, ClockMap, FieldType, Footer, Header, TraceReader,
    TraceWriter,
};

const MS: u64 = 1_000_000;
const T0: u64 = 1_000_000_000;

struct Rec {
    bytes: Vec<u8>,
    kind: u16,
}

/// Builds one record: header values, then named fields.
fn rec(k: u16, ts: u64, cpu: u16, pid: u32, tid: u32, snapshot: bool) -> Rec {
    let c = Catalog::builtin();
    let d = c.get(k).unwrap();
    let len = d.size + if snapshot { TCP_SNAP_LEN } else { 0 };
    let mut b = vec![0u8; len as usize];
    b[0..8].copy_from_slice(&ts.to_le_bytes());
    b[8..10].copy_from_slice(&k.to_le_bytes());
    b[10..12].copy_from_slice(&cpu.to_le_bytes());
    b[12..16].copy_from_slice(&pid.to_le_bytes());
    b[16..20].copy_from_slice(&tid.to_le_bytes());
    b[20..24].copy_from_slice(&(snapshot as u32).to_le_bytes());
    Rec { bytes: b, kind: k }
}

impl Rec {
    fn set(mut self, name: &str, v: u64) -> Rec {
        let c = Catalog::builtin();
        let f = c
            .get(self.kind)
            .unwrap()
            .field(name)
            .unwrap_or_else(|| panic!("no field {name}"))
            .clone();
        let o = f.offset as usize;
        let n = f.ty.size() as usize;
        assert!(!matches!(f.ty, FieldType::Addr | FieldType::Comm));
        self.bytes[o..o + n].copy_from_slice(&v.to_le_bytes()[..n]);
        self
    }
    fn addr(mut self, name: &str, a: Ipv4Addr) -> Rec {
        let c = Catalog::builtin();
        let o = c.get(self.kind).unwrap().field(name).unwrap().offset as usize;
        self.bytes[o..o + 16].copy_from_slice(&a.to_ipv6_mapped().octets());
        self
    }
    fn comm(mut self, s: &str) -> Rec {
        let c = Catalog::builtin();
        let o = c.get(self.kind).unwrap().field("comm").unwrap().offset as usize;
        self.bytes[o..o + s.len()].copy_from_slice(s.as_bytes());
        self
    }
}

fn trace(recs: &[Rec]) -> Vec<u8> {
    let header = Header::new(
        "h".into(),
        "6.18".into(),
        2,
        ClockMap {
            monotonic_ns: T0,
            realtime_ns: 0,
        },
    );
    let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
    for r in recs {
        w.push(&r.bytes).unwrap();
    }
    w.finish(&Footer::default()).unwrap()
}

fn run(recs: &[Rec]) -> Analysis {
    let bytes = trace(recs);
    analyze(
        &mut TraceReader::new(&bytes[..]).unwrap(),
        &Options {
            series: true,
            ..Options::default()
        },
    )
}

const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const ISN: u64 = 1000;

fn sock(ts: u64, cookie: u64, local: (Ipv4Addr, u16), remote: (Ipv4Addr, u16)) -> Rec {
    rec(kind::SOCK, ts, 0, 7, 7, false)
        .set("cookie", cookie)
        .set("family", 2)
        .set("protocol", 6)
        .set("sport", local.1 as u64)
        .set("dport", remote.1 as u64)
        .set("netns", 4026531833)
        .addr("saddr", local.0)
        .addr("daddr", remote.0)
}

fn app(k: u16, ts: u64, tid: u32, cookie: u64, ret: i64) -> Rec {
    rec(k, ts, 0, 7, tid, false)
        .set("cookie", cookie)
        .set("asked", ret as u64)
        .set("ret", ret as u64)
        .set("family", 2)
        .set("protocol", 6)
        .comm("sender")
}

#[allow(clippy::too_many_arguments)]
fn ip(
    k: u16,
    ts: u64,
    cookie: u64,
    pkt: u64,
    tot_len: u64,
    seq: u64,
    flags: u64,
    src: (Ipv4Addr, u16),
    dst: (Ipv4Addr, u16),
) -> Rec {
    rec(k, ts, 0, 7, 7, false)
        .set("cookie", cookie)
        .set("pkt_id", pkt)
        .set("tot_len", tot_len)
        .set("version", 4)
        .set("protocol", 6)
        .set("sport", src.1 as u64)
        .set("dport", dst.1 as u64)
        .set("tcp_flags", flags)
        .set("seq", seq)
        .addr("saddr", src.0)
        .addr("daddr", dst.0)
}

fn dev(k: u16, ts: u64, cookie: u64, pkt: u64, len: u64) -> Rec {
    rec(k, ts, 0, 7, 7, false)
        .set("cookie", cookie)
        .set("pkt_id", pkt)
        .set("len", len)
        .set("ifindex", 3)
}

/// A TCP event with a snapshot.
#[allow(clippy::too_many_arguments)]
fn tcp(
    k: u16,
    ts: u64,
    tid: u32,
    cookie: u64,
    pkt: u64,
    seq: u64,
    flags: u64,
    snap: &[(&str, u64)],
) -> Rec {
    let mut r = rec(k, ts, 0, 7, tid, true)
        .set("cookie", cookie)
        .set("pkt_id", pkt)
        .set("seq", seq)
        .set("arg", flags)
        .set("state", 1);
    for (n, v) in snap {
        r = r.set(n, *v);
    }
    r
}

const PA: (Ipv4Addr, u16) = (A, 40000);
const PB: (Ipv4Addr, u16) = (B, 5001);

/// The sender of MAGNeT's FTP example: 10 KiB every 20 ms, cut by TCP into
/// 1448-byte segments (7 full + 1 of 104 bytes), each handed to the device 100 µs
/// after IP saw it.
fn ftp_sender(sends: u64) -> Vec<Rec> {
    let mut v = vec![sock(T0, 1, PA, PB)];
    let mut pkt = 100;
    let mut seq = ISN;
    for i in 0..sends {
        let t = T0 + 10 * MS + i * 20 * MS;
        v.push(tcp(
            kind::TCP_SENDMSG,
            t,
            7,
            1,
            0,
            0,
            0,
            &[
                ("write_seq", seq),
                ("snd_una", seq),
                ("snd_nxt", seq),
                ("snd_cwnd", 10),
            ],
        ));
        let mut off = 0;
        let mut k = 0;
        while off < 10240 {
            let len = (10240 - off).min(1448);
            let ts = t + 10_000 + k * 50_000;
            v.push(ip(
                kind::IP_LOCAL_OUT,
                ts,
                1,
                pkt,
                len + 52,
                seq + off,
                0x18,
                PA,
                PB,
            ));
            v.push(dev(kind::DEV_START_XMIT, ts + 100_000, 1, pkt, len + 66));
            pkt += 1;
            off += len;
            k += 1;
        }
        v.push(app(kind::APP_SEND, t + 5_000, 7, 1, 10240));
        seq += 10240;
    }
    // FIN after the last send closes the last segment's sequence range.
    let t = T0 + 10 * MS + sends * 20 * MS;
    v.push(ip(kind::IP_LOCAL_OUT, t, 1, pkt, 52, seq, 0x11, PA, PB));
    v.push(dev(kind::DEV_START_XMIT, t + 100_000, 1, pkt, 66));
    v
}

#[test]
fn modulation_of_a_paced_sender() {
    let mut recs = ftp_sender(10);
    recs.sort_by_key(|r| u64::from_le_bytes(r.bytes[0..8].try_into().unwrap()));
    let a = run(&recs);
    assert_eq!(a.connections.len(), 1);
    let c = &a.connections[0];
    assert_eq!(
        (c.cookie, c.local.as_deref(), c.remote.as_deref()),
        (1, Some("10.0.0.1:40000"), Some("10.0.0.2:5001"))
    );
    assert_eq!(
        (
            c.app.sent_bytes,
            c.app.sent_calls,
            c.pids.as_slice(),
            c.comm.as_str()
        ),
        (102400, 10, &[7][..], "sender")
    );

    let app = c.row("app", "out").unwrap();
    assert_eq!((app.units, app.bytes), (10, 102400));
    assert_eq!(
        (app.size.mean, app.size.median, app.size.p99),
        (10240.0, 10240, 10240)
    );
    let gap = app.interval_ns.as_ref().unwrap();
    assert_eq!(
        (gap.count, gap.mean, gap.median, gap.p99, gap.cv),
        (9, 20e6, 20 * MS, 20 * MS, 0.0)
    );
    // 102400 bytes over the 180 ms from the first send to the last.
    assert_eq!(app.rate_bps, Some(102400.0 * 8.0 / 0.18));

    // TCP payload per segment from sequence numbers: 7 × 1448 + 104 per send.
    let tcp = c.row("tcp", "out").unwrap();
    assert_eq!(
        (
            tcp.units,
            tcp.bytes,
            tcp.size.median,
            tcp.size.min,
            tcp.size.max
        ),
        (80, 102400, 1448, 104, 1448)
    );
    assert_eq!(tcp.size.mean, 1280.0);
    // 7 gaps of 50 µs then 20 ms − 350 µs, per send.
    let g = tcp.interval_ns.as_ref().unwrap();
    assert_eq!(
        (g.count, g.median, g.min, g.max),
        (79, 50_000, 50_000, 20 * MS - 350_000)
    );

    // IP and dev count every packet with its headers, the FIN included.
    let ipr = c.row("ip", "out").unwrap();
    assert_eq!((ipr.units, ipr.bytes), (81, 102400 + 81 * 52));
    let devr = c.row("dev", "out").unwrap();
    assert_eq!(
        (devr.units, devr.bytes, devr.size.median, devr.size.p99),
        (81, 102400 + 81 * 66, 1514, 1514)
    );
    assert!(c.row("dev", "in").is_none());

    let k = &c.coalescing[0];
    assert_eq!(
        (
            k.dir.as_str(),
            k.app_calls,
            k.tcp_segments,
            k.ip_packets,
            k.dev_packets
        ),
        ("out", 10, 80, 81, 81)
    );
    assert_eq!(k.packets_per_call, Some(8.1));

    // Send latency: tcp_sendmsg at t, the 8th segment (last byte) at the device at
    // t + 10 µs + 7·50 µs + 100 µs = t + 460 µs.
    let l = c.latency.send.as_ref().unwrap();
    assert_eq!((l.count, l.min, l.max), (10, 460_000, 460_000));
    assert_eq!(c.latency.send_unmatched, 0);

    // Marks for the figure: one per unit.
    let s = c.series.as_ref().unwrap();
    let m = s.marks.iter().find(|m| m.layer == "app").unwrap();
    assert_eq!(m.points.len(), 10);
    assert_eq!(m.points[0], (0.010005, 10240));
}

#[test]
fn receive_side_dev_attributed_by_packet_id_and_tuple() {
    // Receiver (cookie 2, local B:5001). Segment 1: dev_rx then tcp_rcv with the
    // same packet id (no IP events: another namespace). Segment 2: dev_rx, IP
    // PRE_ROUTING without a socket (claimed by 5-tuple), LOCAL_IN, tcp_rcv.
    // A dev_rx nobody claims stays unattributed.
    let snap = |rcv: u64| {
        vec![
            ("copied_seq", ISN),
            ("rcv_nxt", rcv),
            ("write_seq", 5),
            ("snd_una", 5),
            ("snd_nxt", 5),
        ]
    };
    let t = T0 + MS;
    let recs = vec![
        sock(T0, 2, PB, PA),
        // No socket named by the recorder (cookie 0): claimed by packet id.
        dev(kind::DEV_RX, t, 0, 50, 1500),
        tcp(kind::TCP_RCV, t + 10_000, 9, 2, 50, ISN, 0x18, &snap(ISN)),
        dev(kind::DEV_RX, t + MS, 0, 51, 1000),
        ip(
            kind::IP_PRE_ROUTING,
            t + MS + 1_000,
            0,
            51,
            1000,
            ISN + 1448,
            0x18,
            PA,
            PB,
        ),
        ip(
            kind::IP_LOCAL_IN,
            t + MS + 2_000,
            2,
            51,
            1000,
            ISN + 1448,
            0x18,
            PA,
            PB,
        ),
        tcp(
            kind::TCP_RCV,
            t + MS + 10_000,
            9,
            2,
            51,
            ISN + 1448,
            0x18,
            &snap(ISN + 1448),
        ),
        dev(kind::DEV_RX, t + MS + 20_000, 0, 77, 60),
        // FIN at the end of the data: closes segment 2 (948 bytes).
        tcp(
            kind::TCP_RCV,
            t + 2 * MS,
            9,
            2,
            52,
            ISN + 2396,
            0x11,
            &snap(ISN + 2396),
        ),
        // One recv of both segments 3 ms after the first arrived.
        rec(kind::SCHED_WAKEUP, t + 2 * MS + 100_000, 1, 0, 0, false)
            .set("task_tid", 9)
            .set("task_tgid", 7),
        rec(kind::SCHED_SWITCH, t + 2 * MS + 400_000, 1, 0, 0, false)
            .set("next_tid", 9)
            .set("next_tgid", 7),
        app(kind::APP_RECV, t + 3 * MS, 9, 2, 2396),
    ];
    let a = run(&recs);
    let c = a.connections.iter().find(|c| c.cookie == 2).unwrap();
    let d = c.row("dev", "in").unwrap();
    assert_eq!((d.units, d.bytes), (2, 2500));
    assert_eq!(d.first_s, 0.001);
    assert_eq!(c.row("ip", "in").unwrap().units, 1);
    let tcp = c.row("tcp", "in").unwrap();
    assert_eq!(
        (tcp.units, tcp.bytes, tcp.size.min, tcp.size.max),
        (2, 2396, 948, 1448)
    );
    assert_eq!(a.trace.unattributed.dev_rx, 1);
    // dev arrival → recv: 3 ms and 2 ms.
    let r = c.latency.recv.as_ref().unwrap();
    assert_eq!((r.count, r.min, r.max), (2, 2 * MS, 3 * MS));
    // The thread waited 300 µs for a CPU out of the 3 ms since the oldest arrival.
    let w = c.latency.recv_cpu_wait.as_ref().unwrap();
    assert_eq!((w.count, w.max), (1, 300_000));
    assert_eq!(c.latency.recv_cpu_wait_share, Some(0.1));
    let k = c.coalescing.iter().find(|k| k.dir == "in").unwrap();
    assert_eq!(
        (k.app_calls, k.dev_packets, k.packets_per_call),
        (1, 2, Some(2.0))
    );
}

#[test]
fn tcp_state_over_time() {
    // Send buffer (write_seq − snd_una): 0 for 1 ms, 30000 for 2 ms, 6000 for 1 ms.
    let s = |ws: u64, una: u64, cwnd: u64, srtt: u64| {
        vec![
            ("write_seq", ws),
            ("snd_una", una),
            ("snd_nxt", una),
            ("snd_cwnd", cwnd),
            ("srtt_us", srtt),
            ("snd_ssthresh", 20),
        ]
    };
    let recs = vec![
        tcp(
            kind::TCP_RCV,
            T0 + MS,
            7,
            3,
            0,
            0,
            0x10,
            &s(100, 100, 10, 0),
        ),
        tcp(
            kind::TCP_SENDMSG,
            T0 + 2 * MS,
            7,
            3,
            0,
            0,
            0,
            &s(30100, 100, 10, 50),
        ),
        tcp(
            kind::TCP_RETRANS,
            T0 + 4 * MS,
            7,
            3,
            0,
            0,
            0,
            &s(30100, 24100, 5, 70),
        ),
        tcp(
            kind::TCP_RCV,
            T0 + 5 * MS,
            7,
            3,
            0,
            0,
            0x10,
            &s(30100, 30100, 6, 60),
        ),
    ];
    let a = run(&recs);
    let t = a.connections[0].tcp.as_ref().unwrap();
    assert_eq!(
        (
            t.samples,
            t.retransmits,
            t.sndbuf_max,
            t.cwnd_min,
            t.cwnd_max,
            t.ssthresh_last
        ),
        (4, 1, 30000, 5, 10, 20)
    );
    assert_eq!(t.sndbuf_mean, (30000.0 * 2.0 + 6000.0) / 4.0);
    let srtt = t.srtt_us.as_ref().unwrap();
    assert_eq!((srtt.count, srtt.median), (3, 60));
    let series = &a.connections[0].series.as_ref().unwrap().tcp;
    assert_eq!(
        series.iter().map(|p| p.sndbuf).collect::<Vec<_>>(),
        vec![0, 30000, 6000, 0]
    );
    assert_eq!(series[1].t_s, 0.002);
}

#[test]
fn lost_regions_and_truncation() {
    let recs = vec![
        app(kind::APP_SEND, T0 + MS, 7, 4, 100),
        rec(kind::LOST, T0 + 5 * MS, 0, 0, 0, false)
            .set("count", 42)
            .set("lost_cpu", 0),
        app(kind::APP_SEND, T0 + 6 * MS, 7, 4, 100),
    ];
    let a = run(&recs);
    assert_eq!(a.trace.lost_events, 42);
    assert_eq!(a.trace.lost.len(), 1);
    assert_eq!(
        (a.trace.lost[0].from_s, a.trace.lost[0].to_s),
        (0.001, 0.005)
    );
    assert!(a.trace.complete);

    // The same trace cut in its END block: analysed up to the cut, damage named.
    let mut bytes = trace(&recs);
    bytes.truncate(bytes.len() - 3);
    let a = analyze(
        &mut TraceReader::new(&bytes[..]).unwrap(),
        &Options::default(),
    );
    assert!(!a.trace.complete);
    assert_eq!(a.trace.damage.len(), 1, "{:?}", a.trace.damage);
    assert_eq!(a.connections[0].app.sent_calls, 2);
}

#[test]
fn ip_packets_without_socket_found_by_tuple_and_wildcard() {
    // A UDP socket bound to B:53, unconnected (remote 0.0.0.0:0): packets to it
    // are found through the wildcard flow. The socket is announced after its
    // first packet arrived (at its first recv) and a dev_rx came before that:
    // both are attributed once the socket is known. A packet of a flow nobody
    // announces stays unattributed.
    let s = rec(kind::SOCK, T0 + 2 * MS, 0, 7, 7, false)
        .set("cookie", 5)
        .set("family", 2)
        .set("protocol", 17)
        .set("sport", 53)
        .addr("saddr", B)
        .addr("daddr", Ipv4Addr::UNSPECIFIED);
    let pkt = |ts: u64, id: u64| {
        ip(kind::IP_LOCAL_IN, ts, 0, id, 80, 0, 0, (A, 3333), (B, 53)).set("protocol", 17)
    };
    let stray = ip(
        kind::IP_LOCAL_IN,
        T0 + MS,
        0,
        9,
        80,
        0,
        0,
        (A, 3333),
        (B, 54),
    )
    .set("protocol", 17);
    let a = run(&[
        dev(kind::DEV_RX, T0 + MS - 1_000, 0, 1, 80),
        pkt(T0 + MS, 1),
        stray,
        s,
        pkt(T0 + 3 * MS, 2),
    ]);
    let c = &a.connections[0];
    assert_eq!(c.protocol, "udp");
    let r = c.row("ip", "in").unwrap();
    assert_eq!(
        (r.units, r.bytes, r.interval_ns.as_ref().unwrap().mean),
        (2, 160, 2e6)
    );
    assert_eq!(c.row("dev", "in").unwrap().units, 1);
    assert_eq!(a.trace.unattributed.ip, 1);
    assert_eq!(c.local.as_deref(), Some("10.0.0.2:53"));
    let _ = IpAddr::from(A);
}

#[test]
fn send_latency_through_gso_segmentation() {
    // Each 10 KiB send leaves IP as one GSO packet (IP length 10292), is queued
    // to the device (10306 with the Ethernet header) and reaches the driver as
    // 7 frames of 1514 and one of 170 with packet ids of their own, 1.5 ms apart
    // (a rate limiter). The send's last byte is in the 8th frame.
    let mut v = vec![
        sock(T0, 1, PA, PB),
        // The handshake's last ACK: no payload, so its IP length is the header.
        ip(
            kind::IP_LOCAL_OUT,
            T0 + 1_000,
            1,
            999,
            52,
            ISN,
            0x10,
            PA,
            PB,
        ),
        dev(kind::DEV_QUEUE, T0 + 2_000, 1, 999, 66),
        dev(kind::DEV_START_XMIT, T0 + 3_000, 1, 999, 66),
    ];
    let mut seq = ISN;
    let mut pkt = 1000;
    for i in 0..3u64 {
        let t = T0 + MS + i * 20 * MS;
        v.push(tcp(
            kind::TCP_SENDMSG,
            t,
            7,
            1,
            0,
            0,
            0,
            &[("write_seq", seq), ("snd_una", seq), ("snd_nxt", seq)],
        ));
        v.push(ip(
            kind::IP_LOCAL_OUT,
            t + 10_000,
            1,
            pkt,
            10292,
            seq,
            0x18,
            PA,
            PB,
        ));
        v.push(dev(kind::DEV_QUEUE, t + 12_000, 1, pkt, 10306));
        v.push(app(kind::APP_SEND, t + 20_000, 7, 1, 10240));
        for k in 0..8u64 {
            // The 3rd send's 2nd frame went unrecorded: its short last frame
            // still ends the packet.
            if i == 2 && k == 1 {
                continue;
            }
            let len = if k < 7 { 1514 } else { 170 };
            v.push(dev(
                kind::DEV_START_XMIT,
                t + 100_000 + k * 1_500_000,
                1,
                50_000 + i * 10 + k,
                len,
            ));
        }
        seq += 10240;
        pkt += 1;
    }
    let t = T0 + MS + 3 * 20 * MS;
    v.push(ip(kind::IP_LOCAL_OUT, t, 1, pkt, 52, seq, 0x11, PA, PB));
    v.push(dev(kind::DEV_QUEUE, t + 1_000, 1, pkt, 66));
    v.push(dev(kind::DEV_START_XMIT, t + 2_000, 1, pkt, 66));
    v.sort_by_key(|r| u64::from_le_bytes(r.bytes[0..8].try_into().unwrap()));
    let a = run(&v);
    let c = &a.connections[0];
    let l = c.latency.send.as_ref().unwrap();
    // tcp_sendmsg at t; 8th frame at t + 100 µs + 7 × 1.5 ms.
    assert_eq!((l.count, l.min, l.max), (3, 10_600_000, 10_600_000));
    assert_eq!(c.latency.send_unmatched, 0);
    assert_eq!(c.row("dev", "out").unwrap().units, 25);
    assert_eq!(c.row("tcp", "out").unwrap().bytes, 30720);
}

#[test]
fn fin_carrying_the_last_data() {
    // 1448 + 600 bytes, the 600 in the FIN segment; where it ended is known from
    // the next snapshot (rcv_nxt = FIN's seq + 600 + 1). Its own tcp_probe
    // snapshot is taken before the segment is processed (rcv_nxt = its seq).
    let snap = |rcv: u64| {
        vec![
            ("rcv_nxt", rcv),
            ("write_seq", 5),
            ("snd_una", 5),
            ("snd_nxt", 5),
        ]
    };
    let t = T0 + MS;
    let recs = vec![
        sock(T0, 2, PB, PA),
        tcp(kind::TCP_RCV, t, 9, 2, 1, ISN, 0x18, &snap(ISN)),
        tcp(
            kind::TCP_RCV,
            t + MS,
            9,
            2,
            2,
            ISN + 1448,
            0x19,
            &snap(ISN + 1448),
        ),
        rec(kind::TCP_STATE, t + MS + 1_000, 0, 7, 9, true)
            .set("cookie", 2)
            .set("newstate", 8)
            .set("state", 8)
            .set("rcv_nxt", ISN + 1448 + 601),
    ];
    let a = run(&recs);
    let r = a.connections[0].row("tcp", "in").unwrap().clone();
    assert_eq!(
        (r.units, r.bytes, r.size.min, r.size.max),
        (2, 2048, 600, 1448)
    );
    assert_eq!(r.last_s, 0.002);
}

mod robustness {
    use super::*;
    use proptest::prelude::*;

    /// Kinds the analysis reads, and some it does not know.
    const KINDS: &[u16] = &[
        kind::LOST,
        kind::SOCK,
        kind::APP_SEND,
        kind::APP_RECV,
        kind::TCP_STATE,
        kind::TCP_RCV,
        kind::TCP_SENDMSG,
        kind::TCP_RETRANS,
        kind::IP_LOCAL_OUT,
        kind::IP_PRE_ROUTING,
        kind::IP_LOCAL_IN,
        kind::DEV_START_XMIT,
        kind::DEV_RX,
        kind::SCHED_SWITCH,
        kind::SCHED_WAKEUP,
        99,
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// Records of any kind with arbitrary bytes (short ones included, and
        /// timestamps anywhere in u64) never make the analysis panic, and what
        /// it counts adds up.
        #[test]
        fn arbitrary_records_never_panic(
            recs in proptest::collection::vec(
                (0..KINDS.len(), any::<u64>(), 0u64..4, proptest::collection::vec(any::<u8>(), 0..180)),
                0..300,
            )
        ) {
            let mut built = Vec::new();
            for (ki, ts, cookie, body) in recs {
                let mut b = vec![0u8; 24];
                // Small cookies so that records meet on the same sockets.
                b[0..8].copy_from_slice(&ts.to_le_bytes());
                b[8..10].copy_from_slice(&KINDS[ki].to_le_bytes());
                b.extend_from_slice(&body);
                if b.len() >= 32 {
                    b[24..32].copy_from_slice(&cookie.to_le_bytes());
                }
                built.push(Rec { bytes: b, kind: KINDS[ki] });
            }
            let n = built.len() as u64;
            let a = run(&built);
            prop_assert_eq!(a.trace.records, n);
            for c in &a.connections {
                for r in &c.modulation {
                    prop_assert_eq!(r.size.count, r.units);
                    prop_assert!(r.size.min <= r.size.median && r.size.median <= r.size.max);
                }
            }
        }
    }
}

#[test]
fn dev_rx_naming_its_socket_counts_once() {
    // The recorder names the receiving socket on dev_rx (its flow): counted at
    // once, and the packet's LOCAL_IN and tcp_rcv (same id) do not count it again.
    let t = T0 + MS;
    let recs = vec![
        sock(T0, 2, PB, PA),
        dev(kind::DEV_RX, t, 2, 60, 1514),
        ip(kind::IP_LOCAL_IN, t + 1_000, 2, 60, 1500, ISN, 0x18, PA, PB),
        dev(kind::DEV_RX, t + MS, 2, 61, 66),
    ];
    let a = run(&recs);
    let c = a.connections.iter().find(|c| c.cookie == 2).unwrap();
    let d = c.row("dev", "in").unwrap();
    assert_eq!((d.units, d.bytes), (2, 1580));
    assert_eq!(c.row("ip", "in").unwrap().units, 1);
    assert_eq!(a.trace.unattributed.dev_rx, 0);
}
