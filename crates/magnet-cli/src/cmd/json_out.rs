//! The one convention of magnet's JSON output (docs/json.md): every object a
//! command prints at the top level, a document or each line of a JSON-lines
//! stream, starts with `"schema": "magnet.COMMAND/N"`.

use serde::Serialize;
use serde_json::{Map, Value};

pub const INFO: &str = "magnet.info/1";
pub const ANALYZE: &str = "magnet.analyze/1";
pub const PARSE: &str = "magnet.parse/1";
pub const PACKETS: &str = "magnet.packets/1";
pub const HANDSHAKES: &str = "magnet.handshakes/1";
pub const MATCH: &str = "magnet.match/1";
pub const RPC: &str = "magnet.rpc/1";
pub const NFS: &str = "magnet.nfs/1";
pub const RECORD: &str = "magnet.record/1";
pub const RECORD_CHECK: &str = "magnet.record.check/1";
pub const FUNCS: &str = "magnet.funcs/1";
pub const FUNCS_SOURCE: &str = "magnet.funcs.source/1";
pub const FUNCS_CHECK: &str = "magnet.funcs.check/1";
pub const DAEMON_CHECK: &str = "magnet.daemon.check/1";
pub const SAMPLE: &str = "magnet.sample/1";
pub const SAMPLE_CHECK: &str = "magnet.sample.check/1";
pub const LOADGEN: &str = "magnet.loadgen/1";

/// `v` as an object with `schema` first. An object keeps its keys in order
/// after it; anything else (a list) goes under `key`.
pub fn tagged(schema: &str, key: &str, v: impl Serialize) -> serde_json::Result<Value> {
    let mut o = Map::new();
    o.insert("schema".into(), Value::from(schema));
    match serde_json::to_value(v)? {
        Value::Object(m) => o.extend(m),
        other => {
            o.insert(key.into(), other);
        }
    }
    Ok(Value::Object(o))
}

/// Puts `"schema":"…"` first in the JSON object that starts at `buf[at]` (one
/// line of a stream written straight to bytes). Anything but an object is left alone.
pub fn tag_line(buf: &mut Vec<u8>, at: usize, schema: &str) {
    if buf.get(at) != Some(&b'{') {
        return;
    }
    let empty = buf.get(at + 1) == Some(&b'}');
    let mut head = Vec::with_capacity(schema.len() + 14);
    head.extend_from_slice(b"{\"schema\":\"");
    head.extend_from_slice(schema.as_bytes());
    head.extend_from_slice(if empty { b"\"" } else { b"\"," });
    buf.splice(at..at + 1, head);
}

/// [`tag_line`] for a `String`.
pub fn tag_string(line: String, schema: &str) -> String {
    let mut b = line.into_bytes();
    tag_line(&mut b, 0, schema);
    // Only ASCII was put in before a `{`: still UTF-8.
    String::from_utf8(b).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_comes_first() {
        #[derive(Serialize)]
        struct S {
            b: u8,
            a: u8,
        }
        let v = tagged(INFO, "x", S { b: 1, a: 2 }).unwrap();
        assert_eq!(v.to_string(), r#"{"schema":"magnet.info/1","b":1,"a":2}"#);
        let v = tagged(PACKETS, "packets", [1, 2]).unwrap();
        assert_eq!(
            v.to_string(),
            r#"{"schema":"magnet.packets/1","packets":[1,2]}"#
        );
        let mut b = b"x\n{\"k\":1}\n{}\n".to_vec();
        tag_line(&mut b, 2, PARSE);
        let at = b.len() - 3;
        tag_line(&mut b, at, PARSE);
        assert_eq!(
            String::from_utf8(b).unwrap(),
            "x\n{\"schema\":\"magnet.parse/1\",\"k\":1}\n{\"schema\":\"magnet.parse/1\"}\n"
        );
        assert_eq!(tag_string("[1]".into(), RPC), "[1]");
    }
}
