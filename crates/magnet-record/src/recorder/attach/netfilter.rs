//! Netfilter links in every network namespace: those at the start, and each
//! one made later.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context, Result};
use libbpf_rs::Link;
use libbpf_rs::{NFPROTO_IPV4, NFPROTO_IPV6};

/// Netfilter hooks are per network namespace (the link is made in the
/// namespace of the thread that makes it): the recorder enters every
/// namespace that exists at its start, and each one made later (see
/// [`Links::follow_new_namespaces`]), so that the ip layer (and send latency,
/// and `tcp out`) is recorded for sockets in any of them, as the tracepoint
/// layers are.
pub(super) struct NetfilterNamespaces {
    /// The recorder's own namespace (this thread's, restored after each
    /// visit).
    own: Option<std::fs::File>,
    /// Every namespace seen: hooked, being hooked, or skipped.
    known: std::collections::BTreeSet<u64>,
    /// Found at the start, hooked program by program by [`Self::attach`].
    at_start: Vec<(u64, std::fs::File)>,
    /// Namespaces that went away or refused to be entered: (inode, why).
    skipped: BTreeMap<u64, String>,
    /// The namespaces hooked, held open (see [`Links`]).
    pins: Vec<std::fs::File>,
    /// What was attached: (program, hook number, priority), to attach the
    /// same in a namespace made later.
    programs: Vec<(String, i32, i32)>,
    /// `record --netns` naming another namespace than the recorder's: its
    /// inode, the only one hooked (`None` for the own one, hooked as
    /// always).
    only: Option<u64>,
    /// Any `--netns` given: no other namespace, and none made later.
    filtered: bool,
}

/// Attaches `prog` at `hooknum` for IPv4 and IPv6 in this thread's namespace.
fn attach_both(prog: &libbpf_rs::ProgramMut<'_>, hooknum: i32, priority: i32) -> Result<Vec<Link>> {
    [NFPROTO_IPV4, NFPROTO_IPV6]
        .into_iter()
        .map(|pf| {
            magnet_host::attach::attach_netfilter(prog, pf, hooknum, priority)
                .map_err(anyhow::Error::from)
        })
        .collect()
}

impl NetfilterNamespaces {
    /// `only`: `record --netns`, the one namespace to hook (its inode).
    pub(super) fn open(only: Option<u64>) -> NetfilterNamespaces {
        use std::os::unix::fs::MetadataExt;
        let own = std::fs::File::open("/proc/thread-self/ns/net").ok();
        let own_ino = own
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .map(|m| m.ino());
        let mut known = std::collections::BTreeSet::new();
        known.extend(own_ino);
        let mut at_start = Vec::new();
        let mut skipped = BTreeMap::new();
        if own.is_some() {
            for (ino, path) in crate::netdevs::namespaces() {
                if only.is_some_and(|o| o != ino) || !known.insert(ino) {
                    continue;
                }
                match std::fs::File::open(&path) {
                    Ok(f) => at_start.push((ino, f)),
                    Err(e) => {
                        skipped.insert(ino, format!("{}: {e}", path.display()));
                    }
                }
            }
        }
        NetfilterNamespaces {
            own,
            known,
            at_start,
            skipped,
            pins: Vec::new(),
            programs: Vec::new(),
            only: only.filter(|&o| Some(o) != own_ino),
            filtered: only.is_some(),
        }
    }

    /// The namespaces hooked, held open while their links exist.
    pub(super) fn pins(&self) -> &[std::fs::File] {
        &self.pins
    }

    /// Runs `f` with this thread in namespace `ns`, and back in the
    /// recorder's own before anything else runs on it (sockets, the command
    /// started, belong in the own one). `None`: `ns` could not be entered.
    fn inside<T>(&self, ns: &std::fs::File, f: impl FnOnce() -> T) -> Result<Option<T>> {
        use nix::sched::{setns, CloneFlags};
        let Some(own) = &self.own else {
            return Ok(None);
        };
        if setns(ns, CloneFlags::CLONE_NEWNET).is_err() {
            return Ok(None);
        }
        let out = f();
        setns(own, CloneFlags::CLONE_NEWNET)
            .context("returning to the recorder's network namespace")?;
        Ok(Some(out))
    }

    /// Attaches `prog` at `hooknum` for IPv4 and IPv6 in the recorder's
    /// namespace (an error here is the hook's) and in every other one found
    /// at the start (a namespace that refuses is skipped, and named by
    /// [`Self::scope`]).
    pub(super) fn attach(
        &mut self,
        prog: &libbpf_rs::ProgramMut<'_>,
        hooknum: i32,
        priority: i32,
    ) -> Result<Vec<Link>> {
        // --netns elsewhere: not the recorder's own namespace.
        let mut links = if let Some(ino) = self.only {
            if self.at_start.is_empty() {
                bail!("network namespace net:[{ino}] (--netns) is held by no process and not under /run/netns: it cannot be entered");
            }
            Vec::new()
        } else {
            attach_both(prog, hooknum, priority)?
        };
        self.programs.push((
            prog.name().to_string_lossy().into_owned(),
            hooknum,
            priority,
        ));
        for (ino, ns) in &self.at_start {
            if self.skipped.contains_key(ino) {
                continue;
            }
            match self.inside(ns, || attach_both(prog, hooknum, priority))? {
                Some(Ok(l)) => links.extend(l),
                // The one namespace asked for: its hook's error is the layer's.
                Some(Err(e)) if self.only.is_some() => return Err(e),
                None if self.only.is_some() => {
                    bail!("could not enter network namespace net:[{ino}] (--netns)")
                }
                Some(Err(e)) => {
                    self.skipped.insert(*ino, format!("{e:#}"));
                }
                None => {
                    self.skipped.insert(*ino, "could not be entered".into());
                }
            }
        }
        Ok(links)
    }

    /// The line the ip layer's source carries: where its hooks are.
    pub(super) fn scope(&mut self) -> String {
        let mut entered = 0;
        // Hold the namespaces hooked (see Links); the others can go.
        for (ino, f) in std::mem::take(&mut self.at_start) {
            if !self.skipped.contains_key(&ino) {
                self.pins.push(f);
                entered += 1;
            }
        }
        if self.filtered {
            return match self.only {
                Some(ino) => {
                    format!("netfilter hooks in network namespace net:[{ino}] only (--netns)")
                }
                None => "netfilter hooks in the recorder's network namespace only (--netns)".into(),
            };
        }
        let mut line = format!(
            "netfilter hooks in every network namespace: the {} at the start, and each one made later from about a second after it appears",
            entered + 1
        );
        if !self.skipped.is_empty() {
            let why: Vec<String> = self
                .skipped
                .iter()
                .take(3)
                .map(|(i, w)| format!("net:[{i}] ({w})"))
                .collect();
            line.push_str(&format!(
                "; {} left out: {}{}",
                self.skipped.len(),
                why.join(", "),
                if self.skipped.len() > 3 { ", …" } else { "" }
            ));
        }
        line
    }

    /// The links of every attached program in each namespace made since the
    /// last look. A namespace that cannot be entered, or refuses one of
    /// them, is left as it is (its links so far detached).
    pub(super) fn follow_new(&mut self, object: &libbpf_rs::Object) -> Vec<Link> {
        let mut out = Vec::new();
        if self.programs.is_empty() || self.own.is_none() || self.filtered {
            return out;
        }
        for (ino, path) in crate::netdevs::namespaces() {
            if !self.known.insert(ino) {
                continue;
            }
            let Ok(ns) = std::fs::File::open(&path) else {
                continue; // gone meanwhile
            };
            let attached = self.inside(&ns, || -> Result<Vec<Link>> {
                let mut links = Vec::new();
                for (name, hooknum, priority) in &self.programs {
                    let prog = object
                        .progs_mut()
                        .find(|p| p.name().to_string_lossy() == name.as_str())
                        .ok_or_else(|| anyhow!("program {name} missing"))?;
                    links.extend(attach_both(&prog, *hooknum, *priority)?);
                }
                Ok(links)
            });
            match attached {
                Ok(Some(Ok(l))) => {
                    out.extend(l);
                    self.pins.push(ns);
                }
                Ok(_) => {}
                // This thread could not return to its own namespace: attach
                // nothing more from it.
                Err(_) => {
                    self.programs.clear();
                    break;
                }
            }
        }
        out
    }
}
