//! The smallest BPF programs and attachments, made with raw libbpf calls so that
//! feature probes need no compiled object: `r0 = N; exit`, loaded as one
//! program type, attached one way, then closed.

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};

/// An errno with what was being done.
pub(crate) struct SysError {
    pub step: &'static str,
    pub errno: i32,
}

impl std::fmt::Display for SysError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let msg = std::io::Error::from_raw_os_error(self.errno);
        write!(f, "{} failed: {} (errno {})", self.step, msg, self.errno)
    }
}

type SysResult<T> = std::result::Result<T, SysError>;

#[repr(C)]
#[derive(Clone, Copy)]
struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

fn fd_or(step: &'static str, ret: i32) -> SysResult<OwnedFd> {
    if ret < 0 {
        let errno = if ret == -1 {
            std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EINVAL)
        } else {
            -ret
        };
        return Err(SysError { step, errno });
    }
    // SAFETY: a non-negative return is a new file descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(ret) })
}

/// Loads `r0 = ret; exit` as `prog_type` expecting `attach_type`.
pub(crate) fn load_trivial(
    prog_type: libbpf_sys::bpf_prog_type,
    attach_type: libbpf_sys::bpf_attach_type,
    attach_btf_id: u32,
    ret: i32,
) -> SysResult<OwnedFd> {
    let insns = [
        // BPF_ALU64 | BPF_MOV | BPF_K, dst r0
        Insn {
            code: 0xb7,
            regs: 0,
            off: 0,
            imm: ret,
        },
        // BPF_JMP | BPF_EXIT
        Insn {
            code: 0x95,
            regs: 0,
            off: 0,
            imm: 0,
        },
    ];
    let mut opts = libbpf_sys::bpf_prog_load_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_prog_load_opts>() as _,
        expected_attach_type: attach_type,
        attach_btf_id,
        ..Default::default()
    };
    let name = CString::new("magnet_probe").expect("no NUL");
    let license = CString::new("GPL").expect("no NUL");
    // SAFETY: pointers are valid for the call; the instruction layout is the
    // kernel's struct bpf_insn (8 bytes: code, dst:4/src:4, off, imm).
    let fd = unsafe {
        libbpf_sys::bpf_prog_load(
            prog_type,
            name.as_ptr(),
            license.as_ptr(),
            insns.as_ptr().cast(),
            insns.len() as _,
            &mut opts,
        )
    };
    fd_or("loading a test program", fd)
}

/// fentry/fexit: a tracing link on the program's BTF target.
pub(crate) fn attach_tracing(prog: &OwnedFd) -> SysResult<OwnedFd> {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid program fd; NULL name for tracing programs.
    let fd = unsafe { libbpf_sys::bpf_raw_tracepoint_open(std::ptr::null(), prog.as_raw_fd()) };
    fd_or("attaching a tracing link", fd)
}

/// A kprobe-multi link on `syms`.
pub(crate) fn attach_kprobe_multi(prog: &OwnedFd, syms: &[&str]) -> SysResult<OwnedFd> {
    use std::os::fd::AsRawFd;
    let c: Vec<CString> = syms
        .iter()
        .map(|s| CString::new(*s).expect("no NUL"))
        .collect();
    let mut ptrs: Vec<*const libc::c_char> = c.iter().map(|s| s.as_ptr()).collect();
    let mut opts = libbpf_sys::bpf_link_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as _,
        ..Default::default()
    };
    opts.__bindgen_anon_1.kprobe_multi.syms = ptrs.as_mut_ptr();
    opts.__bindgen_anon_1.kprobe_multi.cnt = ptrs.len() as u32;
    // SAFETY: opts and the symbol array live across the call.
    let fd = unsafe {
        libbpf_sys::bpf_link_create(
            prog.as_raw_fd(),
            0,
            libbpf_sys::BPF_TRACE_KPROBE_MULTI,
            &opts,
        )
    };
    fd_or("attaching a kprobe-multi link", fd)
}

/// A netfilter link (IPv4 LOCAL_OUT) at the first free priority from `priority`.
pub(crate) fn attach_netfilter(prog: &OwnedFd, priority: i32) -> SysResult<OwnedFd> {
    use std::os::fd::AsRawFd;
    let mut last = SysError {
        step: "attaching a netfilter link",
        errno: libc::EBUSY,
    };
    for i in 0..32 {
        let mut opts = libbpf_sys::bpf_link_create_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_link_create_opts>() as _,
            ..Default::default()
        };
        opts.__bindgen_anon_1.netfilter.pf = 2; // NFPROTO_IPV4
        opts.__bindgen_anon_1.netfilter.hooknum = 3; // NF_INET_LOCAL_OUT
        opts.__bindgen_anon_1.netfilter.priority = priority + i;
        // SAFETY: valid fd and options.
        let fd = unsafe {
            libbpf_sys::bpf_link_create(prog.as_raw_fd(), 0, libbpf_sys::BPF_NETFILTER, &opts)
        };
        match fd_or("attaching a netfilter link", fd) {
            Ok(l) => return Ok(l),
            Err(e) if e.errno == libc::EBUSY => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// The kprobe PMU's type number, if the kernel has kprobes.
pub(crate) fn kprobe_pmu() -> Option<u32> {
    std::fs::read_to_string("/sys/bus/event_source/devices/kprobe/type")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// A perf kprobe on `func` (no tracefs event is created) with `prog` attached.
pub(crate) fn attach_perf_kprobe(prog: &OwnedFd, pmu: u32, func: &str) -> SysResult<OwnedFd> {
    use std::os::fd::AsRawFd;
    let name = CString::new(func).expect("no NUL");
    // SAFETY: perf_event_attr is plain data; zero is its default.
    let mut attr: libbpf_sys::perf_event_attr = unsafe { std::mem::zeroed() };
    attr.type_ = pmu;
    attr.size = std::mem::size_of::<libbpf_sys::perf_event_attr>() as u32;
    attr.config = 0; // bit 0 set would make it a kretprobe
    attr.__bindgen_anon_3.kprobe_func = name.as_ptr() as u64;
    attr.__bindgen_anon_4.probe_offset = 0;
    // SAFETY: attr and name live across the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const _,
            -1i32,
            0i32,
            -1i32,
            8u64, // PERF_FLAG_FD_CLOEXEC
        )
    } as i32;
    let ev = fd_or("opening a perf kprobe", fd)?;
    const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;
    // SAFETY: valid fds.
    let r = unsafe {
        libc::ioctl(
            ev.as_raw_fd(),
            PERF_EVENT_IOC_SET_BPF as _,
            prog.as_raw_fd(),
        )
    };
    if r < 0 {
        return Err(SysError {
            step: "attaching a program to a perf kprobe",
            errno: std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EINVAL),
        });
    }
    Ok(ev)
}
