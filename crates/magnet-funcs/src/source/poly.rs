//! The polymorphism of sk_buff: its aliases, typedefs, and the structs that
//! nest it or point to one.

use std::collections::{HashMap, HashSet};

use super::{Facts, TypeRef, Use};

/// The polymorphism of sk_buff found in the facts.
pub(super) struct Poly {
    pub(super) aliases: HashSet<String>,
    /// Typedef name -> what it resolves to.
    pub(super) typedefs: HashMap<String, Use>,
    /// Struct name -> Nested or Pointing.
    pub(super) structs: HashMap<String, Use>,
}

impl Poly {
    /// How a written type relates to the skb (`None`: not at all). The
    /// spelling decides direct / alias / typedef.
    pub(super) fn class(&self, t: &TypeRef) -> Option<Use> {
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
pub(super) fn tokens(s: &str) -> Vec<&str> {
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

pub(super) fn polymorphism(f: &Facts) -> Poly {
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
