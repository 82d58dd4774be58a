//! Pinning a test's threads to one CPU.
//!
//! On `lo` (and between veth ends) a sent packet is queued on the sending CPU's backlog
//! and received by that CPU's softirq. A sender and receiver that move between CPUs spread
//! one connection over several backlogs that drain concurrently, so a hook early on the
//! receive path (tc ingress, `netif_receive_skb`) can see a flow's segments in an order the
//! socket, later on, does not. Tests that count order-dependent things (segments below the
//! highest sequence seen, records in arrival order) pin every thread of the connection to
//! one CPU so that the order is the kernel's one queue.

/// The first CPU this process may run on.
pub fn first_allowed_cpu() -> usize {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity writes at most its size;
    // pid 0 is this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            if let Some(cpu) = (0..libc::CPU_SETSIZE as usize).find(|&c| libc::CPU_ISSET(c, &set)) {
                return cpu;
            }
        }
    }
    0
}

/// Pins the calling thread (only it, not the process) to `cpu`; panics if the kernel refuses.
pub fn pin_current_thread(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes inside it; pid 0 is this thread.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    assert_eq!(
        rc,
        0,
        "pinning a test thread to CPU {cpu}: {}",
        std::io::Error::last_os_error()
    );
}
