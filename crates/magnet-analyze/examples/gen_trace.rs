//! Writes a synthetic trace for the analysis benchmark (`bench/analyze-speed.sh`):
//! 16 TCP connections, each send of 10 KiB followed through every layer the
//! way the recorder sees it (tcp_sendmsg with a TCP snapshot, IP LOCAL_OUT of a
//! GSO packet, 8 frames at the driver, dev_rx and tcp_probe on the receiver,
//! the recv, ACKs back, context switches), until the trace holds N events.
//!
//! usage: cargo run --release -p magnet-analyze --example gen_trace -- OUT.mgt [EVENTS]

use std::io::BufWriter;
use std::net::Ipv4Addr;

use magnet_trace::emit::Emitter;
use magnet_trace::{kind, ClockMap, FieldType, Footer, Header, TraceWriter};

struct Gen {
    emit: Emitter,
    w: TraceWriter<BufWriter<std::fs::File>>,
    n: u64,
    last_ts: u64,
}

impl Gen {
    /// One record through magnet-trace's emit builder; address fields take an
    /// IPv4 address as a number.
    fn rec(&mut self, k: u16, ts: u64, cpu: u16, tid: u32, snap: bool, fields: &[(&str, u64)]) {
        let mut r = self.emit.record(k, ts).cpu(cpu).pid(1000).tid(tid);
        if snap {
            r = r.snapshot();
        }
        let desc = self.emit.catalog().get(k).expect("kind");
        for &(name, v) in fields {
            r = match desc.field(name).map(|f| f.ty) {
                Some(FieldType::Addr) => r.addr(name, Ipv4Addr::from(v as u32)),
                _ => r.set(name, v),
            };
        }
        self.w.push(r.as_ref()).expect("write");
        self.n += 1;
        self.last_ts = self.last_ts.max(ts);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let out = args.get(1).expect("usage: gen_trace OUT.mgt [EVENTS]");
    let target: u64 = args
        .get(2)
        .map_or(10_000_000, |s| s.parse().expect("EVENTS"));
    let t0 = 1_000_000_000u64;
    let header = Header::new(
        "bench".into(),
        "synthetic".into(),
        4,
        ClockMap {
            monotonic_ns: t0,
            realtime_ns: 0,
        },
    );
    let file = std::fs::File::create(out).expect("create");
    let mut g = Gen {
        emit: Emitter::builtin(),
        w: TraceWriter::new(BufWriter::new(file), &header).unwrap(),
        n: 0,
        last_ts: t0,
    };
    const CONNS: u64 = 16;
    let (a, b) = (0x0a00_0001u64, 0x0a00_0002u64);
    for c in 0..CONNS {
        let (tx, rx) = (100 + 2 * c, 101 + 2 * c);
        let sp = 40000 + c;
        g.rec(
            kind::SOCK,
            t0,
            0,
            1,
            false,
            &[
                ("cookie", tx),
                ("family", 2),
                ("protocol", 6),
                ("sport", sp),
                ("dport", 5001),
                ("saddr", a),
                ("daddr", b),
            ],
        );
        g.rec(
            kind::SOCK,
            t0,
            0,
            2,
            false,
            &[
                ("cookie", rx),
                ("family", 2),
                ("protocol", 6),
                ("sport", 5001),
                ("dport", sp),
                ("saddr", b),
                ("daddr", a),
            ],
        );
    }
    let mut seq = [1000u64; CONNS as usize];
    let mut pkt = 1u64;
    // Each connection's handshake ACK: a whole packet at IP and the driver.
    for c in 0..CONNS {
        let f = [
            ("cookie", 100 + 2 * c),
            ("pkt_id", pkt),
            ("tot_len", 52),
            ("version", 4),
            ("protocol", 6),
            ("sport", 40000 + c),
            ("dport", 5001),
            ("tcp_flags", 0x10),
            ("seq", 1000),
            ("saddr", a),
            ("daddr", b),
        ];
        g.rec(kind::IP_LOCAL_OUT, t0 + 100, 0, 10, false, &f);
        g.rec(
            kind::DEV_START_XMIT,
            t0 + 200,
            0,
            10,
            false,
            &[
                ("cookie", 100 + 2 * c),
                ("pkt_id", pkt),
                ("len", 66),
                ("ifindex", 3),
            ],
        );
        pkt += 1;
    }
    let mut i = 0u64;
    while g.n < target {
        let c = i % CONNS;
        let (tx, rx) = (100 + 2 * c, 101 + 2 * c);
        let sp = 40000 + c;
        let s = seq[c as usize];
        let t = t0 + 1_000_000 + i * 50_000;
        let cpu = (c % 4) as u16;
        let snap = |ws: u64, una: u64| {
            vec![
                ("write_seq", ws),
                ("snd_una", una),
                ("snd_nxt", ws),
                ("snd_cwnd", 10),
                ("srtt_us", 100),
                ("state", 1),
                ("copied_seq", 1000),
                ("rcv_nxt", ws),
            ]
        };
        let mut f = vec![("cookie", tx)];
        f.extend(snap(s, s));
        g.rec(kind::TCP_SENDMSG, t, cpu, 10, true, &f);
        let ip = |p: u64, len: u64, seq: u64, flags: u64| {
            vec![
                ("cookie", tx),
                ("pkt_id", p),
                ("tot_len", len),
                ("version", 4),
                ("protocol", 6),
                ("sport", sp),
                ("dport", 5001),
                ("tcp_flags", flags),
                ("seq", seq),
                ("saddr", a),
                ("daddr", b),
            ]
        };
        g.rec(
            kind::IP_LOCAL_OUT,
            t + 1_000,
            cpu,
            10,
            false,
            &ip(pkt, 10292, s, 0x18),
        );
        g.rec(
            kind::IP_POST_ROUTING,
            t + 1_500,
            cpu,
            10,
            false,
            &ip(pkt, 10292, s, 0x18),
        );
        g.rec(
            kind::APP_SEND,
            t + 2_000,
            cpu,
            10,
            false,
            &[
                ("cookie", tx),
                ("asked", 10240),
                ("ret", 10240),
                ("family", 2),
                ("protocol", 6),
            ],
        );
        let gso = pkt;
        pkt += 1;
        for k in 0..8u64 {
            let len = if k < 7 { 1514 } else { 170 };
            let tk = t + 3_000 + k * 1_500;
            let p = pkt;
            pkt += 1;
            g.rec(
                kind::DEV_START_XMIT,
                tk,
                cpu,
                10,
                false,
                &[("cookie", tx), ("pkt_id", p), ("len", len), ("ifindex", 3)],
            );
            g.rec(
                kind::DEV_RX,
                tk + 200,
                cpu,
                0,
                false,
                &[
                    ("cookie", rx),
                    ("pkt_id", p),
                    ("len", len - 14),
                    ("ifindex", 4),
                ],
            );
            let mut f = vec![
                ("cookie", rx),
                ("pkt_id", p),
                ("len", len - 34),
                ("seq", s + k * 1448),
                ("arg", 0x18),
            ];
            f.extend(snap(5, 5));
            g.rec(kind::TCP_RCV, tk + 400, cpu, 0, true, &f);
        }
        let _ = gso;
        g.rec(
            kind::SCHED_WAKEUP,
            t + 15_000,
            cpu,
            0,
            false,
            &[("task_tid", 20), ("task_tgid", 1000)],
        );
        g.rec(
            kind::SCHED_SWITCH,
            t + 16_000,
            cpu,
            0,
            false,
            &[("prev_tid", 0), ("next_tid", 20), ("next_tgid", 1000)],
        );
        g.rec(
            kind::APP_RECV,
            t + 17_000,
            cpu,
            20,
            false,
            &[
                ("cookie", rx),
                ("asked", 65536),
                ("ret", 10240),
                ("family", 2),
                ("protocol", 6),
            ],
        );
        g.rec(
            kind::SCHED_SWITCH,
            t + 18_000,
            cpu,
            20,
            false,
            &[
                ("prev_tid", 20),
                ("prev_tgid", 1000),
                ("prev_state", 1),
                ("next_tid", 0),
            ],
        );
        // Two ACKs back to the sender.
        for k in 0..2u64 {
            let p = pkt;
            pkt += 1;
            let ack = [
                ("cookie", tx),
                ("pkt_id", p),
                ("tot_len", 52),
                ("version", 4),
                ("protocol", 6),
                ("sport", 5001),
                ("dport", sp),
                ("tcp_flags", 0x10),
                ("seq", 5),
                ("saddr", b),
                ("daddr", a),
            ];
            g.rec(
                kind::DEV_RX,
                t + 19_000 + k * 100,
                cpu,
                0,
                false,
                &[("cookie", tx), ("pkt_id", p), ("len", 52), ("ifindex", 3)],
            );
            g.rec(kind::IP_LOCAL_IN, t + 19_050 + k * 100, cpu, 0, false, &ack);
            let mut f = vec![
                ("cookie", tx),
                ("pkt_id", p),
                ("len", 32),
                ("seq", 5),
                ("arg", 0x10),
            ];
            f.extend(snap(s + 10240, s + 5120 * (k + 1)));
            g.rec(kind::TCP_RCV, t + 19_080 + k * 100, cpu, 0, true, &f);
        }
        seq[c as usize] = s + 10240;
        i += 1;
    }
    let n = g.n;
    g.w.finish(&Footer {
        records: n,
        last_ts_ns: g.last_ts,
        end_mono_ns: g.last_ts + 1_000_000,
        ..Footer::default()
    })
    .expect("finish");
    eprintln!("gen_trace: {n} events, {i} sends on {CONNS} connections -> {out}");
}
