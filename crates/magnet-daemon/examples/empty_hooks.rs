//! Attaches an empty program on every hook magnetd uses and waits for
//! SIGINT/SIGTERM: the cost floor for `bench/daemon-bpf-cost.sh`. Prints
//! `empty hooks: ready` once attached. Root.

fn main() -> std::process::ExitCode {
    let stop = match magnet_common::stop::Stop::install() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("empty_hooks: error: installing the signal handler: {e}");
            return std::process::ExitCode::from(magnet_common::exit::ERROR);
        }
    };
    let hooks = match magnet_daemon::baseline::attach_empty() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("empty_hooks: error: {e}");
            return std::process::ExitCode::from(magnet_common::exit::ERROR);
        }
    };
    eprintln!("empty hooks: ready ({} links)", hooks.link_count());
    while !stop.requested() {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    drop(hooks);
    std::process::ExitCode::SUCCESS
}
