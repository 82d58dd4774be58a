//! `magnet record --check`: what would feed each kind on this kernel.

use std::collections::BTreeMap;

use anyhow::{Context, Result};

use crate::config::Layer;
use crate::probes::{self};
use crate::recorder::host::preflight;
use magnet_kernel::plan::Choice;

use super::load::{load_with_fallback, Helpers};
use super::plan::chosen_has;

/// One line of `magnet record --check`: the hook that will feed a kind on
/// this kernel, or why none can.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CheckLine {
    pub layer: String,
    pub kind: String,
    pub default_on: bool,
    /// Left out without failing the layer where no hook is found (io_uring's
    /// calls on a kernel without their tracepoints): `missing` says so.
    pub optional: bool,
    pub hook: Option<String>,
    pub missing: Option<String>,
    /// A better hook this kernel has but whose program its verifier refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// What `magnet record` would attach on this kernel, for every kind of every
/// layer, and what the kernel offers: the chosen programs are loaded once, as
/// for a recording of a command or pids (`--all` may keep a hook a task filter
/// costs). Needs root (it probes attach types).
pub fn check() -> Result<(magnet_kernel::Features, Vec<CheckLine>), crate::Error> {
    preflight()?;
    Ok(check_inner()?)
}

fn check_inner() -> Result<(magnet_kernel::Features, Vec<CheckLine>)> {
    let kernel = probes::Kernel::detect().context("reading what this kernel offers")?;
    // As for a command or pids: task filters (--all may choose otherwise).
    let plan = probes::plan(&kernel, probes::PlanFilters::TASKS);
    // Load every chosen program once (nothing is attached): what the verifier
    // refuses moves on to its next hook, as it would when recording.
    let mut chosen: Vec<Choice<Layer>> =
        plan.iter().filter(|c| c.chosen.is_ok()).cloned().collect();
    let mut refused: BTreeMap<&str, String> = BTreeMap::new();
    let wanted = |chosen: &[Choice<Layer>], name: &str| chosen_has(chosen, name);
    let skel = load_with_fallback(
        &kernel,
        Helpers::of(&kernel),
        &mut chosen,
        |probe, why| {
            refused.insert(probe.name, why.to_string());
            Ok(())
        },
        |open| {
            // As for `-- COMMAND` and `-p`: the task filters are what some
            // verifiers refuse (6.12: task storage in netfilter programs).
            let ro = open
                .maps
                .rodata_data
                .as_deref_mut()
                .expect("the object has read-only settings");
            ro.filter_tasks = true;
            ro.filter_pid = true;
            Ok(())
        },
        &wanted,
    )?;
    drop(skel);
    // Probes that moved on to a later hook: say which one was refused.
    let moved: BTreeMap<&str, String> = plan
        .iter()
        .filter_map(|c| {
            let first = c.chosen.as_ref().ok()?;
            let now = chosen.iter().find(|d| std::ptr::eq(d.part, c.part))?;
            let later = now.chosen.as_ref().ok()?;
            (later != first).then(|| {
                (
                    c.part.name,
                    format!(
                        "{} refused by this kernel's verifier",
                        c.part.candidates[*first].name()
                    ),
                )
            })
        })
        .collect();
    let lines = plan
        .into_iter()
        .map(|c| {
            let now = chosen.iter().find(|d| std::ptr::eq(d.part, c.part));
            CheckLine {
                layer: c.part.group.name().to_string(),
                kind: c.part.name.to_string(),
                default_on: c.part.default_on,
                optional: c.part.optional,
                hook: now.and_then(|d| d.name()),
                refused: moved.get(c.part.name).cloned(),
                missing: match now {
                    Some(_) => None,
                    None => refused
                        .get(c.part.name)
                        .cloned()
                        .or_else(|| c.chosen.is_err().then(|| c.reasons())),
                },
            }
        })
        .collect();
    Ok((kernel.features, lines))
}
