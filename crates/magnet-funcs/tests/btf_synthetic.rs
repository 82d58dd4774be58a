//! Selection rules on a BTF blob built here type by type, so each rule (direct,
//! typedef chain, nesting, pointing, pointer depth, pwru's parameter limit) is
//! checked on a case made for it; and damaged blobs give errors, not panics.

use magnet_funcs::{select, Btf, Category, Rules};

/// Builds raw BTF: types are added in order (ids from 1), strings interned.
struct Builder {
    types: Vec<u8>,
    strings: Vec<u8>,
    next: u32,
}

const INT: u32 = 1;
const PTR: u32 = 2;
const STRUCT: u32 = 4;
const TYPEDEF: u32 = 8;
const CONST: u32 = 10;
const FUNC: u32 = 12;
const PROTO: u32 = 13;

impl Builder {
    fn new() -> Self {
        Builder {
            types: Vec::new(),
            strings: vec![0],
            next: 1,
        }
    }
    fn s(&mut self, name: &str) -> u32 {
        if name.is_empty() {
            return 0;
        }
        let at = self.strings.len() as u32;
        self.strings.extend_from_slice(name.as_bytes());
        self.strings.push(0);
        at
    }
    fn head(&mut self, name: &str, kind: u32, vlen: u32, size_type: u32) -> u32 {
        let n = self.s(name);
        for v in [n, (kind << 24) | vlen, size_type] {
            self.types.extend_from_slice(&v.to_le_bytes());
        }
        self.next += 1;
        self.next - 1
    }
    fn int(&mut self) -> u32 {
        let id = self.head("int", INT, 0, 4);
        self.types
            .extend_from_slice(&((1u32 << 24) | 32).to_le_bytes());
        id
    }
    fn ptr(&mut self, to: u32) -> u32 {
        self.head("", PTR, 0, to)
    }
    fn typedef(&mut self, name: &str, to: u32) -> u32 {
        self.head(name, TYPEDEF, 0, to)
    }
    fn konst(&mut self, to: u32) -> u32 {
        self.head("", CONST, 0, to)
    }
    fn strukt(&mut self, name: &str, members: &[(&str, u32)]) -> u32 {
        let id = self.head(name, STRUCT, members.len() as u32, 8 * members.len() as u32);
        for (i, (m, t)) in members.iter().enumerate() {
            let n = self.s(m);
            for v in [n, *t, (i as u32) * 64] {
                self.types.extend_from_slice(&v.to_le_bytes());
            }
        }
        id
    }
    fn func(&mut self, name: &str, ret: u32, params: &[u32]) -> u32 {
        let proto = self.head("", PROTO, params.len() as u32, ret);
        for (i, p) in params.iter().enumerate() {
            let n = self.s(&format!("a{i}"));
            self.types.extend_from_slice(&n.to_le_bytes());
            self.types.extend_from_slice(&p.to_le_bytes());
        }
        self.head(name, FUNC, 1, proto)
    }
    fn finish(self) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&0xeb9fu16.to_le_bytes());
        b.push(1);
        b.push(0);
        b.extend_from_slice(&24u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&(self.types.len() as u32).to_le_bytes());
        b.extend_from_slice(&(self.types.len() as u32).to_le_bytes());
        b.extend_from_slice(&(self.strings.len() as u32).to_le_bytes());
        b.extend_from_slice(&self.types);
        b.extend_from_slice(&self.strings);
        b
    }
}

fn blob() -> Vec<u8> {
    let mut b = Builder::new();
    let int = b.int();
    // struct sk_buff { struct sk_buff *next; int len; }: its own pointer to
    // itself must not make it a "holder".
    let skb = b.strukt("sk_buff", &[]);
    let skb_p = b.ptr(skb);
    let cskb = b.konst(skb);
    let cskb_p = b.ptr(cskb);
    let skb_pp = b.ptr(skb_p);
    // typedef struct sk_buff skb_t; typedef skb_t *skbp_t; typedef skbp_t skbp2_t;
    let skb_t = b.typedef("skb_t", skb);
    let skb_t_p = b.ptr(skb_t);
    let skbp_t = b.typedef("skbp_t", skb_t_p);
    let skbp2_t = b.typedef("skbp2_t", skbp_t);
    // struct queue { struct sk_buff *head; }            level 1, by pointer
    // struct sock { int x; struct queue q; }            level 2, by value
    // struct tsock { struct sock s; }                   level 3, by value
    // struct socket { struct sock *sk; }                 1 pointer hop
    // struct file { struct socket *so; }                 2 pointer hops
    // struct other { int *x; }                           nothing
    let queue = b.strukt("queue", &[("head", skb_p)]);
    let sock = b.strukt("sock", &[("x", int), ("q", queue)]);
    let sock_p = b.ptr(sock);
    let tsock = b.strukt("tsock", &[("s", sock)]);
    let tsock_p = b.ptr(tsock);
    let socket = b.strukt("socket", &[("sk", sock_p)]);
    let socket_p = b.ptr(socket);
    let file = b.strukt("file", &[("so", socket_p)]);
    let file_p = b.ptr(file);
    let int_p = b.ptr(int);
    let other = b.strukt("other", &[("x", int_p)]);
    let other_p = b.ptr(other);

    b.func("xmit", int, &[skb_p]);
    b.func("peek", int, &[cskb_p]); // const: direct, not pwru
    b.func("alloc", skb_p, &[int]); // returned: direct, not pwru
    b.func("sixth", int, &[int, int, int, int, int, skb_p]); // 6th: direct, not pwru
    b.func("pskb", int, &[skb_pp]); // pointer to pointer: direct, not pwru
    b.func("td", int, &[skbp2_t]); // typedef chain
    b.func("td2", int, &[skb_t_p]); // pointer to typedef
    b.func("sendmsg", int, &[sock_p]);
    b.func("tcp_sendmsg", int, &[tsock_p]);
    b.func("inet_sendmsg", int, &[socket_p]);
    b.func("vfs_write", int, &[file_p]);
    b.func("unrelated", int, &[other_p, int]);
    // Same name twice (static functions in two compile units): one function.
    b.func("xmit", int, &[skb_p, int]);
    b.finish()
}

fn cat(sel: &magnet_funcs::Selection, name: &str) -> Option<Category> {
    sel.funcs.get(name).map(|f| f.category)
}

#[test]
fn each_rule_on_its_own_case() {
    let btf = Btf::parse("synthetic", &blob()).unwrap();
    let sel = select(&btf, Rules { pointer_depth: 1 });
    use Category::*;
    for (f, want) in [
        ("xmit", Some(Direct)),
        ("peek", Some(Direct)),
        ("alloc", Some(Direct)),
        ("sixth", Some(Direct)),
        ("pskb", Some(Direct)),
        ("td", Some(Typedef)),
        ("td2", Some(Typedef)),
        ("sendmsg", Some(Nested)),
        ("tcp_sendmsg", Some(Nested)),
        ("inet_sendmsg", Some(Pointing)),
        ("vfs_write", None),
        ("unrelated", None),
    ] {
        assert_eq!(cat(&sel, f), want, "{f}");
    }
    // 12 distinct names, "xmit" twice.
    assert_eq!(sel.total, 12);
    assert_eq!(sel.funcs.len(), 10);
    // pwru: only a plain struct sk_buff * in parameters 1-5.
    let pwru: Vec<&str> = sel
        .funcs
        .values()
        .filter(|f| f.pwru)
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(pwru, ["xmit"]);
    // Loose rule: any parameter, const and typedefs stripped, one pointer.
    let loose: Vec<&str> = sel
        .funcs
        .values()
        .filter(|f| f.loose)
        .map(|f| f.name.as_str())
        .collect();
    assert_eq!(loose, ["peek", "sixth", "td", "td2", "xmit"]);
    // Levels: queue 1, sock 2, tsock 3 (by value); socket 1 hop.
    let level = |name: &str| {
        let (id, _) = btf.types().find(|(_, t)| btf.str(t.name) == name).unwrap();
        let h = &sel.holders[&id];
        (h.level, h.hops)
    };
    assert_eq!(level("queue"), (1, 0));
    assert_eq!(level("sock"), (2, 0));
    assert_eq!(level("tsock"), (3, 0));
    assert_eq!(level("socket"), (3, 1));
    assert_eq!(sel.aliases.len(), 2 + 1, "skbp_t, skbp2_t and skb_t");
    // The explanation walks the chain down to the skb.
    let r = &sel.funcs["inet_sendmsg"].reasons[0];
    assert_eq!(r.ty, "struct socket *");
    assert_eq!(
        r.chain,
        [
            "struct socket points to struct sock (member sk)",
            "struct sock holds struct queue (member q)",
            "struct queue points to struct sk_buff (member head)"
        ]
    );
}

#[test]
fn pointer_depth_reaches_further() {
    let btf = Btf::parse("synthetic", &blob()).unwrap();
    let sel0 = select(&btf, Rules { pointer_depth: 0 });
    assert_eq!(cat(&sel0, "inet_sendmsg"), None);
    assert_eq!(cat(&sel0, "sendmsg"), Some(Category::Nested));
    let sel2 = select(&btf, Rules { pointer_depth: 2 });
    assert_eq!(cat(&sel2, "vfs_write"), Some(Category::Pointing));
    assert_eq!(cat(&sel2, "unrelated"), None);
}

#[test]
fn damaged_blobs_give_errors_with_offsets() {
    let good = blob();
    // Cut inside the type section: every cut is an error, never a panic.
    for cut in 0..good.len() {
        let r = Btf::parse("cut", &good[..cut]);
        if let Err(e) = r {
            let msg = e.to_string();
            assert!(msg.starts_with("cut: BTF at byte "), "{msg}");
        }
    }
    // A bad magic.
    let mut bad = good.clone();
    bad[0] = 0;
    let e = Btf::parse("x", &bad).err().unwrap().to_string();
    assert_eq!(e, "x: BTF at byte 0: bad magic (not BTF)");
    // An unknown kind names the offset of the type.
    let mut bad = good.clone();
    bad[24 + 7] = 31; // first type's kind byte
    let e = Btf::parse("x", &bad).err().unwrap().to_string();
    assert_eq!(
        e,
        "x: BTF at byte 24: type kind 31 unknown to this magnet; cannot step over it"
    );
    // Flipped bytes anywhere: no panic.
    for i in 0..good.len() {
        let mut b = good.clone();
        b[i] ^= 0xff;
        if let Ok(btf) = Btf::parse("flip", &b) {
            let _ = select(&btf, Rules::default());
        }
    }
}
