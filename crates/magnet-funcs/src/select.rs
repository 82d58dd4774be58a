//! Which kernel functions handle packets, judged by the types in their BTF
//! prototypes (the thesis's "direct use" and "polymorphism of sk_buff").
//!
//! A function is selected when a parameter (any position) or its return value
//! is, in order of the category it is counted under:
//!
//! - **direct**: a pointer (or pointer to pointer) to `struct sk_buff`, const or not;
//! - **typedef**: the same reached through a typedef chain (the thesis's
//!   "customised data types"; `#define` aliases vanish before BTF is made, only
//!   the source mode sees them);
//! - **nested**: a pointer to a struct or union that holds an skb: a member
//!   that is an `sk_buff` or points to one (`sk_buff_head`), or a member struct
//!   held by value that does, any number of levels deep (`tcp_sock` ⊃ `sock` ⊃
//!   `sk_buff_head` → `sk_buff`);
//! - **pointing**: a pointer to a struct that *points to* a nested one, at most
//!   `pointer_depth` pointer hops away (`socket` → `sock`).
//!
//! pwru's rule (a plain `struct sk_buff *` among parameters 1–5) is computed as
//! well, so the counts can be checked against its well-known numbers.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;

use crate::btf::{Btf, Kind};

/// Why a function was chosen, from the most to the least direct.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Direct,
    Typedef,
    Nested,
    Pointing,
}

impl Category {
    pub const ALL: [Category; 4] = [
        Category::Direct,
        Category::Typedef,
        Category::Nested,
        Category::Pointing,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Category::Direct => "direct",
            Category::Typedef => "typedef",
            Category::Nested => "nested",
            Category::Pointing => "pointing",
        }
    }
}

/// How a struct holds an skb: through which member and which type.
#[derive(Clone, Debug)]
pub struct Holder {
    /// Struct levels down to the skb (1: a member is or points to an sk_buff).
    pub level: u32,
    /// Pointer hops to a struct that nests an skb (0 for nested ones).
    pub hops: u32,
    /// The member that leads to the skb and the struct it leads to (`None`
    /// when it is the skb itself).
    pub member: String,
    pub next: Option<u32>,
    /// The member is a pointer (to the skb or to the next struct).
    pub ptr: bool,
}

/// Selection settings.
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    /// Pointer hops allowed from a parameter's struct to a nested one.
    pub pointer_depth: u32,
}

impl Default for Rules {
    fn default() -> Self {
        Rules { pointer_depth: 1 }
    }
}

/// One parameter's (or the return value's) reason.
#[derive(Clone, Debug, Serialize)]
pub struct Reason {
    /// 1-based parameter position, 0 for the return value.
    pub position: usize,
    pub name: String,
    pub ty: String,
    pub category: Category,
    /// The chain of structs from the parameter's type down to the skb.
    pub chain: Vec<String>,
}

/// A selected function.
#[derive(Clone, Debug, Serialize)]
pub struct Selected {
    pub name: String,
    /// BTF unit ("vmlinux" or a module name).
    pub unit: String,
    pub category: Category,
    /// pwru's rule: a `struct sk_buff *` among parameters 1–5.
    pub pwru: bool,
    /// A looser rule: a pointer to `struct sk_buff` in any parameter, through
    /// const and typedefs (the cross-check against counts made by another
    /// tool, docs/kernel-notes.md).
    pub loose: bool,
    pub reasons: Vec<Reason>,
}

/// The result of a selection over one BTF.
pub struct Selection {
    /// Selected functions by name (a name defined in several units or compile
    /// units is one function to ftrace).
    pub funcs: BTreeMap<String, Selected>,
    /// Distinct function names in the BTF.
    pub total: usize,
    /// Structs that hold an skb, by type id.
    pub holders: HashMap<u32, Holder>,
    /// Typedef ids that name an skb or a pointer to one.
    pub aliases: Vec<u32>,
}

/// What a type means for packet handling.
enum Verdict {
    No,
    Skb { typedef: bool },
    Holder { id: u32 },
}

struct Ctx<'b> {
    btf: &'b Btf,
    skb: HashSet<u32>,
    holders: HashMap<u32, Holder>,
    rules: Rules,
}

fn is_record(k: Kind) -> bool {
    matches!(k, Kind::Struct | Kind::Union)
}

impl Ctx<'_> {
    /// Why a function with this prototype is selected: one reason per
    /// parameter (or the return) that is or holds an skb; and whether
    /// pwru would probe it (an skb pointer in the first five parameters)
    /// and whether a loose rule would (a lone skb pointer anywhere).
    fn reasons(&self, proto: &crate::btf::Type) -> (Vec<Reason>, bool, bool) {
        let mut reasons = Vec::new();
        let mut pwru = false;
        let mut loose = false;
        let slots = std::iter::once((0usize, "return".to_string(), proto.ty)).chain(
            proto
                .members
                .iter()
                .enumerate()
                .map(|(i, p)| (i + 1, self.btf.str(p.name).to_string(), p.ty)),
        );
        for (pos, pname, ty) in slots {
            if (1..=5).contains(&pos) {
                if let Some(p) = self.btf.get(ty) {
                    if p.kind == Kind::Ptr && self.skb.contains(&p.ty) {
                        pwru = true;
                    }
                }
            }
            if pos > 0 && self.single_skb_pointer(ty) {
                loose = true;
            }
            let (category, chain) = match self.verdict(ty) {
                Verdict::No => continue,
                Verdict::Skb { typedef: false } => (Category::Direct, Vec::new()),
                Verdict::Skb { typedef: true } => (Category::Typedef, Vec::new()),
                Verdict::Holder { id, .. } => {
                    let cat = if self.holders[&id].hops == 0 {
                        Category::Nested
                    } else {
                        Category::Pointing
                    };
                    (cat, self.chain(id))
                }
            };
            reasons.push(Reason {
                position: pos,
                name: pname,
                ty: self.btf.spell(ty),
                category,
                chain,
            });
        }
        (reasons, pwru, loose)
    }

    /// Resolves a parameter type: modifiers and typedefs skipped, pointers
    /// counted (at most two), arrays looked through.
    fn verdict(&self, mut id: u32) -> Verdict {
        let btf = self.btf;
        let mut ptrs = 0;
        let mut typedef = false;
        for _ in 0..64 {
            let Some(t) = btf.get(id) else {
                return Verdict::No;
            };
            match t.kind {
                Kind::Const | Kind::Volatile | Kind::Restrict | Kind::TypeTag => id = t.ty,
                Kind::Typedef => {
                    typedef = true;
                    id = t.ty
                }
                Kind::Ptr => {
                    ptrs += 1;
                    if ptrs > 2 {
                        return Verdict::No;
                    }
                    id = t.ty
                }
                Kind::Struct | Kind::Union | Kind::Fwd => {
                    if ptrs == 0 {
                        // Passed by value: only a struct holding an skb counts.
                        return match self.holders.get(&id) {
                            Some(h) if h.hops <= self.rules.pointer_depth => Verdict::Holder { id },
                            _ => Verdict::No,
                        };
                    }
                    if self.skb.contains(&id) {
                        return Verdict::Skb { typedef };
                    }
                    return match self.holders.get(&id) {
                        Some(h) if ptrs == 1 && h.hops <= self.rules.pointer_depth => {
                            Verdict::Holder { id }
                        }
                        _ => Verdict::No,
                    };
                }
                _ => return Verdict::No,
            }
        }
        Verdict::No
    }

    /// A typedef chain that ends at `struct sk_buff` or a pointer to it.
    fn names_skb(&self, mut id: u32) -> bool {
        for _ in 0..64 {
            let Some(t) = self.btf.get(id) else {
                return false;
            };
            match t.kind {
                Kind::Const
                | Kind::Volatile
                | Kind::Restrict
                | Kind::TypeTag
                | Kind::Typedef
                | Kind::Ptr => id = t.ty,
                Kind::Struct | Kind::Fwd => return self.skb.contains(&id),
                _ => return false,
            }
        }
        false
    }

    /// A single pointer to sk_buff, through modifiers and typedefs.
    fn single_skb_pointer(&self, mut id: u32) -> bool {
        let mut ptrs = 0;
        for _ in 0..64 {
            let Some(t) = self.btf.get(id) else {
                return false;
            };
            match t.kind {
                Kind::Const | Kind::Volatile | Kind::Restrict | Kind::TypeTag | Kind::Typedef => {
                    id = t.ty
                }
                Kind::Ptr if ptrs == 0 => {
                    ptrs = 1;
                    id = t.ty
                }
                Kind::Struct | Kind::Fwd => return ptrs == 1 && self.skb.contains(&id),
                _ => return false,
            }
        }
        false
    }

    /// The chain of structs from `id` down to the skb, for explanations.
    fn chain(&self, mut id: u32) -> Vec<String> {
        let mut out = Vec::new();
        let member = |m: &str| {
            if m.is_empty() {
                "an unnamed member".to_string()
            } else {
                format!("member {m}")
            }
        };
        for _ in 0..64 {
            let Some(h) = self.holders.get(&id) else {
                break;
            };
            let how = if h.ptr { "points to" } else { "holds" };
            match h.next {
                Some(n) => {
                    out.push(format!(
                        "{} {how} {} ({})",
                        self.btf.spell(id),
                        self.btf.spell(n),
                        member(&h.member)
                    ));
                    id = n;
                }
                None => {
                    out.push(format!(
                        "{} {how} struct sk_buff ({})",
                        self.btf.spell(id),
                        member(&h.member)
                    ));
                    break;
                }
            }
        }
        out
    }
}

/// Member edges: struct -> (member name, target struct, through a pointer).
fn edges(btf: &Btf) -> Vec<(u32, u32, u32, bool)> {
    let mut out = Vec::new();
    for (id, t) in btf.types() {
        if !is_record(t.kind) {
            continue;
        }
        for m in t.members.iter() {
            let mut ty = m.ty;
            let mut ptr = false;
            let mut ok = false;
            for _ in 0..64 {
                let Some(mt) = btf.get(ty) else { break };
                match mt.kind {
                    Kind::Const
                    | Kind::Volatile
                    | Kind::Restrict
                    | Kind::TypeTag
                    | Kind::Typedef
                    | Kind::Array => ty = mt.ty,
                    Kind::Ptr => {
                        if ptr {
                            break; // pointer to pointer: not followed
                        }
                        ptr = true;
                        ty = mt.ty
                    }
                    Kind::Struct | Kind::Union | Kind::Fwd => {
                        ok = true;
                        break;
                    }
                    _ => break,
                }
            }
            if ok {
                out.push((id, m.name, ty, ptr));
            }
        }
    }
    out
}

/// Selects the packet-handling functions of a BTF.
pub fn select(btf: &Btf, rules: Rules) -> Selection {
    // Every struct named sk_buff (vmlinux's, and forward declarations).
    let skb: HashSet<u32> = btf
        .types()
        .filter(|(_, t)| matches!(t.kind, Kind::Struct | Kind::Fwd) && btf.str(t.name) == "sk_buff")
        .map(|(id, _)| id)
        .collect();
    let edges = resolved_edges(btf);
    let holders = holders(btf, &skb, &edges, rules.pointer_depth);
    let ctx = Ctx {
        btf,
        skb,
        holders,
        rules,
    };
    let aliases: Vec<u32> = btf
        .types()
        .filter(|(_, t)| t.kind == Kind::Typedef)
        .filter(|(id, _)| ctx.names_skb(*id))
        .map(|(id, _)| id)
        .collect();

    let mut funcs: BTreeMap<String, Selected> = BTreeMap::new();
    let mut names: HashSet<&str> = HashSet::new();
    for (_, t) in btf.types() {
        if t.kind != Kind::Func {
            continue;
        }
        let name = btf.str(t.name);
        names.insert(name);
        let Some(proto) = btf.get(t.ty).filter(|p| p.kind == Kind::FuncProto) else {
            continue;
        };
        let (reasons, pwru, loose) = ctx.reasons(proto);
        let Some(category) = reasons.iter().map(|r| r.category).min() else {
            continue;
        };
        let unit = btf.units[t.unit as usize].clone();
        match funcs.get_mut(name) {
            Some(f) => {
                f.pwru |= pwru;
                f.loose |= loose;
                if category < f.category {
                    f.category = category;
                    f.reasons = reasons;
                }
            }
            None => {
                funcs.insert(
                    name.to_string(),
                    Selected {
                        name: name.to_string(),
                        unit,
                        category,
                        pwru,
                        loose,
                        reasons,
                    },
                );
            }
        }
    }
    Selection {
        total: names.len(),
        funcs,
        holders: ctx.holders,
        aliases,
    }
}

/// The BTF's member edges (struct, member name, member type, through a
/// pointer), with forward declarations of structs resolved to the struct of
/// that name.
fn resolved_edges(btf: &Btf) -> Vec<(u32, u32, u32, bool)> {
    // Forward declarations of other structs resolve to the struct of that name.
    let mut by_name: HashMap<&str, u32> = HashMap::new();
    for (id, t) in btf.types() {
        if is_record(t.kind) && t.name != 0 {
            by_name.entry(btf.str(t.name)).or_insert(id);
        }
    }
    let resolve = |id: u32| -> u32 {
        match btf.get(id) {
            Some(t) if t.kind == Kind::Fwd => by_name.get(btf.str(t.name)).copied().unwrap_or(id),
            _ => id,
        }
    };
    edges(btf)
        .into_iter()
        .map(|(s, m, t, p)| (s, m, resolve(t), p))
        .collect()
}

/// The structs that hold an skb, each with how: level 1 has an skb member
/// (or a pointer to one); then, hop by hop up to `pointer_depth`, by-value
/// nesting closes over each hop count and a pointer to a holder adds a hop.
fn holders(
    btf: &Btf,
    skb: &HashSet<u32>,
    edges: &[(u32, u32, u32, bool)],
    pointer_depth: u32,
) -> HashMap<u32, Holder> {
    let mut holders: HashMap<u32, Holder> = HashMap::new();
    // Level 1: a member is an skb or points to one.
    for &(s, m, t, ptr) in edges {
        if skb.contains(&t) && !skb.contains(&s) {
            holders.entry(s).or_insert(Holder {
                level: 1,
                hops: 0,
                member: btf.str(m).to_string(),
                next: None,
                ptr,
            });
        }
    }
    // Then, hop by hop: by-value nesting closes over each hop count; a pointer
    // to a holder adds a hop.
    for hops in 0..=pointer_depth {
        loop {
            let mut added = Vec::new();
            for &(s, m, t, ptr) in edges {
                if skb.contains(&s) || skb.contains(&t) || holders.contains_key(&s) {
                    continue;
                }
                let Some(h) = holders.get(&t) else { continue };
                // By value: same hop count; through a pointer: one hop more.
                let reached = if ptr {
                    h.hops + 1 == hops
                } else {
                    h.hops == hops
                };
                if !reached {
                    continue;
                }
                added.push((
                    s,
                    Holder {
                        level: h.level + 1,
                        hops,
                        member: btf.str(m).to_string(),
                        next: Some(t),
                        ptr,
                    },
                ));
            }
            if added.is_empty() {
                break;
            }
            for (s, h) in added {
                holders.entry(s).or_insert(h);
            }
        }
    }
    holders
}

impl Selection {
    /// Selected functions per category.
    pub fn counts(&self) -> BTreeMap<Category, usize> {
        let mut c: BTreeMap<Category, usize> = Category::ALL.iter().map(|&k| (k, 0)).collect();
        for f in self.funcs.values() {
            *c.entry(f.category).or_default() += 1;
        }
        c
    }

    /// Functions that pass the looser rule (any parameter, const/typedef stripped).
    pub fn loose_count(&self) -> usize {
        self.funcs.values().filter(|f| f.loose).count()
    }

    /// Functions that pass pwru's rule.
    pub fn pwru_count(&self) -> usize {
        self.funcs.values().filter(|f| f.pwru).count()
    }

    /// Structs that hold an skb by value nesting (hops 0) and through pointers.
    pub fn holder_counts(&self) -> (usize, usize) {
        let nested = self.holders.values().filter(|h| h.hops == 0).count();
        (nested, self.holders.len() - nested)
    }
}

/// Counts for one selection, with the attachable subset when known.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// Distinct function names in the BTF.
    pub total_functions: usize,
    /// Selected functions per category (each counted under its most direct one).
    pub selected: BTreeMap<Category, usize>,
    pub selected_total: usize,
    /// Selected and in available_filter_functions, per category (when known).
    pub attachable: Option<BTreeMap<Category, usize>>,
    pub attachable_total: Option<usize>,
    /// pwru's rule: a plain `struct sk_buff *` among parameters 1–5.
    pub pwru_rule: usize,
    pub pwru_rule_attachable: Option<usize>,
    /// Typedefs that name an skb or a pointer to one.
    pub typedef_aliases: usize,
    /// Structs that hold an skb by value nesting, and those that point to one.
    pub nested_structs: usize,
    pub pointing_structs: usize,
    pub pointer_depth: u32,
}

impl Selection {
    /// Counts, and the attachable subset when a listing is given.
    pub fn summary(&self, rules: Rules, available: Option<&HashSet<String>>) -> Summary {
        let (nested, pointing) = self.holder_counts();
        let attachable = available.map(|a| {
            let mut c: BTreeMap<Category, usize> = Category::ALL.iter().map(|&k| (k, 0)).collect();
            for f in self.funcs.values().filter(|f| a.contains(&f.name)) {
                *c.entry(f.category).or_default() += 1;
            }
            c
        });
        Summary {
            total_functions: self.total,
            selected: self.counts(),
            selected_total: self.funcs.len(),
            attachable_total: attachable.as_ref().map(|c| c.values().sum()),
            attachable,
            pwru_rule: self.pwru_count(),
            pwru_rule_attachable: available.map(|a| {
                self.funcs
                    .values()
                    .filter(|f| f.pwru && a.contains(&f.name))
                    .count()
            }),
            typedef_aliases: self.aliases.len(),
            nested_structs: nested,
            pointing_structs: pointing,
            pointer_depth: rules.pointer_depth,
        }
    }
}
