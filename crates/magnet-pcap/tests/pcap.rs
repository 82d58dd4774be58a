//! The reader and writers on crafted fixtures (both byte orders, see
//! tests/data/make-fixtures.py), on tshark's reading of the same files, and on
//! property tests over pcapng and pcap.

use std::path::{Path, PathBuf};
use std::process::Command;

use magnet_pcap::{
    Block, CaptureReader, Error, InterfaceDesc, OutPacket, PcapNgWriter, PcapWriter,
};
use proptest::prelude::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn orders() -> [&'static str; 2] {
    ["le", "be"]
}

#[test]
fn simple_packet_block_of_12_bytes_is_an_error_not_a_panic() {
    for o in orders() {
        let path = fixture(&format!("spb-12-{o}.pcapng"));
        let mut r = CaptureReader::open(&path).unwrap();
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(
            (p.number, p.orig_len, p.data.len(), p.offset),
            (1, 50, 50, 48)
        );
        let e = r.next_packet().unwrap().unwrap_err();
        // SHB 28 + IDB 20 + SPB 68 bytes: the bad block starts at 116.
        assert_eq!(e.offset(), 116, "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("simple packet block too short (12 bytes, at least 16)"),
            "{msg}"
        );
        assert!(msg.contains("spb-12") && msg.contains("packet 1"), "{msg}");
        assert!(r.next_packet().is_none());
    }
}

#[test]
fn tsresol_two_to_the_minus_63() {
    for o in orders() {
        let mut r = CaptureReader::open(&fixture(&format!("tsresol-2-63-{o}.pcapng"))).unwrap();
        let mut ts = Vec::new();
        while let Some(p) = r.next_packet() {
            ts.push(p.unwrap().ts_ns);
        }
        // k * 2^60 units of 2^-63 s = k/8 s, after if_tsoffset 1.7e9 s.
        let want: Vec<i64> = (0..10)
            .map(|k| 1_700_000_000_000_000_000 + k * 125_000_000)
            .collect();
        assert_eq!(ts, want);
    }
}

#[test]
fn huge_tsoffset_is_refused_at_its_interface_block() {
    for o in orders() {
        let mut r = CaptureReader::open(&fixture(&format!("tsoffset-huge-{o}.pcapng"))).unwrap();
        let e = r.next_packet().unwrap().unwrap_err();
        assert_eq!(e.offset(), 28);
        assert!(
            e.to_string()
                .contains("if_tsoffset 4611686018427387904 s is out of range"),
            "{e}"
        );
    }
}

#[derive(Debug, PartialEq)]
struct Seen {
    ts: i64,
    lt: u32,
    ifc: u32,
    orig: u32,
    data: Vec<u8>,
    comments: Vec<String>,
}

fn read_all(bytes: &[u8]) -> (Vec<Seen>, Option<String>) {
    let mut v = Vec::new();
    let mut r = match CaptureReader::new(bytes, Path::new("mem")) {
        Ok(r) => r,
        Err(e) => return (v, Some(e.to_string())),
    };
    while let Some(p) = r.next_packet() {
        match p {
            Ok(p) => v.push(Seen {
                ts: p.ts_ns,
                lt: p.linktype,
                ifc: p.interface,
                orig: p.orig_len,
                data: p.data.to_vec(),
                comments: p.comments().map(str::to_owned).collect(),
            }),
            Err(e) => return (v, Some(e.to_string())),
        }
    }
    (v, None)
}

#[test]
fn mixed_blocks_both_byte_orders() {
    let le = std::fs::read(fixture("mixed-le.pcapng")).unwrap();
    let be = std::fs::read(fixture("mixed-be.pcapng")).unwrap();
    let (a, ea) = read_all(&le);
    let (b, eb) = read_all(&be);
    assert_eq!((ea, eb), (None, None));
    assert_eq!(a, b);
    let got: Vec<_> = a
        .iter()
        .map(|s| (s.ts, s.lt, s.ifc, s.orig, s.data.len()))
        .collect();
    assert_eq!(
        got,
        vec![
            (1_700_000_000_123_456_789, 1, 0, 50, 50),
            (1_700_000_001_000_000_000, 101, 1, 136, 36),
            (1_000, 1, 0, 50, 50),
            (0, 1, 0, 50, 50),
        ]
    );
    assert_eq!(a[0].comments, vec!["pid=1234 comm=curl"]);
    // Every block is returned, unknown ones whole.
    let mut r = CaptureReader::new(&le[..], Path::new("mixed")).unwrap();
    let mut kinds = Vec::new();
    while let Some(it) = r.next_item() {
        let it = it.unwrap();
        kinds.push(match it.block {
            Block::PcapHeader(_) => "pcap".to_string(),
            Block::Section(s) => format!("shb:{}", s.options.string(4).unwrap()),
            Block::Interface(i) => format!("idb:{}", i.name().unwrap()),
            Block::Packet(_) => "pkt".into(),
            Block::Other(o) => format!("other:{:#x}:{}", o.block_type, o.body.len()),
        });
    }
    assert_eq!(
        kinds,
        [
            "shb:make-fixtures.py",
            "idb:veth0",
            "idb:tun0",
            "pkt",
            "other:0x4:20",
            "pkt",
            "pkt",
            "pkt",
            "other:0x40000bad:24",
            "other:0x5:16"
        ]
    );
}

/// Every block read is written back raw, in the file's byte order: byte-identical.
#[test]
fn raw_round_trip_is_byte_identical() {
    for o in orders() {
        let bytes = std::fs::read(fixture(&format!("mixed-{o}.pcapng"))).unwrap();
        let mut r = CaptureReader::new(&bytes[..], Path::new("mixed")).unwrap();
        let mut w = None;
        while let Some(it) = r.next_item() {
            let it = it.unwrap();
            match it.block {
                Block::Section(s) => {
                    let opts: Vec<(u16, &[u8])> = s.options.collect();
                    w = Some(PcapNgWriter::with_options(Vec::new(), it.big_endian, &opts).unwrap());
                }
                _ => {
                    let t = if it.big_endian {
                        u32::from_be_bytes(it.raw[0..4].try_into().unwrap())
                    } else {
                        u32::from_le_bytes(it.raw[0..4].try_into().unwrap())
                    };
                    w.as_mut()
                        .unwrap()
                        .write_raw_block(t, &it.raw[8..it.raw.len() - 4])
                        .unwrap();
                }
            }
        }
        assert_eq!(w.unwrap().into_inner(), bytes, "{o}");
    }
}

/// tshark reads the fixtures and our writer's output the same way we do.
#[test]
fn agrees_with_tshark() {
    if Command::new("tshark").arg("-v").output().is_err() {
        eprintln!("SKIP: tshark not installed");
        return;
    }
    let dir = tempfile_dir();
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    let a = w
        .add_interface(&InterfaceDesc::new(1).name("veth-a"))
        .unwrap();
    let b = w
        .add_interface(&InterfaceDesc::new(101).name("raw-b"))
        .unwrap();
    let f = fixture("mixed-le.pcapng");
    let (pk, _) = read_all(&std::fs::read(&f).unwrap());
    for (i, s) in pk.iter().enumerate() {
        let ifc = if s.lt == 1 { a } else { b };
        let c = format!("pid={} comm=t{i} dir=out", 1000 + i);
        w.write_packet(
            &OutPacket::new(
                ifc,
                1_700_000_000_000_000_007 + i as i64 * 1_000_003,
                &s.data,
            )
            .orig_len(s.orig)
            .comment(&c),
        )
        .unwrap();
    }
    let out = dir.join("written.pcapng");
    std::fs::write(&out, w.into_inner()).unwrap();
    for (file, n) in [
        (f.clone(), 4),
        (fixture("mixed-be.pcapng"), 4),
        (out.clone(), 4),
    ] {
        let o = Command::new("tshark")
            .args(["-r"])
            .arg(&file)
            .args([
                "-T",
                "fields",
                "-e",
                "frame.time_epoch",
                "-e",
                "frame.len",
                "-e",
                "frame.cap_len",
                "-e",
                "frame.comment",
                "-e",
                "frame.interface_name",
                "-Y",
                "frame",
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        let err: Vec<&str> = err
            .lines()
            .filter(|l| !l.contains("Running as user"))
            .collect();
        assert!(o.status.success() && err.is_empty(), "{file:?}: {err:?}");
        let (ours, e) = read_all(&std::fs::read(&file).unwrap());
        assert_eq!(e, None);
        let text = String::from_utf8(o.stdout).unwrap();
        let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('\t').collect()).collect();
        let rows: Vec<_> = rows.into_iter().filter(|r| r[1] != "20").collect(); // tshark shows the custom block as a frame
        assert_eq!(rows.len(), n, "{file:?}");
        for (r, s) in rows.iter().zip(&ours) {
            if !r[0].is_empty() {
                let (sec, frac) = r[0].split_once('.').unwrap();
                let ns = sec.parse::<i64>().unwrap() * 1_000_000_000
                    + format!("{frac:0<9}")[..9].parse::<i64>().unwrap();
                assert_eq!(ns, s.ts, "{file:?}");
            }
            assert_eq!(r[1].parse::<u32>().unwrap(), s.orig);
            assert_eq!(r[2].parse::<usize>().unwrap(), s.data.len());
            assert_eq!(r[3], s.comments.join(","));
        }
    }
}

/// Comments and interface names are written with control characters escaped
/// (a process name may be set to escape sequences): nothing raw in the file,
/// nothing raw in what tshark prints from it.
#[test]
fn text_options_are_written_escaped() {
    let hostile = "pid=1 comm=\x1b]0;pwned\x07\x1b[31m\r\n\u{9b}x";
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    let a = w
        .add_interface(
            &InterfaceDesc::new(1)
                .name("eth\x1b[2J0")
                .description("\x07desc"),
        )
        .unwrap();
    w.write_packet(&OutPacket::new(a, 1_700_000_000_000_000_000, &[0u8; 60]).comment(hostile))
        .unwrap();
    let bytes = w.into_inner();
    assert!(
        !bytes
            .windows(2)
            .any(|p| p == [0x1b, b']'] || p == [0xc2, 0x9b]),
        "raw control characters in the file"
    );
    let (got, e) = read_all(&bytes);
    assert_eq!(e, None);
    assert_eq!(
        got[0].comments,
        ["pid=1 comm=\\x1b]0;pwned\\x07\\x1b[31m\\x0d\\x0a\\u{9b}x"]
    );
    if Command::new("tshark").arg("-v").output().is_err() {
        eprintln!("SKIP (tshark part): tshark not installed");
        return;
    }
    let out = tempfile_dir().join("escaped.pcapng");
    std::fs::write(&out, &bytes).unwrap();
    let o = Command::new("tshark")
        .arg("-r")
        .arg(&out)
        .args([
            "-T",
            "fields",
            "-e",
            "frame.comment",
            "-e",
            "frame.interface_name",
        ])
        .output()
        .unwrap();
    assert!(o.status.success());
    let line = String::from_utf8(o.stdout).unwrap();
    assert!(line.contains("comm=\\x1b]0;pwned"), "{line:?}");
    assert!(line.contains("eth\\x1b[2J0"), "{line:?}");
    assert!(
        !line
            .trim_end_matches('\n')
            .chars()
            .any(|c| c.is_control() && c != '\t'),
        "{line:?}"
    );
}

fn tempfile_dir() -> PathBuf {
    magnet_testkit::scratch_dir("magnet-pcap-test").to_path_buf()
}

#[test]
fn garbage_and_empty_files() {
    assert!(matches!(
        CaptureReader::new(&b"not a capture file"[..], Path::new("x")),
        Err(Error::BadMagic {
            magic: 0x2074_6f6e,
            ..
        })
    ));
    let e = CaptureReader::new(&b"ab"[..], Path::new("x"))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("file too short for a capture header (2 bytes)"),
        "{e}"
    );
    assert!(CaptureReader::new(&b""[..], Path::new("x")).is_err());
}

#[test]
fn every_prefix_reads_a_prefix_then_names_the_cut() {
    for o in orders() {
        let bytes = std::fs::read(fixture(&format!("mixed-{o}.pcapng"))).unwrap();
        let (all, _) = read_all(&bytes);
        let mut bounds = Vec::new();
        let mut r = CaptureReader::new(&bytes[..], Path::new("m")).unwrap();
        while let Some(Ok(it)) = r.next_item() {
            bounds.push(it.offset as usize + it.raw.len());
        }
        for cut in 0..bytes.len() {
            let (got, err) = read_all(&bytes[..cut]);
            assert!(
                got.len() <= all.len() && got[..] == all[..got.len()],
                "cut {cut}"
            );
            if bounds.contains(&cut) {
                assert_eq!(err, None, "cut {cut} is between blocks");
                continue;
            }
            let e = err.unwrap_or_else(|| panic!("cut {cut} gave no error"));
            assert!(
                e.contains("cut short") || e.contains("too short"),
                "cut {cut}: {e}"
            );
        }
    }
}

#[derive(Debug, Clone)]
struct P {
    ts: i64,
    data: Vec<u8>,
    extra: u32,
    comment: Option<String>,
    ifc: usize,
}

fn packets() -> impl Strategy<Value = Vec<P>> {
    prop::collection::vec(
        (
            0i64..4_000_000_000_000_000_000,
            prop::collection::vec(any::<u8>(), 0..300),
            0u32..100,
            prop::option::of("[ -~]{0,40}"),
            0usize..3,
        )
            .prop_map(|(ts, data, extra, comment, ifc)| P {
                ts,
                data,
                extra,
                comment,
                ifc,
            }),
        0..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn pcapng_write_read(pkts in packets(), be in any::<bool>(), tsres in prop::sample::select(vec![6u8, 9])) {
        let mut w = PcapNgWriter::with_options(Vec::new(), be, &[]).unwrap();
        let lts = [1u32, 101, 276];
        for lt in lts {
            let mut d = InterfaceDesc::new(lt).name("if");
            d.tsresol = tsres;
            w.add_interface(&d).unwrap();
        }
        for p in &pkts {
            let mut op = OutPacket::new(p.ifc as u32, p.ts, &p.data).orig_len(p.data.len() as u32 + p.extra);
            if let Some(c) = &p.comment { op = op.comment(c); }
            w.write_packet(&op).unwrap();
        }
        let bytes = w.into_inner();
        let (got, err) = read_all(&bytes);
        prop_assert_eq!(err, None);
        prop_assert_eq!(got.len(), pkts.len());
        let unit = if tsres == 6 { 1000 } else { 1 };
        for (g, p) in got.iter().zip(&pkts) {
            prop_assert_eq!(g.ts, p.ts / unit * unit);
            prop_assert_eq!(g.lt, lts[p.ifc]);
            prop_assert_eq!(g.ifc as usize, p.ifc);
            prop_assert_eq!(&g.data, &p.data);
            prop_assert_eq!(g.orig, p.data.len() as u32 + p.extra);
            prop_assert_eq!(g.comments.clone(), p.comment.iter().cloned().collect::<Vec<_>>());
        }
        // Corrupted copies never panic (the fuzz target's property included).
        let mut bad = bytes.clone();
        if !bad.is_empty() {
            let i = (pkts.len() * 7919) % bad.len();
            bad[i] ^= 0x5a;
            magnet_pcap::fuzzing::capture(&bad);
        }
    }

    #[test]
    fn pcap_write_read(pkts in packets(), be in any::<bool>(), nanos in any::<bool>()) {
        let mut w = PcapWriter::new(Vec::new(), 1, 65535, nanos, be).unwrap();
        let pkts: Vec<P> = pkts.into_iter().map(|mut p| { p.ts %= 4_000_000_000_000_000_000; p }).collect();
        for p in &pkts {
            w.write_packet(p.ts, p.data.len() as u32 + p.extra, &p.data).unwrap();
        }
        let bytes = w.into_inner();
        let (got, err) = read_all(&bytes);
        prop_assert_eq!(err, None);
        prop_assert_eq!(got.len(), pkts.len());
        let unit = if nanos { 1 } else { 1000 };
        for (g, p) in got.iter().zip(&pkts) {
            prop_assert_eq!(g.ts, p.ts / unit * unit);
            prop_assert_eq!(&g.data, &p.data);
            prop_assert_eq!(g.orig, p.data.len() as u32 + p.extra);
        }
        for cut in [bytes.len() / 3, bytes.len() / 2, bytes.len().saturating_sub(1)] {
            let (g, _) = read_all(&bytes[..cut]);
            prop_assert!(g.len() <= got.len() && g[..] == got[..g.len()]);
        }
    }

    #[test]
    fn random_bytes_never_panic(tail in prop::collection::vec(any::<u8>(), 0..400), which in 0usize..4) {
        let heads: [&[u8]; 4] = [
            &[0x0a, 0x0d, 0x0d, 0x0a],
            &[0xd4, 0xc3, 0xb2, 0xa1],
            &[0xa1, 0xb2, 0x3c, 0x4d],
            &[0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a],
        ];
        let mut b = heads[which].to_vec();
        b.extend(tail);
        magnet_pcap::fuzzing::capture(&b);
    }
}
