//! Counts on real kernels' BTF against numbers measured independently of this
//! code (docs/kernel-notes.md, counted with pwru's rule and a looser one by another
//! tool): Debian's 6.1 and 6.12 (BTF extracted by scripts/fetch-btf.sh) and the
//! running kernel. Also the polymorphic functions the thesis names.
//!
//! The BTF files come from `$MAGNET_BTF_DIR` or `target/btf`; when missing the
//! test runs scripts/fetch-btf.sh (apt-get download, ~180 MB, ~10 s). Without
//! network it skips with the reason, and fails under MAGNET_REQUIRE_LIVE=1.

use std::path::{Path, PathBuf};

use magnet_funcs::{select, Btf, Category, Rules, Selection};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn btf_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("MAGNET_BTF_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/btf"));
    let have = ["6.1.btf", "6.12.btf", "6.1-veth.ko.btf", "6.12-veth.ko.btf"];
    if have.iter().all(|f| dir.join(f).exists()) {
        return Some(dir);
    }
    let out = std::process::Command::new("bash")
        .arg(workspace().join("scripts/fetch-btf.sh"))
        .arg(&dir)
        .output();
    let reason = match out {
        Ok(o) if o.status.success() => return Some(dir),
        Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
        Err(e) => e.to_string(),
    };
    let msg = format!(
        "no 6.1/6.12 BTF in {} and fetching failed: {reason}",
        dir.display()
    );
    if std::env::var("MAGNET_REQUIRE_LIVE").as_deref() == Ok("1") {
        panic!("{msg}");
    }
    eprintln!("SKIP: {msg}");
    None
}

/// Asserts exact counts for the image they were measured on; a newer image of
/// the series may differ by a little.
fn check(what: &str, sel: &Selection, exact: bool, pwru: usize, loose: usize) {
    let (got_p, got_l) = (sel.pwru_count(), sel.loose_count());
    if exact {
        assert_eq!(
            (got_p, got_l),
            (pwru, loose),
            "{what}: pwru rule, loose rule"
        );
    } else {
        let near = |a: usize, b: usize| a.abs_diff(b) * 100 <= b * 3;
        assert!(
            near(got_p, pwru) && near(got_l, loose),
            "{what}: {got_p}/{got_l}"
        );
    }
    // Every pwru function is selected as direct; the polymorphic categories add to it.
    for f in sel.funcs.values().filter(|f| f.pwru) {
        assert_eq!(f.category, Category::Direct, "{what}: {}", f.name);
    }
    let c = sel.counts();
    assert!(c[&Category::Direct] >= loose, "{what}: direct {c:?}");
    assert!(
        c[&Category::Nested] > 1000 && c[&Category::Pointing] > 1000,
        "{what}: {c:?}"
    );
    // The functions of the thesis' Table 6-3 and the SYN path, by category.
    use Category::*;
    for (f, want) in [
        ("ip_queue_xmit", Direct),
        ("__ip_queue_xmit", Direct),
        ("dev_hard_start_xmit", Direct),
        ("ip_rcv", Direct),
        ("tcp_v4_rcv", Direct),
        ("tcp_sendmsg", Nested),
        ("tcp_connect", Nested),
        ("tcp_recvmsg", Nested),
        ("inet_sendmsg", Pointing),
    ] {
        let got = sel.funcs.get(f).map(|s| s.category);
        assert_eq!(got, Some(want), "{what}: {f}");
    }
    // …and functions that have nothing to do with packets are left out.
    for f in ["schedule", "vfs_read", "kmalloc_trace", "do_sys_open"] {
        assert!(!sel.funcs.contains_key(f), "{what}: {f} selected");
    }
}

#[test]
fn debian_6_1_and_6_12() {
    let Some(dir) = btf_dir() else { return };
    // (pwru rule, loose rule) counted on linux-image-6.1.0-56 / 6.12.117; the
    // NOTES' 6.12 figures (1,547 / 1,743) are from another 6.12 point release.
    for (v, pkg, pwru, loose) in [
        ("6.1", "linux-image-6.1.0-56-amd64-unsigned", 1420, 1572),
        (
            "6.12",
            "linux-image-6.12.117+deb12-amd64-unsigned",
            1548,
            1746,
        ),
    ] {
        let btf = Btf::from_file(&dir.join(format!("{v}.btf"))).unwrap();
        let got_pkg = std::fs::read_to_string(dir.join(format!("{v}.package"))).unwrap_or_default();
        let sel = select(&btf, Rules::default());
        check(v, &sel, got_pkg.trim() == pkg, pwru, loose);
    }
}

/// A module's split BTF: its type ids and strings continue vmlinux's, so its
/// functions' `struct sk_buff *` must resolve to vmlinux's sk_buff.
#[test]
fn module_split_btf() {
    let Some(dir) = btf_dir() else { return };
    for v in ["6.1", "6.12"] {
        let mut btf = Btf::from_file(&dir.join(format!("{v}.btf"))).unwrap();
        let base = select(&btf, Rules::default());
        let n = btf.len();
        let raw = std::fs::read(dir.join(format!("{v}-veth.ko.btf"))).unwrap();
        btf.add_split("veth", &raw).unwrap();
        assert!(btf.len() > n, "{v}: the module adds types");
        let sel = select(&btf, Rules::default());
        let f = &sel.funcs["veth_xmit"];
        assert_eq!(
            (f.unit.as_str(), f.category, f.pwru),
            ("veth", Category::Direct, true),
            "{v}"
        );
        assert_eq!(f.reasons[0].ty, "struct sk_buff *", "{v}");
        assert_eq!(f.reasons[0].name, "skb", "{v}");
        let veth = sel.funcs.values().filter(|f| f.unit == "veth").count();
        assert!(veth >= 10, "{v}: {veth} veth functions selected");
        assert_eq!(
            sel.funcs.len(),
            base.funcs.len() + veth,
            "{v}: vmlinux's selection unchanged"
        );
        // Damaged split BTF: an error naming the blob, never a panic.
        for cut in [8, raw.len() / 2, raw.len() - 1] {
            let mut b = Btf::from_file(&dir.join(format!("{v}.btf"))).unwrap();
            let e = b.add_split("veth", &raw[..cut]).err().unwrap().to_string();
            assert!(e.starts_with("veth: BTF at byte "), "{e}");
        }
    }
}

#[test]
fn running_kernel() {
    let p = Path::new("/sys/kernel/btf/vmlinux");
    if !p.exists() {
        eprintln!("SKIP: this kernel has no /sys/kernel/btf/vmlinux");
        return;
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let btf = Btf::from_file(p).unwrap();
    let sel = select(&btf, Rules::default());
    if release.trim() == "6.18.44-fc-v509" {
        // Counted by another tool (docs/kernel-notes.md): 2,056 (pwru) and
        // 2,424 (looser) on this kernel.
        check("6.18", &sel, true, 2056, 2424);
    } else {
        eprintln!(
            "note: no reference counts for {}; structure checked only",
            release.trim()
        );
        assert!(sel.pwru_count() > 1000);
    }
}
