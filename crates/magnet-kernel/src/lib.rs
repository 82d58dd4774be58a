//! What the running kernel offers to BPF programs, found *before* loading them,
//! and the helpers that attach function probes the best way the kernel allows.
//!
//! Kernels differ in exactly the places magnet needs: Debian 12's 6.1 has
//! kprobes and fentry but no kprobe-multi, no netfilter BPF links and no
//! `sock_send_length` tracepoint; Debian's 6.12 has all of those but not the
//! `tcp_sendmsg_locked` tracepoint; a 6.18 built without `CONFIG_KPROBES` has
//! every tracepoint and no function probes at all. Tracepoint argument lists
//! change too (`tcp_retransmit_skb` has 2 arguments before 6.13, 3 after).
//! Callers ask this crate and choose their hooks; nothing here prints.
//!
//! # Three parts
//!
//! - [`KernelBtf`]: the kernel's own type information (`/sys/kernel/btf/vmlinux`).
//!   Whether a tracepoint exists and its arguments ([`KernelBtf::tracepoint`],
//!   from the `btf_trace_<name>` prototype the kernel compiles for every
//!   tracepoint), a function's parameters ([`KernelBtf::func`]), whether a kfunc
//!   or an enum value exists, and [`KernelBtf::funcs_taking`] (the functions with a
//!   given type, e.g. `struct sk_buff *`, among their first N parameters). Name
//!   look-ups are indexed once (one pass over
//!   the ~130,000 types), so asking about a thousand functions is cheap.
//! - [`Features`]: what the kernel lets BPF attach to, each found by *doing* it
//!   on the smallest scale (a two-instruction program loaded and attached to one
//!   function, then closed): [`Features::kprobe`], [`Features::kprobe_multi`],
//!   [`Features::fentry`], [`Features::netfilter_link`], plus [`Features::tcx`]
//!   from BTF. Each is a [`Support`]: yes, or no with the reason (errno and
//!   the kernel option to look for). [`Features::detect`] takes a few
//!   milliseconds and leaves nothing behind (no links, no kprobe events).
//! - [`attach`]: function probes. [`attach::FuncHook::best`] picks fentry/fexit →
//!   kprobe-multi → kprobe/kretprobe from [`Features`];
//!   [`attach::attach_kprobes`] attaches one program to many functions
//!   (one kprobe-multi link when the kernel has it, else one kprobe per
//!   function, collecting per-function failures instead of stopping);
//!   [`attach::set_fentry_target`] points an fentry/fexit program at its function
//!   before load; [`attach::traceable_functions`] reads
//!   `available_filter_functions` (the functions a kprobe or fentry can reach).
//! - [`plan`]: the one hook planner of every BPF user: parts, their candidate
//!   hooks best first, the choice per kernel (denied, missing, refused), the
//!   left-out and fallback lines and the `--check` table.
//!
//! # Example
//!
//! ```no_run
//! use magnet_kernel::{Features, KernelBtf, attach::FuncHook};
//!
//! let btf = KernelBtf::load().expect("kernel BTF");
//! // Tracepoint arguments: the `void *` context is left out.
//! if let Some(tp) = btf.tracepoint("tcp_retransmit_skb") {
//!     println!("tcp_retransmit_skb has {} arguments", tp.params.len());
//! }
//! let f = Features::detect(&btf);
//! match FuncHook::best(&f, false) {
//!     Some(h) => println!("function entry probes: {}", h.name()),
//!     None => println!("no function probes: {}", f.why_no_func_probes()),
//! }
//! // The functions that take a struct sk_buff * (what `magnet funcs` lists):
//! let skb_funcs: Vec<_> = btf
//!     .funcs()
//!     .filter(|f| f.params.iter().take(5).any(|p| p.ty == "struct sk_buff *"))
//!     .collect();
//! println!("{} functions take an sk_buff", skb_funcs.len());
//! ```

pub mod attach;
mod btf;
pub mod cgroup;
pub mod cost;
pub mod deny;
mod features;
pub mod plan;
pub mod preempt;
mod sys;
pub mod tracefs;

pub use btf::{FuncInfo, KernelBtf, Param};
pub use features::{has_map_type, prog_may_call, Features, Support};

/// Errors of this crate: each names what was being read or tried.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read the kernel's BTF ({path}): {reason}; magnet needs a kernel built with CONFIG_DEBUG_INFO_BTF=y")]
    NoBtf { path: String, reason: String },
    #[error("{what}: {reason}")]
    Attach { what: String, reason: String },
    #[error("{path}: {reason}")]
    Read { path: String, reason: String },
}

pub type Result<T> = std::result::Result<T, Error>;
