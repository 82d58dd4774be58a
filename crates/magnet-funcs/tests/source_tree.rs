//! Source mode on a small tree written here, one case per rule of the thesis
//! (§4.3): aliases (and an expression that is not one), customised types,
//! nested structures several levels deep, direct use, indirect callers and
//! callees several levels deep. And, when a Debian linux-source-6.1 tree is
//! present ($MAGNET_LINUX_SOURCE), its Table 6-1 against `find`.

use std::collections::BTreeMap;

use magnet_funcs::source::{scan, Use};

const SKBUFF_H: &str = r#"
struct sk_buff {
    struct sk_buff *next;
    unsigned int len;
};
struct sk_buff_head {
    struct sk_buff *next;
    struct sk_buff *prev;
};
#define SKB_ALIAS struct sk_buff
#define SKB_ALIAS2 SKB_ALIAS
#define SKB_TRUESIZE(x) ((x) + sizeof(struct sk_buff))
#define SKB_MIN (2048 + sizeof(struct sk_buff))
typedef struct sk_buff skb_t;
typedef SKB_ALIAS2 skb2_t;
struct sock {
    int state;
    struct sk_buff_head receive_queue;
};
struct tcp_sock {
    struct sock sk;
    int snd_nxt;
};
typedef struct {
    struct tcp_sock tp;
} tcp_wrap_t;
struct socket {
    struct sock *sk;
};
struct unrelated {
    int *p;
};
static inline unsigned int skb_len(const struct sk_buff *skb)
{
    return skb->len;
}
"#;

const NET_C: &str = r#"
#include <skbuff.h>
struct sk_buff *alloc_skb(unsigned int size);
void kfree_skb(struct sk_buff *skb);

int dev_xmit(SKB_ALIAS2 *skb) { return 0; }
int td_xmit(skb2_t *skb) { return dev_xmit(skb); }
int tcp_send(struct tcp_sock *tp) { return 0; }
int wrap_send(tcp_wrap_t *w) { return 0; }
int inet_send(struct socket *so) { return 0; }
int unrelated_fn(struct unrelated *u, int x) { return x; }

/* Indirect callee, level 1: gets an skb through a void * it does not declare. */
static void hook(void *data) { consume(data); }
/* Indirect callee, level 2: gets it from hook. */
void consume(void *p) { }

/* Indirect caller: keeps an skb in a local and hands it on. */
int send_probe(int size)
{
    struct sk_buff *skb;
    skb = alloc_skb(size);
    if (!skb)
        return -1;
    hook(skb);
    return dev_xmit(skb);
}

/* Indirect caller, level 2: passes its parameter into a direct use function. */
int pass_on(void *data) { return dev_xmit(data); }
/* …and one more level up. */
int pass_on2(void *d, int n) { return pass_on(d); }

/* Indirect callee through a return value it does not declare. */
void *get_one(void)
{
    struct sk_buff *skb = alloc_skb(10);
    return skb;
}

/* Not packet functions. */
int add(int a, int b) { return a + b; }
static int uses_add(void) { return add(1, 2); }
void *ident(void *p) { return p; }
int calls_ident(void *x) { ident(x); return 0; }
"#;

fn tree() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("include/linux")).unwrap();
    std::fs::create_dir_all(d.path().join("net/core")).unwrap();
    std::fs::write(d.path().join("include/linux/skbuff.h"), SKBUFF_H).unwrap();
    std::fs::write(d.path().join("include/linux/README"), "not C").unwrap();
    std::fs::write(d.path().join("net/core/dev.c"), NET_C).unwrap();
    d
}

#[test]
fn every_rule_on_a_small_tree() {
    let d = tree();
    let mut calls = 0;
    let r = scan(d.path(), 3, &mut |done, total| {
        calls += 1;
        assert_eq!(total, 2);
        assert_eq!(done, calls);
    })
    .unwrap();
    assert_eq!(calls, 2);
    assert_eq!((r.files_include, r.files_net), (1, 1));
    assert_eq!(r.aliases, ["SKB_ALIAS", "SKB_ALIAS2"]);
    assert_eq!(r.customized_types, ["skb2_t", "skb_t", "tcp_wrap_t"]);
    // sk_buff_head, sock, tcp_sock and the typedef'd anonymous struct.
    assert_eq!(r.nested_structures, 4);
    assert_eq!(r.pointing_structures, 1); // socket
    let got: BTreeMap<&str, (Use, u32)> = r
        .functions
        .iter()
        .map(|f| (f.name.as_str(), (f.how, f.level)))
        .collect();
    let want: BTreeMap<&str, (Use, u32)> = [
        ("skb_len", (Use::Direct, 0)),
        ("dev_xmit", (Use::Alias, 0)),
        ("td_xmit", (Use::Typedef, 0)),
        ("tcp_send", (Use::Nested, 0)),
        ("wrap_send", (Use::Nested, 0)),
        ("inet_send", (Use::Pointing, 0)),
        ("hook", (Use::IndirectCallee, 1)),
        ("consume", (Use::IndirectCallee, 2)),
        ("send_probe", (Use::IndirectCaller, 1)),
        ("pass_on", (Use::IndirectCaller, 1)),
        ("pass_on2", (Use::IndirectCaller, 2)),
        ("get_one", (Use::IndirectCallee, 1)),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
    // Function definitions: 1 in the header, 16 in dev.c (declarations do not count).
    assert_eq!(r.total_functions, 17);
    assert_eq!(r.packet_functions, 12);
    assert_eq!(
        r.functions.iter().find(|f| f.name == "hook").unwrap().file,
        "net/core/dev.c"
    );
}

#[test]
fn levels_limit_indirect_use() {
    let d = tree();
    let r = scan(d.path(), 1, &mut |_, _| {}).unwrap();
    let names: Vec<&str> = r.functions.iter().map(|f| f.name.as_str()).collect();
    assert!(names.contains(&"hook") && names.contains(&"pass_on"));
    assert!(!names.contains(&"consume") && !names.contains(&"pass_on2"));
}

#[test]
fn not_a_kernel_tree() {
    let d = tempfile::tempdir().unwrap();
    let e = scan(d.path(), 3, &mut |_, _| {}).err().unwrap().to_string();
    assert!(
        e.ends_with(
            "/include: no such directory: --source wants a kernel tree (with include/ and net/)"
        ),
        "{e}"
    );
}

/// Bad bytes in a source file (binary junk, cut in the middle of a function)
/// are read as far as they go.
#[test]
fn damaged_source_files() {
    let d = tree();
    let mut junk = NET_C.as_bytes()[..NET_C.len() / 2].to_vec();
    junk.extend_from_slice(&[0xff, 0x00, 0xfe, b'{', b'{']);
    std::fs::write(d.path().join("net/core/junk.c"), junk).unwrap();
    let r = scan(d.path(), 3, &mut |_, _| {}).unwrap();
    assert_eq!(r.files_net, 2);
    assert!(r.files_with_parse_errors >= 1);
}

#[test]
fn linux_source_6_1_table() {
    let root = std::env::var_os("MAGNET_LINUX_SOURCE").map(std::path::PathBuf::from);
    let Some(root) = root.filter(|r| r.join("net").is_dir()) else {
        eprintln!("SKIP: set MAGNET_LINUX_SOURCE to an unpacked linux-source-6.1 tree");
        return;
    };
    let r = scan(&root, 3, &mut |_, _| {}).unwrap();
    // Files: the same as find(1) counts.
    let count = |sub: &str| {
        let out = std::process::Command::new("find")
            .arg(root.join(sub))
            .args(["-type", "f", "(", "-name", "*.c", "-o", "-name", "*.h", ")"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    assert_eq!(r.files_include, count("include"));
    assert_eq!(r.files_net, count("net"));
    let find = |n: &str| r.functions.iter().find(|f| f.name == n).map(|f| f.how);
    // The SYN path and the functions of the thesis' Table 6-3.
    for (f, u) in [
        ("tcp_connect", Use::Nested),
        ("__ip_queue_xmit", Use::Direct),
        ("ip_queue_xmit", Use::Direct),
        ("dev_hard_start_xmit", Use::Direct),
        ("tcp_sendmsg", Use::Nested),
        ("inet_sendmsg", Use::Pointing),
        ("sk_wait_data", Use::Direct),
    ] {
        assert_eq!(find(f), Some(u), "{f}");
    }
    assert!(r.packet_functions > 10_000 && r.total_functions > 2 * r.packet_functions / 2);
}
