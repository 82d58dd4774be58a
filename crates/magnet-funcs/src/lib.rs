//! magnet-funcs: which kernel functions handle packets.
//!
//! The selective instrumentation of Li (NCTU 2010) finds packet-processing
//! functions by the type they pass around, `struct sk_buff`: directly, through
//! its aliases, typedefs and the structs that nest or point to it
//! ("polymorphism"), and through callers and callees that pass it on
//! ("indirect use"). This crate does that from the kernel's BTF ([`btf`],
//! [`select`]) intersected with what ftrace can attach to ([`ftrace`]), and from
//! a kernel source tree with a C parser ([`source`]). It only selects functions:
//! each packet's path through them is the packet model's (`magnet_wire::paths`).
//!
//! Libraries never print: the CLI (`magnet funcs`) does.

pub mod btf;
pub mod error;
pub mod ftrace;
pub mod select;
pub mod source;

pub use btf::Btf;
pub use error::{FuncsError, Result};
pub use select::{select, Category, Rules, Selected, Selection};
