//! What the recorder reads from the kernel besides the rings: the per-CPU
//! loss counters and what each CPU's batch still holds at the end.

use anyhow::{anyhow, Result};
use libbpf_rs::{MapCore, MapFlags};
use magnet_trace::catalog::kind;
use magnet_trace::events::{CpuStats, Lost};

use super::host::monotonic_now;

/// Per-CPU counters from the kernel (struct mg_cpu_stats).
pub(super) struct KernelStats {
    pub(super) unreported_lost: Vec<u64>,
    pub(super) lost_total: u64,
    /// Events lost by kind; the kernel counts only loss (no per-event
    /// counter on the hot path), so generated = recorded + lost.
    pub(super) lost_kind: Vec<u64>,
}

pub(super) fn read_kernel_stats(map: &dyn MapCore) -> Result<KernelStats> {
    let key = 0u32.to_ne_bytes();
    let per_cpu = map
        .lookup_percpu(&key, MapFlags::ANY)?
        .ok_or_else(|| anyhow!("cpu_stats map is empty"))?;
    let mut s = KernelStats {
        unreported_lost: Vec::new(),
        lost_total: 0,
        lost_kind: vec![0; kind::MAX as usize],
    };
    for cpu in &per_cpu {
        // Little-endian hosts only (as the trace): native order is the views' order.
        let c = CpuStats::new_checked(cpu.as_slice()).ok_or_else(|| {
            anyhow!(
                "cpu_stats value is {} bytes, not {}",
                cpu.len(),
                CpuStats::<&[u8]>::SIZE
            )
        })?;
        s.unreported_lost.push(c.lost());
        s.lost_total += c.lost_total();
        for k in 0..kind::MAX as usize {
            s.lost_kind[k] += c.lost_kind(k);
        }
    }
    Ok(s)
}

/// Layout of record.bpf.c's `struct batch` (per-CPU map `batches`): u32
/// depth, u32 len, u64 first_ts, u32 pend[4], then the batch's bytes.
pub(super) const BATCH_LEN_AT: usize = 4;
pub(super) const BATCH_DATA_AT: usize = 32;
pub(super) const BATCH_BYTES: usize = 4096;

/// The bytes each CPU's batch holds (as the ring would carry them), once no
/// program runs. A CPU whose batch is empty gives nothing.
pub(super) fn read_batches(map: &dyn MapCore) -> Result<Vec<Vec<u8>>> {
    let key = 0u32.to_ne_bytes();
    let per_cpu = map
        .lookup_percpu(&key, MapFlags::ANY)?
        .ok_or_else(|| anyhow!("batches map is empty"))?;
    Ok(per_cpu.iter().filter_map(|v| batch_bytes(v)).collect())
}

/// The batch in one CPU's value of `batches`, if it holds records.
pub(super) fn batch_bytes(value: &[u8]) -> Option<Vec<u8>> {
    let len =
        u32::from_ne_bytes(value.get(BATCH_LEN_AT..BATCH_LEN_AT + 4)?.try_into().ok()?) as usize;
    if len <= 8 || len > BATCH_BYTES {
        return None;
    }
    value
        .get(BATCH_DATA_AT..BATCH_DATA_AT + len)
        .map(|b| b.to_vec())
}

/// A LOST record made in user space (reason 2: counted by the kernel but not
/// yet reported in the stream when the recording ended).
pub(super) fn residual_lost_record(cpu: u16, count: u64) -> Vec<u8> {
    let mut r = vec![0u8; Lost::<&[u8]>::LEN];
    let mut l = Lost::new_checked(&mut r[..]).expect("LEN bytes");
    let mut h = l.hdr_mut();
    h.set_ts_ns(monotonic_now());
    h.set_kind(kind::LOST);
    h.set_cpu(cpu);
    l.set_count(count);
    l.set_lost_cpu(cpu as u32);
    l.set_reason(2);
    r
}
