//! magnet-funcs: which kernel functions handle packets, and each packet's path.
//!
//! The selective instrumentation of Li (NCTU 2010) finds packet-processing
//! functions by the type they pass around, `struct sk_buff`: directly, through
//! its aliases, typedefs and the structs that nest or point to it
//! ("polymorphism"), and through callers and callees that pass it on
//! ("indirect use"). This crate does that from the kernel's BTF ([`btf`],
//! [`select`]) intersected with what ftrace can attach to ([`ftrace`]), and from
//! a kernel source tree with a C parser ([`source`]). [`packets`] follows each
//! packet of a trace through the layers (and functions) it went through.
//!
//! Libraries never print: the CLI (`magnet funcs`, `magnet packets`) does.

pub mod btf;
pub mod error;
pub mod ftrace;
pub mod packets;
pub mod select;
pub mod source;

pub use btf::Btf;
pub use error::{FuncsError, Result};
pub use select::{select, Category, Rules, Selected, Selection};
