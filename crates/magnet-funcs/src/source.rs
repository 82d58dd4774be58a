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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use tree_sitter::{Node, Parser};

use crate::error::{FuncsError, Result};

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

fn text<'a>(n: Node, src: &'a [u8]) -> &'a str {
    n.utf8_text(src).unwrap_or("")
}

/// Collects the names a type specifier is made of.
fn type_names(n: Node, src: &[u8], t: &mut TypeRef) {
    match n.kind() {
        "struct_specifier" | "union_specifier" => {
            if let Some(name) = n.child_by_field_name("name") {
                t.structs.push(text(name, src).to_string());
            }
        }
        "type_identifier" => t.idents.push(text(n, src).to_string()),
        _ => {}
    }
}

/// Walks a declarator down to its name, counting pointers (arrays count as
/// by value). Returns the name and whether it declares a function pointer.
fn declarator_name(mut d: Node, src: &[u8], t: &mut TypeRef) -> Option<String> {
    for _ in 0..32 {
        match d.kind() {
            "identifier" | "field_identifier" | "type_identifier" => {
                return Some(text(d, src).to_string())
            }
            "pointer_declarator" | "abstract_pointer_declarator" => {
                t.ptr = t.ptr.saturating_add(1);
                d = d.child_by_field_name("declarator")?;
            }
            "function_declarator" | "abstract_function_declarator" => {
                t.func_ptr = true;
                d = d.child_by_field_name("declarator")?;
            }
            "array_declarator"
            | "abstract_array_declarator"
            | "init_declarator"
            | "attributed_declarator" => {
                d = d
                    .child_by_field_name("declarator")
                    .or_else(|| d.named_child(0))?;
            }
            "parenthesized_declarator" | "abstract_parenthesized_declarator" => {
                d = d.named_child(0)?;
            }
            _ => return None,
        }
    }
    None
}

fn expr(mut n: Node, src: &[u8]) -> Expr {
    for _ in 0..16 {
        match n.kind() {
            "identifier" => return Expr::Var(text(n, src).to_string()),
            "parenthesized_expression" => match n.named_child(0) {
                Some(c) => n = c,
                None => return Expr::Other,
            },
            "cast_expression" => match n.child_by_field_name("value") {
                Some(c) => n = c,
                None => return Expr::Other,
            },
            "pointer_expression" => match n.child_by_field_name("argument") {
                Some(c) => n = c,
                None => return Expr::Other,
            },
            "call_expression" => {
                return match n.child_by_field_name("function") {
                    Some(f) if f.kind() == "identifier" => Expr::CallRet(text(f, src).to_string()),
                    _ => Expr::Other,
                }
            }
            _ => return Expr::Other,
        }
    }
    Expr::Other
}

/// Members of a struct body; anonymous struct/union members are flattened.
fn members(body: Node, src: &[u8], out: &mut Vec<(String, TypeRef)>, depth: usize) {
    if depth > 8 {
        return;
    }
    let mut c = body.walk();
    for f in body.named_children(&mut c) {
        if f.kind() != "field_declaration" {
            // #ifdef inside a struct body: its fields count too.
            if f.kind().starts_with("preproc_") {
                members(f, src, out, depth + 1);
            }
            continue;
        }
        let Some(ty) = f.child_by_field_name("type") else {
            continue;
        };
        let anonymous = matches!(ty.kind(), "struct_specifier" | "union_specifier")
            && ty.child_by_field_name("name").is_none();
        let mut dc = f.walk();
        let decls: Vec<Node> = f.children_by_field_name("declarator", &mut dc).collect();
        if anonymous && decls.is_empty() {
            if let Some(b) = ty.child_by_field_name("body") {
                members(b, src, out, depth + 1);
            }
            continue;
        }
        for d in decls {
            let mut t = TypeRef::default();
            type_names(ty, src, &mut t);
            let name = declarator_name(d, src, &mut t).unwrap_or_default();
            if anonymous {
                // `struct { … } name;`: its members are held by value.
                if let Some(b) = ty.child_by_field_name("body") {
                    let mut inner = Vec::new();
                    members(b, src, &mut inner, depth + 1);
                    for (n, mut it) in inner {
                        if t.ptr > 0 {
                            it.ptr = it.ptr.max(1);
                        }
                        out.push((n, it));
                    }
                }
                continue;
            }
            out.push((name, t));
        }
    }
}

fn function(n: Node, src: &[u8], file: u32) -> Option<FnDef> {
    let mut ret = TypeRef::default();
    if let Some(ty) = n.child_by_field_name("type") {
        type_names(ty, src, &mut ret);
    }
    // Down the declarator to the function declarator: pointers before it
    // belong to the return type.
    let mut d = n.child_by_field_name("declarator")?;
    let fdecl = loop {
        match d.kind() {
            "pointer_declarator" => {
                ret.ptr = ret.ptr.saturating_add(1);
                d = d.child_by_field_name("declarator")?;
            }
            "attributed_declarator" | "parenthesized_declarator" => d = d.named_child(0)?,
            "function_declarator" => break d,
            _ => return None,
        }
    };
    let name = {
        let mut t = TypeRef::default();
        declarator_name(fdecl.child_by_field_name("declarator")?, src, &mut t)?
    };
    let mut params = Vec::new();
    if let Some(pl) = fdecl.child_by_field_name("parameters") {
        let mut c = pl.walk();
        for p in pl.named_children(&mut c) {
            if p.kind() != "parameter_declaration" {
                continue;
            }
            let mut t = TypeRef::default();
            if let Some(ty) = p.child_by_field_name("type") {
                type_names(ty, src, &mut t);
            }
            let pname = match p.child_by_field_name("declarator") {
                Some(d) => declarator_name(d, src, &mut t).unwrap_or_default(),
                None => String::new(),
            };
            params.push((pname, t));
        }
    }
    // `f(void)` has no parameters.
    if params.len() == 1 && params[0].0.is_empty() && params[0].1.ptr == 0 {
        let only = &params[0].1;
        if only.structs.is_empty() && only.idents.is_empty() {
            params.clear();
        }
    }
    let mut def = FnDef {
        name,
        file,
        ret,
        params,
        locals: Vec::new(),
        calls: Vec::new(),
        assigned: Vec::new(),
        returns: Vec::new(),
    };
    if let Some(body) = n.child_by_field_name("body") {
        let mut stack = vec![body];
        while let Some(x) = stack.pop() {
            match x.kind() {
                "declaration" => {
                    let ty = x.child_by_field_name("type");
                    let mut dc = x.walk();
                    for d in x.children_by_field_name("declarator", &mut dc) {
                        let mut t = TypeRef::default();
                        if let Some(ty) = ty {
                            type_names(ty, src, &mut t);
                        }
                        if let Some(v) = declarator_name(d, src, &mut t) {
                            if d.kind() == "init_declarator" {
                                if let Some(Expr::CallRet(f)) =
                                    d.child_by_field_name("value").map(|e| expr(e, src))
                                {
                                    def.assigned.push((v.clone(), f));
                                }
                            }
                            def.locals.push((v, t));
                        }
                    }
                }
                "call_expression" => {
                    if let Some(f) = x.child_by_field_name("function") {
                        if f.kind() == "identifier" {
                            let mut args = Vec::new();
                            if let Some(al) = x.child_by_field_name("arguments") {
                                let mut c = al.walk();
                                for a in al.named_children(&mut c) {
                                    if a.kind() != "comment" {
                                        args.push(expr(a, src));
                                    }
                                }
                            }
                            def.calls.push(Call {
                                callee: text(f, src).to_string(),
                                args,
                            });
                        }
                    }
                }
                "assignment_expression" => {
                    if let (Some(l), Some(r)) = (
                        x.child_by_field_name("left"),
                        x.child_by_field_name("right"),
                    ) {
                        if let (Expr::Var(v), Expr::CallRet(f)) = (expr(l, src), expr(r, src)) {
                            def.assigned.push((v, f));
                        }
                    }
                }
                "return_statement" => {
                    if let Some(e) = x.named_child(0) {
                        def.returns.push(expr(e, src));
                    }
                }
                _ => {}
            }
            let mut c = x.walk();
            stack.extend(x.named_children(&mut c));
        }
    }
    Some(def)
}

fn scan_file(parser: &mut Parser, path: &Path, file: u32, facts: &mut Facts) -> Result<()> {
    let src = std::fs::read(path).map_err(|e| FuncsError::io(path, e))?;
    let Some(tree) = parser.parse(&src, None) else {
        return Err(FuncsError::Other(format!(
            "{}: the C parser gave up",
            path.display()
        )));
    };
    let root = tree.root_node();
    if root.has_error() {
        facts.parse_errors += 1;
    }
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "preproc_def" => {
                if let (Some(name), Some(v)) = (
                    n.child_by_field_name("name"),
                    n.child_by_field_name("value"),
                ) {
                    facts
                        .macros
                        .push((text(name, &src).to_string(), text(v, &src).to_string()));
                }
                continue;
            }
            "function_definition" => {
                if let Some(d) = function(n, &src, file) {
                    facts.defs.push(d);
                }
                continue;
            }
            "type_definition" => {
                if let Some(ty) = n.child_by_field_name("type") {
                    let mut dc = n.walk();
                    for d in n.children_by_field_name("declarator", &mut dc) {
                        let mut t = TypeRef::default();
                        type_names(ty, &src, &mut t);
                        if let Some(name) = declarator_name(d, &src, &mut t) {
                            // `typedef struct { … } name;`: the body is the
                            // typedef's own structure.
                            if matches!(ty.kind(), "struct_specifier" | "union_specifier")
                                && ty.child_by_field_name("name").is_none()
                            {
                                if let Some(b) = ty.child_by_field_name("body") {
                                    let key = format!("typedef {name}");
                                    let mut m = Vec::new();
                                    members(b, &src, &mut m, 0);
                                    facts.structs.entry(key.clone()).or_default().extend(m);
                                    t.structs.push(key);
                                }
                            }
                            if !t.func_ptr {
                                facts.typedefs.push((name, t));
                            }
                        }
                    }
                }
            }
            "struct_specifier" | "union_specifier" => {
                if let (Some(name), Some(body)) =
                    (n.child_by_field_name("name"), n.child_by_field_name("body"))
                {
                    let mut m = Vec::new();
                    members(body, &src, &mut m, 0);
                    facts
                        .structs
                        .entry(text(name, &src).to_string())
                        .or_default()
                        .extend(m);
                }
            }
            _ => {}
        }
        let mut c = n.walk();
        let kids: Vec<Node> = n.named_children(&mut c).collect();
        stack.extend(kids.into_iter().rev());
    }
    facts.files.push(path.to_path_buf());
    Ok(())
}

/// `.c` and `.h` files under `dir`, sorted.
fn c_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let rd = std::fs::read_dir(dir).map_err(|e| FuncsError::io(dir, e))?;
    let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        let ft = e.file_type().map_err(|er| FuncsError::io(&p, er))?;
        if ft.is_dir() {
            c_files(&p, out)?;
        } else if ft.is_file() && matches!(p.extension().and_then(|x| x.to_str()), Some("c" | "h"))
        {
            out.push(p);
        }
    }
    Ok(())
}

/// The polymorphism of sk_buff found in the facts.
struct Poly {
    aliases: HashSet<String>,
    /// Typedef name -> what it resolves to.
    typedefs: HashMap<String, Use>,
    /// Struct name -> Nested or Pointing.
    structs: HashMap<String, Use>,
}

impl Poly {
    /// How a written type relates to the skb (`None`: not at all). The
    /// spelling decides direct / alias / typedef.
    fn class(&self, t: &TypeRef) -> Option<Use> {
        if t.func_ptr {
            return None;
        }
        let mut best: Option<Use> = None;
        let mut take = |u: Use| best = Some(best.map_or(u, |b| b.min(u)));
        for s in &t.structs {
            if s == "sk_buff" {
                take(Use::Direct);
            } else if let Some(&u) = self.structs.get(s) {
                take(u);
            }
        }
        for i in &t.idents {
            if self.aliases.contains(i) {
                take(Use::Alias);
            } else if let Some(&u) = self.typedefs.get(i) {
                take(if u.is_skb() { Use::Typedef } else { u });
            }
        }
        best
    }
}

/// Tokens of a macro body: identifiers and single punctuation.
fn tokens(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphabetic() || c == b'_' {
            let st = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(&s[st..i]);
        } else {
            if !c.is_ascii_whitespace() && c.is_ascii() {
                out.push(&s[i..i + 1]);
            }
            i += 1;
        }
    }
    out
}

fn polymorphism(f: &Facts) -> Poly {
    let mut p = Poly {
        aliases: HashSet::new(),
        typedefs: HashMap::new(),
        structs: HashMap::new(),
    };
    let macro_toks: Vec<(&str, Vec<&str>)> = f
        .macros
        .iter()
        .map(|(n, v)| (n.as_str(), tokens(v)))
        .collect();
    // Figure 4-9: repeat with every new form until nothing changes. Every
    // class only ever improves (none -> pointing -> nested -> skb), so the
    // fixed point does not depend on the order of `f.structs` (a HashMap).
    loop {
        let mut changed = false;
        for (name, toks) in &macro_toks {
            if p.aliases.contains(*name) {
                continue;
            }
            // The body must be a type: `struct sk_buff`, or an alias or
            // typedef of it, with only qualifiers, `*` and parentheses
            // around (`sizeof(struct sk_buff)` is an expression, not an alias).
            let core: Vec<&str> = toks
                .iter()
                .copied()
                .filter(|t| !matches!(*t, "const" | "volatile" | "*" | "(" | ")"))
                .collect();
            let skb = core == ["struct", "sk_buff"]
                || (core.len() == 1
                    && (p.aliases.contains(core[0])
                        || p.typedefs.get(core[0]).is_some_and(|u| u.is_skb())));
            if skb {
                p.aliases.insert(name.to_string());
                changed = true;
            }
        }
        // A typedef takes its type's class as it is now and is upgraded when
        // that class improves (pointing -> nested -> skb) in a later round:
        // keeping the first class seen made the result depend on the order
        // the structures were visited in (a hash map's), since a typedef read
        // while its structure was still "pointing" stayed so for good.
        for (name, t) in &f.typedefs {
            if p.typedefs.get(name) == Some(&Use::Direct) {
                continue;
            }
            if let Some(u) = p.class(t) {
                let u = match u {
                    Use::Direct | Use::Alias | Use::Typedef => Use::Direct,
                    Use::Pointing if t.ptr > 0 => continue,
                    Use::Nested if t.ptr > 0 => continue,
                    other => other,
                };
                if p.typedefs.get(name).is_none_or(|&old| u < old) {
                    p.typedefs.insert(name.clone(), u);
                    changed = true;
                }
            }
        }
        for (name, members) in &f.structs {
            if name == "sk_buff" || p.structs.get(name) == Some(&Use::Nested) {
                continue;
            }
            let mut nested = false;
            let mut pointing = false;
            for (_, t) in members {
                match p.class(t) {
                    Some(u) if u.is_skb() => nested = true,
                    Some(Use::Nested) if t.ptr == 0 => nested = true,
                    Some(Use::Nested) if t.ptr == 1 => pointing = true,
                    _ => {}
                }
            }
            let new = if nested {
                Some(Use::Nested)
            } else if pointing {
                Some(Use::Pointing)
            } else {
                None
            };
            if let Some(u) = new {
                if p.structs.get(name) != Some(&u) {
                    p.structs.insert(name.clone(), u);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    p
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

/// Direct use from prototypes, then indirect use by data flow.
fn indirect(f: &Facts, poly: &Poly, root: &Path, max_levels: u32) -> Vec<SourceFunc> {
    let n = f.defs.len();
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, d) in f.defs.iter().enumerate() {
        by_name.entry(d.name.as_str()).or_default().push(i);
    }
    let skb = |t: &TypeRef| poly.class(t).is_some_and(|u| u.is_skb());
    // Direct use: the best class among return and parameters.
    let mut how: Vec<Option<(Use, u32)>> = f
        .defs
        .iter()
        .map(|d| {
            std::iter::once(&d.ret)
                .chain(d.params.iter().map(|(_, t)| t))
                .filter_map(|t| poly.class(t))
                .min()
                .map(|u| (u, 0))
        })
        .collect();
    // Slots that carry an skb: declared, or found by flow. `down` slots got
    // theirs from a caller (callee side); `up` ones from a callee.
    let mut carry_param: Vec<Vec<bool>> = f
        .defs
        .iter()
        .map(|d| d.params.iter().map(|(_, t)| skb(t)).collect())
        .collect();
    let mut up_param = carry_param.clone();
    let decl_ret: Vec<bool> = f.defs.iter().map(|d| skb(&d.ret)).collect();
    let mut carry_ret = decl_ret.clone();
    let ret_of = |carry_ret: &Vec<bool>, name: &str| {
        by_name
            .get(name)
            .is_some_and(|v| v.iter().any(|&j| carry_ret[j]))
    };
    for level in 1..=max_levels {
        let mut changed = false;
        // Each round reads the state the previous one left: one round, one
        // call level.
        let (cp, upp, cr) = (carry_param.clone(), up_param.clone(), carry_ret.clone());
        for i in 0..n {
            let d = &f.defs[i];
            // Variables holding an skb in this function.
            let mut vars: HashSet<&str> = d
                .params
                .iter()
                .zip(&cp[i])
                .filter(|(_, &c)| c)
                .map(|((p, _), _)| p.as_str())
                .collect();
            let mut local_skb = false;
            for (v, t) in &d.locals {
                if skb(t) {
                    vars.insert(v.as_str());
                    local_skb = true;
                }
            }
            let mut received = false;
            for (v, callee) in &d.assigned {
                if ret_of(&cr, callee) {
                    vars.insert(v.as_str());
                    received = true;
                }
            }
            let carries = |e: &Expr| match e {
                Expr::Var(v) => vars.contains(v.as_str()),
                Expr::CallRet(c) => ret_of(&cr, c),
                Expr::Other => false,
            };
            let mut handed = false;
            let mut new_down: Vec<(usize, usize)> = Vec::new();
            let mut new_up: Vec<usize> = Vec::new();
            for call in &d.calls {
                let Some(targets) = by_name.get(call.callee.as_str()) else {
                    continue;
                };
                for (ai, a) in call.args.iter().enumerate() {
                    let c = carries(a);
                    for &g in targets {
                        if ai >= cp[g].len() {
                            continue;
                        }
                        if c {
                            handed = true;
                            if !cp[g][ai] {
                                new_down.push((g, ai));
                            }
                        }
                        // Up: our parameter passed into a callee's skb slot.
                        if upp[g][ai] {
                            if let Expr::Var(v) = a {
                                if let Some(pi) = d.params.iter().position(|(p, _)| p == v) {
                                    if !upp[i][pi] {
                                        new_up.push(pi);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            // A return carries when it is an skb kept in a local, or the
            // result of a call declared to return one; not a parameter
            // handed back (that would make every identity helper such as
            // ERR_CAST return skbs to all its callers).
            let ret_now = d.returns.iter().any(|e| match e {
                Expr::Var(v) => d.locals.iter().any(|(l, t)| l == v && skb(t)),
                Expr::CallRet(c) => ret_of(&decl_ret, c),
                Expr::Other => false,
            });
            for (g, ai) in new_down {
                if !carry_param[g][ai] {
                    carry_param[g][ai] = true;
                    changed = true;
                }
                if how[g].is_none() {
                    how[g] = Some((Use::IndirectCallee, level));
                }
            }
            for pi in new_up {
                if !up_param[i][pi] {
                    up_param[i][pi] = true;
                    carry_param[i][pi] = true;
                    changed = true;
                }
            }
            if ret_now && !carry_ret[i] {
                carry_ret[i] = true;
                changed = true;
                if how[i].is_none() {
                    how[i] = Some((Use::IndirectCallee, level));
                }
            }
            let passes_param_on = up_param[i]
                .iter()
                .zip(&d.params)
                .any(|(&u, (_, t))| u && !skb(t));
            let caller = (local_skb && handed) || received || passes_param_on;
            if caller && how[i].is_none() {
                how[i] = Some((Use::IndirectCaller, level));
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    f.defs
        .iter()
        .zip(how)
        .filter_map(|(d, h)| {
            let (how, level) = h?;
            let file = f.files[d.file as usize]
                .strip_prefix(root)
                .unwrap_or(&f.files[d.file as usize])
                .display()
                .to_string();
            Some(SourceFunc {
                name: d.name.clone(),
                file,
                how,
                level,
            })
        })
        .collect()
}
