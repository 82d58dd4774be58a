//! Shared by the integration tests: decode a capture with the library, and compare a
//! decode with tshark's.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use magnet_rpc::capture::CaptureReader;
use magnet_rpc::progs::{Args, Res};
use magnet_rpc::{Counters, Decoder, Limits, Outcome, Transaction};

/// Decodes a whole capture; returns transactions, counters and the reader's error.
pub fn decode_file(path: &Path) -> (Vec<Transaction>, Counters, Option<String>) {
    let mut rd = CaptureReader::open(path).expect("open capture");
    decode_reader(&mut rd)
}

pub fn decode_reader<R: std::io::Read>(
    rd: &mut CaptureReader<R>,
) -> (Vec<Transaction>, Counters, Option<String>) {
    let mut dec = Decoder::new(Limits::default());
    let mut out = Vec::new();
    let mut err = None;
    while let Some(p) = rd.next_packet() {
        match p {
            Ok(p) => dec.packet(p.ts_ns, p.linktype, p.data, &mut |t| out.push(t)),
            Err(e) => {
                err = Some(e.to_string());
                break;
            }
        }
    }
    dec.finish(&mut |t| out.push(t));
    (out, dec.counters().clone(), err)
}

/// One RPC message as tshark decoded it.
#[derive(Debug, Clone, Default)]
pub struct TsharkMsg {
    pub frame: u64,
    pub xid: u32,
    pub reply: bool,
    pub prog: u32,
    pub vers: u32,
    pub proc_: u32,
    pub proc_v3: Option<u32>,
    pub main_ops: Vec<u32>,
    pub ops: Vec<u32>,
    pub status: Vec<u32>,
    pub time_ns: Option<i64>,
}

fn nums(s: &str) -> Vec<u32> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .map(|x| x.parse().expect("number"))
        .collect()
}

/// `tshark -r FILE` with TCP and UDP heuristics first (the clients use privileged
/// ports, and a UDP client's random port can be one tshark gives to another
/// protocol: port-based dissection then misses the call and its reply).
pub fn tshark(path: &Path) -> Vec<TsharkMsg> {
    let fields = [
        "frame.number",
        "rpc.xid",
        "rpc.msgtyp",
        "rpc.program",
        "rpc.programversion",
        "rpc.procedure",
        "nfs.procedure_v3",
        "nfs.main_opcode",
        "nfs.opcode",
        "nfs.status",
        "rpc.time",
    ];
    let mut cmd = Command::new("tshark");
    cmd.arg("-r")
        .arg(path)
        .args(["-n", "-o", "tcp.try_heuristic_first:TRUE"])
        .args(["-o", "udp.try_heuristic_first:TRUE", "-Y", "rpc"]);
    cmd.args([
        "-T",
        "fields",
        "-E",
        "separator=/t",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    ]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut v = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), fields.len(), "tshark row: {line}");
        let xids: Vec<&str> = f[1].split(',').collect();
        assert_eq!(
            xids.len(),
            1,
            "frame {} holds several RPC messages: {line}",
            f[0]
        );
        let time_ns = (!f[10].is_empty()).then(|| {
            let (s, frac) = f[10].split_once('.').unwrap();
            let frac = format!("{frac:0<9}");
            s.parse::<i64>().unwrap() * 1_000_000_000 + frac[..9].parse::<i64>().unwrap()
        });
        v.push(TsharkMsg {
            frame: f[0].parse().unwrap(),
            xid: u32::from_str_radix(f[1].trim_start_matches("0x"), 16).unwrap(),
            reply: f[2] == "1",
            prog: f[3].parse().unwrap(),
            vers: nums(f[4])[0],
            proc_: f[5].parse().unwrap(),
            proc_v3: nums(f[6]).first().copied(),
            main_ops: nums(f[7]),
            ops: nums(f[8]),
            status: nums(f[9]),
            time_ns,
        });
    }
    v
}

/// Asserts that magnet's transactions and tshark's messages agree on every RPC:
/// the same xids, program, version, procedure, NFSv4 operation lists, NFS status and
/// call-to-reply time. Returns how many transactions were compared.
pub fn assert_agree(txs: &[Transaction], ts: &[TsharkMsg]) -> usize {
    let mut calls: BTreeMap<u32, &TsharkMsg> = BTreeMap::new();
    let mut replies: BTreeMap<u32, &TsharkMsg> = BTreeMap::new();
    for m in ts {
        let map = if m.reply { &mut replies } else { &mut calls };
        assert!(
            map.insert(m.xid, m).is_none(),
            "xid {:#x} seen twice by tshark",
            m.xid
        );
    }
    let mut ours: BTreeMap<u32, &Transaction> = BTreeMap::new();
    for t in txs {
        assert_eq!(t.outcome, Outcome::Complete, "unanswered call {t:?}");
        assert!(
            ours.insert(t.xid, t).is_none(),
            "xid {:#x} twice in magnet's output",
            t.xid
        );
    }
    assert_eq!(
        calls.keys().collect::<Vec<_>>(),
        ours.keys().collect::<Vec<_>>(),
        "call xids differ (tshark vs magnet)"
    );
    assert_eq!(
        replies.keys().collect::<Vec<_>>(),
        ours.keys().collect::<Vec<_>>(),
        "reply xids differ (tshark vs magnet)"
    );
    for (xid, t) in &ours {
        let (c, r) = (calls[xid], replies[xid]);
        let ctx = format!("xid {xid:#x} (tshark frames {} / {})", c.frame, r.frame);
        assert_eq!(
            (c.prog, c.vers, c.proc_),
            (t.prog, t.vers, t.proc_),
            "{ctx}: program"
        );
        assert_eq!((r.prog, r.proc_), (t.prog, t.proc_), "{ctx}: reply program");
        assert_eq!(r.time_ns, t.exec_ns(), "{ctx}: call-reply time");
        if t.prog == 100003 && t.vers == 3 {
            assert_eq!(c.proc_v3, Some(t.proc_), "{ctx}: nfs.procedure_v3");
            let st = match &t.res {
                Some(Res::Nfs3(r)) => r.status,
                other => panic!("{ctx}: no NFSv3 result: {other:?}"),
            };
            if t.proc_ != 0 {
                assert_eq!(r.status, vec![st], "{ctx}: nfs.status");
            }
        }
        if t.prog == 100003 && t.vers == 4 && t.proc_ == 1 {
            let Args::Nfs4(a) = &t.args else {
                panic!("{ctx}: no COMPOUND args")
            };
            assert!(a.complete, "{ctx}: call ops not all decoded");
            let ops: Vec<u32> = a.ops.iter().map(|o| o.op).collect();
            assert_eq!(c.ops, ops, "{ctx}: call operation list");
            assert!(
                c.main_ops.iter().all(|m| ops.contains(m)),
                "{ctx}: main opcode"
            );
            let Some(Res::Nfs4(rr)) = &t.res else {
                panic!("{ctx}: no COMPOUND result")
            };
            assert!(rr.complete, "{ctx}: reply ops not all decoded");
            let rops: Vec<u32> = rr.ops.iter().map(|o| o.op).collect();
            assert_eq!(r.ops, rops, "{ctx}: reply operation list");
            let mut st = vec![rr.status];
            st.extend(rr.ops.iter().map(|o| o.status));
            assert_eq!(r.status, st, "{ctx}: nfs.status (COMPOUND, then each op)");
        }
    }
    ours.len()
}

/// One captured packet: its time (ns) and its bytes from the Ethernet header on.
#[derive(Clone)]
pub struct Pkt {
    pub ts: i64,
    pub data: Vec<u8>,
}

/// Every packet of an Ethernet capture.
pub fn read_pkts(path: &Path) -> Vec<Pkt> {
    let mut rd = CaptureReader::open(path).unwrap();
    let mut v = Vec::new();
    while let Some(p) = rd.next_packet() {
        let p = p.unwrap();
        assert_eq!(p.linktype, 1);
        v.push(Pkt {
            ts: p.ts_ns,
            data: p.data.to_vec(),
        });
    }
    v
}

/// A classic pcap (µs, Ethernet) of `pkts`, for damaged-capture cases.
pub fn write_pcap(pkts: &[Pkt]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&4u16.to_le_bytes());
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&262144u32.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    for p in pkts {
        out.extend_from_slice(&((p.ts / 1_000_000_000) as u32).to_le_bytes());
        out.extend_from_slice(&((p.ts % 1_000_000_000 / 1000) as u32).to_le_bytes());
        out.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
        out.extend_from_slice(&(p.data.len() as u32).to_le_bytes());
        out.extend_from_slice(&p.data);
    }
    out
}
