//! Indirect use: functions that pass an skb on, by data flow from the
//! direct-use functions.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::poly::Poly;
use super::{Expr, Facts, FnDef, SourceFunc, TypeRef, Use};

/// Direct use from prototypes, then indirect use by data flow.
pub(super) fn indirect(f: &Facts, poly: &Poly, root: &Path, max_levels: u32) -> Vec<SourceFunc> {
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
            let (vars, local_skb, received) =
                skb_vars(d, &cp[i], &skb, &|callee| ret_of(&cr, callee));
            let carries = |e: &Expr| match e {
                Expr::Var(v) => vars.contains(v.as_str()),
                Expr::CallRet(c) => ret_of(&cr, c),
                Expr::Other => false,
            };
            let (handed, new_down, new_up) = call_flows(d, i, &by_name, &cp, &upp, &carries);
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
    source_funcs(f, how, root)
}

/// The variables that hold an skb in `d`: its parameters that carry one
/// (`carried`), its locals of an skb type, and those assigned from a call
/// that returns one. Also whether it has such a local, and whether it
/// received one from a call.
fn skb_vars<'d>(
    d: &'d FnDef,
    carried: &[bool],
    skb: &dyn Fn(&TypeRef) -> bool,
    returns_skb: &dyn Fn(&str) -> bool,
) -> (HashSet<&'d str>, bool, bool) {
    // Variables holding an skb in this function.
    let mut vars: HashSet<&str> = d
        .params
        .iter()
        .zip(carried)
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
        if returns_skb(callee) {
            vars.insert(v.as_str());
            received = true;
        }
    }
    (vars, local_skb, received)
}

/// The flows through `d`'s calls (`d` is function `i`): whether it hands an
/// skb to a callee, the callees' parameters that newly carry one (down),
/// and its own parameters passed into a callee's skb slot (up).
fn call_flows(
    d: &FnDef,
    i: usize,
    by_name: &HashMap<&str, Vec<usize>>,
    cp: &[Vec<bool>],
    upp: &[Vec<bool>],
    carries: &dyn Fn(&Expr) -> bool,
) -> (bool, Vec<(usize, usize)>, Vec<usize>) {
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
    (handed, new_down, new_up)
}

/// The functions found, with how and at which level, their files relative
/// to `root`.
fn source_funcs(f: &Facts, how: Vec<Option<(Use, u32)>>, root: &Path) -> Vec<SourceFunc> {
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
