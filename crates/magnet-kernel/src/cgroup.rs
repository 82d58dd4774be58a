//! Where the cgroup v2 hierarchy is mounted: the root every cgroup program
//! of magnet attaches to (magnetd's per-packet programs, the recorder's
//! socket-creation program) and the parent of every `--cgroup` directory.

use std::path::PathBuf;

/// The cgroup v2 mount point (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified`
/// on hybrid hosts), from /proc/self/mountinfo: None when this mount
/// namespace shows none (`ip netns exec` remounts /sys and hides it).
pub fn root() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    root_in(&info)
}

/// [`root`] from the text of a mountinfo file.
pub fn root_in(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|l| {
        // mount ID, parent ID, major:minor, root, mount point, … - fstype …
        let (left, right) = l.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let p = PathBuf::from(left.split_whitespace().nth(4)?);
        p.is_dir().then_some(p)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgroup2_mount_point_is_found_among_others() {
        let info = "\
22 1 0:21 / /proc rw,nosuid - proc proc rw
30 23 0:26 / /tmp rw,nosuid shared:5 - tmpfs tmpfs rw
31 23 0:27 / /tmp/x rw - cgroup cgroup rw,memory
32 23 0:28 / /tmp rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
";
        assert_eq!(root_in(info), Some(PathBuf::from("/tmp")));
        assert_eq!(root_in("22 1 0:21 / /proc rw - proc proc rw\n"), None);
        // a mount point this process cannot see as a directory is no root
        assert_eq!(
            root_in("32 23 0:28 / /nonexistent/cg rw - cgroup2 cgroup2 rw\n"),
            None
        );
    }
}
