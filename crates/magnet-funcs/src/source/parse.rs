//! The C parser's view of a file: prototypes, struct members, typedefs,
//! calls and assignments, read from tree-sitter's syntax tree.

use std::path::{Path, PathBuf};

use tree_sitter::{Node, Parser};

use crate::error::{FuncsError, Result};

use super::{Call, Expr, Facts, FnDef, TypeRef};

pub(super) fn text<'a>(n: Node, src: &'a [u8]) -> &'a str {
    n.utf8_text(src).unwrap_or("")
}

/// Collects the names a type specifier is made of.
pub(super) fn type_names(n: Node, src: &[u8], t: &mut TypeRef) {
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
pub(super) fn declarator_name(mut d: Node, src: &[u8], t: &mut TypeRef) -> Option<String> {
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

pub(super) fn expr(mut n: Node, src: &[u8]) -> Expr {
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
pub(super) fn members(body: Node, src: &[u8], out: &mut Vec<(String, TypeRef)>, depth: usize) {
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

pub(super) fn function(n: Node, src: &[u8], file: u32) -> Option<FnDef> {
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
    let params = parameters(fdecl, src);
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
        scan_body(body, src, &mut def);
    }
    Some(def)
}

/// A function declarator's parameters, named where they have a name;
/// `f(void)` has none.
fn parameters(fdecl: Node, src: &[u8]) -> Vec<(String, TypeRef)> {
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
    params
}

/// What a function's body says for the data flow: its locals, calls,
/// assignments from calls and returns (in any nesting).
fn scan_body(body: Node, src: &[u8], def: &mut FnDef) {
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

pub(super) fn scan_file(
    parser: &mut Parser,
    path: &Path,
    file: u32,
    facts: &mut Facts,
) -> Result<()> {
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
pub(super) fn c_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
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
