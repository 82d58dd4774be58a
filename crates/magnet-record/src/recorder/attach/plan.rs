//! The plan of a recording: which hook feeds each wanted probe, which
//! support programs its layers and filters need, and what a layer lacks.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use magnet_trace::LayerSource;

use crate::config::{Layer, RecordConfig};
use crate::probes::{self, Probe, PROBES};
use crate::recorder::host::kernel_release;
use crate::recorder::targets::Tasks;
use magnet_kernel::plan::Choice;

use super::load::Helpers;

/// `--kinds` may only adjust kinds of selected layers.
pub(in crate::recorder) fn check_kinds(config: &RecordConfig) -> Result<()> {
    for k in config.kinds.add.iter().chain(&config.kinds.remove) {
        let p = PROBES
            .iter()
            .find(|p| probes::kind(p) == Some(k.as_str()))
            .expect("parse_kinds checked the name");
        let layer = p.group;
        if !config.layers.contains(&layer) {
            bail!("--kinds {k}: that kind is in layer {layer}, which is not selected (add it to --layers)");
        }
    }
    Ok(())
}

/// Which hook feeds each wanted probe, and what each layer is fed by (or
/// lacks, with the reason).
pub(in crate::recorder) struct Plan {
    pub sources: BTreeMap<Layer, LayerSource>,
    pub chosen: Vec<Choice<Layer>>,
}

impl Plan {
    /// `tasks`: the task filters, which (as address filters do) need a
    /// program at every socket call's start.
    pub(in crate::recorder) fn new(
        config: &RecordConfig,
        kernel: &probes::Kernel,
        tasks: &Tasks,
    ) -> Result<Plan> {
        let call_starts =
            tasks.filter_tasks || config.filters.port.is_some() || config.filters.host.is_some();
        let mut sources: BTreeMap<Layer, LayerSource> = BTreeMap::new();
        for layer in &config.layers {
            sources.insert(
                *layer,
                LayerSource {
                    layer: layer.name().into(),
                    hooks: vec![],
                    missing: vec![],
                    notes: vec![],
                },
            );
        }
        let mut chosen: Vec<Choice<Layer>> = Vec::new();
        for c in probes::plan(
            kernel,
            probes::PlanFilters {
                call_starts,
                tasks: tasks.filter_tasks,
            },
        ) {
            if !probe_on(config, c.part) {
                continue;
            }
            match &c.chosen {
                Ok(_) => chosen.push(c),
                Err(_) => left_out(config, &mut sources, c.part, &c.reasons())?,
            }
        }
        Ok(Plan { sources, chosen })
    }
}

/// Which programs of the object a recording needs: those of the chosen hooks
/// and the support programs its layers and filters call for.
pub(in crate::recorder) struct Needs<'a> {
    pub config: &'a RecordConfig,
    pub tasks: Tasks,
    /// A layer sees packets (packet ids, flows, cookies).
    pub packets: bool,
    pub funcs: crate::funcs::Plan,
    /// record --snaplen: the page that lets BPF read page fragments, or why
    /// it cannot (kept alive for the whole recording).
    pub frame_pages: Option<Result<crate::recorder::frames::PageMark, String>>,
    /// What the object's programs may call on this kernel.
    pub helpers: Helpers,
    /// The hook that tells flows at bind() and connect(), with packet
    /// layers (its tracepoints, or every system call's exit without them),
    /// or why none can.
    pub flows_at_bind: Option<Choice<Layer>>,
}

impl<'a> Needs<'a> {
    pub(in crate::recorder) fn new(
        config: &'a RecordConfig,
        tasks: Tasks,
        kernel: &probes::Kernel,
    ) -> Self {
        Needs {
            config,
            tasks,
            packets: config.layers.iter().any(|l| l.follows_packets()),
            funcs: crate::funcs::Plan::new(
                &config.funcs,
                &config.func_names,
                config.func_exits,
                &kernel.features,
            )
            .given_func_ip(&kernel.btf, &kernel.features.release),
            frame_pages: (config.snaplen > 0).then(crate::recorder::frames::PageMark::new),
            helpers: Helpers::of(kernel),
            flows_at_bind: config
                .layers
                .iter()
                .any(|l| l.follows_packets())
                .then(|| probes::plan_flows_at_bind(kernel)),
        }
    }

    pub(in crate::recorder) fn wants(&self, chosen: &[Choice<Layer>], name: &str) -> bool {
        let in_hooks = PROBES
            .iter()
            .flat_map(|p| p.candidates.iter())
            .any(|h| h.has_prog(name));
        if in_hooks {
            return chosen_has(chosen, name);
        }
        if probes::FLOWS_AT_BIND
            .candidates
            .iter()
            .any(|h| h.has_prog(name))
        {
            return self
                .flows_at_bind
                .as_ref()
                .and_then(Choice::candidate)
                .is_some_and(|h| h.has_prog(name));
        }
        let config = self.config;
        match name {
            probes::FOLLOW_FORKS => self.tasks.filter_pids || config.layers.contains(&Layer::Sched),
            probes::PKT_FREE => self.packets && !config.layers.contains(&Layer::Drop),
            probes::PKT_CONSUME => self.packets,
            probes::TCP_RX_SEG => tcp_rcv_on(config) && !config.layers.contains(&Layer::Dev),
            probes::COOKIE_AT_CREATE => self.packets,
            probes::BATCH_TICK => true,
            n => self.funcs.wants(n),
        }
    }
}

/// Whether a probe is wanted: its layer is selected and its kind enabled.
pub(super) fn probe_on(config: &RecordConfig, probe: &Probe) -> bool {
    let layer = probe.group;
    config.layers.contains(&layer)
        && probes::kind(probe).is_none_or(|k| config.kinds.enabled(k, probe.default_on))
}

/// Whether a chosen hook has the program `name`.
pub(super) fn chosen_has(chosen: &[Choice<Layer>], name: &str) -> bool {
    chosen
        .iter()
        .any(|c| c.candidate().is_some_and(|h| h.has_prog(name)))
}

/// A probe that cannot attach on this kernel. Optional ones (and those of
/// default layers) are left out with one line in the trace's layer notes (the
/// CLI prints them); a layer the user asked for by name fails with that line.
pub(super) fn left_out(
    config: &RecordConfig,
    sources: &mut BTreeMap<Layer, LayerSource>,
    probe: &Probe,
    why: &str,
) -> Result<()> {
    let layer = probe.group;
    let what = match probes::kind(probe) {
        Some(k) => format!("{k} not recorded"),
        None => format!("{} left out", probe.name),
    };
    if !probe.optional && config.layers_named {
        bail!(
            "layer {layer} cannot be recorded on this kernel ({}): {}: {why} \
             (leave the layer out of --layers, or see `magnet record --check`)",
            kernel_release(),
            probe.name
        );
    }
    if let Some(src) = sources.get_mut(&layer) {
        src.missing.push(format!("{what}: {why}"));
    }
    Ok(())
}

/// Whether tcp_rcv events are recorded (the tcp layer with its tcp_rcv kind).
pub(super) fn tcp_rcv_on(config: &RecordConfig) -> bool {
    kind_on(config, "tcp_rcv")
}

/// Whether the probe of this kind is wanted (its layer selected, the kind on).
pub(super) fn kind_on(config: &RecordConfig, kind: &str) -> bool {
    PROBES
        .iter()
        .find(|p| probes::kind(p) == Some(kind))
        .is_some_and(|p| probe_on(config, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_follow_layers_and_kinds() {
        let mut c = RecordConfig::new("x.mgt".into());
        let p = |k: &str| PROBES.iter().find(|p| probes::kind(p) == Some(k)).unwrap();
        assert!(probe_on(&c, p("app_send")));
        assert!(!probe_on(&c, p("dev_xmit")), "off by default");
        assert!(!probe_on(&c, p("qdisc_enq")), "layer not selected");
        assert!(tcp_rcv_on(&c));
        c.layers.remove(&Layer::Tcp);
        assert!(!tcp_rcv_on(&c));
        c.kinds = crate::config::parse_kinds("+qdisc_enq").unwrap();
        let e = check_kinds(&c).unwrap_err();
        assert!(e.to_string().contains("not selected"), "{e}");
    }
}
