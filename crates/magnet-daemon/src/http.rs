//! HTTP on localhost: a small GET-only HTTP/1.1 server (one request per
//! connection), enough for Prometheus and curl.
//!
//! | path | answer |
//! |---|---|
//! | `/metrics` | OpenMetrics text ([`crate::metrics`]) |
//! | `/health` | host totals and health as JSON |
//! | `/runs` | the sampler store's runs as JSON (name, start, interface, interval) |
//! | `/runs/NAME.json` (or `latest.json`) | one run in Meta's JSON schema |
//! | `/runs/NAME.svg`, `/runs/NAME.html` | one run plotted |
//!
//! Per-connection detail is not served over HTTP (a TCP peer's uid is not
//! known the way a Unix socket's is): ask the Unix socket.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::daemon::Shared;

const MAX_REQUEST: usize = 16 * 1024;

struct Reply {
    status: &'static str,
    ctype: &'static str,
    body: Vec<u8>,
}

fn text(status: &'static str, body: impl Into<String>) -> Reply {
    Reply {
        status,
        ctype: "text/plain; charset=utf-8",
        body: body.into().into_bytes(),
    }
}

fn route(shared: &Shared, method: &str, path: &str) -> Reply {
    if method != "GET" && method != "HEAD" {
        return text("405 Method Not Allowed", "only GET\n");
    }
    let path = path.split('?').next().unwrap_or(path);
    match path {
        "/metrics" => Reply {
            status: "200 OK",
            ctype: "application/openmetrics-text; version=1.0.0; charset=utf-8",
            body: crate::metrics::render(shared).into_bytes(),
        },
        "/health" | "/host" => Reply {
            status: "200 OK",
            ctype: "application/json",
            body: serde_json::to_vec(&shared.host()).unwrap_or_default(),
        },
        "/runs" => match shared.store() {
            None => text(
                "404 Not Found",
                "no sampler store configured ([sample] in the config)\n",
            ),
            Some(store) => match store.list() {
                Ok(list) => {
                    let v: Vec<serde_json::Value> = list
                        .iter()
                        .map(|e| {
                            serde_json::json!({
                                "name": e.name, "start_ns": e.start_ns,
                                "interface": e.iface, "interval": e.interval,
                            })
                        })
                        .collect();
                    Reply {
                        status: "200 OK",
                        ctype: "application/json",
                        body: serde_json::to_vec(&v).unwrap_or_default(),
                    }
                }
                Err(e) => text("500 Internal Server Error", format!("{e}\n")),
            },
        },
        p if p.starts_with("/runs/") => {
            let Some(store) = shared.store() else {
                return text("404 Not Found", "no sampler store configured\n");
            };
            let name = &p["/runs/".len()..];
            let (stem, ext) = name.rsplit_once('.').unwrap_or((name, "json"));
            if stem.contains('/') || stem.contains("..") {
                return text("400 Bad Request", "bad run name\n");
            }
            let run = match store
                .find(stem)
                .and_then(|e| magnet_runs::Run::load(&e.path))
            {
                Ok(r) => r,
                Err(e) => return text("404 Not Found", format!("{e}\n")),
            };
            match ext {
                "json" => Reply {
                    status: "200 OK",
                    ctype: "application/json",
                    body: run.to_json().to_string().into_bytes(),
                },
                "svg" => Reply {
                    status: "200 OK",
                    ctype: "image/svg+xml",
                    body: magnet_runs::plot::run_svg(&run).into_bytes(),
                },
                "html" => Reply {
                    status: "200 OK",
                    ctype: "text/html; charset=utf-8",
                    body: magnet_runs::plot::run_html(&run).into_bytes(),
                },
                _ => text("404 Not Found", "use .json, .svg or .html\n"),
            }
        }
        "/" => text(
            "200 OK",
            "magnetd: /metrics /health /runs /runs/NAME.json|.svg|.html\n",
        ),
        _ => text("404 Not Found", "not found\n"),
    }
}

fn handle(shared: &Shared, mut s: TcpStream) {
    let limit = shared
        .config
        .read()
        .map(|c| c.request_timeout)
        .unwrap_or(Duration::from_secs(5));
    // The whole request head within `request_timeout` of the connection, not
    // per read: a byte every few seconds (slow loris) is cut off.
    let deadline = Instant::now() + limit;
    let _ = s.set_write_timeout(Some(Duration::from_secs(10)));
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || s.set_read_timeout(Some(left)).is_err() {
            let _ = write_reply(
                &mut s,
                &text(
                    "408 Request Timeout",
                    "request not complete within request_timeout\n",
                ),
                false,
            );
            return;
        }
        match s.read(&mut chunk) {
            Ok(0) => return,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        if buf.len() > MAX_REQUEST {
            let _ = write_reply(
                &mut s,
                &text("431 Request Header Fields Too Large", ""),
                false,
            );
            return;
        }
    }
    let head = String::from_utf8_lossy(&buf);
    let mut first = head.lines().next().unwrap_or("").split_whitespace();
    let (method, path) = (first.next().unwrap_or(""), first.next().unwrap_or("/"));
    let reply = route(shared, method, path);
    let _ = write_reply(&mut s, &reply, method == "HEAD");
}

fn write_reply(s: &mut TcpStream, r: &Reply, head_only: bool) -> std::io::Result<()> {
    write!(
        s,
        "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        r.status,
        r.ctype,
        r.body.len()
    )?;
    if !head_only {
        s.write_all(&r.body)?;
    }
    s.flush()
}

/// Accepts until `shared.stop`: at most `max_clients` requests in flight,
/// of them at most `max_clients_per_uid` from one uid (the uid owning a
/// loopback peer's socket; a peer elsewhere counts by its address). HTTP's
/// slots are its own: clients of the Unix socket never take them. A client
/// turned away gets `503` saying why.
pub fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let _ = listener.set_nonblocking(true);
    let local = listener.local_addr().ok();
    while !shared.stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((mut s, peer)) => {
                let _ = s.set_nonblocking(false);
                let (max, per) = shared
                    .config
                    .read()
                    .map(|c| (c.max_clients, c.max_clients_per_uid))
                    .unwrap_or((32, 8));
                let local = s.local_addr().ok().or(local);
                let who = match local {
                    Some(l) => crate::slots::http_who(l, peer),
                    None => crate::slots::Who::Addr(peer.ip()),
                };
                let slot = match shared.http_slots.take(who, max, per) {
                    Ok(slot) => slot,
                    Err(why) => {
                        let _ = s.set_write_timeout(Some(Duration::from_millis(100)));
                        let _ = write_reply(
                            &mut s,
                            &text("503 Service Unavailable", format!("{why}\n")),
                            false,
                        );
                        continue;
                    }
                };
                let sh = shared.clone();
                std::thread::spawn(move || {
                    handle(&sh, s);
                    drop(slot);
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                shared.log(&format!("http: accept: {e}"));
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}
