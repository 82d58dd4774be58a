//! Output: rpcspy's bar-separated line and JSON lines.
//!
//! rpcspy line: `timestamp | execution-time | server | client.uid | command | arguments |
//! reply-data` — timestamp of the reply in seconds with microseconds, execution time in
//! microseconds. Unanswered calls show the call's timestamp, `-` for the time, and
//! `no reply`.

use std::fmt::Write;

use crate::progs;
use crate::{Outcome, Transaction};

fn ts(ns: i64) -> String {
    format!(
        "{}.{:06}",
        ns.div_euclid(1_000_000_000),
        ns.rem_euclid(1_000_000_000) / 1000
    )
}

/// One rpcspy line (no newline). `concise` drops arguments and reply data.
pub fn rpcspy_line(t: &Transaction, concise: bool) -> String {
    let mut s = String::with_capacity(160);
    let when = t.reply_ts_ns.unwrap_or(t.call_ts_ns);
    let exec = match t.exec_ns() {
        Some(ns) => (ns / 1000).to_string(),
        None => "-".into(),
    };
    let uid = t
        .cred
        .uid()
        .map(|u| u.to_string())
        .unwrap_or_else(|| "-".into());
    let _ = write!(
        s,
        "{} | {} | {} | {}.{} | {}",
        ts(when),
        exec,
        t.server.ip(),
        t.client.ip(),
        uid,
        t.command
    );
    if concise {
        if t.outcome == Outcome::NoReply {
            s.push_str(" | no reply");
        }
        return s;
    }
    let _ = write!(s, " | {} | ", progs::fmt_args(t.proc_, &t.args));
    match (t.outcome, t.reply_stat, &t.res) {
        (Outcome::NoReply, _, _) => s.push_str("no reply"),
        (_, Some(st), _) if st != crate::rpc::ReplyStat::Success => s.push_str(st.name()),
        (_, _, Some(r)) => s.push_str(&progs::fmt_res(t.proc_, r)),
        _ => s.push('-'),
    }
    s
}

/// One JSON object (no newline) with every decoded field. Field names are stable:
/// see docs/rpc.md.
pub fn json_line(t: &Transaction) -> String {
    // Serialised straight to text (no intermediate `Value` tree, which cost more than
    // the decoding), then `exec_us` appended as the last key.
    let mut s = serde_json::to_string(t).unwrap_or_else(|_| "{}".into());
    if s.ends_with('}') {
        s.pop();
        s.push_str(if s.len() > 1 {
            ",\"exec_us\":"
        } else {
            "\"exec_us\":"
        });
        match t.exec_ns() {
            Some(n) => {
                let v =
                    serde_json::to_string(&(n as f64 / 1000.0)).unwrap_or_else(|_| "null".into());
                s.push_str(&v);
            }
            None => s.push_str("null"),
        }
        s.push('}');
    }
    s
}
