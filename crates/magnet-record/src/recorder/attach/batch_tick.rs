//! The per-CPU batch tick: a cpu-clock perf event that makes each CPU send
//! its waiting records.

use anyhow::{bail, Context, Result};
use libbpf_rs::Link;

use crate::skel::RecordSkel;

/// How often each CPU's batch tick runs: a CPU gone quiet sends its last
/// records within this (plus the time the drain takes to poll).
pub(in crate::recorder) const BATCH_TICK_NS: u64 = 2_000_000;

const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// Attaches `batch_tick` to a cpu-clock perf event on every online CPU (an
/// offline CPU runs no program; it has nothing to send).
pub(super) fn attach_batch_tick(skel: &RecordSkel<'static>) -> Result<Vec<Link>> {
    let cpus = libbpf_rs::num_possible_cpus().context("counting the possible CPUs")?;
    let mut links = Vec::new();
    for cpu in 0..cpus {
        // SAFETY: perf_event_attr is plain data; all zero is a valid value.
        let mut attr: libbpf_sys::perf_event_attr = unsafe { std::mem::zeroed() };
        attr.type_ = libbpf_sys::PERF_TYPE_SOFTWARE;
        attr.size = std::mem::size_of::<libbpf_sys::perf_event_attr>() as u32;
        attr.config = libbpf_sys::PERF_COUNT_SW_CPU_CLOCK as u64;
        attr.__bindgen_anon_1.sample_period = BATCH_TICK_NS;
        // SAFETY: perf_event_open reads one perf_event_attr, which `attr` is.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const libbpf_sys::perf_event_attr,
                -1i32,
                cpu as i32,
                -1i32,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::ENODEV) {
                continue; // offline
            }
            bail!(
                "opening a cpu-clock perf event on CPU {cpu} (it sends each CPU's waiting \
                 records to the trace): {e}; the kernel needs CONFIG_PERF_EVENTS"
            );
        }
        // The link owns the perf event's fd from here (libbpf closes it).
        let link = skel
            .progs
            .batch_tick
            .attach_perf_event(fd as i32)
            .with_context(|| format!("attaching the batch tick to CPU {cpu}"));
        match link {
            Ok(l) => links.push(l),
            Err(e) => {
                // SAFETY: fd is ours and not attached.
                unsafe { libc::close(fd as i32) };
                return Err(e);
            }
        }
    }
    Ok(links)
}
