//! Loading the BPF object: what its programs may use on this kernel, its
//! read-only settings from the recording's options (checked here), and the
//! fallback to a probe's next hook when the verifier refuses one.

use anyhow::{bail, Context, Result};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};

use crate::config::Layer;
use crate::probes::{self, Probe};
use crate::skel::{OpenRecordSkel, RecordSkel, RecordSkelBuilder};
use magnet_host::sockdiag::addr16;
use magnet_kernel::plan::{Choice, Refusals};

use super::plan::{chosen_has, kind_on, left_out, tcp_rcv_on, Needs, Plan};

/// What the BPF object's programs may use on this kernel, each asked of the
/// kernel itself (its BTF, a map probe), never guessed from its version: the
/// object is built for both answers and the loader picks.
#[derive(Clone, Copy, Debug)]
pub(in crate::recorder) struct Helpers {
    /// bpf_loop (5.17+): the `record -f` filter runs on it. Without it the
    /// packet programs load as their twins without the filter (`NAME_nl`).
    pub bpf_loop: bool,
    /// bpf_get_socket_cookie in tracing programs (5.12+; the kernel then has
    /// bpf_get_socket_ptr_cookie): without it sockets the kernel gave no
    /// cookie are keyed by their address (record.bpf.c, sk_key()).
    pub cookie: bool,
    /// bpf_sk_storage_get in tracing programs (5.11+, then the kernel has
    /// bpf_sk_storage_get_tracing): without it socket flags live in a hash.
    pub sk_storage: bool,
    /// Task-storage maps (5.11+): without them a thread's call in flight
    /// lives in a hash by thread id.
    pub task_storage: bool,
    /// Records reserved in the ring one at a time instead of per-CPU
    /// batches: the kernel may preempt a program ([`direct_records`]).
    pub direct_records: bool,
}

/// Why records go to the ring one at a time (batch.bpf.c, "Direct
/// records"), or None where per-CPU batches are safe: the kernel preempts no
/// task in the kernel. `MAGNET_DIRECT_RECORDS=1` (or `0`) decides instead,
/// for a kernel whose model cannot be read and for the tests of both paths.
pub(in crate::recorder) fn direct_records() -> Option<String> {
    match std::env::var("MAGNET_DIRECT_RECORDS").as_deref() {
        Ok("1") => return Some("MAGNET_DIRECT_RECORDS=1".into()),
        Ok("0") => return None,
        _ => {}
    }
    let (model, from) = magnet_kernel::preempt::Preemption::detect();
    model.preempts_programs().then(|| {
        format!(
            "this kernel may preempt a task inside a program (preemption model {model}, from {from}), \
             where per-CPU batches would lose records"
        )
    })
}

impl Helpers {
    pub(in crate::recorder) fn of(kernel: &probes::Kernel) -> Helpers {
        let btf = &kernel.btf;
        Helpers {
            bpf_loop: btf.has_enum_value("bpf_func_id", "BPF_FUNC_loop"),
            cookie: btf.has_func("bpf_get_socket_ptr_cookie"),
            sk_storage: btf.has_func("bpf_sk_storage_get_tracing"),
            task_storage: kernel.task_storage,
            direct_records: direct_records().is_some(),
        }
    }

    /// The object's program that does the work of `name` here: its twin
    /// without the -f filter where the kernel has no bpf_loop.
    pub(in crate::recorder) fn prog(&self, name: &str) -> String {
        if !self.bpf_loop && PF_TWINS.contains(&name) {
            format!("{name}_nl")
        } else {
            name.to_string()
        }
    }
}

/// The packet programs record.bpf.c defines with PF_PROG: each has a twin
/// `NAME_nl` without the -f filter (and without bpf_loop's callback, which a
/// kernel before 5.13 refuses in any program that holds it).
pub(super) const PF_TWINS: &[&str] = &[
    "qdisc_enq",
    "qdisc_deq",
    "dev_queue",
    "dev_start_xmit",
    "dev_xmit",
    "dev_rx",
    "tcp_rx_seg",
    "drop_kfree_skb",
    "drop_kfree_skb_2arg",
    "ip_local_out_fexit4",
    "ip_local_out_fexit6",
    "ip_post_routing_fentry4",
    "ip_post_routing_fentry6",
    "ip_pre_routing_fentry4",
    "ip_pre_routing_fentry6",
    "ip_local_in_fentry4",
    "ip_local_in_fentry6",
];

/// Opens, configures (filters, options, ring array size) and loads the
/// object. A hook the table allows can still be refused by this kernel's
/// verifier (e.g. 6.12 lets netfilter programs call fewer helpers than 6.18):
/// its probe moves on to its next hook and the object is loaded again.
pub(in crate::recorder) fn load(
    kernel: &probes::Kernel,
    plan: &mut Plan,
    needs: &Needs<'_>,
    cpus: u32,
    ring_bytes: u32,
) -> Result<RecordSkel<'static>> {
    let config = needs.config;
    let sources = &mut plan.sources;
    if !config.pcap_filter_insns.is_empty() && !needs.helpers.bpf_loop {
        bail!(
            "the filter expression cannot run on this kernel ({}): it runs in the kernel on \
             bpf_loop, which this kernel lacks (Linux 5.17+); record without it",
            kernel.features.release
        );
    }
    if let (Some(Err(why)), Some(src)) = (&needs.frame_pages, sources.get_mut(&Layer::Dev)) {
        src.missing.push(format!(
            "--snaplen: frame bytes in page fragments not read ({why}): frames keep the skb's linear part"
        ));
    }
    load_with_fallback(
        kernel,
        needs.helpers,
        &mut plan.chosen,
        |probe, why| left_out(config, sources, probe, why),
        |open| configure(open, needs, cpus, ring_bytes),
        &|chosen, name| needs.wants(chosen, name),
    )
}

use magnet_host::libbpf_log as load_log;

/// The object's read-only settings from the recording's options, the
/// options checked first (a task name the kernel would truncate, a filter
/// too long for its map), and the ring array sized for `cpus`.
fn configure(
    open: &mut OpenRecordSkel<'static>,
    needs: &Needs<'_>,
    cpus: u32,
    ring_bytes: u32,
) -> Result<()> {
    let config = needs.config;
    let tasks = needs.tasks;
    {
        let ro = open
            .maps
            .rodata_data
            .as_deref_mut()
            .expect("the object has read-only settings");
        ro.filter_tasks = tasks.filter_tasks;
        ro.func_exits = config.func_exits && !config.funcs.is_empty();
        ro.filter_pid = tasks.filter_pids;
        if let Some(comm) = &config.filters.comm {
            if comm.len() > 15 {
                bail!("--comm '{comm}': task names are at most 15 bytes (the kernel truncates longer ones)");
            }
            ro.filter_comm = true;
            for (i, b) in comm.bytes().enumerate() {
                ro.comm_filter[i] = b as i8;
            }
        }
        ro.cgroup_filter = tasks.cgroup.unwrap_or(0);
        ro.port_filter = config.filters.port.unwrap_or(0);
        // Namespace inodes are 32-bit in the kernel (ns_common.inum).
        ro.netns_only = config.filters.netns.unwrap_or(0) as u32;
        if let Some(h) = config.filters.host {
            ro.filter_host = true;
            ro.host_filter = addr16(h);
        }
        ro.tcp_state = config.tcp_state;
        ro.snaplen = config.snaplen.min(crate::config::SNAPLEN_MAX);
        if let Some(Ok(page)) = &needs.frame_pages {
            ro.frag_pfn = page.pfn;
            ro.frag_mark = page.mark;
        }
        if config.pcap_filter_insns.len() > crate::config::PCAP_FILTER_MAX_INSNS {
            bail!(
                "the filter expression compiles to {} instructions; at most {} fit",
                config.pcap_filter_insns.len(),
                crate::config::PCAP_FILTER_MAX_INSNS
            );
        }
        ro.pf_len = config.pcap_filter_insns.len() as u32;
        // Received packets are attributed by flow: keep every announced
        // socket's flow when a layer sees packets.
        ro.track_all_flows = needs.packets;
        ro.tcp_rx_other = tcp_rcv_on(config);
        ro.app_send_on = kind_on(config, "app_send");
        ro.app_recv_on = kind_on(config, "app_recv");
        ro.wakeup_bytes = config.wakeup_bytes;
        ro.record_fork = config.layers.contains(&Layer::Sched);
        ro.id_ring_index = cpus;
        ro.has_id_ring = true;
    }
    // One more ring after the CPUs' for identity (SOCK) records only.
    open.maps
        .rings
        .set_max_entries(cpus + 1)
        .context("sizing the ring array")?;
    // Wake the reader well before one CPU's ring fills.
    open.maps
        .rodata_data
        .as_deref_mut()
        .expect("the object has read-only settings")
        .wakeup_bytes = config.wakeup_bytes.min(ring_bytes as u64 / 8);
    // A batch is at most a quarter of its CPU's ring.
    open.maps
        .rodata_data
        .as_deref_mut()
        .expect("the object has read-only settings")
        .batch_limit = (ring_bytes / 4).clamp(512, 4096);
    Ok(())
}

/// The loaded object holding the programs of the `chosen` hooks (and the
/// support programs `wanted` names). A hook the table allows can still be
/// refused by this kernel's verifier (6.12 lets netfilter programs call fewer
/// helpers than 6.18): the program that failed is named in libbpf's log; its
/// probe moves on to its next hook the kernel has (or, with none left, goes to
/// `refused`) and the object is loaded again.
pub(super) fn load_with_fallback(
    kernel: &probes::Kernel,
    helpers: Helpers,
    chosen: &mut Vec<Choice<Layer>>,
    mut refused: impl FnMut(&'static Probe, &str) -> Result<()>,
    mut configure: impl FnMut(&mut OpenRecordSkel<'static>) -> Result<()>,
    wanted: &dyn Fn(&[Choice<Layer>], &str) -> bool,
) -> Result<RecordSkel<'static>> {
    // What the verifier refused so far: (probe, hook) → why.
    let mut refusals = Refusals::new();
    loop {
        // One small allocation per attempt, kept for the recording's life.
        let storage = magnet_host::object_storage();
        let mut open = RecordSkelBuilder::default()
            .open(storage)
            .context("opening the BPF object failed")?;
        configure(&mut open)?;
        set_kernel_settings(&mut open, helpers, chosen, wanted)?;
        let (loaded, log) = load_log::capture(|| open.load());
        let e = match loaded {
            Ok(skel) => return Ok(skel),
            Err(e) => e,
        };
        let failed = load_log::failed_program(&log).map(|p| match p.strip_suffix("_nl") {
            Some(base) if PF_TWINS.contains(&base) => base.to_string(),
            _ => p,
        });
        let reason = load_log::verifier_reason(&log);
        let next = failed.as_deref().and_then(|prog| {
            chosen
                .iter()
                .position(|c| chosen_has(std::slice::from_ref(c), prog))
        });
        let Some(i) = next else {
            let progs: Vec<String> = chosen.iter().filter_map(|c| c.name()).collect();
            bail!(
                "loading the BPF programs failed on Linux {}: {e}{}{}\n\
                 hooks chosen for this kernel: {}; `magnet record --check` lists them; \
                 run with -v to see the verifier's log",
                kernel.features.release,
                failed
                    .map(|p| format!(" (program {p})"))
                    .unwrap_or_default(),
                reason.map(|r| format!(": {r}")).unwrap_or_default(),
                progs.join(", ")
            );
        };
        let mut c = chosen.remove(i);
        let at = *c.chosen.as_ref().expect("chosen");
        let why = format!(
            "{}: the verifier refused {}: {}",
            c.part.candidates[at].name(),
            failed.as_deref().unwrap_or("?"),
            reason
                .as_deref()
                .unwrap_or("magnet -v shows the verifier's log")
        );
        refusals.insert((c.part.name, at), why.clone());
        // Its next hook this kernel has; with none, every later candidate
        // is named too, with what it lacks.
        let (next, rest) = c.part.choose_from(at + 1, &|a| kernel.lacks(a), &refusals);
        match next {
            Some(h) => {
                c.chosen = Ok(h);
                c.passed.push(why);
                c.passed.extend(rest);
                chosen.push(c);
            }
            None => {
                let why = std::iter::once(why)
                    .chain(rest)
                    .collect::<Vec<_>>()
                    .join("; ");
                refused(c.part, &why)?
            }
        }
    }
}

/// The settings that follow from what this kernel offers, and which
/// programs load: those of the `chosen` hooks and the support programs
/// `wanted` names, each as its twin without the filter where the kernel
/// has no bpf_loop.
fn set_kernel_settings(
    open: &mut OpenRecordSkel<'static>,
    helpers: Helpers,
    chosen: &[Choice<Layer>],
    wanted: &dyn Fn(&[Choice<Layer>], &str) -> bool,
) -> Result<()> {
    // Task storage (5.11+) holds each thread's socket call in flight;
    // without it the same state lives in a hash by thread id.
    {
        let ro = open
            .maps
            .rodata_data
            .as_deref_mut()
            .expect("the object has read-only settings");
        ro.in_flight_by_tid = !helpers.task_storage;
        ro.cookie_helper = helpers.cookie;
        ro.sk_storage_in_tracing = helpers.sk_storage;
        ro.direct_records = helpers.direct_records;
    }
    if helpers.task_storage {
        open.maps.in_flight_tid.set_max_entries(1)?;
    } else {
        open.maps.in_flight.set_autocreate(false)?;
    }
    if helpers.sk_storage {
        open.maps.sock_flags_by_key.set_max_entries(1)?;
    }
    for mut prog in open.open_object_mut().progs_mut() {
        let name = prog.name().to_string_lossy().into_owned();
        // A twin without the filter stands in for its program, or not.
        let load = match name.strip_suffix("_nl") {
            Some(base) if PF_TWINS.contains(&base) => !helpers.bpf_loop && wanted(chosen, base),
            _ => helpers.prog(&name) == name && wanted(chosen, &name),
        };
        prog.set_autoload(load);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PF_TWINS names exactly the programs the recorder's BPF files define
    /// with PF_PROG (each of which has its `_nl` twin).
    #[test]
    fn the_filter_twins_are_the_pf_programs() {
        let src = crate::bpf_program_sources();
        let mut defined: Vec<&str> = src
            .split("\nPF_PROG(\"")
            .skip(1)
            .filter_map(|rest| rest.split(", ").nth(1))
            .collect();
        defined.sort_unstable();
        let mut listed = PF_TWINS.to_vec();
        listed.sort_unstable();
        assert_eq!(defined, listed);
    }

    /// The names asked of the kernel's BTF exist on a kernel that has each
    /// ability (this machine's 6.18): a misspelt one would silently put every
    /// kernel on the fallbacks. Where they are missing (5.10) the QEMU lab
    /// records through the fallbacks (scripts/lab/matrix).
    #[test]
    fn helpers_are_found_on_a_kernel_that_has_them() {
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: the map probe needs root");
            return;
        }
        let Ok(kernel) = probes::Kernel::detect() else {
            eprintln!("skipped: no BTF");
            return;
        };
        let h = Helpers::of(&kernel);
        assert!(
            h.bpf_loop && h.cookie && h.sk_storage && h.task_storage,
            "{h:?}"
        );
        assert_eq!(h.prog("dev_rx"), "dev_rx");
        let old = Helpers {
            bpf_loop: false,
            ..h
        };
        assert_eq!(old.prog("dev_rx"), "dev_rx_nl");
        assert_eq!(old.prog("app_send_fexit4"), "app_send_fexit4");
    }
}
