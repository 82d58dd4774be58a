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
use std::time::Duration;

use magnet_client::{Connection, Request, Response};

use crate::daemon::Shared;

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

fn client(shared: Arc<Shared>, stream: UnixStream) {
    let Some(uid) = peer_uid(&stream) else {
        return;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut input = BufReader::new(stream);
    let mut idle = Duration::ZERO;
    let mut line = Vec::new();
    loop {
        if shared.stop.load(Ordering::Relaxed) || idle > Duration::from_secs(60) {
            return;
        }
        let got = (&mut input).take(MAX_LINE + 1).read_until(b'\n', &mut line);
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
                idle = Duration::ZERO;
                let resp = match serde_json::from_slice::<Request>(&line) {
                    Ok(req) => answer(&shared, uid, &req),
                    Err(e) => Response::error(format!("bad request: {e}")),
                };
                line.clear();
                if writeln!(out, "{}", json(&resp)).is_err() {
                    return;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                idle += Duration::from_millis(200);
            }
            Err(_) => return,
        }
    }
}

fn json(r: &Response) -> String {
    serde_json::to_string(r).unwrap_or_else(|_| r#"{"ok":false,"error":"encoding failed"}"#.into())
}

/// Accepts clients until `shared.stop`; at most `max_clients` at once.
pub fn serve(listener: UnixListener, shared: Arc<Shared>) {
    let _ = listener.set_nonblocking(true);
    while !shared.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((mut s, _)) => {
                let _ = s.set_nonblocking(false);
                let max = shared.config.read().map(|c| c.max_clients).unwrap_or(32);
                if shared.clients.fetch_add(1, Ordering::SeqCst) >= max {
                    shared.clients.fetch_sub(1, Ordering::SeqCst);
                    let _ = writeln!(
                        s,
                        "{}",
                        json(&Response::error("too many clients; try again"))
                    );
                    continue;
                }
                let sh = shared.clone();
                std::thread::spawn(move || {
                    client(sh.clone(), s);
                    sh.clients.fetch_sub(1, Ordering::SeqCst);
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => {
                shared.log(&format!("unix socket: accept: {e}"));
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}
