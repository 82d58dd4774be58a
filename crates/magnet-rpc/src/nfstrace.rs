//! nfstrace: file activity reconstructed from NFS transactions.
//!
//! * **Names.** File handles are mapped to paths from MOUNT (root handle of the mounted
//!   path), NFSv3 LOOKUP / CREATE / MKDIR / SYMLINK / MKNOD / READDIRPLUS / RENAME, and
//!   NFSv4 PUTROOTFH / PUTFH / LOOKUP / LOOKUPP / OPEN / CREATE / GETFH / SAVEFH /
//!   RESTOREFH / RENAME.
//! * **Sessions.** NFS has no open or close (v3) or clients may cache opens (v4), so an
//!   *open session* is inferred per (client address, uid, file): it opens at the first
//!   operation on the file and closes when the file has been idle longer than the idle
//!   window (default 120 s), at an NFSv4 CLOSE, or when the file is removed. A session
//!   still open at the end of the trace is closed there. Reads and writes are summed
//!   from the byte counts in successful replies; a *sequential run* is a maximal series
//!   of reads (or writes) each starting where the previous one ended.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use serde::Serialize;

use crate::progs::{Args, Res, MOUNT, NFS};
use crate::{Fh, Outcome, Transaction};

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CloseReason {
    Idle,
    Close,
    Remove,
    End,
}

/// One reconstructed open session.
#[derive(Debug, Clone, Serialize)]
pub struct Session {
    pub client: IpAddr,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// Path if known, otherwise `fh:<hex>`.
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fh: Option<Fh>,
    pub first_ns: i64,
    pub last_ns: i64,
    pub ops: u64,
    pub reads: u64,
    pub read_bytes: u64,
    pub read_runs: u64,
    pub writes: u64,
    pub write_bytes: u64,
    pub write_runs: u64,
    pub closed_by: CloseReason,
    #[serde(skip)]
    next_read: Option<u64>,
    #[serde(skip)]
    next_write: Option<u64>,
}

#[derive(Hash, PartialEq, Eq, Clone, Debug)]
enum FileKey {
    Fh(Fh),
    Path(String),
}

#[derive(Hash, PartialEq, Eq, Clone, Debug)]
struct SessKey {
    client: IpAddr,
    uid: Option<u32>,
    file: FileKey,
}

/// Latency samples of one group, bounded.
#[derive(Debug, Clone, Default)]
struct Lat {
    n: u64,
    samples: Vec<i64>,
    seen: u64,
}

const MAX_SAMPLES: usize = 1 << 20;

impl Lat {
    fn add(&mut self, ns: i64) {
        self.n += 1;
        self.seen += 1;
        if self.samples.len() < MAX_SAMPLES {
            self.samples.push(ns);
        } else {
            // Reservoir sampling keeps memory bounded on endless live runs.
            let j = (self.seen.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) % self.seen;
            if (j as usize) < MAX_SAMPLES {
                self.samples[j as usize] = ns;
            }
        }
    }
}

/// Per-operation latency row of `--stats`.
#[derive(Debug, Clone, Serialize)]
pub struct OpStat {
    pub op: String,
    pub count: u64,
    pub errors: u64,
    pub min_us: f64,
    pub median_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

/// Per-client or per-file row of `--stats`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Usage {
    pub name: String,
    pub ops: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    pub ops: Vec<OpStat>,
    pub clients: Vec<Usage>,
    pub files: Vec<Usage>,
}

/// The reconstruction state.
pub struct NfsTrace {
    idle_ns: i64,
    /// v3-style names: handle → (directory handle, name).
    parent: HashMap<Fh, (Fh, String)>,
    child: HashMap<(Fh, String), Fh>,
    /// Absolute paths: mount roots, NFSv4 names.
    full: HashMap<Fh, String>,
    full_rev: HashMap<String, Fh>,
    open: HashMap<SessKey, Session>,
    lat: BTreeMap<String, (Lat, u64)>,
    clients: HashMap<IpAddr, Usage>,
    files: HashMap<FileKey, Usage>,
    last_sweep: i64,
}

fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

fn parent_path(p: &str) -> String {
    match p.rfind('/') {
        Some(0) | None => "/".into(),
        Some(i) => p[..i].into(),
    }
}

/// The NFSv4 COMPOUND's main operation: the last one that is not bookkeeping
/// (SEQUENCE, PUT*FH, GETFH, GETATTR, SAVEFH, RESTOREFH), or the first.
pub fn v4_main_op(ops: &[crate::nfs4::OpArgs]) -> Option<&'static str> {
    ops.iter()
        .rev()
        .find(|o| !matches!(o.op, 53 | 22 | 23 | 24 | 10 | 9 | 32 | 31))
        .or(ops.first())
        .map(|o| o.name)
}

impl NfsTrace {
    pub fn new(idle_ns: i64) -> Self {
        NfsTrace {
            idle_ns,
            parent: HashMap::new(),
            child: HashMap::new(),
            full: HashMap::new(),
            full_rev: HashMap::new(),
            open: HashMap::new(),
            lat: BTreeMap::new(),
            clients: HashMap::new(),
            files: HashMap::new(),
            last_sweep: i64::MIN,
        }
    }

    /// The path of a handle, if known.
    pub fn path(&self, fh: &Fh) -> Option<String> {
        let mut parts: Vec<String> = Vec::new();
        let mut cur = fh.clone();
        for _ in 0..256 {
            if let Some(p) = self.full.get(&cur) {
                let mut s = p.clone();
                for n in parts.iter().rev() {
                    s = join(&s, n);
                }
                return Some(s);
            }
            let (d, n) = self.parent.get(&cur)?;
            parts.push(n.clone());
            cur = d.clone();
        }
        None
    }

    fn name_of(&self, k: &FileKey) -> String {
        match k {
            FileKey::Fh(f) => self
                .path(f)
                .unwrap_or_else(|| format!("fh:{}", crate::xdr::hex(&f.0))),
            FileKey::Path(p) => p.clone(),
        }
    }

    fn set_child(&mut self, dir: &Fh, name: &str, fh: &Fh) {
        if name == "." || name == ".." || fh == dir {
            return;
        }
        self.parent
            .insert(fh.clone(), (dir.clone(), name.to_owned()));
        self.child
            .insert((dir.clone(), name.to_owned()), fh.clone());
    }

    fn set_full(&mut self, fh: &Fh, path: String) {
        if self.parent.contains_key(fh) {
            return;
        }
        self.full_rev.insert(path.clone(), fh.clone());
        self.full.insert(fh.clone(), path);
    }

    /// Feeds one transaction (in reply order); sessions that ended go to `out`.
    pub fn add(&mut self, t: &Transaction, out: &mut dyn FnMut(Session)) {
        let now = t.reply_ts_ns.unwrap_or(t.call_ts_ns);
        if now > self.last_sweep.saturating_add(1_000_000_000) {
            self.last_sweep = now;
            self.sweep(now, out);
        }
        if t.outcome != Outcome::Complete {
            return;
        }
        let ok = t.reply_stat == Some(crate::rpc::ReplyStat::Success);
        // Latency per operation.
        let op = match (&t.args, t.prog) {
            (Args::Nfs4(c), _) => format!("v4.{}", v4_main_op(&c.ops).unwrap_or("null")),
            (_, NFS) if t.vers == 3 => t.command.clone(),
            _ => t.command.clone(),
        };
        let failed = !ok
            || t.res
                .as_ref()
                .and_then(|r| r.status())
                .is_some_and(|s| s != 0);
        let e = self.lat.entry(op).or_default();
        e.0.add(t.exec_ns().unwrap_or(0));
        if failed {
            e.1 += 1;
        }
        let cl = self.clients.entry(t.client.ip()).or_insert_with(|| Usage {
            name: t.client.ip().to_string(),
            ..Default::default()
        });
        cl.ops += 1;
        if !ok {
            return;
        }
        let uid = t.cred.uid();
        match (&t.args, &t.res) {
            (_, Some(Res::Mount { fh: Some(fh), .. })) if t.prog == MOUNT => {
                if let Args::Mount { path } = &t.args {
                    let fh = fh.clone();
                    self.set_full(&fh, path.clone());
                }
            }
            (Args::Nfs3(a), Some(Res::Nfs3(r))) if t.prog == NFS => self.v3(t, now, uid, a, r, out),
            (Args::Nfs4(c), Some(Res::Nfs4(r))) => self.v4(t, now, uid, c, r, out),
            _ => {}
        }
    }

    fn touch(
        &mut self,
        t: &Transaction,
        now: i64,
        uid: Option<u32>,
        file: FileKey,
        out: &mut dyn FnMut(Session),
    ) -> &mut Session {
        let key = SessKey {
            client: t.client.ip(),
            uid,
            file: file.clone(),
        };
        if let Some(s) = self.open.get(&key) {
            if now - s.last_ns > self.idle_ns {
                let mut s = self.open.remove(&key).unwrap();
                s.closed_by = CloseReason::Idle;
                s.file = self.name_of(&key.file);
                out(s);
            }
        }
        let name = self.name_of(&file);
        let fu = self.files.entry(file.clone()).or_default();
        fu.ops += 1;
        let s = self.open.entry(key).or_insert_with(|| Session {
            client: t.client.ip(),
            uid,
            file: name,
            fh: match &file {
                FileKey::Fh(f) => Some(f.clone()),
                FileKey::Path(_) => None,
            },
            first_ns: now,
            last_ns: now,
            ops: 0,
            reads: 0,
            read_bytes: 0,
            read_runs: 0,
            writes: 0,
            write_bytes: 0,
            write_runs: 0,
            closed_by: CloseReason::End,
            next_read: None,
            next_write: None,
        });
        s.last_ns = now;
        s.ops += 1;
        s
    }

    #[allow(clippy::too_many_arguments)]
    fn io(
        &mut self,
        t: &Transaction,
        now: i64,
        uid: Option<u32>,
        file: FileKey,
        write: bool,
        offset: u64,
        count: u64,
        out: &mut dyn FnMut(Session),
    ) {
        let s = self.touch(t, now, uid, file.clone(), out);
        if write {
            s.writes += 1;
            s.write_bytes += count;
            if s.next_write != Some(offset) {
                s.write_runs += 1;
            }
            s.next_write = Some(offset + count);
        } else {
            s.reads += 1;
            s.read_bytes += count;
            if s.next_read != Some(offset) {
                s.read_runs += 1;
            }
            s.next_read = Some(offset + count);
        }
        let fu = self.files.entry(file).or_default();
        let cl = self.clients.entry(t.client.ip()).or_default();
        if write {
            fu.write_bytes += count;
            cl.write_bytes += count;
        } else {
            fu.read_bytes += count;
            cl.read_bytes += count;
        }
    }

    fn end(
        &mut self,
        t: &Transaction,
        uid: Option<u32>,
        file: FileKey,
        why: CloseReason,
        out: &mut dyn FnMut(Session),
    ) {
        let key = SessKey {
            client: t.client.ip(),
            uid,
            file,
        };
        if let Some(mut s) = self.open.remove(&key) {
            s.closed_by = why;
            s.file = self.name_of(&key.file);
            out(s);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn v3(
        &mut self,
        t: &Transaction,
        now: i64,
        uid: Option<u32>,
        a: &crate::nfs3::Args,
        r: &crate::nfs3::Res,
        out: &mut dyn FnMut(Session),
    ) {
        if r.status != 0 {
            return;
        }
        match t.proc_ {
            3 | 8..=11 => {
                if let (Some(d), Some(n), Some(f)) = (&a.fh, &a.name, &r.fh) {
                    self.set_child(d, n, f);
                }
            }
            17 => {
                if let Some(d) = &a.fh {
                    for e in &r.entries {
                        if let Some(f) = &e.fh {
                            self.set_child(d, &e.name, f);
                        }
                    }
                }
            }
            14 => {
                if let (Some(d), Some(n), Some(d2), Some(n2)) = (&a.fh, &a.name, &a.fh2, &a.name2) {
                    if let Some(f) = self.child.remove(&(d.clone(), n.clone())) {
                        self.set_child(d2, n2, &f);
                    }
                }
            }
            12 => {
                if let (Some(d), Some(n)) = (&a.fh, &a.name) {
                    if let Some(f) = self.child.get(&(d.clone(), n.clone())).cloned() {
                        self.end(t, uid, FileKey::Fh(f), CloseReason::Remove, out);
                    }
                }
            }
            _ => {}
        }
        let Some(fh) = a.fh.clone() else { return };
        match t.proc_ {
            6 | 7 => {
                let n = r.count.unwrap_or(0) as u64;
                self.io(
                    t,
                    now,
                    uid,
                    FileKey::Fh(fh),
                    t.proc_ == 7,
                    a.offset.unwrap_or(0),
                    n,
                    out,
                )
            }
            1 | 2 | 4 | 5 | 21 => {
                self.touch(t, now, uid, FileKey::Fh(fh), out);
            }
            _ => {}
        }
    }

    fn v4(
        &mut self,
        t: &Transaction,
        now: i64,
        uid: Option<u32>,
        c: &crate::nfs4::Compound,
        r: &crate::nfs4::CompoundRes,
        out: &mut dyn FnMut(Session),
    ) {
        // Current and saved filehandle: a handle if known, and a path if known.
        let mut cur: (Option<Fh>, Option<String>) = (None, None);
        let mut saved: (Option<Fh>, Option<String>) = (None, None);
        for (a, res) in c.ops.iter().zip(r.ops.iter()) {
            if a.op != res.op || res.status != 0 {
                break;
            }
            let cur_path = |me: &Self, cur: &(Option<Fh>, Option<String>)| {
                cur.1
                    .clone()
                    .or_else(|| cur.0.as_ref().and_then(|f| me.path(f)))
            };
            match a.op {
                24 | 23 => cur = (None, Some("/".into())),
                22 => {
                    let f = a.fh.clone();
                    let p = f.as_ref().and_then(|f| self.path(f));
                    cur = (f, p);
                }
                15 | 18 | 6 => {
                    let p = cur_path(self, &cur);
                    let n = a.component.clone().unwrap_or_default();
                    if a.op == 18 && a.component.is_none() {
                        // OPEN by handle: the current handle stays.
                    } else {
                        cur = (None, p.map(|p| join(&p, &n)));
                    }
                    if a.op == 6 {
                        // CREATE leaves the new object current.
                    }
                }
                16 => {
                    let p = cur_path(self, &cur);
                    cur = (None, p.map(|p| parent_path(&p)));
                }
                10 => {
                    if let Some(f) = &res.fh {
                        if let Some(p) = &cur.1 {
                            self.set_full(f, p.clone());
                        }
                        cur.0 = Some(f.clone());
                    }
                }
                32 => saved = cur.clone(),
                31 => cur = saved.clone(),
                29 => {
                    let (from, to) = (cur_path(self, &saved), cur_path(self, &cur));
                    self.v4_rename(from, to, a);
                }
                28 => {
                    if let (Some(p), Some(n)) = (cur_path(self, &cur), &a.component) {
                        if let Some(f) = self.full_rev.get(&join(&p, n)).cloned() {
                            self.end(t, uid, FileKey::Fh(f), CloseReason::Remove, out);
                        }
                    }
                }
                25 | 38 | 4 | 9 | 34 | 5 => {
                    let key = match (&cur.0, cur_path(self, &cur)) {
                        (Some(f), _) => FileKey::Fh(f.clone()),
                        (None, Some(p)) => match self.full_rev.get(&p) {
                            Some(f) => FileKey::Fh(f.clone()),
                            None => FileKey::Path(p),
                        },
                        (None, None) => continue,
                    };
                    self.v4_file_op(t, now, uid, a, res, key, out);
                }
                _ => {}
            }
        }
    }

    /// RENAME (NFSv4 op 29): the file's full path follows it, from the
    /// saved directory (`from`) to the current one (`to`).
    fn v4_rename(&mut self, from: Option<String>, to: Option<String>, a: &crate::nfs4::OpArgs) {
        if let (Some(from), Some(to), Some(o), Some(n)) = (from, to, &a.component, &a.component2) {
            let (op, np) = (join(&from, o), join(&to, n));
            if let Some(f) = self.full_rev.remove(&op) {
                self.full.insert(f.clone(), np.clone());
                self.full_rev.insert(np, f);
            }
        }
    }

    /// The ops on a file (READ, WRITE, CLOSE, GETATTR, SETATTR, COMMIT) with
    /// the file they act on (`key`): I/O counted, a session touched or ended.
    #[allow(clippy::too_many_arguments)]
    fn v4_file_op(
        &mut self,
        t: &Transaction,
        now: i64,
        uid: Option<u32>,
        a: &crate::nfs4::OpArgs,
        res: &crate::nfs4::OpRes,
        key: FileKey,
        out: &mut dyn FnMut(Session),
    ) {
        match a.op {
            25 | 38 => {
                let n = res.count.unwrap_or(0);
                self.io(t, now, uid, key, a.op == 38, a.offset.unwrap_or(0), n, out)
            }
            4 => {
                self.touch(t, now, uid, key.clone(), out);
                self.end(t, uid, key, CloseReason::Close, out);
            }
            9 => {
                // GETATTR alone does not open a session; it refreshes one.
                let k = SessKey {
                    client: t.client.ip(),
                    uid,
                    file: key,
                };
                if let Some(s) = self.open.get_mut(&k) {
                    s.last_ns = now;
                }
            }
            _ => {
                self.touch(t, now, uid, key, out);
            }
        }
    }

    fn sweep(&mut self, now: i64, out: &mut dyn FnMut(Session)) {
        let idle = self.idle_ns;
        let gone: Vec<SessKey> = self
            .open
            .iter()
            .filter(|(_, s)| now - s.last_ns > idle)
            .map(|(k, _)| k.clone())
            .collect();
        for k in gone {
            let mut s = self.open.remove(&k).unwrap();
            s.closed_by = CloseReason::Idle;
            s.file = self.name_of(&k.file);
            out(s);
        }
    }

    /// Closes every session still open (reason `end`), oldest first.
    pub fn finish(&mut self, out: &mut dyn FnMut(Session)) {
        let mut all: Vec<(SessKey, Session)> = self.open.drain().collect();
        all.sort_by_key(|(_, s)| (s.first_ns, s.last_ns));
        for (k, mut s) in all {
            s.file = self.name_of(&k.file);
            out(s);
        }
    }

    /// Operation, client and file tables.
    pub fn stats(&self) -> Stats {
        let us = |ns: i64| ns as f64 / 1000.0;
        let ops = self
            .lat
            .iter()
            .map(|(op, (l, errors))| {
                let mut v = l.samples.clone();
                v.sort_unstable();
                let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize];
                OpStat {
                    op: op.clone(),
                    count: l.n,
                    errors: *errors,
                    min_us: us(v[0]),
                    median_us: us(q(0.5)),
                    p99_us: us(q(0.99)),
                    max_us: us(v[v.len() - 1]),
                }
            })
            .collect();
        let mut clients: Vec<Usage> = self
            .clients
            .iter()
            .map(|(ip, u)| Usage {
                name: ip.to_string(),
                ..u.clone()
            })
            .collect();
        clients.sort_by(|a, b| b.ops.cmp(&a.ops).then(a.name.cmp(&b.name)));
        let mut files: Vec<Usage> = self
            .files
            .iter()
            .map(|(k, u)| Usage {
                name: self.name_of(k),
                ..u.clone()
            })
            .collect();
        files.sort_by(|a, b| a.name.cmp(&b.name));
        Stats {
            ops,
            clients,
            files,
        }
    }
}
