//! The report in a real browser, because only a browser runs its script: headless Chromium opens
//! the page of a demo-sized trace (the recorded release fixture), of a
//! synthetic paced transfer of over a million events, and of a trace of one
//! event, and reads back the self-check the page writes from its drawn uPlot
//! instances. What a person would check: every plot's data spans most of its x
//! axis, no axis label sits on tick labels, tick labels do not run into each
//! other, every axis names its unit, counts are integers, the page stays a
//! few hundred kilobytes at a million events, and the script says nothing on
//! the console. Screenshots are written next to the pages in a scratch
//! directory removed at exit (MAGNET_KEEP_SCRATCH=1 keeps it). Needs `chromium` (scripts/setup.sh installs it); skipped with a
//! reason without it, a failure under MAGNET_REQUIRE_LIVE=1 (CI).

use std::path::PathBuf;
use std::time::Instant;

use magnet_analyze::{analyze, Analysis, Options};
use magnet_report::{plotted, render, ReportOptions};
use magnet_testkit::{console_lines, Chromium};
use magnet_trace::emit::{synthetic_trace, Emitter, RecordBuilder};
use magnet_trace::{kind, Footer, TraceReader};
use serde_json::Value;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const T0: u64 = 2_000_000_000;

/// This process's scratch directory (removed at exit; MAGNET_KEEP_SCRATCH=1
/// keeps the pages and screenshots to look at).
fn dir() -> PathBuf {
    magnet_testkit::scratch_dir("magnet-report-browser").to_path_buf()
}

/// What `magnet report` does: analyse with plot series, keep the plotted
/// connections' series, render.
fn page(bytes: &[u8], title: &str) -> (Analysis, String) {
    let mut a = analyze(
        &mut TraceReader::new(bytes).unwrap(),
        &Options {
            series: true,
            ..Options::default()
        },
    );
    let shown = plotted(&a, None);
    for (i, c) in a.connections.iter_mut().enumerate() {
        if !shown.contains(&i) {
            c.series = None;
        }
    }
    let html = render(
        &a,
        &ReportOptions {
            title: title.into(),
            sock: None,
        },
    );
    (a, html)
}

/// Opens `html` in Chromium; the page's self-check, after a screenshot.
fn open(bin: &Chromium, html: &str, name: &str) -> Value {
    let path = dir().join(format!("{name}.html"));
    std::fs::write(&path, html).unwrap();
    let url = format!("file://{}", path.display());
    let out = bin.dump_dom(&url);
    let console = console_lines(&out.stderr);
    assert!(console.is_empty(), "{name}: console output: {console:?}");
    let dom = String::from_utf8_lossy(&out.stdout);
    let at = dom
        .find("<pre id=\"selfcheck\"")
        .unwrap_or_else(|| panic!("{name}: no self-check element"));
    let start = at + dom[at..].find('>').unwrap() + 1;
    let end = start + dom[start..].find("</pre>").unwrap();
    let text = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    assert!(!text.is_empty(), "{name}: the page's script did not finish");
    let png = dir().join(format!("{name}.png"));
    bin.screenshot(&url, &png);
    eprintln!(
        "{name}: page {} bytes, screenshot {}",
        html.len(),
        png.display()
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: self-check {e}: {text}"))
}

/// Every plot of a self-check as a person would look at it.
fn looks_right(name: &str, check: &Value) -> usize {
    let plots = check["plots"].as_array().unwrap();
    for p in plots {
        let id = p["id"].as_str().unwrap();
        let span = p["span"].as_f64().unwrap_or(0.0);
        assert!(span >= 0.5, "{name} {id}: data spans {span} of the x axis");
        for a in p["axes"].as_array().unwrap() {
            let label = a["label"].as_str().unwrap();
            assert_eq!(a["unit"], true, "{name} {id}: axis {label:?} has no unit");
            assert_eq!(
                a["label_over_ticks"], false,
                "{name} {id}: axis label {label:?} over its tick labels {}",
                a["ticks"]
            );
            assert_eq!(a["label_longer_than_plot"], false, "{name} {id}: {label:?}");
            assert_eq!(
                a["crowded_ticks"], 0,
                "{name} {id}: tick labels of {label:?} run into each other: {}",
                a["ticks"]
            );
            let ticks: Vec<&str> = a["ticks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
                .collect();
            assert!(ticks.len() >= 2, "{name} {id}: {label:?} ticks {ticks:?}");
            if label.contains("count") || label.contains("segments") {
                assert!(
                    ticks
                        .iter()
                        .all(|t| t.chars().all(|c| c.is_ascii_digit() || c == ',')),
                    "{name} {id}: counts shown as {ticks:?}"
                );
            }
            // Distinct labels: no axis repeats one value over its width.
            let mut uniq = ticks.clone();
            uniq.sort();
            uniq.dedup();
            assert_eq!(uniq.len(), ticks.len(), "{name} {id}: {label:?} {ticks:?}");
        }
    }
    plots.len()
}

type Rec = RecordBuilder<'static>;

fn emitter() -> &'static Emitter {
    static E: std::sync::OnceLock<Emitter> = std::sync::OnceLock::new();
    E.get_or_init(Emitter::builtin)
}

/// A paced sender of `sends` 16 KiB writes: 250 ms at a write every 100 µs,
/// 250 ms at one every 400 µs, and so on; each write is 12 TCP segments (11 of
/// 1448 B and one of 456 B) that reach the driver 8 µs apart, and every 1000th
/// write goes out as one 16 KiB packet (a TSO burst). 26 records per write.
fn paced_sender(sends: u64) -> Vec<Vec<u8>> {
    let e = emitter();
    let a = std::net::Ipv4Addr::new(10, 9, 0, 1);
    let b = std::net::Ipv4Addr::new(10, 9, 0, 2);
    let base = |k: u16, ts: u64| -> Rec { e.record(k, ts).cpu(0).pid(7).tid(7) };
    let mut v = vec![base(kind::SOCK, T0)
        .set("cookie", 1)
        .set("family", 2)
        .set("protocol", 6)
        .set("sport", 40000)
        .set("dport", 5001)
        .addr("saddr", a)
        .addr("daddr", b)
        .into_bytes()];
    let (mut t, mut seq, mut pkt) = (T0 + MS, 1000u64, 1u64);
    for i in 0..sends {
        let fast = ((t - T0) / (250 * MS)) % 2 == 0;
        let inflight = (i % 40) * 1448;
        v.push(
            base(kind::TCP_SENDMSG, t)
                .snapshot()
                .set("cookie", 1)
                .set("state", 1)
                .set("write_seq", seq)
                .set("snd_una", seq - inflight.min(seq - 1000))
                .set("snd_nxt", seq)
                .set("snd_cwnd", 10 + i % 30)
                .set("srtt_us", 40 + (i % 100) * 3)
                .set("snd_wnd", 65535)
                .set("rcv_wnd", 65535)
                .into_bytes(),
        );
        let segs: Vec<u64> = if i % 1000 == 999 {
            vec![16384]
        } else {
            let mut s = vec![1448; 11];
            s.push(16384 - 11 * 1448);
            s
        };
        let mut off = 0;
        for (k, len) in segs.into_iter().enumerate() {
            let ts = t + 2 * US + k as u64 * US;
            v.push(
                base(kind::IP_LOCAL_OUT, ts)
                    .set("cookie", 1)
                    .set("pkt_id", pkt)
                    .set("tot_len", len + 52)
                    .set("version", 4)
                    .set("protocol", 6)
                    .set("sport", 40000)
                    .set("dport", 5001)
                    .set("tcp_flags", 0x18)
                    .set("seq", (seq + off) & 0xffff_ffff)
                    .addr("saddr", a)
                    .addr("daddr", b)
                    .into_bytes(),
            );
            v.push(
                base(kind::DEV_START_XMIT, t + 10 * US + k as u64 * 8 * US)
                    .set("cookie", 1)
                    .set("pkt_id", pkt)
                    .set("len", len + 66)
                    .set("ifindex", 3)
                    .into_bytes(),
            );
            pkt += 1;
            off += len;
        }
        v.push(
            base(kind::APP_SEND, t + US)
                .set("cookie", 1)
                .set("asked", 16384)
                .set("ret", 16384)
                .set("family", 2)
                .set("protocol", 6)
                .comm("comm", "pacer")
                .into_bytes(),
        );
        seq += 16384;
        t += if fast { 100 * US } else { 400 * US };
    }
    v
}

fn write(name: &str, recs: &[Vec<u8>], end: u64) -> Vec<u8> {
    let footer = Footer {
        end_mono_ns: end,
        ..Footer::default()
    };
    let bytes = synthetic_trace(T0, recs, Some(&footer));
    let _ = std::fs::write(dir().join(format!("{name}.mgt")), &bytes);
    bytes
}

#[test]
fn report_reads_right_in_chromium() {
    let Some(bin) = Chromium::find() else {
        let why =
            "report_reads_right_in_chromium: chromium not found (scripts/setup.sh installs it)";
        assert!(
            std::env::var("MAGNET_REQUIRE_LIVE").as_deref() != Ok("1"),
            "{why}"
        );
        eprintln!("SKIP {why}");
        return;
    };
    let started = Instant::now();

    // The demo-sized trace: the recorded release fixture (three loopback
    // connections, --tcp-state, sched).
    let demo = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../magnet-cli/tests/fixtures/release-0.1.0.mgt"
    ))
    .unwrap();
    let (_, html) = page(&demo, "release-0.1.0.mgt");
    let check = open(&bin, &html, "demo");
    let n = looks_right("demo", &check);
    assert!(n >= 20, "demo: {n} plots");
    let ids: Vec<&str> = check["plots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    for want in [
        "rate-80823-out",
        "rate-80823-in",
        "lat-80823",
        "tcp-cwnd-80823",
        "sched",
    ] {
        assert!(ids.contains(&want), "demo: no {want} in {ids:?}");
    }

    // Over a million events: one paced connection.
    let sends = 40_000;
    let recs = paced_sender(sends);
    assert!(recs.len() > 1_000_000, "{} records", recs.len());
    let bytes = write("paced", &recs, T0 + 11_000 * MS);
    let (a, html) = page(&bytes, "paced.mgt");
    let c = &a.connections[0];
    assert_eq!(c.row("app", "out").unwrap().units, sends);
    assert_eq!(
        c.row("dev", "out").unwrap().units,
        sends / 1000 + (sends - sends / 1000) * 12
    );
    assert!(
        html.len() < 1_500_000,
        "a page of {} bytes for {} events",
        html.len(),
        recs.len()
    );
    let check = open(&bin, &html, "paced");
    let n = looks_right("paced", &check);
    assert!(n >= 8, "paced: {n} plots");
    // The rate plot's bins: 50 ms over the 10 s transfer, every app byte in them.
    let plots = html
        .split("<script id=plots type=\"application/json\">")
        .nth(1)
        .unwrap();
    let plots: Value = serde_json::from_str(&plots[..plots.find("</script>").unwrap()]).unwrap();
    let conn = &plots["conns"][0];
    assert_eq!(conn["w_ns"], 50 * MS);
    let app = conn["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["layer"] == "app")
        .unwrap();
    let per_bin: Vec<u64> = serde_json::from_value(app["bytes"].clone()).unwrap();
    assert_eq!(per_bin.iter().sum::<u64>(), sends * 16384);
    // The modulation shows: 50 ms in a fast phase hold 500 writes, in a slow
    // one 125. A layer's own bins (2.048 ms here: 4096 over its 6.3 s) each go
    // whole to the bin holding their middle, so a bin can be off by one of them
    // (20 fast or 5 slow writes) at each edge.
    let near = |writes: u64, tol: u64| {
        per_bin
            .iter()
            .filter(|&&b| b.abs_diff(writes * 16384) <= tol * 16384)
            .count()
    };
    let (fast, slow) = (near(500, 25), near(125, 12));
    assert!(
        fast >= 50 && slow >= 50 && fast + slow >= per_bin.len() - 4,
        "{fast} fast, {slow} slow bins of {}: {per_bin:?}",
        per_bin.len()
    );

    // One event: no plots, a sentence.
    let one = vec![emitter()
        .record(kind::APP_SEND, T0 + MS)
        .set("cookie", 5)
        .set("ret", 1000)
        .set("protocol", 6)
        .into_bytes()];
    let bytes = write("one", &one, T0 + 2 * MS);
    let (_, html) = page(&bytes, "one.mgt");
    assert!(
        html.contains("app out: 1 call of 1000 B at 0.001000 s"),
        "{html}"
    );
    let check = open(&bin, &html, "one");
    assert_eq!(looks_right("one", &check), 0);

    let took = started.elapsed();
    eprintln!("report_reads_right_in_chromium: {took:?}");
    assert!(took.as_secs() < 90, "took {took:?}");
}
