//! The kernel side of always-on mode: loads `bpf/summary.bpf.c`, attaches
//! every hook (tp_btf programs, and cgroup_skb programs on the root of the
//! cgroup v2 hierarchy), and reads the maps.
//!
//! Every attachment is a BPF link owned by this process, never pinned: when
//! magnetd exits — cleanly or by SIGKILL — the kernel detaches them all.
//! With `packet_hooks = "sampled"` the two per-packet links are created at
//! the start of each window and destroyed at its end
//! ([`Attached::open_window`], [`Attached::close_window`]).

mod attach;
mod interfaces;
mod plan;
mod reader;
mod receive;
mod stages;

pub use attach::*;
pub use interfaces::*;
pub use plan::*;
pub use reader::*;
pub use receive::{host_method as receive_method, PART as RECEIVE_LATENCY_PART};
pub use stages::{host_method, PART as STACK_LATENCY_PART};
