//! Prints magnetd's summary of this program's own connection.
//!
//! ```text
//! magnet daemon &                      # as root
//! cargo run -p magnet-client --example own_connection -- [HOST:PORT] [SENDS] [BYTES]
//! ```
//!
//! Without an address it starts its own loopback listener. It connects, sends
//! SENDS writes of BYTES bytes (default 10 × 1000), waits for the peer to read
//! them all, then asks magnetd about its socket (by SO_COOKIE) and prints the
//! answer as JSON. `MAGNETD_SOCKET` overrides the socket path.
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let addr = args.next();
    let sends: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(10);
    let size: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(1000);

    let (addr, peer) = match addr {
        Some(a) if a != "-" => (a, None),
        _ => {
            let l = TcpListener::bind("127.0.0.1:0")?;
            let a = l.local_addr()?.to_string();
            let peer = std::thread::spawn(move || -> std::io::Result<usize> {
                let (mut s, _) = l.accept()?;
                let mut buf = vec![0u8; 65536];
                let mut total = 0;
                loop {
                    match s.read(&mut buf)? {
                        0 => return Ok(total),
                        n => total += n,
                    }
                }
            });
            (a, Some(peer))
        }
    };

    let mut sock = TcpStream::connect(&addr)?;
    let chunk = vec![0x6du8; size];
    for _ in 0..sends {
        sock.write_all(&chunk)?;
    }
    sock.shutdown(std::net::Shutdown::Write)?;
    if let Some(peer) = peer {
        let got = peer.join().map_err(|_| "peer thread panicked")??;
        eprintln!("peer read {got} bytes");
    }

    let mut client = magnet_client::Client::connect_default()?;
    let summary = client.connection_of(&sock)?;
    println!("{}", serde_json::to_string_pretty(&summary)?);
    Ok(())
}
