//! `magnet funcs` and `magnet funcs --source` on the real binary: counts agree
//! between the summary, --list and --available; --why explains; damaged input
//! gives one line naming the file and offset. Uses the running kernel's BTF
//! read as a saved file (no root needed). ~1 s.

mod common;

use common::{magnet, tmp};

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

fn have_btf() -> bool {
    if std::path::Path::new(VMLINUX).exists() {
        return true;
    }
    eprintln!("SKIP: no {VMLINUX}");
    false
}

fn stdout(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "magnet failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn summary_list_and_available_agree() {
    if !have_btf() {
        return;
    }
    let s: serde_json::Value =
        serde_json::from_str(&stdout(&magnet(&["funcs", "--btf", VMLINUX, "--json"]))).unwrap();
    let sum = &s["summary"];
    let total = sum["selected_total"].as_u64().unwrap();
    let per: u64 = ["direct", "typedef", "nested", "pointing"]
        .iter()
        .map(|c| sum["selected"][c].as_u64().unwrap())
        .sum();
    assert_eq!(per, total);
    assert!(sum["pwru_rule"].as_u64().unwrap() <= sum["selected"]["direct"].as_u64().unwrap());
    // Without a listing, --list gives every selected function, once.
    let list = stdout(&magnet(&["funcs", "--btf", VMLINUX, "--list"]));
    let names: std::collections::BTreeSet<&str> = list
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(list.lines().count() as u64, total);
    assert_eq!(names.len() as u64, total);
    let direct = stdout(&magnet(&[
        "funcs",
        "--btf",
        VMLINUX,
        "--list",
        "--category",
        "direct",
    ]));
    assert_eq!(
        direct.lines().count() as u64,
        sum["selected"]["direct"].as_u64().unwrap()
    );
    assert!(direct
        .lines()
        .all(|l| l.split('\t').nth(1) == Some("direct")));

    // A saved available_filter_functions: attachable = selected ∩ listed.
    let avail = tmp("available_filter_functions");
    std::fs::write(
        &avail,
        "tcp_sendmsg\nip_rcv\nschedule\nno_such_function_xyz [veth]\n",
    )
    .unwrap();
    let a: serde_json::Value = serde_json::from_str(&stdout(&magnet(&[
        "funcs",
        "--btf",
        VMLINUX,
        "--available",
        avail.to_str().unwrap(),
        "--json",
    ])))
    .unwrap();
    assert_eq!(a["available"]["functions"], 4);
    assert_eq!(a["summary"]["attachable_total"], 2);
    assert_eq!(a["summary"]["attachable"]["direct"], 1);
    assert_eq!(a["summary"]["attachable"]["nested"], 1);
    let listed = stdout(&magnet(&[
        "funcs",
        "--btf",
        VMLINUX,
        "--available",
        avail.to_str().unwrap(),
        "--list",
    ]));
    let got: Vec<&str> = listed
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(got, ["ip_rcv", "tcp_sendmsg"]);
}

#[test]
fn why_explains_and_says_no() {
    if !have_btf() {
        return;
    }
    let out = stdout(&magnet(&[
        "funcs",
        "--btf",
        VMLINUX,
        "--why",
        "inet_sendmsg",
    ]));
    assert!(out.starts_with("inet_sendmsg [vmlinux]: pointing"), "{out}");
    assert!(
        out.contains("parameter 1 `sock`: struct socket * -> pointing"),
        "{out}"
    );
    assert!(
        out.contains("struct socket points to struct sock (member sk)"),
        "{out}"
    );
    let out = stdout(&magnet(&["funcs", "--btf", VMLINUX, "--why", "ip_rcv"]));
    assert!(
        out.contains("parameter 1 `skb`: struct sk_buff * -> direct"),
        "{out}"
    );
    assert!(out.contains("pwru's rule selects it too"), "{out}");
    let out = magnet(&["funcs", "--btf", VMLINUX, "--why", "schedule"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("schedule: not selected"));
}

#[test]
fn damaged_btf_is_one_line_with_the_offset() {
    if !have_btf() {
        return;
    }
    let bytes = std::fs::read(VMLINUX).unwrap();
    let cut = tmp("cut.btf");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let out = magnet(&["funcs", "--btf", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!("magnet: error: {}: BTF at byte ", cut.display())),
        "{err}"
    );
    let junk = tmp("junk.btf");
    std::fs::write(&junk, b"hello").unwrap();
    let out = magnet(&["funcs", "--btf", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err.trim(),
        format!(
            "magnet: error: {}: ELF at byte 0: neither BTF (magic 0xeb9f) nor ELF",
            junk.display()
        )
    );
}

#[test]
fn source_mode_prints_table_6_1() {
    let root = tmp("src");
    std::fs::create_dir_all(root.join("include/linux")).unwrap();
    std::fs::create_dir_all(root.join("net/ipv4")).unwrap();
    std::fs::write(
        root.join("include/linux/skbuff.h"),
        "struct sk_buff { int len; };\n#define SKB struct sk_buff\ntypedef struct sk_buff skb_t;\nstruct q { struct sk_buff *head; };\n",
    )
    .unwrap();
    std::fs::write(
        root.join("net/ipv4/a.c"),
        "int f(SKB *s) { return 0; }\nint g(int x) { return x; }\nint h(struct q *q) { return 0; }\n",
    )
    .unwrap();
    let out = stdout(&magnet(&["funcs", "--source", root.to_str().unwrap()]));
    let row = |name: &str| -> u64 {
        let l = out
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name}: {out}"));
        l.split_whitespace().last().unwrap().parse().unwrap()
    };
    assert_eq!(row("/include"), 1);
    assert_eq!(row("/net"), 1);
    assert_eq!(row("Alias"), 1);
    assert_eq!(row("Customized data types"), 1);
    assert_eq!(row("Nested structure"), 1);
    assert_eq!(row("Packet processing functions"), 2);
    assert_eq!(row("Total functions"), 3);
}

/// `record --funcs all/N` with a bad N: one line saying what is wanted, before
/// anything is loaded.
#[test]
fn record_funcs_all_n_is_checked() {
    if !have_btf() {
        return;
    }
    let trace = tmp("funcs-all-n.mgt");
    for bad in ["all/0", "all/x", "all/"] {
        let out = magnet(&[
            "record",
            "--funcs",
            bad,
            "-o",
            trace.to_str().unwrap(),
            "--",
            "true",
        ]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.trim(),
            format!(
                "magnet: error: --funcs {bad}: want all/N with N a whole number >= 1 (every Nth function)"
            ),
            "{bad}"
        );
        assert!(!trace.exists(), "{bad}: a trace was written");
    }
}
