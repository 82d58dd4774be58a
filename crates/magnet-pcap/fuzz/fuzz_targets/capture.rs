//! Any bytes as a pcap/pcapng file: read, rewrite, read back (see magnet_pcap::fuzzing).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    magnet_pcap::fuzzing::capture(data);
});
