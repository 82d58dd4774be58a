//! The kernel's type information: tracepoints and their arguments, functions
//! and their parameters, enum values. Indexed once by name.

use std::collections::HashMap;

use libbpf_rs::btf::types::{Composite, Enum, Enum64, FuncProto, Fwd, FwdKind};
use libbpf_rs::btf::{Btf, BtfKind, BtfType, TypeId};

use crate::{Error, Result};

/// One parameter of a function or tracepoint, with its C type as the kernel's
/// BTF spells it (typedefs kept: `u32`, `struct sk_buff *`, `const struct sock *`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Param {
    pub name: String,
    pub ty: String,
    /// The type's id in the kernel's BTF, for callers that walk it further
    /// (e.g. through typedefs and into struct members).
    pub type_id: u32,
}

/// A kernel function or tracepoint and its parameters.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FuncInfo {
    pub name: String,
    /// For a tracepoint, its arguments without the leading `void *` context.
    pub params: Vec<Param>,
}

/// `/sys/kernel/btf/vmlinux` (or another BTF file), indexed by name.
pub struct KernelBtf {
    btf: Btf<'static>,
    funcs: HashMap<String, u32>,
    tracepoints: HashMap<String, u32>,
}

impl std::fmt::Debug for KernelBtf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KernelBtf")
            .field("funcs", &self.funcs.len())
            .field("tracepoints", &self.tracepoints.len())
            .finish()
    }
}

impl KernelBtf {
    /// The running kernel's BTF.
    pub fn load() -> Result<Self> {
        let btf = Btf::from_vmlinux().map_err(|e| Error::NoBtf {
            path: "/sys/kernel/btf/vmlinux".into(),
            reason: e.to_string(),
        })?;
        Ok(Self::index(btf))
    }

    /// BTF from a file (a saved `/sys/kernel/btf/vmlinux`, or a `vmlinux` ELF).
    pub fn from_path(path: &std::path::Path) -> Result<Self> {
        let btf = Btf::from_path(path).map_err(|e| Error::NoBtf {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Ok(Self::index(btf))
    }

    fn index(btf: Btf<'static>) -> Self {
        let mut funcs = HashMap::new();
        let mut tracepoints = HashMap::new();
        for id in 1..btf.len() as u32 {
            let Some(t) = btf.type_by_id::<BtfType<'_>>(TypeId::from(id)) else {
                continue;
            };
            let Some(name) = t.name().and_then(|n| n.to_str()) else {
                continue;
            };
            match t.kind() {
                BtfKind::Func => {
                    funcs.insert(name.to_string(), id);
                }
                BtfKind::Typedef => {
                    if let Some(tp) = name.strip_prefix("btf_trace_") {
                        tracepoints.insert(tp.to_string(), id);
                    }
                }
                _ => {}
            }
        }
        KernelBtf {
            btf,
            funcs,
            tracepoints,
        }
    }

    /// The underlying BTF, for walks this crate does not offer.
    pub fn btf(&self) -> &Btf<'static> {
        &self.btf
    }

    /// Whether the kernel has this tracepoint (as tp_btf / raw_tp sees it).
    pub fn has_tracepoint(&self, name: &str) -> bool {
        self.tracepoints.contains_key(name)
    }

    /// A tracepoint's arguments, from its `btf_trace_<name>` prototype
    /// (`void (*)(void *ctx, args…)`; the context is left out).
    pub fn tracepoint(&self, name: &str) -> Option<FuncInfo> {
        let id = *self.tracepoints.get(name)?;
        let td = self.btf.type_by_id::<BtfType<'_>>(TypeId::from(id))?;
        let ptr = td.next_type()?;
        let proto = ptr.next_type()?;
        let mut params = self.proto_params(proto)?;
        if !params.is_empty() {
            params.remove(0);
        }
        Some(FuncInfo {
            name: name.to_string(),
            params,
        })
    }

    /// Whether BTF has a function of this name (any kernel function, kfuncs
    /// included: `bpf_rdonly_cast` is absent before 6.2).
    pub fn has_func(&self, name: &str) -> bool {
        self.funcs.contains_key(name)
    }

    /// A function's parameters.
    pub fn func(&self, name: &str) -> Option<FuncInfo> {
        self.func_by_id(name, *self.funcs.get(name)?)
    }

    fn func_by_id(&self, name: &str, id: u32) -> Option<FuncInfo> {
        let f = self.btf.type_by_id::<BtfType<'_>>(TypeId::from(id))?;
        let params = self.proto_params(f.next_type()?)?;
        Some(FuncInfo {
            name: name.to_string(),
            params,
        })
    }

    /// Every function in BTF with its parameters (order unspecified).
    pub fn funcs(&self) -> impl Iterator<Item = FuncInfo> + '_ {
        self.funcs
            .iter()
            .filter_map(|(name, &id)| self.func_by_id(name, id))
    }

    /// Functions that take a `ty` (as [`Param::ty`] spells it, e.g.
    /// `struct sk_buff *`; `const` ignored) among their first `first_n`
    /// parameters: pwru's rule for the functions a packet passes through
    /// (6 would be every register argument). Sorted by name.
    pub fn funcs_taking(&self, ty: &str, first_n: usize) -> Vec<FuncInfo> {
        let want = ty.trim_start_matches("const ");
        let mut v: Vec<FuncInfo> = self
            .funcs()
            .filter(|f| {
                f.params
                    .iter()
                    .take(first_n)
                    .any(|p| p.ty.trim_start_matches("const ") == want)
            })
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Number of functions and tracepoints indexed.
    pub fn counts(&self) -> (usize, usize) {
        (self.funcs.len(), self.tracepoints.len())
    }

    /// Whether `enum NAME` (or a 64-bit enum) has the value `value`
    /// (e.g. `bpf_attach_type` / `BPF_TCX_INGRESS`).
    pub fn has_enum_value(&self, enum_name: &str, value: &str) -> bool {
        if let Some(e) = self.btf.type_by_name::<Enum<'_>>(enum_name) {
            return e
                .iter()
                .any(|m| m.name.and_then(|n| n.to_str()) == Some(value));
        }
        if let Some(e) = self.btf.type_by_name::<Enum64<'_>>(enum_name) {
            return e
                .iter()
                .any(|m| m.name.and_then(|n| n.to_str()) == Some(value));
        }
        false
    }

    /// Whether `struct NAME` is defined.
    pub fn has_struct(&self, name: &str) -> bool {
        self.btf
            .type_by_name::<BtfType<'_>>(name)
            .is_some_and(|t| t.kind() == BtfKind::Struct)
    }

    /// The id of a named function, for attaching fentry/fexit to it.
    pub fn func_id(&self, name: &str) -> Option<u32> {
        self.funcs.get(name).copied()
    }

    fn proto_params(&self, proto: BtfType<'_>) -> Option<Vec<Param>> {
        let proto = FuncProto::try_from(proto).ok()?;
        Some(
            proto
                .iter()
                .enumerate()
                .map(|(i, p)| Param {
                    name: p
                        .name
                        .and_then(|n| n.to_str())
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("arg{i}")),
                    ty: self.type_name(p.ty),
                    type_id: p.ty.into(),
                })
                .collect(),
        )
    }

    /// A type as C spells it, typedef names kept.
    pub fn type_name(&self, id: TypeId) -> String {
        self.render(id, 0)
    }

    fn render(&self, id: TypeId, depth: u32) -> String {
        if depth > 16 {
            return "?".into();
        }
        if u32::from(id) == 0 {
            return "void".into();
        }
        let Some(t) = self.btf.type_by_id::<BtfType<'_>>(id) else {
            return "?".into();
        };
        let name = t.name().and_then(|n| n.to_str()).unwrap_or("").to_string();
        let next = |t: &BtfType<'_>| t.next_type().map(|n| n.type_id()).unwrap_or(0.into());
        match t.kind() {
            BtfKind::Ptr => {
                let n = next(&t);
                let inner = self.btf.type_by_id::<BtfType<'_>>(n);
                if inner.is_some_and(|i| i.kind() == BtfKind::FuncProto) {
                    "void (*)()".into()
                } else {
                    format!("{} *", self.render(n, depth + 1))
                }
            }
            BtfKind::Const => format!("const {}", self.render(next(&t), depth + 1)),
            BtfKind::Volatile => format!("volatile {}", self.render(next(&t), depth + 1)),
            BtfKind::Restrict | BtfKind::TypeTag => self.render(next(&t), depth + 1),
            BtfKind::Struct => format!("struct {name}"),
            BtfKind::Union => format!("union {name}"),
            BtfKind::Enum | BtfKind::Enum64 => format!("enum {name}"),
            BtfKind::Fwd => match Fwd::try_from(t).map(|f| f.kind()) {
                Ok(FwdKind::Union) => format!("union {name}"),
                _ => format!("struct {name}"),
            },
            BtfKind::Array => "array".into(),
            BtfKind::FuncProto => "fn".into(),
            _ => {
                if name.is_empty() {
                    "?".into()
                } else {
                    name
                }
            }
        }
    }
}

/// Keeps `Composite` in use for readers of the docs (struct walks go through
/// [`KernelBtf::btf`]).
#[allow(dead_code)]
fn _composite(_: Composite<'_>) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn btf() -> Option<KernelBtf> {
        KernelBtf::load().ok()
    }

    #[test]
    fn tracepoint_arguments_leave_out_the_context() {
        let Some(b) = btf() else {
            eprintln!("skipped: this kernel exposes no BTF");
            return;
        };
        // sched_switch: (bool preempt, struct task_struct *prev, *next, ...)
        let tp = b.tracepoint("sched_switch").expect("sched_switch exists");
        assert_eq!(tp.params[1].ty, "struct task_struct *");
        assert_eq!(tp.params[2].ty, "struct task_struct *");
        // kfree_skb: first argument is the skb on every kernel
        let tp = b.tracepoint("kfree_skb").expect("kfree_skb exists");
        assert_eq!(tp.params[0].ty, "struct sk_buff *");
        assert!(!b.has_tracepoint("no_such_tracepoint_here"));
        assert!(b.tracepoint("no_such_tracepoint_here").is_none());
    }

    #[test]
    fn functions_and_enums() {
        let Some(b) = btf() else {
            eprintln!("skipped: this kernel exposes no BTF");
            return;
        };
        let f = b.func("tcp_sendmsg").expect("tcp_sendmsg in BTF");
        assert_eq!(f.params.len(), 3);
        assert_eq!(f.params[0].ty, "struct sock *");
        assert_eq!(f.params[1].ty, "struct msghdr *");
        assert!(b.has_enum_value("bpf_attach_type", "BPF_TRACE_FENTRY"));
        assert!(!b.has_enum_value("bpf_attach_type", "BPF_NO_SUCH_THING"));
        assert!(b.has_struct("sk_buff"));
        let skb = b.funcs_taking("struct sk_buff *", 5);
        let names: Vec<&str> = skb.iter().map(|f| f.name.as_str()).collect();
        for f in [
            "ip_rcv",
            "ip_local_deliver",
            "tcp_v4_rcv",
            "__dev_queue_xmit",
            "consume_skb",
        ] {
            assert!(names.contains(&f), "{f} takes an sk_buff");
        }
        assert!(!names.contains(&"tcp_sendmsg"));
        assert!(skb.len() > 1000, "{} functions", skb.len());
        assert!(names.windows(2).all(|w| w[0] < w[1]));
        let (funcs, tps) = b.counts();
        assert!(
            funcs > 10_000 && tps > 500,
            "{funcs} functions, {tps} tracepoints"
        );
    }
}
