//! Source mode: the thesis's selective instrumentation over a kernel source
//! tree, with a real C parser (tree-sitter's C grammar).
//!
//! 1. **Polymorphism** (thesis §4.3.1, Figure 4-9), to a fixed point over all
//!    files: *aliases* (`#define X struct sk_buff`, or of another alias),
//!    *customised data types* (typedefs of `sk_buff`, of an alias, or of a
//!    nested structure), *nested structures* (a member that is or points to an
//!    skb, or a nested structure held by value, any depth), and *pointing*
//!    structures (a pointer member to a nested one, one hop).
//! 2. **Direct use**: a function definition with a parameter or return type of
//!    one of these.
//! 3. **Indirect use** (§4.3.2), as data flow of skb values through calls
//!    between the functions defined in the tree, several levels deep:
//!    - *callee*: a function that receives an skb value (a variable declared
//!      with an skb type, a parameter known to carry one, or the result of a
//!      call that returns one) in a parameter it does not declare as an skb
//!      (`void *`, `unsigned long`, …), or whose result is one;
//!    - *caller*: a function that hands an skb value to a call or gets one back
//!      without declaring it in its own prototype (an skb kept in a local), and
//!      one level up, a function whose parameter is passed on into a call's skb
//!      parameter.
//!
//!    Only skb values (direct, alias, typedef) flow; a `struct sock *` does not
//!    make every `void *` it is passed to a packet function.
//!
//! Calls through function pointers and macros that are not expanded are not
//! followed (nothing is preprocessed: both branches of every `#if` are read).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;
use tree_sitter::Parser;

use crate::error::{FuncsError, Result};

mod indirect;
mod parse;
mod poly;

use indirect::indirect;
use parse::{c_files, scan_file};
use poly::polymorphism;

/// A type as written: the names it is made of, and how many pointers.
#[derive(Clone, Debug, Default)]
struct TypeRef {
    /// `struct X` / `union X` names.
    structs: Vec<String>,
    /// Typedef or macro names.
    idents: Vec<String>,
    ptr: u8,
    /// A function pointer (its own parameters do not count).
    func_ptr: bool,
}

#[derive(Clone, Debug)]
enum Expr {
    Var(String),
    CallRet(String),
    Other,
}

#[derive(Clone, Debug)]
struct Call {
    callee: String,
    args: Vec<Expr>,
}

#[derive(Clone, Debug)]
struct FnDef {
    name: String,
    file: u32,
    ret: TypeRef,
    params: Vec<(String, TypeRef)>,
    locals: Vec<(String, TypeRef)>,
    calls: Vec<Call>,
    /// (variable, callee) for `v = f(...)`.
    assigned: Vec<(String, String)>,
    returns: Vec<Expr>,
}

/// What the parser collected from a tree.
#[derive(Default)]
struct Facts {
    files: Vec<PathBuf>,
    macros: Vec<(String, String)>,
    typedefs: Vec<(String, TypeRef)>,
    /// Struct or union name -> members (every definition of the name).
    structs: HashMap<String, Vec<(String, TypeRef)>>,
    defs: Vec<FnDef>,
    parse_errors: usize,
}

/// How a type relates to the skb.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Use {
    /// `struct sk_buff` spelled out.
    Direct,
    /// Through a `#define` alias.
    Alias,
    /// Through a typedef.
    Typedef,
    /// A structure that nests an skb.
    Nested,
    /// A structure that points to a nested one.
    Pointing,
    /// Indirect use: a callee receiving or returning an skb it does not declare.
    IndirectCallee,
    /// Indirect use: a caller handing on or receiving an skb it does not declare.
    IndirectCaller,
}

impl Use {
    pub fn name(self) -> &'static str {
        match self {
            Use::Direct => "direct",
            Use::Alias => "alias",
            Use::Typedef => "typedef",
            Use::Nested => "nested",
            Use::Pointing => "pointing",
            Use::IndirectCallee => "indirect_callee",
            Use::IndirectCaller => "indirect_caller",
        }
    }
    pub const ALL: [Use; 7] = [
        Use::Direct,
        Use::Alias,
        Use::Typedef,
        Use::Nested,
        Use::Pointing,
        Use::IndirectCallee,
        Use::IndirectCaller,
    ];
    fn is_skb(self) -> bool {
        matches!(self, Use::Direct | Use::Alias | Use::Typedef)
    }
}

/// One packet-processing function found in the tree.
#[derive(Clone, Debug, Serialize)]
pub struct SourceFunc {
    pub name: String,
    pub file: String,
    #[serde(rename = "use")]
    pub how: Use,
    /// For indirect use: the round of propagation that found it (1 = next to a
    /// direct-use function).
    pub level: u32,
}

/// The thesis's Table 6-1 for one tree, and the functions behind it.
#[derive(Clone, Debug, Serialize)]
pub struct SourceReport {
    pub root: String,
    pub files_include: usize,
    pub files_net: usize,
    pub aliases: Vec<String>,
    /// Typedefs of sk_buff, of an alias, or of a nested structure.
    pub customized_types: Vec<String>,
    pub nested_structures: usize,
    pub pointing_structures: usize,
    /// Packet-processing function definitions, per kind of use.
    pub by_use: BTreeMap<Use, usize>,
    pub packet_functions: usize,
    /// Function definitions in the tree (a static function defined in two
    /// files counts twice).
    pub total_functions: usize,
    /// Files in which the parser met syntax it could not read (the rest of
    /// each such file is still used).
    pub files_with_parse_errors: usize,
    pub functions: Vec<SourceFunc>,
}

/// Scans `root`'s `include/` and `net/` trees; indirect use is followed at
/// most `max_levels` calls away from a direct-use function. `progress(done, total)` is
/// called after each file.
pub fn scan(
    root: &Path,
    max_levels: u32,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<SourceReport> {
    let mut include = Vec::new();
    let mut net = Vec::new();
    for (sub, out) in [("include", &mut include), ("net", &mut net)] {
        let d = root.join(sub);
        if !d.is_dir() {
            return Err(FuncsError::Other(format!(
                "{}: no such directory: --source wants a kernel tree (with include/ and net/)",
                d.display()
            )));
        }
        c_files(&d, out)?;
    }
    let all: Vec<PathBuf> = include.iter().chain(net.iter()).cloned().collect();
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_c::LANGUAGE.into())
        .map_err(|e| FuncsError::Other(format!("tree-sitter C grammar: {e}")))?;
    let mut facts = Facts::default();
    for (i, p) in all.iter().enumerate() {
        let idx = facts.files.len() as u32;
        scan_file(&mut parser, p, idx, &mut facts)?;
        progress(i + 1, all.len());
    }
    let poly = polymorphism(&facts);
    let functions = indirect(&facts, &poly, root, max_levels);
    let mut by_use: BTreeMap<Use, usize> = Use::ALL.iter().map(|&u| (u, 0)).collect();
    for f in &functions {
        *by_use.entry(f.how).or_default() += 1;
    }
    let mut aliases: Vec<String> = poly.aliases.iter().cloned().collect();
    aliases.sort();
    let mut customized: Vec<String> = poly
        .typedefs
        .iter()
        .filter(|(_, &u)| u != Use::Pointing)
        .map(|(k, _)| k.clone())
        .collect();
    customized.sort();
    Ok(SourceReport {
        root: root.display().to_string(),
        files_include: include.len(),
        files_net: net.len(),
        aliases,
        customized_types: customized,
        nested_structures: poly.structs.values().filter(|&&u| u == Use::Nested).count(),
        pointing_structures: poly
            .structs
            .values()
            .filter(|&&u| u == Use::Pointing)
            .count(),
        by_use,
        packet_functions: functions.len(),
        total_functions: facts.defs.len(),
        files_with_parse_errors: facts.parse_errors,
        functions,
    })
}
