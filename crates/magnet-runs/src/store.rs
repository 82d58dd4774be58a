//! A directory of runs, one native file each, named so that a listing sorts by
//! time and needs no file to be opened:
//!
//! ```text
//! 20261122T100000.000Z_eth0_100us.msr
//! ```
//!
//! Files are written under a temporary name and renamed, so a scheduler
//! killed mid-write leaves no half run; runs already stored stay readable
//! across restarts. Retention removes runs that began before the limit, and
//! nothing else (other files in the directory are left alone).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::run::Run;
use crate::Error;
use magnet_common::units::{compact_instant_ns, format_duration, parse_compact_instant};

pub const EXTENSION: &str = "msr";

/// One stored run, from its file name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub path: PathBuf,
    pub name: String,
    pub start_ns: u64,
    pub iface: String,
    pub interval: String,
}

pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the store at `dir`.
    pub fn open(dir: &Path) -> Result<Store, Error> {
        std::fs::create_dir_all(dir).map_err(|e| Error::Io {
            path: dir.display().to_string(),
            source: e,
        })?;
        Ok(Store {
            dir: dir.to_path_buf(),
        })
    }

    /// Opens the store at `dir` to read it: a directory that is not there is
    /// an error, not created (`sample ls --store /typo` must not make one).
    pub fn existing(dir: &Path) -> Result<Store, Error> {
        if !dir.is_dir() {
            return Err(Error::Io {
                path: dir.display().to_string(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no such directory (a store is made by 'magnet sample --store DIR')",
                ),
            });
        }
        Ok(Store {
            dir: dir.to_path_buf(),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file name a run is stored under.
    pub fn file_name(run: &Run) -> String {
        format!(
            "{}_{}_{}.{EXTENSION}",
            compact_instant_ns(run.meta.start_realtime_ns),
            name_iface(&run.meta.iface),
            format_duration(Duration::from_nanos(run.meta.interval_ns))
        )
    }

    /// The start of the newest run stored for interface `iface`, if any. A
    /// scheduler started again plans after it, so that it never writes over
    /// a run of the same instant (one its predecessor stored, cut short, when
    /// SIGTERM ended it).
    pub fn latest_start(&self, iface: &str) -> Result<Option<u64>, Error> {
        let iface = name_iface(iface);
        Ok(self
            .list()?
            .iter()
            .filter(|e| e.iface == iface)
            .map(|e| e.start_ns)
            .max())
    }

    pub fn save(&self, run: &Run) -> Result<PathBuf, Error> {
        let path = self.dir.join(Store::file_name(run));
        run.save(&path)?;
        Ok(path)
    }

    fn parse_name(path: &Path) -> Option<Entry> {
        let name = path.file_name()?.to_str()?;
        let stem = name.strip_suffix(&format!(".{EXTENSION}"))?;
        let mut parts = stem.splitn(3, '_');
        let start_ns = parse_compact_instant(parts.next()?)?;
        let iface = parts.next()?.to_string();
        let interval = parts.next()?.to_string();
        Some(Entry {
            path: path.to_path_buf(),
            name: name.to_string(),
            start_ns,
            iface,
            interval,
        })
    }

    /// Stored runs, oldest first.
    pub fn list(&self) -> Result<Vec<Entry>, Error> {
        let io = |e| Error::Io {
            path: self.dir.display().to_string(),
            source: e,
        };
        let mut out = Vec::new();
        for e in std::fs::read_dir(&self.dir).map_err(io)? {
            let e = e.map_err(io)?;
            if let Some(entry) = Store::parse_name(&e.path()) {
                out.push(entry);
            }
        }
        out.sort_by(|a, b| (a.start_ns, &a.name).cmp(&(b.start_ns, &b.name)));
        Ok(out)
    }

    /// Finds a run by file name, name prefix (e.g. `20261122T1000`), `latest`,
    /// or position from the end (`-1` = latest, `-2` the one before).
    pub fn find(&self, which: &str) -> Result<Entry, Error> {
        let list = self.list()?;
        let none = || Error::Config(format!("no run '{which}' in {}", self.dir.display()));
        if which == "latest" {
            return list.last().cloned().ok_or_else(none);
        }
        if let Some(Ok(back)) = which.strip_prefix('-').map(str::parse::<usize>) {
            return list
                .len()
                .checked_sub(back)
                .and_then(|i| list.get(i))
                .cloned()
                .ok_or_else(none);
        }
        let hits: Vec<&Entry> = list.iter().filter(|e| e.name.starts_with(which)).collect();
        match hits.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(none()),
            many => Err(Error::Config(format!(
                "'{which}' matches {} runs; give more of the name",
                many.len()
            ))),
        }
    }

    /// Removes runs that began more than `max_age` before `now_ns`. Returns
    /// what it removed.
    pub fn retain(&self, max_age: Duration, now_ns: u64) -> Result<Vec<Entry>, Error> {
        let cutoff = now_ns.saturating_sub(max_age.as_nanos() as u64);
        let mut removed = Vec::new();
        for e in self.list()? {
            if e.start_ns < cutoff {
                std::fs::remove_file(&e.path).map_err(|err| Error::Io {
                    path: e.path.display().to_string(),
                    source: err,
                })?;
                removed.push(e);
            }
        }
        Ok(removed)
    }
}

/// An interface's name as a file name holds it (no `/`, and no `_`, which
/// separates the name's parts).
fn name_iface(iface: &str) -> String {
    iface.replace(['/', '_'], "-")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::RunMeta;

    fn run_at(start_ns: u64, iface: &str) -> Run {
        let mut m = RunMeta::synthetic("h", 100_000, 3);
        m.start_realtime_ns = start_ns;
        m.iface = iface.into();
        Run::zeroed(m, 3)
    }

    #[test]
    fn names_list_find_and_retention() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(dir.path()).unwrap();
        let day = 86_400_000_000_000u64;
        let now = 1_795_341_600_000_000_000u64;
        let old = s.save(&run_at(now - 4 * day, "eth0")).unwrap();
        let edge = s.save(&run_at(now - 3 * day + 1_000_000, "eth0")).unwrap();
        let new = s.save(&run_at(now - 1_000_000_000, "veth_x")).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "keep me").unwrap();
        std::fs::write(
            dir.path().join("20200101T000000.000Z_bogus.txt"),
            "keep me too",
        )
        .unwrap();
        assert_eq!(
            old.file_name().unwrap(),
            "20261118T100000.000Z_eth0_100us.msr"
        );
        let list = s.list().unwrap();
        assert_eq!(list.len(), 3);
        assert_eq!(list[2].iface, "veth-x");
        assert_eq!(s.latest_start("veth_x").unwrap(), Some(now - 1_000_000_000));
        assert_eq!(
            s.latest_start("eth0").unwrap(),
            Some(now - 3 * day + 1_000_000)
        );
        assert_eq!(s.latest_start("eth1").unwrap(), None);
        assert_eq!(s.find("latest").unwrap().path, new);
        assert_eq!(s.find("-3").unwrap().path, old);
        assert!(s
            .find("2026")
            .unwrap_err()
            .to_string()
            .contains("matches 3 runs"));

        let removed = s.retain(Duration::from_secs(3 * 86400), now).unwrap();
        assert_eq!(removed.len(), 1);
        assert_eq!(removed[0].path, old);
        assert!(!old.exists() && edge.exists() && new.exists());
        assert!(dir.path().join("notes.txt").exists());
        assert!(dir.path().join("20200101T000000.000Z_bogus.txt").exists());
        assert_eq!(
            Run::load(&edge).unwrap(),
            run_at(now - 3 * day + 1_000_000, "eth0")
        );
    }
}
