//! Host code that magnet's BPF users share (the recorder in magnet-record, the
//! sampler in magnet-sample): whether this host can load BPF at all and what
//! to do when it cannot ([`preflight`]), the clock pair that maps BPF
//! timestamps to wall-clock time ([`clock`]), attach helpers for netfilter,
//! TCX and clsact ([`attach`]), libbpf's load messages ([`libbpf_log`]), and
//! the host's sockets with their cookies and inodes ([`sockdiag`]).
//!
//! It compiles no BPF of its own, so a crate that needs only this does not
//! build the recorder's programs.

pub mod attach;
pub mod clock;
pub mod libbpf_log;
pub mod sockdiag;

use std::path::Path;

/// Why this host cannot run a BPF tool, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// Not root. `what` is the tool's job ("recording", "sampling"), `needs`
    /// what it does that requires privilege.
    #[error("{what} needs root ({needs}); run it with sudo")]
    NotRoot { what: String, needs: String },
    /// The kernel exposes no BTF (CO-RE programs cannot be relocated).
    #[error(
        "this kernel exposes no BTF ({path} is missing); magnet needs a kernel built with \
         CONFIG_DEBUG_INFO_BTF=y (Linux 5.8 or later; most distributions enable it)"
    )]
    NoBtf { path: String },
}

/// What a tool needs privilege for, said in its refusal.
#[derive(Clone, Copy, Debug)]
pub struct Privilege {
    /// The job: "recording", "sampling".
    pub what: &'static str,
    /// What it does that needs root, with the capabilities.
    pub needs: &'static str,
}

/// Refuses early, with what to do, when the host cannot load BPF programs:
/// not root, or no kernel BTF.
pub fn preflight(p: Privilege) -> Result<(), HostError> {
    if !nix::unistd::geteuid().is_root() {
        return Err(HostError::NotRoot {
            what: p.what.into(),
            needs: p.needs.into(),
        });
    }
    btf_present(Path::new("/sys/kernel/btf/vmlinux"))
}

fn btf_present(btf: &Path) -> Result<(), HostError> {
    if btf.exists() {
        Ok(())
    } else {
        Err(HostError::NoBtf {
            path: btf.display().to_string(),
        })
    }
}

/// The running kernel's release (`uname -r`), or "" when unknown.
pub fn kernel_release() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// This host's node name, or "" when unknown.
pub fn host_name() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.nodename().to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Storage for a libbpf-rs skeleton's open object that lives as long as the
/// program: skeletons borrow it for their whole life, and a recording or a
/// sampler keeps its skeleton to the end (one small allocation per load).
pub fn object_storage() -> &'static mut std::mem::MaybeUninit<libbpf_rs::OpenObject> {
    Box::leak(Box::new(std::mem::MaybeUninit::uninit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_say_what_is_missing_and_what_to_do() {
        let e = HostError::NotRoot {
            what: "sampling".into(),
            needs: "it attaches tc programs: CAP_BPF, CAP_NET_ADMIN".into(),
        };
        assert_eq!(
            e.to_string(),
            "sampling needs root (it attaches tc programs: CAP_BPF, CAP_NET_ADMIN); run it with sudo"
        );
        let e = btf_present(Path::new("/nonexistent/vmlinux")).unwrap_err();
        assert!(
            e.to_string().contains("/nonexistent/vmlinux is missing"),
            "{e}"
        );
        assert!(e.to_string().contains("CONFIG_DEBUG_INFO_BTF=y"), "{e}");
    }

    #[test]
    fn release_and_name() {
        assert!(!kernel_release().is_empty());
        assert!(kernel_release().chars().next().unwrap().is_ascii_digit());
    }
}
