//! What was read, compared with the END block's totals.

use std::collections::{BTreeMap, BTreeSet};

use super::Tally;
use crate::catalog::{kind, Catalog};
use crate::header::Footer;

/// total) that does not add up. A footer with no totals at all (records 0,
/// nothing generated or lost: written by a tool, not the recorder) is not
/// checked.
pub(super) fn totals_mismatch(f: &Footer, t: &Tally, catalog: &Catalog) -> Vec<String> {
    if f.records == 0 && f.lost_kernel == 0 && f.generated.is_empty() && f.recorded.is_empty() {
        return Vec::new();
    }
    let lost_name = catalog
        .get(kind::LOST)
        .map_or_else(|| "lost".to_string(), |d| d.name.clone());
    let mut read: BTreeMap<String, u64> = BTreeMap::new();
    for (k, &n) in t.by_kind.iter().enumerate().filter(|(_, n)| **n > 0) {
        let name = catalog
            .get(k as u16)
            .map_or_else(|| format!("kind{k}"), |d| d.name.clone());
        *read.entry(name).or_default() += n;
    }
    let diff = |r: u64, w: u64| {
        if r < w {
            format!("{} missing", w - r)
        } else {
            format!("{} more than written", r - w)
        }
    };
    let mut out = Vec::new();
    if !f.recorded.is_empty() {
        let names: BTreeSet<&String> = f.recorded.keys().chain(read.keys()).collect();
        for name in names {
            let r = read.get(name).copied().unwrap_or(0);
            let w = f.recorded.get(name).copied().unwrap_or(0);
            if r != w {
                out.push(format!(
                    "{name}: {r} records read, the END block counts {w} written ({})",
                    diff(r, w)
                ));
            }
        }
    } else if !f.generated.is_empty() {
        // Older traces: generated = recorded + lost, by kind; the loss is
        // known only in total.
        let names: BTreeSet<&String> = f
            .generated
            .keys()
            .chain(read.keys().filter(|n| **n != lost_name))
            .collect();
        let mut short = 0u64;
        for name in names {
            let r = read.get(name).copied().unwrap_or(0);
            let g = f.generated.get(name).copied().unwrap_or(0);
            if r > g {
                out.push(format!(
                    "{name}: {r} records read, more than the {g} the END block says were \
                     generated ({} too many)",
                    r - g
                ));
            } else if r < g && f.lost_kernel == 0 {
                out.push(format!(
                    "{name}: {r} records read of the {g} generated, and the kernel lost \
                     none ({} missing)",
                    g - r
                ));
            }
            short = short.saturating_add(g.saturating_sub(r));
        }
        if f.lost_kernel > 0 && short > f.lost_kernel {
            out.push(format!(
                "{short} generated events are not in the trace, more than the {} the \
                 kernel lost",
                f.lost_kernel
            ));
        }
    }
    if t.records != f.records && (f.recorded.is_empty() || out.is_empty()) {
        out.push(format!(
            "all kinds: {} records read, the END block counts {} written ({})",
            t.records,
            f.records,
            diff(t.records, f.records)
        ));
    }
    if t.lost != f.lost_kernel {
        out.push(format!(
            "{lost_name}: the LOST records count {} lost events, the END block {}",
            t.lost, f.lost_kernel
        ));
    }
    out
}
