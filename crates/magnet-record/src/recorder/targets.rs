//! Targets: which tasks a recording follows (a command it starts, given pids
//! and what they fork, or the whole host), the task filters the kernel applies
//! (pids, comm, cgroup), and starting the target once everything is attached.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use anyhow::{bail, Context, Result};
use libbpf_rs::{MapCore, MapFlags};

use super::Target;
use crate::config::RecordConfig;

/// The task filters the kernel applies, from the target and the filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Tasks {
    /// Only tasks in the traced set (a command's or the given pids' tree).
    pub filter_pids: bool,
    /// `--cgroup`: the cgroup v2 id.
    pub cgroup: Option<u64>,
    /// Any task filter at all (pids, comm or cgroup).
    pub filter_tasks: bool,
}

impl Tasks {
    /// Checks the target (pids that exist, a cgroup directory) and says which
    /// filters the kernel needs.
    pub(super) fn resolve(config: &RecordConfig, target: &Target) -> Result<Tasks> {
        let filter_pids = matches!(target, Target::Command(_)) || !config.filters.pids.is_empty();
        if let Target::Pids = target {
            if config.filters.pids.is_empty() {
                bail!("no process given to trace (use -p PID, -- COMMAND or --all)");
            }
            for &p in &config.filters.pids {
                if !Path::new(&format!("/proc/{p}")).exists() {
                    bail!("-p {p}: no such process");
                }
            }
        }
        let cgroup = config
            .filters
            .cgroup
            .as_deref()
            .map(cgroup_id)
            .transpose()?;
        let filter_tasks = filter_pids || config.filters.comm.is_some() || cgroup.is_some();
        Ok(Tasks {
            filter_pids,
            cgroup,
            filter_tasks,
        })
    }
}

/// Starts the target: puts the given pids (and their descendants) in the
/// kernel's traced set, or runs the command while the recorder itself is in
/// it, so that the kernel's fork hook adds the child before it runs a single
/// instruction. Returns the command's child.
pub(super) fn start(
    target: &Target,
    config: &RecordConfig,
    traced: &dyn MapCore,
) -> Result<Option<Child>> {
    let one = [1u8];
    match target {
        Target::Command(argv) => {
            let me = std::process::id().to_ne_bytes();
            traced.update(&me, &one, MapFlags::ANY)?;
            let spawned = Command::new(&argv[0]).args(&argv[1..]).spawn();
            traced.delete(&me)?;
            spawned
                .map(Some)
                .with_context(|| format!("cannot run {}", argv[0].to_string_lossy()))
        }
        Target::Pids => {
            for &p in &config.filters.pids {
                for d in descendants(p) {
                    traced.update(&d.to_ne_bytes(), &one, MapFlags::ANY)?;
                }
            }
            Ok(None)
        }
        Target::All => Ok(None),
    }
}

pub(super) fn cgroup_id(path: &Path) -> Result<u64> {
    // A cgroup v2 directory's inode number is its id (bpf_get_current_cgroup_id).
    let md = std::fs::metadata(path)
        .with_context(|| format!("--cgroup {}: cannot stat", path.display()))?;
    if !md.is_dir() {
        bail!("--cgroup {}: not a directory (give a cgroup v2 path such as /sys/fs/cgroup/system.slice)", path.display());
    }
    Ok(md.ino())
}

/// The cgroup v2 root, for the cgroup link of `sock_cookie_at_create`: where
/// the hierarchy is mounted (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on
/// hybrid hosts), or, in a mount namespace that hides it (`ip netns exec`
/// remounts /sys), a private mount made for the moment of attaching.
pub(super) enum Cgroup2Root {
    Mounted(PathBuf),
    Private,
}

impl Cgroup2Root {
    pub(super) fn find() -> Cgroup2Root {
        magnet_kernel::cgroup::root().map_or(Cgroup2Root::Private, Cgroup2Root::Mounted)
    }

    /// The root directory, opened (a cgroup link holds the cgroup itself, so
    /// a private mount is undone at once).
    pub(super) fn open(&self) -> Result<std::fs::File> {
        match self {
            Cgroup2Root::Mounted(p) => std::fs::File::open(p)
                .with_context(|| format!("opening the cgroup v2 root {}", p.display())),
            Cgroup2Root::Private => {
                use nix::mount::{mount, umount2, MntFlags, MsFlags};
                let dir =
                    std::env::temp_dir().join(format!("magnet-cgroup2-{}", std::process::id()));
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                let opened = mount(
                    Some("cgroup2"),
                    &dir,
                    Some("cgroup2"),
                    MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                    None::<&str>,
                )
                .with_context(|| format!("mounting cgroup2 on {}", dir.display()))
                .and_then(|()| {
                    let f = std::fs::File::open(&dir)
                        .with_context(|| format!("opening {}", dir.display()));
                    let _ = umount2(&dir, MntFlags::MNT_DETACH);
                    f
                });
                let _ = std::fs::remove_dir(&dir);
                opened
            }
        }
    }
}

/// Descendants of `pid` that exist now (children forked later are followed in
/// the kernel).
pub(super) fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            // The ppid is the second field after the parenthesised comm.
            let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                continue;
            };
            if let Some(pp) = rest
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse::<u32>().ok())
            {
                parent_of.push((p, pp));
            }
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let cur = out[i];
        out.extend(
            parent_of
                .iter()
                .filter(|(_, pp)| *pp == cur)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descendants_are_found_in_proc() {
        let mut child = Command::new("sleep").arg("5").spawn().unwrap();
        let me = std::process::id();
        let d = descendants(me);
        child.kill().ok();
        child.wait().ok();
        assert_eq!(d[0], me);
        assert!(d.contains(&child.id()), "{d:?} lacks {}", child.id());
    }

    #[test]
    fn targets_and_filters() {
        let mut c = RecordConfig::new("x.mgt".into());
        let t = Tasks::resolve(&c, &Target::All).unwrap();
        assert!(!t.filter_tasks && !t.filter_pids);
        let t = Tasks::resolve(&c, &Target::Command(vec!["true".into()])).unwrap();
        assert!(t.filter_tasks && t.filter_pids);
        let e = Tasks::resolve(&c, &Target::Pids).unwrap_err();
        assert!(e.to_string().contains("no process given"), "{e}");
        c.filters.pids = vec![u32::MAX - 1];
        let e = Tasks::resolve(&c, &Target::Pids).unwrap_err();
        assert!(e.to_string().contains("no such process"), "{e}");
        c.filters.pids.clear();
        c.filters.cgroup = Some("/proc/self/status".into());
        let e = Tasks::resolve(&c, &Target::All).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
        c.filters.cgroup = Some("/".into());
        let t = Tasks::resolve(&c, &Target::All).unwrap();
        assert!(t.filter_tasks && t.cgroup.is_some());
    }
}
