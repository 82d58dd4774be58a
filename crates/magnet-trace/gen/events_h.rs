//! A strict reader of `bpf/include/magnet/events.h`, the one definition of
//! magnet's records, and the Rust it generates (kind ids, the catalog, typed
//! zero-copy views). Used by `build.rs` (the generated code) and by the tests
//! (`tests/events_h.rs`, which compare it with what clang makes of the header).
//!
//! It understands the header's own restricted style and nothing else: include
//! guards, `#define NAME NUMBER`, one `enum` of kinds, and `struct`s of fixed-size
//! integers, byte arrays and other structs, laid out by hand with explicit
//! padding. Anything else is an error naming the line. Annotations in the
//! comment that follows a declaration on its line tell what C cannot:
//!
//! - on a kind (`MG_X = N,`): `@struct mg_x` (its record), `@layer NAME`,
//!   `@hook "TEXT"` (the catalog's hook; `\*` stands for `*`), and
//!   `@rename field=name,...` (the catalog's field names for this kind);
//!   an entry without `@struct` is a plain bound (`MG_KIND_MAX`).
//! - on a field: `@hex` (a u64 shown in hex), `@addr` (`__u8 x[16]`: an IPv6
//!   address), `@tcp_state` (a u8 TCP state), `@names TABLE` (a kernel enum
//!   named by the header's table), and on a trailing struct member `@optional`
//!   (not part of the record's base size) and `@skip a,b` (fields of that struct
//!   left out of this record's catalog entry).
//!
//! Fields named `_pad*` are padding. `char x[16]` is a task name.

#![allow(dead_code)] // build.rs and the tests use different parts

use std::fmt::Write as _;

#[derive(Debug, Clone)]
pub struct Model {
    pub defines: Vec<Define>,
    pub kinds: Vec<Kind>,
    pub structs: Vec<Struct>,
}

#[derive(Debug, Clone)]
pub struct Define {
    pub name: String,
    pub value: u64,
    pub doc: String,
}

#[derive(Debug, Clone)]
pub struct Kind {
    /// The C name (`MG_APP_SEND`).
    pub cname: String,
    pub id: u64,
    pub doc: String,
    /// None for plain bounds (`MG_KIND_MAX`).
    pub record: Option<String>,
    pub layer: String,
    pub hook: String,
    pub renames: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    U8,
    U16,
    U32,
    U64,
    S32,
    S64,
    Char,
}

impl Scalar {
    pub fn size(self) -> usize {
        match self {
            Scalar::U8 | Scalar::Char => 1,
            Scalar::U16 => 2,
            Scalar::U32 | Scalar::S32 => 4,
            Scalar::U64 | Scalar::S64 => 8,
        }
    }
    fn rust(self) -> &'static str {
        match self {
            Scalar::U8 | Scalar::Char => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
            Scalar::S32 => "i32",
            Scalar::S64 => "i64",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CType {
    Scalar(Scalar),
    Struct(String),
}

#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub ty: CType,
    /// Array length, for `x[N]`.
    pub len: Option<usize>,
    pub offset: usize,
    pub size: usize,
    pub doc: String,
    pub hex: bool,
    pub addr: bool,
    pub tcp_state: bool,
    pub names: Option<String>,
    pub optional: bool,
    pub skip: Vec<String>,
}

impl Field {
    pub fn is_pad(&self) -> bool {
        self.name.starts_with("_pad")
    }
}

#[derive(Debug, Clone)]
pub struct Struct {
    pub name: String,
    pub fields: Vec<Field>,
    pub size: usize,
    pub align: usize,
}

impl Model {
    pub fn strukt(&self, name: &str) -> Option<&Struct> {
        self.structs.iter().find(|s| s.name == name)
    }
    pub fn records(&self) -> impl Iterator<Item = (&Kind, &Struct)> {
        self.kinds.iter().filter_map(move |k| {
            let s = self.strukt(k.record.as_deref()?)?;
            Some((k, s))
        })
    }
}

// ---------------------------------------------------------------- tokens

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Num(u64),
    Punct(char),
    /// A comment's text, and whether it started on the line of the token before it.
    Comment(String, bool),
    /// A preprocessor line, without the `#`.
    Directive(String),
}

fn tokenize(src: &str) -> Result<Vec<(Tok, usize)>, String> {
    let b = src.as_bytes();
    let mut out: Vec<(Tok, usize)> = Vec::new();
    let mut i = 0;
    let mut line = 1;
    let mut last_line = 0; // line of the last non-comment token
    let mut at_line_start = true;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
            at_line_start = true;
            continue;
        }
        if c == b' ' || c == b'\t' || c == b'\r' {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let start = line;
            let end = src[i + 2..]
                .find("*/")
                .ok_or_else(|| format!("line {line}: comment never closed"))?;
            let text = &src[i + 2..i + 2 + end];
            line += text.matches('\n').count();
            i += 2 + end + 2;
            out.push((Tok::Comment(text.to_string(), start == last_line), start));
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            return Err(format!(
                "line {line}: // comments are not part of events.h's style"
            ));
        }
        if c == b'#' && at_line_start {
            let end = src[i..].find('\n').map(|e| i + e).unwrap_or(b.len());
            let mut text = &src[i + 1..end];
            let mut trailing = None;
            if let Some(p) = text.find("/*") {
                trailing = Some(p);
                text = &text[..p];
            }
            out.push((Tok::Directive(text.trim().to_string()), line));
            last_line = line;
            i = match trailing {
                Some(p) => i + 1 + p,
                None => end,
            };
            at_line_start = false;
            continue;
        }
        at_line_start = false;
        if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(src[s..i].to_string()), line));
            last_line = line;
            continue;
        }
        if c.is_ascii_digit() {
            let s = i;
            while i < b.len() && b[i].is_ascii_alphanumeric() {
                i += 1;
            }
            let n = parse_num(&src[s..i]).ok_or_else(|| {
                format!(
                    "line {line}: '{}' is not a number events.h uses",
                    &src[s..i]
                )
            })?;
            out.push((Tok::Num(n), line));
            last_line = line;
            continue;
        }
        if b"{};,=[]".contains(&c) {
            out.push((Tok::Punct(c as char), line));
            last_line = line;
            i += 1;
            continue;
        }
        return Err(format!("line {line}: unexpected character '{}'", c as char));
    }
    Ok(out)
}

fn parse_num(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

// ---------------------------------------------------------------- annotations

#[derive(Default)]
struct Tags {
    doc: String,
    strukt: Option<String>,
    layer: Option<String>,
    hook: Option<String>,
    rename: Vec<(String, String)>,
    hex: bool,
    addr: bool,
    tcp_state: bool,
    names: Option<String>,
    optional: bool,
    skip: Vec<String>,
}

/// Splits a comment into its prose (continuation stars removed) and its tags.
fn tags(comment: &str, line: usize) -> Result<Tags, String> {
    let mut t = Tags::default();
    let text: Vec<&str> = comment
        .lines()
        .map(|l| {
            let l = l.trim();
            l.strip_prefix("* ").or(l.strip_prefix('*')).unwrap_or(l)
        })
        .collect();
    let text = text.join(" ");
    let mut doc = String::new();
    let mut rest = text.as_str();
    while let Some(p) = rest.find('@') {
        doc.push_str(&rest[..p]);
        let after = &rest[p + 1..];
        let name_end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..name_end];
        let mut after = after[name_end..].trim_start();
        let mut word = || -> Result<String, String> {
            if let Some(q) = after.strip_prefix('"') {
                let end = q
                    .find('"')
                    .ok_or_else(|| format!("line {line}: @{name}: unclosed quote"))?;
                let v = q[..end].replace("\\*", "*");
                after = &q[end + 1..];
                Ok(v)
            } else {
                let end = after.find(char::is_whitespace).unwrap_or(after.len());
                let v = after[..end].to_string();
                if v.is_empty() {
                    return Err(format!("line {line}: @{name} needs a value"));
                }
                after = &after[end..];
                Ok(v)
            }
        };
        match name {
            "struct" => t.strukt = Some(word()?),
            "layer" => t.layer = Some(word()?),
            "hook" => t.hook = Some(word()?),
            "names" => t.names = Some(word()?),
            "rename" => {
                for pair in word()?.split(',') {
                    let (a, b) = pair
                        .split_once('=')
                        .ok_or_else(|| format!("line {line}: @rename wants field=name"))?;
                    t.rename.push((a.to_string(), b.to_string()));
                }
            }
            "skip" => t.skip = word()?.split(',').map(String::from).collect(),
            "hex" => t.hex = true,
            "addr" => t.addr = true,
            "tcp_state" => t.tcp_state = true,
            "optional" => t.optional = true,
            other => return Err(format!("line {line}: unknown annotation @{other}")),
        }
        rest = after;
    }
    doc.push_str(rest);
    t.doc = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    Ok(t)
}

// ---------------------------------------------------------------- parser

struct Parser {
    toks: Vec<(Tok, usize)>,
    at: usize,
}

impl Parser {
    fn line(&self) -> usize {
        self.toks
            .get(self.at)
            .or(self.toks.last())
            .map(|t| t.1)
            .unwrap_or(0)
    }
    /// The next token that is not a comment.
    fn next(&mut self) -> Result<Tok, String> {
        while let Some((t, _)) = self.toks.get(self.at) {
            self.at += 1;
            if !matches!(t, Tok::Comment(..)) {
                return Ok(t.clone());
            }
        }
        Err("unexpected end of file".into())
    }
    fn peek(&self) -> Option<&Tok> {
        self.toks[self.at..]
            .iter()
            .map(|t| &t.0)
            .find(|t| !matches!(t, Tok::Comment(..)))
    }
    /// A comment right here that started on the previous token's line.
    fn trailing(&mut self) -> Result<Tags, String> {
        let mut t = Tags::default();
        if let Some((Tok::Comment(text, same_line), line)) = self.toks.get(self.at) {
            if *same_line {
                t = tags(text, *line)?;
                self.at += 1;
            }
        }
        Ok(t)
    }
    fn ident(&mut self) -> Result<String, String> {
        match self.next()? {
            Tok::Ident(s) => Ok(s),
            t => Err(format!(
                "line {}: expected a name, found {t:?}",
                self.line()
            )),
        }
    }
    fn punct(&mut self, c: char) -> Result<(), String> {
        match self.next()? {
            Tok::Punct(p) if p == c => Ok(()),
            t => Err(format!("line {}: expected '{c}', found {t:?}", self.line())),
        }
    }
}

pub fn parse(src: &str) -> Result<Model, String> {
    let mut p = Parser {
        toks: tokenize(src)?,
        at: 0,
    };
    let mut m = Model {
        defines: Vec::new(),
        kinds: Vec::new(),
        structs: Vec::new(),
    };
    while p.peek().is_some() {
        let line = p.line();
        match p.next()? {
            Tok::Directive(d) => {
                let mut w = d.split_whitespace();
                match (w.next(), w.next(), w.next(), w.next()) {
                    (Some("ifndef"), Some(_), None, None)
                    | (Some("define"), Some(_), None, None)
                    | (Some("endif"), None, None, None) => {}
                    (Some("define"), Some(name), Some(v), None) => {
                        let value = parse_num(v).ok_or_else(|| {
                            format!("line {line}: #define {name}: '{v}' is not a number")
                        })?;
                        let doc = p.trailing()?.doc;
                        m.defines.push(Define {
                            name: name.to_string(),
                            value,
                            doc,
                        });
                    }
                    _ => return Err(format!("line {line}: directive '#{d}' not understood")),
                }
            }
            Tok::Ident(k) if k == "enum" => parse_enum(&mut p, &mut m)?,
            Tok::Ident(k) if k == "struct" => {
                let s = parse_struct(&mut p, &m)?;
                m.structs.push(s);
            }
            t => return Err(format!("line {line}: unexpected {t:?} at top level")),
        }
    }
    check(&m)?;
    Ok(m)
}

fn parse_enum(p: &mut Parser, m: &mut Model) -> Result<(), String> {
    let name = p.ident()?;
    if name != "mg_kind" || !m.kinds.is_empty() {
        return Err(format!(
            "line {}: only one enum, mg_kind, is understood",
            p.line()
        ));
    }
    p.punct('{')?;
    loop {
        if p.peek() == Some(&Tok::Punct('}')) {
            p.next()?;
            break;
        }
        let line = p.line();
        let cname = p.ident()?;
        p.punct('=')?;
        let id = match p.next()? {
            Tok::Num(n) => n,
            t => {
                return Err(format!(
                    "line {line}: {cname}: expected a number, found {t:?}"
                ))
            }
        };
        p.punct(',')?;
        let t = p.trailing()?;
        if t.strukt.is_some() && (t.layer.is_none() || t.hook.is_none()) {
            return Err(format!(
                "line {line}: {cname}: a kind needs @struct, @layer and @hook"
            ));
        }
        if t.strukt.is_none() && (t.layer.is_some() || t.hook.is_some()) {
            return Err(format!(
                "line {line}: {cname}: @layer/@hook without @struct"
            ));
        }
        m.kinds.push(Kind {
            cname,
            id,
            doc: t.doc,
            record: t.strukt,
            layer: t.layer.unwrap_or_default(),
            hook: t.hook.unwrap_or_default(),
            renames: t.rename,
        });
    }
    p.punct(';')
}

fn parse_struct(p: &mut Parser, m: &Model) -> Result<Struct, String> {
    let name = p.ident()?;
    p.punct('{')?;
    let mut fields: Vec<Field> = Vec::new();
    let mut at = 0usize;
    let mut align = 1usize;
    loop {
        if p.peek() == Some(&Tok::Punct('}')) {
            p.next()?;
            break;
        }
        let line = p.line();
        let first = p.ident()?;
        let (ty, fsize, falign) = match first.as_str() {
            "__u8" => (CType::Scalar(Scalar::U8), 1, 1),
            "char" => (CType::Scalar(Scalar::Char), 1, 1),
            "__u16" => (CType::Scalar(Scalar::U16), 2, 2),
            "__u32" => (CType::Scalar(Scalar::U32), 4, 4),
            "__s32" => (CType::Scalar(Scalar::S32), 4, 4),
            "__u64" => (CType::Scalar(Scalar::U64), 8, 8),
            "__s64" => (CType::Scalar(Scalar::S64), 8, 8),
            "struct" => {
                let s = p.ident()?;
                let inner = m.strukt(&s).ok_or_else(|| {
                    format!("line {line}: struct {s} is used before it is defined")
                })?;
                (CType::Struct(s), inner.size, inner.align)
            }
            other => return Err(format!("line {line}: type '{other}' not understood")),
        };
        let fname = p.ident()?;
        let mut len = None;
        if p.peek() == Some(&Tok::Punct('[')) {
            p.next()?;
            let n = match p.next()? {
                Tok::Num(n) => n,
                Tok::Ident(c) => m
                    .kinds
                    .iter()
                    .find(|k| k.cname == c)
                    .map(|k| k.id)
                    .or_else(|| m.defines.iter().find(|d| d.name == c).map(|d| d.value))
                    .ok_or_else(|| format!("line {line}: unknown array length {c}"))?,
                t => return Err(format!("line {line}: array length {t:?} not understood")),
            };
            p.punct(']')?;
            len = Some(n as usize);
        }
        p.punct(';')?;
        let t = p.trailing()?;
        if at % falign != 0 {
            return Err(format!(
                "line {line}: {name}.{fname} at offset {at} needs implicit padding to {falign}: pad by hand"
            ));
        }
        let size = fsize * len.unwrap_or(1);
        align = align.max(falign);
        fields.push(Field {
            name: fname,
            ty,
            len,
            offset: at,
            size,
            doc: t.doc,
            hex: t.hex,
            addr: t.addr,
            tcp_state: t.tcp_state,
            names: t.names,
            optional: t.optional,
            skip: t.skip,
        });
        at += size;
    }
    p.punct(';')?;
    if at % align != 0 {
        return Err(format!(
            "struct {name}: size {at} is not a multiple of its alignment {align}: pad by hand"
        ));
    }
    Ok(Struct {
        name,
        fields,
        size: at,
        align,
    })
}

/// What the generator relies on beyond C's own rules.
fn check(m: &Model) -> Result<(), String> {
    let hdr = m.strukt("mg_hdr").ok_or("no struct mg_hdr")?;
    for (k, s) in m.records() {
        let first = s.fields.first();
        if first.map(|f| (&f.name, &f.ty))
            != Some((&"hdr".to_string(), &CType::Struct("mg_hdr".into())))
        {
            return Err(format!(
                "struct {}: must start with struct mg_hdr hdr",
                s.name
            ));
        }
        for (i, f) in s.fields.iter().enumerate() {
            if f.optional && i + 1 != s.fields.len() {
                return Err(format!(
                    "{}.{}: only the last member can be @optional",
                    s.name, f.name
                ));
            }
            let _ = catalog_type(f).map_err(|e| format!("{}: {e}", k.cname))?;
        }
        for (from, _) in &k.renames {
            if !catalog_fields(m, s, hdr.size)
                .iter()
                .any(|(n, _)| n == from)
            {
                return Err(format!("{}: @rename of unknown field {from}", k.cname));
            }
        }
    }
    for k in &m.kinds {
        if let Some(r) = &k.record {
            if m.strukt(r).is_none() {
                return Err(format!("{}: @struct {r} is not defined", k.cname));
            }
        }
        if m.kinds.iter().filter(|o| o.id == k.id).count() > 1 {
            return Err(format!("{}: kind number {} used twice", k.cname, k.id));
        }
    }
    Ok(())
}

/// The catalog type name (magnet_trace::FieldType variant) of a field, or None
/// for padding and nested structs.
fn catalog_type(f: &Field) -> Result<Option<&'static str>, String> {
    if f.is_pad() {
        return Ok(None);
    }
    Ok(Some(match (&f.ty, f.len) {
        (CType::Struct(_), None) => return Ok(None),
        (CType::Scalar(Scalar::Char), Some(16)) => "Comm",
        (CType::Scalar(Scalar::U8), Some(16)) if f.addr => "Addr",
        (CType::Scalar(Scalar::U8), None) if f.tcp_state => "TcpState",
        (CType::Scalar(Scalar::U8), None) => "U8",
        (CType::Scalar(Scalar::U16), None) => "U16",
        (CType::Scalar(Scalar::U32), None) => "U32",
        (CType::Scalar(Scalar::U64), None) if f.hex => "Hex64",
        (CType::Scalar(Scalar::U64), None) => "U64",
        (CType::Scalar(Scalar::S32), None) => "I32",
        (CType::Scalar(Scalar::S64), None) => "I64",
        _ => {
            return Err(format!(
                "field {} has no catalog type (arrays: char[16] task names or __u8[16] @addr)",
                f.name
            ))
        }
    }))
}

/// A record's fields after the header, nested structs flattened, padding left
/// out: (name, field) with the field's offset made absolute.
pub fn catalog_fields(m: &Model, s: &Struct, skip_below: usize) -> Vec<(String, Field)> {
    let mut out = Vec::new();
    flatten(m, s, 0, &[], &mut out);
    out.retain(|(_, f)| f.offset >= skip_below);
    out
}

fn flatten(m: &Model, s: &Struct, base: usize, skip: &[String], out: &mut Vec<(String, Field)>) {
    for f in &s.fields {
        if skip.contains(&f.name) {
            continue;
        }
        match &f.ty {
            CType::Struct(inner) => {
                let inner = m.strukt(inner).expect("checked");
                flatten(m, inner, base + f.offset, &f.skip, out);
            }
            _ if f.is_pad() => {}
            _ => {
                let mut g = f.clone();
                g.offset += base;
                out.push((f.name.clone(), g));
            }
        }
    }
}

/// A record's size without its optional trailing part.
pub fn base_size(s: &Struct) -> usize {
    match s.fields.last() {
        Some(f) if f.optional => f.offset,
        _ => s.size,
    }
}

// ---------------------------------------------------------------- Rust

/// `MG_APP_SEND` -> `APP_SEND`, `MG_KIND_MAX` -> `MAX`.
pub fn kind_const(cname: &str) -> String {
    let s = cname.strip_prefix("MG_").unwrap_or(cname);
    s.strip_prefix("KIND_").unwrap_or(s).to_string()
}

/// `MG_APP_SEND` -> `app_send`: the catalog's kind name.
pub fn kind_name(cname: &str) -> String {
    cname.strip_prefix("MG_").unwrap_or(cname).to_lowercase()
}

/// `mg_tcp_snap` -> `TcpSnap`.
pub fn view_name(cstruct: &str) -> String {
    cstruct
        .strip_prefix("mg_")
        .unwrap_or(cstruct)
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// `MG_F_TCP_STATE` -> `FLAG_TCP_STATE`, `MG_SNAPLEN_MAX` -> `SNAPLEN_MAX`.
pub fn define_const(name: &str) -> String {
    let s = name.strip_prefix("MG_").unwrap_or(name);
    match s.strip_prefix("F_") {
        Some(f) => format!("FLAG_{f}"),
        None => s.to_string(),
    }
}

fn getter(name: &str) -> String {
    match name {
        "type" | "ref" | "fn" | "mod" | "move" | "match" | "loop" | "use" => format!("{name}_"),
        _ => name.to_string(),
    }
}

fn doc(out: &mut String, indent: &str, text: &str) {
    if !text.is_empty() {
        let _ = writeln!(out, "{indent}/// {}", text);
    }
}

/// The Rust for a model: included by `magnet_trace::events`.
pub fn rust(m: &Model, source: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "// @generated from {source} by magnet-trace/build.rs (gen/events_h.rs). Do not edit.\n"
    );
    // kinds
    o.push_str(
        "/// Record kinds (numbers are part of the format; see events.h).\npub mod kind {\n",
    );
    for k in &m.kinds {
        doc(&mut o, "    ", &k.doc);
        let _ = writeln!(o, "    pub const {}: u16 = {};", kind_const(&k.cname), k.id);
    }
    o.push_str("    /// Every entry of `enum mg_kind`: (C name, number).\n");
    o.push_str("    pub const ALL: &[(&str, u16)] = &[\n");
    for k in &m.kinds {
        let _ = writeln!(o, "        ({:?}, {}),", k.cname, k.id);
    }
    o.push_str("    ];\n    /// Each record kind's C struct: (C kind name, C struct name).\n");
    o.push_str("    pub const RECORDS: &[(&str, &str)] = &[\n");
    for (k, s) in m.records() {
        let _ = writeln!(o, "        ({:?}, {:?}),", k.cname, s.name);
    }
    o.push_str("    ];\n}\n\n");
    o.push_str("/// Every `#define NAME NUMBER` of events.h: (C name, value).\npub const DEFINES: &[(&str, u64)] = &[\n");
    for d in &m.defines {
        let _ = writeln!(o, "    ({:?}, {}),", d.name, d.value);
    }
    o.push_str("];\n\n");
    for d in &m.defines {
        doc(&mut o, "", &d.doc);
        let _ = writeln!(o, "pub const {}: u32 = {};", define_const(&d.name), d.value);
    }
    // layouts, for the oracle test
    o.push_str(
        "\n/// Every struct of events.h: (C name, size, [(field, offset, size)]), padding included.\n",
    );
    o.push_str("pub const LAYOUTS: &[(&str, usize, &[(&str, usize, usize)])] = &[\n");
    for s in &m.structs {
        let _ = write!(o, "    ({:?}, {}, &[", s.name, s.size);
        for f in &s.fields {
            let _ = write!(o, "({:?}, {}, {}), ", f.name, f.offset, f.size);
        }
        o.push_str("]),\n");
    }
    o.push_str("];\n\n");

    // catalog
    let hdr = m.strukt("mg_hdr").expect("checked");
    let _ = writeln!(o, "/// Size of the common header at the start of every record.\npub const HEADER_LEN: usize = {};\n", hdr.size);
    o.push_str("/// The header fields every record starts with.\npub fn header_fields() -> Vec<crate::catalog::FieldDesc> {\n    use crate::catalog::{FieldDesc, FieldType::*};\n    vec![\n");
    for (name, f) in catalog_fields(m, hdr, 0) {
        field_desc(&mut o, &name, &f);
    }
    o.push_str("    ]\n}\n\n");
    o.push_str("/// Every record kind, as events.h defines it.\npub fn kinds() -> Vec<crate::catalog::KindDesc> {\n    use crate::catalog::{FieldDesc, FieldType::*, KindDesc};\n    vec![\n");
    for (k, s) in m.records() {
        let _ = writeln!(
            o,
            "        KindDesc {{ id: {}, name: {:?}.into(), layer: {:?}.into(), hook: {:?}.into(), size: {}, fields: vec![",
            k.id,
            kind_name(&k.cname),
            k.layer,
            k.hook,
            base_size(s)
        );
        for (name, f) in catalog_fields(m, s, hdr.size) {
            let name = k
                .renames
                .iter()
                .find(|(a, _)| *a == name)
                .map(|(_, b)| b.clone())
                .unwrap_or(name);
            field_desc(&mut o, &name, &f);
        }
        o.push_str("        ] },\n");
    }
    o.push_str("    ]\n}\n\n");

    // views
    for s in &m.structs {
        view(&mut o, m, s);
    }
    o
}

fn field_desc(o: &mut String, name: &str, f: &Field) {
    let ty = catalog_type(f).expect("checked").expect("not padding");
    let names = match &f.names {
        Some(n) => format!("Some({n:?}.into())"),
        None => "None".into(),
    };
    let _ = writeln!(
        o,
        "            FieldDesc {{ name: {name:?}.into(), offset: {}, ty: {ty}, names: {names} }},",
        f.offset
    );
}

fn view(o: &mut String, m: &Model, s: &Struct) {
    let v = view_name(&s.name);
    let kinds: Vec<String> = m
        .kinds
        .iter()
        .filter(|k| k.record.as_deref() == Some(&s.name))
        .map(|k| format!("`{}`", kind_name(&k.cname)))
        .collect();
    let _ = writeln!(
        o,
        "/// A zero-copy view of `struct {}`{}: getters read, setters write, little-endian.\n/// `new_checked` makes sure the bytes hold the struct{}; after it no accessor panics.",
        s.name,
        if kinds.is_empty() { String::new() } else { format!(" (records {})", kinds.join(", ")) },
        if base_size(s) != s.size { " without its optional part" } else { "" }
    );
    let _ = writeln!(
        o,
        "#[derive(Clone, Copy, Debug)]\npub struct {v}<T> {{\n    buf: T,\n}}\n"
    );
    let _ = writeln!(o, "impl<T: AsRef<[u8]>> {v}<T> {{");
    let _ = writeln!(
        o,
        "    /// `sizeof(struct {})`.\n    pub const SIZE: usize = {};",
        s.name, s.size
    );
    let _ = writeln!(o, "    /// Bytes every record of this layout has (optional parts excluded).\n    pub const LEN: usize = {};", base_size(s));
    let _ = writeln!(o, "    /// The view, or None when `buf` is shorter than `LEN`.\n    #[inline]\n    pub fn new_checked(buf: T) -> Option<Self> {{\n        if buf.as_ref().len() >= Self::LEN {{ Some({v} {{ buf }}) }} else {{ None }}\n    }}");
    let _ = writeln!(o, "    /// The bytes behind the view.\n    #[inline]\n    pub fn into_inner(self) -> T {{\n        self.buf\n    }}");
    let _ = writeln!(o, "    /// The bytes behind the view.\n    #[inline]\n    pub fn bytes(&self) -> &[u8] {{\n        self.buf.as_ref()\n    }}");
    for f in &s.fields {
        if f.is_pad() {
            continue;
        }
        let g = getter(&f.name);
        let (a, b) = (f.offset, f.offset + f.size);
        doc(o, "    ", &f.doc);
        match (&f.ty, f.len) {
            (CType::Scalar(sc), None) => {
                let t = sc.rust();
                let _ = writeln!(o, "    #[inline]\n    pub fn {g}(&self) -> {t} {{\n        {t}::from_le_bytes(self.buf.as_ref()[{a}..{b}].try_into().unwrap())\n    }}");
            }
            (CType::Scalar(sc), Some(n)) if sc.size() == 1 => {
                let _ = writeln!(o, "    #[inline]\n    pub fn {g}(&self) -> [u8; {n}] {{\n        self.buf.as_ref()[{a}..{b}].try_into().unwrap()\n    }}");
            }
            (CType::Scalar(sc), Some(n)) => {
                let t = sc.rust();
                let w = sc.size();
                let _ = writeln!(o, "    /// Element `i` (< {n}).\n    #[inline]\n    pub fn {g}(&self, i: usize) -> {t} {{\n        let at = {a} + i * {w};\n        {t}::from_le_bytes(self.buf.as_ref()[at..at + {w}].try_into().unwrap())\n    }}");
            }
            (CType::Struct(inner), None) => {
                let iv = view_name(inner);
                if f.optional {
                    let _ = writeln!(o, "    /// Present when the record is long enough to hold it.\n    #[inline]\n    pub fn {g}(&self) -> Option<{iv}<&[u8]>> {{\n        self.buf.as_ref().get({a}..{b}).map(|b| {iv} {{ buf: b }})\n    }}");
                } else {
                    let _ = writeln!(o, "    #[inline]\n    pub fn {g}(&self) -> {iv}<&[u8]> {{\n        {iv} {{ buf: &self.buf.as_ref()[{a}..{b}] }}\n    }}");
                }
            }
            (CType::Struct(_), Some(_)) => {}
        }
    }
    o.push_str("}\n\n");
    let _ = writeln!(o, "impl<T: AsRef<[u8]> + AsMut<[u8]>> {v}<T> {{");
    for f in &s.fields {
        if f.is_pad() {
            continue;
        }
        let (a, b) = (f.offset, f.offset + f.size);
        match (&f.ty, f.len) {
            (CType::Scalar(sc), None) => {
                let t = sc.rust();
                let _ = writeln!(o, "    #[inline]\n    pub fn set_{}(&mut self, v: {t}) {{\n        self.buf.as_mut()[{a}..{b}].copy_from_slice(&v.to_le_bytes());\n    }}", f.name);
            }
            (CType::Scalar(sc), Some(n)) if sc.size() == 1 => {
                let _ = writeln!(o, "    #[inline]\n    pub fn set_{}(&mut self, v: &[u8; {n}]) {{\n        self.buf.as_mut()[{a}..{b}].copy_from_slice(v);\n    }}", f.name);
            }
            (CType::Struct(inner), None) if !f.optional => {
                let iv = view_name(inner);
                let _ = writeln!(o, "    #[inline]\n    pub fn {}_mut(&mut self) -> {iv}<&mut [u8]> {{\n        {iv} {{ buf: &mut self.buf.as_mut()[{a}..{b}] }}\n    }}", f.name);
            }
            _ => {}
        }
    }
    o.push_str("}\n\n");
}
