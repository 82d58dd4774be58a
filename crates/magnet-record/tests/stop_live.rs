//! The end of a recording (root, real BPF): the recorder returns once its
//! programs are stopped, and a process of its own (`magnet-detach`) releases
//! the links, which the kernel takes a second or more for
//! (docs/kernel-notes.md). Run in this process, as magnetd's flight recorder
//! runs it: a caller that lives on must be left holding none of the
//! recording's programs, and every one of them must be gone from the kernel
//! soon after, while this process still runs.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use magnet_record::{RecordConfig, RunOptions, Target};
use magnet_testkit::{live_or_skip, Need};

/// The BPF programs this process holds a descriptor of (its fdinfo).
fn own_programs() -> BTreeSet<u32> {
    let mut ids = BTreeSet::new();
    for e in std::fs::read_dir("/proc/self/fdinfo").unwrap().flatten() {
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        for line in text.lines() {
            if let Some(id) = line.strip_prefix("prog_id:") {
                ids.insert(id.trim().parse().unwrap());
            }
        }
    }
    ids
}

/// The BPF programs loaded on the host now.
fn loaded_programs() -> BTreeSet<u32> {
    libbpf_rs::query::ProgInfoIter::default()
        .map(|p| p.id)
        .collect()
}

#[test]
fn a_recording_returns_with_its_programs_stopped_and_none_is_left_behind() {
    if !live_or_skip(
        "a_recording_returns_with_its_programs_stopped_and_none_is_left_behind",
        &[Need::Btf],
    ) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("magnet-stop-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("stop.mgt");
    let before = own_programs();
    let held = Arc::new(Mutex::new(BTreeSet::new()));
    let stopped = Arc::new(AtomicBool::new(false));
    let opts = RunOptions {
        // A command: the app layer's 24 syscall tracepoints, each released
        // by the kernel after a grace period.
        target: Target::Command(vec!["true".into()]),
        duration: Some(Duration::from_secs(20)),
        stop: Arc::new(AtomicBool::new(false)),
        progress: None,
        ready: Some(Box::new({
            let held = held.clone();
            move |_| *held.lock().unwrap() = &own_programs() - &before
        })),
        detached: Some(Box::new({
            let stopped = stopped.clone();
            move || stopped.store(true, Ordering::Relaxed)
        })),
    };
    let summary = magnet_record::record(&RecordConfig::new(trace.clone()), opts).unwrap();
    assert_eq!(summary.end_reason, "command exited");
    assert!(stopped.load(Ordering::Relaxed), "never told it stopped");
    let held = held.lock().unwrap().clone();
    assert!(
        held.len() > 10,
        "the recording held {} programs: {held:?}",
        held.len()
    );
    // Whatever the kernel still runs, this process holds none of it.
    let still = &own_programs() & &held;
    assert!(still.is_empty(), "programs still held here: {still:?}");
    let waited = Instant::now();
    loop {
        let left = &loaded_programs() & &held;
        if left.is_empty() {
            break;
        }
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "60 s after the recording, {} of its {} programs are still loaded: {left:?}",
            left.len(),
            held.len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "{} programs, all gone {:.2} s after the recording returned",
        held.len(),
        waited.elapsed().as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
