//! A socket's cgroup → the container it belongs to.
//!
//! The BPF side records the cgroup v2 id of the last task that used a socket
//! (`bpf_get_current_cgroup_id`). On cgroup v2 that id is the inode number of
//! the cgroup's directory, so user space finds the directory by walking the
//! hierarchy (cached), and reads the container id from its path, as the
//! runtimes name them:
//!
//! | runtime | cgroup path (systemd driver / cgroupfs driver) |
//! |---|---|
//! | docker | `…/docker-<64 hex>.scope` / `/docker/<64 hex>` |
//! | containerd (CRI) | `…/cri-containerd-<64 hex>.scope` / `/kubepods/…/<64 hex>` |
//! | CRI-O | `…/crio-<64 hex>.scope` |
//! | podman | `…/libpod-<64 hex>.scope` / `/libpod_parent/libpod-<64 hex>` |
//! | systemd-nspawn, machinectl | `/machine.slice/machine-<name>.scope` |
//!
//! Podman's `libpod-conmon-<id>.scope` is its monitor process, not the
//! container, and is not mapped.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A container as its cgroup path names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContainerId {
    pub runtime: &'static str,
    pub id: String,
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The container named by a cgroup path (relative to the cgroup root or not),
/// from the deepest component that names one.
pub fn from_cgroup_path(path: &str) -> Option<ContainerId> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    for (i, part) in parts.iter().enumerate().rev() {
        let scope = part.strip_suffix(".scope").unwrap_or(part);
        for (prefix, runtime) in [
            ("docker-", "docker"),
            ("cri-containerd-", "containerd"),
            ("crio-", "cri-o"),
            ("libpod-", "podman"),
        ] {
            if let Some(id) = scope.strip_prefix(prefix) {
                if is_hex64(id) {
                    return Some(ContainerId {
                        runtime,
                        id: id.to_ascii_lowercase(),
                    });
                }
            }
        }
        if let Some(name) = part
            .strip_prefix("machine-")
            .and_then(|s| s.strip_suffix(".scope"))
        {
            if !name.is_empty() {
                return Some(ContainerId {
                    runtime: "systemd",
                    id: name.to_string(),
                });
            }
        }
        if is_hex64(part) {
            let runtime = match parts[..i].first().copied() {
                Some("docker") => "docker",
                Some(p) if p.starts_with("kubepods") => "containerd",
                _ if parts[..i].iter().any(|p| p.starts_with("kubepods")) => "containerd",
                _ => "unknown",
            };
            return Some(ContainerId {
                runtime,
                id: part.to_ascii_lowercase(),
            });
        }
    }
    None
}

/// The cgroup directory (under the cgroup v2 `root`) of the container whose
/// id starts with `id` (at least 4 characters; a full id or a prefix, as
/// `docker ps` shows). The deepest directory naming it wins (podman's
/// `libpod-<id>.scope/container`). Errors say what was found instead.
pub fn find_container(root: &Path, id: &str) -> Result<PathBuf, String> {
    let want = id.to_ascii_lowercase();
    if want.len() < 4 {
        return Err(format!(
            "--container {id}: give at least 4 characters of the id"
        ));
    }
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = stack.pop() {
        seen += 1;
        if seen > 200_000 {
            break;
        }
        if let Ok(rel) = dir.strip_prefix(root) {
            if let Some(c) = from_cgroup_path(&format!("/{}", rel.display())) {
                if c.id.starts_with(&want) {
                    found.push((c.id, dir.clone()));
                }
            }
        }
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for e in rd.flatten() {
                if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                    stack.push(e.path());
                }
            }
        }
    }
    let mut ids: Vec<&str> = found.iter().map(|(i, _)| i.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    match ids.len() {
        0 => Err(format!(
            "--container {id}: no cgroup under {} names such a container (is it running?)",
            root.display()
        )),
        1 => Ok(found
            .into_iter()
            .max_by_key(|(_, p)| p.components().count())
            .map(|(_, p)| p)
            .expect("one found")),
        _ => Err(format!(
            "--container {id}: ambiguous, matches {}",
            ids.join(", ")
        )),
    }
}

/// Maps cgroup ids to paths under one cgroup v2 root, caching what it found.
pub struct Resolver {
    root: PathBuf,
    cache: HashMap<u64, Option<String>>,
}

impl Resolver {
    pub fn new(root: &Path) -> Resolver {
        Resolver {
            root: root.to_path_buf(),
            cache: HashMap::new(),
        }
    }

    /// The cgroup's path relative to the root ("/" for the root itself).
    pub fn path_of(&mut self, id: u64) -> Option<String> {
        if id == 0 {
            return None;
        }
        if let Some(p) = self.cache.get(&id) {
            return p.clone();
        }
        // One walk fills the cache with every cgroup there is now; what was
        // found before stays (the cgroup of a connection may be gone since).
        self.cache.retain(|_, v| v.is_some());
        if self.cache.len() > 65_536 {
            self.cache.clear();
        }
        let mut stack = vec![self.root.clone()];
        let mut seen = 0usize;
        while let Some(dir) = stack.pop() {
            seen += 1;
            if seen > 200_000 {
                break;
            }
            if let Ok(m) = std::fs::metadata(&dir) {
                let rel = dir
                    .strip_prefix(&self.root)
                    .map(|r| format!("/{}", r.display()))
                    .unwrap_or_default();
                self.cache.insert(m.ino(), Some(rel));
            }
            if let Ok(rd) = std::fs::read_dir(&dir) {
                for e in rd.flatten() {
                    if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                        stack.push(e.path());
                    }
                }
            }
        }
        let found = self.cache.get(&id).cloned().flatten();
        if found.is_none() {
            // Remember misses too (a cgroup gone since), until the next walk.
            self.cache.insert(id, None);
        }
        found
    }

    /// The container of a cgroup id, if its path names one.
    pub fn container_of(&mut self, id: u64) -> Option<ContainerId> {
        self.path_of(id).and_then(|p| from_cgroup_path(&p))
    }

    /// Forgets everything (cgroups come and go; called now and then).
    pub fn clear(&mut self) {
        self.cache.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3f2a5c0e9b8d7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a29";

    #[test]
    fn runtimes_name_containers_in_their_own_way() {
        for (path, runtime) in [
            (format!("/system.slice/docker-{ID}.scope"), "docker"),
            (format!("/docker/{ID}"), "docker"),
            (
                format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234.slice/cri-containerd-{ID}.scope"),
                "containerd",
            ),
            (format!("/kubepods/burstable/pod8f1e/{ID}"), "containerd"),
            (format!("/machine.slice/crio-{ID}.scope"), "cri-o"),
            (format!("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{ID}.scope"), "podman"),
            (format!("/libpod_parent/libpod-{ID}"), "podman"),
            (format!("/libpod-{ID}.scope/container"), "podman"),
        ] {
            let c = from_cgroup_path(&path).unwrap_or_else(|| panic!("{path}"));
            assert_eq!((c.runtime, c.id.as_str()), (runtime, ID), "{path}");
        }
        let m = from_cgroup_path("/machine.slice/machine-web1.scope").unwrap();
        assert_eq!((m.runtime, m.id.as_str()), ("systemd", "web1"));
    }

    #[test]
    fn paths_without_a_container_name_none() {
        for p in [
            "/",
            "/user.slice/user-1000.slice/session-3.scope",
            "/system.slice/ssh.service",
            &format!("/machine.slice/libpod-conmon-{ID}.scope"),
            "/docker/abc",
            &format!("/system.slice/docker-{}.scope", &ID[..63]),
        ] {
            assert_eq!(from_cgroup_path(p), None, "{p}");
        }
    }

    #[test]
    fn find_container_by_id_or_prefix() {
        let d = tempfile::tempdir().unwrap();
        let other = "9".repeat(64);
        let a = d.path().join(format!("system.slice/docker-{ID}.scope"));
        let b = d
            .path()
            .join(format!("machine.slice/libpod-{other}.scope/container"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        assert_eq!(find_container(d.path(), &ID[..12]).unwrap(), a);
        assert_eq!(find_container(d.path(), &ID.to_uppercase()).unwrap(), a);
        // podman: the deepest directory naming it.
        assert_eq!(find_container(d.path(), "9999").unwrap(), b);
        let e = find_container(d.path(), "abcd").unwrap_err();
        assert!(e.contains("no cgroup"), "{e}");
        assert!(find_container(d.path(), "3f")
            .unwrap_err()
            .contains("at least 4"));
        let third = d
            .path()
            .join(format!("docker/{}", "3f2a".to_string() + &"0".repeat(60)));
        std::fs::create_dir_all(&third).unwrap();
        assert!(find_container(d.path(), "3f2a")
            .unwrap_err()
            .contains("ambiguous"));
    }

    #[test]
    fn resolver_finds_a_directory_by_inode() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join(format!("system.slice/docker-{ID}.scope"));
        std::fs::create_dir_all(&sub).unwrap();
        let ino = std::fs::metadata(&sub).unwrap().ino();
        let mut r = Resolver::new(d.path());
        assert_eq!(
            r.path_of(ino).as_deref(),
            Some(format!("/system.slice/docker-{ID}.scope").as_str())
        );
        assert_eq!(r.container_of(ino).unwrap().id, ID);
        assert_eq!(r.path_of(u64::MAX), None);
    }
}
