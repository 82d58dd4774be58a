//! strace as the app layer's oracle: its calls on sockets per process and
//! direction (send, recv), the bytes asked and returned, against the app calls
//! of a magnet trace. Shared by app_calls_live.rs and proxies_live.rs.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use magnet_testkit::Netns;
use serde_json::Value;

use super::{tmp, MAGNET};

/// Calls of one direction (send or recv): how many, bytes asked, bytes done
/// (successful calls), failed calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Calls {
    pub calls: u64,
    pub asked: i64,
    pub ret: u64,
    pub failed: u64,
}

impl Calls {
    pub fn add(&mut self, asked: i64, ret: i64) {
        self.calls += 1;
        self.asked += asked;
        if ret < 0 {
            self.failed += 1;
        } else {
            self.ret += ret as u64;
        }
    }
}

/// The trace's app calls by (pid, "send"/"recv").
pub fn magnet_calls(trace: &Path) -> BTreeMap<(u32, &'static str), Calls> {
    let out = Command::new(MAGNET)
        .args(["parse", "--json", "--kind", "app_send,app_recv"])
        .arg(trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "magnet parse: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut m: BTreeMap<(u32, &'static str), Calls> = BTreeMap::new();
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        let dir = if v["kind"] == "app_send" {
            "send"
        } else {
            "recv"
        };
        let pid = v["pid"].as_u64().unwrap() as u32;
        m.entry((pid, dir))
            .or_default()
            .add(v["asked"].as_i64().unwrap(), v["ret"].as_i64().unwrap());
    }
    m
}

/// Top-level arguments of a strace call line.
pub fn split_args(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0usize, Vec::new());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                // a string: to its closing quote, escapes skipped
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'[' | b'{' | b'(' | b'<' => depth += 1,
            b']' | b'}' | b')' => depth -= 1,
            // `->` in a socket's name and sendfile's `[0] => [n]` close nothing
            b'>' if i > 0 && b[i - 1] != b'-' && b[i - 1] != b'=' => depth -= 1,
            b',' if depth == 0 && b.get(i + 1) == Some(&b' ') => {
                out.push(&s[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&s[start..]);
    out
}

/// Sum of the numbers after `key=` in `s`.
pub fn sum_of(s: &str, key: &str) -> i64 {
    s.match_indices(key)
        .map(|(i, _)| {
            let rest = &s[i + key.len()..];
            let end = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            rest[..end].parse::<i64>().unwrap_or(0)
        })
        .sum()
}

/// One strace call on an INET socket: (direction, asked, bytes or -1). For
/// sendmmsg/recvmmsg the bytes are the messages' msg_len and asked is None
/// (strace shows only the messages done).
pub fn strace_call(line: &str) -> Option<(&'static str, Option<i64>, i64)> {
    let open = line.find('(')?;
    let name = &line[..open];
    let close = line.rfind(") = ")?;
    let args = split_args(&line[open + 1..close]);
    let socket = |a: &str| {
        ["<TCP:", "<TCPv6:", "<UDP:", "<UDPv6:"]
            .iter()
            .any(|p| a.contains(p))
    };
    let dir = match name {
        "write" | "writev" | "sendfile" | "sendto" | "sendmsg" | "sendmmsg" => "send",
        "read" | "readv" | "recvfrom" | "recvmsg" | "recvmmsg" => "recv",
        // splice(fd_in, off_in, fd_out, off_out, len, flags): a send when its
        // output is a socket, a receive when its input is.
        "splice" if socket(args.get(2)?) => "send",
        "splice" => "recv",
        _ => return None,
    };
    if !(socket(args[0]) || name == "splice" && dir == "send") {
        return None;
    }
    let res = line[close + 4..].split(' ').next()?;
    let ret: i64 = res.parse().ok()?;
    let num = |a: &str| {
        Some(
            a.trim()
                .parse::<i64>()
                .unwrap_or_else(|_| panic!("strace line not understood: {line}")),
        )
    };
    let (asked, bytes) = match name {
        "read" | "write" | "sendfile" => (num(args.last()?), ret),
        "splice" => (num(args.get(4)?), ret),
        "sendto" | "recvfrom" => (num(args.get(2)?), ret),
        "readv" | "writev" | "sendmsg" | "recvmsg" => (Some(sum_of(args[1], "iov_len=")), ret),
        _ => (
            None,
            if ret < 0 {
                ret
            } else {
                sum_of(args[1], "msg_len=")
            },
        ),
    };
    Some((dir, asked, bytes))
}

/// strace's calls per (pid, direction), from `-ff -o PREFIX` files; `asked`
/// is -1 for a pid whose calls strace cannot size (sendmmsg/recvmmsg).
pub fn strace_calls(prefix: &Path) -> BTreeMap<(u32, &'static str), Calls> {
    let dir = prefix.parent().unwrap();
    let stem = format!("{}.", prefix.file_name().unwrap().to_string_lossy());
    let mut m: BTreeMap<(u32, &'static str), Calls> = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(&stem).and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        for line in std::fs::read_to_string(e.path()).unwrap().lines() {
            if let Some((dir, asked, bytes)) = strace_call(line) {
                let c = m.entry((pid, dir)).or_default();
                c.add(asked.unwrap_or(0), bytes);
                if asked.is_none() {
                    c.asked = -1;
                }
            }
        }
    }
    m
}

/// A fresh directory for strace's files; the `-o` prefix in it.
pub fn strace_prefix(name: &str) -> PathBuf {
    let d = tmp(&format!("strace-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d.join("s")
}

/// `strace -ff -yy -s 64 -o PREFIX` (each call on a socket with its
/// addresses, one file per process; `Process N attached` on stderr), in
/// `netns` when given: the oracle's command line, the traced program's or
/// `-p PID` to follow.
pub fn strace(netns: Option<&Netns>, prefix: &Path) -> Command {
    let mut c = magnet_testkit::command(netns, "strace");
    c.args(["-ff", "-yy", "-s", "64", "-o"]).arg(prefix);
    c
}

/// [`strace`] attached to process `pid` (`-p`), returned once it says so; the
/// rest of its stderr drained (a closed pipe would kill it at its detach).
pub fn strace_attach(prefix: &Path, pid: u32) -> Child {
    let mut c = strace(None, prefix)
        .args(["-p", &pid.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(c.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("attached"), "strace: {line}");
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    c
}

/// SIGTERM to `c` (strace detaches and writes its files out).
pub fn term(c: &Child) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(c.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
}

/// Process `pid`'s calls in the trace against strace's (`prefix`), both
/// directions, exactly; removes strace's files and the trace.
pub fn same_as_strace(what: &str, pid: u32, prefix: &Path, trace: &Path) {
    let traced = strace_calls(prefix);
    let got = magnet_calls(trace);
    for dir in ["send", "recv"] {
        let theirs = traced.get(&(pid, dir)).copied().unwrap_or_default();
        let mine = got.get(&(pid, dir)).copied().unwrap_or_default();
        assert_eq!(mine, theirs, "{what} {dir}: trace vs strace {traced:?}");
        eprintln!("{what} {dir}: {mine:?}");
    }
    let _ = std::fs::remove_dir_all(prefix.parent().unwrap());
    let _ = std::fs::remove_file(trace);
}
