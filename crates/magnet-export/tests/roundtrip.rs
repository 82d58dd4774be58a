//! Every export read back: a synthetic trace whose every record the test wrote
//! (laid out byte by byte per the catalog), exported to each format, parsed
//! again (Parquet with the parquet crate's reader, Perfetto and JSON lines with
//! serde_json, CSV by hand), and compared with what went in: row counts per
//! kind, exact values, nulls, Perfetto tracks and slice durations. Then the same
//! trace cut short at every byte must export what it holds without a panic.

use std::collections::{BTreeMap, HashMap};

use magnet_export::{export, Format, Options, Summary};
use magnet_testkit::csv_fields;
use magnet_trace::emit::Emitter;
use magnet_trace::{kind, Catalog, ClockMap, Footer, Header, TraceReader, TraceWriter};

const START: u64 = 1_000_000_000; // monotonic ns at the recording's start
const WALL: u64 = 1_700_000_000_000_000_000;

enum V<'a> {
    N(u64),
    Addr([u8; 4]),
    Comm(&'a str),
}

/// One record of `kind` through magnet-trace's emit builder.
fn rec(kind_id: u16, ts: u64, cpu: u16, pid: u32, snap: bool, fields: &[(&str, V)]) -> Vec<u8> {
    let e = Emitter::builtin();
    let mut r = e.record(kind_id, START + ts).cpu(cpu).pid(pid).tid(pid + 1);
    if snap {
        r = r.snapshot();
    }
    for (name, v) in fields {
        r = match v {
            V::N(n) => r.set(name, *n),
            V::Addr(a) => r.addr(name, std::net::Ipv4Addr::from(*a)),
            V::Comm(s) => r.comm(name, s),
        };
    }
    r.into_bytes()
}

/// The synthetic run; returns the trace bytes.
fn trace() -> Vec<u8> {
    use V::*;
    let mut recs = Vec::new();
    let sock = [
        ("cookie", N(7)),
        ("family", N(2)),
        ("protocol", N(6)),
        ("sport", N(5000)),
        ("dport", N(80)),
        ("saddr", Addr([10, 0, 0, 1])),
        ("daddr", Addr([10, 0, 0, 2])),
    ];
    recs.push(rec(kind::SOCK, 1_000, 0, 42, false, &sock));
    // A second connection first seen before it was connected (ports 0); its
    // state change to ESTABLISHED has the whole 5-tuple.
    let early = [
        ("cookie", N(9)),
        ("protocol", N(6)),
        ("saddr", Addr([10, 0, 0, 1])),
    ];
    recs.push(rec(kind::SOCK, 5_000, 0, 42, false, &early));
    let state = [
        ("cookie", N(9)),
        ("protocol", N(6)),
        ("sport", N(40000)),
        ("dport", N(80)),
        ("oldstate", N(2)),
        ("newstate", N(1)),
        ("saddr", Addr([10, 0, 0, 1])),
        ("daddr", Addr([10, 0, 0, 2])),
    ];
    recs.push(rec(kind::TCP_STATE, 6_000, 0, 42, false, &state));
    for i in 0..3u64 {
        let app = [
            ("cookie", N(7)),
            ("asked", N(1000)),
            ("ret", N(1000)),
            ("comm", Comm("loadgen")),
        ];
        recs.push(rec(kind::APP_SEND, 2_000 + i * 10_000, 0, 42, false, &app));
    }
    for i in 0..2u64 {
        let tcp = [
            ("cookie", N(7)),
            ("pkt_id", N(0xabc0 + i)),
            ("len", N(1000)),
            ("snd_cwnd", N(10 + i)),
            ("srtt_us", N(50)),
            ("write_seq", N(3000)),
            ("snd_una", N(1000)),
            ("state", N(1)),
        ];
        recs.push(rec(
            kind::TCP_SENDMSG,
            3_000 + i * 10_000,
            0,
            42,
            true,
            &tcp,
        ));
    }
    for i in 0..4u64 {
        let dev = [
            ("cookie", N(7)),
            ("pkt_id", N(0xabc0 + i)),
            ("ifindex", N(1)),
            ("len", N(1066)),
        ];
        recs.push(rec(
            kind::DEV_START_XMIT,
            4_000 + i * 5_000,
            1,
            42,
            false,
            &dev,
        ));
    }
    recs.push(rec(
        kind::DEV_RX,
        4_500,
        1,
        0,
        false,
        &[("ifindex", N(1)), ("len", N(66))],
    ));
    // Context switches: CPU 0 runs loadgen 100..200 µs, idles, runs "other" from
    // 300 µs to the end; CPU 1 runs "x,y" from 150 µs (a comma to quote in CSV).
    let sw = |next: u64, comm: &'static str| {
        [
            ("prev_tid", N(1)),
            ("next_tid", N(next)),
            ("next_tgid", N(next)),
            ("next_comm", Comm(comm)),
        ]
    };
    let switches = [
        rec(kind::SCHED_SWITCH, 100_000, 0, 0, false, &sw(43, "loadgen")),
        rec(
            kind::SCHED_SWITCH,
            200_000,
            0,
            43,
            false,
            &sw(0, "swapper/0"),
        ),
        rec(kind::SCHED_SWITCH, 300_000, 0, 0, false, &sw(44, "other")),
        rec(kind::SCHED_SWITCH, 150_000, 1, 0, false, &sw(45, "x,y")),
    ];
    recs.extend(switches);
    recs.push(rec(
        kind::SCHED_WAKEUP,
        140_000,
        1,
        0,
        false,
        &[("task_tid", N(45)), ("comm", Comm("x,y"))],
    ));
    recs.push(rec(
        kind::LOST,
        250_000,
        1,
        0,
        false,
        &[("count", N(5)), ("lost_cpu", N(1))],
    ));
    // A kind this catalog does not know: kept, counted as unknown_99.
    let mut unknown = vec![0u8; 24];
    unknown[0..8].copy_from_slice(&(START + 400_000).to_le_bytes());
    unknown[8..10].copy_from_slice(&99u16.to_le_bytes());
    recs.push(unknown);

    let header = Header::new(
        "synth".into(),
        "6.18".into(),
        2,
        ClockMap {
            monotonic_ns: START,
            realtime_ns: WALL,
        },
    );
    let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
    // Several blocks, so a cut-short file still holds whole ones.
    for (i, r) in recs.iter().enumerate() {
        w.push(r).unwrap();
        if i % 3 == 2 {
            w.flush_block().unwrap();
        }
    }
    w.finish(&Footer {
        records: recs.len() as u64,
        // The LOST record's count: the totals add up (the reader checks).
        lost_kernel: 5,
        ..Footer::default()
    })
    .unwrap()
}

const EXPECT: &[(&str, u64)] = &[
    ("app_send", 3),
    ("dev_rx", 1),
    ("dev_start_xmit", 4),
    ("lost", 1),
    ("sched_switch", 4),
    ("sched_wakeup", 1),
    ("sock", 2),
    ("tcp_sendmsg", 2),
    ("tcp_state", 1),
    ("unknown_99", 1),
];
const TOTAL: u64 = 20;

fn run(bytes: &[u8], format: Format, opts: &Options) -> (Summary, Vec<u8>) {
    let mut r = TraceReader::new(bytes).unwrap();
    let mut out = Vec::new();
    let mut damage = 0;
    let sum = export(&mut r, format, &mut out, opts, &mut |_| damage += 1).unwrap();
    assert_eq!(damage, sum.damage.len());
    (sum, out)
}

fn expected_counts() -> BTreeMap<String, u64> {
    EXPECT.iter().map(|(k, n)| (k.to_string(), *n)).collect()
}

fn columns() -> Vec<String> {
    let cat = Catalog::builtin();
    magnet_export::Table::new(&cat, ClockMap::default())
        .columns()
        .iter()
        .map(|c| c.name.clone())
        .collect()
}

#[test]
fn summary_counts_every_kind() {
    for (_, f) in Format::ALL {
        let (sum, _) = run(&trace(), f, &Options::default());
        assert_eq!(sum.rows, TOTAL, "{f:?}");
        assert_eq!(sum.per_kind, expected_counts(), "{f:?}");
        assert!(sum.complete && sum.damage.is_empty());
    }
}

#[test]
fn csv_rows_and_values() {
    let (_, out) = run(&trace(), Format::Csv, &Options::default());
    let text = String::from_utf8(out).unwrap();
    let mut lines = text.lines();
    let head = csv_fields(lines.next().unwrap());
    assert_eq!(head, columns());
    let rows: Vec<HashMap<String, String>> = lines
        .map(|l| head.iter().cloned().zip(csv_fields(l)).collect())
        .collect();
    assert_eq!(rows.len() as u64, TOTAL);
    let mut counts = BTreeMap::new();
    for r in &rows {
        assert_eq!(r.len(), head.len());
        *counts.entry(r["kind"].clone()).or_insert(0u64) += 1;
    }
    assert_eq!(counts, expected_counts());
    // Time order: the unsorted switches and the late LOST come out sorted.
    let ts: Vec<u64> = rows.iter().map(|r| r["ts_ns"].parse().unwrap()).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    let sock = rows.iter().find(|r| r["kind"] == "sock").unwrap();
    assert_eq!(sock["saddr"], "10.0.0.1");
    assert_eq!(sock["dport"], "80");
    assert_eq!(sock["time_s"], "0.000001000");
    assert_eq!(sock["wall_ns"], (WALL + 1_000).to_string());
    assert_eq!(sock["layer"], "meta");
    assert_eq!(sock["asked"], ""); // not a field of sock: null
    let send = rows.iter().find(|r| r["kind"] == "app_send").unwrap();
    assert_eq!(
        (
            send["asked"].as_str(),
            send["comm"].as_str(),
            send["cookie"].as_str()
        ),
        ("1000", "loadgen", "7")
    );
    let tcp: Vec<_> = rows.iter().filter(|r| r["kind"] == "tcp_sendmsg").collect();
    assert_eq!(tcp[1]["snd_cwnd"], "11");
    assert_eq!(tcp[1]["pkt_id"], "0xabc1");
    assert_eq!(tcp[1]["state"], "ESTABLISHED");
    assert_eq!(tcp[1]["flags"], "1");
    let x = rows
        .iter()
        .find(|r| r["kind"] == "sched_switch" && r["cpu"] == "1")
        .unwrap();
    assert_eq!(x["next_comm"], "x,y");
    let unknown = rows.iter().find(|r| r["kind"] == "unknown_99").unwrap();
    assert_eq!(unknown["layer"], "?");
}

#[test]
fn jsonl_rows_and_values() {
    let (_, out) = run(&trace(), Format::Jsonl, &Options::default());
    let text = String::from_utf8(out).unwrap();
    let cols = columns();
    let rows: Vec<serde_json::Map<String, serde_json::Value>> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len() as u64, TOTAL);
    for r in &rows {
        // Every column, in table order, in every row.
        assert_eq!(r.keys().cloned().collect::<Vec<_>>(), cols);
    }
    let dev: Vec<_> = rows
        .iter()
        .filter(|r| r["kind"] == "dev_start_xmit")
        .collect();
    assert_eq!(dev.len(), 4);
    assert_eq!(dev[0]["len"], 1066);
    assert_eq!(dev[0]["cpu"], 1);
    assert_eq!(dev[0]["pkt_id"], "0xabc0");
    assert!(dev[0]["snd_cwnd"].is_null());
    assert_eq!(dev[0]["time_s"].as_f64(), Some(4e-6));
    let lost = rows.iter().find(|r| r["kind"] == "lost").unwrap();
    assert_eq!(lost["count"], 5);
}

mod parquet_back {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;

    fn read(
        bytes: Vec<u8>,
    ) -> (
        SerializedFileReader<bytes::Bytes>,
        Vec<Vec<(String, Field)>>,
    ) {
        let r = SerializedFileReader::new(bytes::Bytes::from(bytes)).unwrap();
        let rows = r
            .get_row_iter(None)
            .unwrap()
            .map(|row| {
                row.unwrap()
                    .get_column_iter()
                    .map(|(n, f)| (n.clone(), f.clone()))
                    .collect()
            })
            .collect();
        (r, rows)
    }

    fn get<'a>(row: &'a [(String, Field)], name: &str) -> &'a Field {
        &row.iter().find(|(n, _)| n == name).unwrap().1
    }

    #[test]
    fn one_row_per_event_in_row_groups() {
        // 4 rows per row group: 20 events make 5 row groups.
        let opts = Options {
            row_group_rows: 4,
            ..Options::default()
        };
        let (_, out) = run(&trace(), Format::Parquet, &opts);
        let (reader, rows) = read(out);
        let meta = reader.metadata();
        assert_eq!(meta.file_metadata().num_rows() as u64, TOTAL);
        assert_eq!(meta.num_row_groups(), 5);
        let schema: Vec<String> = meta
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        assert_eq!(schema, columns());
        let kv = meta.file_metadata().key_value_metadata().unwrap();
        assert!(kv
            .iter()
            .any(|k| k.key == "magnet.host" && k.value.as_deref() == Some("synth")));

        let mut counts = BTreeMap::new();
        for row in &rows {
            let Field::Str(k) = get(row, "kind") else {
                panic!("kind is text")
            };
            *counts.entry(k.clone()).or_insert(0u64) += 1;
        }
        assert_eq!(counts, expected_counts());

        let send = rows
            .iter()
            .find(|r| *get(r, "kind") == Field::Str("app_send".into()))
            .unwrap();
        assert_eq!(*get(send, "asked"), Field::Long(1000));
        assert_eq!(*get(send, "cookie"), Field::ULong(7));
        assert_eq!(*get(send, "ts_ns"), Field::ULong(START + 2_000));
        assert_eq!(*get(send, "wall_ns"), Field::Long((WALL + 2_000) as i64));
        assert_eq!(*get(send, "time_s"), Field::Double(2e-6));
        assert_eq!(*get(send, "comm"), Field::Str("loadgen".into()));
        assert_eq!(*get(send, "saddr"), Field::Null);
        assert_eq!(*get(send, "snd_cwnd"), Field::Null);
        let sock = rows
            .iter()
            .find(|r| *get(r, "kind") == Field::Str("sock".into()))
            .unwrap();
        assert_eq!(*get(sock, "daddr"), Field::Str("10.0.0.2".into()));
    }
    /// Every cell of the Parquet file is the cell `Table::fill` makes of the
    /// same record (the rows CSV and JSON lines write): random bytes for every
    /// kind of the catalog and one it lacks, records cut short inside their
    /// fields, row groups of 37, with the builtin catalog and with one whose
    /// merged columns are text (two kinds giving a field different types).
    #[test]
    fn every_cell_is_what_fill_makes() {
        use magnet_export::{Cell, Table};
        use magnet_trace::FieldType;
        let mut merged = Catalog::builtin();
        for k in &mut merged.kinds {
            if k.id == kind::DROP {
                for f in &mut k.fields {
                    f.ty = match f.ty {
                        FieldType::U32 => FieldType::Hex64,
                        FieldType::Addr => FieldType::U64,
                        other => other,
                    };
                }
            }
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        const N: u64 = 5000;
        for cat in [Catalog::builtin(), merged] {
            let mut header = Header::new(
                "synth".into(),
                "6.18".into(),
                2,
                ClockMap {
                    monotonic_ns: START,
                    realtime_ns: WALL,
                },
            );
            header.catalog = cat.clone();
            let mut w = TraceWriter::new(Vec::new(), &header).unwrap();
            let mut ids: Vec<u16> = cat.kinds.iter().map(|k| k.id).collect();
            ids.push(999);
            let mut recs = Vec::new();
            for i in 0..N {
                let id = ids[rnd() as usize % ids.len()];
                let mut b: Vec<u8> = (0..160).map(|_| rnd() as u8).collect();
                b[0..8].copy_from_slice(&(START + i * 100).to_le_bytes());
                b[8..10].copy_from_slice(&id.to_le_bytes());
                if i % 5 == 0 {
                    // An IPv4-mapped address and a UTF-8 task name.
                    b[40..52].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
                    b[24..40].copy_from_slice(b"loadgen\0\0\0\0\0\0\0\0\0");
                }
                let len = if i % 3 == 0 {
                    40 + rnd() as usize % 120
                } else {
                    160
                };
                b.truncate(len);
                w.push(&b).unwrap();
                recs.push(b);
                if i % 50 == 49 {
                    w.flush_block().unwrap();
                }
            }
            let bytes = w.finish(&Footer::default()).unwrap();
            // Small groups, and groups larger than a decoding block (2048 rows).
            for group in [37, 4500] {
                let opts = Options {
                    row_group_rows: group,
                    ..Options::default()
                };
                let (sum, out) = run(&bytes, Format::Parquet, &opts);
                assert_eq!(sum.rows, N);
                let (reader, rows) = read(out);
                assert_eq!(
                    reader.metadata().num_row_groups(),
                    (N as usize).div_ceil(group)
                );
                let table = Table::new(&cat, header.clock);
                let mut want = Vec::new();
                for (i, (rec, got)) in recs.iter().zip(&rows).enumerate() {
                    let r = magnet_trace::RecordRef {
                        bytes: rec,
                        block_offset: 0,
                    };
                    table.fill(&r, &mut want);
                    let got: Vec<Cell> = got
                        .iter()
                        .map(|(_, f)| match f {
                            Field::Null => Cell::Null,
                            Field::Long(v) => Cell::I(*v),
                            Field::ULong(v) => Cell::U(*v),
                            Field::Double(v) => Cell::F(*v),
                            Field::Str(s) => Cell::Str(s.clone()),
                            other => panic!("row {i}: unexpected {other:?}"),
                        })
                        .collect();
                    assert_eq!(got, want, "row {i}, groups of {group}");
                }
                assert_eq!(rows.len(), N as usize);
            }
        }
    }
}

mod perfetto_back {
    use super::*;
    use serde_json::Value as J;

    fn events() -> (Vec<J>, magnet_export::PerfettoStats) {
        let (sum, out) = run(&trace(), Format::Perfetto, &Options::default());
        let doc: J = serde_json::from_slice(&out).expect("valid JSON");
        assert_eq!(doc["displayTimeUnit"], "ns");
        assert_eq!(doc["metadata"]["host"], "synth");
        (
            doc["traceEvents"].as_array().unwrap().clone(),
            sum.perfetto.unwrap(),
        )
    }

    /// Name of a process (pid) and its threads, from the metadata events.
    fn names(evs: &[J]) -> (HashMap<u64, String>, HashMap<u64, String>) {
        let (mut procs, mut threads) = (HashMap::new(), HashMap::new());
        for e in evs.iter().filter(|e| e["ph"] == "M") {
            let name = e["args"]["name"].as_str().map(str::to_string);
            match (e["name"].as_str().unwrap(), name) {
                ("process_name", Some(n)) => procs.insert(e["pid"].as_u64().unwrap(), n),
                ("thread_name", Some(n)) => threads.insert(e["tid"].as_u64().unwrap(), n),
                _ => None,
            };
        }
        (procs, threads)
    }

    #[test]
    fn valid_trace_event_format() {
        let (evs, _) = events();
        let mut tid_pid: HashMap<u64, u64> = HashMap::new();
        for e in &evs {
            let ph = e["ph"].as_str().unwrap();
            assert!(["i", "X", "C", "M"].contains(&ph), "{e}");
            assert!(e["name"].is_string(), "{e}");
            let (pid, tid) = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            assert!(pid < 1 << 31 && tid < 1 << 31);
            // Perfetto keys threads by tid: a tid belongs to one pid.
            assert_eq!(*tid_pid.entry(tid).or_insert(pid), pid, "{e}");
            if ph != "M" {
                assert!(e["ts"].is_number(), "{e}");
            }
            if ph == "X" {
                assert!(e["dur"].as_f64().unwrap() >= 0.0);
            }
            if ph == "i" {
                assert!(["t", "g"].contains(&e["s"].as_str().unwrap()));
            }
            if ph == "C" {
                assert!(e["args"].as_object().unwrap().values().all(J::is_number));
            }
        }
    }

    #[test]
    fn tracks_slices_and_counters() {
        let (evs, stats) = events();
        let (procs, threads) = names(&evs);
        // The connection: one process named by its 5-tuple, a track per layer seen.
        let conn = procs
            .iter()
            .find(|(_, n)| n.starts_with("tcp 10.0.0.1:5000 -> 10.0.0.2:80"))
            .unwrap();
        let conn_pid = *conn.0;
        assert!(conn.1.contains("cookie 7"));
        let on_track = |pid: u64, track: &str| {
            let tid = threads
                .iter()
                .find(|(t, n)| **t / 16 == pid && n.starts_with(track))
                .map(|(t, _)| *t);
            let tid = tid.unwrap_or_else(|| panic!("no {track} track in pid {pid}"));
            evs.iter()
                .filter(|e| e["ph"] == "i" && e["tid"] == tid)
                .count()
        };
        assert_eq!(on_track(conn_pid, "app"), 3);
        assert_eq!(on_track(conn_pid, "tcp"), 2);
        assert_eq!(on_track(conn_pid, "dev"), 4);
        assert_eq!(on_track(conn_pid, "socket"), 1);
        let no_sock = *procs.iter().find(|(_, n)| *n == "no socket").unwrap().0;
        assert_eq!(on_track(no_sock, "dev"), 1);
        assert_eq!(on_track(no_sock, "other"), 1); // the unknown kind

        // Context switches: 3 of the 4 start a slice (the 4th switches to idle).
        let slices: Vec<&J> = evs.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(slices.len(), 3);
        assert_eq!(stats.cpu_slices, 3);
        let cpu0 = *procs.iter().find(|(_, n)| *n == "CPU 0").unwrap().0;
        let cpu1 = *procs.iter().find(|(_, n)| *n == "CPU 1").unwrap().0;
        let slice = |name: &str| slices.iter().find(|e| e["name"] == name).unwrap();
        let ld = slice("loadgen 43");
        assert_eq!(
            (ld["pid"].as_u64(), ld["ts"].as_f64(), ld["dur"].as_f64()),
            (Some(cpu0), Some(100.0), Some(100.0))
        );
        // The last slice on each CPU runs to the trace's last event (400 µs).
        let other = slice("other 44");
        assert_eq!(
            (other["ts"].as_f64(), other["dur"].as_f64()),
            (Some(300.0), Some(100.0))
        );
        let xy = slice("x,y 45");
        assert_eq!(
            (xy["pid"].as_u64(), xy["ts"].as_f64(), xy["dur"].as_f64()),
            (Some(cpu1), Some(150.0), Some(250.0))
        );
        assert_eq!(xy["args"]["next_tid"], 45);
        // Wake-up on CPU 1's track.
        let wake: Vec<_> = evs.iter().filter(|e| e["name"] == "sched_wakeup").collect();
        assert_eq!((wake.len(), wake[0]["pid"].as_u64()), (1, Some(cpu1)));

        // TCP counters: one counter event per snapshot, on the connection.
        let counters: Vec<_> = evs.iter().filter(|e| e["ph"] == "C").collect();
        assert_eq!(counters.len(), 2);
        assert_eq!(counters[1]["pid"].as_u64(), Some(conn_pid));
        assert_eq!(counters[1]["args"]["snd_cwnd"], 11);
        assert_eq!(counters[1]["args"]["unacked_bytes"], 2000);

        // LOST: one global marker.
        let lost: Vec<_> = evs
            .iter()
            .filter(|e| e["ph"] == "i" && e["s"] == "g")
            .collect();
        assert_eq!(lost.len(), 1);
        assert_eq!(lost[0]["name"], "LOST 5 events");
        assert_eq!(lost[0]["ts"].as_f64(), Some(250.0));

        assert_eq!(stats.packet_instants, 3 + 2 + 4 + 1 + 1 + 1 + 2);
        assert_eq!(
            (
                stats.counter_events,
                stats.lost_markers,
                stats.connections,
                stats.cpu_instants
            ),
            (2, 1, 2, 1)
        );
        // The second connection is named by the tuple of its state change.
        let second = "tcp 10.0.0.1:40000 -> 10.0.0.2:80 (cookie 9)";
        assert!(procs.values().any(|n| n == second), "{procs:?}");
    }
}

/// A trace cut short anywhere after its header exports the records of its
/// whole blocks, says what was cut, and never panics, in every format.
/// Every 7th byte is a cut, exported in one format, the formats in turn:
/// each format sees a cut every 28 bytes, so in every block, its header and
/// its records (exporting every cut in all four took 72 s of CI,
/// unoptimised; this takes a third).
#[test]
fn truncated_traces_export_what_they_hold() {
    let full = trace();
    let mut header_ok = 0;
    let mut rows_seen = std::collections::BTreeSet::new();
    let mut by_format = [0usize; Format::ALL.len()];
    for (i, cut) in (0..full.len()).step_by(7).enumerate() {
        let Ok(mut r) = TraceReader::new(&full[..cut]) else {
            continue;
        };
        drop(r.next_record());
        header_ok += 1;
        let turn = i % Format::ALL.len();
        by_format[turn] += 1;
        let (name, f) = Format::ALL[turn];
        let mut r = TraceReader::new(&full[..cut]).unwrap();
        let mut out = Vec::new();
        let sum = export(&mut r, f, &mut out, &Options::default(), &mut |_| {}).unwrap();
        assert!(!sum.complete, "{name}, cut at {cut}");
        assert!(
            !sum.damage.is_empty(),
            "{name}, cut at {cut}: no damage reported"
        );
        assert!(sum.rows <= TOTAL);
        rows_seen.insert(sum.rows);
    }
    assert!(header_ok > 0);
    assert!(
        by_format.iter().all(|n| *n > 10),
        "cuts per format: {by_format:?}"
    );
    // Cuts in later blocks keep the earlier blocks' records.
    assert!(rows_seen.len() > 3, "{rows_seen:?}");
}

/// docs/export.md lists the columns of this build's catalog between markers;
/// `MAGNET_BLESS=1 cargo test -p magnet-export` rewrites the list.
#[test]
fn docs_list_the_columns() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/export.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = (
        "<!-- columns:begin (generated) -->\n",
        "<!-- columns:end -->",
    );
    let a = doc.find(begin).expect("begin marker") + begin.len();
    let b = doc.find(end).expect("end marker");
    let want = magnet_export::schema_markdown(&Catalog::builtin());
    if doc[a..b] != want {
        if std::env::var("MAGNET_BLESS").as_deref() == Ok("1") {
            std::fs::write(&path, format!("{}{}{}", &doc[..a], want, &doc[b..])).unwrap();
        } else {
            panic!("docs/export.md's column list is stale: rerun with MAGNET_BLESS=1\n{want}");
        }
    }
}
