//! The query API on a Unix socket: one JSON request per line, one JSON answer
//! per line ([`magnet_client::Request`], [`magnet_client::Response`]).
//!
//! Who may see what: the caller's uid comes from the socket itself
//! (SO_PEERCRED), not from anything it says. Root sees every connection; any
//! other uid sees only connections whose socket it owns (sk_uid). Asking for
//! a cookie that exists but belongs to someone else gets the same answer as
//! one that does not exist, so guessing cookies reveals nothing.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use magnet_client::{Connection, Request, Response};

use crate::daemon::Shared;
use crate::slots::Who;

/// Longest request line accepted.
const MAX_LINE: u64 = 64 * 1024;

/// The answer to one request from `uid`.
pub fn answer(shared: &Shared, uid: u32, req: &Request) -> Response {
    match req {
        Request::Connection { cookie } => match shared.reader.get(*cookie) {
            Some(r) if uid == 0 || r.conn.uid == uid => Response {
                ok: true,
                connection: Some(shared.label(r.conn)),
                ..Response::default()
            },
            _ => Response::error(format!(
                "no connection with cookie {cookie} that uid {uid} may see"
            )),
        },
        Request::Connections { container } => {
            let list: Vec<Connection> = shared
                .reader
                .all()
                .into_iter()
                .filter(|r| uid == 0 || r.conn.uid == uid)
                .map(|r| shared.label(r.conn))
                .filter(|c| match container {
                    Some(want) => c
                        .container
                        .as_deref()
                        .is_some_and(|id| id.starts_with(want.as_str())),
                    None => true,
                })
                .collect();
            Response {
                ok: true,
                connections: Some(list),
                ..Response::default()
            }
        }
        Request::Cgroups => crate::layers::answer_cgroups(shared, uid),
        Request::Host => Response {
            ok: true,
            host: Some(shared.host()),
            ..Response::default()
        },
        Request::Dump { dir } => {
            if uid != 0 {
                return Response::error("dump: only root may dump the flight recorder");
            }
            let Some(f) = &shared.flight else {
                return Response::error(
                    "dump: the flight recorder is off (add a [recorder] section to magnetd's config)",
                );
            };
            match f.dump(std::path::Path::new(dir)) {
                Ok(files) if files.is_empty() => {
                    Response::error("dump: the flight recorder holds nothing yet")
                }
                Ok(files) => Response {
                    ok: true,
                    dumped: Some(files.iter().map(|p| p.display().to_string()).collect()),
                    ..Response::default()
                },
                Err(e) => Response::error(format!("dump: {dir}: {e}")),
            }
        }
    }
}

fn peer_uid(s: &UnixStream) -> Option<u32> {
    nix::sys::socket::getsockopt(s, nix::sys::socket::sockopt::PeerCredentials)
        .ok()
        .map(|c| c.uid())
}

/// How long a client may sit between requests before it is dropped.
const IDLE: Duration = Duration::from_secs(60);

fn client(shared: Arc<Shared>, stream: UnixStream, uid: u32) {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let limit = || {
        shared
            .config
            .read()
            .map(|c| c.request_timeout)
            .unwrap_or(Duration::from_secs(5))
    };
    let mut input = BufReader::new(stream);
    let mut line = Vec::new();
    // Since the last answer (idle) or since this request's first byte.
    let mut since = Instant::now();
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            return;
        }
        if line.is_empty() && since.elapsed() > IDLE {
            return;
        }
        if !line.is_empty() && since.elapsed() > limit() {
            // A request trickling in (slow loris) holds a slot: cut it off.
            let _ = writeln!(
                out,
                "{}",
                json(&Response::error(format!(
                    "request not complete {} s after its first byte (request_timeout)",
                    limit().as_secs_f64()
                )))
            );
            return;
        }
        let before = line.len();
        let got = (&mut input).take(MAX_LINE + 1).read_until(b'\n', &mut line);
        if before == 0 && !line.is_empty() {
            since = Instant::now();
        }
        match got {
            Ok(0) => return,
            Ok(_) if !line.ends_with(b"\n") && line.len() as u64 > MAX_LINE => {
                let _ = writeln!(
                    out,
                    "{}",
                    json(&Response::error("request line longer than 64 KiB"))
                );
                return;
            }
            Ok(_) if !line.ends_with(b"\n") => continue, // more to come
            Ok(_) => {
                let resp = match serde_json::from_slice::<Request>(&line) {
                    Ok(req) => answer(&shared, uid, &req),
                    Err(e) => Response::error(format!("bad request: {e}")),
                };
                line.clear();
                if writeln!(out, "{}", json(&resp)).is_err() {
                    return;
                }
                since = Instant::now();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

fn json(r: &Response) -> String {
    serde_json::to_string(r).unwrap_or_else(|_| r#"{"ok":false,"error":"encoding failed"}"#.into())
}

/// Accepts clients until `shared.stop`; at most `max_clients` at once, of
/// them at most `max_clients_per_uid` of one uid (SO_PEERCRED). A client
/// turned away gets one error line saying why.
pub fn serve(listener: UnixListener, shared: Arc<Shared>) {
    let _ = listener.set_nonblocking(true);
    while !shared.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((mut s, _)) => {
                let _ = s.set_nonblocking(false);
                let Some(uid) = peer_uid(&s) else {
                    continue;
                };
                let (max, per) = shared
                    .config
                    .read()
                    .map(|c| (c.max_clients, c.max_clients_per_uid))
                    .unwrap_or((32, 8));
                let slot = match shared.unix_slots.take(Who::Uid(uid), max, per) {
                    Ok(slot) => slot,
                    Err(why) => {
                        let _ = s.set_write_timeout(Some(Duration::from_millis(100)));
                        let _ = writeln!(s, "{}", json(&Response::error(why.to_string())));
                        continue;
                    }
                };
                let sh = shared.clone();
                std::thread::spawn(move || {
                    client(sh, s, uid);
                    drop(slot);
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                shared.log(&format!("unix socket: accept: {e}"));
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}
